"""OpenAI Baselines' ``--alg=her``: HER over DDPG with Baselines' settings
(baselines/her/experiment/config.py DEFAULT_PARAMS and her.py), as rlbase's DDPG parameters.

``python -m rlbase.run --alg=her --env=FetchReach-v4`` runs the ddpg algorithm with
:data:`BASELINES_HER` (the registry's ``her`` alias) and, once the env is built,
:func:`horizon_settings` (what Baselines derived from the episode length T). Baselines' own
names for those settings are accepted where they mean one rlbase parameter (DDPG's deprecated
spellings: ``polyak``, ``pi_lr``, ``Q_lr``, ``n_batches``, ``clip_return``, ``norm_clip``,
``norm_eps``, ``noise_eps``); the others are refused by :func:`refuse_baselines_names` in one
line that says what to write instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlbase.common.errors import RLBaseError

#: Baselines' HER settings as learn() arguments of rlbase's ddpg (each with its Baselines name)
BASELINES_HER: dict[str, Any] = {
    "replay_buffer_class": "her",       # replay_strategy='future'
    "replay_buffer_kwargs": {"n_sampled_goal": 4, "goal_selection_strategy": "future"},
    "num_layers": 3, "num_hidden": 256,  # layers, hidden (relu: rlbase's DDPG 'mlp')
    "actor_lr": 1e-3, "critic_lr": 1e-3,  # pi_lr, Q_lr
    "buffer_size": int(1e6),
    "tau": 0.05,                         # 1 - polyak (0.95)
    "target_update_gradient_steps": 40,  # the targets move once per cycle of n_batches
    "gradient_steps": 40,                # n_batches per cycle
    "batch_size": 256,
    "action_l2": 1.0,
    "random_eps": 0.3,
    "noise_type": "normal_0.2",          # noise_eps (max_u = 1: actions in [-1, 1])
    "normalize_observations": True,      # per key (o_stats, g_stats), clipped to norm_clip
    "obs_clip": 5.0,                     # norm_clip
    "obs_std_min": 0.01,                 # norm_eps
    "critic_l2_reg": 0.0,
    "learning_starts": 0,                # the first cycle already acts with the actor
    "target_max": 0.0,                   # clip_pos_returns
    "num_env": 1,                        # Baselines' run.py: --num_env or 1 (rollout_batch_size)
}

#: Baselines' HER names rlbase cannot take as they are -> what to write instead
REFUSED: dict[str, str] = {
    "replay_strategy": "--her / replay_buffer_class='her' for 'future' (the default of "
                       "--alg=her), replay_buffer_class=None for 'none'",
    "replay_k": "replay_buffer_kwargs=\"dict(n_sampled_goal=K)\"",
    "n_cycles": "log_interval=N (episodes between log rows) or eval_freq=N (env steps): "
                "rlbase has no epochs",
    "n_test_rollouts": "--eval_episodes=N with --eval_freq=M",
    "rollout_batch_size": "--num_env=N",
    "policy_save_interval": "--checkpoint_interval=N (env steps)",
    "layers": "num_layers=N",
    "hidden": "num_hidden=N",
    "max_u": "nothing: actions are scaled to the env's bounds",
    "clip_obs": "nothing: rlbase does not clip raw observations (only normalized ones, "
                "obs_clip)",
    "relative_goals": "nothing: not supported",
    "demo_file": "nothing: demonstrations (bc_loss, q_filter) are not supported",
    **dict.fromkeys(("bc_loss", "q_filter", "num_demo", "demo_batch_size", "prm_loss_weight",
                     "aux_loss_weight"), "nothing: demonstrations are not supported"),
    "test_with_polyak": "nothing: evaluation uses the online actor",
    "network_class": "--network=NAME",
    "scope": "nothing: rlbase has no graph scopes",
    "override_params": "each parameter as its own argument (--name=value)",
}


def refuse_baselines_names(kwargs: Mapping[str, Any]) -> None:
    """A one-line error for the first Baselines HER name in ``kwargs`` that rlbase cannot
    take, saying what to write instead."""
    for name in kwargs:
        if name in REFUSED:
            raise RLBaseError(f"her: Baselines' {name}={kwargs[name]!r} is not an rlbase "
                              f"parameter; write {REFUSED[name]}")


def horizon_settings(max_episode_steps: int | None, num_envs: int,
                     given: Mapping[str, Any]) -> dict[str, Any]:
    """What Baselines' HER derives from the episode length T, for the settings not in
    ``given``: gamma = 1 - 1/T, critic targets clipped below at -1/(1-gamma) (clip_return),
    and one training phase per episode of every env (train_freq = T * num_envs env steps)."""
    if not max_episode_steps:
        raise RLBaseError("her: Baselines' HER settings need an env with a time limit (its "
                          "episode length T sets gamma and the training cycle); give one with "
                          "gymnasium.wrappers.TimeLimit, or use --alg=ddpg --her")
    horizon = int(max_episode_steps)
    gamma = float(given.get("gamma", 1.0 - 1.0 / horizon))
    out: dict[str, Any] = {}
    if "gamma" not in given:
        out["gamma"] = gamma
    if "target_min" not in given and "clip_return" not in given:
        out["target_min"] = -1.0 / (1.0 - gamma) if gamma < 1 else None
    if "train_freq" not in given:
        out["train_freq"] = horizon * num_envs
    return out
