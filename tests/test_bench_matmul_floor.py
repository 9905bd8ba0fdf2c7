"""``python -m rlbase.bench matmul-floor``: the products of a DDPG/TD3 gradient step alone."""

import json

import pytest

from rlbase.bench.__main__ import main
from rlbase.bench.matmul_floor import flop, measure, mlp_products, step_products
from rlbase.common.errors import RLBaseError


def test_mlp_products_by_hand():
    # 5 rows through 2 -> 3 -> 1
    assert mlp_products(5, [2, 3, 1]) == {
        "forward": [(5, 2, 3), (5, 3, 1)], "weights": [(2, 5, 3), (3, 5, 1)],
        "inputs": [(5, 1, 3)], "first_input": [(5, 3, 2)]}


def test_td3_at_the_zoo_pendulum_settings_is_0_715_gflop_per_step():
    critic, actor = step_products(256, 3, 1, [400, 300], twin_q=True)
    # multiply-adds per row: critic forward 4*400 + 400*300 + 300 = 121,900; actor 121,500
    c, a = 121_900, 121_500
    critic_by_hand = a + 2 * c + 2 * (c + c + (400 * 300 + 300))
    actor_by_hand = a + c + (400 * 300 + 300) + 4 * 400 + a + (400 * 300 + 300)
    assert flop(critic) == 2 * 256 * critic_by_hand
    assert flop(actor) == 2 * 256 * actor_by_hand
    assert (flop(critic) + flop(actor) / 2) / 1e9 == pytest.approx(0.715, abs=0.001)
    # one critic (DDPG): the target and the trained critic once each
    ddpg_critic, _ = step_products(256, 3, 1, [400, 300], twin_q=False)
    assert flop(ddpg_critic) == 2 * 256 * (a + c + (c + c + (400 * 300 + 300)))


def test_measures_a_small_step(capsys):
    main(["matmul-floor", "--hidden=16,8", "--batch=4", "--steps=4", "--repeats=2"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    critic, actor = step_products(4, 3, 1, [16, 8], twin_q=True)
    assert result["gflop_per_step"] == pytest.approx((flop(critic) + flop(actor) / 2) / 1e9,
                                                     rel=1e-5)
    for part in ("products", "with_updates"):
        assert 0 < result[f"{part}_min_ms_per_step"] <= result[f"{part}_ms_per_step"]
    assert result["products_gflops"] == pytest.approx(
        result["gflop_per_step"] / result["products_ms_per_step"] * 1e3, rel=0.02)


@pytest.mark.parametrize("kwargs, message", [
    (dict(batch=0), "batch must be at least 1, got 0"),
    (dict(policy_delay=0), "policy_delay must be at least 1, got 0"),
    (dict(hidden=()), r"hidden must be one or more layer widths of at least 1, got \[\]"),
])
def test_bad_values_are_one_line_errors(kwargs, message):
    with pytest.raises(RLBaseError, match=message):
        measure(**kwargs)


def test_bad_widths_at_the_command_line():
    with pytest.raises(RLBaseError, match="hidden must be comma-separated layer widths such "
                                          "as 400,300, got '400x300'"):
        main(["matmul-floor", "--hidden=400x300"])
