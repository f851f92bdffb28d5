"""``python -m ihtrain.ablate``: the ablations' command line (:mod:`ihtrain.ablate.cli`)."""
from ihstats.base.command import run_cli
from ihtrain.ablate.cli import main

run_cli(main)
