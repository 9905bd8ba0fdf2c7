"""Atari preprocessing (frames, lives, full-game scores) and short cnn training runs."""

import numpy as np
import pytest

pytest.importorskip("ale_py")

from rlbase.a2c.a2c import learn as a2c_learn  # noqa: E402
from rlbase.common.atari_wrappers import make_atari, wrap_deepmind  # noqa: E402
from rlbase.common.cmd_util import get_env_type, make_vec_env  # noqa: E402
from rlbase.common.errors import RLBaseError  # noqa: E402
from rlbase.ppo.ppo import learn as ppo_learn  # noqa: E402


@pytest.mark.parametrize("env_id", ["PongNoFrameskip-v4", "ALE/Breakout-v5"])
def test_both_id_families_give_stacked_uint8_frames(env_id):
    assert get_env_type(env_id) == "atari"
    env = make_vec_env(env_id, num_env=2, seed=0, force_dummy=True)
    obs = env.reset()
    assert obs.shape == (2, 84, 84, 4) and obs.dtype == np.uint8
    obs, *_ = env.step(np.zeros(2, np.int64))
    assert obs.shape == (2, 84, 84, 4) and obs.dtype == np.uint8
    env.close()


def test_frame_skipping_ids_are_refused():
    with pytest.raises(RLBaseError, match="NoFrameskip"):
        make_atari("Pong-v4")
    with pytest.raises(RLBaseError, match="frameskip"):
        make_atari("ALE/Pong-v5", {"frameskip": 4})


def test_lost_life_ends_the_episode_but_the_score_counts_the_whole_game():
    env = wrap_deepmind(make_atari("BreakoutNoFrameskip-v4"), clip_rewards=True)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    life_ends, clipped_total, game = 0, 0.0, None
    for _ in range(20000):
        _, reward, terminated, truncated, info = env.step(int(rng.integers(4)))
        clipped_total += reward
        assert reward in (-1.0, 0.0, 1.0)
        if "episode" in info:
            game = info["episode"]
            break
        if terminated or truncated:
            life_ends += 1
            env.reset()
    assert game is not None, "no game finished"
    assert life_ends == 4  # Breakout has 5 lives: 4 life-loss episodes before the game ends
    assert game["r"] >= clipped_total  # unclipped bricks score 1, 4 or 7 points each
    assert game["l"] > 0


def test_monitor_counts_games_not_lives():
    env = make_vec_env("BreakoutNoFrameskip-v4", num_env=1, seed=0, force_dummy=True)
    env.reset()
    rng = np.random.default_rng(1)
    dones, games = 0, 0
    while games == 0:
        _, _, terminated, truncated, infos = env.step(rng.integers(4, size=1))
        dones += int(terminated[0] or truncated[0])
        games += int("episode" in infos[0])
    assert dones == 5 and len(env.episode_returns) == 1
    env.close()


@pytest.mark.parametrize("learn,kwargs", [
    (a2c_learn, dict(nsteps=5)),
    (ppo_learn, dict(nsteps=32, nminibatches=2, noptepochs=1)),
], ids=["a2c", "ppo"])
def test_cnn_smoke_run_on_pong(learn, kwargs):
    env = make_vec_env("PongNoFrameskip-v4", num_env=2, seed=0, force_dummy=True)
    model = learn("cnn", env, total_timesteps=128, seed=0, log_interval=10**9, **kwargs)
    obs = env.reset()
    actions = model.step(obs)[0]
    assert actions.shape == (2,) and model.calls.actor is None  # cnn acts through TF
    env.close()
