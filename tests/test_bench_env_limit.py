"""``python -m rlbase.bench env-limit``: the env alone, built as the CLI builds it."""

import json

import pytest

from rlbase.bench.__main__ import main
from rlbase.common.errors import RLBaseError


def test_steps_the_cli_env_with_random_actions(capsys):
    main(["env-limit", "--env=CartPole-v1", "--num_env=2", "--num_timesteps=400"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["env"], result["num_env"], result["timesteps"]) == ("CartPole-v1", 2, 400)
    assert result["vec_env"] == "DummyVecEnv"  # what the CLI steps 2 CartPoles with
    assert result["steps_per_s"] > 0
    # seconds are rounded to the millisecond: 5 us over 200 vectorized steps
    assert result["us_per_vector_step"] == pytest.approx(result["seconds"] / 200 * 1e6, abs=6)


def test_bad_counts_are_one_line_errors():
    with pytest.raises(RLBaseError, match="num_env must be at least 1, got 0"):
        main(["env-limit", "--env=CartPole-v1", "--num_env=0"])
    with pytest.raises(RLBaseError, match=r"num_timesteps must be at least num_env \(4\)"):
        main(["env-limit", "--env=CartPole-v1", "--num_env=4", "--num_timesteps=2"])
