"""A2C's defaults per env type, merged under the CLI's own arguments."""


def atari() -> dict:
    return dict(network="cnn", num_env=16)


def classic_control() -> dict:
    # 8 envs x 5 steps, a separate value torso, no entropy bonus, a constant learning rate of
    # 1e-3 and gamma 0.98. Measured on CartPole-v1 over 10 seeds at 5e4 steps: mean evaluation
    # 413 (lr 7e-4 and gamma 0.99: 275; a linear decay: 181-401); at 2e5 steps 4 of 5 seeds
    # evaluate at 500 and the fifth at 450.
    return dict(network="mlp", num_env=8, ent_coef=0.0, value_network="copy",
                lrschedule="constant", lr=1e-3, gamma=0.98)


def box2d() -> dict:
    return dict(network="mlp", num_env=8, ent_coef=0.0, value_network="copy")


def mujoco() -> dict:
    return dict(network="mlp", num_env=8, ent_coef=0.0, value_network="copy",
                lrschedule="constant")
