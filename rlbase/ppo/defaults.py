"""PPO's defaults per env type, merged under the CLI's own arguments."""

from rlbase.common.schedules import named_schedule


def atari() -> dict:
    # Baselines' ppo2 atari() (the PPO paper's Atari settings).
    return dict(network="cnn", num_env=8, nsteps=128, nminibatches=4, noptepochs=4,
                ent_coef=0.01, lr=named_schedule("linear", 2.5e-4),
                cliprange=named_schedule("linear", 0.1), log_interval=1)


def mujoco() -> dict:
    # Baselines' ppo2 mujoco() (the PPO paper's MuJoCo settings: 2048 steps, 32 minibatches,
    # 10 epochs, lr 3e-4 decayed linearly to 0, separate value torso), on one env wrapped in
    # VecNormalize as Baselines' run.py wrapped every MuJoCo env (observations and rewards).
    return dict(network="mlp", num_env=1, nsteps=2048, nminibatches=32, noptepochs=10,
                lam=0.95, gamma=0.99, lr=named_schedule("linear", 3e-4), cliprange=0.2,
                ent_coef=0.0, value_network="copy", clip_value=True, log_interval=1,
                normalize=True)


def classic_control() -> dict:
    # The rl-baselines3-zoo CartPole-v1 tuning (n_steps 32, batch 256, 20 epochs, gamma .98,
    # gae .8, lr 1e-3), with separate torsos and no value clipping (SB3's PPO).
    return dict(network="mlp", num_env=8, nsteps=32, nminibatches=1, noptepochs=20,
                gamma=0.98, lam=0.8, lr=1e-3, ent_coef=0.0, value_network="copy",
                clip_value=False, log_interval=10)


def box2d() -> dict:
    # rl-baselines3-zoo ppo.yml BipedalWalker-v3 (normalize, 32 envs x 2048 steps, minibatch
    # 64, gae .95, gamma .999, 10 epochs, lr 3e-4, clip .18); its LunarLander-v2 row differs
    # (16 envs x 1024, gamma .999, gae .98, 4 epochs, ent .01): pass those for LunarLander.
    return dict(network="mlp", num_env=32, nsteps=2048, nminibatches=1024, noptepochs=10,
                lam=0.95, gamma=0.999, lr=3e-4, cliprange=0.18, ent_coef=0.0,
                value_network="copy", clip_value=False, normalize=True, log_interval=1)
