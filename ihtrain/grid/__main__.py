"""``python -m ihtrain.grid``: the grid's command line (:mod:`ihtrain.grid.cli`)."""
from ihstats.base.command import run_cli
from ihtrain.grid.cli import main

run_cli(main)
