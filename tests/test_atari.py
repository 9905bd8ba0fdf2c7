"""Atari preprocessing (frames, lives, full-game scores) and short cnn training runs."""

import numpy as np
import pytest

pytest.importorskip("ale_py")

from rlbase.a2c.a2c import learn as a2c_learn  # noqa: E402
from rlbase.common.envs.atari_wrappers import make_atari, wrap_deepmind  # noqa: E402
from rlbase.common.envs.make import get_env_type, make_vec_env  # noqa: E402
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


def test_acer_and_dqn_smoke_runs_on_pong():
    from rlbase.acer.acer import learn as acer_learn
    from rlbase.dqn.dqn import learn as dqn_learn

    env = make_vec_env("PongNoFrameskip-v4", num_env=2, seed=0)  # the fast ale path
    # ACER replays from its second batch on, so both of its update kinds run.
    acer = acer_learn("cnn", env, total_timesteps=160, seed=0, nsteps=20, buffer_size=200,
                      replay_start=20, replay_ratio=1, log_interval=10**9)
    assert acer.step(env.reset())[0].shape == (2,)
    assert acer.replay_buffer.frames.shape[-1] == 1  # Pong frames stored once, not stacked
    env.close()
    env = make_vec_env("PongNoFrameskip-v4", num_env=1, seed=0)
    dqn = dqn_learn("conv_only", env, total_timesteps=300, seed=0, learning_starts=100,
                    buffer_size=500, batch_size=8, train_freq=4, prioritized_replay=True,
                    log_interval=10**9, best_model_interval=None)
    obs = env.reset()
    assert obs.dtype == np.uint8 and dqn.step(obs)[0].shape == (1,)
    # Behind the ale path's VecFrameStack, the replay buffer keeps each uint8 frame once.
    from rlbase.common.buffers.replay_buffer import FrameStackReplayBuffer

    storage = dqn.replay_buffer.storage
    assert isinstance(storage, FrameStackReplayBuffer)
    assert storage.frames.dtype == np.uint8 and storage.frames.shape[-1] == 1
    env.close()


# ---- the fast path: ale-py's vector env ---------------------------------------------------
ale_vector = pytest.importorskip("ale_py.vector_env")


@pytest.mark.parametrize("env_id,sticky", [("PongNoFrameskip-v4", 0.0),
                                           ("ALE/Breakout-v5", 0.25)])
def test_ale_path_is_the_default_and_gives_the_same_frames_layout(env_id, sticky):
    from rlbase.common.vec_env.ale_vec_env import AleVecEnv

    env = make_vec_env(env_id, num_env=2, seed=0)
    inner = env.unwrapped
    assert isinstance(inner, AleVecEnv)
    assert len(inner.emulators) == 2 and sticky == (0.25 if "ALE/" in env_id else 0.0)
    obs = env.reset()
    assert obs.shape == (2, 84, 84, 4) and obs.dtype == np.uint8
    assert env.observation_space.shape == (84, 84, 4)
    # Once the game moves, the four stacked frames differ.
    for _ in range(80):
        obs, *_ = env.step(np.ones(2, dtype=np.int64))
    assert not np.array_equal(obs[..., 0], obs[..., 3])
    env.close()


def test_ale_path_ends_episodes_at_lost_lives_and_scores_whole_games():
    from rlbase.common.vec_env.ale_vec_env import AleVecEnv

    env = AleVecEnv("BreakoutNoFrameskip-v4", 2, clip_rewards=False)
    env.seed(0)
    env.reset()
    rng = np.random.default_rng(0)
    terminations, games, game_total, reward_total = 0, 0, 0.0, np.zeros(2)
    lives = None
    for _ in range(3000):
        _, rewards, terminated, truncated, infos = env.step(rng.integers(4, size=2))
        reward_total += rewards
        terminations += int(terminated.sum())
        for i, info in enumerate(infos):
            if "episode" in info:
                games += 1
                game_total += info["episode"]["r"]
                assert terminated[i] or truncated[i]
                assert "final_observation" in info
                reward_total[i] -= info["episode"]["r"]  # what is left: unfinished games
            elif terminated[i]:  # a lost life: the game goes on with one life fewer
                assert info["lives"] == lives[i] - 1
        lives = [info["lives"] for info in infos]
    assert games >= 4 and terminations >= 4 * games  # Breakout: 5 lives per game
    assert game_total > 0
    assert np.all(reward_total >= 0)  # every completed game's score was its rewards' sum
    env.close()


def test_ale_path_clips_training_rewards_and_refuses_what_it_cannot_do():
    from rlbase.common.vec_env.ale_vec_env import ale_game_name

    env = make_vec_env("BreakoutNoFrameskip-v4", num_env=1, seed=0, vec_env="ale")
    env.reset()
    seen = set()
    for _ in range(400):
        _, rewards, *_ = env.step(np.array([1]))
        seen.update(rewards.tolist())
    assert seen <= {0.0, 1.0, -1.0}
    env.close()
    assert ale_game_name("MsPacmanNoFrameskip-v4") == "ms_pacman"
    assert ale_game_name("ALE/SpaceInvaders-v5") == "space_invaders"
    with pytest.raises(RLBaseError, match="render_mode"):
        make_vec_env("PongNoFrameskip-v4", num_env=1, vec_env="ale",
                     env_kwargs={"render_mode": "rgb_array"})
    with pytest.raises(RLBaseError, match="Atari envs only"):
        make_vec_env("CartPole-v1", num_env=1, vec_env="ale")
    with pytest.raises(RLBaseError, match="unknown vec_env 'threads'"):
        make_vec_env("PongNoFrameskip-v4", num_env=1, vec_env="threads")
    # Asking for rendered frames picks the process path by itself.
    env = make_vec_env("PongNoFrameskip-v4", num_env=1, env_kwargs={"render_mode": "rgb_array"})
    assert not type(env.unwrapped).__name__ == "AleVecEnv"
    env.close()


def test_ppo_trains_on_the_ale_path():
    env = make_vec_env("PongNoFrameskip-v4", num_env=2, seed=0, vec_env="ale")
    model = ppo_learn("cnn", env, total_timesteps=128, seed=0, log_interval=10**9, nsteps=32,
                      nminibatches=2, noptepochs=1)
    assert model.step(env.reset())[0].shape == (2,)
    env.close()


def test_cli_records_a_video_of_the_real_game(tmp_path):
    import subprocess
    import sys

    import cv2

    proc = subprocess.run(
        [sys.executable, "-m", "rlbase.run", "--alg=a2c", "--env=PongNoFrameskip-v4",
         "--num_timesteps=120", "--num_env=1", "--nsteps=5", "--save_video_interval=50",
         "--save_video_length=20", f"--log_path={tmp_path}", "--no_progress"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    videos = sorted((tmp_path / "videos").glob("*.mp4"))
    assert videos and all(v.stat().st_size > 1000 for v in videos)
    capture = cv2.VideoCapture(str(videos[0]))
    ok, frame = capture.read()
    capture.release()
    assert ok and frame.shape == (210, 160, 3)  # the emulator's own screen, not 84x84


def test_ale_path_serves_again_after_a_lost_life():
    from rlbase.common.vec_env.ale_vec_env import AleVecEnv

    # Only NOOPs from the agent: without FIRE after a lost life Breakout would wait forever.
    env = AleVecEnv("BreakoutNoFrameskip-v4", 1)
    env.seed(0)
    env.reset()
    lives_lost, games = 0, 0
    for _ in range(400):
        _, _, terminated, _, infos = env.step(np.zeros(1, dtype=np.int64))
        games += int("episode" in infos[0])
        lives_lost += int(terminated[0] and "episode" not in infos[0])
    assert lives_lost >= 4 and games >= 1
    env.close()


def test_ale_and_process_paths_give_the_same_transitions_across_lives_and_games():
    """The ale path presses NOOP/FIRE after a lost life and FIRE after a game start inside the
    reset, as wrap_deepmind does, so the agent is never credited with a press it did not make.

    No-op starts are off: ale-py draws their count from its own C++ generator, gymnasium from
    numpy's, and the two cannot be seeded alike. Sticky actions are off (v4's default) for the
    same reason. With both off the emulators are deterministic and must agree frame for frame.
    """
    kwargs = dict(num_env=1, seed=3, wrapper_kwargs={"noop_max": 0},
                  env_kwargs={"repeat_action_probability": 0.0})
    process = make_vec_env("BreakoutNoFrameskip-v4", vec_env="dummy", **kwargs)
    ale = make_vec_env("BreakoutNoFrameskip-v4", vec_env="ale", **kwargs)
    assert type(ale.unwrapped).__name__ == "AleVecEnv"
    np.testing.assert_array_equal(process.reset(), ale.reset())
    # Random play loses a life every ~40 steps and a game every ~200; some NOOP-only stretches
    # leave every serve to the env.
    actions = np.random.default_rng(1).integers(4, size=700)
    actions[100:160] = actions[400:460] = 0
    lost_lives, games = 0, []
    for t, action in enumerate(actions):
        p_obs, p_rew, p_term, p_trunc, p_infos = process.step(np.array([action]))
        a_obs, a_rew, a_term, a_trunc, a_infos = ale.step(np.array([action]))
        where = f"step {t}"
        np.testing.assert_array_equal(p_obs, a_obs, err_msg=where)
        assert (p_rew[0], p_term[0], p_trunc[0]) == (a_rew[0], a_term[0], a_trunc[0]), where
        p_info, a_info = p_infos[0], a_infos[0]
        assert ("final_observation" in p_info) == ("final_observation" in a_info), where
        if "final_observation" in p_info:
            np.testing.assert_array_equal(p_info["final_observation"],
                                          a_info["final_observation"], err_msg=where)
        assert ("episode" in p_info) == ("episode" in a_info), where
        if "episode" in p_info:  # the whole game's unclipped score and length, on both paths
            assert p_info["episode"]["r"] == a_info["episode"]["r"], where
            assert p_info["episode"]["l"] == a_info["episode"]["l"], where
            games.append(a_info["episode"]["r"])
        elif p_term[0]:
            lost_lives += 1
    assert len(games) >= 2 and lost_lives >= 4 * len(games)
    assert process.episode_returns == ale.episode_returns == games
    process.close()
    ale.close()
