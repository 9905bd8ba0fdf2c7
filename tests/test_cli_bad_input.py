"""Bad input on the command line, or in a hand-edited model file given to --load_path: one line
``rlbase: error: ...`` naming the bad value and what is allowed, exit status 2, no traceback
(and nothing injected runs)."""

from __future__ import annotations

import json
import os
import zipfile

import pytest
from process_util import cli_in_process

from rlbase.common.logs import logger

A2C = ["--alg=a2c", "--env=CartPole-v1", "--num_env=1", "--seed=0", "--no_progress"]


@pytest.fixture(autouse=True)
def _fresh_logger():
    yield
    logger.reset()


def one_line_error(capsys, *args: str) -> str:
    code, _, err = cli_in_process(capsys, *args)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("rlbase: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("kwargs, words", [
    ("{'no_such_kw': 1}", ["CartPole-v1", "no_such_kw"]),
    ("{'render_mode': 5}", ["CartPole-v1", "render_mode", "5", "rgb_array"]),
])
def test_env_kwargs_the_env_does_not_take(capsys, kwargs, words):
    line = one_line_error(capsys, *A2C, "--num_timesteps=20", f"--env_kwargs={kwargs}")
    for word in words:
        assert word in line, line


@pytest.mark.parametrize("kwargs, words", [
    # taken by Pendulum's constructor, then failing inside its first step() without the check
    ("{'g': 'ten'}", ["Pendulum-v1", "g must be a number", "10.0", "'ten'"]),
    ("{'g': True}", ["g must be a number"]),
])
def test_env_kwargs_of_the_wrong_type_fail_before_training(capsys, kwargs, words):
    line = one_line_error(capsys, "--alg=ppo", "--env=Pendulum-v1", "--num_timesteps=20",
                          f"--env_kwargs={kwargs}")
    for word in words:
        assert word in line, line


@pytest.mark.parametrize("flag", ["--env_kwargs={'a': " + "-" * 5000 + "1}",
                                  "--hyperparams=n_steps:" + "-" * 5000 + "1"])
def test_deeply_nested_literals(capsys, flag):
    line = one_line_error(capsys, *A2C, "--num_timesteps=20", flag)
    assert "nested" in line or "too deep" in line, line


def test_code_in_a_hyperparams_value_never_runs(capsys, tmp_path):
    marker = tmp_path / "ran"
    line = one_line_error(capsys, *A2C, "--num_timesteps=20",
                          f"--hyperparams=n_steps:__import__('os').mkdir('{marker}')")
    assert "n_steps" in line and "literal" in line, line
    assert not marker.exists()


def test_a_network_argument_of_the_wrong_type(capsys):
    line = one_line_error(capsys, *A2C, "--num_timesteps=20", "--num_layers=abc")
    assert "--num_layers" in line and "abc" in line and "int" in line, line


@pytest.mark.parametrize("flag, words", [
    ("--seed=abc", ["--seed", "abc", "int"]),
    ("--vec_env=foo", ["--vec_env", "foo", "dummy"]),
    ("--resume=maybe", ["--resume", "maybe", "must"]),
])
def test_argparse_errors_are_one_rlbase_line(capsys, flag, words):
    line = one_line_error(capsys, *A2C, "--num_timesteps=20", flag)
    for word in words:
        assert word in line, line


def test_argparse_errors_of_the_rlbase_command_are_one_line(capsys):
    code, out, err = cli_in_process(capsys, "train", "--seed=abc", command="rlbase.cli")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlbase: error: ") and "abc" in lines[0], err


@pytest.mark.parametrize("flag, words", [
    ("--num_timesteps=", ["--num_timesteps", "''"]),
    ("--num_timesteps=1e30", ["--num_timesteps", "1e30", "at most"]),
    ("--save_path=", ["--save_path", "empty"]),
    ("--play_episodes=-1", ["--play_episodes", "-1", ">= 1"]),
    ("--reward_scale=nan", ["--reward_scale", "nan", "finite"]),
    ("--reward_scale=0", ["--reward_scale", "0", "> 0"]),
])
def test_values_accepted_without_a_word_before(capsys, flag, words):
    args = [a for a in A2C] + ([] if flag.startswith("--num_timesteps") else
                               ["--num_timesteps=20"]) + [flag, "--play"]
    line = one_line_error(capsys, *args)
    for word in words:
        assert word in line, line


# ---- hand-edited model metadata ----------------------------------------------------------


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    from rlbase.run import main

    path = str(tmp_path_factory.mktemp("model") / "m.zip")
    main([*A2C, "--num_timesteps=10", f"--save_path={path}"])
    logger.reset()
    return path


def edited(path: str, out: str, change) -> str:
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "metadata.json":
                meta = json.loads(data)
                change(meta)
                data = json.dumps(meta).encode()
            dst.writestr(item, data)
    return out


@pytest.mark.parametrize("change, words", [
    (lambda m: m.update(hyperparameters=[1, 2]), ["hyperparameters", "[1, 2]"]),
    (lambda m: m.update(num_envs="eight"), ["num_envs", "eight"]),
    (lambda m: m["hyperparameters"].update(nsteps=1e12), ["nsteps", "memory"]),
])
def test_hand_edited_metadata(capsys, tmp_path, saved_model, change, words):
    path = edited(saved_model, str(tmp_path / "edited.zip"), change)
    line = one_line_error(capsys, *A2C, "--num_timesteps=0", f"--load_path={path}")
    assert path in line or os.path.basename(path) in line, line
    for word in words:
        assert word in line, line
