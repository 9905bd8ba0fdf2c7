"""DDPG's defaults per env type, merged under the CLI's own arguments."""


def classic_control() -> dict:
    # The rl-zoo Pendulum settings the peer uses (400x300 ReLU nets, Gaussian action noise,
    # 1e4 random steps, one gradient step per env step); they reach about -150 by 2e4 steps.
    return dict(network="mlp", layer_sizes=(400, 300), actor_lr=1e-3, critic_lr=1e-3,
                gamma=0.98, buffer_size=200000, learning_starts=10000, noise_type="normal_0.1",
                nb_rollout_steps=100, nb_train_steps=100, batch_size=256, tau=0.005,
                critic_l2_reg=0.0, normalize_observations=False, num_env=1)


def mujoco() -> dict:
    # Baselines' DDPG settings (64x64 layer-normalized ReLU nets, parameter noise) on 1 env.
    return dict(network="mlp", num_layers=2, num_hidden=64, layer_norm=True, num_env=1)


def box2d() -> dict:
    return mujoco()
