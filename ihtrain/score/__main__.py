"""``python -m ihtrain.score``: the scorer's command line (:mod:`ihtrain.score.cli`)."""
from ihstats.base.command import run_cli
from ihtrain.score.cli import main

run_cli(main)
