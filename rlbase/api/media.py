"""Learning-curve plots and episode videos of a trained agent, from Python or the command line:

    python -m rlbase.api.media plots --log_dir=DIR [--out=curves.png]
    python -m rlbase.api.media videos --alg=ppo --load_path=m.zip --env=CartPole-v1 \
        [--n_episodes=1] [--video_folder=videos]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from rlbase.common.errors import RLBaseError


def save_plots(log_dir: str, path: str | None = None, **kwargs: Any) -> str:
    """Plot the learning curves of every run under ``log_dir`` (monitor or progress files) to
    a PNG (default ``<log_dir>/learning_curves.png``); kwargs go to plot_util.plot_results."""
    from rlbase.common.plot_util import load_results, save_plot

    if not os.path.isdir(log_dir):
        raise RLBaseError(f"save_plots: log folder {log_dir} does not exist")
    results = load_results(log_dir)
    if not results:
        raise RLBaseError(f"save_plots: no monitor.csv or progress.csv under {log_dir}")
    return save_plot(results, path or os.path.join(log_dir, "learning_curves.png"), **kwargs)


def save_videos(model: Any, env_id: str, n_episodes: int = 1, video_folder: str = "videos",
                deterministic: bool = True, seed: int | None = None,
                max_frames: int = 10000, normalize_like: Any = None) -> list[str]:
    """Record ``n_episodes`` of ``model`` playing ``env_id`` as mp4 files in
    ``video_folder``; returns their paths.

    model: a model class instance (``predict``) or the model a ``learn()`` returns (``step``).
    normalize_like: a learn() model trained on VecNormalize'd observations: the recorded env
        is normalized with its saved statistics.
    """
    from rlbase.common.cmd_util import make_vec_env
    from rlbase.common.vec_env import VecVideoRecorder

    if isinstance(n_episodes, bool) or not isinstance(n_episodes, int) or n_episodes < 1:
        raise RLBaseError(f"n_episodes must be a positive integer, got {n_episodes!r}")
    venv = make_vec_env(env_id, num_env=1, seed=seed, env_kwargs={"render_mode": "rgb_array"},
                        force_dummy=True)
    # One clip per episode: a clip starts at each reset and is long enough to hold it.
    if hasattr(normalize_like, "normalized_like_training"):
        venv = normalize_like.normalized_like_training(venv)
    recorder = VecVideoRecorder(venv, video_folder, lambda step: True, video_length=max_frames)
    if not hasattr(model, "predict"):
        model = _StepAsPredict(model)
    try:
        obs, state, mask = recorder.reset(), None, [1.0]
        episodes = 0
        while episodes < n_episodes:
            actions, state = model.predict(obs, state=state, mask=mask,
                                           deterministic=deterministic)
            obs, _, terminated, truncated, _ = recorder.step(actions)
            done = bool(terminated[0] or truncated[0])
            mask = [float(done)]
            if done:
                episodes += 1
                # End this episode's clip; the next step starts the next one.
                recorder._close_video()
    finally:
        recorder.close()
    return list(recorder.video_paths)


class _StepAsPredict:
    """``predict`` over a learn() model's ``step(obs, state, mask, deterministic)``."""

    def __init__(self, model: Any):
        self.model = model

    def predict(self, obs: Any, state: Any = None, mask: Any = None,
                deterministic: bool = True) -> tuple[Any, Any]:
        import numpy as np

        n = len(obs)
        state = self.model.initial_state(n) if state is None else state
        mask = np.asarray(mask if mask is not None else np.ones(n), dtype=np.float32)
        actions, _, state, _ = self.model.step(obs, state, mask, deterministic=deterministic)
        return actions, state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlbase.api.media")
    sub = parser.add_subparsers(dest="command", required=True)
    plots = sub.add_parser("plots", help="learning curves to a PNG")
    plots.add_argument("--log_dir", required=True)
    plots.add_argument("--out", default=None)
    videos = sub.add_parser("videos", help="mp4 videos of a saved model's episodes")
    videos.add_argument("--alg", required=True)
    videos.add_argument("--load_path", required=True)
    videos.add_argument("--env", required=True)
    videos.add_argument("--n_episodes", type=int, default=1)
    videos.add_argument("--video_folder", default="videos")
    args = parser.parse_args(argv)
    try:
        if args.command == "plots":
            print(save_plots(args.log_dir, args.out))
        else:
            import rlbase.api as api

            classes = {c.algorithm: c for c in (api.A2C, api.ACER, api.DDPG, api.DQN, api.ES,
                                                api.PPO, api.QLearning)}
            if args.alg not in classes:
                raise RLBaseError(f"unknown --alg {args.alg!r}; use one of "
                                  f"{', '.join(sorted(classes))}")
            model = classes[args.alg].load(args.load_path)
            for path in save_videos(model, args.env, args.n_episodes, args.video_folder):
                print(path)
    except RLBaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
