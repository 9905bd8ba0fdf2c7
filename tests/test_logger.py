"""The logger: every output format written and read back, means, configuration."""

import csv
import glob
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from rlbase.common.errors import RLBaseError
from rlbase.common.logs import logger


@pytest.fixture(autouse=True)
def clean_logger(monkeypatch):
    for var in ("RLBASE_LOGDIR", "RLBASE_LOG_FORMAT", "SB3_LOGDIR", "SB3_LOG_FORMAT",
                "OPENAI_LOGDIR", "OPENAI_LOG_FORMAT", "PMI_RANK", "PMI_SIZE",
                "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    logger.reset()
    yield
    logger.reset()


def test_default_logger_prints_to_stdout(capsys):
    assert logger.get_dir() is None
    logger.logkv("a", 1)
    logger.dumpkvs()
    assert "| a | 1 |" in capsys.readouterr().out


def test_human_table_sorted_compact_truncated(tmp_path, capsys):
    logger.configure(str(tmp_path), ["stdout", "log"])
    long_key = "train/" + "x" * 40
    logger.logkvs({"time/fps": 1234.5678, "rollout/ep_rew_mean": 0.000123456, long_key: 3})
    logger.dumpkvs()
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("|")]
    assert [line.split("|")[1].strip() for line in lines] == [
        "rollout/ep_rew_mean", "time/fps", "train/" + "x" * 27 + "..."
    ]
    assert "1.23e+03" in out and "0.000123" in out
    assert len({len(line) for line in lines}) == 1  # aligned
    logger.log("hello", 42)
    logger.reset()
    text = (tmp_path / "log.txt").read_text()
    assert "time/fps" in text and "hello 42" in text


def test_csv_with_key_added_later(tmp_path):
    logger.configure(str(tmp_path), ["csv"])
    logger.logkv("a", 1)
    logger.logkv("b", 2.5)
    logger.dumpkvs()
    logger.logkv("a", 3)
    logger.logkv("c", "x")
    logger.dumpkvs()
    logger.logkv("b", 4)
    logger.dumpkvs()
    logger.reset()
    with open(tmp_path / "progress.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [["a", "b", "c"], ["1", "2.5", ""], ["3", "", "x"], ["", "4", ""]]

    import pandas as pd

    table = pd.read_csv(tmp_path / "progress.csv")
    assert list(table.columns) == ["a", "b", "c"] and len(table) == 3


def test_json_lines(tmp_path):
    import numpy as np

    logger.configure(str(tmp_path), "json")
    logger.logkv("loss", np.float32(0.5))
    logger.logkv("step", np.int64(10))
    logger.dumpkvs()
    logger.logkv("loss", 0.25)
    logger.dumpkvs()
    logger.reset()
    lines = (tmp_path / "progress.json").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"loss": 0.5, "step": 10}, {"loss": 0.25}]


def _read_scalars(event_dir):
    import tensorflow as tf

    found = []
    for path in glob.glob(os.path.join(event_dir, "events.out.tfevents.*")):
        for record in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                plugin = value.metadata.plugin_data.plugin_name
                array = tf.make_ndarray(value.tensor)
                found.append((value.tag, event.step, float(array) if plugin == "scalars"
                              else (plugin, array.item())))
    return found


def test_tensorboard(tmp_path):
    logger.configure(str(tmp_path), ["tensorboard"])
    logger.logkv("train/loss", 0.5)
    logger.logkv("note", "text is TensorBoard text")
    logger.dumpkvs()
    logger.logkv("train/loss", 0.25)
    logger.logkv("time/total_timesteps", 4096)
    logger.dumpkvs()
    logger.reset()
    scalars = _read_scalars(str(tmp_path / "tb"))
    assert ("train/loss", 0, 0.5) in scalars
    assert ("train/loss", 4096, 0.25) in scalars
    assert ("time/total_timesteps", 4096, 4096.0) in scalars
    assert ("note", 0, ("text", b"text is TensorBoard text")) in scalars


def test_logkv_mean_and_return(tmp_path):
    logger.configure(str(tmp_path), [])
    for v in (1.0, 2.0, 6.0):
        logger.logkv_mean("m", v)
    logger.logkv("x", 7)
    assert logger.getkvs() == {"m": pytest.approx(3.0), "x": 7}
    assert logger.dumpkvs() == {"m": pytest.approx(3.0), "x": 7}
    assert logger.getkvs() == {}
    logger.logkv_mean("m", 10.0)  # a fresh mean after the dump
    assert logger.dump_tabular() == {"m": 10.0}
    logger.record_tabular("y", 1)
    assert logger.getkvs() == {"y": 1}


def test_levels(capsys):
    logger.set_level(logger.WARN)
    logger.info("hidden")
    logger.debug("hidden too")
    logger.warn("shown")
    logger.error("also shown")
    out = capsys.readouterr().out
    assert "hidden" not in out and "shown" in out and "also shown" in out
    logger.set_level(logger.INFO)


def test_configure_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("RLBASE_LOGDIR", str(tmp_path / "run"))
    monkeypatch.setenv("RLBASE_LOG_FORMAT", "json, csv")
    logger.configure()
    assert logger.get_dir() == str(tmp_path / "run")
    logger.logkv("a", 1)
    logger.dumpkvs()
    logger.reset()
    assert sorted(os.listdir(tmp_path / "run")) == ["progress.csv", "progress.json"]


def test_configure_default_dir_and_formats(capsys):
    current = logger.configure()
    try:
        name = os.path.basename(logger.get_dir())
        assert name.startswith("rlbase-") and len(name) == len("rlbase-2024-01-01-00-00-00-000000")
        kinds = sorted(type(f).__name__ for f in current.output_formats)
        assert kinds == ["CSVOutputFormat", "HumanOutputFormat", "HumanOutputFormat"]
        assert "Logging to" in capsys.readouterr().out
    finally:
        logger.reset()
        for name in os.listdir(current.dir):
            os.remove(os.path.join(current.dir, name))
        os.rmdir(current.dir)


def test_unknown_format(tmp_path):
    with pytest.raises(RLBaseError, match=r"'xml'.*stdout, log, json, csv, tensorboard"):
        logger.configure(str(tmp_path / "x"), ["stdout", "xml"])
    assert not (tmp_path / "x").exists()  # nothing created on a bad call
    assert logger.get_current() is logger.DEFAULT


def test_scoped_configure(tmp_path):
    outer = logger.configure(str(tmp_path / "outer"), ["csv"])
    with logger.scoped_configure(str(tmp_path / "inner"), ["json"]) as inner:
        assert logger.get_current() is inner
        logger.logkv("k", 1)
        logger.dumpkvs()
    assert logger.get_current() is outer
    logger.logkv("k", 2)
    logger.dumpkvs()
    logger.reset()
    assert (tmp_path / "inner" / "progress.json").read_text().strip() == '{"k": 1}'
    assert (tmp_path / "outer" / "progress.csv").read_text().split() == ["k", "2"]


def test_mpi_rank_above_zero(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PMI_RANK", "1")
    monkeypatch.setenv("PMI_SIZE", "2")
    logger.configure(str(tmp_path), ["stdout", "csv"])
    logger.logkv("a", 1)
    logger.dumpkvs()
    logger.reset()
    assert os.listdir(tmp_path) == ["progress-rank1.csv"]
    assert "| a" not in capsys.readouterr().out


def test_comm_weighted_mean(tmp_path):
    # Two ranks: this one and another whose (value, count) pairs are fixed.
    comm = SimpleNamespace(
        Get_size=lambda: 2,
        allgather=lambda obj: [obj, {"r": (4.0, 3), "name": ("other", 1)}],
    )
    logger.configure(str(tmp_path), [], comm=comm)
    logger.logkv_mean("r", 0.0)  # mean 0 over 1 value here, mean 4 over 3 values there
    logger.logkv("name", "me")
    assert logger.dumpkvs() == {"r": pytest.approx(3.0), "name": "me"}


def test_rlbase_logger_is_the_same_module():
    import rlbase.logger

    from rlbase import logger as top

    assert rlbase.logger is logger and top is logger


def test_configure_takes_baselines_and_sb3_arguments(tmp_path):
    # Baselines: positional or dir/format_strs; sets the current logger
    logger.configure(str(tmp_path / "a"), ["csv"])
    assert logger.get_dir() == str(tmp_path / "a")
    logger.configure(dir=str(tmp_path / "b"), format_strs=["csv"])
    assert logger.get_dir() == str(tmp_path / "b")
    # SB3: folder/format_strings, and the logger is returned
    new = logger.configure(folder=str(tmp_path / "c"), format_strings=["json"])
    assert new is logger.get_current() and new.get_dir() == str(tmp_path / "c")
    assert [type(f) for f in new.output_formats] == [logger.JSONOutputFormat]
    with pytest.raises(RLBaseError, match="give the folder once"):
        logger.configure(str(tmp_path), dir=str(tmp_path))
    with pytest.raises(RLBaseError, match="give the formats once"):
        logger.configure(format_strings=["csv"], format_strs=["csv"])


def test_openai_and_sb3_variables_are_aliases(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_LOGDIR", str(tmp_path / "openai"))
    monkeypatch.setenv("OPENAI_LOG_FORMAT", "json")
    new = logger.configure()
    assert new.get_dir() == str(tmp_path / "openai")
    assert [type(f) for f in new.output_formats] == [logger.JSONOutputFormat]
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path / "sb3"))
    assert logger.configure().get_dir() == str(tmp_path / "sb3")
    monkeypatch.setenv("RLBASE_LOGDIR", str(tmp_path / "rlbase"))  # rlbase's own wins
    monkeypatch.setenv("RLBASE_LOG_FORMAT", "csv")
    new = logger.configure()
    assert new.get_dir() == str(tmp_path / "rlbase")
    assert [type(f) for f in new.output_formats] == [logger.CSVOutputFormat]


def test_dump_step_and_exclude(tmp_path):
    new = logger.configure(str(tmp_path), ["csv", "tensorboard"])
    new.record("a", 1.0)
    new.record("b", 2.0, exclude="csv")
    new.dump(step=123)  # SB3: the step given
    new.record_mean("a", 2.0)
    new.record_mean("a", 4.0)
    new.record("time/total_timesteps", 50)
    logger.dumpkvs()  # Baselines: the step logged under time/total_timesteps
    logger.reset()
    assert (tmp_path / "progress.csv").read_text().splitlines() == [
        "a,time/total_timesteps", "1.0,", "3.0,50"]
    assert sorted(_read_scalars(str(tmp_path / "tb"))) == [
        ("a", 50, 3.0), ("a", 123, 1.0), ("b", 123, 2.0), ("time/total_timesteps", 50, 50.0)]


def test_stdout_rows_go_through_tqdm_write(monkeypatch, capsys):
    import tqdm

    written = []
    monkeypatch.setattr(tqdm.tqdm, "write",
                        classmethod(lambda cls, s, file=None, end="\n", nolock=False:
                                    written.append(s)))
    with tqdm.tqdm(total=10, file=sys.stderr) as bar:
        bar.update(3)
        logger.logkv("time/fps", 100)
        logger.dumpkvs()
        logger.log("a line")
    assert "| time/fps | 100 |" in written[0] and written[1] == "a line\n"
    assert capsys.readouterr().out == ""  # nothing printed past the bar


def _learn_dumps(cls, **kwargs):
    class CountingLogger(logger.Logger):
        dumps = 0

        def dump(self, step=0):
            CountingLogger.dumps += 1
            super().dump(step)

    model = cls("MlpPolicy", "CartPole-v1", **kwargs)
    model.set_logger(CountingLogger(None, []))
    model.learn(kwargs["n_steps"] * 3)
    return CountingLogger.dumps


def test_class_log_interval_defaults():
    from rlbase import A2C, PPO

    assert _learn_dumps(PPO, n_steps=32, batch_size=32, n_epochs=1) == 3  # every update
    assert _learn_dumps(A2C, n_steps=5) == 2  # every 100 updates: the first and the last


def test_verbose_two_shows_debug_lines(capsys):
    verbose1 = logger.configure_logger(verbose=1)
    verbose2 = logger.configure_logger(verbose=2)
    for each in (verbose1, verbose2):
        each.debug("debug line")
    assert capsys.readouterr().out == "debug line\n"


def test_import_and_model_print_nothing_on_stderr():
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "RLBASE_TF_VERBOSE")}
    code = ("import rlbase, os; import rlbase.ppo.ppo; rlbase.PPO('MlpPolicy', 'CartPole-v1'); "
            "print(os.environ['TF_CPP_MIN_LOG_LEVEL'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout == "2\n"
    # a level the user set is kept
    proc = subprocess.run([sys.executable, "-c", "import rlbase, os; "
                           "print(os.environ['TF_CPP_MIN_LOG_LEVEL'])"],
                          capture_output=True, text=True, env={**env, "TF_CPP_MIN_LOG_LEVEL": "1"},
                          timeout=60)
    assert proc.stdout == "1\n"


def test_start_up_filter_keeps_other_lines(capfd):
    from rlbase.common.quiet_import import stderr_without_chatter

    with stderr_without_chatter():
        os.write(2, b"WARNING: All log messages before absl::InitializeLog() is called are "
                    b"written to STDERR\nI0000 00:00:1.5 7019 port.cc:153] oneDNN custom "
                    b"operations are on. You may see...\nE0000 cuda_platform.cc:52] failed "
                    b"call to cuInit: INTERNAL\nsomething real went wrong\n")
        os.write(2, b"W0000 a real TensorFlow warning\n")
    assert capfd.readouterr().err == "something real went wrong\nW0000 a real TensorFlow warning\n"


def test_cli_reads_the_aliases_too(tmp_path, monkeypatch):
    from rlbase.run import log_formats

    monkeypatch.setenv("OPENAI_LOGDIR", str(tmp_path / "openai"))
    monkeypatch.setenv("OPENAI_LOG_FORMAT", "csv,json")
    args = SimpleNamespace(log_format=None, log_path=None)
    assert log_formats(args) == ["csv", "json"] and args.log_path == str(tmp_path / "openai")
    monkeypatch.setenv("RLBASE_LOGDIR", str(tmp_path / "rlbase"))
    args = SimpleNamespace(log_format=None, log_path=None)
    log_formats(args)
    assert args.log_path == str(tmp_path / "rlbase")
