"""One command skeleton (issue 67): every command ends ``if __name__ == "__main__": run_cli(main)``.

``run_cli`` owns what every command shares: warnings shown once each on one line
(:func:`ihstats.base.progress.cli_warnings`), Ctrl-C as exit 130 with one line, and the exit code
``main`` returns (None is 0). The codes are one table (:data:`EXIT_CODES`, drawn in docs/DESIGN.md,
"Command-line conventions"); a command returns one of them and never spells the number.

Where a command writes by default is this module's too: :data:`OUTPUT_KINDS` lists every results
folder, ``results/<kind>/...`` (:func:`default_out`), and :func:`out_folder` is the one way a
command turns its ``--out`` (or that default) into a folder the output guard
(:func:`ihstats.base.cli_checks.check_out_dir`) allows. The console scripts call ``run_cli`` as
well (``ihtrain.commands``).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Callable, NoReturn

from ihstats.base.cli_checks import check_out_dir
from ihstats.base.progress import cli_warnings

EXIT_OK = 0
EXIT_FAILED = 1  # the work ran and failed: a run diverged or crashed, a check found problems
EXIT_BAD_INPUT = 2  # bad input: one line naming the file or flag and what to do (argparse's own code)
EXIT_LOCKED = 3  # another process holds the run's or the grid's lock: wait for it, or stop it
EXIT_IO_ERROR = 75  # sysexits' EX_TEMPFAIL: an I/O cause (disk full, a vanished mount) stopped it; rerun to resume
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as the shell reports it; rerun to resume
EXIT_CODES = {EXIT_OK: "ok", EXIT_FAILED: "the work ran and failed", EXIT_BAD_INPUT: "bad input",
              EXIT_LOCKED: "locked by another process", EXIT_IO_ERROR: "I/O error (rerun to resume)",
              EXIT_INTERRUPTED: "interrupted"}


def run_cli(main: Callable[[], int | None]) -> NoReturn:
    """Run a command's ``main()`` under the shared warnings and exit with its code (130 on Ctrl-C)."""
    with cli_warnings():  # each warning once, on one line
        try:
            code = main()
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            code = EXIT_INTERRUPTED
    raise SystemExit(EXIT_OK if code is None else code)


#: every results folder a command writes by default, ``results/<kind>/...``: kind -> the file of the
#: command that writes it. A new command registers its kind here (:func:`default_out` refuses others).
OUTPUT_KINDS = {
    "ablation": "analyses/ablation_tests.py",
    "biinduct": "analyses/biinduct_verdicts.py",
    "concentration": "ihstats/concentration.py",
    "design_law": "analyses/design_law.py",
    "emergence": "ihstats/emergence.py",  # one file, results/emergence/<runs dir>/emergence.csv
    "frontier": "analyses/fit_frontier.py",
    "law_mechanism": "analyses/law_mechanism.py",
    "legacy_ceilings": "analyses/legacy_ceilings.py",
    "markov_entropy": "analyses/markov_entropy.py",
    "mechanism_factorial": "analyses/mechanism_factorial.py",
    "natural_repeats": "analyses/natural_repeats.py",
    "probe_audit": "analyses/probe_audit.py",
    "seed_kinds": "analyses/seed_kinds.py",
    "upt_law": "analyses/fit_upt_law.py",
    "validate_law": "analyses/validate_law.py",
}


def default_out(kind: str, source: str | Path | None) -> Path:
    """``results/<kind>/<name of source>`` (or ``results/<kind>``): never inside a data folder.
    The name of a file is its stem, of a folder its own name (``.`` and ``runs/g/`` included).
    ``kind`` must be one of :data:`OUTPUT_KINDS` (ValueError otherwise)."""
    if kind not in OUTPUT_KINDS:
        raise ValueError(f"unknown output kind {kind!r}: register it in ihstats.base.command.OUTPUT_KINDS")
    if not source:
        return Path("results") / kind
    src = Path(source)
    table = src.is_file() or src.suffix.lower() in {".csv", ".nc", ".parquet"}
    return Path("results") / kind / (src.stem if table else src.resolve().name)


def out_folder(out: str | Path | None, kind: str, source: str | Path | None = None, *, sub: str = "",
               inputs: Iterable[str | Path] = (), parser: argparse.ArgumentParser | None = None) -> Path:
    """The results folder a command writes: ``out`` when given, else ``default_out(kind, source) / sub``,
    passed through the output guard (:func:`ihstats.base.cli_checks.check_out_dir`) before any work.

    Parameters
    ----------
    out : str, Path or None
        The ``--out`` given (None or empty: the default).
    kind, source : str, and str or Path or None
        As :func:`default_out`.
    sub : str
        A folder under the default (``validate_law``'s ``loco``/``holdout``); not added to a given ``out``.
    inputs, parser
        As :func:`~ihstats.base.cli_checks.check_out_dir`: a refusal exits through ``parser.error``
        (status 2), or raises :class:`~ihstats.base.cli_checks.OutputPathError` without one.
    """
    default = default_out(kind, source)
    return check_out_dir(out or (default / sub if sub else default), inputs=inputs, parser=parser)


__all__ = ["EXIT_BAD_INPUT", "EXIT_CODES", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_IO_ERROR", "EXIT_LOCKED",
           "EXIT_OK", "OUTPUT_KINDS", "default_out", "out_folder", "run_cli"]
