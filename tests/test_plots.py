"""Every plot rlbase draws, rendered to PNG from tiny runs and read back from its matplotlib
Figure: axis labels with units, a title naming the algorithm and env, seeds of one algorithm
and env as one curve with its spread (the legend says mean and which band), raw episodes
faint under the smoothed curve. The five paths: the CLI's --save_plots, ``rlbase plot``,
``plot_util.plot_results``, the bench report, rlib's ``save_plots``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from rlbase.common.logs import curves
from rlbase.common.logs import plot_util as pu

pytest.importorskip("matplotlib")

STEPS, RETURN = "environment steps", "episode return (sum of env rewards)"


@pytest.fixture
def figures(monkeypatch):
    """Every figure curves.save_figure writes, kept for inspection (after it is written)."""
    saved = []
    original = curves.save_figure

    def keep(fig, path, dpi=100):
        out = original(fig, path, dpi)
        with open(out, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
        saved.append(fig)
        return out

    monkeypatch.setattr(curves, "save_figure", keep)
    return saved


def legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def faint(ax):
    return [line for line in ax.lines if (line.get_alpha() or 1.0) < 0.5]


def write_run(folder, seed, env_id="CartPole-v1", episodes=30, meta=None, result=None):
    """A run folder: a monitor file of ``episodes`` episodes (returns rising with noise), and
    optionally the CLI's metadata.json or the bench's result.json."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    lengths = rng.integers(10, 40, episodes)
    returns = np.linspace(10, 100, episodes) + rng.normal(0, 10, episodes)
    rows = "\n".join(f"{r:.2f},{n},{i * 0.1:.2f}" for i, (r, n) in enumerate(zip(returns,
                                                                                    lengths)))
    (folder / "0.monitor.csv").write_text(
        "#" + json.dumps({"t_start": 0.0, "env_id": env_id}) + "\nr,l,t\n" + rows + "\n")
    if meta is not None:
        (folder / "metadata.json").write_text(json.dumps(meta))
    if result is not None:
        (folder / "result.json").write_text(json.dumps(result))
    return folder


def check_seed_curve(ax, alg, n_seeds, env="CartPole-v1"):
    assert ax.get_xlabel() == STEPS and ax.get_ylabel() == RETURN
    assert ax.get_title() == f"{alg} on {env}"
    assert legend(ax) == [f"{alg} (episodes)", f"{alg} (mean of {n_seeds} seeds)",
                          f"{alg} (±1 s.e. across seeds)", f"{alg} (±1 std across seeds)"]
    raw = faint(ax)
    assert len(raw) == n_seeds  # each seed's episodes, faint
    (mean,) = [line for line in ax.lines if line not in raw]
    assert len(mean.get_xdata()) == 512 and np.isfinite(mean.get_ydata()).all()  # a line
    assert len(ax.collections) == 2  # the two bands


# ---- rlbase plot RUN_s0 RUN_s1 ----------------------------------------------------------------


@pytest.mark.parametrize("style", ["bench", "suffix", "cli"])
def test_rlbase_plot_draws_seeds_of_one_run_as_one_curve(tmp_path, figures, style):
    """Before: bench runs were two algorithms ``v1__s0 (1)``, ``v1__s1 (1)``, no axis labels,
    and the 2-seed mean was dots with a numpy 'Mean of empty slice' warning."""
    from rlbase.cli import main

    dirs = []
    for seed in (0, 1):
        if style == "bench":  # rlbase.bench suite's runs/<name>__<env>__s<seed>, result.json
            d = write_run(tmp_path / f"ppo__CartPole-v1__s{seed}", seed,
                          result={"name": "ppo", "alg": "ppo", "env": "CartPole-v1",
                                  "seed": seed})
        elif style == "suffix":  # only the folder says the seed
            d = write_run(tmp_path / f"ppo_s{seed}", seed)
        else:  # the CLI's --log_path metadata.json
            d = write_run(tmp_path / f"run{seed}", seed,
                          meta={"algorithm": "ppo", "env_id": "CartPole-v1", "seed": seed})
        dirs.append(str(d))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        main(["plot", *dirs, f"--out={tmp_path / 'c.png'}"])
    (fig,) = figures
    (ax,) = fig.axes
    check_seed_curve(ax, "ppo", 2)


def test_rlbase_plot_of_one_folder_groups_by_algorithm(tmp_path, figures):
    from rlbase.cli import main

    for alg in ("a2c", "ppo"):
        for seed in (0, 1, 2):
            write_run(tmp_path / "runs" / f"{alg}__CartPole-v1__s{seed}", seed,
                      result={"name": alg, "env": "CartPole-v1", "seed": seed})
    main(["plot", str(tmp_path / "runs"), f"--out={tmp_path / 'c.png'}"])
    (ax,) = figures[0].axes
    assert ax.get_title() == "a2c, ppo on CartPole-v1"
    assert [t for t in legend(ax) if "mean" in t] == ["a2c (mean of 3 seeds)",
                                                      "ppo (mean of 3 seeds)"]


def test_rlbase_plot_of_a_progress_key_labels_it(tmp_path, figures):
    from rlbase.cli import main

    run = write_run(tmp_path / "log", 0, meta={"algorithm": "her", "env_id": "FetchReach-v4",
                                               "seed": 3})
    (run / "progress.csv").write_text("time/total_timesteps,rollout/success_rate\n"
                                      "100,0.1\n200,0.5\n300,0.9\n")
    main(["plot", str(run), "--y=rollout/success_rate", f"--out={tmp_path / 'c.png'}"])
    (ax,) = figures[0].axes
    assert ax.get_xlabel() == STEPS
    assert ax.get_ylabel() == "success rate of the last 100 episodes (0-1) " \
                              "[rollout/success_rate]"
    assert ax.get_title() == "her on FetchReach-v4" and legend(ax) == ["her"]


# ---- the CLI's --save_plots ------------------------------------------------------------------


def test_cli_save_plots_labels_title_and_raw_episodes(tmp_path, figures):
    from rlbase.run import main

    main(["--alg=a2c", "--env=CartPole-v1", "--num_timesteps=800", "--num_env=2", "--seed=0",
          f"--log_path={tmp_path}", "--save_plots", "--no_progress"])
    (fig,) = figures
    (ax,) = fig.axes
    assert (tmp_path / "learning_curves.png").stat().st_size > 1000
    assert ax.get_xlabel() == STEPS and ax.get_ylabel() == RETURN
    assert ax.get_title() == "a2c on CartPole-v1, seed 0"
    assert legend(ax) == ["a2c (episodes)", "a2c (smoothed)"]
    (raw,) = faint(ax)
    (episodes,) = pu.load_results(tmp_path)
    np.testing.assert_allclose(raw.get_ydata(), episodes.monitor["r"])


# ---- plot_util.plot_results --------------------------------------------------------------------


def test_plot_results_labels_axes_and_titles_panels_with_env(tmp_path):
    """Before: no axis labels, and the panel's title was the algorithm ('ppo')."""
    for seed in (0, 1):
        write_run(tmp_path / f"ppo-{seed}", seed, meta={"algorithm": "ppo",
                                                         "env_id": "CartPole-v1"})
    results = pu.load_results(tmp_path)
    fig, axarr = pu.plot_results(results, use_pyplot=False)  # Baselines' defaults
    ax = axarr[0, 0]
    assert ax.get_xlabel() == STEPS and ax.get_ylabel() == RETURN
    assert ax.get_title() == "ppo on CartPole-v1"
    assert legend(ax) == ["ppo (episodes)", "ppo (smoothed)"]  # each run, one legend entry
    assert len(faint(ax)) == 2 and len(ax.lines) == 4
    fig, axarr = pu.plot_results(results, average_group=True, use_pyplot=False)
    check_seed_curve(axarr[0, 0], "ppo", 2)
    png = tmp_path / "c.png"
    pu.save_plot(results, png, average_group=True)
    assert png.stat().st_size > 1000


def test_averaging_seeds_that_do_not_overlap_draws_a_line(tmp_path):
    a = curves.episode_series([10, 20, 30], [1.0, 2.0, 3.0], seed=0)
    b = curves.episode_series([40, 50, 60], [4.0, 5.0, 6.0], seed=1)
    grid, ys = curves.common_grid([a, b], 7)
    np.testing.assert_allclose(grid, [10, 18.333333, 26.666667, 35, 43.333333, 51.666667, 60],
                               rtol=1e-6)
    assert np.isfinite(ys).all() and ys.shape == (2, 7)


# ---- the bench report ------------------------------------------------------------------------


def test_bench_report_plots_name_env_and_algorithms(tmp_path, figures):
    from rlbase.bench import report
    from rlbase.bench.intervals import write_profile_plot

    for alg in ("a2c", "ppo"):
        for seed in (0, 1):
            write_run(tmp_path / "runs" / f"{alg}__CartPole-v1__s{seed}", seed,
                      result={"name": alg, "env": "CartPole-v1", "seed": seed})
    (path,) = report.write_plots(str(tmp_path), [{"env": "CartPole-v1"}])
    assert path.endswith("curves_CartPole-v1.png")
    (ax,) = figures[0].axes
    assert ax.get_xlabel() == STEPS and ax.get_ylabel() == f"training {RETURN}"
    assert ax.get_title() == "a2c, ppo on CartPole-v1"
    assert [t for t in legend(ax) if "mean" in t] == ["a2c (mean of 2 seeds)",
                                                      "ppo (mean of 2 seeds)"]
    assert len(faint(ax)) == 4 and len(ax.collections) == 4  # 2 seeds' episodes, 2 bands each

    entries = [{"name": alg, "timesteps": 1000, "envs": ["CartPole-v1"], "seeds": [0, 1],
                "matrix": np.array([[0.2 + k], [0.5 + k]])} for k, alg in enumerate(("a", "b"))]
    write_profile_plot(entries, str(tmp_path / "profile.png"))
    (ax,) = figures[1].axes
    assert ax.get_title() == "performance profile: a, b on CartPole-v1"
    assert ax.get_xlabel().startswith("normalized score tau")
    assert "a (95% stratified bootstrap interval)" in legend(ax)



def test_committed_runs_gzipped_monitors_are_read_once(tmp_path, figures):
    """Committed results keep their monitor files gzipped (``0.monitor.csv.gz``): the report's
    curves read them (they found no monitor file before), the same episodes as the plain file,
    and a plain file beside its .gz copy is read once."""
    import gzip
    import shutil

    from rlbase.bench import report

    for seed in (0, 1):
        write_run(tmp_path / "runs" / f"a2c__CartPole-v1__s{seed}", seed,
                  result={"name": "a2c", "env": "CartPole-v1", "seed": seed})
    plain = tmp_path / "runs" / "a2c__CartPole-v1__s0"
    (monitor,) = plain.glob("*monitor.csv")
    before = pu.load_monitor(plain)[1]
    with open(monitor, "rb") as f, gzip.open(str(monitor) + ".gz", "wb") as g:
        shutil.copyfileobj(f, g)
    assert pu.monitor_paths(plain) == [str(monitor)]  # the plain one, not both
    packed = tmp_path / "runs" / "a2c__CartPole-v1__s1"
    for path in packed.glob("*monitor.csv"):
        with open(path, "rb") as f, gzip.open(str(path) + ".gz", "wb") as g:
            shutil.copyfileobj(f, g)
        path.unlink()
    monitor.unlink()
    after = pu.load_monitor(plain)[1]  # from the .gz alone now
    assert after.equals(before) and len(after) == 30
    (path,) = report.write_plots(str(tmp_path), [{"env": "CartPole-v1"}])
    (ax,) = figures[0].axes
    assert [t for t in legend(ax) if "mean" in t] == ["a2c (mean of 2 seeds)"]
    assert len(faint(ax)) == 2


# ---- rlib's save_plots -----------------------------------------------------------------------


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_rlib_records_every_episode_at_its_own_step(in_tmp, figures):
    """rlib.md's PPO example, shrunk: one iteration of 8 envs x 128 steps, episodes cut at 5
    steps (CartPole cannot fail sooner), so each env ends 25 episodes, at env steps 40, 80,
    ..., 1000 (8 envs x 5 steps each). Before: 100 recorded (the loop's window), all at
    x=1024 (the iteration's end)."""
    from rlbase.compat.rlib import PPO

    ppo = PPO({"id": "CartPole-v1"}, {"hidden_sizes": [8]}, {"hidden_sizes": [8]},
              batch_size=256, num_steps_per_iter=128, num_updates_per_iter=1,
              total_timesteps=1024, num_envs=8, max_episode_length=5, num_test_agents=1,
              test_every=1024, seed=42)
    ppo.verbose = False
    ppo.train()
    rows = np.array(ppo.train_episodes)
    steps, lengths = rows[:, 0], rows[:, 2]
    assert len(rows) == 200 and np.all(lengths == 5)
    np.testing.assert_array_equal(steps, 40 * (np.arange(200) // 8 + 1))
    ppo.save_plots()
    rewards, lengths_fig, tests = figures
    ax = rewards.axes[0]
    assert ax.get_xlabel() == STEPS and ax.get_ylabel() == f"training {RETURN}"
    assert ax.get_title() == "PPO on CartPole-v1, seed 42"
    assert legend(ax) == ["PPO (episodes)", "PPO (smoothed)"]
    (raw,) = faint(ax)
    np.testing.assert_array_equal(raw.get_xdata(), steps)
    assert lengths_fig.axes[0].get_ylabel() == "training episode length (env steps)"
    ax = tests.axes[0]
    assert ax.get_xlabel() == STEPS and ax.get_ylabel() == f"test {RETURN}"
    assert legend(ax) == ["PPO (test: mean of 1 episode, greedy)",
                          "PPO (±1 std over the test's 1 episode)"]


def test_rlib_evolution_strategy_plots_each_generation_mean_and_spread(in_tmp, figures):
    """Before: a comb, each generation's 30 episodes joined by one line at one x."""
    from rlbase.compat.rlib import EvolutionStrategy

    es = EvolutionStrategy({"id": "CartPole-v1"}, {"hidden_sizes": [4]}, num_agents=6,
                           num_iterations=3, test_every=3, num_test_episodes=1,
                           max_episode_length=20, verbose=False)
    es.train()
    assert es.train_iterations == [1] * 6 + [2] * 6 + [3] * 6
    steps = np.array(es.train_episodes)[:, 0]
    assert len(set(steps)) == 18  # each episode at its own step
    es.save_plots()
    ax = figures[0].axes[0]
    assert ax.get_title() == "EvolutionStrategy on CartPole-v1, seed 42"
    assert ax.get_xlabel() == STEPS and ax.get_ylabel() == f"training {RETURN}"
    assert sorted(legend(ax)) == sorted(["EvolutionStrategy (episodes)",
                                         "EvolutionStrategy (mean per generation)",
                                         "EvolutionStrategy (±1 std within each generation)"])
    (mean,) = ax.lines
    assert len(mean.get_xdata()) == 3  # one point per generation
    np.testing.assert_allclose(mean.get_ydata(), [np.mean(np.array(es.train_episodes)[i:i + 6,
                                                                                     1])
                                                  for i in (0, 6, 12)])
    assert ax.collections[0].get_alpha() < 0.5  # the episodes, faint
