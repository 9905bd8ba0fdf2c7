"""MinAtar: the ids are made as the CLI makes them, its network, its env-type rows and the bench
preset's wiring at a tiny budget (the preset's real runs are a benchmark, never a test)."""

from __future__ import annotations

import dataclasses
import json
import os

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("minatar", reason="minatar is not installed: pip install 'rlbase[minatar]'")

from rlbase.bench import suite as bench_suite  # noqa: E402
from rlbase.common.envs import make as env_make  # noqa: E402
from rlbase.common.networks.registry import build_network  # noqa: E402
from rlbase.hyperparams import env_type_defaults, file_for, read_file  # noqa: E402

GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")


def test_ids_register_and_have_their_own_env_type() -> None:
    for game in GAMES:
        env_id = f"MinAtar/{game}-v1"
        env_make.check_env_id(env_id)
        assert env_make.get_env_type(env_id) == "minatar"
    venv = env_make.make_vec_env("MinAtar/Breakout-v1", "minatar", num_env=2, seed=0)
    obs = venv.reset()
    assert obs.shape == (2, 10, 10, 4) and obs.dtype == np.bool_
    assert venv.action_space == gym.spaces.Discrete(3)  # v1: the minimal action set
    venv.close()


def test_unknown_minatar_version_is_one_line() -> None:
    with pytest.raises(Exception, match="MinAtar/Breakout-v1"):
        env_make.check_env_id("MinAtar/Breakout-v7")


def test_minatar_cnn_is_the_papers_network() -> None:
    net = build_network("minatar_cnn")
    out = net(np.zeros((3, 10, 10, 4), np.float32))
    assert out.shape == (3, 128)
    (conv,) = net.convs
    assert conv.kernel.shape == (3, 3, 4, 16) and conv.strides == (1, 1)
    assert net.dense[0].kernel.shape == (8 * 8 * 16, 128)


def test_env_type_rows_cite_their_source_and_apply() -> None:
    for alg, source in (("ppo", "gymnax-blines"), ("a2c", "MinAtar"), ("dqn", "Young & Tian"),
                        ("pqn", "purejaxql")):
        with open(file_for(alg), encoding="utf-8") as f:
            text = f.read()
        comment = text[:text.index("\nminatar:")].rsplit("\n\n", 1)[-1]
        assert source in comment, alg
        assert "minatar" in read_file(file_for(alg))
    dqn = env_type_defaults("dqn", "minatar")
    assert (dqn["network"], dqn["buffer_size"], dqn["learning_starts"], dqn["batch_size"],
            dqn["target_update_interval"], dqn["exploration_final_eps"], dqn["lr"]) == \
        ("minatar_cnn", 100_000, 5000, 32, 1000, 0.1, 2.5e-4)
    ppo = env_type_defaults("ppo", "minatar")
    assert (ppo["num_env"], ppo["nsteps"], ppo["nminibatches"], ppo["noptepochs"],
            ppo["gamma"], ppo["num_hidden"]) == (64, 128, 8, 4, 0.999, 256)
    assert env_type_defaults("a2c", "minatar")["network"] == "minatar_cnn"
    pqn = env_type_defaults("pqn", "minatar")
    assert (pqn["network"], pqn["num_env"], pqn["nsteps"], pqn["nminibatches"],
            pqn["noptepochs"], pqn["lr"]) == ("minatar_cnn", 128, 32, 32, 2, 5e-4)


def test_preset_is_four_algorithms_five_games_five_seeds() -> None:
    specs = bench_suite.PRESETS["minatar"]
    assert {(s.name, s.env) for s in specs} == {
        (a, f"MinAtar/{g}-v1") for a in ("ppo", "a2c", "dqn", "pqn") for g in GAMES}
    assert {s.name: s.timesteps for s in specs} == {"ppo": 10_000_000, "a2c": 5_000_000,
                                                    "dqn": 5_000_000, "pqn": 10_000_000}
    assert all(s.seeds == (0, 1, 2, 3, 4) and s.extra == {} for s in specs)
    for spec in specs:
        assert bench_suite.available(spec) is None, spec


@pytest.mark.parametrize("alg", ["ppo", "dqn", "pqn"])
def test_preset_wiring_at_a_tiny_budget(alg, tmp_path, monkeypatch) -> None:
    (spec,) = bench_suite.select("minatar", algs=[alg], envs=["MinAtar/Breakout-v1"])
    # PPO: one 64-env batch of 8 steps; PQN: one 128-env batch of 4 steps
    steps = {"ppo": 64 * 8, "dqn": 300, "pqn": 128 * 4}[alg]
    extra = {"ppo": {"nsteps": 8, "nminibatches": 2}, "dqn": {"learning_starts": 100},
             "pqn": {"nsteps": 4, "nminibatches": 2}}[alg]
    tiny = dataclasses.replace(spec, timesteps=steps, seeds=(0,), eval_episodes=1, extra=extra)
    monkeypatch.setitem(bench_suite.PRESETS, "minatar", [tiny])
    summary = bench_suite.run_suite("minatar", str(tmp_path), in_process=True, progress=False,
                                    plots=False)
    assert summary["failed"] == {} and summary["ran"] == 1
    run_dir = os.path.join(str(tmp_path), "runs", f"{alg}__MinAtar-Breakout-v1__s0")
    with open(os.path.join(run_dir, "result.json"), encoding="utf-8") as f:
        result = json.load(f)
    assert result["steps_done"] == steps and result["provenance"]["versions"]["minatar"]
    assert result["cli"].startswith(f"python -m rlbase.run --alg={alg} "
                                    "--env=MinAtar/Breakout-v1 ")
