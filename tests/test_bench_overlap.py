"""``python -m rlbase.bench overlap``: the serial and the overlapped Atari rollout step."""

import json

import pytest

from rlbase.bench.__main__ import main
from rlbase.common.errors import RLBaseError
from rlbase.common.vec_env.ale_vec_env import ale_vector_available

pytestmark = pytest.mark.skipif(not ale_vector_available(), reason="needs ale-py's vector env")


def test_times_both_orders_and_their_parts(capsys):
    main(["overlap", "--env=PongNoFrameskip-v4", "--num_env=2", "--steps=3", "--rounds=1"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["env"], result["num_env"], result["steps"]) == ("PongNoFrameskip-v4", 2, 3)
    for part in ("act_all", "act_half", "emulate", "serial", "overlapped"):
        assert result[f"{part}_ms"] > 0 and result[f"{part}_cores"] > 0
    assert result["overlap_speedup"] == pytest.approx(
        result["serial_ms"] / result["overlapped_ms"], rel=0.01)


@pytest.mark.parametrize("num_env", ["1", "3"])
def test_needs_two_equal_halves(num_env):
    with pytest.raises(RLBaseError, match=f"num_env must be an even number of at least 2 "
                                          f"\\(two halves\\), got {num_env}"):
        main(["overlap", f"--num_env={num_env}"])
