"""Save a model, then continue training it later, three ways.

    python examples/continue_training.py --num_timesteps 50000

1. ``learn(..., load_path=path)``: the weights and optimizer state come from the file, the
   other settings from the arguments you pass (keep them the same as the first run).
2. The model classes: ``PPO.load(path, env=env).learn(n, reset_num_timesteps=False)`` keeps
   the saved hyperparameters and the step count.
3. The command line: ``python -m rlbase.run --alg=ppo --env=CartPole-v1
   --num_timesteps=5e4 --load_path=ppo.zip --save_path=ppo.zip``.

Model files are one zip (JSON metadata and npz arrays, see rlbase/docs/save_format.md); loading
never unpickles anything. For runs that may be killed, use checkpoints instead
(``checkpoint_interval`` and ``resume=True``): they also hold what the exact continuation
needs.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from rlbase import PPO
from rlbase.common.envs.make import make_vec_env
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.ppo.ppo import learn

SETTINGS = dict(nsteps=32, nminibatches=1, noptepochs=20, gamma=0.98, lam=0.8, lr=1e-3,
                log_interval=10**9)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_timesteps", type=float, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    steps = int(args.num_timesteps)
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "ppo_cartpole.zip")
    eval_env = make_vec_env("CartPole-v1", seed=123)

    # First session.
    env = make_vec_env("CartPole-v1", num_env=8, seed=args.seed)
    model = learn("mlp", env, seed=args.seed, total_timesteps=steps, **SETTINGS)
    model.save(path)
    print(f"after {steps} steps: {evaluate_policy(model, eval_env, 5)[0]:.1f}")

    # 1. The function API: same settings, weights and optimizer state from the file.
    model = learn("mlp", env, seed=args.seed + 1, total_timesteps=steps, load_path=path,
                  **SETTINGS)
    print(f"after {2 * steps} steps (learn, load_path): "
          f"{evaluate_policy(model, eval_env, 5)[0]:.1f}")

    # 2. The model class: hyperparameters come from the file too.
    env.close()
    ppo = PPO("MlpPolicy", "CartPole-v1", seed=args.seed, **{
        k: v for k, v in SETTINGS.items() if k != "log_interval"})
    ppo.learn(steps)
    ppo.save(path)
    again = PPO.load(path, env=make_vec_env("CartPole-v1", num_env=8, seed=args.seed + 2))
    again.learn(steps, reset_num_timesteps=False)  # keep counting from the saved count
    print(f"model class after {again.num_timesteps} steps: "
          f"{evaluate_policy(again, eval_env, 5)[0]:.1f}")


if __name__ == "__main__":
    main()
