"""PPO's defaults per env type, merged under the CLI's own arguments (PPO2's published
settings for Atari and MuJoCo; CartPole settings from the rl-zoo tuning)."""


def atari() -> dict:
    return dict(network="cnn", num_env=8, nsteps=128, nminibatches=4, noptepochs=4,
                ent_coef=0.01, lr=lambda f: f * 2.5e-4, cliprange=lambda f: f * 0.1,
                log_interval=1)


def mujoco() -> dict:
    return dict(network="mlp", num_env=1, nsteps=2048, nminibatches=32, noptepochs=10,
                lam=0.95, gamma=0.99, lr=3e-4, cliprange=0.2, ent_coef=0.0,
                value_network="copy", clip_value=True, log_interval=1)


def classic_control() -> dict:
    return dict(network="mlp", num_env=8, nsteps=32, nminibatches=1, noptepochs=20,
                gamma=0.98, lam=0.8, lr=1e-3, ent_coef=0.0, value_network="copy",
                clip_value=False, log_interval=10)


def box2d() -> dict:
    return mujoco()
