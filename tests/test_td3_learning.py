"""TD3 and DDPG learn Pendulum as the peer does, run the way a user runs them (issue 24, item
10): ``python -m rlbase.run --alg=td3 --env=Pendulum-v1 --num_timesteps=2e4 --seed=S`` with
rl-baselines3-zoo's settings (rlbase/hyperparams/ddpg.yml). Stable-Baselines3's TD3 evaluates at
about -134 / -133 / -132 on seeds 0 / 1 / 2 there."""

import pytest

from rlbase.common.envs.make import make_vec_env
from rlbase.common.loops.evaluation import evaluate_policy
from rlbase.run import main


@pytest.mark.slow
@pytest.mark.parametrize("alg", ["td3", "ddpg"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pendulum_at_the_zoo_settings_from_the_cli(alg, seed):
    model = main([f"--alg={alg}", "--env=Pendulum-v1", "--num_timesteps=2e4", f"--seed={seed}",
                  "--no_progress"])
    mean, _ = evaluate_policy(model, make_vec_env("Pendulum-v1", seed=1000 + seed), 10)
    assert mean >= -200, f"{alg} seed {seed}: 10 deterministic episodes average {mean:.1f}"
