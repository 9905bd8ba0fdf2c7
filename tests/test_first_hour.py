"""Issue 50's first-hour surprises, each pinned: a path with ``~``, envs whose ids name an
old version, ids ale-py registers, a --conf-file that names its algorithm, the bench and tune
command lines, the SB3 DQN class's final weights, action masks an algorithm does not use,
rlib's load/verbose/display/videos, a folder named rlbase shadowing the package, and LiteRT."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import types
import warnings

import gymnasium as gym
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.logs import logger

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def python(code: str, cwd: str | None = None, env: dict | None = None,
           timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=cwd, env=env or ENV, timeout=timeout)


# -- 1. "~" in every path flag ---------------------------------------------------------------
def test_tilde_in_path_flags_is_expanded_once_for_every_output(tmp_path, monkeypatch):
    """Bash leaves ``~`` alone after ``=``: the model and progress.csv went under $HOME, the
    monitor files under a literal ./~ folder (and --save_plots then found no episodes)."""
    from rlbase.run import main

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    main(["--alg=a2c", "--env=CartPole-v1", "--num_timesteps=200", "--num_env=1", "--seed=0",
          "--save_path=~/models/cartpole.zip", "--log_path=~/logs/cartpole", "--no_progress"])
    logger.reset()  # its files closed
    logs = home / "logs" / "cartpole"
    assert (home / "models" / "cartpole.zip").is_file()
    assert (logs / "progress.csv").is_file()
    assert list(logs.glob("*monitor.csv")), sorted(p.name for p in logs.iterdir())
    assert not (work / "~").exists()


def test_every_path_flag_of_every_command_expands_tilde(monkeypatch, tmp_path):
    from rlbase.cli_args import common_arg_parser
    from rlbase.export.cli import parser as export_parser
    from rlbase.tuning.cli import parser as tune_parser

    monkeypatch.setenv("HOME", str(tmp_path))
    args = common_arg_parser().parse_args(
        ["--save_path=~/m.zip", "--load_path=~/l.zip", "--log_path=~/logs",
         "--checkpoint_path=~/ckpt", "--log-folder=~/zoo", "--conf-file=~/c.yml"])
    for name in ("save_path", "load_path", "log_path", "checkpoint_path", "log_folder",
                 "conf_file"):
        assert getattr(args, name).startswith(str(tmp_path)), (name, getattr(args, name))
    tune = tune_parser().parse_args(["--algo=a2c", "--env=CartPole-v1", "--out=~/best.yml"])
    assert tune.out == str(tmp_path / "best.yml")
    export = export_parser().parse_args(["--load_path=~/m.zip", "--out=~/exported"])
    assert (export.load_path, export.out) == (str(tmp_path / "m.zip"),
                                              str(tmp_path / "exported"))


# -- 4. mujoco-py-era robotics ids -------------------------------------------------------------
def test_a_mujoco_py_robotics_id_names_the_registered_successor():
    """gymnasium-robotics still registers FetchReach-v1 on mujoco-py (MujocoPy... classes):
    making it was a 30-line traceback ending in "No module named 'mujoco_py'". Fake ids of the
    same shape stand in (gymnasium-robotics is optional)."""
    from rlbase.common.envs.make import check_env_id

    old, new = "FhFetchReach-v1", "FhFetchReach-v4"
    gym.register(old, entry_point="gymnasium_robotics.envs:MujocoPyFetchReachEnv")
    gym.register(new, entry_point="gymnasium_robotics.envs:MujocoFetchReachEnv")
    try:
        with pytest.raises(RLBaseError, match=f"'{old}' needs mujoco-py.*use '{new}'"):
            check_env_id(old)
    finally:
        del gym.registry[old], gym.registry[new]


# -- 5. Pong-v0 / Pong-v4: ids ale-py registers ------------------------------------------------
@pytest.mark.skipif(importlib.util.find_spec("ale_py") is None, reason="ale-py not installed")
def test_plain_atari_ids_are_found_and_refused_with_their_noframeskip_form():
    """A fresh process (ale_py not yet loaded): Pong-v4 was "unknown env id". It is an id
    that skips frames itself, so training refuses it naming the NoFrameskip form (the ale
    path trained it as PongNoFrameskip-v4 without a word)."""
    proc = python("from rlbase.common.envs.make import check_env_id\n"
                  "for env_id in ('Pong-v0', 'Pong-v4'):\n"
                  "    check_env_id(env_id)\n"
                  "print('found')")
    assert proc.returncode == 0 and "found" in proc.stdout, proc.stderr[-2000:]
    from rlbase.common.vec_env.ale_vec_env import ale_game_name

    with pytest.raises(RLBaseError, match="NoFrameskip-v4 or ALE/-v5"):
        ale_game_name("Pong-v4")
    assert ale_game_name("PongNoFrameskip-v4") == "pong"


# -- 8. --conf-file written by rlbase names its algorithm ---------------------------------------
def test_conf_file_algorithm_is_taken_when_no_algo_flag(tmp_path):
    """``rlbase train --conf-file logs/ppo/CartPole-v1_1/config.yml`` (algo: ppo) without
    --algo said "the row is for another algorithm than a2c"."""
    from rlbase.run import conf_file_algorithm

    conf = tmp_path / "config.yml"
    conf.write_text("CartPole-v1:\n  algo: ppo\n  env: CartPole-v1\n  n_timesteps: 256\n"
                    "  n_steps: 32\n  batch_size: 32\n  n_epochs: 1\n")
    assert conf_file_algorithm(str(conf), "CartPole-v1") == "ppo"
    zoo = tmp_path / "zoo.yml"  # the zoo's own files name no algorithm
    zoo.write_text("CartPole-v1:\n  n_timesteps: 256\n")
    assert conf_file_algorithm(str(zoo), "CartPole-v1") is None
    from rlbase.run import main

    model = main([f"--conf-file={conf}", "--env=CartPole-v1", "--no_progress",
                  f"--log_path={tmp_path / 'logs'}"])
    logger.reset()
    assert model.algorithm == "ppo" and model.num_timesteps == 256


# -- 9. bench --help, bench suite --num_timesteps, tune's line per trial -------------------------
def test_bench_help_and_suite_budget_flag(capsys, tmp_path):
    from rlbase.bench import suite
    from rlbase.bench.__main__ import main as bench_main

    bench_main(["--help"])
    out = capsys.readouterr().out
    assert "suite" in out and "--num_timesteps" in out
    spec = suite.RunSpec(name="a2c", alg="a2c", env="CartPole-v1", timesteps=100_000)
    assert suite.with_timesteps(spec, 2000).timesteps == 2000
    assert suite.with_timesteps(spec, None) is spec
    assert "--num_timesteps=2000" in suite.suite_command("classic", None, None, None,
                                                         timesteps=2000)
    summary = suite.run_suite("tiny", str(tmp_path), in_process=True, progress=False,
                              plots=False, algs=["random"], timesteps=64)
    assert summary["ran"] >= 1 and not summary["failed"]
    import json

    results = [json.loads(p.read_text()) for p in tmp_path.glob("runs/*/result.json")]
    assert results and all(r["timesteps"] == 64 for r in results)


def test_tune_prints_count_total_and_best_so_far(capsys):
    optuna = pytest.importorskip("optuna")
    from rlbase.tuning.study import TrialLog

    study = optuna.create_study(direction="maximize")
    log = TrialLog(3)
    for value, config in ((10.0, {"lr": 0.000123456}), (30.0, {"lr": 0.1}), (20.0, {})):
        trial = study.ask()
        trial.set_user_attr("config", config)
        log(study, study.tell(trial, value))
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("[1/3] trial 0 complete: mean return 10 | best 10 (trial 0)")
    assert "lr=0.000123" in lines[0] and "0.000123456" not in lines[0]
    assert lines[2].startswith("[3/3] trial 2 complete: mean return 20 | best 30 (trial 1)")


# -- 2. action masks an algorithm does not use ---------------------------------------------------
def _masks_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if "action_masks" in str(w.message)]


def test_training_without_masks_on_an_env_that_offers_them_warns_naming_what_to_use():
    """PPO took 360 illegal actions of 400 on such an env, and nothing said a word."""
    from envs.masked_grid import MaskedGridEnv

    from rlbase.dqn import dqn
    from rlbase.ppo import ppo
    from rlbase.pqn import pqn

    cases = (
        (ppo.learn, dict(nsteps=16, nminibatches=1, noptepochs=1), "PPO: .*action_masks=False"),
        (dqn.learn, dict(learning_starts=8, batch_size=4, buffer_size=32, best_model_interval=None),
         "DQN: .*action_masks=False"),
        (pqn.learn, dict(nsteps=16, nminibatches=1, noptepochs=1),
         "PQN does not use action masks.*A2C, PPO, DQN and QR-DQN honour them"),
    )
    for learn, kwargs, message in cases:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            learn("mlp", MaskedGridEnv(), total_timesteps=16, seed=0, log_interval=10**9,
                  num_hidden=8, **kwargs)
        said = _masks_warnings(caught)
        assert len(said) == 1 and re.search(message, said[0]), said
    with warnings.catch_warnings(record=True) as caught:  # masks on: nothing to say
        warnings.simplefilter("always")
        ppo.learn("mlp", MaskedGridEnv(), total_timesteps=16, seed=0, log_interval=10**9,
                  num_hidden=8, nsteps=16, nminibatches=1, noptepochs=1, action_masks=True)
    assert not _masks_warnings(caught)


def test_check_env_says_the_env_offers_masks_and_who_honours_them():
    from envs.masked_grid import MaskedGridEnv

    from rlbase.common.envs.env_checker import check_env

    with pytest.warns(UserWarning, match=r"offers action masks \(an action_masks\(\) method\)"
                                         ".*A2C, PPO, DQN and QR-DQN honour them"):
        check_env(MaskedGridEnv())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make("CartPole-v1"))  # no masks: no word about them


# -- 3. the SB3 DQN class keeps its last weights -------------------------------------------------
def test_sb3_dqn_class_keeps_the_last_weights_unless_asked(tmp_path):
    """``rlbase.DQN(...).learn()`` handed back the best-scored model (Baselines' deepq rule,
    ``Restored model with mean reward``); SB3's DQN keeps the last weights."""
    from rlbase import DQN
    from rlbase.dqn.config import CONFIG

    assert CONFIG.defaults()["best_model_interval"] == 10000  # learn() keeps Baselines' rule
    model = DQN("MlpPolicy", "CartPole-v1", learning_starts=10, seed=0)
    assert model.model.config.best_model_interval is None
    model.learn(20)
    model.save(tmp_path / "dqn")
    assert DQN.load(tmp_path / "dqn").model.config.best_model_interval is None
    asked = DQN("MlpPolicy", "CartPole-v1", best_model_interval=500)
    assert asked.model.config.best_model_interval == 500


# -- 6, 7. rlib: display without a display, load on the class, verbose, quiet videos ------------
def test_rlib_display_without_a_display_is_refused_in_one_line(tmp_path):
    """A subprocess with DISPLAY unset: test(display=True) ended the process with a
    segmentation fault (rc 139) once TensorFlow was loaded."""
    env = {k: v for k, v in ENV.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = python("from rlbase.compat.rlib import DDPG\n"
                  "from rlbase.common.errors import RLBaseError\n"
                  "d = DDPG({'id': 'Pendulum-v1'}, {'hidden_sizes': [8]}, {'hidden_sizes': [8]},"
                  " verbose=False)\n"
                  "try:\n"
                  "    d.test(display=True)\n"
                  "except RLBaseError as exc:\n"
                  "    print('refused:', exc)\n", cwd=str(tmp_path), env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "refused: test(display=True) needs a display" in proc.stdout
    assert "save_video=True" in proc.stdout


def test_rlib_load_on_the_class_verbose_and_quiet_videos(tmp_path, monkeypatch, capfd):
    """``PPO.load(path)`` on the class was "missing 1 required positional argument";
    ``PPO(..., verbose=...)`` was refused; save_videos() printed rlbase's own "lr could not be
    saved" warning (lr_annealing's schedule) and SDL's XDG_RUNTIME_DIR error."""
    pytest.importorskip("imageio_ffmpeg")
    from rlbase.compat.rlib import PPO

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("SDL_VIDEODRIVER", raising=False)  # (restored: the fix may set it)
    kwargs = {'hidden_sizes': [8]}
    ppo = PPO({'id': 'CartPole-v1'}, kwargs, kwargs, batch_size=10, num_steps_per_iter=10,
              total_timesteps=20, num_envs=2, seed=0, num_test_agents=1, test_every=20,
              verbose=False)
    ppo.train()
    assert capfd.readouterr().out.count("test return") == 0  # verbose=False is honoured
    ppo.save("ppo.zip")
    loaded = PPO.load("ppo.zip", verbose=False)
    assert isinstance(loaded, PPO) and loaded.current_iteration == ppo.current_iteration
    assert loaded.test_scores == ppo.test_scores
    again = PPO({'id': 'CartPole-v1'}, kwargs, kwargs, num_envs=2, verbose=False)
    assert again.load("ppo.zip", verbose=False) is again  # the instance form still works
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        videos = ppo.save_videos()
    assert videos and all(os.path.getsize(v) > 0 for v in videos)
    assert not [str(w.message) for w in caught if "could not be saved" in str(w.message)]
    out, err = capfd.readouterr()
    assert "XDG_RUNTIME_DIR" not in out + err


# -- 11. a folder named rlbase in the working directory -----------------------------------------
def test_a_folder_named_rlbase_that_hides_the_package_is_one_line(tmp_path):
    """A clone named rlbase/ in the working directory: ``python -m rlbase.run`` failed with
    "module 'rlbase' has no attribute '__version__'" (Python imports the folder as an empty
    namespace package; the installed package's submodules still load)."""
    (tmp_path / "rlbase").mkdir()
    (tmp_path / "rlbase" / "README.md").write_text("a clone's top folder\n")
    env = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}
    probe = python("import rlbase; print(getattr(rlbase, '__file__', None) is None)",
                   cwd=str(tmp_path), env=env)
    if probe.stdout.strip() != "True":
        pytest.skip("this install's rlbase wins over a folder in the working directory "
                    "(a path entry, not an import finder)")
    proc = subprocess.run([sys.executable, "-m", "rlbase.run", "--help"], capture_output=True,
                          text=True, cwd=str(tmp_path), env=env, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith("rlbase: error: the folder") and "hides the rlbase package" \
        in lines[0] and str(tmp_path / "rlbase") in lines[0]
    library = python("from rlbase.ppo import ppo", cwd=str(tmp_path), env=env)
    assert "ImportError: the folder" in library.stderr, library.stderr[-2000:]


# -- 12. LiteRT's interpreter where it is installed -------------------------------------------
def test_tflite_runs_on_litert_where_installed(monkeypatch):
    """``tf.lite.Interpreter`` prints a deprecation notice pointing to LiteRT: rlbase's own
    checks use LiteRT's ``ai_edge_litert`` when it is there (a stand-in module here)."""
    from rlbase.common.export.runners import tflite_interpreter

    made = []

    class Interpreter:
        def __init__(self, model_path, num_threads=None):
            made.append((model_path, num_threads))

    package = types.ModuleType("ai_edge_litert")
    module = types.ModuleType("ai_edge_litert.interpreter")
    module.Interpreter = Interpreter
    package.interpreter = module
    monkeypatch.setitem(sys.modules, "ai_edge_litert", package)
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", module)
    assert isinstance(tflite_interpreter("policy.tflite", 2), Interpreter)
    assert made == [("policy.tflite", 2)]


def test_sb3_four_value_step_unpacking_is_one_line_naming_the_five_values():
    """SB3's ``obs, rewards, dones, infos = env.step(a)`` raised Python's bare "too many values
    to unpack (expected 4)"; now an RLBaseError names gymnasium's five values. The five-name
    form, indexing, ``list()`` and star-unpacking still work, and the loops' ``vec_step`` gives
    a plain tuple (no per-step check)."""
    from rlbase.common.vec_env import DummyVecEnv, StepResult, vec_step

    env = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    env.reset()
    try:
        with pytest.raises(RLBaseError, match=r"five values .* obs, rewards, terminated, "
                                              r"truncated, infos = env.step\(actions\)"):
            obs, rewards, dones, infos = env.step([0])

        def sb3_script_line():  # inside a function, as most scripts are
            _, _, _, _ = env.step([1])

        with pytest.raises(RLBaseError, match="dones = terminated | truncated"):
            sb3_script_line()
        obs, rewards, terminated, truncated, infos = env.step([0])
        assert obs.shape == (1, 4) and rewards.tolist() == [1.0] and isinstance(infos, list)
        result = env.step([1])
        assert isinstance(result, StepResult) and len(result) == 5
        assert len(list(result)) == 5 and result[1].tolist() == [1.0]
        first, *rest = result
        assert len(rest) == 4
        plain = vec_step(env, [0])
        assert type(plain) is tuple and len(plain) == 5
    finally:
        env.close()
