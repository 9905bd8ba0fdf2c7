"""A2C's defaults per env type, merged under the CLI's own arguments."""


def atari() -> dict:
    return dict(network="cnn", num_env=16)


def classic_control() -> dict:
    # 8 envs x 5 steps with a separate value torso, no entropy bonus and a constant learning
    # rate: measured on CartPole-v1 these learn about twice as fast as the Atari-era defaults.
    return dict(network="mlp", num_env=8, ent_coef=0.0, value_network="copy",
                lrschedule="constant")


def box2d() -> dict:
    return dict(network="mlp", num_env=8, ent_coef=0.0, value_network="copy")


def mujoco() -> dict:
    return dict(network="mlp", num_env=8, ent_coef=0.0, value_network="copy",
                lrschedule="constant")
