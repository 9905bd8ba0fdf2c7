"""Every algorithm is written on the one contract (rlbase/docs/architecture.md)."""

import inspect
import re

import pytest

from rlbase import registry
from rlbase.common.base_model import BaseModel
from rlbase.common.config import describe

ALGORITHMS = registry.available_algorithms()
HEAD = ["network", "env", "total_timesteps", "seed"]


# learn()'s arguments that are not config fields: what it trains on and how it runs.
RUNTIME = ["eval_env", "callback", "load_path", "checkpoint_path", "resume"]


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_learn_signature_is_the_contract(alg):
    entry = registry.get_algorithm(alg)
    signature = inspect.signature(entry.learn)
    params = list(signature.parameters)
    assert params[:len(HEAD)] == HEAD
    # Keyword-only after the first four: every config field (its default the field's), then
    # the runtime arguments, then the network's keyword arguments.
    kinds = [signature.parameters[p].kind for p in params[len(HEAD):-1]]
    assert set(kinds) == {inspect.Parameter.KEYWORD_ONLY}
    assert params[-1] == "network_kwargs"
    fields = [f for f in entry.config.field_names() if f != "seed"]
    keyword = params[len(HEAD):-1]
    assert [p for p in keyword if p not in RUNTIME and p != "model_fn"] == \
        [f for f in keyword if f in fields]
    assert sorted(f for f in keyword if f in fields) == sorted(fields)
    defaults = entry.config.defaults()
    for name in fields:
        assert signature.parameters[name].default == defaults[name], name
    assert [p for p in keyword if p in RUNTIME] == RUNTIME


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_every_learn_parameter_is_documented(alg):
    entry = registry.get_algorithm(alg)
    doc = inspect.getdoc(entry.learn) or ""
    fields = entry.config.field_names()
    for name in inspect.signature(entry.learn).parameters:
        if name in fields and name != "seed":
            continue  # documented by its field (below)
        label = f"**{name}" if name == "network_kwargs" else name
        assert re.search(rf"^{re.escape(label)}\b.*:", doc, re.M), f"{alg}: {name} undocumented"
    for row in describe(entry.config):
            assert row["doc"], f"{alg}: {row['name']} has no doc"


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_model_module_declares_model_and_builder(alg):
    entry = registry.get_algorithm(alg)
    assert issubclass(entry.model_class, BaseModel)
    assert entry.model_class.__name__ == "Model"
    assert entry.model_class.algorithm == alg
    assert callable(entry.build_model) and callable(entry.train)


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_no_algorithm_imports_another(alg):
    import pathlib

    root = pathlib.Path(registry.__file__).parent
    others = set(ALGORITHMS) - {alg}
    for path in (root / alg).glob("*.py"):
        text = path.read_text()
        for other in others:
            assert f"rlbase.{other}" not in text, f"{path} imports rlbase.{other}"


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_the_env_first_order_is_a_clear_error(alg):
    # Baselines' deepq.learn(env, network, ...) order, ported as is.
    import gymnasium as gym

    from rlbase.common.errors import RLBaseError

    env = gym.make("CartPole-v1")
    with pytest.raises(RLBaseError, match=r"takes the network first: learn\(network, env"):
        registry.get_algorithm(alg).learn(env, "mlp", total_timesteps=10)


# One name, one unit: these count env steps summed over envs wherever they appear.
ENV_STEP_FIELDS = ("train_freq", "learning_starts", "eval_freq", "checkpoint_interval",
                   "target_update_interval", "param_noise_adaption_interval",
                   "best_model_interval")
# Spellings retired for one shared name (still accepted with a DeprecationWarning).
RETIRED = {"nenvs", "nenv", "num_env", "alpha", "epsilon", "rprop_alpha", "rprop_epsilon",
           "target_network_update_freq", "observation_normalization", "grad_norm_clipping",
           "clip_norm", "nb_rollout_steps", "nb_train_steps", "print_freq", "save_interval",
           "checkpoint_freq", "epsilon_min", "epsilon_decay"}
# Fields whose unit is each algorithm's own iteration (updates, episodes, generations).
OWN_UNIT = {"log_interval"}


def _configs():
    return {alg: registry.config_class(alg) for alg in ALGORITHMS}


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_names_and_units_are_the_shared_ones(alg):
    config = registry.config_class(alg)
    rows = {r["name"]: r for r in describe(config)}
    assert not set(rows) & RETIRED, f"{alg} uses retired names {set(rows) & RETIRED}"
    for name in ENV_STEP_FIELDS:
        if name in rows:
            assert rows[name]["unit"] == "env steps", (alg, name, rows[name]["unit"])
    for name in rows:
        assert not (set(rows[name]["deprecated"].split(", ")) - {""}) & set(rows), name


def test_a_name_means_the_same_in_every_algorithm():
    units: dict[str, dict[str, str]] = {}
    for alg, config in _configs().items():
        for row in describe(config):
            units.setdefault(row["name"], {})[alg] = row["unit"]
    for name, by_alg in units.items():
        if name not in OWN_UNIT:
            assert len(set(by_alg.values())) == 1, f"{name} has units {by_alg}"


def test_the_number_of_envs_has_one_name_in_the_code():
    import pathlib

    root = pathlib.Path(registry.__file__).parent
    for path in root.rglob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if re.search(r"\bnenvs?\b", code) and "Baselines' name" not in line:
                assert "def nenv" in code, f"{path}:{number}: {line.strip()}"
