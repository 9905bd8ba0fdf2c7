"""DDPG's defaults per env type, merged under the CLI's own arguments.

The references are rl-baselines3-zoo's tuned settings (hyperparams/ddpg.yml and td3.yml, which
agree for these envs): 400x300 ReLU nets, Gaussian action noise 0.1, 1e4 uniformly random
steps, one gradient step per env step, learning rate 1e-3 for both networks, no observation
normalization and no critic L2 penalty (SB3's DDPG has neither). Where the zoo gives no value
SB3's own defaults apply: tau 0.005, batch 256, buffer 1e6, gamma 0.99.

TD3's own options (twin_q=True, policy_delay=2, target_noise=0.2, target_noise_clip=0.5) are
not set here: the ``td3`` alias (CLI ``--alg=td3``) and ``rlbase.TD3`` add them to these.
"""

from typing import Any

# SB3's DDPG/TD3: Adam 1e-3 for actor and critics, no L2, raw observations, ReLU nets.
_SB3 = dict(network="mlp", activation="relu", layer_sizes=(400, 300), actor_lr=1e-3,
            critic_lr=1e-3, critic_l2_reg=0.0, normalize_observations=False,
            noise_type="normal_0.1", train_freq=1, gradient_steps=1, tau=0.005, num_env=1)


def classic_control() -> dict[str, Any]:
    # rl-baselines3-zoo Pendulum-v1 (the peer's anchor): about -150 by 2e4 steps.
    return dict(_SB3, gamma=0.98, buffer_size=200000, learning_starts=10000, batch_size=256)


def box2d() -> dict[str, Any]:
    # rl-baselines3-zoo BipedalWalker-v3 / LunarLanderContinuous-v3 (ddpg.yml and td3.yml):
    # gamma 0.98, buffer 2e5, 1e4 random steps; batch 256 is SB3's default.
    return dict(_SB3, gamma=0.98, buffer_size=200000, learning_starts=10000, batch_size=256)


def mujoco() -> dict[str, Any]:
    # rl-baselines3-zoo "mujoco-defaults" (HalfCheetah-v4, Ant-v4, Hopper-v4, Walker2d-v4,
    # Humanoid-v4 in ddpg.yml and td3.yml): 1e4 random steps, batch 256; gamma 0.99 and
    # buffer 1e6 are SB3's defaults. The TD3 paper's own: 400x300, lr 1e-3, batch 100,
    # tau 0.005, Gaussian 0.1, 1e4 random steps, gamma 0.99.
    return dict(_SB3, gamma=0.99, buffer_size=1000000, learning_starts=10000, batch_size=256)
