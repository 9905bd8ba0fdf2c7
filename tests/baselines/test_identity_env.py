"""Port of baselines/common/tests/envs/identity_env_test.py: the identity env's rewards and
episode ends, without and with a one-step delay (gymnasium's step: an episode ends with
``terminated``)."""

from .envs import DiscreteIdentityEnv


def test_discrete_nodelay():
    nsteps, eplen = 100, 50
    env = DiscreteIdentityEnv(10, episode_len=eplen)
    ob, _ = env.reset(seed=0)
    for t in range(nsteps):
        action = env.action_space.sample()
        next_ob, rew, terminated, truncated, _ = env.step(action)
        assert rew == (1 if action == ob else 0)
        assert not truncated
        if (t + 1) % eplen == 0:
            assert terminated
            next_ob, _ = env.reset()
        else:
            assert not terminated
        ob = next_ob


def test_discrete_delay1():
    eplen = 50
    env = DiscreteIdentityEnv(10, episode_len=eplen, delay=1)
    ob, _ = env.reset(seed=0)
    prev_ob = None
    terminated = False
    for t in range(eplen):
        action = env.action_space.sample()
        next_ob, rew, terminated, _, _ = env.step(action)
        # the reward answers the observation of the step before (the first one pays 0)
        assert rew == ((1 if action == prev_ob else 0) if t > 0 else 0)
        prev_ob, ob = ob, next_ob
        if t < eplen - 1:
            assert not terminated
    assert terminated
