"""ACER's defaults per env type, merged under the CLI's own arguments."""


def atari() -> dict:
    # The reference's Atari settings: cnn policy, a constant learning rate.
    return dict(network="cnn", num_env=16, lrschedule="constant")


def classic_control() -> dict:
    # 8 envs x 20 steps, 64x64 tanh MLP, lr 2e-3 decaying linearly, and a small buffer that
    # starts replay early (5000 / 1000 env steps per env). Measured on CartPole-v1 at 5e5
    # steps, seed 0: the reference's buffer (50000 / 10000: replay from 8e4 steps on) with
    # lr 2e-3 peaked at 500 then drifted to an evaluation of 365; lr 7e-4 (the reference's)
    # evaluates at 216 after 1e5 steps, 2e-3 at 500. With these settings seeds 0, 1 and 2
    # evaluate at 500 after 5e5 steps (python -m rlbase.bench run --alg=acer
    # --env=CartPole-v1 --num_timesteps=5e5 --seeds=3), with or without XLA.
    return dict(network="mlp", num_env=8, lr=2e-3, buffer_size=5000, replay_start=1000)
