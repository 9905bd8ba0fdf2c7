"""The command line, run as a user would: a subprocess, its exit code and its output (the
error paths of bad flags in this process, through the same wrapper)."""

import os
import subprocess
import sys

import pytest
from process_util import cli_in_process

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def run_cli(*args, timeout=300):
    proc = subprocess.run([sys.executable, "-m", "rlbase.run", *args], capture_output=True,
                          text=True, timeout=timeout, env=ENV)
    return proc.returncode, proc.stdout, proc.stderr


def assert_one_line_error(code, err, *fragments):
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rlbase: error:"), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("args,fragments", [
    (["--alg=nope"], ["unknown algorithm 'nope'", "a2c"]),
    (["--env=CartPole-v9"], ["unknown env id 'CartPole-v9'", "CartPole-v1"]),
    (["--network=nope"], ["unknown network 'nope'", "mlp", "lstm"]),
    (["--not_a_param=3"], ["--not_a_param", "ent_coef"]),
    (["--num_layers=2", "--bogus=1"], ["--bogus"]),
    (["--num_timesteps=abc"], ["--num_timesteps", "'abc'"]),
    (["--num_timesteps=-5"], ["--num_timesteps", "'-5'"]),
    (["--num_env=0"], ["--num_env", "0"]),
    (["--load_path=/nonexistent/model.zip"], ["not found", "/nonexistent/model.zip"]),
    (["--lrschedule=sideways"], ["sideways", "linear"]),
    (["--save_plots"], ["--save_plots", "--log_path"]),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, fragments):
    code, _, err = cli_in_process(capsys, "--alg=a2c", "--env=CartPole-v1",
                                  "--num_timesteps=100", *args)
    assert_one_line_error(code, err, *fragments)


def test_bad_input_exits_2_from_a_real_process():
    code, _, err = run_cli("--alg=a2c", "--env=CartPole-v1", "--num_timesteps=100",
                           "--num_env=0")
    assert_one_line_error(code, err, "--num_env", "0")


def test_corrupt_model_file(tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"this is not a model file")
    code, _, err = run_cli("--alg=a2c", "--env=CartPole-v1", "--num_timesteps=100",
                           f"--load_path={bad}")
    assert_one_line_error(code, err, str(bad))


def test_train_save_load_play_and_failed_run_keeps_the_saved_model(tmp_path):
    path = tmp_path / "cartpole.zip"
    code, out, err = run_cli("--alg=a2c", "--env=CartPole-v1", "--num_timesteps=400",
                             "--seed=0", f"--save_path={path}", f"--log_path={tmp_path / 'log'}",
                             "--play", "--play_episodes=2", "--num_layers=1")
    assert code == 0, err
    assert path.is_file() and "episode 2: return" in out
    assert (tmp_path / "log" / "progress.csv").is_file()
    assert (tmp_path / "log" / "0.monitor.csv").is_file()
    saved = path.read_bytes()

    # Continuing from the saved model works...
    code, out, err = run_cli("--alg=a2c", "--env=CartPole-v1", "--num_timesteps=200",
                             f"--load_path={path}", "--num_layers=1")
    assert code == 0, err

    # ...a model saved for other spaces is refused, and the file saved earlier is untouched.
    code, _, err = run_cli("--alg=a2c", "--env=Acrobot-v1", "--num_timesteps=200",
                           f"--load_path={path}", f"--save_path={path}", "--num_layers=1")
    assert_one_line_error(code, err, "observation space")
    assert path.read_bytes() == saved


def test_help_lists_the_flags():
    code, out, _ = run_cli("--help")
    assert code == 0
    for flag in ("--alg", "--env", "--env_type", "--seed", "--num_timesteps", "--network",
                 "--num_env", "--reward_scale", "--save_path", "--load_path",
                 "--save_video_interval", "--save_video_length", "--log_path", "--play",
                 "--vec_env", "--save_plots", "--save_videos"):
        assert flag in out


def test_ppo_with_normalization_trains_saves_and_plays(tmp_path):
    path = tmp_path / "ppo_pendulum.zip"
    code, out, err = run_cli("--alg=ppo", "--env=Pendulum-v1", "--num_timesteps=256",
                             "--num_env=2", "--nsteps=64", "--nminibatches=2", "--normalize",
                             "--seed=0", f"--save_path={path}", "--play", "--play_episodes=1")
    assert code == 0, err
    assert path.is_file() and "episode 1: return" in out


def test_plots_and_videos_after_training(tmp_path):
    code, out, err = run_cli("--alg=a2c", "--env=CartPole-v1", "--num_timesteps=2000",
                             "--num_env=2", "--seed=0", f"--log_path={tmp_path}",
                             "--save_plots", "--save_videos=2", "--no_progress")
    assert code == 0, err
    png = tmp_path / "learning_curves.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    videos = sorted((tmp_path / "videos").glob("*.mp4"))
    assert len(videos) == 2 and all(v.stat().st_size > 1000 for v in videos)
    assert out.count("Saved video") == 2


def test_normalize_flag_where_the_env_type_defaults_already_normalize():
    # PPO's mujoco() defaults normalize; --normalize said so twice and the default leaked into
    # learn() ("network 'mlp' does not take normalize").
    code, out, err = run_cli("--alg=ppo", "--env=Hopper-v5", "--num_timesteps=64", "--seed=0",
                             "--nsteps=32", "--nminibatches=2", "--normalize", "--no_progress")
    assert code == 0, err
    assert "'normalize'" not in out.splitlines()[0]
