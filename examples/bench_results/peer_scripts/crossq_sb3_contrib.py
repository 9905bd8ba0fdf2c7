"""sb3-contrib's CrossQ on Pendulum-v1 at rlbase's classic_control row (the zoo's Pendulum row:
policy_delay 2, net_arch 256x256 for actor and critics; sb3-contrib's other defaults), one
torch thread; the same evaluation as sb3_bench.py (10 deterministic episodes, env seed 123).
usage: python crossq_sb3_bench.py STEPS SEED"""

import sys
import time

import torch
from sb3_contrib import CrossQ
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

torch.set_num_threads(1)
steps, seed = int(sys.argv[1]), int(sys.argv[2])
env = make_vec_env("Pendulum-v1", n_envs=1, seed=seed)
model = CrossQ(
    "MlpPolicy",
    env,
    seed=seed,
    verbose=0,
    device="cpu",
    policy_delay=2,
    policy_kwargs=dict(net_arch=[256, 256]),
)
t0 = time.perf_counter()
model.learn(total_timesteps=steps)
dt = time.perf_counter() - t0
mean, std = evaluate_policy(
    model,
    make_vec_env("Pendulum-v1", n_envs=1, seed=123),
    n_eval_episodes=10,
    deterministic=True,
)
print(
    f"sb3-contrib crossq steps={steps} seed={seed} time={dt:.1f}s eval={mean:.1f}+-{std:.1f}"
)
