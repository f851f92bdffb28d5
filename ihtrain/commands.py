"""The package's console scripts, one table (issue 67): each ``ihlaw-*`` script runs its module's
``main`` through :func:`ihstats.base.command.run_cli`, as ``python -m MODULE`` does, so a script
shows warnings, reports Ctrl-C and exits with ``main``'s code the same way.

pyproject.toml's ``[project.scripts]`` points each script at its function here
(``ihlaw-lag-pmf = "ihtrain.commands:lag_pmf"``). A module is imported only when its script runs:
``ihlaw-schema`` loads no torch. The scripts under ``analyses/`` and ``paper_figures/`` are run by
path (``python analyses/NAME.py``) and are not listed.
"""
from __future__ import annotations

from importlib import import_module
from typing import Callable, NoReturn

from ihstats.base.command import run_cli

#: console script -> the module whose ``main`` it runs (``python -m`` runs the same module)
COMMANDS = {
    "ihlaw-train": "ihtrain.run.train",
    "ihlaw-grid": "ihtrain.grid.cli",
    "ihlaw-ablate": "ihtrain.ablate.cli",
    "ihlaw-score": "ihtrain.score.cli",
    "ihlaw-convert": "ihtrain.score.convert",
    "ihlaw-copystats": "ihtrain.copystats",
    "ihlaw-lag-pmf": "ihtrain.lag_pmf",
    "ihlaw-emergence": "ihstats.emergence",
    "ihlaw-schema": "ihstats.base.schema",
    "ihlaw-concentration": "ihstats.concentration",
    "ihlaw-budget": "ihstats.frontier.budget",
    "ihlaw-predict": "ihstats.law.predict",
    "ihlaw-simulate-law": "ihstats.simulate.law",
    "ihlaw-examples": "ihstats.simulate.examples",
}


def entry_name(script: str) -> str:
    """The function of this module a script calls: ``ihlaw-lag-pmf`` -> ``lag_pmf``."""
    return script.removeprefix("ihlaw-").replace("-", "_")


def _entry(script: str) -> Callable[[], NoReturn]:
    module = COMMANDS[script]

    def entry() -> NoReturn:
        run_cli(import_module(module).main)

    entry.__name__ = entry.__qualname__ = entry_name(script)
    entry.__doc__ = f"``{script}``: ``python -m {module}``."
    return entry


train = _entry("ihlaw-train")
grid = _entry("ihlaw-grid")
ablate = _entry("ihlaw-ablate")
score = _entry("ihlaw-score")
convert = _entry("ihlaw-convert")
copystats = _entry("ihlaw-copystats")
lag_pmf = _entry("ihlaw-lag-pmf")
emergence = _entry("ihlaw-emergence")
schema = _entry("ihlaw-schema")
concentration = _entry("ihlaw-concentration")
budget = _entry("ihlaw-budget")
predict = _entry("ihlaw-predict")
simulate_law = _entry("ihlaw-simulate-law")
examples = _entry("ihlaw-examples")

__all__ = ["COMMANDS", "entry_name", *(entry_name(s) for s in COMMANDS)]
