"""``python -m ihtrain.train``: the one-run command line at its old address; the trainer lives in
:mod:`ihtrain.run` (``ihtrain.run.train``). An entry point only: no module imports this one."""
from ihstats.base.command import run_cli
from ihtrain.run.train import main

if __name__ == "__main__":
    run_cli(main)
