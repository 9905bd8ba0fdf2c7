"""A2C's defaults per env type, merged under the CLI's own arguments."""


def atari() -> dict:
    return dict(network="cnn", num_env=16)


def classic_control() -> dict:
    # 8 envs with 5-step rollouts: the setting A2C is usually compared at on CartPole.
    return dict(network="mlp", num_env=8)


def box2d() -> dict:
    return dict(network="mlp", num_env=8)


def mujoco() -> dict:
    return dict(network="mlp", num_env=8, lrschedule="constant", lr=7e-4)
