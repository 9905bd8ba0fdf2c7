"""Stable-Baselines3's tests/test_tensorboard.py, ported: a model's TensorBoard runs are
``<tensorboard_log>/<tb_log_name>_<N>``, a continued learn() stays in its run, and
hyperparameters go to the HPARAMS tab."""

import os

import pytest
import tensorflow as tf
from rlbase.logger import HParam, get_latest_run_id

from rlbase import A2C, PPO, SAC, TD3
from rlbase.common.errors import RLBaseError

MODEL_DICT = {
    "a2c": (A2C, "CartPole-v1"),
    "ppo": (PPO, "CartPole-v1"),
    "sac": (SAC, "Pendulum-v1"),
    "td3": (TD3, "Pendulum-v1"),
}
N_STEPS = 100


def _has_tensorboard() -> bool:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        return False
    return True


def hparam_callback():
    """Records the hyperparameters once, at the first step, for TensorBoard only."""
    done = []

    def callback(model, info):
        if not done:
            done.append(True)
            model.logger.record(
                "hparams",
                HParam({"algorithm": type(model).__name__, "gamma": 0.99},
                       {"rollout/ep_len_mean": 0}),
                exclude=("stdout", "log", "json", "csv"))
        return True

    return callback


def event_tags(folder):
    tags = set()
    for name in os.listdir(folder):
        for record in tf.data.TFRecordDataset(os.path.join(folder, name)):
            event = tf.compat.v1.Event.FromString(record.numpy())
            tags |= {(value.tag, value.metadata.plugin_data.plugin_name)
                     for value in event.summary.value}
    return tags


@pytest.mark.parametrize("model_name", MODEL_DICT.keys())
def test_tensorboard(tmp_path, model_name):
    logname = model_name.upper()
    algo, env_id = MODEL_DICT[model_name]
    kwargs = {}
    if model_name == "ppo":
        kwargs["n_steps"] = 64
    elif model_name in {"sac", "td3"}:
        kwargs["train_freq"] = 2
    model = algo("MlpPolicy", env_id, verbose=1, tensorboard_log=tmp_path, **kwargs)
    # (the off-policy ones log every 4 episodes: 100 steps of Pendulum write no row)
    on_policy = model_name in {"a2c", "ppo"}
    if on_policy and not _has_tensorboard():
        with pytest.raises(RLBaseError, match="needs the tensorboard package"):
            model.learn(N_STEPS, callback=hparam_callback())
    else:
        model.learn(N_STEPS, callback=hparam_callback())
    if on_policy and _has_tensorboard():
        assert any(plugin == "hparams" for _, plugin in event_tags(tmp_path / f"{logname}_1"))
    model.learn(N_STEPS, reset_num_timesteps=False)

    assert os.path.isdir(tmp_path / f"{logname}_1")
    assert not os.path.isdir(tmp_path / f"{logname}_2")
    if on_policy:  # the scalars, under SB3's keys, in the run's own folder
        tags = event_tags(tmp_path / f"{logname}_1")
        assert {("time/total_timesteps", "scalars"), ("rollout/ep_rew_mean", "scalars")} <= tags

    logname = "tb_multiple_runs_" + model_name
    model.learn(N_STEPS, tb_log_name=logname)
    model.learn(N_STEPS, tb_log_name=logname)
    assert os.path.isdir(tmp_path / f"{logname}_1")
    assert os.path.isdir(tmp_path / f"{logname}_2")  # the run number goes up


def test_escape_log_name(tmp_path):
    log_name = "filename[16, 16]"  # glob's special characters
    os.makedirs(str(tmp_path) + f"/{log_name}_1", exist_ok=True)
    os.makedirs(str(tmp_path) + f"/{log_name}_2", exist_ok=True)
    assert get_latest_run_id(tmp_path, log_name) == 2
