"""python -m rlbase.docs_site build|serve|config (as ``rlbase docs``)."""

from rlbase.docs_site import main
from rlbase.run import run_cli

run_cli(main)
