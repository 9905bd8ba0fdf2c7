"""learn()'s signature and docs come from the config
(rlbase.common.loops.learning.config_signature), and start_learning reads the arguments as passed
exactly as it read learn()'s locals()."""

from __future__ import annotations

import inspect
import warnings

import pytest

from rlbase.a2c.a2c import learn as a2c_learn
from rlbase.a2c.config import CONFIG
from rlbase.a2c.model import build_model
from rlbase.common.errors import RLBaseError
from rlbase.common.loops.learning import RUN_PARAMETERS, config_signature, start_learning
from rlbase.ppo.ppo import learn as ppo_learn


def test_the_signature_lists_the_fields_in_their_order_then_the_run_arguments():
    params = inspect.signature(a2c_learn).parameters
    shared = ["eval_freq", "eval_episodes", "checkpoint_interval", "precision"]
    fields = [f for f in CONFIG.field_names() if f not in shared and f != "seed"] + shared
    run = [p.name for p in RUN_PARAMETERS]
    assert list(params) == ["network", "env", "total_timesteps", "seed", *fields, *run,
                            "network_kwargs"]
    assert params["total_timesteps"].default == int(80e6)
    assert params["lr"].default == CONFIG.defaults()["lr"]
    assert list(inspect.signature(ppo_learn).parameters)[-2:] == ["model_fn", "network_kwargs"]


def test_the_docstring_has_a_line_per_parameter_from_the_field_docs():
    doc = inspect.getdoc(a2c_learn) or ""
    assert doc.startswith("Train a policy with A2C")
    for row_name in ("nsteps", "lr", "eval_env", "resume", "**network_kwargs"):
        assert f"\n{row_name}: " in doc, row_name
    assert "SB3: learning_rate" in doc


def test_notes_replace_a_run_arguments_meaning():
    @config_signature(CONFIG, notes={"network": "ignored here"})
    def learn(network, env, total_timesteps=1, seed=None, **kwargs):
        """One line."""

    assert "\nnetwork: ignored here\n" in (inspect.getdoc(learn) or "")


def _config(**kwargs):
    model, env, _ = start_learning(CONFIG, build_model, "mlp", "CartPole-v1", 0, 0,
                                   {"num_hidden": 8, **kwargs})
    env.close()
    return model.config


def _config_from_locals(fields=None, **network_kwargs):
    arguments = {"network": "mlp", "env": "CartPole-v1", "total_timesteps": 0,
                 **CONFIG.defaults(), **(fields or {}), "seed": 0, "eval_env": None,
                 "callback": None,
                 "load_path": None, "checkpoint_path": None, "resume": False,
                 "a_local_variable": 1,  # learn()'s other locals are not arguments
                 "network_kwargs": {"num_hidden": 8, **network_kwargs}}
    model, env, _ = start_learning(CONFIG, build_model, arguments)
    env.close()
    return model.config


def test_other_spellings_and_the_locals_form_give_the_same_config():
    assert _config(learning_rate=0.01).lr == _config(lr=0.01).lr == 0.01
    assert _config(learning_rate=0.01) == _config_from_locals(learning_rate=0.01)
    assert _config(lr=0.01, nsteps=7) == _config_from_locals({"lr": 0.01, "nsteps": 7})
    assert _config() == _config_from_locals()
    default = CONFIG.defaults()["lr"]
    assert _config(lr=default, learning_rate=0.02).lr == 0.02  # a default isn't "given"


def test_a_field_given_twice_or_an_unknown_name_is_one_line():
    with pytest.raises(RLBaseError, match="lr is given twice"):
        _config(lr=0.01, learning_rate=0.02)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as err:
            _config(not_a_parameter=1)
    assert "not_a_parameter" in str(err.value) and "\n" not in str(err.value)
