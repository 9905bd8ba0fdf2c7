"""rlbase QR-DQN at the same row (rlbase/hyperparams/qrdqn.yml classic_control); same eval."""

import json
import sys
import time

import gymnasium as gym

from rlbase.common.envs.make import make_vec_env
from rlbase.hyperparams import env_type_defaults
from rlbase.qrdqn.qrdqn import learn

seed = int(sys.argv[1])
steps = int(float(sys.argv[2]))
t0 = time.time()
row = env_type_defaults("qrdqn", "classic_control")
network = row.pop("network")
row.pop("num_env", None)
model = learn(
    network,
    make_vec_env("CartPole-v1", num_env=1, seed=seed),
    total_timesteps=steps,
    seed=seed,
    log_interval=10**9,
    **row,
)
train_s = time.time() - t0
env = gym.make("CartPole-v1")
returns = []
obs, _ = env.reset(seed=1000 + seed)
for _ in range(10):
    done, total = False, 0.0
    while not done:
        action = model.step(obs[None], deterministic=True)[0][0]
        obs, r, term, trunc, _ = env.step(int(action))
        total += r
        done = term or trunc
    returns.append(total)
    obs, _ = env.reset()
print(
    json.dumps(
        {
            "lib": "rlbase",
            "seed": seed,
            "steps": steps,
            "eval_mean": sum(returns) / 10,
            "train_s": round(train_s, 1),
        }
    )
)
