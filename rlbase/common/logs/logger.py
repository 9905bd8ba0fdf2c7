"""Key-value and text logging for training runs: the Baselines logger API and SB3's ``Logger``.

Baselines' functions, on a process-wide current logger::

    from rlbase.common.logs import logger           # or: from rlbase import logger
    logger.configure("/tmp/run", ["stdout", "csv", "tensorboard"])
    logger.logkv("time/total_timesteps", 2048)   # record_tabular is the same function
    logger.logkv_mean("rollout/ep_rew_mean", 21.5)
    logger.dumpkvs()                             # dump_tabular

SB3's ``Logger`` object (``configure`` returns it; a model takes one with ``set_logger``)::

    new_logger = logger.configure("/tmp/run", ["stdout", "csv"])
    new_logger.record("train/loss", 0.5, exclude="tensorboard")
    new_logger.dump(step=2048)

Output formats: ``stdout`` and ``log`` (an aligned table, on the terminal or in ``log.txt``),
``json`` (``progress.json``, one object per line), ``csv`` (``progress.csv``) and
``tensorboard`` (event files under ``tb/``; a model's ``tensorboard_log`` run folder holds them
directly). TensorBoard also takes :class:`Figure`, :class:`Image`, :class:`Video` and
:class:`HParam` values, texts and arrays (histograms). Until :func:`configure` is called, a
default logger prints to stdout only.
"""

from __future__ import annotations

import contextlib
import csv
import datetime
import glob
import io
import json
import numbers
import os
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

import numpy as np

from rlbase.common.errors import RLBaseError
from rlbase.common.logs.tensorboard import TensorBoardOutputFormat
from rlbase.common.logs.values import (  # noqa: F401  (SB3's names, importable from the logger)
    STEP_KEY,
    Figure,
    FormatUnsupportedError,
    HParam,
    Image,
    KVWriter,
    SeqWriter,
    Video,
    _is_excluded,
    _refuse_tensorboard_only,
    _step_of,
)

DEBUG = 10
INFO = 20
WARN = 30
ERROR = 40
DISABLED = 50

FORMATS = ("stdout", "log", "json", "csv", "tensorboard")
DEFAULT_FORMATS = "stdout,log,csv"
LOGDIR_ENV = "RLBASE_LOGDIR"
FORMAT_ENV = "RLBASE_LOG_FORMAT"
# Read when rlbase's own variable is unset: SB3's, then Baselines' names.
LOGDIR_ALIASES = ("SB3_LOGDIR", "OPENAI_LOGDIR")
FORMAT_ALIASES = ("SB3_LOG_FORMAT", "OPENAI_LOG_FORMAT")

MAX_LENGTH = 36  # keys and values longer than this are cut in the human-readable table

_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    """One ``rlbase: warning:`` line on stderr, the first time ``key`` is warned about (a full
    disk must not print a line per log row)."""
    if key not in _warned:
        _warned.add(key)
        print(f"rlbase: warning: {message}", file=sys.stderr, flush=True)


def _first_set(*names: str) -> str | None:
    """The first of these variables that is set and not empty."""
    return next((os.environ[name] for name in names if os.environ.get(name)), None)


def env_logdir() -> str | None:
    """The log folder the environment asks for: ``$RLBASE_LOGDIR``, else ``$SB3_LOGDIR``, else
    ``$OPENAI_LOGDIR`` (set but empty: as if unset)."""
    return _first_set(LOGDIR_ENV, *LOGDIR_ALIASES)


def env_log_format() -> str | None:
    """The formats the environment asks for: ``$RLBASE_LOG_FORMAT``, else ``$SB3_LOG_FORMAT``,
    else ``$OPENAI_LOG_FORMAT``."""
    return _first_set(FORMAT_ENV, *FORMAT_ALIASES)


def cut_file(path: str, keep_lines: int) -> None:
    """Keep the first ``keep_lines`` lines of ``path``, in place: a file held open in append
    mode by a writer goes on at the new end."""
    with open(path, "rb") as f:
        lines = f.readlines()
    if keep_lines < len(lines):
        os.truncate(path, sum(len(line) for line in lines[:keep_lines]))


def write_whole(file: IO[Any], text: str) -> None:
    """Append ``text`` to ``file`` whole or not at all: its bytes go out through ``os.write``
    (no buffer left holding part of it), and a write that fails part-way (a full disk,
    ``[Errno 28]``) truncates the file back to its length before the row, then raises. So a
    log file never keeps a torn line, and a later reader (a resumed run's cut, pandas) sees
    whole rows only."""
    try:
        fd = file.fileno()
    except (AttributeError, io.UnsupportedOperation):  # a stream with no file under it
        file.write(text)
        file.flush()
        return
    file.flush()  # (empty: every write goes through here)
    data = text.encode(getattr(file, "encoding", None) or "utf-8")
    start = os.fstat(fd).st_size  # the file is opened for appending: the row goes here
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise


def _open_rows(path: str, append: bool, newline: str | None = None) -> IO[str]:
    """``path`` opened for appending (each row goes at the end, see write_whole); emptied
    first unless ``append`` (a resumed run)."""
    if not append:
        open(path, "w").close()
    return open(path, "a", newline=newline)  # noqa: SIM115


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


def _format_value(val: Any) -> str:
    """Compact text for a value: 3 significant digits for floats, ints in full."""
    if isinstance(val, bool):
        return str(val)
    if isinstance(val, numbers.Integral):
        return str(int(val))
    if isinstance(val, numbers.Real):
        return f"{float(val):.3g}"
    return str(val)


class HumanOutputFormat(KVWriter, SeqWriter):
    """An aligned two-column table, on stdout or in a text file.

    On the terminal, rows go through ``tqdm.write`` once tqdm is imported, so they do not
    break a progress bar.

    :param target: a file path, an open text file, or ``None`` for whatever ``sys.stdout`` is at
        write time (so redirections made after configure still apply).
    :param append: add to an existing file (a resumed run) instead of replacing it.
    :param max_length: keys and values longer than this are cut (with ``...``); two keys cut to
        the same text are an error.
    """

    def __init__(self, target: str | os.PathLike[str] | IO[str] | None = None,
                 append: bool = False, max_length: int = MAX_LENGTH) -> None:
        self.max_length = max_length
        self._owns_file = isinstance(target, (str, os.PathLike))
        self.path = os.fspath(target) if isinstance(target, (str, os.PathLike)) else "stdout"
        self.format_name = "log" if self._owns_file else "stdout"
        self._file: IO[str] | None = (
            _open_rows(self.path, append) if isinstance(target, (str, os.PathLike)) else target)

    @property
    def file(self) -> IO[str]:
        return self._file if self._file is not None else sys.stdout

    def _truncate(self, text: str) -> str:
        n = self.max_length
        return text if len(text) <= n else text[: n - 3] + "..."

    def write(self, key_values: Mapping[str, Any],
              key_excluded: Mapping[str, tuple[str, ...] | None] | None = None,
              step: int = 0) -> None:
        rows: dict[str, str] = {}
        for key, value in self._kept(key_values, key_excluded).items():
            _refuse_tensorboard_only(value, self.format_name)
            short = self._truncate(key)
            if short in rows:
                raise RLBaseError(f"log key {key!r} cut to {short!r}, which another key "
                                  f"already has: shorten the keys or raise max_length "
                                  f"({self.max_length})")
            rows[short] = self._truncate(_format_value(value))
        if not rows:
            return
        keys = sorted(rows, key=str.lower)
        key_w = max(len(k) for k in keys)
        val_w = max(len(v) for v in rows.values())
        rule = "-" * (key_w + val_w + 7)
        lines = [rule, *(f"| {k:<{key_w}} | {rows[k]:<{val_w}} |" for k in keys), rule]
        self._emit("\n".join(lines) + "\n")

    def write_sequence(self, sequence: Sequence[Any]) -> None:
        self._emit(" ".join(str(x) for x in sequence) + "\n")

    def _emit(self, text: str) -> None:
        out = self.file
        if self._owns_file:
            write_whole(out, text)
            return
        tqdm_module = sys.modules.get("tqdm")  # only if someone uses tqdm: no import cost
        if tqdm_module is not None and out in (sys.stdout, sys.__stdout__):
            tqdm_module.tqdm.write(text, file=out, end="")  # clears and redraws any bar
        else:
            out.write(text)
        out.flush()

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
    """Plain Python for numpy scalars and arrays, so json.dumps accepts them (an array of one
    value as that value)."""
    val = _to_python(val)
    if isinstance(val, np.ndarray) and val.size == 1:
        return val.reshape(()).item()
    return val.tolist() if hasattr(val, "tolist") else val


class JSONOutputFormat(KVWriter):
    """One JSON object per dump, one per line.

    :param path: the file to write (``progress.json``).
    :param append: add to an existing file (a resumed run) instead of replacing it.
    """

    format_name = "json"

    def __init__(self, path: str | os.PathLike[str], append: bool = False) -> None:
        self.path = os.fspath(path)
        self._file = _open_rows(self.path, append)

    def write(self, key_values: Mapping[str, Any],
              key_excluded: Mapping[str, tuple[str, ...] | None] | None = None,
              step: int = 0) -> None:
        kept = self._kept(key_values, key_excluded)
        for value in kept.values():
            _refuse_tensorboard_only(value, self.format_name)
        record = {k: _jsonable(v) for k, v in sorted(kept.items())}
        write_whole(self._file, json.dumps(record) + "\n")

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

    format_name = "csv"

    def __init__(self, path: str | os.PathLike[str], append: bool = False) -> None:
        self.path = os.fspath(path)
        self.keys: list[str] = []
        if append and os.path.exists(self.path):
            with open(self.path, newline="") as f:
                self.keys = next(csv.reader(f), [])
        self._file = _open_rows(self.path, append, newline="")

    def write(self, key_values: Mapping[str, Any],
              key_excluded: Mapping[str, tuple[str, ...] | None] | None = None,
              step: int = 0) -> None:
        row = self._kept(key_values, key_excluded)
        if not row:
            return
        for value in row.values():
            _refuse_tensorboard_only(value, self.format_name)
        new_keys = sorted(k for k in row if k not in self.keys)
        if new_keys:
            self.keys.extend(new_keys)
            self._rewrite_with_header()
        text = io.StringIO()
        csv.writer(text).writerow(["" if row.get(k) is None else row[k] for k in self.keys])
        write_whole(self._file, text.getvalue())

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
        self._file = _open_rows(self.path, True, newline="")

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


def make_output_format(fmt: str, ev_dir: str | os.PathLike[str], log_suffix: str = "",
                       append: bool = False) -> KVWriter:
    """SB3's make_output_format (TensorBoard writes to ``ev_dir``'s ``tb`` sub-folder);
    ``append`` adds to existing files (a resumed run) instead of replacing them."""
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
            raise RLBaseError(f"unknown log format {fmt!r}; valid formats: {', '.join(FORMATS)}")


# --- the logger -------------------------------------------------------------------------------


class Logger:
    """Collects key-values between dumps and sends them to its outputs.

    :param folder: the folder of this logger's files (``None`` for stdout-only loggers).
    :param output_formats: where dumps and text lines go.
    :param comm: an optional MPI communicator; dumps then average values over its ranks.
    """

    def __init__(self, folder: str | None, output_formats: Sequence[KVWriter],
                 comm: Any = None, *, dir: str | None = None) -> None:
        self.dir = folder if folder is not None else dir
        self.output_formats = list(output_formats)
        self.comm = comm
        self.level = INFO
        self.name_to_value: dict[str, Any] = defaultdict(float)
        self.name_to_count: dict[str, int] = defaultdict(int)
        self.name_to_excluded: dict[str, tuple[str, ...]] = {}
        self._dumps = 0
        self._written: dict[str, Any] = {}

    # Baselines' names for the same dicts.
    @property
    def name2val(self) -> dict[str, Any]:
        return self.name_to_value

    @property
    def name2cnt(self) -> dict[str, int]:
        return self.name_to_count

    @staticmethod
    def to_tuple(string_or_tuple: str | tuple[str, ...] | None) -> tuple[str, ...]:
        """``exclude`` as a tuple of format names."""
        if string_or_tuple is None:
            return ("",)
        return string_or_tuple if isinstance(string_or_tuple, tuple) else (string_or_tuple,)

    def record(self, key: str, value: Any, exclude: str | tuple[str, ...] | None = None) -> None:
        """SB3's record: ``key`` is ``value`` at the next dump, left out of the ``exclude``
        formats."""
        self.name_to_value[key] = value
        self.name_to_count.pop(key, None)
        self.name_to_excluded[key] = self.to_tuple(exclude)

    def record_mean(self, key: str, value: float | None,
                    exclude: str | tuple[str, ...] | None = None) -> None:
        """Add ``value`` to the mean reported for ``key`` at the next dump (None: nothing)."""
        if value is None:
            return
        count = self.name_to_count[key]
        old = self.name_to_value.get(key, 0.0) if count else 0.0
        # Running mean, so nothing but the mean and the count is kept between dumps.
        self.name_to_value[key] = old + (value - old) / (count + 1)
        self.name_to_count[key] = count + 1
        self.name_to_excluded[key] = self.to_tuple(exclude)

    def logkv(self, key: str, val: Any) -> None:
        """Baselines' :meth:`record`."""
        self.record(key, val)

    def logkv_mean(self, key: str, val: float) -> None:
        """Baselines' :meth:`record_mean`."""
        self.record_mean(key, val)

    def logkvs(self, kvs: Mapping[str, Any]) -> None:
        """Set several key-values at once."""
        for key, val in kvs.items():
            self.record(key, val)

    def getkvs(self) -> dict[str, Any]:
        """The key-values collected since the last dump."""
        return dict(self.name_to_value)

    def dump(self, step: int = 0) -> None:
        """Write the collected key-values to every output (TensorBoard at ``step``), then clear
        them."""
        kvs = {key: _to_python(val) for key, val in self.name_to_value.items()}
        if self.comm is not None and int(self.comm.Get_size()) > 1:
            kvs = _mpi_weighted_mean(self.comm, kvs, dict(self.name_to_count))
        excluded = dict(self.name_to_excluded)
        if self.level < DISABLED:
            for fmt in list(self.output_formats):
                try:
                    fmt.write(kvs, excluded, step)
                except OSError as exc:
                    self._drop(fmt, exc)
        self._written = kvs
        self._dumps += 1
        self.name_to_value.clear()
        self.name_to_count.clear()
        self.name_to_excluded.clear()

    def dumpkvs(self) -> dict[str, Any]:
        """Baselines' dump: TensorBoard's step is the ``time/total_timesteps`` value (else the
        number of dumps so far); returns what was written."""
        self._written = {key: _to_python(val) for key, val in self.name_to_value.items()}
        self.dump(step=_step_of(self._written, self._dumps))
        return self._written

    def log(self, *args: Any, level: int = INFO) -> None:
        """Write a line of text to the text outputs if ``level`` passes the logger's level."""
        if self.level <= level:
            for fmt in list(self.output_formats):
                if isinstance(fmt, SeqWriter):
                    try:
                        fmt.write_sequence(args)
                    except OSError as exc:
                        self._drop(fmt, exc)

    def debug(self, *args: Any) -> None:
        self.log(*args, level=DEBUG)

    def info(self, *args: Any) -> None:
        self.log(*args, level=INFO)

    def warn(self, *args: Any) -> None:
        self.log(*args, level=WARN)

    def error(self, *args: Any) -> None:
        self.log(*args, level=ERROR)

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
        for fmt in self.output_formats:
            fmt.close()


def _to_python(val: Any) -> Any:
    """Plain Python for eager tensors and numpy scalars, so every output formats them alike."""
    if hasattr(val, "numpy") and callable(val.numpy):
        val = val.numpy()
    if getattr(val, "ndim", None) == 0 and hasattr(val, "item"):
        val = val.item()
    return val


def _mpi_weighted_mean(comm: Any, kvs: Mapping[str, Any],
                       counts: Mapping[str, int]) -> dict[str, Any]:
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


DEFAULT: Logger = Logger(None, [HumanOutputFormat(None)])
_current: Logger = DEFAULT


def _default_dir() -> str:
    stamp = datetime.datetime.now().strftime("rlbase-%Y-%m-%d-%H-%M-%S-%f")
    return os.path.join(tempfile.gettempdir(), stamp)


def make_logger(folder: str | os.PathLike[str] | None = None,
                format_strings: Sequence[str] | str | None = None, log_suffix: str = "",
                comm: Any = None, append: bool = False) -> Logger:
    """A new logger, not made the current one (:func:`configure`'s arguments)."""
    if format_strings is None:
        format_strings = env_log_format() or DEFAULT_FORMATS
    formats = ([part.strip() for part in format_strings.split(",") if part.strip()]
               if isinstance(format_strings, str)
               else [f for f in format_strings if f])  # SB3 passes [""] for "no output"
    _check_formats(formats)  # before any file is created
    if folder is None:
        folder = env_logdir()
        if folder is None and not set(formats) - {"stdout"}:
            # Nothing to write to files: no folder (and no empty one left behind).
            return Logger(None, [make_output_format(f, "", log_suffix) for f in formats])
        folder = folder or _default_dir()
    folder = os.path.abspath(os.path.expanduser(os.fspath(folder)))

    rank, _ = _mpi_rank_size()
    if rank > 0:
        # Every worker logging to the terminal would repeat each table N times.
        formats = [f for f in formats if f != "stdout"]
        log_suffix = f"{log_suffix}-rank{rank}"

    os.makedirs(folder, exist_ok=True)
    outputs = [make_output_format(f, folder, log_suffix, append) for f in formats]
    new = Logger(folder, outputs, comm=comm)
    if set(formats) - {"stdout"}:
        new.log(f"Logging to {folder}")
    return new


def configure(folder: str | os.PathLike[str] | None = None,
              format_strings: Sequence[str] | str | None = None, log_suffix: str = "",
              comm: Any = None, append: bool = False, *,
              dir: str | os.PathLike[str] | None = None,
              format_strs: Sequence[str] | str | None = None) -> Logger:
    """Make a new logger the current one (Baselines) and return it (SB3).

    :param folder: where files go (Baselines' keyword: ``dir``); default ``$RLBASE_LOGDIR``
        (else ``$SB3_LOGDIR``, else ``$OPENAI_LOGDIR``), else a new ``rlbase-<timestamp>``
        folder in the system temp folder; no folder when only ``stdout`` is asked for.
    :param format_strings: output names (a list or a comma-separated string) among ``stdout``,
        ``log``, ``json``, ``csv``, ``tensorboard`` (Baselines' keyword: ``format_strs``);
        default ``$RLBASE_LOG_FORMAT`` (else ``$SB3_LOG_FORMAT``, else
        ``$OPENAI_LOG_FORMAT``), else ``stdout,log,csv``.
    :param log_suffix: added to file names; MPI ranks above 0 also get ``-rank<N>``.
    :param comm: an MPI communicator whose ranks' values are averaged at each dump.
    :param append: add to the folder's existing files (a resumed run: the loop then drops the
        rows past the checkpoint with :meth:`Logger.truncate_after`) instead of replacing them.
    :return: the new logger.
    """
    if dir is not None:
        if folder is not None:
            raise RLBaseError("configure: give the folder once, as folder or as dir")
        folder = dir
    if format_strs is not None:
        if format_strings is not None:
            raise RLBaseError("configure: give the formats once, as format_strings or as "
                              "format_strs")
        format_strings = format_strs
    global _current
    # The previous logger is not closed: one returned by configure() may be in use elsewhere
    # (a model's set_logger); one nobody holds is freed, and its files closed, when it goes.
    _current = make_logger(folder, format_strings, log_suffix, comm, append)
    return _current


def get_latest_run_id(log_path: str | os.PathLike[str] = "", log_name: str = "") -> int:
    """The largest N of the ``<log_name>_<N>`` folders in ``log_path`` (0 when there is none)."""
    latest = 0
    pattern = os.path.join(glob.escape(os.fspath(log_path)), f"{glob.escape(log_name)}_[0-9]*")
    for path in glob.glob(pattern):
        name, _, number = os.path.basename(path).rpartition("_")
        if name == log_name and number.isdigit():
            latest = max(latest, int(number))
    return latest


def configure_logger(verbose: int = 0, tensorboard_log: str | os.PathLike[str] | None = None,
                     tb_log_name: str = "", reset_num_timesteps: bool = True) -> Logger:
    """A model's logger for one learn() call (not made the current one).

    :param verbose: 0 no output, 1 the tables on stdout, 2 also debug messages.
    :param tensorboard_log: folder of TensorBoard runs: each learn() writes to a new
        ``<tb_log_name>_<N>`` folder (N one past the largest there), or with
        ``reset_num_timesteps=False`` goes on in the latest one.
    """
    formats = ["stdout"] if verbose >= 1 else []
    if tensorboard_log is None:
        new = make_logger(None, formats)
    else:
        run_id = get_latest_run_id(tensorboard_log, tb_log_name)
        if reset_num_timesteps:
            run_id += 1
        folder = os.path.join(tensorboard_log, f"{tb_log_name}_{run_id}")
        new = make_logger(folder, formats)
        new.output_formats.append(TensorBoardOutputFormat(folder))  # its events in the run folder
        new.log(f"Logging to {folder}")
    if verbose >= 2:
        new.set_level(DEBUG)
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
def using(new: Logger) -> Iterator[Logger]:
    """Make ``new`` the current logger inside a ``with`` block, then restore the previous one;
    ``new`` is left open (a model's custom logger outlives its learn() calls)."""
    global _current
    previous = _current
    _current = new
    try:
        yield new
    finally:
        _current = previous


@contextlib.contextmanager
def scoped_configure(dir: str | os.PathLike[str] | None = None,
                     format_strs: Sequence[str] | str | None = None,
                     comm: Any = None) -> Iterator[Logger]:
    """Use a new logger inside a ``with`` block, then close it and restore the previous one."""
    new = make_logger(dir, format_strs, comm=comm)
    try:
        with using(new):
            yield new
    finally:
        new.close()


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
