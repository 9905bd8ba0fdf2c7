"""sb3-contrib's CrossQ, timed like the peer benchmark script: on Pendulum-v1 at rlbase's
classic_control row (the zoo's Pendulum row: policy_delay 2, net_arch 256x256 for actor and
critics), on any other env (a MuJoCo one) at sb3-contrib's own defaults (lr 1e-3, 100 random
steps, policy_delay 3, a 256x256 actor, 2 critics of 1024x1024, batch renormalization). One
torch thread; 10 deterministic evaluation episodes on an env seeded 123.
usage: python crossq_sb3_contrib.py STEPS SEED [ENV]"""

import os
import sys
import time

import torch
from sb3_contrib import CrossQ
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

torch.set_num_threads(int(os.environ.get("SB3_THREADS", "1")))
steps, seed = int(float(sys.argv[1])), int(sys.argv[2])
env_id = sys.argv[3] if len(sys.argv) > 3 else "Pendulum-v1"
env = make_vec_env(env_id, n_envs=1, seed=seed)
kw: dict = (
    dict(policy_delay=2, policy_kwargs=dict(net_arch=[256, 256]))
    if env_id == "Pendulum-v1"
    else {}
)
model = CrossQ("MlpPolicy", env, seed=seed, verbose=0, device="cpu", **kw)
t0 = time.perf_counter()
model.learn(total_timesteps=steps)
dt = time.perf_counter() - t0
ev = make_vec_env(env_id, n_envs=1, seed=123)
mean, std = evaluate_policy(model, ev, n_eval_episodes=10, deterministic=True)
print(
    f"sb3-contrib crossq {env_id} steps={steps} seed={seed} time={dt:.1f}s "
    f"sps={steps / dt:.0f} eval={mean:.1f}+-{std:.1f}"
)
