"""rlbase CrossQ on Pendulum-v1 at its classic_control row (or, with "zero", on zeroed rewards:
the broken variant); the same evaluation as crossq_sb3_contrib.py.
usage: python crossq_rlbase.py real|zero STEPS [SEED]"""

import sys
import time

import gymnasium as gym

from rlbase.common.envs.make import make_vec_env
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.crossq.crossq import learn
from rlbase.hyperparams import env_type_defaults

broken = sys.argv[1] == "zero"
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
steps = int(sys.argv[2])
t = time.time()
kw = env_type_defaults("crossq", "classic_control")
kw.pop("num_env")
if broken:
    env = make_vec_env(
        "Pendulum-v1",
        num_env=1,
        seed=0,
        wrapper=lambda e: gym.wrappers.TransformReward(e, lambda r: 0.0),
    )
else:
    env = make_vec_env("Pendulum-v1", num_env=1, seed=seed)
model = learn(env=env, seed=seed, total_timesteps=steps, log_interval=1000, **kw)
mean, std = evaluate_policy(model, make_vec_env("Pendulum-v1", num_env=1, seed=123), 10)
print(
    f"{sys.argv[1]} steps={steps} seed={seed} eval={mean:.1f}+-{std:.1f} "
    f"time={time.time() - t:.0f}s",
    flush=True,
)
