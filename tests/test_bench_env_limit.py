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


def test_default_budget_is_a_whole_step_count(capsys):
    # argparse does not pass a non-string default through type=: it must be an int already
    main(["env-limit", "--env=CartPole-v1", "--num_env=2"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["timesteps"] == 20_000 and isinstance(result["timesteps"], int)


def test_bad_counts_are_one_line_errors():
    with pytest.raises(RLBaseError, match="num_env must be at least 1, got 0"):
        main(["env-limit", "--env=CartPole-v1", "--num_env=0"])
    with pytest.raises(RLBaseError, match=r"num_timesteps must be at least num_env \(4\)"):
        main(["env-limit", "--env=CartPole-v1", "--num_env=4", "--num_timesteps=2"])


@pytest.mark.parametrize("text", ["nan", "inf", "-5", "0", "abc"])
def test_num_timesteps_not_a_positive_count_is_argparse_error(capsys, text):
    with pytest.raises(SystemExit) as stop:
        main(["env-limit", "--env=CartPole-v1", f"--num_timesteps={text}"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith(f"argument --num_timesteps: must be a positive number such as 2e5, "
                        f"at most 9.01e+15, got '{text}'")


def test_parse_count_reads_scientific_notation_and_refuses_non_counts():
    from rlbase.common.arg_types import parse_count

    assert parse_count("2e5", 1) == 200_000
    assert parse_count("0", 0) == 0
    assert [parse_count(t, 1) for t in ("0", "nan", "inf", "-1", "x", "")] == [None] * 6
