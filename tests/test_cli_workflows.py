"""The command line's workflows, run as a user would (issue: what Baselines and SB3 users bring).

Subprocesses where the exit status or the console output is the point; in-process calls of
rlbase.run.main / rlbase.cli.main elsewhere (no TensorFlow start-up per case).
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from process_util import cli_in_process

import rlbase
from rlbase.common.errors import RLBaseError
from rlbase.common.io.serialization import load_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIET = ["--no_progress"]


def cli(*args: str, env: dict[str, str] | None = None, timeout: int = 300
        ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rlbase.run", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, **(env or {})})


def run(*args: str):
    from rlbase.run import main

    return main([*args, *QUIET])


def test_startup_prints_no_tensorflow_noise_and_no_internal_repr(tmp_path):
    proc = cli("--alg=a2c", "--env=CartPole-v1", "--num_timesteps=100", "--num_env=2",
               env={"TF_CPP_MIN_LOG_LEVEL": ""})
    assert proc.returncode == 0, proc.stderr
    for noise in ("cuInit", "oneDNN", "absl", "cuda_platform", "cpu_feature_guard"):
        assert noise not in proc.stderr, proc.stderr
    start = next(line for line in proc.stdout.splitlines() if line.startswith("Training"))
    assert "<function" not in start and " at 0x" not in start
    # 100 steps are not a whole number of 2 x 5-step updates' worth: the run says so.
    assert "not a whole number of updates" not in proc.stdout  # 100 = 10 updates of 10
    proc = cli("--alg=a2c", "--env=CartPole-v1", "--num_timesteps=95", "--num_env=2")
    assert "95 timesteps is not a whole number of updates of 10 steps" in proc.stdout


def test_help_lists_algorithms_and_defaults_and_version_works():
    proc = cli("--help")
    assert proc.returncode == 0
    for alg in ("a2c", "acer", "ddpg", "dqn", "es", "ppo", "qlearning", "sac", "ppo2", "td3"):
        assert alg in proc.stdout
    assert "(default: CartPole-v1)" in " ".join(proc.stdout.split())
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"rlbase {rlbase.__version__}"


def test_play_a_saved_model_without_training_the_baselines_way(tmp_path):
    path = str(tmp_path / "m.zip")
    run("--alg=ppo2", "--env=CartPole-v1", "--num_timesteps=256", "--num_env=2", "--nsteps=64",
        f"--save_path={path}", "--seed=0")
    weights = load_file(path)[1]
    model = run("--alg=ppo2", "--env=CartPole-v1", "--num_timesteps=0", f"--load_path={path}",
                "--play", "--play_episodes=1", "--num_env=2")
    assert model.num_timesteps == 256  # loaded, not trained
    for name, array in model.get_parameters().items():
        np.testing.assert_array_equal(array, weights[name])
    with pytest.raises(RLBaseError, match="0 only with --load_path"):
        run("--alg=a2c", "--num_timesteps=0")


def test_deepq_alias_and_tf_style_activation(tmp_path):
    model = run("--alg=deepq", "--env=CartPole-v1", "--num_timesteps=300",
                "--learning_starts=100", "--activation=tf.nn.relu", "--num_hidden=16")
    assert model.algorithm == "dqn" and model.network_kwargs["activation"] == "tf.nn.relu"


def test_env_kwargs_reach_every_env_and_are_saved_with_the_model(tmp_path):
    path = str(tmp_path / "lander.zip")
    model = run("--alg=ppo", "--env=LunarLander-v3", "--env_kwargs={'continuous': True}",
                "--num_timesteps=128", "--num_env=1", "--nsteps=128", "--nminibatches=2",
                f"--save_path={path}", "--eval_freq=64", "--eval_episodes=1",
                f"--log_path={tmp_path / 'log'}")
    assert model.action_space.shape == (2,)  # the continuous variant
    assert load_file(path)[0]["env_kwargs"] == {"continuous": True}
    # Playing the saved model makes the same env without being told again.
    played = run("--alg=ppo", "--env=LunarLander-v3", "--num_timesteps=0",
                 f"--load_path={path}", "--num_env=1")
    assert played.action_space.shape == (2,)
    with pytest.raises(RLBaseError, match="--env_kwargs must be a Python dict literal"):
        run("--alg=ppo", "--env=LunarLander-v3", "--env_kwargs=continuous")


def test_custom_env_by_module_id_and_gym_packages(tmp_path):
    package = tmp_path / "my_envs_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('MyCartPole-v0', entry_point='gymnasium.envs.classic_control:CartPoleEnv',"
        " max_episode_steps=50)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        model = run("--alg=a2c", "--env=my_envs_pkg:MyCartPole-v0", "--num_timesteps=40",
                    "--num_env=2")
        assert model.observation_space.shape == (4,)
        with pytest.raises(RLBaseError, match="cannot import module 'no_such_pkg'"):
            run("--alg=a2c", "--env=no_such_pkg:Env-v0")
        with pytest.raises(RLBaseError, match="--gym_packages: cannot import 'nope_pkg'"):
            run("--alg=a2c", "--gym_packages", "nope_pkg")
    finally:
        sys.path.remove(str(tmp_path))


def test_unknown_env_type_is_refused(capsys):
    code, _, err = cli_in_process(capsys, "--alg=a2c", "--env_type=clasic_control",
                                  "--num_timesteps=10")
    assert code == 2
    assert err.strip().splitlines() == [
        "rlbase: error: unknown env type 'clasic_control'; did you mean classic_control? "
        "(allowed: atari, classic_control, box2d, mujoco, toy_text, minatar, custom)"]


def test_a_missing_physics_engine_is_one_line_naming_the_extra(monkeypatch):
    import importlib.util

    from rlbase.common.envs import make as cmd_util

    real = importlib.util.find_spec
    monkeypatch.setattr(cmd_util.importlib.util, "find_spec",
                        lambda name, *a: None if name in ("mujoco", "Box2D") else real(name, *a))
    with pytest.raises(RLBaseError, match=r"needs MuJoCo.*pip install 'rlbase\[mujoco\]'"):
        cmd_util.check_env_id("HalfCheetah-v5")
    with pytest.raises(RLBaseError, match=r"needs Box2D.*pip install 'rlbase\[box2d\]'"):
        cmd_util.check_env_id("BipedalWalker-v3")


def test_media_packages_are_checked_before_training(monkeypatch):
    import importlib.util

    from rlbase import run as run_module

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    args = SimpleNamespace(save_plots=False, save_videos=1, save_video_interval=0)
    with pytest.raises(RLBaseError, match=r"imageio_ffmpeg is not installed.*rlbase\[video\]"):
        run_module.check_media_packages(args)
    args = SimpleNamespace(save_plots=True, save_videos=0, save_video_interval=0)
    with pytest.raises(RLBaseError, match=r"matplotlib is not installed.*rlbase\[plot\]"):
        run_module.check_media_packages(args)


def test_log_format_and_logdir_environment_are_honoured(tmp_path):
    env = {"RLBASE_LOG_FORMAT": "csv,tensorboard", "RLBASE_LOGDIR": str(tmp_path / "logs")}
    proc = cli("--alg=a2c", "--env=CartPole-v1", "--num_timesteps=100", "--num_env=2", env=env)
    assert proc.returncode == 0, proc.stderr
    files = os.listdir(tmp_path / "logs")
    assert "progress.csv" in files and "0.monitor.csv" in files
    assert glob.glob(str(tmp_path / "logs" / "tb" / "*tfevents*"))
    run("--alg=a2c", "--num_timesteps=40", "--num_env=2", f"--log_path={tmp_path / 'flag'}",
        "--log_format=stdout,json")
    assert os.path.exists(tmp_path / "flag" / "progress.json")


def test_no_log_path_makes_no_temporary_folder(tmp_path):
    proc = cli("--alg=a2c", "--env=CartPole-v1", "--num_timesteps=40", "--num_env=2",
               env={"RLBASE_LOGDIR": "", "RLBASE_LOG_FORMAT": "", "TMPDIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert not glob.glob(str(tmp_path / "rlbase-*"))


def test_eval_freq_logs_evaluations_and_keeps_the_best_model(tmp_path):
    run("--alg=ppo", "--env=CartPole-v1", "--num_timesteps=256", "--num_env=2", "--nsteps=32",
        "--eval_freq=64", "--eval_episodes=2", "--log_interval=1000", f"--log_path={tmp_path}")
    progress = pd.read_csv(tmp_path / "progress.csv")
    # Every evaluation has its own row (none overwritten by the next before a dump), and
    # only evaluation rows carry eval/ values.
    evaluated = progress.dropna(subset=["eval/mean_reward"])
    assert evaluated["time/total_timesteps"].tolist() == [64, 128, 192, 256]
    assert ((evaluated["eval/mean_reward"] > 0) & (evaluated["eval/mean_ep_length"] > 0)).all()
    assert os.path.exists(tmp_path / "best_model.zip")
    meta = json.loads((tmp_path / "metadata.json").read_text())
    assert meta["algorithm"] == "ppo" and meta["env_id"] == "CartPole-v1"


def test_output_paths_are_checked_before_training(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    for flag in ("--save_path", "--log_path", "--checkpoint_path"):
        value = str(blocker / "sub" / "m.zip")
        with pytest.raises(RLBaseError, match=f"{flag}=.*cannot be written"):
            run("--alg=a2c", "--num_timesteps=10", f"{flag}={value}")
    proc = cli("--alg=a2c", "--num_timesteps=10", f"--save_path={blocker / 'm.zip'}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_a_save_that_fails_at_the_end_keeps_the_model(tmp_path, capsys):
    from rlbase import run as run_module

    class Model:
        saved: list[str] = []

        def save(self, path: str) -> None:
            if "unwritable" in path:
                raise OSError(28, "No space left on device")
            self.saved.append(path)

    args = SimpleNamespace(alg="a2c", log_path=str(tmp_path), save_path=None)
    # Kept beside the logs, said in one line, and not reported as success (exit status 1).
    with pytest.raises(SystemExit) as exit_info:
        run_module.save_model(Model(), str(tmp_path / "unwritable" / "m.zip"), args, {})
    kept = str(tmp_path / "a2c_unsaved.zip")
    assert exit_info.value.code == 1 and Model.saved == [kept]
    assert capsys.readouterr().err.startswith("rlbase: error: could not write ")


def test_rlbase_command_subcommands(tmp_path):
    from rlbase.cli import main

    main(["train", "--alg=a2c", "--num_timesteps=40", "--num_env=2", "--seed=0",
          f"--save_path={tmp_path / 'm.zip'}", f"--log_path={tmp_path / 'log'}", *QUIET])
    main(["--alg=a2c", "--num_timesteps=40", "--num_env=2", *QUIET])  # flags alone: train
    main(["play", "--alg=a2c", f"--load_path={tmp_path / 'm.zip'}", "--play_episodes=1",
          "--num_env=2", *QUIET])
    main(["plot", str(tmp_path / "log"), f"--out={tmp_path / 'c.png'}"])
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(RLBaseError, match="unknown command 'fly'"):
        main(["fly"])
    # the console script installed beside this interpreter, whether or not its venv is on PATH
    script = Path(sys.executable).parent / "rlbase"
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert proc.stdout.strip() == f"rlbase {rlbase.__version__}"
