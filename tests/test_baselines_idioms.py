"""What a Baselines user types in the first hour: old env ids, old argument names, a model
trained behind VecNormalize, Baselines' plot defaults, videos, playing a saved file, mpiexec."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from rlbase.common.envs.make import check_env_id
from rlbase.common.errors import RLBaseError

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


def rlbase_cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "rlbase.run", *args], capture_output=True,
                          text=True, timeout=timeout, env=ENV)


def one_error_line(proc):
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rlbase: error:"), proc.stderr
    return lines[0]


# ---- 1. env ids of a version gymnasium does not make ------------------------------------------


@pytest.mark.parametrize("env_id,newest", [("HalfCheetah-v2", "HalfCheetah-v5"),
                                           ("Hopper-v3", "Hopper-v5")])
def test_mujoco_py_ids_suggest_the_newest_version(env_id, newest):
    with pytest.raises(RLBaseError) as info:
        check_env_id(env_id)
    message = str(info.value)
    assert "\n" not in message
    assert f"'{env_id}' was removed" in message and f"use '{newest}'" in message
    assert f"{newest[:-1]}4, {newest}" in message  # the usable registered versions


def test_an_unregistered_version_names_the_registered_ones():
    with pytest.raises(RLBaseError, match=r"'CartPole-v7'.*version v7 is not registered; use "
                                          r"'CartPole-v1' \(registered versions: CartPole-v0, "
                                          r"CartPole-v1\)"):
        check_env_id("CartPole-v7")
    check_env_id("CartPole-v1")  # registered ones pass


def test_learn_with_a_baselines_mujoco_id_is_one_rlbase_error():
    from rlbase.a2c.a2c import learn

    with pytest.raises(RLBaseError, match="'Hopper-v3' was removed.*use 'Hopper-v5'"):
        learn("mlp", "Hopper-v3", total_timesteps=10)


def test_cli_with_a_baselines_mujoco_id_is_one_line_and_status_2():
    line = one_error_line(rlbase_cli("--alg=ppo", "--env=HalfCheetah-v2",
                                     "--num_timesteps=100"))
    assert "use 'HalfCheetah-v5'" in line


# ---- 2. deprecation warnings point at the user's line ----------------------------------------


def test_deprecated_names_warn_at_the_scripts_line_with_default_filters(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        from rlbase.a2c.a2c import learn
        from rlbase.ddpg.ddpg import learn as ddpg_learn
        learn("mlp", "CartPole-v1", total_timesteps=0, alpha=0.99)
        ddpg_learn("mlp", "Pendulum-v1", total_timesteps=0, nb_train_steps=5)
        """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env={**ENV, "PYTHONWARNINGS": ""}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (f"{script}:3: DeprecationWarning: a2c: 'alpha' is deprecated, use 'rms_alpha'"
            in proc.stderr), proc.stderr
    assert (f"{script}:4: DeprecationWarning: ddpg: 'nb_train_steps' is deprecated, use "
            "'gradient_steps'" in proc.stderr), proc.stderr


def test_a_deprecated_cli_flag_is_one_warning_line():
    proc = rlbase_cli("--alg=a2c", "--env=CartPole-v1", "--num_timesteps=10", "--num_env=1",
                      "--alpha=0.99")
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "deprecated" in line]
    assert warned == ["rlbase: warning: a2c: --alpha is deprecated, use --rms_alpha"], \
        proc.stderr
    # the start line shows the resolved config, under the field's name
    assert "'rms_alpha': 0.99" in proc.stdout and "'alpha'" not in proc.stdout


# ---- 3 and 7. loading a saved file at the CLI --------------------------------------------------


@pytest.fixture(scope="module")
def normalized_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("normalized") / "ppo.zip"
    proc = rlbase_cli("--alg=ppo", "--env=Pendulum-v1", "--num_timesteps=64", "--nsteps=32",
                      "--num_env=1", "--normalize", f"--save_path={path}")
    assert proc.returncode == 0, proc.stderr
    return path


def test_play_reads_the_algorithm_from_the_file(normalized_model, capsys):
    from rlbase.run import main

    capsys.readouterr()
    main(["--env=Pendulum-v1", "--num_timesteps=0", f"--load_path={normalized_model}",
          "--normalize", "--play", "--play_episodes=1"])
    out = capsys.readouterr().out
    assert out.startswith("Playing ppo on Pendulum-v1")
    assert "mean return over 1 episodes" in out


def test_an_alg_that_disagrees_with_the_file_is_one_line(normalized_model):
    line = one_error_line(rlbase_cli("--alg=a2c", "--env=Pendulum-v1", "--num_timesteps=0",
                                     f"--load_path={normalized_model}", "--play"))
    assert "--alg=a2c" in line and "'ppo' model" in line and "--alg=ppo" in line


def test_a_model_trained_behind_vecnormalize_asks_for_normalize(normalized_model):
    line = one_error_line(rlbase_cli("--env=Pendulum-v1", "--num_timesteps=0",
                                     f"--load_path={normalized_model}", "--play"))
    assert "trained behind VecNormalize" in line and "--normalize" in line


def test_loading_on_a_plain_env_in_python_says_to_wrap_it(normalized_model):
    from rlbase.common.envs.make import make_vec_env
    from rlbase.compat.sb3 import PPO
    from rlbase.ppo.ppo import learn

    plain = make_vec_env("Pendulum-v1", num_env=1)
    with pytest.raises(RLBaseError, match="trained behind VecNormalize: wrap the env in "
                                          "VecNormalize"):
        learn("mlp", plain, total_timesteps=0, load_path=str(normalized_model))
    with pytest.raises(RLBaseError, match="set_env.*trained behind VecNormalize"):
        PPO.load(str(normalized_model), env=plain)
    plain.close()


# ---- 4. Baselines' plot defaults ---------------------------------------------------------------


def _run_folder(path, env_id="CartPole-v1", algorithm="ppo"):
    path.mkdir(parents=True)
    rows = "\n".join(f"{10.0 + i},{20},{i}" for i in range(15))
    (path / "0.monitor.csv").write_text(
        "#" + json.dumps({"t_start": 0.0, "env_id": env_id}) + "\nr,l,t\n" + rows + "\n")
    (path / "metadata.json").write_text(json.dumps({"algorithm": algorithm, "env_id": env_id}))


def test_plot_results_splits_by_folder_name_as_baselines_does(tmp_path):
    from rlbase.common.logs import plot_util as pu

    for name in ("ppo", "a2c", "dqn", "acer"):  # four runs of one env
        _run_folder(tmp_path / "runs" / name, algorithm=name)
    results = pu.load_results(tmp_path / "runs")
    fig, axarr = pu.plot_results(results, tiling="vertical", use_pyplot=False)
    assert axarr.shape == (4, 1)
    assert sorted(ax.get_title() for ax in axarr[:, 0]) == [
        f"{alg} on CartPole-v1" for alg in ("a2c", "acer", "dqn", "ppo")]
    assert tuple(fig.get_size_inches()) == (6, 24)  # Baselines' 6 x 6 per panel
    assert pu.plot_results(results, tiling="symmetric", use_pyplot=False)[1].shape == (2, 2)
    assert pu.plot_results(results, split_fn=None, use_pyplot=False)[1].shape == (1, 1)
    assert pu.plot_results(results, split_fn=pu.env_split_fn,
                           use_pyplot=False)[1].shape == (1, 1)


def test_plot_results_seed_suffixes_share_a_panel_and_group(tmp_path):
    from rlbase.common.logs import plot_util as pu

    for name in ("cartpole-0", "cartpole-1", "pendulum-0"):
        _run_folder(tmp_path / name)
    results = pu.load_results(tmp_path)
    assert [pu.default_split_fn(r) for r in results] == ["cartpole", "cartpole", "pendulum"]
    _, axarr = pu.plot_results(results, use_pyplot=False)
    assert axarr.shape == (2, 1)
    cartpole = axarr[0, 0]
    assert len(cartpole.lines) == 4  # no averaging by default: each run drawn, over its episodes
    assert [t.get_text() for t in cartpole.get_legend().get_texts()] == [
        "cartpole (episodes)", "cartpole (smoothed)"]
    _, averaged = pu.plot_results(results, average_group=True, use_pyplot=False)
    line = averaged[0, 0].lines[-1]
    assert len(line.get_xdata()) == 512  # averaging resamples, Baselines' 512 points
    assert [t.get_text() for t in averaged[0, 0].get_legend().get_texts()][:2] == [
        "cartpole (episodes)", "cartpole (mean of 2 seeds)"]


# ---- 5. --save_plots for TD3 -------------------------------------------------------------------


def test_save_plots_names_td3_and_draws_raw_smoothed_and_evaluation(tmp_path, capsys):
    from rlbase.common.logs import plot_util as pu
    from rlbase.run import main

    log = tmp_path / "log"
    main(["--alg=td3", "--env=Pendulum-v1", "--num_timesteps=600", "--num_env=1",
          "--learning_starts=100", "--eval_freq=200", "--eval_episodes=1", f"--log_path={log}",
          "--save_plots"])
    assert "Training td3 (ddpg) on Pendulum-v1" in capsys.readouterr().out
    assert (log / "learning_curves.png").stat().st_size > 1000
    (result,) = pu.load_results(log)
    fig = pu.learning_curve_figure(result, str(result.metadata["algorithm"]))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["td3 (episodes)", "td3 (smoothed)", "td3 (evaluation)"]
    raw, smoothed, evaluation = ax.lines
    assert raw.get_alpha() < 0.5 and smoothed.get_alpha() is None
    np.testing.assert_allclose(raw.get_ydata(), result.monitor["r"])
    progress = pd.read_csv(log / "progress.csv")
    assert len(evaluation.get_ydata()) == progress["eval/mean_reward"].notna().sum() >= 1


# ---- 6. video names ----------------------------------------------------------------------------


@pytest.mark.skipif(importlib.util.find_spec("imageio_ffmpeg") is None,
                    reason="imageio-ffmpeg not installed")
def test_a_clip_is_named_by_the_steps_it_holds(tmp_path):
    from rlbase.common.envs.make import make_vec_env
    from rlbase.common.vec_env import VecVideoRecorder

    venv = make_vec_env("CartPole-v1", num_env=1, seed=0,
                        env_kwargs={"render_mode": "rgb_array"})
    recorder = VecVideoRecorder(venv, str(tmp_path), lambda step: step == 0, video_length=10000)
    recorder.reset()
    for _ in range(24):
        recorder.step(np.zeros(1, np.int64))
    recorder.close()
    assert [os.path.basename(p) for p in recorder.video_paths] == \
        ["rl-video-step-0-to-step-25.mp4"]  # the reset's frame and 24 steps'
    assert sorted(os.listdir(tmp_path)) == ["rl-video-step-0-to-step-25.mp4"]


# ---- 8. one banner under mpiexec ---------------------------------------------------------------


def test_mpiexec_prints_the_start_banner_once():
    if importlib.util.find_spec("mpi4py") is None or shutil.which("mpiexec") is None:
        pytest.skip("mpi4py / mpiexec not installed (pip install -e .[mpi])")
    proc = subprocess.run(["mpiexec", "-n", "2", sys.executable, "-m", "rlbase.run",
                           "--alg=a2c", "--env=CartPole-v1", "--num_timesteps=64",
                           "--num_env=1"], capture_output=True, text=True, timeout=120,
                          env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Training a2c on CartPole-v1") == 1, proc.stdout
