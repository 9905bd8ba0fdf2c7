"""SAC's defaults per env type, merged under the CLI's own arguments.

The references are rl-baselines3-zoo's tuned settings (hyperparams/sac.yml) on SB3's SAC
defaults, which are learn()'s own: lr 3e-4, buffer 1e6, 100 random steps, batch 256, tau
0.005, gamma 0.99, one gradient step per env step, ent_coef 'auto', target entropy -dim(A),
256x256 ReLU nets (``mlp`` with ``num_hidden=256``, ``activation='relu'``, set by
build_model).
"""

from typing import Any

_SB3 = dict(network="mlp", num_layers=2, num_hidden=256, activation="relu", num_env=1)


def classic_control() -> dict[str, Any]:
    # sac.yml Pendulum-v1: n_timesteps 2e4, learning_rate 1e-3, SB3's defaults otherwise (the
    # peer's anchor, sb3_bench.py sac Pendulum-v1).
    return dict(_SB3, lr=1e-3, buffer_size=1_000_000, learning_starts=100, batch_size=256,
                tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, ent_coef="auto")


def box2d() -> dict[str, Any]:
    # sac.yml BipedalWalker-v3 (tuned): lr 7.3e-4, buffer 3e5, batch 256, ent_coef auto,
    # gamma 0.98, tau 0.02, train_freq 64, gradient_steps 64, 1e4 random steps, 400x300 nets;
    # the zoo also turns on gSDE (use_sde, log_std_init -3), which rlbase does not have.
    # LunarLanderContinuous there differs: lr lin_7.3e-4, buffer 1e6, gamma 0.99, tau 0.01,
    # train_freq 1, gradient_steps 1 (pass those flags for it).
    return dict(_SB3, layer_sizes=(400, 300), lr=7.3e-4, buffer_size=300_000,
                learning_starts=10_000, batch_size=256, tau=0.02, gamma=0.98, train_freq=64,
                gradient_steps=64, ent_coef="auto")


def mujoco() -> dict[str, Any]:
    # sac.yml "mujoco-defaults" (HalfCheetah, Ant, Hopper, Walker2d, Humanoid): 1e4 random
    # steps, SB3's defaults otherwise (Swimmer adds gamma 0.9999).
    return dict(_SB3, lr=3e-4, buffer_size=1_000_000, learning_starts=10_000, batch_size=256,
                tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, ent_coef="auto")
