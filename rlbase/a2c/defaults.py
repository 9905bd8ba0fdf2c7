"""A2C's defaults per env type, merged under the CLI's own arguments."""

from rlbase.common.schedules import named_schedule


def atari() -> dict:
    # Baselines' a2c on Atari: the Nature convnet on 16 envs, learn()'s own defaults otherwise.
    return dict(network="cnn", num_env=16)


def classic_control() -> dict:
    # 8 envs x 5 steps, a separate value torso, no entropy bonus, a constant learning rate of
    # 1e-3 and gamma 0.98. Measured on CartPole-v1 over 10 seeds at 5e4 steps: mean evaluation
    # 413 (lr 7e-4 and gamma 0.99: 275; a linear decay: 181-401); at 2e5 steps 4 of 5 seeds
    # evaluate at 500 and the fifth at 450.
    return dict(network="mlp", num_env=8, ent_coef=0.0, value_network="copy",
                lrschedule="constant", lr=1e-3, gamma=0.98)


def _zoo_continuous(lr: float, num_env: int) -> dict:
    # rl-baselines3-zoo a2c.yml's tuned continuous-control rows (BipedalWalker-v3,
    # LunarLanderContinuous-v2, the PyBullet MuJoCo ports): normalize, 8 steps, gae .9,
    # vf_coef .4, gamma .99, RMSProp, linear lr decay, log_std_init -2, separate 64x64 torsos.
    # The zoo also uses gSDE, which rlbase does not have.
    return dict(network="mlp", num_env=num_env, nsteps=8, lam=0.9, vf_coef=0.4, gamma=0.99,
                ent_coef=0.0, max_grad_norm=0.5, lr=named_schedule("linear", lr),
                value_network="copy", log_std_init=-2.0, normalize=True)


def box2d() -> dict:
    return _zoo_continuous(9.6e-4, 16)  # BipedalWalker-v3's row


def mujoco() -> dict:
    return _zoo_continuous(9.6e-4, 4)  # HalfCheetahBulletEnv-v0's row (4 envs)
