"""The benchmark settings that match the peer's anchor runs (../shared/anchors/ANCHORS.md),
so each comparison is like for like."""

from __future__ import annotations

from typing import Any

PEER_SETTINGS: dict[tuple[str, str], dict[str, Any]] = {
    # The settings the comparison fixes: 8 envs, 5 steps, 64x64 tanh MLP (the rest are
    # rlbase's classic_control defaults).
    ("a2c", "CartPole-v1"): dict(num_env=8, nsteps=5, num_layers=2, num_hidden=64,
                                 activation="tanh"),
    # The rl-zoo CartPole settings in the peer's anchor script: one 256-sample minibatch,
    # 20 epochs, separate 64x64 torsos, no value clipping.
    ("ppo", "CartPole-v1"): dict(num_env=8, nsteps=32, nminibatches=1, noptepochs=20,
                                 gamma=0.98, lam=0.8, lr=1e-3, ent_coef=0.0, cliprange=0.2,
                                 value_network="copy", clip_value=False),
    # No peer anchor: settings measured to reach -250 by 3e5 steps on seeds 0-2 (-149, -182,
    # -175), with running observation and reward normalization.
    ("ppo", "Pendulum-v1"): dict(num_env=4, nsteps=1024, nminibatches=32, noptepochs=10,
                                 gamma=0.9, lam=0.95, lr=1e-3, cliprange=0.2, ent_coef=0.0,
                                 value_network="copy", clip_value=False, normalize=True),
    # The rl-zoo CartPole settings in the peer's anchor script (256x256 ReLU MLP, 128 updates
    # every 256 steps, target copied every 10 steps, no double Q or dueling heads): the CLI's
    # classic_control defaults, so this row adds no flag. Like the CLI, learn() hands back the
    # best model scored every 2560 steps by 5 greedy episodes on a separate env (the peer hands
    # back its last model; --best_model_interval=None --eval_freq=0 does the same here).
    ("dqn", "CartPole-v1"): dict(num_env=1, network="mlp", num_hidden=256,
                                 activation="relu", hiddens=[], lr=2.3e-3, batch_size=64,
                                 buffer_size=100_000, learning_starts=1000, gamma=0.99,
                                 target_update_interval=10, train_freq=256,
                                 gradient_steps=128, exploration_fraction=0.16,
                                 exploration_final_eps=0.04, dueling=False, double_q=False,
                                 best_model_interval=2560, eval_freq=2560, eval_episodes=5),
    # The rl-zoo Pendulum settings in the peer's anchor script (400x300 ReLU nets, lr 1e-3,
    # Gaussian action noise 0.1, 1e4 random steps, one gradient step per env step, batch 256,
    # tau 0.005); TD3's options are added with --twin_q=True --policy_delay=2
    # --target_noise=0.2.
    ("ddpg", "Pendulum-v1"): dict(num_env=1, network="mlp", layer_sizes=(400, 300),
                                  activation="relu", actor_lr=1e-3, critic_lr=1e-3, gamma=0.98,
                                  buffer_size=200_000, learning_starts=10_000,
                                  noise_type="normal_0.1", train_freq=1,
                                  gradient_steps=1, batch_size=256, tau=0.005,
                                  critic_l2_reg=0.0, normalize_observations=False),
    # The rl-zoo Pendulum SAC settings in the peer's anchor script: lr 1e-3, SB3's defaults
    # otherwise (buffer 1e6, 100 random steps, batch 256, tau 0.005, gamma 0.99, one gradient
    # step per env step, ent_coef 'auto', 256x256 ReLU nets).
    ("sac", "Pendulum-v1"): dict(num_env=1, network="mlp", num_layers=2, num_hidden=256,
                                 activation="relu", lr=1e-3, buffer_size=1_000_000,
                                 learning_starts=100, batch_size=256, tau=0.005, gamma=0.99,
                                 train_freq=1, gradient_steps=1, ent_coef="auto"),
    # Like the peer's ARS (a linear policy, a few directions per update): 4 mirrored pairs,
    # sigma 0.1, Adam 0.05, 8 episodes side by side. The peer runs from sb3_ars.py, not
    # sb3_bench.py: run it right after this one in the same shell command.
    ("es", "CartPole-v1"): dict(num_env=8, network="mlp", num_layers=0, popsize=8,
                                noise_stdev=0.1, lr=0.05, paired_starts=False,
                                center_episodes=0),
}
