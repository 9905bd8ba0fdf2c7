"""SlowStart-v0: CartPole whose construction prints 'building env' and takes 3 s, so a test
can signal a CLI run while it is still starting (``--gym_packages=envs.slow_start``)."""

import time

import gymnasium as gym


def make_slow_cartpole(**kwargs):
    print("building env", flush=True)
    time.sleep(3.0)
    return gym.make("CartPole-v1", **kwargs)


gym.register("SlowStart-v0", entry_point=make_slow_cartpole)
