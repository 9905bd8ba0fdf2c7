"""ES defaults per env type, merged under the CLI's own arguments."""


def classic_control() -> dict:
    # A linear policy (like the peer's ARS LinearPolicy) with a small population and large
    # steps: it reaches 500 on CartPole-v1 by ~5e4 env steps (seeds 0-3 measured). Paired
    # starts off: CartPole's starts barely differ, and at 4e4 steps seeds 0, 1, 4 reached
    # 500, 500, 409 without them against 416, 448, 466 with them.
    # Pendulum-v1 needs a nonlinear policy: num_layers=1 num_hidden=16 activation='relu'
    # popsize=16 noise_stdev=0.1 lr=0.05 paired_starts=True: -166 (seed 0) and -235 (seed 1)
    # by 2e6 steps (10-episode evaluation). The same with 64x64 tanh, 32x32 tanh or
    # 16x16 tanh with normalized fitness stayed near -900 at 4e5 steps.
    return dict(network="mlp", num_layers=0, num_env=8, popsize=8, noise_stdev=0.1, lr=0.05,
                l2coeff=0.005, paired_starts=False)


def mujoco() -> dict:
    # Salimans et al.'s MuJoCo settings (64x64 tanh, sigma 0.02, Adam 0.01, action noise
    # 0.01), with a population sized for a small machine.
    return dict(network="mlp", num_env=8, popsize=40, noise_stdev=0.02, lr=0.01,
                l2coeff=0.005, action_noise=0.01)


def box2d() -> dict:
    return mujoco()
