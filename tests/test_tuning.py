"""rlbase tune: the search spaces name config fields, a study on CartPole runs, resumes and
writes a usable hyperparameter file, a crashing trial fails alone, the pruner is wired."""

import math
import os
import subprocess
import sys

import pytest

optuna = pytest.importorskip("optuna")
yaml = pytest.importorskip("yaml")

from rlbase import registry  # noqa: E402
from rlbase.cli import main as cli_main  # noqa: E402
from rlbase.common.errors import RLBaseError  # noqa: E402
from rlbase.tuning import spaces, study  # noqa: E402
from rlbase.tuning.spaces import Budget, Choice  # noqa: E402
from rlbase.tuning.study import TrialCallback, TuneSettings, report  # noqa: E402

COMPLETE, PRUNED, FAIL = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED,
                          optuna.trial.TrialState.FAIL)


def test_every_algorithm_has_a_space():
    assert sorted(spaces.SPACES) == registry.available_algorithms()


@pytest.mark.parametrize("alg", sorted(spaces.SPACES))
def test_space_names_are_config_fields(alg):
    names = set(registry.config_class(alg).field_names())
    assert set(spaces.space(alg)) <= names - {"seed"}


def test_ppo_sample_respects_the_budget_and_the_minibatches():
    # 8 envs and 256 env steps: one update of nsteps * 8 must fit, so nsteps is 2**5 = 32 at
    # most, which is also the space's lowest; minibatches never outnumber nsteps.
    trials = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    for _ in range(20):
        trial = trials.ask()
        params = spaces.sample(trial, "ppo", Budget(num_envs=8, n_timesteps=256))
        assert params["nsteps"] == 32
        assert params["nminibatches"] == 2 ** trial.params["log2_nminibatches"] <= 32
        assert params["gamma"] == 1.0 - trial.params["one_minus_gamma"]
        assert 1 - 0.03 <= params["gamma"] <= 1 - 1e-4
        registry.config_class("ppo").build(params, num_envs=8)  # a valid config


@pytest.mark.parametrize("alg", sorted(spaces.SPACES))
def test_every_space_samples_within_its_ranges(alg):
    trials = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(10):
        params = spaces.sample(trials.ask(), alg, Budget(num_envs=4, n_timesteps=10_000))
        assert list(params) == list(spaces.space(alg))
        if "gradient_steps" in params:  # one gradient step per env step at most
            assert 1 <= params["gradient_steps"] <= params["train_freq"]
        if alg in ("ddpg", "sac"):
            assert params["gradient_steps"] == params["train_freq"]
        if "nsteps" in params:  # one update fits in the budget
            assert params["nsteps"] * 4 <= 10_000
        if "gamma" in params:
            assert 0.9 < params["gamma"] < 1


def test_ppo_cartpole_study_runs_resumes_and_writes_the_best(tmp_path):
    db = f"sqlite:///{tmp_path / 'study.db'}"
    settings = TuneSettings(algo="ppo", env_id="CartPole-v1", n_trials=1, storage=db,
                            study_name="cartpole", n_timesteps=2000, eval_freq=1000,
                            eval_episodes=1, seed=0)
    first = study.optimize(settings)
    assert len(first.trials) == 1
    out = tmp_path / "best.yml"
    # The same study, resumed from its storage through the command line (the zoo's spelling,
    # train --optimize): 2 more trials.
    cli_main(["train", "--optimize", "--algo", "ppo", "--env", "CartPole-v1", "--n-trials", "2",
              "--storage", db, "--study-name", "cartpole", "--n-timesteps", "2000",
              "--eval-freq", "1000", "--eval-episodes", "1", "--seed", "0", "--out", str(out)])
    resumed = optuna.load_study(study_name="cartpole", storage=db)
    assert [t.number for t in resumed.trials] == [0, 1, 2]
    assert all(t.state in (COMPLETE, PRUNED) for t in resumed.trials)
    # Evaluations every 1000 env steps reach the pruner (2000 steps: 1000 and 2000, updates
    # of 8 envs x nsteps may overshoot by less than one update).
    assert all(len(t.intermediate_values) >= 1 for t in resumed.trials)

    row = yaml.safe_load(out.read_text())["CartPole-v1"]
    best = resumed.best_trial
    assert row["n_timesteps"] == 2000 and row["policy"] == "MlpPolicy" and row["n_envs"] == 8
    sampled = best.user_attrs["config"]
    assert set(sampled) == set(spaces.space("ppo"))
    assert {k: row[k] for k in sampled} == sampled
    assert row["nsteps"] == 2 ** best.params["log2_nsteps"]
    assert row["lam"] == 1.0 - best.params["one_minus_lam"]
    assert row["lr"] == best.params["lr"]
    config = registry.config_class("ppo")
    fields = {k: v for k, v in row.items() if k in config.field_names()}
    assert config.build(fields, num_envs=row["n_envs"]).nsteps == row["nsteps"]
    # rlbase train --conf-file best.yml trains with the best trial's config, field for field.
    from rlbase.hyperparams import flat, resolve_row, row_settings

    row, where = resolve_row("ppo", "CartPole-v1", "classic_control", str(out), None)
    params = flat("ppo", row_settings("ppo", row, where, "classic_control", "CartPole-v1"))
    mine, _ = config.split(params)
    trained = config.build({**study.base_settings(settings).fields, **sampled}, 8)
    assert config.build(mine, 8).replace(seed=None) == trained.replace(seed=None)


@pytest.mark.slow
def test_two_processes_share_the_study(tmp_path):
    # --n-jobs 2: trials in two processes, in a temporary journal when no storage is given;
    # the study comes back whole and the temporary file is gone.
    settings = TuneSettings(algo="ppo", env_id="CartPole-v1", n_trials=3, n_jobs=2,
                            n_timesteps=512, eval_freq=0, eval_episodes=1, seed=0)
    before = set(os.listdir(study.tempfile.gettempdir()))
    result = study.optimize(settings)
    assert sorted(t.number for t in result.trials) == [0, 1, 2]
    assert all(t.state == COMPLETE for t in result.trials)
    assert not [d for d in set(os.listdir(study.tempfile.gettempdir())) - before
                if d.startswith("rlbase-tune-")]
    study.write_best(result, settings, str(tmp_path / "best.yml"))
    assert yaml.safe_load((tmp_path / "best.yml").read_text())["CartPole-v1"]["n_timesteps"] \
        == 512


class Scripted:
    """A search dimension that gives trial i the i-th value."""

    def __init__(self, *values):
        self.values = values

    def sample(self, trial, name, params, budget):
        return self.values[trial.number]


def test_a_crashing_trial_fails_alone(monkeypatch, capsys):
    # Trial 0 gets a learning rate the config refuses, trial 1 crashes in training, trial 2
    # scores NaN; trial 3 trains (256 env steps: one update of 8 envs x 32 steps).
    monkeypatch.setitem(spaces.SPACES, "ppo", {"lr": Scripted(-1.0, 1e-3, 1e-3, 1e-3)})
    real = study.run_trial

    def run_trial(trial, settings, base):
        if trial.number == 1:
            raise ValueError("boom in training")
        if trial.number == 2:
            return float("nan")
        return real(trial, settings, base)

    monkeypatch.setattr(study, "run_trial", run_trial)
    settings = TuneSettings(algo="ppo", env_id="CartPole-v1", n_trials=4, n_timesteps=256,
                            eval_freq=0, eval_episodes=1, seed=1, pruner="none")
    result = study.optimize(settings)
    assert [t.state for t in result.trials] == [FAIL, FAIL, FAIL, COMPLETE]
    errors = [t.user_attrs.get("error") for t in result.trials]
    assert errors[0] == "RLBaseError: ppo: lr must be > 0, got -1.0"
    assert errors[1] == "ValueError: boom in training"
    assert errors[2] == "RLBaseError: the mean evaluation return is nan"
    assert errors[3] is None and result.best_trial.number == 3
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("[")] == \
        ["[1/4] trial 0 failed", "[2/4] trial 1 failed", "[3/4] trial 2 failed",
         "[4/4] trial 3 complete"]


def test_no_completed_trial_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(spaces.SPACES, "ppo", {"lr": Choice((-1.0,))})
    settings = TuneSettings(algo="ppo", env_id="CartPole-v1", n_trials=2, n_timesteps=256,
                            seed=1)
    result = study.optimize(settings)
    with pytest.raises(RLBaseError, match=r"no trial of study 'ppo-CartPole-v1' completed "
                                          r"\(2 fail\)"):
        study.write_best(result, settings, str(tmp_path / "best.yml"))
    assert not (tmp_path / "best.yml").exists()


def median_study():
    trials = optuna.create_study(direction="maximize", pruner=optuna.pruners.MedianPruner(
        n_startup_trials=0, n_warmup_steps=0))
    # Two completed trials reported 1 and 3 at step 100 (median 2), 5 and 7 at 200 (median 6).
    for value in (1.0, 3.0):
        trial = trials.ask()
        assert report(trial, value, 100) is False
        assert report(trial, value + 4, 200) is False
        trials.tell(trial, value + 4)
    return trials


def test_a_trial_below_the_median_is_pruned():
    trials = median_study()
    assert report(trials.ask(), 1.5, 100) is True
    assert report(trials.ask(), 2.5, 100) is False
    with pytest.raises(RLBaseError, match="mean evaluation return is nan at 100 timesteps"):
        report(trials.ask(), math.nan, 100)


def test_the_callback_evaluates_every_eval_freq_and_stops_a_pruned_run(monkeypatch):
    scores = iter([2.5, 4.0])
    monkeypatch.setattr("rlbase.common.loops.evaluation.evaluate_policy",
                        lambda model, env, n: (next(scores), 0.0))
    settings = TuneSettings(algo="ppo", env_id="CartPole-v1", eval_freq=100, eval_episodes=1)
    trials = median_study()
    trial = trials.ask()
    callback = TrialCallback(trial, None, settings)
    assert callback(None, {"num_timesteps": 50}) is True      # no evaluation yet
    assert callback(None, {"num_timesteps": 100}) is True     # 2.5 at 100: above the median
    assert callback(None, {"num_timesteps": 150}) is True     # no evaluation before 200
    assert trials.trials[-1].intermediate_values == {100: 2.5}
    # The pruner compares the trial's best so far (4 at 200) with the median at that step (6).
    assert callback(None, {"num_timesteps": 200}) is False    # pruned: training stops
    assert callback.pruned and callback.last_step == 200
    assert trials.trials[-1].intermediate_values == {100: 2.5, 200: 4.0}


@pytest.mark.parametrize("args,fragment", [
    (["--algo", "nope"], "unknown algorithm 'nope'"),
    (["--algo", "ppo", "--n-trials", "0"], "--n-trials must be at least 1, got 0"),
    (["--algo", "ppo", "--sampler", "grid"], "unknown sampler 'grid'; choose tpe or random"),
    (["--algo", "ppo", "--n-trials", "x"], "argument --n-trials: invalid int value: 'x'"),
    (["--algo", "ppo", "--storage", "nope://x"], "--storage nope://x cannot be opened"),
])
def test_bad_input_is_one_line_error(args, fragment):
    with pytest.raises(RLBaseError, match=fragment):
        cli_main(["tune", "--env", "CartPole-v1", *args])


def test_bad_input_exits_2_with_one_line():
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-m", "rlbase.cli", "tune", "--algo", "ppo", "--env",
                           "CartPole-v1", "--pruner", "hyperband"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "rlbase: error: unknown pruner 'hyperband'; choose median or none"]
