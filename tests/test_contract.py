"""Every algorithm is written on the one contract (rlbase/docs/architecture.md)."""

import inspect
import re

import pytest

from rlbase import registry
from rlbase.common.base_model import BaseModel

ALGORITHMS = registry.available_algorithms()
HEAD = ["network", "env", "total_timesteps", "seed"]
TAIL = ["log_interval", "eval_env", "eval_freq", "eval_episodes", "callback", "load_path",
        "checkpoint_interval", "checkpoint_path", "resume", "network_kwargs"]


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_learn_signature_is_the_contract(alg):
    learn = registry.get_algorithm(alg).learn
    params = list(inspect.signature(learn).parameters)
    assert params[:len(HEAD)] == HEAD
    assert params[-len(TAIL):] == TAIL


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_every_learn_parameter_is_documented(alg):
    learn = registry.get_algorithm(alg).learn
    doc = inspect.getdoc(learn) or ""
    for name in inspect.signature(learn).parameters:
        label = f"**{name}" if name == "network_kwargs" else name
        assert re.search(rf"^{re.escape(label)}\b.*:", doc, re.M), f"{alg}: {name} undocumented"


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
