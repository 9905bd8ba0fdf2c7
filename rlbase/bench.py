"""Benchmarks: training steps/s and the return reached, optionally beside the peer library.

    python -m rlbase.bench run --alg=a2c --env=CartPole-v1 --num_timesteps=5e4 --seed=0
    python -m rlbase.bench compare --alg=a2c --env=CartPole-v1 --num_timesteps=5e4 \
        --peer_python=/tmp/sb3env/bin/python --anchors=../shared/anchors
    python -m rlbase.bench suite --preset=classic --jobs=2   # see rlbase/bench_suite.py

``run`` prints one line (and appends a JSON record to ``--out`` when given). ``compare`` runs
rlbase and then the peer's anchor script at the same settings in the same process tree, one
after the other, and prints the ratio of steps/s: the machine is shared and noisy, so only
ratios measured together mean anything.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import subprocess
import sys
import time
from typing import Any

# Settings that match the peer's anchor runs (ANCHORS.md), so the comparison is like for like.
PEER_SETTINGS: dict[tuple[str, str], dict[str, Any]] = {
    # The settings the comparison fixes: 8 envs, 5 steps, 64x64 tanh MLP (the rest are
    # rlbase's classic_control defaults).
    ("a2c", "CartPole-v1"): dict(num_env=8, nsteps=5, num_layers=2, num_hidden=64,
                                 activation="tanh"),
    # The rl-zoo CartPole settings in the peer's anchor script: one 256-sample minibatch,
    # 20 epochs, separate 64x64 torsos, no value clipping.
    ("ppo", "CartPole-v1"): dict(num_env=8, nsteps=32, nminibatches=1, noptepochs=20,
                                 gamma=0.98, lam=0.8, lr=1e-3, ent_coef=0.0, cliprange=0.2,
                                 value_network="copy", clip_value=False),
    # No peer anchor: settings measured to reach -250 by 3e5 steps on seeds 0-2 (-149, -182,
    # -175), with running observation and reward normalization.
    ("ppo", "Pendulum-v1"): dict(num_env=4, nsteps=1024, nminibatches=32, noptepochs=10,
                                 gamma=0.9, lam=0.95, lr=1e-3, cliprange=0.2, ent_coef=0.0,
                                 value_network="copy", clip_value=False, normalize=True),
    # The rl-zoo CartPole settings in the peer's anchor script (256x256 ReLU MLP, 128 updates
    # every 256 steps, target copied every 10 steps), without double Q or dueling heads. The
    # greedy policy swings between solving and failing from one training phase to the next
    # (for the peer too), so learn() hands back the best of its checkpoints, scored every 10
    # phases by 5 greedy episodes on a separate env (the peer hands back its last model; run
    # with --checkpoint_freq=None to do the same).
    ("dqn", "CartPole-v1"): dict(num_env=1, network="mlp", num_layers=2, num_hidden=256,
                                 activation="relu", hiddens=[], lr=2.3e-3, batch_size=64,
                                 buffer_size=100_000, learning_starts=1000, gamma=0.99,
                                 target_network_update_freq=10, train_freq=256,
                                 gradient_steps=128, exploration_fraction=0.16,
                                 exploration_final_eps=0.04, dueling=False, double_q=False,
                                 checkpoint_freq=2560, eval_env="CartPole-v1",
                                 eval_episodes=5, print_freq=None),
    # The rl-zoo Pendulum settings in the peer's anchor script (400x300 ReLU nets, lr 1e-3,
    # Gaussian action noise 0.1, 1e4 random steps, one gradient step per env step, batch 256,
    # tau 0.005); TD3's options are added with --twin_q=True --policy_delay=2
    # --target_noise=0.2.
    ("ddpg", "Pendulum-v1"): dict(num_env=1, network="mlp", layer_sizes=(400, 300),
                                  activation="relu", actor_lr=1e-3, critic_lr=1e-3, gamma=0.98,
                                  buffer_size=200_000, learning_starts=10_000,
                                  noise_type="normal_0.1", nb_rollout_steps=100,
                                  nb_train_steps=100, batch_size=256, tau=0.005,
                                  critic_l2_reg=0.0, normalize_observations=False),
    # Like the peer's ARS (a linear policy, a few directions per update): 4 mirrored pairs,
    # sigma 0.1, Adam 0.05, 8 episodes side by side. The peer runs from sb3_ars.py, not
    # sb3_bench.py: run it right after this one in the same shell command.
    ("es", "CartPole-v1"): dict(num_env=8, network="mlp", num_layers=0, popsize=8,
                                noise_stdev=0.1, lr=0.05, paired_starts=False),
}


def train_and_evaluate(alg: str, env_id: str, num_timesteps: int, num_env: int | None,
                       seed: int, eval_episodes: int, extra: dict[str, Any],
                       normalize: bool = False,
                       monitor_dir: str | None = None) -> dict[str, Any]:
    """Train with ``learn()``, time it, then evaluate deterministically on a fresh env.

    ``monitor_dir``: where the training envs write monitor.csv (learning curves), or None.
    """
    from rlbase.common.cmd_util import get_env_type, make_vec_env
    from rlbase.common.evaluation import evaluate_policy
    from rlbase.run import get_defaults, get_learn_function

    learn = get_learn_function(alg)
    env_type = get_env_type(env_id)
    kwargs = get_defaults(alg, env_type)
    kwargs.update(PEER_SETTINGS.get((alg, env_id), {}))
    kwargs.update(extra)
    num_env = num_env or kwargs.pop("num_env", 1)
    kwargs.pop("num_env", None)
    network = kwargs.pop("network", "mlp")
    normalize = normalize or bool(kwargs.pop("normalize", False))
    env = make_vec_env(env_id, env_type, num_env, seed, monitor_dir=monitor_dir)
    if normalize:
        from rlbase.common.vec_env import VecNormalize

        env = VecNormalize(env)
    if "log_interval" in inspect.signature(learn).parameters:  # not every learn() has one
        kwargs.setdefault("log_interval", 10**9)
    t0 = time.perf_counter()
    model = learn(network=network, env=env, seed=seed, total_timesteps=num_timesteps, **kwargs)
    wall = time.perf_counter() - t0
    env.close()
    mean = std = float("nan")
    if eval_episodes > 0:  # 0: a throughput run
        eval_env = make_vec_env(env_id, env_type, 1, seed=123)
        if hasattr(model, "normalized_like_training"):
            eval_env = model.normalized_like_training(eval_env)
        mean, std = evaluate_policy(model, eval_env, eval_episodes, deterministic=True)
        eval_env.close()
    return {"library": "rlbase", "alg": alg, "env": env_id, "seed": seed,
            "timesteps": num_timesteps, "num_env": num_env, "wall_s": round(wall, 2),
            "sps": round(num_timesteps / wall), "eval_mean": round(mean, 2),
            "eval_std": round(std, 2), "settings": {k: repr(v) for k, v in kwargs.items()},
            "hardware": f"{platform.machine()} x{os.cpu_count()}",
            "versions": _versions()}


def _versions() -> dict[str, str]:
    import gymnasium
    import numpy
    import tensorflow

    import rlbase

    return {"rlbase": rlbase.__version__, "tensorflow": tensorflow.__version__,
            "gymnasium": gymnasium.__version__, "numpy": numpy.__version__,
            "python": platform.python_version()}


def run_peer(peer_python: str, anchors: str, alg: str, env_id: str, num_timesteps: int,
             num_env: int, seed: int) -> dict[str, Any]:
    """Run the peer's anchor script and parse its one-line result."""
    anchors = os.path.abspath(anchors)
    script = os.path.join(anchors, "sb3_bench.py")
    cmd = [peer_python, script, alg, env_id, str(num_timesteps), str(num_env), str(seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=anchors, check=True).stdout
    line = out.strip().splitlines()[-1]
    fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
    return {"library": "peer", "line": line, "sps": float(fields["sps"]),
            "eval_mean": float(fields["eval"].split("+-")[0])}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["suite"]:  # the suite has its own flags (rlbase/bench_suite.py)
        from rlbase.bench_suite import main as suite_main

        suite_main(argv[1:])
        return
    from rlbase.common.cmd_util import parse_unknown_args
    from rlbase.common.misc_util import import_tensorflow_quietly

    parser = argparse.ArgumentParser(prog="python -m rlbase.bench")
    parser.add_argument("command", choices=["run", "compare", "suite"])
    parser.add_argument("--alg", default="a2c")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--num_timesteps", type=float, default=5e4)
    parser.add_argument("--num_env", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=1, help="run seeds seed..seed+N-1")
    parser.add_argument("--eval_episodes", type=int, default=10)
    parser.add_argument("--peer_python", default="/tmp/sb3env/bin/python")
    parser.add_argument("--anchors", default=os.path.join("..", "shared", "anchors"))
    parser.add_argument("--normalize", action="store_true",
                        help="train on VecNormalize'd observations and rewards")
    parser.add_argument("--out", default=None, help="append JSON lines here")
    parser.add_argument("--monitor_dir", default=None,
                        help="write the training envs' monitor.csv here (learning curves)")
    args, unknown = parser.parse_known_args(argv)
    import_tensorflow_quietly()
    extra = parse_unknown_args(unknown)
    steps = int(args.num_timesteps)
    for seed in range(args.seed, args.seed + args.seeds):
        ours = train_and_evaluate(args.alg, args.env, steps, args.num_env, seed,
                                  args.eval_episodes, extra, args.normalize,
                                  monitor_dir=args.monitor_dir and os.path.join(
                                      args.monitor_dir, f"seed{seed}"))
        print(f"rlbase {args.alg} {args.env} steps={steps} n_envs={ours['num_env']} "
              f"seed={seed} time={ours['wall_s']}s sps={ours['sps']} "
              f"eval={ours['eval_mean']}+-{ours['eval_std']}", flush=True)
        records = [ours]
        if args.command == "compare":
            peer = run_peer(args.peer_python, args.anchors, args.alg, args.env, steps,
                            ours["num_env"], seed)
            print(peer["line"], flush=True)
            ratio = ours["sps"] / peer["sps"]
            print(f"ratio rlbase/peer steps/s = {ratio:.2f}; eval {ours['eval_mean']} vs "
                  f"{peer['eval_mean']}", flush=True)
            records.append(peer)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                for record in records:
                    f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # noqa: BLE001 - one line for a failed benchmark
        from rlbase.common.errors import RLBaseError

        if not isinstance(exc, RLBaseError):
            raise
        print(f"rlbase.bench: error: {exc}", file=sys.stderr)
        sys.exit(2)
