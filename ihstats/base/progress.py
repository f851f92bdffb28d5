"""What a long command shows while it works: every progress bar, step line and warning of ihlaw.

One choice, made here for every bar (the trainer's, the grid's, the corpus builder's, the law
validation's refits) and every PyMC fit:

- on a terminal (stderr is a TTY) a tqdm bar redraws in place, as usual;
- anywhere else (a log file, CI, ``nohup``) a redraw is a carriage return that piles up in the
  file (334 KB in 30 minutes of one grid log), so the bar prints a plain line at most every
  :data:`LOG_INTERVAL_S` seconds, and its last state when it closes;
- ``IHLAW_PROGRESS=0`` turns bars and sampler progress off (a step line still says what runs);
  ``IHLAW_PROGRESS_INTERVAL=S`` sets the seconds between a bar's lines off a terminal (default 10).

PyMC's sampler draws its own (rich) bars: on a terminal they redraw, elsewhere rich prints one
table per fit when the fit ends; :func:`step` says before it what is being sampled.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from contextlib import contextmanager
from typing import Any, TextIO

from tqdm.auto import tqdm

#: Seconds between two lines of a bar that is not on a terminal (``IHLAW_PROGRESS_INTERVAL`` overrides).
LOG_INTERVAL_S = 10.0
_WARNED: set[str] = set()


def enabled() -> bool:
    """Whether bars and sampler progress are shown (``IHLAW_PROGRESS=0`` turns them off)."""
    return os.environ.get("IHLAW_PROGRESS", "1").strip() not in {"0", "false", "no", "off"}


def log_interval() -> float:
    """Seconds between a bar's lines off a terminal: ``IHLAW_PROGRESS_INTERVAL`` if set (e.g. a
    test or a user who wants denser logs), else :data:`LOG_INTERVAL_S`."""
    value = os.environ.get("IHLAW_PROGRESS_INTERVAL", "").strip()
    try:
        return max(0.0, float(value)) if value else LOG_INTERVAL_S
    except ValueError:
        return LOG_INTERVAL_S


def interactive(stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (default stderr) is a terminal, where a bar may redraw in place."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or file-like stream without isatty
        return False


class LineWriter:
    """A file for tqdm that turns its in-place redraws into plain lines, at most one every
    ``interval`` seconds (the latest state wins; a bar's closing newline prints what is pending).
    """

    def __init__(self, stream: TextIO, interval: float | None = None, clock=time.monotonic):
        self.stream, self.clock = stream, clock
        self.interval = log_interval() if interval is None else interval
        self._last = -float("inf")
        self._pending: str | None = None

    def write(self, s: str) -> int:
        text = s.replace("\r", "").replace("\x1b[A", "").strip()
        if text:
            self._pending = text
        now = self.clock()
        if self._pending and (s.endswith("\n") or now - self._last >= self.interval):
            self.stream.write(self._pending + "\n")
            self._pending, self._last = None, now
        return len(s)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, ... as the stream has them
        return getattr(self.stream, name)


def bar(iterable=None, *, show: bool = True, stream: TextIO | None = None, **kw):
    """A tqdm bar that suits where it is printed (see the module docstring); ``show=False`` or
    ``IHLAW_PROGRESS=0``: a disabled bar (its ``update`` / ``write`` still work)."""
    stream = sys.stderr if stream is None else stream
    if interactive(stream):
        return tqdm(iterable, disable=not (show and enabled()), dynamic_ncols=True, file=stream, **kw)
    return tqdm(iterable, disable=not (show and enabled()), file=LineWriter(stream),
                mininterval=log_interval(), ncols=100, **kw)


def step(message: str) -> None:
    """Say on stderr what a long step is doing before it starts (``message ...``)."""
    print(f"{message} ...", file=sys.stderr, flush=True)


def warn_once(message: str) -> bool:
    """Print ``warning: message`` on stderr the first time this process meets it; returns
    whether it printed (the same warning from three fits of one command prints once)."""
    if message in _WARNED:
        return False
    _WARNED.add(message)
    print(f"warning: {message}", file=sys.stderr, flush=True)
    return True


@contextmanager
def cli_warnings():
    """Python warnings as a command shows them: one line each (``warning: ...``, no source
    line), each text once per command however many fits raise it. (Python's own "once" filter
    forgets what it showed whenever a library sets a filter, as PyMC and ArviZ do around every
    fit, so the texts shown are kept here.) Restored on exit."""
    shown: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if str(message) not in shown:
            shown.add(str(message))
            print(f"warning: {message}", file=sys.stderr if file is None else file, flush=True)

    with warnings.catch_warnings():
        # appended: the ignore filters already set (ihstats._bayes's BLAS notice) still win
        warnings.filterwarnings("always", category=UserWarning, append=True)
        warnings.showwarning = show
        yield


__all__ = ["LOG_INTERVAL_S", "LineWriter", "bar", "cli_warnings", "enabled", "interactive", "log_interval", "step",
           "warn_once"]
