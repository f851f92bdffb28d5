"""One command skeleton (issue 67): every command ends ``if __name__ == "__main__": run_cli(main)``.

``run_cli`` owns what every command shares: warnings shown once each on one line
(:func:`ihstats.base.progress.cli_warnings`), Ctrl-C as exit 130 with one line, and the exit code
``main`` returns (None is 0). The codes are one table (:data:`EXIT_CODES`, drawn in docs/DESIGN.md,
"Command-line conventions"); a command returns one of them and never spells the number.
"""
from __future__ import annotations

import sys
from typing import Callable, NoReturn

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


__all__ = ["EXIT_BAD_INPUT", "EXIT_CODES", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_IO_ERROR", "EXIT_LOCKED",
           "EXIT_OK", "run_cli"]
