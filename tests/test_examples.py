"""Every script in examples/ runs with a tiny budget (the same code a researcher starts from)."""

from __future__ import annotations

import importlib.util
import json
import os
import runpy
import shutil
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def run_example(name: str, *args: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run examples/<name> as ``__main__`` in this process (no second TensorFlow start-up)."""
    monkeypatch.setattr(sys, "argv", [name, *args])
    runpy.run_path(os.path.join(EXAMPLES, name), run_name="__main__")


def test_every_example_is_tested() -> None:
    with open(__file__, encoding="utf-8") as f:
        source = f.read()
    scripts = sorted(n for n in os.listdir(EXAMPLES) if n.endswith(".py"))
    assert len(scripts) >= 8
    assert [n for n in scripts if f'"{n}"' not in source] == []


def test_train_a2c_cartpole(monkeypatch, capsys) -> None:
    run_example("train_a2c_cartpole.py", "--num_timesteps=200", monkeypatch=monkeypatch)
    assert "evaluation return" in capsys.readouterr().out


def test_train_and_enjoy_cartpole(monkeypatch, capsys, tmp_path) -> None:
    path = str(tmp_path / "cartpole_model.pkl")
    run_example("train_cartpole.py", "--num_timesteps=300", f"--save_path={path}",
                monkeypatch=monkeypatch)
    assert f"Saving model to {path}" in capsys.readouterr().out
    run_example("enjoy_cartpole.py", f"--load_path={path}", "--episodes=2", "--no_render",
                monkeypatch=monkeypatch)
    assert capsys.readouterr().out.count("Episode reward") == 2


def test_custom_network(monkeypatch, capsys) -> None:
    from rlbase.common.networks.registry import registered_networks

    run_example("custom_network.py", "--num_timesteps=256", monkeypatch=monkeypatch)
    assert "residual_mlp" in registered_networks()
    assert "residual_mlp PPO on CartPole-v1: evaluation return" in capsys.readouterr().out


def test_custom_env(monkeypatch, capsys) -> None:
    run_example("custom_env.py", "--num_timesteps=200", monkeypatch=monkeypatch)
    assert "A2C on Corridor-v0: evaluation return" in capsys.readouterr().out


def test_her_bit_flipping(monkeypatch, capsys) -> None:
    run_example("her_bit_flipping.py", "--n_bits=3", "--timesteps=200", monkeypatch=monkeypatch)
    assert "n_bits=3 her=True timesteps=200" in capsys.readouterr().out


def test_rlib_cartpole(monkeypatch, capsys, tmp_path) -> None:
    run_example("rlib_cartpole.py", "--num_timesteps=1024", f"--save_folder={tmp_path}",
                monkeypatch=monkeypatch)
    assert f"results in {tmp_path / 'run_0'}; test return" in capsys.readouterr().out


@pytest.mark.slow  # 20-45 s on 2 shared cores
def test_continue_training(monkeypatch, capsys) -> None:
    run_example("continue_training.py", "--num_timesteps=256", monkeypatch=monkeypatch)
    out = capsys.readouterr().out
    assert "after 512 steps (learn, load_path)" in out
    assert "model class after 512 steps" in out  # 256 before saving + 256 after loading


@pytest.mark.slow  # 20-45 s on 2 shared cores
def test_gail_cartpole(monkeypatch, capsys) -> None:
    run_example("gail_cartpole.py", "--expert_timesteps=256", "--expert_episodes=1",
                "--num_timesteps=1024", monkeypatch=monkeypatch)
    out = capsys.readouterr().out
    assert "expert: " in out and "gail evaluation: " in out


@pytest.mark.slow  # 20-45 s on 2 shared cores
def test_behaviour_cloning(monkeypatch, capsys) -> None:
    run_example("behaviour_cloning.py", "--num_timesteps=256", "--expert_episodes=2",
                "--epochs=1", monkeypatch=monkeypatch)
    out = capsys.readouterr().out
    assert "expert: mean return" in out and "after behaviour cloning" in out


def test_plot_results(monkeypatch, capsys, tmp_path) -> None:
    out = tmp_path / "curves.png"
    run_example("plot_results.py", "--num_timesteps=400", "--seeds=2", f"--out={out}",
                monkeypatch=monkeypatch)
    assert "plotted 4 runs" in capsys.readouterr().out and out.stat().st_size > 1000
    # The existing-runs path: plot a folder someone else wrote.
    logdir = tmp_path / "runs" / "mine-0"
    logdir.mkdir(parents=True)
    (logdir / "0.monitor.csv").write_text('#{"t_start": 0}\nr,l,t\n1,10,0.1\n3,12,0.2\n')
    run_example("plot_results.py", f"--logdir={tmp_path / 'runs'}", f"--out={out}",
                monkeypatch=monkeypatch)
    assert "plotted 1 runs" in capsys.readouterr().out


@pytest.mark.slow  # ALE start-up and a cnn trace: ~30 s on 2 shared cores
def test_atari_pong(monkeypatch, capsys) -> None:
    pytest.importorskip("ale_py")
    run_example("atari_pong.py", "--num_timesteps=128", "--num_env=2",
                monkeypatch=monkeypatch)
    assert "ppo on PongNoFrameskip-v4:" in capsys.readouterr().out


@pytest.mark.slow  # 20-45 s on 2 shared cores
def test_ddpg_mpi() -> None:
    if importlib.util.find_spec("mpi4py") is None or shutil.which("mpiexec") is None:
        pytest.skip("mpi4py / mpiexec not installed (pip install -e .[mpi])")
    proc = subprocess.run(["mpiexec", "-n", "2", sys.executable,
                           os.path.join(EXAMPLES, "ddpg_mpi.py"), "--num_timesteps=200",
                           "--td3"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 worker(s), 200 steps each: evaluation return" in proc.stdout



def test_gpu_check_speed_is_the_training_phases(tmp_path) -> None:
    """examples/gpu_check.py (the GPU machine's script, kept ready): TD3's and SAC's steps/s
    is measured between the rows with updates (the random warm-up makes no network call),
    the last time/fps otherwise; a run that never trained says so in the table."""
    check = runpy.run_path(os.path.join(EXAMPLES, "gpu_check.py"))
    progress = tmp_path / "progress.csv"
    progress.write_text("time/total_timesteps,time/time_elapsed,time/fps,train/n_updates\n"
                        "1000,1.0,1000,0\n2000,3.0,666,10\n5000,9.0,555,40\n")
    assert check["training_speed"](str(progress)) == (5000, 3000 / 6.0, True)
    progress.write_text("time/total_timesteps,time/time_elapsed,time/fps,train/n_updates\n"
                        "1000,1.0,1000,0\n2000,2.0,1000,0\n")
    assert check["training_speed"](str(progress)) == (2000, 1000.0, False)
    table = check["markdown"]([{"alg": "td3", "env": "HalfCheetah-v5", "args": [],
                                "steps": 2000, "steps_per_s": 1000.0, "training_started": False,
                                "gpu_util_mean": None, "gpu_util_max": None,
                                "gpu_mem_max_mib": None}], "no GPU")
    assert "| 1000 (warm-up only) | no nvidia-smi |" in table and "CleanRL" in table


@pytest.mark.slow  # a 20 s budget and MuJoCo's start-up
def test_gpu_check_runs_here_without_a_gpu(tmp_path) -> None:
    pytest.importorskip("mujoco")
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, "gpu_check.py"),
                           "--seconds=20", f"--out={tmp_path}", "--only", "td3"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((tmp_path / "gpu_check.json").read_text())["results"][0]
    assert result["alg"] == "td3" and result["steps"] > 0 and result["returncode"] == 130
    assert "| td3 | HalfCheetah-v5" in (tmp_path / "gpu_check.md").read_text()

# -- documentation (rlbase/docs) stays complete --------------------------------------------------
DOCS = os.path.join(os.path.dirname(EXAMPLES), "rlbase", "docs")


def test_every_algorithm_page_documents_every_learn_parameter() -> None:
    import inspect

    from rlbase.registry import available_algorithms, get_algorithm

    for alg in available_algorithms():
        with open(os.path.join(DOCS, "algorithms", f"{alg}.md"), encoding="utf-8") as f:
            page = f.read()
        for section in ("## What it is", "## When to pick it", "## Defaults per env type",
                        "## `learn()` parameters", "## Logged keys"):
            assert section in page, (alg, section)
        params = inspect.signature(get_algorithm(alg).learn).parameters.values()
        missing = [p.name for p in params
                   if f"| `{'**' if p.kind == p.VAR_KEYWORD else ''}{p.name}` |" not in page]
        assert missing == [], f"{alg}.md lacks learn() parameters {missing}"


def test_cli_page_lists_every_flag() -> None:
    from rlbase.cli_args import common_arg_parser

    with open(os.path.join(DOCS, "cli.md"), encoding="utf-8") as f:
        page = f.read()
    flags = [s for a in common_arg_parser()._actions
             for s in a.option_strings if s.startswith("--")]
    assert len(flags) > 20
    assert [f for f in flags if f"`{f}`" not in page] == []


def test_docs_links_resolve() -> None:
    """Every relative link of a docs page names a file, or a page the docs site generates
    (the API reference under api/, rlbase.docs_site.api_pages)."""
    import re

    from rlbase.docs_site import api_pages

    generated = {os.path.normpath(os.path.join(DOCS, page)) for page in api_pages.pages()}
    for root, _, files in os.walk(DOCS):
        for name in files:
            with open(os.path.join(root, name), encoding="utf-8") as f:
                links = re.findall(r"\]\(([^)#:]+)\)", f.read())
            for link in links:
                target = os.path.normpath(os.path.join(root, link))
                assert os.path.exists(target) or target in generated, (name, link)
