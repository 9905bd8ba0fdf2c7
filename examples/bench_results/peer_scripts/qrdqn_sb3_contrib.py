"""sb3-contrib QRDQN at rl-baselines3-zoo's CartPole-v1 row; greedy eval of the last model."""

import json
import sys
import time

import gymnasium as gym
from sb3_contrib import QRDQN

seed = int(sys.argv[1])
steps = int(float(sys.argv[2]))
t0 = time.time()
model = QRDQN(
    "MlpPolicy",
    "CartPole-v1",
    seed=seed,
    learning_rate=2.3e-3,
    batch_size=64,
    buffer_size=100000,
    learning_starts=1000,
    gamma=0.99,
    target_update_interval=10,
    train_freq=256,
    gradient_steps=128,
    exploration_fraction=0.16,
    exploration_final_eps=0.04,
    policy_kwargs=dict(net_arch=[256, 256], n_quantiles=10),
)
model.learn(steps)
train_s = time.time() - t0
env = gym.make("CartPole-v1")
returns = []
obs, _ = env.reset(seed=1000 + seed)
for _ in range(10):
    done, total = False, 0.0
    while not done:
        action, _ = model.predict(obs, deterministic=True)
        obs, r, term, trunc, _ = env.step(int(action))
        total += r
        done = term or trunc
    returns.append(total)
    obs, _ = env.reset()
print(
    json.dumps(
        {
            "lib": "sb3-contrib",
            "seed": seed,
            "steps": steps,
            "eval_mean": sum(returns) / 10,
            "train_s": round(train_s, 1),
        }
    )
)
