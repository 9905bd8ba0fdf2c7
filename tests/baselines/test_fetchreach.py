"""Port of baselines/common/tests/test_fetchreach.py: HER (an mlp policy, seed 0) learns
FetchReach within 2000 env steps: the mean return of 100 episodes afterwards is above -15
(rewards are -1 per step away from the goal, 50 steps an episode).

Deliberate differences:
- FetchReach-v4, the newest id gymnasium-robotics registers (Baselines had gym's v1 on
  mujoco_py); the test skips, saying why, where the Fetch envs cannot be built (no
  gymnasium-robotics, or mujoco >= 3.12, which it fails on: ``pip install 'rlbase[robotics]'``);
- ``her`` is the registry's alias for rlbase's ddpg with Baselines' HER settings
  (rlbase.common.families.her_baselines), plus what Baselines derived from the episode length
  (gamma, return clipping, one training cycle per episode), as ``python -m rlbase.run
  --alg=her`` runs;
- the 100 evaluation episodes play the deterministic actor (Baselines' ``model.step`` of its HER
  policy took no exploration either).
"""

import gymnasium as gym
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.families.her_baselines import horizon_settings
from rlbase.registry import get_algorithm, resolve

from .util import reward_per_episode_test

ENV_ID = "FetchReach-v4"
COMMON_KWARGS = dict(network="mlp", seed=0)
LEARN_KWARGS = {"her": dict(total_timesteps=2000)}


def _fetch_or_skip():
    from rlbase.common.envs.make import check_env_id

    try:
        check_env_id(ENV_ID)
        gym.make(ENV_ID).close()
    except RLBaseError as exc:
        pytest.skip(f"the Fetch envs cannot be built here: {exc}")


class Deterministic:
    """The trained model acting without exploration noise."""

    def __init__(self, model):
        self.model, self.initial_state = model, None

    def step(self, obs, *args):
        return self.model.step(obs, deterministic=True)


@pytest.mark.slow
@pytest.mark.parametrize("alg", LEARN_KWARGS)
def test_fetchreach(alg):
    """Reach the goal on average within 15 of the 50 steps."""
    _fetch_or_skip()
    name, preset = resolve(alg)
    kwargs = {**COMMON_KWARGS, **preset, **LEARN_KWARGS[alg]}
    kwargs.pop("num_env")  # the test's env: one, as Baselines' DummyVecEnv([env_fn])

    def learn(env):
        kwargs.update(horizon_settings(env.get_attr("spec")[0].max_episode_steps,
                                       env.num_envs, {}))
        return Deterministic(get_algorithm(name).learn(env=env, **kwargs))

    def make_env():
        return gym.make(ENV_ID)

    reward_per_episode_test(make_env, learn, -15, seed=0)
