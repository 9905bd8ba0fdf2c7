"""Shared test set-up: quiet TensorFlow; a ``slow`` marker run only with --runslow; and the
heavy integration checks of ``tests/heavy.txt``, run with ``--heavy=also`` or ``--heavy=only``
(CI runs them after the default run)."""

import os
import signal

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

HEAVY_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "heavy.txt")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="also run tests marked slow")
    parser.addoption("--heavy", choices=("skip", "also", "only"), default="skip",
                     help="the heavy integration checks listed in tests/heavy.txt: skip them "
                          "(default), run them too, or run only them")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a long learning check (run with --runslow)")
    config.addinivalue_line("markers", "heavy: a whole-process or multi-run check listed in "
                                       "tests/heavy.txt (run with --heavy=also or only)")


#: SIGINT and SIGTERM as this test process started with them
STOP_SIGNALS_AT_START = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


@pytest.fixture(autouse=True)
def _stop_signals_restored():
    """SIGINT and SIGTERM back to how the test process started, after each test. The CLI ends
    a finished or stopped run by ignoring them (a late signal must not turn a saved run's exit
    into a death by signal); run in-process, by a test or a module's fixture, that leaked into
    the worker's later tests and every process they started, which inherits the ignored
    signals (a Ctrl-C test of the paired runner hung for 120 s in full runs that way)."""
    yield
    for sig, handler in STOP_SIGNALS_AT_START.items():
        if signal.getsignal(sig) != handler and handler is not None:
            signal.signal(sig, handler)


def heavy_entries(path: str = HEAVY_LIST) -> list[str]:
    """The node ids (or files, or tests with all their parameters) ``heavy.txt`` lists."""
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def is_heavy(nodeid: str, entries: list[str]) -> bool:
    return any(nodeid == e or nodeid.startswith((e + "::", e + "[")) for e in entries)


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    entries = heavy_entries()
    for item in items:
        if is_heavy(item.nodeid, entries):
            item.add_marker(pytest.mark.heavy)
    heavy = config.getoption("--heavy")
    if heavy == "only":
        kept = [item for item in items if "heavy" in item.keywords]
        config.hook.pytest_deselected(items=[i for i in items if "heavy" not in i.keywords])
        items[:] = kept
    elif heavy == "skip":
        skip_heavy = pytest.mark.skip(reason="heavy: run with --heavy=also (CI does)")
        for item in items:
            if "heavy" in item.keywords:
                item.add_marker(skip_heavy)
    if not config.getoption("--runslow"):
        skip = pytest.mark.skip(reason="slow: run with --runslow")
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(skip)
