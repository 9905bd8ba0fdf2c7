"""Loading monitor/progress files and plotting them to a PNG."""

import json

import numpy as np
import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.logs import plot_util as pu


def _write_monitor(path, t_start, episodes, env_id="CartPole-v1"):
    lines = ["#" + json.dumps({"t_start": t_start, "env_id": env_id}), "r,l,t"]
    lines += [f"{r},{ln},{t}" for r, ln, t in episodes]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def runs(tmp_path):
    rng = np.random.default_rng(0)
    for seed in (0, 1):
        run = tmp_path / "cartpole" / f"ppo-{seed}"
        run.mkdir(parents=True)
        # two workers' files, interleaved in time, with different t_start
        _write_monitor(run / "0.monitor.csv", 1000.0,
                       [(float(rng.integers(10, 50)), 20, 0.5 + i) for i in range(12)])
        _write_monitor(run / "1.monitor.csv", 1000.25,
                       [(float(rng.integers(10, 50)), 30, 0.75 + i) for i in range(8)])
    prog = tmp_path / "other" / "a2c"
    prog.mkdir(parents=True)
    (prog / "progress.csv").write_text(
        "rollout/ep_rew_mean,time/total_timesteps\n10,100\n20,200\n25,300\n"
    )
    (tmp_path / "empty").mkdir()
    return tmp_path


def test_load_results(runs):
    results = pu.load_results(str(runs))
    names = [r.dirname.split("/")[-1] for r in results]
    assert names == ["ppo-0", "ppo-1", "a2c"]  # sorted by full path: cartpole/ before other/
    ppo0, _, a2c = results
    assert a2c.monitor is None and list(a2c.progress.columns) == [
        "rollout/ep_rew_mean", "time/total_timesteps"
    ]
    assert len(a2c.progress) == 3
    assert ppo0.progress is None
    assert list(ppo0.monitor.columns) == ["r", "l", "t"] and len(ppo0.monitor) == 20
    assert np.all(np.diff(ppo0.monitor["t"]) >= 0)  # merged and sorted by time
    assert ppo0.monitor["t"].iloc[0] == pytest.approx(0.5)
    assert ppo0.monitor["t"].iloc[1] == pytest.approx(1.0)  # 0.75 s after the later t_start
    assert ppo0.metadata == {"t_start": 1000.0, "env_id": "CartPole-v1"}


def test_load_results_options(runs):
    only_monitor = pu.load_results([runs / "cartpole", runs / "other"], enable_progress=False)
    assert [r.dirname.split("/")[-1] for r in only_monitor] == ["ppo-0", "ppo-1"]
    only_progress = pu.load_results(runs, enable_monitor=False)
    assert [r.dirname.split("/")[-1] for r in only_progress] == ["a2c"]
    with pytest.raises(RLBaseError, match="does not exist"):
        pu.load_results(runs / "missing")


def test_progress_json(tmp_path):
    (tmp_path / "progress.json").write_text('{"a": 1}\n{"a": 2, "b": 3}\n')
    (result,) = pu.load_results(tmp_path)
    assert list(result.progress["a"]) == [1, 2] and result.progress["b"].isna().iloc[0]


def test_smooth_and_window():
    y = np.array([0.0, 3.0, 6.0, 9.0])
    np.testing.assert_allclose(pu.smooth(y, 1), [1.5, 3.0, 6.0, 7.5])
    np.testing.assert_allclose(pu.smooth(y, 1, mode="causal"), [0.0, 1.5, 4.5, 7.5])
    np.testing.assert_allclose(pu.smooth(y, 0), y)
    assert np.isnan(pu.smooth(y, 1, valid_only=True)[[0, 3]]).all()
    x, m = pu.window_func(np.arange(4), y, 2, np.mean)
    np.testing.assert_allclose(x, [1, 2, 3])
    np.testing.assert_allclose(m, [1.5, 4.5, 7.5])
    with pytest.raises(RLBaseError, match="'both'"):
        pu.smooth(y, 1, mode="both")


def test_ema_of_constant_is_constant():
    x = np.sort(np.random.default_rng(1).uniform(0, 10, 50))
    xs, ys, _ = pu.symmetric_ema(x, np.full(50, 2.0), 0, 10, n=20)
    assert len(xs) == 20 and np.allclose(ys[~np.isnan(ys)], 2.0)
    _, ys1, _ = pu.one_sided_ema(x, np.full(50, 2.0), 0, 10, n=20)
    assert np.allclose(ys1[~np.isnan(ys1)], 2.0)


def test_default_group_fn(runs):
    groups = {pu.default_group_fn(r) for r in pu.load_results(runs / "cartpole")}
    assert groups == {"ppo"}


def test_plot_and_save(runs, tmp_path):
    results = pu.load_results(runs / "cartpole")
    _, axarr = pu.plot_results(results, average_group=True, resample=32, use_pyplot=False,
                               xlabel="timesteps", ylabel="return")
    assert axarr.shape == (1, 1)
    ax = axarr[0, 0]
    # each seed's episodes (faint) and their mean; std and stderr bands
    assert len(ax.lines) == 3 and len(ax.collections) == 2
    assert ax.get_xlabel() == "timesteps"

    png = tmp_path / "curves.png"
    assert pu.save_plot(results, png) == str(png)
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"

    split = tmp_path / "split.png"
    pu.save_plot(runs / "cartpole", split, split_fn=lambda r: r.dirname[-5:],
                 tiling="symmetric", legend_outside=True, resample=16)
    assert split.stat().st_size > 1000

    _, axarr = pu.plot_results(pu.load_results(runs / "other"), xy_fn=pu.progress_xy_fn(),
                                 split_fn=None, group_fn=None, use_pyplot=False)
    np.testing.assert_allclose(axarr[0, 0].lines[0].get_ydata(), [10, 20, 25])


def test_progress_xy_and_errors(runs, tmp_path):
    (a2c,) = pu.load_results(runs / "other")
    x, y = pu.progress_xy_fn()(a2c)
    np.testing.assert_allclose(x, [100, 200, 300])
    np.testing.assert_allclose(y, [10, 20, 25])
    with pytest.raises(RLBaseError, match=r"'nope'.*valid keys"):
        pu.progress_xy_fn(y_key="nope")(a2c)
    with pytest.raises(RLBaseError, match=r"no monitor\.csv"):
        pu.default_xy_fn(a2c)
    with pytest.raises(RLBaseError, match="no results"):
        pu.plot_results([])
    with pytest.raises(RLBaseError, match="'diagonal'"):
        pu.save_plot(runs / "cartpole", tmp_path / "x.png", tiling="diagonal")
