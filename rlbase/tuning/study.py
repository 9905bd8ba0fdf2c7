"""The study runner: Optuna trials that train with an algorithm's learn(), evaluated on a
separate env and reported to the pruner.

A trial that raises or scores NaN is recorded as failed (one line) and the study goes on; a
study kept in a storage resumes where a killed run stopped. ``n_jobs`` > 1 runs trials in that
many processes sharing the storage, not in Optuna's threads: two learn() calls in one process
are not safe (each seeds the process-wide python, numpy and TensorFlow generators, so seeded
trials would not repeat, and each swaps the process-wide logger, which the other would close).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from rlbase import registry
from rlbase.common.envs.make import check_env_id, env_type_of, make_vec_env
from rlbase.common.errors import RLBaseError
from rlbase.common.logs import logger
from rlbase.common.loops import evaluation
from rlbase.common.misc_util import import_tensorflow_quietly
from rlbase.common.schedules import NamedSchedule
from rlbase.common.vec_env import VecNormalize
from rlbase.hyperparams import env_type_defaults
from rlbase.registry import config_class, get_algorithm, resolve
from rlbase.tuning.spaces import Budget, sample, space

if TYPE_CHECKING:
    import optuna

SAMPLERS = ("tpe", "random")
PRUNERS = ("median", "none")


@dataclass(frozen=True)
class TuneSettings:
    """One ``rlbase tune`` run.

    n_trials: trials to add to the study (a resumed study keeps its earlier ones).
    storage: an Optuna database URL (``sqlite:///study.db``), or a file path for a journal
        file; None: in memory (nothing to resume).
    eval_freq: evaluate and report every this many env steps (0: only at the end).
    """

    algo: str
    env_id: str
    n_trials: int = 10
    n_jobs: int = 1
    sampler: str = "tpe"
    pruner: str = "median"
    storage: str | None = None
    study_name: str | None = None
    n_timesteps: int = 100_000
    eval_freq: int = 10_000
    eval_episodes: int = 5
    seed: int | None = None
    out: str | None = None

    def check(self) -> None:
        space(resolve(self.algo)[0])
        for name, low in (("n_trials", 1), ("n_jobs", 1), ("n_timesteps", 1), ("eval_freq", 0),
                          ("eval_episodes", 1)):
            value = getattr(self, name)
            if value < low:
                raise RLBaseError(f"--{name.replace('_', '-')} must be at least {low}, "
                                  f"got {value}")
        if self.sampler not in SAMPLERS:
            raise RLBaseError(f"unknown sampler {self.sampler!r}; choose {' or '.join(SAMPLERS)}")
        if self.pruner not in PRUNERS:
            raise RLBaseError(f"unknown pruner {self.pruner!r}; choose {' or '.join(PRUNERS)}")

    @property
    def name(self) -> str:
        return self.study_name or f"{self.algo}-{self.env_id}"


# -- the pieces of a study ---------------------------------------------------------------------
def make_sampler(name: str, seed: int | None) -> optuna.samplers.BaseSampler:
    import optuna  # optional: the tune extra

    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


def make_pruner(name: str, n_timesteps: int) -> optuna.pruners.BasePruner:
    import optuna  # optional: the tune extra

    if name == "none":
        return optuna.pruners.NopPruner()
    # No pruning before 5 trials have finished, nor in a trial's first third.
    return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=n_timesteps // 3)


def make_storage(spec: str | None) -> Any:
    """An Optuna storage: a database URL as given (with a heartbeat, so that trials of a
    killed run are marked failed on resume), a journal file for a path, None: in memory."""
    import optuna  # optional: the tune extra

    if spec is None:
        return None
    if "://" in spec:
        with warnings.catch_warnings():  # the heartbeat is "experimental" in Optuna 4 and 5
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            try:
                return optuna.storages.RDBStorage(spec, heartbeat_interval=60,
                                                  grace_period=180)
            except Exception as exc:  # SQLAlchemy's many kinds: a bad URL, no driver, ...
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                raise RLBaseError(f"--storage {spec} cannot be opened: "
                                  f"{type(exc).__name__}: {first}") from None
    # Optional: the tune extra.
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    return JournalStorage(JournalFileBackend(os.path.abspath(os.path.expanduser(spec))))


def open_study(settings: TuneSettings, storage: Any, seed: int | None) -> optuna.Study:
    """The study, created or (same name in the same storage) resumed."""
    import optuna  # optional: the tune extra

    return optuna.create_study(
        study_name=settings.name, storage=storage, direction="maximize",
        sampler=make_sampler(settings.sampler, seed),
        pruner=make_pruner(settings.pruner, settings.n_timesteps), load_if_exists=True)


def report(trial: optuna.Trial, value: float, step: int) -> bool:
    """Report an evaluation to the pruner; True when the trial should stop. A NaN return is
    an error (the trial fails)."""
    if not math.isfinite(value):
        raise RLBaseError(f"the mean evaluation return is {value} at {step} timesteps")
    trial.report(value, step)
    return bool(trial.should_prune())


class TrialCallback:
    """learn()'s callback: every ``eval_freq`` env steps, evaluate deterministically on the
    separate env and report; returning False stops training cleanly when the pruner says so."""

    def __init__(self, trial: optuna.Trial, eval_env: Any, settings: TuneSettings):
        self.trial, self.eval_env, self.settings = trial, eval_env, settings
        self.last_step = 0
        self.last_value = float("nan")
        self.pruned = False

    def evaluate(self, model: Any, step: int) -> bool:
        # Through the module, so that a test can replace the evaluation.
        self.last_value = evaluation.evaluate_policy(model, self.eval_env,
                                                     self.settings.eval_episodes)[0]
        self.last_step = step
        return report(self.trial, self.last_value, step)

    def __call__(self, model: Any, info: dict[str, Any]) -> bool:
        from rlbase.common.loops.training_loop import crossings  # lazy: imports TensorFlow

        step = int(info["num_timesteps"])
        if crossings(step, step - self.last_step, self.settings.eval_freq) and \
                self.evaluate(model, step):
            self.pruned = True
            return False
        return True


# -- one trial ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Base:
    """What every trial shares: the env-type defaults the sampled fields override."""

    algorithm: str
    env_type: str
    num_envs: int
    network: str
    normalize: bool
    preset: dict[str, Any]          # an alias's learn() arguments (td3's)
    fields: dict[str, Any]          # config fields set by the defaults
    network_kwargs: dict[str, Any]


def base_settings(settings: TuneSettings) -> Base:
    check_env_id(settings.env_id)
    algorithm, preset = resolve(settings.algo)
    env_type = env_type_of(settings.env_id, None)
    defaults = env_type_defaults(get_algorithm(algorithm).name, env_type)
    num_envs = int(defaults.pop("num_env", 1) or 1)
    network = str(defaults.pop("network", "mlp"))
    normalize = bool(defaults.pop("normalize", False))
    fields, network_kwargs = config_class(algorithm).split(defaults)
    return Base(algorithm, env_type, num_envs, network, normalize, dict(preset), fields,
                network_kwargs)


def make_envs(settings: TuneSettings, base: Base, seed: int | None) -> tuple[Any, Any]:
    env = make_vec_env(settings.env_id, base.env_type, base.num_envs, seed, monitor_dir=None)
    if base.normalize:
        env = VecNormalize(env)
    eval_env = make_vec_env(settings.env_id, base.env_type, 1,
                            None if seed is None else seed + 1000, monitor_dir=None)
    return env, eval_env


def run_trial(trial: optuna.Trial, settings: TuneSettings, base: Base) -> float:
    """Train with the trial's sample; the last evaluation's mean return."""
    import optuna  # optional: the tune extra

    params = sample(trial, base.algorithm, Budget(base.num_envs, settings.n_timesteps))
    trial.set_user_attr("config", {k: yaml_value(v) for k, v in params.items()})
    seed = None if settings.seed is None else settings.seed + trial.number
    env, eval_env = make_envs(settings, base, seed)
    callback = TrialCallback(trial, eval_env, settings)
    try:
        with logger.scoped_configure(format_strs=[]):  # one line per trial, not its tables
            model = get_algorithm(base.algorithm).learn(
                network=base.network, env=env, total_timesteps=settings.n_timesteps, seed=seed,
                callback=callback, **{**base.fields, **base.preset, **params},
                **base.network_kwargs)
        if callback.pruned:
            raise optuna.TrialPruned(f"at {callback.last_step} timesteps, mean return "
                                     f"{callback.last_value:g}")
        if callback.last_step != model.num_timesteps:  # the final score
            callback.evaluate(model, model.num_timesteps)
    finally:
        env.close()
        eval_env.close()
    return callback.last_value


def objective(trial: optuna.Trial, settings: TuneSettings, base: Base) -> float:
    """run_trial, with any error recorded on the trial: it then fails (NaN), the study goes on."""
    import optuna  # optional: the tune extra

    try:
        value = run_trial(trial, settings, base)
        if not math.isfinite(value):
            raise RLBaseError(f"the mean evaluation return is {value}")
        return value
    except optuna.TrialPruned:
        raise
    except Exception as exc:  # any crash is this trial's failure, not the study's
        trial.set_user_attr("error", f"{type(exc).__name__}: {exc}".splitlines()[0])
        return float("nan")


class TrialLog:
    """One compact line per finished trial: how many of ``total`` are done, the trial's
    outcome and the best mean return so far (``[3/20] trial 2 complete: mean return 212 |
    best 250 (trial 1) | lr=..., ...``)."""

    def __init__(self, total: int):
        self.total, self.done = int(total), 0

    def __call__(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        self.done += 1
        config = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in trial.user_attrs.get("config", {}).items())
        state = trial.state.name.lower()
        if trial.user_attrs.get("error"):
            outcome = f"failed: {trial.user_attrs['error']}"
        elif trial.value is not None:
            outcome = f"{state}: mean return {trial.value:g}"
        else:
            steps = trial.last_step if trial.last_step is not None else 0
            score = trial.intermediate_values.get(steps, float("nan"))
            outcome = f"{state} at {steps} timesteps: mean return {score:g}"
        print(f"[{self.done}/{self.total}] trial {trial.number} {outcome} | "
              f"{best_so_far(study)} | {config}", flush=True)


def best_so_far(study: optuna.Study) -> str:
    """``best 250 (trial 1)``, or ``best: none yet`` before a trial completes."""
    finite = [(float(t.value), t.number) for t in study.get_trials(deepcopy=False)
              if t.value is not None and math.isfinite(t.value)]
    if not finite:
        return "best: none yet"
    value, number = max(finite, key=lambda pair: pair[0])
    return f"best {value:g} (trial {number})"


def run_trials(settings: TuneSettings, storage: Any, n_trials: int, worker: int = 0) -> Any:
    """``n_trials`` trials of the study in this process (worker: offsets the sampler's seed,
    so that workers do not sample the same points)."""
    import optuna  # optional: the tune extra

    optuna.logging.set_verbosity(optuna.logging.ERROR)  # TrialLog says it in one line
    import_tensorflow_quietly()
    base = base_settings(settings)
    seed = None if settings.seed is None else settings.seed + worker
    study = open_study(settings, storage, seed)
    study.optimize(lambda trial: objective(trial, settings, base), n_trials=n_trials,
                   callbacks=[TrialLog(n_trials)], gc_after_trial=True)
    return study


def _worker(settings: TuneSettings, storage_spec: str, n_trials: int, worker: int) -> None:
    run_trials(settings, make_storage(storage_spec), n_trials, worker)


def optimize(settings: TuneSettings) -> optuna.Study:
    """Run (or resume) the study; with ``n_jobs`` > 1 in that many processes sharing the
    storage (a temporary journal file when none is given)."""
    import optuna  # optional: the tune extra

    settings.check()
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # TrialLog says it in one line
    if settings.n_jobs == 1:
        return run_trials(settings, make_storage(settings.storage), settings.n_trials)

    tmp = tempfile.mkdtemp(prefix="rlbase-tune-") if settings.storage is None else None
    spec = settings.storage or os.path.join(str(tmp), "study.journal")
    try:
        check_env_id(settings.env_id)  # a bad env id: one error here, not one per process
        open_study(settings, make_storage(spec), settings.seed)
        jobs = min(settings.n_jobs, settings.n_trials)
        shares = [settings.n_trials // jobs + (i < settings.n_trials % jobs) for i in range(jobs)]
        context = multiprocessing.get_context("spawn")  # TensorFlow does not survive a fork
        processes = [context.Process(target=_worker, args=(settings, spec, n, i))
                     for i, n in enumerate(shares)]
        for p in processes:
            p.start()
        for p in processes:
            p.join()
        lost = [i for i, p in enumerate(processes) if p.exitcode]
        if lost:
            print(f"rlbase tune: worker process(es) {lost} exited with an error", flush=True)
        if tmp is None:
            return optuna.load_study(study_name=settings.name, storage=make_storage(spec))
        memory = optuna.storages.InMemoryStorage()  # the temporary file goes
        optuna.copy_study(from_study_name=settings.name, from_storage=make_storage(spec),
                          to_storage=memory)
        return optuna.load_study(study_name=settings.name, storage=memory)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


# -- the best trial as a hyperparameter file ---------------------------------------------------
ZOO_POLICIES = {"mlp": "MlpPolicy", "cnn": "CnnPolicy"}


def yaml_value(value: Any) -> Any:
    """A value as the zoo's files write it (a linear schedule as ``lin_<start>``)."""
    if isinstance(value, NamedSchedule):
        return f"lin_{value.start!r}" if value.name == "linear" else repr(value)
    if isinstance(value, tuple):
        return [yaml_value(v) for v in value]
    if callable(value):
        raise RLBaseError(f"{value!r} cannot be written to a hyperparameter file")
    return value


# Config fields a hyperparameter row leaves to the command line.
RUN_FIELDS = ("seed", "eval_freq", "eval_episodes", "checkpoint_interval")


def best_row(study: optuna.Study, settings: TuneSettings) -> dict[str, Any]:
    """The best trial as the zoo's row: ``{env id: {n_timesteps, policy, n_envs, ...}}``."""
    import optuna  # optional: the tune extra

    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not done:
        counts = {s.name.lower(): sum(t.state == s for t in study.trials)
                  for s in optuna.trial.TrialState}
        raise RLBaseError(f"no trial of study {settings.name!r} completed ("
                          f"{', '.join(f'{n} {s}' for s, n in counts.items() if n)})")
    best = study.best_trial
    base = base_settings(settings)
    row: dict[str, Any] = {"n_timesteps": settings.n_timesteps,
                           "policy": ZOO_POLICIES.get(base.network, base.network),
                           "n_envs": base.num_envs}
    if base.normalize:
        row["normalize"] = True
    if base.network_kwargs:
        row["policy_kwargs"] = "dict(" + ", ".join(
            f"{k}={yaml_value(v)!r}" for k, v in base.network_kwargs.items()) + ")"
    # Every field the trial trained with (the env type's, the preset's and the sampled ones,
    # the rest at learn()'s defaults), so the file repeats the trial whatever lies under it.

    config = registry.config_class(registry.resolve(settings.algo)[0])
    given = {**base.fields, **base.preset, **best.user_attrs["config"]}
    trained = config.build(given, base.num_envs).to_dict()
    for name in RUN_FIELDS:
        trained.pop(name)
    row.update({k: yaml_value(v) for k, v in trained.items()})
    return {settings.env_id: row}


def write_best(study: optuna.Study, settings: TuneSettings, path: str) -> str:
    row = best_row(study, settings)  # first: it says so in one line when no trial completed
    best = study.best_trial
    header = (f"# rlbase tune: study {settings.name!r}, best of {len(study.trials)} trials: "
              f"trial {best.number}, mean return {best.value:g} over {settings.eval_episodes} "
              f"episodes after {settings.n_timesteps} timesteps\n")
    text = yaml.safe_dump(row, sort_keys=False)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(header + text)
    return path
