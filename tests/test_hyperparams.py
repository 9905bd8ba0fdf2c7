"""Hyperparameter files in rl-baselines3-zoo's format and `rlbase train` with the zoo's flags."""

import os

import pytest
import yaml
from process_util import cli_in_process

from rlbase import hyperparams as hp
from rlbase import registry
from rlbase.common.errors import RLBaseError

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
FILES = sorted(f[:-4] for f in os.listdir(hp.HYPERPARAMS_DIR) if f.endswith(".yml"))
ROWS = [(alg, key) for alg in FILES for key in hp.read_file(hp.file_for(alg))]


@pytest.fixture
def train(monkeypatch, capsys):
    """``rlbase train ARGS`` run in this process from the folder ``cwd`` (the zoo's paths are
    relative to it): (stdout, stderr). A run that fails raises."""
    from rlbase.cli import main

    def run(*args, cwd):
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        main(["train", *args])
        return capsys.readouterr()
    return run


def test_a_file_per_algorithm_and_td3():
    assert set(FILES) == set(registry.available_algorithms()) | {"td3"}


@pytest.mark.parametrize("alg,key", ROWS)
def test_every_row_loads_and_builds_its_config(alg, key):
    path = hp.file_for(alg)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert f"\n{key}:" in text  # a row of its own (comments cite each one's source)
    env_type = key if key in hp.ENV_TYPE_ROWS else None
    row, where = hp.read_file(path)[key], f"{path}, row {key!r}"
    if env_type is None and key != hp.SB3_DEFAULTS:  # as zoo mode reads it: over SB3's defaults
        row, where = hp.resolve_row(alg, key, None, None, None)
    settings = hp.row_settings(alg, row, where, env_type=env_type)
    config = registry.config_class(registry.resolve(alg)[0])
    mine, _ = config.split(settings.params)
    config.build(mine, settings.num_env or 1)


def test_zoo_row_conversions():
    row = {"n_envs": 8, "n_timesteps": 1e5, "policy": "MlpPolicy", "n_steps": 32,
           "normalize": "{'norm_obs': False, 'norm_reward': True}",
           "policy_kwargs": "dict(net_arch=dict(pi=[32, 32], vf=[32, 32]), "
                            "activation_fn=nn.ReLU, log_std_init=-2)"}
    s = hp.row_settings("ppo", row, "f, row 'x'")
    assert (s.network, s.num_env, s.n_timesteps) == ("mlp", 8, 100000)
    assert s.normalize == {"ob": False, "ret": True}
    assert s.params == {"n_steps": 32, "layer_sizes": [32, 32], "value_network": "copy",
                        "activation": "relu", "log_std_init": -2}
    ddpg = hp.row_settings("td3", {"noise_type": "ornstein-uhlenbeck", "noise_std": 0.5}, "w")
    assert ddpg.params == {"noise_type": "ou_0.5"}


def test_env_id_rows_go_over_sb3_defaults_by_parameter():
    base = {"batch_size": 64, "n_epochs": 10, "clip_value": False,
            "policy_kwargs": "dict(value_network='copy')"}
    row = {"nminibatches": 2, "noptepochs": 3, "policy_kwargs": "dict(net_arch=[8])"}
    # nminibatches and batch_size set one parameter: the row's name wins, the base's goes
    assert hp.under("ppo", row, base) == {
        "clip_value": False, "nminibatches": 2, "noptepochs": 3,
        "policy_kwargs": "dict(value_network='copy', net_arch=[8])"}
    zoo, _ = hp.resolve_row("ppo", "CartPole-v1", "classic_control", None, ["n_epochs:5"])
    assert (zoo["batch_size"], zoo["n_epochs"], zoo["clip_value"]) == (256, 5, False)
    typed, _ = hp.resolve_row("ppo", "Taxi-v3", "classic_control", None, None)
    assert "clip_value" in typed and "batch_size" not in typed  # an env-type row is complete


@pytest.mark.parametrize("row,fragment", [
    ({"n_stepz": 3}, "unknown key 'n_stepz'"),
    ({"use_sde": True}, "use_sde must be False"),
    ({"frame_stack": 2}, "frame_stack=2"),
    ({"env_wrapper": "minigrid.wrappers.FlatObsWrapper"}, "FlatObsWrapper"),
    ({"normalize": "{'norm_obz': True}"}, "norm_obz"),
    ({"n_steps": 0}, "nsteps must be >= 1"),
])
def test_bad_rows_are_one_line_errors_naming_file_and_row(row, fragment):
    with pytest.raises(RLBaseError) as info:
        hp.row_settings("ppo", row, "my.yml, row 'CartPole-v1'", env_type="classic_control")
    text = str(info.value)
    assert "\n" not in text and text.startswith("my.yml, row 'CartPole-v1'") and fragment in text


def test_overrides_and_run_folders(tmp_path):
    assert hp.apply_overrides({"n_steps": 32}, ["n_steps:64", "learning_rate:'lin_1e-3'"]) == \
        {"n_steps": 64, "learning_rate": "lin_1e-3"}
    with pytest.raises(RLBaseError, match="key:value"):
        hp.apply_overrides({}, ["n_steps=64"])
    assert hp.next_run_folder(str(tmp_path), "ppo", "CartPole-v1").endswith("CartPole-v1_1")
    (tmp_path / "ppo" / "CartPole-v1_3").mkdir(parents=True)
    assert hp.next_run_folder(str(tmp_path), "ppo", "CartPole-v1").endswith("CartPole-v1_4")


def test_train_zoo_flags_config_file_and_repeat(tmp_path, train):
    train("--algo", "ppo", "--env", "CartPole-v1", "-n", "2000", "-f", "logs",
          "--seed", "0", "--hyperparams", "n_steps:64", cwd=tmp_path)
    run = tmp_path / "logs" / "ppo" / "CartPole-v1_1"
    assert (run / "progress.csv").is_file() and (run / "0.monitor.csv").is_file()
    assert (run / "CartPole-v1.zip").is_file()  # the trained model, where the zoo puts it
    saved = yaml.safe_load((run / "config.yml").read_text())["CartPole-v1"]
    assert saved["n_steps"] == 64 and saved["batch_size"] == 256  # the override, the zoo row
    assert (saved["algo"], saved["env"], saved["seed"], saved["n_timesteps"]) == \
        ("ppo", "CartPole-v1", 0, 2000)
    assert (saved["clip_value"], saved["policy_kwargs"]) == (False, "dict(value_network='copy')")
    train("--conf-file", str(run / "config.yml"), "--algo", "ppo", "--env",
          "CartPole-v1", "-f", "logs", cwd=tmp_path)
    again = yaml.safe_load((tmp_path / "logs" / "ppo" / "CartPole-v1_2" / "config.yml")
                           .read_text())["CartPole-v1"]
    assert again == saved


def test_a_row_without_n_envs_trains_on_one_env_as_in_the_zoo(tmp_path, train):
    out, _ = train("--algo", "sac", "--env", "Pendulum-v1", "-n", "200", cwd=tmp_path)
    # (the row's SB3 learning_rate, converted by SAC's config: the start line prints the
    # resolved configuration under rlbase's names)
    assert "with 1 env(s)" in out and "'lr': 0.001" in out


def test_a_zoo_users_own_file_works_unchanged(tmp_path, train):
    (tmp_path / "ppo.yml").write_text(
        "CartPole-v1:\n  n_envs: 4\n  n_timesteps: !!float 1e5\n  policy: 'MlpPolicy'\n"
        "  n_steps: 32\n  batch_size: 64\n  gae_lambda: 0.8\n  gamma: 0.98\n  n_epochs: 2\n"
        "  ent_coef: 0.0\n  learning_rate: lin_0.001\n  clip_range: lin_0.2\n")
    out, _ = train("--algo", "ppo", "--env", "CartPole-v1", "--conf-file", "ppo.yml",
                   "-n", "1000", "--log_path", "log", cwd=tmp_path)
    # batch_size 64 of 4 envs x 32 steps: two minibatches, as resolved on the start line
    assert "with 4 env(s)" in out and "'nminibatches': 2" in out
    saved = yaml.safe_load((tmp_path / "log" / "config.yml").read_text())["CartPole-v1"]
    assert saved["batch_size"] == 64 and saved["learning_rate"] == "lin_0.001"


@pytest.mark.parametrize("args,fragment", [
    (["--hyperparams", "n_stepz:64"], "unknown key 'n_stepz'"),
    (["--n-eval-envs", "4"], "--n-eval-envs=4"),
    (["--env", "Taxi-v3"], "no row for Taxi-v3"),
    (["--hyperparams", "use_sde:True"], "use_sde must be False"),
])
def test_bad_zoo_input_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, args, fragment):
    env = [] if "--env" in args else ["--env", "CartPole-v1"]
    monkeypatch.chdir(tmp_path)
    code, _, err = cli_in_process(capsys, "train", "--algo", "ppo", *env, "-n", "100", *args,
                                  command="rlbase.cli")
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rlbase: error:"), err
    assert fragment in lines[0], lines[0]
