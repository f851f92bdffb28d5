"""Checks every command line applies before it starts work (issue 38): numeric flags against the
range that gives them a meaning, and output folders against the files a command reads.

Each CLI lists its ranged flags once, by name, in a ``{dest: Range}`` table and calls
:func:`check_args` right after parsing; its output folder goes through :func:`check_out_dir`.
A bad value ends the command with one line naming the flag, its range and the value given, before
anything is read, fitted or written.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Range:
    """An allowed interval for one numeric option.

    Parameters
    ----------
    lo, hi : float
        Bounds (``-inf`` / ``inf``: unbounded on that side; infinite values are never allowed).
    lo_open, hi_open : bool
        Whether the bound itself is excluded.
    integer : bool
        Whether only whole numbers have a meaning.
    note : str
        What a special value means, shown in the message (e.g. ``"0: torch's default"``).
    """

    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False
    integer: bool = False
    note: str = ""

    def contains(self, value: float) -> bool:
        """Whether ``value`` is a finite number inside the range (and whole, when it must be)."""
        try:
            v = float(value)
        except (TypeError, ValueError):
            return False
        if not math.isfinite(v) or (self.integer and v != int(v)):
            return False
        above = v > self.lo if self.lo_open else v >= self.lo
        below = v < self.hi if self.hi_open else v <= self.hi
        return above and below

    def describe(self) -> str:
        """The range in words, e.g. ``an integer >= 1`` or ``a number in (0, 1)``."""
        kind = "an integer" if self.integer else "a finite number"
        if math.isfinite(self.lo) and math.isfinite(self.hi):
            text = f"{kind} in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"
        elif math.isfinite(self.lo):
            text = f"{kind} {'>' if self.lo_open else '>='} {self.lo:g}"
        elif math.isfinite(self.hi):
            text = f"{kind} {'<' if self.hi_open else '<='} {self.hi:g}"
        else:
            text = kind
        return f"{text} ({self.note})" if self.note else text


# The ranges most flags share, named once so every CLI says the same thing about them.
COUNT = Range(1, integer=True)  # draws, chains, resamples, examples
NONNEG_INT = Range(0, integer=True)  # seeds, tuning steps
PROBABILITY_OPEN = Range(0, 1, lo_open=True, hi_open=True)  # hdi_prob, alpha, target_accept, level


def range_error(name: str, value: object, rng: Range) -> str | None:
    """The message for ``value`` outside ``rng`` (``None`` when it is inside)."""
    return None if rng.contains(value) else f"{name}: must be {rng.describe()}, got {value!r}"


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace, rules: Mapping[str, Range]) -> None:
    """Exit through ``parser.error`` (status 2, one line) at the first flag outside its range.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The parser whose usage line goes with the message.
    args : argparse.Namespace
        The parsed arguments; a flag left at ``None`` (not given, no default) is not checked.
    rules : mapping of str to Range
        Argument ``dest`` -> its allowed range.
    """
    for dest, rng in rules.items():
        value = getattr(args, dest)
        if value is None:
            continue
        msg = range_error("--" + dest.replace("_", "-"), value, rng)
        if msg:
            parser.error(msg)


class OutputPathError(ValueError):
    """An output path a command must not write to (the message is one line naming the flag)."""


def check_out_dir(out: str | Path, inputs: Iterable[str | Path] = (), flag: str = "--out",
                  parser: argparse.ArgumentParser | None = None) -> Path:
    """An output folder a command may create and write into, or one clear line.

    Refused: a path that is a file or lies under a file, and a folder that is, or holds, one of
    the command's ``inputs`` (writing there would overwrite what was read, e.g. a grid's
    ``summary.csv``).

    Parameters
    ----------
    out : str or Path
        The output folder (need not exist).
    inputs : iterable of str or Path
        Files or folders the command reads.
    flag : str
        The option's name, for the message.
    parser : argparse.ArgumentParser, optional
        Given: a refusal exits through ``parser.error`` (status 2); else it raises.

    Returns
    -------
    Path
        ``out`` as a Path.

    Raises
    ------
    OutputPathError
        When refused and no ``parser`` is given.
    """
    out = Path(out)
    msg = None
    for parent in [out, *out.parents]:
        if parent.exists() and not parent.is_dir():
            where = "is a file" if parent == out else f"lies under the file {parent}"
            msg = f"{flag} {out}: {where}; give a folder (it is created when missing)"
            break
    target = out.resolve()
    for src in inputs:
        if msg is None and (target == Path(src).resolve() or target in Path(src).resolve().parents):
            msg = (f"{flag} {out}: holds the input {src}; writing there would overwrite it; give another "
                   f"folder (e.g. results/<name>)")
    if msg and parser is not None:
        parser.error(msg)
    if msg:
        raise OutputPathError(msg)
    return out


def default_out(kind: str, source: str | Path | None) -> Path:
    """``results/<kind>/<name of source>`` (or ``results/<kind>``): never inside a data folder.
    The name of a file is its stem, of a folder its own name (``.`` and ``runs/g/`` included)."""
    if not source:
        return Path("results") / kind
    src = Path(source)
    table = src.is_file() or src.suffix.lower() in {".csv", ".nc", ".parquet"}
    return Path("results") / kind / (src.stem if table else src.resolve().name)


__all__ = ["COUNT", "NONNEG_INT", "PROBABILITY_OPEN", "OutputPathError", "Range", "check_args", "check_out_dir",
           "default_out", "range_error"]
