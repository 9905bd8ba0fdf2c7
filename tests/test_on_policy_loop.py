"""The on-policy loop (rlbase.common.loops.on_policy): the order and arguments of its hooks."""

from __future__ import annotations

from typing import Any

from rlbase.a2c.config import CONFIG
from rlbase.a2c.model import build_model
from rlbase.common.loops.learning import start_learning
from rlbase.common.loops.on_policy import learning_rate, policy_rollouts, run_on_policy


def _a2c(**kwargs: Any):
    return start_learning(CONFIG, build_model, {
        "network": "mlp", "env": "CartPole-v1", "total_timesteps": 0,
        **CONFIG.defaults(), "seed": 0, "network_kwargs": {"num_hidden": 8, **kwargs}})


def test_hooks_see_the_progress_and_the_iteration_and_everything_is_logged():
    model, env, options = _a2c()
    options.log_interval, calls, infos = 2, [], []
    options.callback = lambda m, info: infos.append(info)

    def update(rollout, current, iteration):
        calls.append(("update", iteration, round(current["progress"], 6)))
        return model.train(rollout, 7e-4)

    def mean(stats, check):
        calls.append(("mean", check))
        return stats

    nbatch = model.num_envs * model.nsteps
    run_on_policy(model, env, 3 * nbatch, options, loss_names=("value_loss",),
                  rollouts=policy_rollouts(0.99), update=update,
                  schedule=lambda progress: {"progress": progress}, workers_mean=mean,
                  after_update=lambda rollout, current, iteration: {"extra": iteration})
    assert calls == [("update", 1, 1.0), ("mean", False), ("update", 2, round(2 / 3, 6)),
                     ("mean", True), ("update", 3, round(1 / 3, 6)), ("mean", False)]
    assert [i["extra"] for i in infos] == [1, 2, 3]
    assert list(infos[0])[-2:] == ["progress", "extra"]  # after the update's statistics
    assert model.num_timesteps == 3 * nbatch


def test_a_callback_returning_false_stops_after_that_update():
    model, env, options = _a2c()
    updates = []
    options.callback = lambda m, info: info["iteration"] < 2

    def update(rollout, current, iteration):
        updates.append(iteration)
        return model.train(rollout, current["learning_rate"])

    nbatch = model.num_envs * model.nsteps
    run_on_policy(model, env, 10 * nbatch, options, loss_names=(),
                  rollouts=policy_rollouts(0.99), update=update,
                  schedule=learning_rate(7e-4, "linear"))
    assert updates == [1, 2] and model.num_timesteps == 2 * nbatch


def test_learning_rate_reads_a_function_or_a_named_schedule():
    assert learning_rate(lambda p: 2 * p)(0.25) == {"learning_rate": 0.5}
    assert learning_rate(1.0, "linear")(0.25) == {"learning_rate": 0.25}
    assert learning_rate(1.0)(0.25) == {"learning_rate": 1.0}
