"""``python -m rlbase.tuning`` (= ``rlbase tune``)."""

import sys

from rlbase.run import run_cli
from rlbase.tuning.cli import main

if __name__ == "__main__":
    run_cli(lambda: main(sys.argv[1:]))
