"""ES defaults per env type, merged under the CLI's own arguments."""


def classic_control() -> dict:
    return dict(network="mlp", num_env=8, popsize=8, noise_stdev=0.1, lr=0.05, l2coeff=0.005)


def mujoco() -> dict:
    # Salimans et al.'s MuJoCo settings, scaled to a small machine's population.
    return dict(network="mlp", num_env=8, popsize=40, noise_stdev=0.02, lr=0.01,
                l2coeff=0.005, action_noise=0.01)


def box2d() -> dict:
    return mujoco()
