"""Port of baselines/ddpg/test_smoke.py: the command line trains DDPG on Pendulum with
PopArt and with each kind of exploration noise.

Deliberate differences:
- Pendulum-v1 (gymnasium has no v0);
- Baselines ran ``--num_timesteps=0``, which built the agent and stopped (and its helper never
  checked the exit status). rlbase's CLI keeps 0 steps for playing a saved model
  (``--num_timesteps=0 --load_path=...``; without a model it is a usage error), and compiles
  its training call at the first update, so each run here takes 400 steps and trains from
  step 300 (a batch of 256 is there by then), then must exit with status 0.
"""

import pytest

from .util import smoketest

BUDGET = "--num_timesteps=400 --learning_starts=300 --no_progress"


def _run(argstr, log_dir):
    proc = smoketest(f"--alg=ddpg --env=Pendulum-v1 {BUDGET} {argstr}", str(log_dir))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "train/n_updates" in proc.stdout  # it logged a row after training


def test_popart(tmp_path):
    _run("--normalize_returns=True --popart=True", tmp_path)


@pytest.mark.slow
def test_noise_normal(tmp_path):
    _run("--noise_type=normal_0.1", tmp_path)


@pytest.mark.slow
def test_noise_ou(tmp_path):
    _run("--noise_type=ou_0.1", tmp_path)


@pytest.mark.slow
def test_noise_adaptive(tmp_path):
    _run("--noise_type=adaptive-param_0.2,normal_0.1", tmp_path)


def test_zero_timesteps_needs_a_model(tmp_path):
    """What Baselines' ``--num_timesteps=0`` run becomes: a one-line usage error."""
    proc = smoketest("--alg=ddpg --env=Pendulum-v1 --num_timesteps=0 --noise_type=normal_0.1",
                     str(tmp_path))
    assert proc.returncode == 2
    assert "--num_timesteps" in proc.stderr and "--load_path" in proc.stderr
