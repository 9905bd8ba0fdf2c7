"""rlbase export from the command line, and exported policies run by processes that never
import rlbase (only TensorFlow, gymnasium and numpy)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

import rlbase
from rlbase.common.errors import RLBaseError
from tests.test_export import record

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}

# Runs a SavedModel on saved observations, or balances CartPole with it; fails if anything
# imported rlbase.
FRESH = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorflow as tf

    act = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
    if sys.argv[2] == "actions":
        obs = np.load(sys.argv[3])
        np.save(sys.argv[4], act(obs=obs)["actions"].numpy())
    else:
        import gymnasium as gym
        env = gym.make("CartPole-v1")
        returns = []
        for episode in range(3):
            obs, _ = env.reset(seed=episode)
            done, total = False, 0.0
            while not done:
                action = int(act(obs=obs[None].astype(np.float32))["actions"][0])
                obs, reward, terminated, truncated, _ = env.step(action)
                total += reward
                done = terminated or truncated
            returns.append(total)
        print(min(returns))
    assert "rlbase" not in sys.modules, "the exported policy needed rlbase"
""")


def run_fresh(tmp_path, *args: str) -> str:
    script = tmp_path / "fresh.py"
    script.write_text(FRESH)
    # -I: no PYTHONPATH, no current folder: rlbase's sources are out of reach
    proc = subprocess.run([sys.executable, "-I", str(script), *args], capture_output=True,
                          text=True, timeout=300, env=ENV, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_cli_exports_and_a_fresh_process_acts_as_predict(tmp_path):
    """``rlbase export`` on a saved file (a subprocess, as a user runs it); a process that
    never imports rlbase gets predict's actions from the SavedModel."""
    model = rlbase.PPO("MlpPolicy", "CartPole-v1", seed=3)
    model.save(tmp_path / "m.zip")
    out = tmp_path / "sm"
    proc = subprocess.run([sys.executable, "-m", "rlbase.cli", "export",
                           f"--load_path={tmp_path / 'm.zip'}", "--format=saved_model",
                           f"--out={out}"], capture_output=True, text=True, timeout=300,
                          env=ENV)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"exported ppo's mlp policy to {out}" in proc.stdout
    obs = record(gym.make("CartPole-v1"), 1000)
    np.save(tmp_path / "obs.npy", obs)
    run_fresh(tmp_path, str(out), "actions", str(tmp_path / "obs.npy"),
              str(tmp_path / "actions.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "actions.npy"),
                                  model.predict(obs, deterministic=True)[0])


def test_cli_mistakes_are_one_line(tmp_path):
    from rlbase.cli import main

    with pytest.raises(RLBaseError, match="does not exist|no such|not found"):
        main(["export", f"--load_path={tmp_path / 'none.zip'}", f"--out={tmp_path / 'x'}"])
    with pytest.raises(SystemExit) as exit_info:  # argparse: usage line, status 2
        main(["export", "--load_path=m.zip", "--format=pb", f"--out={tmp_path / 'x'}"])
    assert exit_info.value.code == 2


@pytest.mark.slow
def test_trained_ppo_savedmodel_balances_the_pole_without_rlbase(tmp_path):
    """PPO trained by the CLI's CartPole defaults (1e5 steps, ~40 s here), exported: a process
    without rlbase balances the pole for the whole 500 steps in each of 3 episodes."""
    model_path = tmp_path / "ppo.zip"
    proc = subprocess.run([sys.executable, "-m", "rlbase.run", "--alg=ppo", "--env=CartPole-v1",
                           "--num_timesteps=1e5", "--seed=0", f"--save_path={model_path}",
                           f"--log_path={tmp_path / 'log'}"], capture_output=True, text=True,
                          timeout=900, env=ENV)
    assert proc.returncode == 0, proc.stderr[-2000:]
    exported = rlbase.registry.load(str(model_path)).export(str(tmp_path / "sm"))
    assert float(run_fresh(tmp_path, exported, "balance").strip()) == 500.0
