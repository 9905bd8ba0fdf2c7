"""The CLI takes every accepted spelling of a parameter (Baselines', SB3's, rlbase's older
ones) over the env type's default row (rlbase/hyperparams/<alg>.yml): a value the user gives
once reaches the config, whatever name the row uses for it; a parameter the user gives twice
(two spellings) is a one-line error. Run in-process through ``rlbase.run.main`` up to the
learn() call, whose arguments are captured and turned into the config as learn() does.

Seen to fail before the fix (rlbase.hyperparams.user_over_defaults): e.g. ``--alg=dqn
--target_network_update_freq=10`` stopped with "target_update_interval is given twice"."""

from __future__ import annotations

import functools
import math
import subprocess
import sys
import warnings
from typing import Any

import pytest

from rlbase import registry
from rlbase.common.errors import RLBaseError

ENVS = {"ddpg": "Pendulum-v1", "td3": "Pendulum-v1", "sac": "Pendulum-v1",
        "qlearning": "FrozenLake-v1"}  # the others: CartPole-v1

# (--alg, flag=value as typed, {config field: the value it must hold}). Baselines' README and
# docs flags first, then every other accepted spelling of each algorithm.
CASES: list[tuple[str, str, dict[str, Any]]] = [
    # Baselines' ddpg (run.py defaults row: train_freq, gradient_steps set under their new names)
    ("ddpg", "nb_rollout_steps=100", {"train_freq": 100}),
    ("ddpg", "nb_train_steps=50", {"gradient_steps": 50}),
    ("ddpg", "clip_norm=0.5", {"max_grad_norm": 0.5}),
    ("ddpg", "actor_lr=2e-4", {"actor_lr": 2e-4}),
    ("ddpg", "noise_type='ou_0.3'", {"noise_type": "ou_0.3"}),
    # Baselines' HER spellings of DDPG's fields
    ("ddpg", "polyak=0.9", {"tau": pytest.approx(0.1)}),
    ("ddpg", "n_batches=7", {"gradient_steps": 7}),
    ("ddpg", "pi_lr=2e-3", {"actor_lr": 2e-3}),
    ("ddpg", "Q_lr=3e-3", {"critic_lr": 3e-3}),
    ("ddpg", "norm_clip=3.0", {"obs_clip": 3.0}),
    ("ddpg", "norm_eps=0.2", {"obs_std_min": 0.2}),
    ("ddpg", "noise_eps=0.3", {"noise_type": "normal_0.3"}),
    ("ddpg", "learning_rate=4e-4", {"actor_lr": 4e-4, "critic_lr": 4e-4}),
    ("td3", "target_policy_noise=0.3", {"target_noise": 0.3, "twin_q": True}),  # over the preset
    # Baselines' deepq
    ("deepq", "target_network_update_freq=10", {"target_update_interval": 10}),
    ("deepq", "exploration_fraction=0.3", {"exploration_fraction": 0.3}),
    ("deepq", "prioritized_replay=True", {"prioritized_replay": True}),
    ("deepq", "prioritized_replay_alpha=0.5", {"prioritized_replay_alpha": 0.5}),
    ("deepq", "grad_norm_clipping=5.0", {"max_grad_norm": 5.0}),
    ("deepq", "checkpoint_freq=2000", {"best_model_interval": 2000}),
    ("deepq", "print_freq=7", {"log_interval": 7}),
    ("deepq", "learning_rate=2e-3", {"lr": 2e-3}),
    # Baselines' ppo2 (its names are rlbase's), and SB3's
    ("ppo2", "nsteps=64", {"nsteps": 64}),
    ("ppo2", "noptepochs=3", {"noptepochs": 3}),
    ("ppo2", "nminibatches=2", {"nminibatches": 2}),
    ("ppo2", "lr=3e-3", {"lr": 3e-3}),
    ("ppo2", "cliprange=0.1", {"cliprange": 0.1}),
    ("ppo2", "ent_coef=0.02", {"ent_coef": 0.02}),
    ("ppo2", "n_steps=64", {"nsteps": 64}),
    ("ppo2", "n_epochs=3", {"noptepochs": 3}),
    ("ppo2", "learning_rate=3e-3", {"lr": 3e-3}),
    ("ppo2", "gae_lambda=0.9", {"lam": 0.9}),
    ("ppo2", "clip_range=0.1", {"cliprange": 0.1}),
    ("ppo2", "clip_range_vf=0.3", {"clip_value": True, "cliprange_vf": 0.3}),
    ("ppo2", "n_steps=64 batch_size=16", {"nsteps": 64, "nminibatches": 4}),
    ("ppo2", "nsteps=64 save_interval=3", {"checkpoint_interval": 3 * 64}),
    # Baselines' a2c, and SB3's
    ("a2c", "nsteps=10", {"nsteps": 10}),
    ("a2c", "lrschedule='constant'", {"lrschedule": "constant"}),
    ("a2c", "n_steps=10", {"nsteps": 10}),
    ("a2c", "learning_rate=2e-3", {"lr": 2e-3, "lrschedule": "constant"}),
    ("a2c", "alpha=0.9", {"rms_alpha": 0.9}),
    ("a2c", "epsilon=1e-4", {"rms_epsilon": 1e-4}),
    ("a2c", "rms_prop_eps=1e-4", {"rms_epsilon": 1e-4}),
    ("a2c", "gae_lambda=0.9", {"lam": 0.9}),
    # acer
    ("acer", "n_steps=10", {"nsteps": 10}),
    ("acer", "learning_rate=1e-3", {"lr": 1e-3, "lrschedule": "constant"}),
    ("acer", "rprop_alpha=0.9", {"rms_alpha": 0.9}),
    ("acer", "rprop_epsilon=1e-4", {"rms_epsilon": 1e-4}),
    ("acer", "buffer_size=1000", {"buffer_size_per_env": 1000}),
    ("acer", "alpha=0.9", {"tau": pytest.approx(0.1)}),
    # Baselines' trpo_mpi, and SB3-contrib's TRPO
    ("trpo_mpi", "timesteps_per_batch=512", {"nsteps": 512}),
    ("trpo_mpi", "max_kl=0.02", {"max_kl": 0.02}),
    ("trpo_mpi", "entcoeff=0.01", {"ent_coef": 0.01}),
    ("trpo_mpi", "vf_stepsize=1e-3", {"vf_lr": 1e-3}),
    ("trpo_mpi", "n_steps=512", {"nsteps": 512}),
    ("trpo_mpi", "target_kl=0.02", {"max_kl": 0.02}),
    ("trpo_mpi", "cg_max_steps=7", {"cg_iters": 7}),
    ("trpo_mpi", "sub_sampling_factor=3", {"fvp_subsample": 3}),
    ("trpo_mpi", "line_search_max_iter=7", {"line_search_iters": 7}),
    ("trpo_mpi", "line_search_shrinking_factor=0.7", {"line_search_shrink": 0.7}),
    ("trpo_mpi", "gae_lambda=0.9", {"lam": 0.9}),
    ("trpo_mpi", "learning_rate=1e-3", {"vf_lr": 1e-3}),
    ("trpo_mpi", "n_critic_updates=4", {"vf_iters": 4}),
    ("trpo_mpi", "batch_size=32", {"vf_batch_size": 32}),
    # Baselines' gail (run_mujoco.py's flags), and the trust-region step's other names
    ("gail", "timesteps_per_batch=512", {"nsteps": 512}),
    ("gail", "d_stepsize=1e-3", {"d_lr": 1e-3}),
    ("gail", "entcoeff=0.01", {"ent_coef": 0.01}),
    ("gail", "vf_stepsize=1e-4", {"vf_lr": 1e-4}),
    ("gail", "n_steps=512", {"nsteps": 512}),
    ("gail", "target_kl=0.02", {"max_kl": 0.02}),
    ("gail", "cg_max_steps=7", {"cg_iters": 7}),
    ("gail", "sub_sampling_factor=3", {"fvp_subsample": 3}),
    ("gail", "line_search_max_iter=7", {"line_search_iters": 7}),
    ("gail", "line_search_shrinking_factor=0.7", {"line_search_shrink": 0.7}),
    ("gail", "gae_lambda=0.9", {"lam": 0.9}),
    ("gail", "learning_rate=1e-4", {"vf_lr": 1e-4}),
    ("gail", "n_critic_updates=4", {"vf_iters": 4}),
    ("gail", "batch_size=32", {"vf_batch_size": 32}),
    # sac, qlearning, es
    ("sac", "learning_rate=1e-4", {"lr": 1e-4}),
    ("sac", "target_update_interval=4", {"target_update_gradient_steps": 4}),
    ("tqc", "learning_rate=1e-4", {"lr": 1e-4}),
    ("tqc", "target_update_interval=4", {"target_update_gradient_steps": 4}),
    ("crossq", "learning_rate=1e-4", {"lr": 1e-4}),
    ("crossq", "target_update_interval=1", {"target_update_gradient_steps": 1}),
    ("qrdqn", "learning_rate=1e-4", {"lr": 1e-4}),
    ("pqn", "q_lambda=0.5", {"lam": 0.5}),
    ("qlearning", "learning_rate=0.3", {"lr": 0.3}),
    ("qlearning", "epsilon=0.5", {"exploration_initial_eps": 0.5}),
    ("qlearning", "epsilon_min=0.05", {"exploration_final_eps": 0.05}),
    ("qlearning", "epsilon_decay=0.9", {"exploration_decay": 0.9}),
    ("qlearning", "print_freq=7", {"log_interval": 7}),
    ("es", "learning_rate=0.02", {"lr": 0.02}),
    ("es", "observation_normalization=False", {"normalize_observations": False}),
]
# Spellings left out above, and why.
NOT_RUN = {("ddpg", "action_noise"): "an SB3 noise object, not a command-line literal",
           ("ddpg", "clip_return"): "Baselines' HER flag, refused under --alg=her by the CLI",
           ("ddpg", "target_policy_noise"): "run under --alg=td3"}


class _Captured(Exception):
    def __init__(self, kwargs: dict[str, Any]):
        super().__init__("learn() reached")
        self.kwargs = kwargs


@pytest.fixture
def learn_arguments(monkeypatch, tmp_path):
    """argv -> the keyword arguments the CLI passes to learn() (nothing trains)."""
    from rlbase import run

    def capturing(self: registry.Algorithm) -> Any:
        @functools.wraps(self.module.learn)
        def learn(**kwargs: Any) -> Any:
            kwargs["env"].close()
            raise _Captured(kwargs)
        return learn

    monkeypatch.setattr(registry.Algorithm, "learn", property(capturing))
    monkeypatch.chdir(tmp_path)

    def parse(alg: str, flags: list[str]) -> dict[str, Any]:
        env = ENVS.get(registry.resolve(alg)[0], ENVS.get(alg, "CartPole-v1"))
        argv = [f"--alg={alg}", f"--env={env}", "--num_timesteps=200", "--num_env=1",
                "--no_progress", *flags]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with pytest.raises(_Captured) as captured:
                run.main(argv)
        return captured.value.kwargs
    return parse


def _config(alg: str, kwargs: dict[str, Any]) -> Any:
    """The config learn() builds from these keyword arguments: each field under one name."""
    config_class = registry.config_class(registry.resolve(alg)[0])
    mine = {k: v for k, v in kwargs.items() if config_class.accepts(k)}
    fields: dict[str, str] = {}
    for key in mine:
        for name in config_class.fields_of(key) or [key]:
            assert name not in fields, f"{name} reaches learn() as {fields[name]} and {key}"
            fields[name] = key
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return config_class.build(mine, kwargs["env"].num_envs)


@pytest.mark.parametrize(("alg", "flags", "want"), CASES,
                         ids=[f"{a}-{f}" for a, f, _ in CASES])
def test_a_flag_given_once_reaches_the_config(learn_arguments, alg, flags, want) -> None:
    config = _config(alg, learn_arguments(alg, [f"--{f}" for f in flags.split()]))
    for name, value in want.items():
        assert getattr(config, name) == value, name


def test_every_other_spelling_is_covered() -> None:
    """Every algorithm's other spellings (SB3's, Baselines', older rlbase's) are run above."""
    run = {(registry.resolve(a)[0], f.split("=")[0]) for a, flags, _ in CASES
           for f in flags.split()}
    for alg in registry.available_algorithms():
        config_class = registry.config_class(alg)
        if config_class is None:
            continue
        for spelling in {rule.name for _, rule, _ in config_class._spellings()}:
            assert (alg, spelling) in run or (alg, spelling) in NOT_RUN, (alg, spelling)


def test_the_defaults_row_still_applies_to_what_the_user_left_out(learn_arguments) -> None:
    """Only the parameter the user set leaves the row: the row's other values stay."""
    from rlbase.hyperparams import env_type_defaults

    row = env_type_defaults("dqn", "classic_control")
    assert "target_update_interval" in row and "exploration_fraction" in row
    kwargs = learn_arguments("deepq", ["--target_network_update_freq=10"])
    assert "target_update_interval" not in kwargs
    config = _config("dqn", kwargs)
    assert config.target_update_interval == 10
    assert config.exploration_fraction == row["exploration_fraction"]
    assert config.lr == row["lr"]


@pytest.mark.parametrize("flags", [
    ["--target_network_update_freq=10", "--target_update_interval=20"],
    # the second value equal to the row's and learn()'s default: still given twice
    ["--target_network_update_freq=10", "--target_update_interval=500"],
    ["--learning_rate=1e-3", "--lr=1e-3"],
])
def test_a_field_the_user_gives_twice_is_an_error(learn_arguments, flags) -> None:
    with pytest.raises(RLBaseError, match=r"^dqn: \w+ is given twice \(as \w+ and \w+\)$"):
        learn_arguments("deepq", flags)


def test_given_twice_is_one_line_with_status_2() -> None:
    proc = subprocess.run([sys.executable, "-m", "rlbase.run", "--alg=ddpg",
                           "--env=Pendulum-v1", "--nb_rollout_steps=100", "--train_freq=100",
                           "--num_timesteps=200", "--num_env=1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("rlbase: error")]
    assert errors == ["rlbase: error: ddpg: train_freq is given twice (as nb_rollout_steps "
                      "and train_freq)"], proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_briefs_commands_reach_learn(learn_arguments) -> None:
    """The two commands that stopped with "given twice"."""
    ddpg = _config("ddpg", learn_arguments("ddpg", ["--nb_rollout_steps=100",
                                                    "--nb_train_steps=50"]))
    assert (ddpg.train_freq, ddpg.gradient_steps) == (100, 50)
    dqn = _config("dqn", learn_arguments("dqn", ["--target_network_update_freq=10"]))
    assert dqn.target_update_interval == 10
    assert not math.isnan(dqn.lr)
