"""Port of baselines/common/tests/test_fixed_sequence.py: with an LSTM policy A2C and PPO learn
a fixed sequence of 5 actions seen through a constant observation (50000 steps, seed 0; 70%
of 10000 stochastic steps rewarded).

ppo2 is rlbase's ``ppo`` (found through the registry's alias). Baselines left trpo_mpi out
of this test (its policies are feed-forward; rlbase's TRPO refuses recurrent networks too).
"""

import pytest

from rlbase.registry import get_algorithm

from .envs import FixedSequenceEnv
from .util import simple_test

COMMON_KWARGS = dict(seed=0, total_timesteps=50000)

LEARN_KWARGS = {
    "a2c": {},
    "ppo2": dict(nsteps=10, ent_coef=0.0, nminibatches=1),
}


@pytest.mark.slow
@pytest.mark.parametrize("alg", LEARN_KWARGS)
@pytest.mark.parametrize("rnn", ["lstm"])
def test_fixed_sequence(alg, rnn):
    """The recurrent state has to count the steps: the observation never changes."""
    kwargs = {**LEARN_KWARGS[alg], **COMMON_KWARGS}

    def learn(env):
        return get_algorithm(alg).learn(env=env, network=rnn, **kwargs)

    simple_test(lambda: FixedSequenceEnv(n_actions=10, episode_len=5), learn, 0.7)
