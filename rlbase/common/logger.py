"""Key-value and text logging for training runs (the Baselines logger API).

Typical use::

    from rlbase.common import logger
    logger.configure("/tmp/run", ["stdout", "csv", "tensorboard"])
    logger.logkv("time/total_timesteps", 2048)
    logger.logkv_mean("rollout/ep_rew_mean", 21.5)
    logger.dumpkvs()

Output formats: ``stdout`` and ``log`` (an aligned table, on the terminal or in ``log.txt``),
``json`` (``progress.json``, one object per line), ``csv`` (``progress.csv``) and
``tensorboard`` (event files under ``tb/``). Until :func:`configure` is called, a default logger
prints to stdout only.
"""

from __future__ import annotations

import contextlib
import csv
import datetime
import json
import numbers
import os
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

from rlbase.common.errors import RLBaseError

DEBUG = 10
INFO = 20
WARN = 30
ERROR = 40
DISABLED = 50

FORMATS = ("stdout", "log", "json", "csv", "tensorboard")
DEFAULT_FORMATS = "stdout,log,csv"
LOGDIR_ENV = "RLBASE_LOGDIR"
FORMAT_ENV = "RLBASE_LOG_FORMAT"

_MAX_WIDTH = 30  # keys and values longer than this are cut in the human-readable table
STEP_KEY = "time/total_timesteps"  # what a resumed run's files are cut by (truncate_after)

_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    """One ``rlbase: warning:`` line on stderr, the first time ``key`` is warned about (a full
    disk must not print a line per log row)."""
    if key not in _warned:
        _warned.add(key)
        print(f"rlbase: warning: {message}", file=sys.stderr, flush=True)


def cut_file(path: str, keep_lines: int) -> None:
    """Keep the first ``keep_lines`` lines of ``path``, in place: a file held open in append
    mode by a writer goes on at the new end."""
    with open(path, "rb") as f:
        lines = f.readlines()
    if keep_lines < len(lines):
        os.truncate(path, sum(len(line) for line in lines[:keep_lines]))


def _read_lines(path: str) -> list[str]:
    """The lines of ``path`` split as :func:`cut_file` counts them (at ``\\n`` only)."""
    with open(path, "rb") as f:
        return [line.decode("utf-8", "replace").rstrip("\r\n") for line in f]


def _past(value: str, steps: int) -> bool:
    """Whether a logged ``time/total_timesteps`` value is past ``steps``."""
    try:
        return float(value) > steps
    except ValueError:
        return False


# --- output formats ---------------------------------------------------------------------------


class KVWriter:
    """An output that receives one dict of key-values per dump."""

    path = ""  # the file or folder it writes (warnings name it)

    def writekvs(self, kvs: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release files or writers held by this output."""

    def truncate_after(self, steps: int) -> None:
        """Drop what was written for ``time/total_timesteps`` past ``steps`` (a resumed run
        rewrites those rows); outputs without rows to drop do nothing."""


class SeqWriter:
    """An output that receives free-form text lines from :func:`log`."""

    def writeseq(self, seq: Sequence[Any]) -> None:
        raise NotImplementedError


def _format_value(val: Any) -> str:
    """Compact text for a value: 3 significant digits for floats, ints in full."""
    if isinstance(val, bool):
        return str(val)
    if isinstance(val, numbers.Integral):
        return str(int(val))
    if isinstance(val, numbers.Real):
        return f"{float(val):.3g}"
    return str(val)


def _truncate(text: str) -> str:
    return text if len(text) <= _MAX_WIDTH else text[: _MAX_WIDTH - 3] + "..."


class HumanOutputFormat(KVWriter, SeqWriter):
    """An aligned two-column table, on stdout or in a text file.

    :param target: a file path, an open text file, or ``None`` for whatever ``sys.stdout`` is at
        write time (so redirections made after configure still apply).
    :param append: add to an existing file (a resumed run) instead of replacing it.
    """

    def __init__(self, target: str | os.PathLike[str] | IO[str] | None = None,
                 append: bool = False) -> None:
        self._owns_file = isinstance(target, (str, os.PathLike))
        self.path = os.fspath(target) if isinstance(target, (str, os.PathLike)) else "stdout"
        mode = "a" if append else "w"
        self._file: IO[str] | None = (
            open(target, mode) if isinstance(target, (str, os.PathLike))  # noqa: SIM115
            else target)

    @property
    def file(self) -> IO[str]:
        return self._file if self._file is not None else sys.stdout

    def writekvs(self, kvs: Mapping[str, Any]) -> None:
        if not kvs:
            return
        rows = [(_truncate(str(k)), _truncate(_format_value(v))) for k, v in kvs.items()]
        rows.sort(key=lambda row: row[0].lower())
        key_w = max(len(k) for k, _ in rows)
        val_w = max(len(v) for _, v in rows)
        rule = "-" * (key_w + val_w + 7)
        lines = [rule]
        lines += [f"| {k:<{key_w}} | {v:<{val_w}} |" for k, v in rows]
        lines.append(rule)
        self.file.write("\n".join(lines) + "\n")
        self.file.flush()

    def writeseq(self, seq: Sequence[Any]) -> None:
        self.file.write(" ".join(str(x) for x in seq) + "\n")
        self.file.flush()

    def close(self) -> None:
        if self._owns_file and self._file is not None:
            self._file.close()
            self._file = None

    def truncate_after(self, steps: int) -> None:
        """Cut the file at the first table whose ``time/total_timesteps`` is past ``steps``
        (with the text lines after it)."""
        if not self._owns_file or self._file is None:
            return
        self._file.flush()
        lines = _read_lines(self._file.name)
        start, inside = 0, False
        for i, line in enumerate(lines):
            if line.startswith("-") and set(line) == {"-"}:
                start, inside = (i, True) if not inside else (start, False)
            elif inside and line.startswith(f"| {STEP_KEY} ") and _past(line.split("|")[2],
                                                                           steps):
                cut_file(self._file.name, start)
                return


def _jsonable(val: Any) -> Any:
    """Plain Python for numpy scalars and arrays, so json.dumps accepts them."""
    if hasattr(val, "tolist"):
        return val.tolist()
    return val


class JSONOutputFormat(KVWriter):
    """One JSON object per dump, one per line.

    :param path: the file to write (``progress.json``).
    :param append: add to an existing file (a resumed run) instead of replacing it.
    """

    def __init__(self, path: str | os.PathLike[str], append: bool = False) -> None:
        self.path = os.fspath(path)
        self._file = open(path, "a" if append else "w")  # noqa: SIM115

    def writekvs(self, kvs: Mapping[str, Any]) -> None:
        record = {str(k): _jsonable(v) for k, v in sorted(kvs.items())}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def truncate_after(self, steps: int) -> None:
        self._file.flush()
        for i, line in enumerate(_read_lines(self._file.name)):
            try:
                value = json.loads(line).get(STEP_KEY)
            except (ValueError, AttributeError):
                continue
            if isinstance(value, (int, float)) and value > steps:
                cut_file(self._file.name, i)
                return


class CSVOutputFormat(KVWriter):
    """A CSV table, one row per dump; a key that appears later extends the header.

    :param path: the file to write (``progress.csv``).
    :param append: add rows to an existing file (a resumed run), under its header.
    """

    def __init__(self, path: str | os.PathLike[str], append: bool = False) -> None:
        self.path = os.fspath(path)
        self.keys: list[str] = []
        if append and os.path.exists(self.path):
            with open(self.path, newline="") as f:
                self.keys = next(csv.reader(f), [])
        self._file = open(self.path, "a" if append else "w", newline="")  # noqa: SIM115

    def writekvs(self, kvs: Mapping[str, Any]) -> None:
        new_keys = sorted(str(k) for k in kvs if str(k) not in self.keys)
        if new_keys:
            self.keys.extend(new_keys)
            self._rewrite_with_header()
        row = {str(k): v for k, v in kvs.items()}
        writer = csv.writer(self._file)
        writer.writerow(["" if row.get(k) is None else row[k] for k in self.keys])
        self._file.flush()

    def _rewrite_with_header(self) -> None:
        # A CSV header can't be changed in place: read the rows written so far and write the
        # file again, with the old rows padded by empty cells under the new columns (through a
        # temporary file, so a full disk never leaves the old rows half-written).
        self._file.close()
        with open(self.path, newline="") as f:
            old_rows = list(csv.reader(f))[1:]
        tmp = f"{self.path}.tmp"
        try:
            with open(tmp, "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(self.keys)
                for old in old_rows:
                    writer.writerow(old + [""] * (len(self.keys) - len(old)))
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise
        self._file = open(self.path, "a", newline="")  # noqa: SIM115

    def close(self) -> None:
        self._file.close()

    def truncate_after(self, steps: int) -> None:
        if STEP_KEY not in self.keys:
            return
        self._file.flush()
        column = self.keys.index(STEP_KEY)
        for i, row in enumerate(csv.reader(_read_lines(self.path))):
            if i and len(row) > column and _past(row[column], steps):
                cut_file(self.path, i)
                return


class TensorBoardOutputFormat(KVWriter):
    """Numeric values as TensorBoard scalars.

    The step of each dump is the ``time/total_timesteps`` value when the dump has one, else the
    number of dumps so far. Scalars are written with ``tf.summary.write`` and the ``scalars``
    plugin tag, the same event ``tf.summary.scalar`` makes, because ``tf.summary.scalar`` needs
    the ``tensorboard`` package, which tensorflow-cpu no longer installs.

    :param path: the folder for the event files.
    """

    STEP_KEY = "time/total_timesteps"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        import tensorflow as tf  # lazy: plain logging must not pay TensorFlow's import time

        self._tf = tf
        os.makedirs(path, exist_ok=True)
        self.dir = self.path = os.fspath(path)
        self._writer = tf.summary.create_file_writer(self.dir)
        self._metadata = tf.compat.v1.SummaryMetadata()
        self._metadata.plugin_data.plugin_name = "scalars"
        self._dumps = 0

    def writekvs(self, kvs: Mapping[str, Any]) -> None:
        value = kvs.get(self.STEP_KEY)
        step = int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
            else self._dumps
        with self._writer.as_default():
            for key, val in kvs.items():
                if isinstance(val, numbers.Real) and not isinstance(val, bool):
                    tensor = self._tf.constant(float(val), dtype=self._tf.float32)
                    self._tf.summary.write(
                        str(key), tensor, step=step, metadata=self._metadata
                    )
        self._writer.flush()
        self._dumps += 1

    def close(self) -> None:
        self._writer.close()


def make_output_format(fmt: str, ev_dir: str, log_suffix: str = "",
                       append: bool = False) -> KVWriter:
    """Build one output by name.

    :param fmt: one of ``stdout``, ``log``, ``json``, ``csv``, ``tensorboard``.
    :param ev_dir: the folder files are written to.
    :param log_suffix: added to file names (``progress-rank1.csv``).
    :param append: add to existing files (a resumed run) instead of replacing them.
    """
    _check_formats([fmt])
    if fmt == "stdout":
        return HumanOutputFormat(None)
    os.makedirs(ev_dir, exist_ok=True)
    if fmt == "log":
        return HumanOutputFormat(os.path.join(ev_dir, f"log{log_suffix}.txt"), append)
    if fmt == "json":
        return JSONOutputFormat(os.path.join(ev_dir, f"progress{log_suffix}.json"), append)
    if fmt == "csv":
        return CSVOutputFormat(os.path.join(ev_dir, f"progress{log_suffix}.csv"), append)
    return TensorBoardOutputFormat(os.path.join(ev_dir, f"tb{log_suffix}"))


def _check_formats(format_strs: Sequence[str]) -> None:
    for fmt in format_strs:
        if fmt not in FORMATS:
            raise RLBaseError(
                f"unknown log format {fmt!r}; valid formats: {', '.join(FORMATS)}"
            )


# --- the logger -------------------------------------------------------------------------------


class Logger:
    """Collects key-values between dumps and sends them to its outputs.

    :param dir: the folder of this logger's files (``None`` for stdout-only loggers).
    :param output_formats: where dumps and text lines go.
    :param comm: an optional MPI communicator; dumps then average values over its ranks.
    """

    def __init__(
        self, dir: str | None, output_formats: Sequence[KVWriter], comm: Any = None
    ) -> None:
        self.dir = dir
        self.output_formats = list(output_formats)
        self.comm = comm
        self.level = INFO
        self.name2val: dict[str, Any] = {}
        self.name2cnt: dict[str, int] = defaultdict(int)

    def logkv(self, key: str, val: Any) -> None:
        """Set ``key`` to ``val`` for the next dump (a later call overwrites)."""
        self.name2val[key] = val
        self.name2cnt.pop(key, None)

    def logkv_mean(self, key: str, val: float) -> None:
        """Add ``val`` to the mean reported for ``key`` at the next dump."""
        count = self.name2cnt[key]
        old = self.name2val.get(key, 0.0) if count else 0.0
        # Running mean, so nothing but the mean and the count is kept between dumps.
        self.name2val[key] = old + (val - old) / (count + 1)
        self.name2cnt[key] = count + 1

    def logkvs(self, kvs: Mapping[str, Any]) -> None:
        """Set several key-values at once."""
        for key, val in kvs.items():
            self.logkv(key, val)

    def getkvs(self) -> dict[str, Any]:
        """The key-values collected since the last dump."""
        return dict(self.name2val)

    def dumpkvs(self) -> dict[str, Any]:
        """Write the collected key-values to every output, clear them, and return them."""
        kvs = {key: _to_python(val) for key, val in self.name2val.items()}
        if self.comm is not None and _comm_size(self.comm) > 1:
            kvs = _mpi_weighted_mean(self.comm, kvs, dict(self.name2cnt))
        if self.level < DISABLED:
            for fmt in list(self.output_formats):
                try:
                    fmt.writekvs(kvs)
                except OSError as exc:
                    self._drop(fmt, exc)
        self.name2val.clear()
        self.name2cnt.clear()
        return kvs

    def log(self, *args: Any, level: int = INFO) -> None:
        """Write a line of text to the text outputs if ``level`` passes the logger's level."""
        if self.level <= level:
            for fmt in list(self.output_formats):
                if isinstance(fmt, SeqWriter):
                    try:
                        fmt.writeseq(args)
                    except OSError as exc:
                        self._drop(fmt, exc)

    def _drop(self, fmt: KVWriter, exc: OSError) -> None:
        """An output that cannot be written (a full disk) is dropped with one warning:
        training goes on without it."""
        self.output_formats.remove(fmt)
        with contextlib.suppress(OSError):
            fmt.close()
        warn_once(f"log:{fmt.path}", f"could not write the log output {fmt.path} ({exc}); "
                  "training goes on without it")

    def truncate_after(self, steps: int) -> None:
        """Drop the rows past ``steps`` timesteps from every output (a resumed run)."""
        for fmt in list(self.output_formats):
            fmt.truncate_after(steps)

    def set_level(self, level: int) -> None:
        """Show only text logged at ``level`` or above (``DISABLED`` silences dumps too)."""
        self.level = level

    def get_dir(self) -> str | None:
        """The folder this logger writes to."""
        return self.dir

    def close(self) -> None:
        """Close every output."""
        for fmt in self.output_formats:
            fmt.close()


def _to_python(val: Any) -> Any:
    """Plain Python for eager tensors and numpy scalars, so every output formats them alike."""
    if hasattr(val, "numpy") and callable(val.numpy):
        val = val.numpy()
    if getattr(val, "ndim", None) == 0 and hasattr(val, "item"):
        val = val.item()
    return val


def _comm_size(comm: Any) -> int:
    return int(comm.Get_size())


def _mpi_weighted_mean(
    comm: Any, kvs: Mapping[str, Any], counts: Mapping[str, int]
) -> dict[str, Any]:
    """Average numeric values over all ranks, weighted by how many times each was logged."""
    gathered = comm.allgather({k: (v, counts.get(k, 1)) for k, v in kvs.items()})
    totals: dict[str, float] = defaultdict(float)
    weights: dict[str, float] = defaultdict(float)
    result: dict[str, Any] = {}
    for rank_kvs in gathered:
        for key, (val, count) in rank_kvs.items():
            if isinstance(val, numbers.Real) and not isinstance(val, bool):
                totals[key] += float(val) * count
                weights[key] += count
            else:
                result.setdefault(key, val)  # text values can't be averaged: keep the first
    for key, weight in weights.items():
        result[key] = totals[key] / weight
    return result


# --- MPI rank, found without importing mpi4py when possible -----------------------------------

# (rank, size) variables set by mpich's hydra and by Open MPI's mpiexec.
_LAUNCHER_ENV = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"))


def _mpi_rank_size() -> tuple[int, int]:
    """This process's (rank, world size); (0, 1) when not under MPI.

    MPI launchers (mpich's hydra, Open MPI) put the rank in the environment, which is read first
    so that logging never initializes MPI itself. Failing that, mpi4py is asked only if the
    program already imported it.
    """
    for rank_var, size_var in _LAUNCHER_ENV:
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        world = mpi.COMM_WORLD
        return int(world.Get_rank()), int(world.Get_size())
    return 0, 1


# --- module-level API -------------------------------------------------------------------------


def _stdout_logger() -> Logger:
    return Logger(dir=None, output_formats=[HumanOutputFormat(None)])


DEFAULT: Logger = _stdout_logger()
_current: Logger = DEFAULT


def _default_dir() -> str:
    stamp = datetime.datetime.now().strftime("rlbase-%Y-%m-%d-%H-%M-%S-%f")
    return os.path.join(tempfile.gettempdir(), stamp)


def _parse_formats(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def configure(
    dir: str | os.PathLike[str] | None = None,
    format_strs: Sequence[str] | str | None = None,
    log_suffix: str = "",
    comm: Any = None,
    append: bool = False,
) -> Logger:
    """Make a new logger the current one.

    :param dir: where files go; default ``$RLBASE_LOGDIR``, else a new
        ``rlbase-<timestamp>`` folder in the system temp folder.
    :param format_strs: output names (a list or a comma-separated string) among ``stdout``,
        ``log``, ``json``, ``csv``, ``tensorboard``; default ``$RLBASE_LOG_FORMAT``, else
        ``stdout,log,csv``.
    :param log_suffix: added to file names; MPI ranks above 0 also get ``-rank<N>``.
    :param comm: an MPI communicator whose ranks' values are averaged at each dump.
    :param append: add to the folder's existing files (a resumed run: the loop then drops the
        rows past the checkpoint with :meth:`Logger.truncate_after`) instead of replacing them.
    :return: the new logger.
    """
    global _current
    if format_strs is None:
        format_strs = os.environ.get(FORMAT_ENV) or DEFAULT_FORMATS
    formats = _parse_formats(format_strs) if isinstance(format_strs, str) else list(format_strs)
    _check_formats(formats)  # before any file is created
    if dir is None:
        dir = os.environ.get(LOGDIR_ENV) or None  # set but empty: as if unset
        if dir is None and not set(formats) - {"stdout"}:
            # Nothing to write to files: no folder (and no empty one left behind).
            return _use(Logger(dir=None, output_formats=[
                make_output_format(f, "", log_suffix) for f in formats]))
        dir = dir or _default_dir()
    dir = os.path.abspath(os.path.expanduser(os.fspath(dir)))

    rank, _ = _mpi_rank_size()
    if rank > 0:
        # Every worker logging to the terminal would repeat each table N times.
        formats = [f for f in formats if f != "stdout"]
        log_suffix = f"{log_suffix}-rank{rank}"

    os.makedirs(dir, exist_ok=True)
    outputs = [make_output_format(f, dir, log_suffix, append) for f in formats]
    _use(Logger(dir=dir, output_formats=outputs, comm=comm))
    if outputs:
        log(f"Logging to {dir}")
    return _current


def _use(new: Logger) -> Logger:
    """Make ``new`` the current logger (closing the previous one unless it is the default)."""
    global _current
    if _current is not DEFAULT:
        _current.close()
    _current = new
    return new


def get_current() -> Logger:
    """The logger the module-level functions use."""
    return _current


def reset() -> None:
    """Close the configured logger and go back to the stdout-only default."""
    global _current
    if _current is not DEFAULT:
        _current.close()
        _current = DEFAULT
        log("Reset logger")


@contextlib.contextmanager
def scoped_configure(
    dir: str | os.PathLike[str] | None = None,
    format_strs: Sequence[str] | str | None = None,
    comm: Any = None,
) -> Iterator[Logger]:
    """Use a new logger inside a ``with`` block, then restore the previous one."""
    global _current
    previous = _current
    # configure() would close the previous logger: detach it first so it survives the block.
    _current = DEFAULT
    try:
        yield configure(dir=dir, format_strs=format_strs, comm=comm)
    finally:
        if _current is not DEFAULT:
            _current.close()
        _current = previous


def logkv(key: str, val: Any) -> None:
    """Set ``key`` to ``val`` for the next dump."""
    _current.logkv(key, val)


def logkv_mean(key: str, val: float) -> None:
    """Add ``val`` to the mean reported for ``key`` at the next dump."""
    _current.logkv_mean(key, val)


def logkvs(kvs: Mapping[str, Any]) -> None:
    """Set several key-values at once."""
    _current.logkvs(kvs)


def dumpkvs() -> dict[str, Any]:
    """Write and clear the collected key-values; returns what was written."""
    return _current.dumpkvs()


def getkvs() -> dict[str, Any]:
    """The key-values collected since the last dump."""
    return _current.getkvs()


def log(*args: Any, level: int = INFO) -> None:
    """Write a line of text to the text outputs (stdout, log.txt)."""
    _current.log(*args, level=level)


def debug(*args: Any) -> None:
    log(*args, level=DEBUG)


def info(*args: Any) -> None:
    log(*args, level=INFO)


def warn(*args: Any) -> None:
    log(*args, level=WARN)


def error(*args: Any) -> None:
    log(*args, level=ERROR)


def set_level(level: int) -> None:
    """Show only text logged at ``level`` or above."""
    _current.set_level(level)


def get_dir() -> str | None:
    """The folder the current logger writes to (``None`` before :func:`configure`)."""
    return _current.get_dir()


record_tabular = logkv
dump_tabular = dumpkvs
