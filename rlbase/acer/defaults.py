"""ACER's defaults per env type, merged under the CLI's own arguments."""


def atari() -> dict:
    # The reference's Atari settings: cnn policy, a constant learning rate.
    return dict(network="cnn", num_env=16, lrschedule="constant")


def classic_control() -> dict:
    return dict(network="mlp", num_env=8)
