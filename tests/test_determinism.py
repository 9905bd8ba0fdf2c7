"""A seed given is a seed applied: learn(..., seed=s) gives bit-identical weights in one process
and across processes, on an env id, a gymnasium env and a user's VecEnv, and after
``Cls.load(path, env, seed=s)`` (rlbase/docs/reproducibility.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from determinism_worker import CASES, KINDS
from process_util import ENV, ROOT, TESTS

from rlbase import registry
from rlbase.common.logs import logger
from rlbase.common.vec_env import DummyVecEnv


def train_on_fresh_vec_env(alg: str) -> dict[str, np.ndarray]:
    env_id, extra = CASES[alg]
    learn = registry.get_algorithm(alg).learn
    with logger.scoped_configure(format_strs=[]):
        model = learn("mlp", DummyVecEnv([lambda: gym.make(env_id)]), total_timesteps=200,
                      seed=0, log_interval=10**9, **extra)
    return model.get_parameters()


@pytest.mark.parametrize("alg", ["ppo", "sac"])
def test_seed_applies_to_a_users_vec_env(alg):
    first, second = train_on_fresh_vec_env(alg), train_on_fresh_vec_env(alg)
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=f"{alg}: {name}")


def digests(algs: list[str], save_dir, load_dir) -> dict[str, dict[str, str]]:
    """The worker's weight digests, from a fresh process."""
    out = subprocess.run([sys.executable, f"{TESTS}/determinism_worker.py", str(save_dir),
                          str(load_dir), *algs], env=ENV, cwd=ROOT, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_two_processes(algs: list[str], tmp_path) -> None:
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    first = digests(algs, first_dir, first_dir)
    second = digests(algs, second_dir, first_dir)  # continues the first process's files
    for alg in algs:
        for kind in KINDS:
            assert first[alg][kind] == second[alg][kind], f"{alg}, {kind}: weights differ"


def test_same_seed_same_weights_across_processes(tmp_path):
    # SAC in one process: test_seed_applies_to_a_users_vec_env; every algorithm: below (slow).
    check_two_processes(["ppo"], tmp_path)


@pytest.mark.slow
def test_every_algorithm_same_weights_across_processes(tmp_path):
    check_two_processes(sorted(CASES), tmp_path)


def test_a_seed_given_to_load_wins_over_the_files(tmp_path):
    import rlbase

    path = str(tmp_path / "a2c.zip")
    rlbase.A2C("MlpPolicy", "CartPole-v1", seed=0, nsteps=5).save(path)
    loaded = rlbase.A2C.load(path, env="CartPole-v1", seed=1)
    assert loaded.seed == 1 and loaded.model.hyperparameters["seed"] == 1


@pytest.mark.parametrize("value, seed, enabled", [("1", 0, True), ("0", 0, False),
                                                   ("1", None, False)])
def test_deterministic_ops_on_request(monkeypatch, value, seed, enabled):
    import tensorflow as tf

    from rlbase.common.misc_util import set_global_seeds

    calls = []
    monkeypatch.setattr(tf.config.experimental, "enable_op_determinism",
                        lambda: calls.append(True))
    monkeypatch.setenv("RLBASE_DETERMINISTIC_OPS", value)
    set_global_seeds(seed)
    assert calls == ([True] if enabled else [])


def test_deterministic_ops_setting_is_checked(monkeypatch):
    from rlbase.common.errors import RLBaseError
    from rlbase.common.misc_util import set_global_seeds

    monkeypatch.setenv("RLBASE_DETERMINISTIC_OPS", "yes")
    with pytest.raises(RLBaseError, match=r"RLBASE_DETERMINISTIC_OPS='yes': use 1"):
        set_global_seeds(0)


def test_cli_deterministic_ops_flag_turns_them_on(monkeypatch):
    import tensorflow as tf

    from rlbase.run import main

    calls = []
    monkeypatch.setattr(tf.config.experimental, "enable_op_determinism",
                        lambda: calls.append(True))
    monkeypatch.delenv("RLBASE_DETERMINISTIC_OPS", raising=False)  # restored after the test
    main(["--alg=a2c", "--env=CartPole-v1", "--num_timesteps=10", "--seed=0", "--num_env=1",
          "--nsteps=5", "--no_progress", "--deterministic_ops"])
    assert calls == [True]
