"""Checks every command line applies before it starts work (issue 38): numeric flags against the
range that gives them a meaning, and outputs against the files a command reads.

The output guard (issue 50; :func:`check_out_dir` for folders, :func:`check_out_file` for one
file) is the one place every writing command asks where it may write. Refused: an output that is,
or holds, one of the command's inputs; a run's or grid's own files (``ihstats.run_check``), and
results written into a run's or grid's folder; a file the package did not write (each folder keeps
the names the package wrote there in :data:`WRITTEN_RECORD`, see :func:`record_written`); a train or
grid ``--out`` that already holds such files without being a run or grid; and system or package
folders (``/``, ``/usr``, the Python installation, the ``ihstats``/``ihtrain`` sources).

Each CLI lists its ranged flags once, by name, in a ``{dest: Range}`` table and calls
:func:`check_args` right after parsing; its output folder goes through :func:`check_out_dir`.
A bad value ends the command with one line naming the flag, its range and the value given, before
anything is read, fitted or written.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ihstats.fileio import atomic_write_text
from ihstats.fit_protocol import SAMPLER
from ihstats.run_check import GRID_OWN_FILES, RUN_OWN_FILES, folder_kind


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


# The sampler flags every fitting script takes, declared once (issue 51): the same names, defaults
# and help in fit_upt_law, fit_frontier, validate_law and law_mechanism.
SAMPLER_RANGES = {"draws": COUNT, "tune": NONNEG_INT, "chains": COUNT, "seed": NONNEG_INT}
FAST = {"draws": 300, "tune": 300, "chains": 2}  # --fast: a first look, not for reporting


def add_sampler_flags(parser: argparse.ArgumentParser, *, chains: int = SAMPLER.chains, seed_help: str = "sampler seed",
                      target_accept: bool = False) -> None:
    """``--fast``, ``--draws``, ``--tune``, ``--chains``, ``--seed`` (and ``--target-accept``) in a
    "sampler" group; check them with :data:`SAMPLER_RANGES` and apply ``--fast`` with :func:`apply_fast`."""
    g = parser.add_argument_group("sampler")
    g.add_argument("--fast", action="store_true",
                   help=f"{FAST['chains']} chains x {FAST['draws']} draws ({FAST['tune']} tune): a first look")
    g.add_argument("--draws", type=int, default=SAMPLER.draws, help=f"draws per chain (default {SAMPLER.draws})")
    g.add_argument("--tune", type=int, default=SAMPLER.tune, help=f"tuning steps per chain (default {SAMPLER.tune})")
    g.add_argument("--chains", type=int, default=chains, help=f"chains, run one after another (default {chains})")
    g.add_argument("--seed", type=int, default=SAMPLER.seed, help=f"{seed_help} (default {SAMPLER.seed})")
    if target_accept:
        g.add_argument("--target-accept", type=float, default=SAMPLER.target_accept,
                       help=f"NUTS target acceptance (default {SAMPLER.target_accept})")


def apply_fast(args: argparse.Namespace) -> argparse.Namespace:
    """With ``--fast``, the :data:`FAST` draws, tuning steps and chains replace the given ones."""
    if getattr(args, "fast", False):
        for name, value in FAST.items():
            setattr(args, name, value)
    return args


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


#: the file in an output folder naming, one a line, the files the package wrote there
WRITTEN_RECORD = ".ihlaw-written"
#: system folders no command writes into or under ("/" itself only: every path lies under it)
SYSTEM_FOLDERS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin", "/sys", "/usr")
OWN_FILES = {"run": RUN_OWN_FILES, "grid": GRID_OWN_FILES}


def _protected() -> list[tuple[Path, str]]:
    """Folders refused with everything under them: the system's, Python's and the package's."""
    src = Path(__file__).resolve().parent
    places = [(Path(f), "the system folder") for f in SYSTEM_FOLDERS]
    places += [(Path(p).resolve(), "the Python installation") for p in {sys.prefix, sys.base_prefix}]
    return places + [(src.parent / name, "the package folder") for name in ("ihstats", "ihtrain")]


def place_error(out: Path) -> str | None:
    """Why ``out`` lies in a place no command writes to (None: it does not)."""
    target = out.resolve()
    if target == Path(target.anchor):
        return "is the file system's root"
    for root, what in _protected():
        if target == root or root in target.parents:
            return f"lies in {what} {root}"
    return None


def _owned_by(target: Path) -> str | None:
    """The run or grid folder whose own file ``target`` is (or lies in), as a phrase; else None."""
    for folder in target.parents:
        kind = folder_kind(folder)
        if kind:
            first = target.relative_to(folder).parts[0]
            return f"the {kind} {folder}'s own {first}" if first in OWN_FILES[kind] else None
    return None


def written_by_package(path: Path) -> bool:
    """Whether the package wrote the file ``path`` (its folder's :data:`WRITTEN_RECORD` names it)."""
    record = path.parent / WRITTEN_RECORD
    return record.is_file() and path.name in record.read_text().split("\n")


def record_written(path: str | Path) -> None:
    """Note in the folder's :data:`WRITTEN_RECORD` that the package wrote ``path`` (call after writing)."""
    path = Path(path)
    if not written_by_package(path):
        record = path.parent / WRITTEN_RECORD
        old = record.read_text() if record.is_file() else ""
        atomic_write_text(record, old + path.name + "\n")


def _refuse(msg: str, parser: argparse.ArgumentParser | None) -> None:
    if parser is not None:
        parser.error(msg)
    raise OutputPathError(msg)


def _under_file(out: Path, flag: str) -> str | None:
    for parent in [out, *out.parents]:
        if parent.exists() and not parent.is_dir():
            where = "is a file" if parent == out else f"lies under the file {parent}"
            return f"{flag} {out}: {where}; give a folder (it is created when missing)"
    return None


def _folder_error(out: Path, inputs: Iterable[str | Path], flag: str, kind: str) -> str | None:
    msg = _under_file(out, flag) or (f"{flag} {out}: {why}; give another folder" if (why := place_error(out)) else None)
    target = out.resolve()
    for src in inputs:
        if msg is None and (target == Path(src).resolve() or target in Path(src).resolve().parents):
            msg = (f"{flag} {out}: holds the input {src}; writing there would overwrite it; give another "
                   f"folder (e.g. results/<name>)")
    owner = next((f for f in [target, *target.parents] if folder_kind(f)), None)
    if msg is None and kind in ("results", "shipped") and owner is not None:
        msg = (f"{flag} {out}: lies in the {folder_kind(owner)} directory {owner}, which holds only what its "
               f"trainer writes; give another folder (e.g. results/<name>)")
    if msg is None and kind in OWN_FILES and owner not in (None, target) and folder_kind(owner) == "run":
        msg = f"{flag} {out}: lies in the run directory {owner}; give another folder"  # a run or grid in a run
    if msg is None and kind in OWN_FILES and out.is_dir() and folder_kind(out) != kind:
        theirs = sorted(f for f in OWN_FILES[kind] if (out / f).exists())
        if theirs:
            msg = (f"{flag} {out}: holds {', '.join(theirs)} but is not a {kind} directory; the {kind} would "
                   f"overwrite them: move them away or give another folder")
    if msg is None and kind == "results" and (foreign := _foreign_entry(out)):
        msg = (f"{flag} {out}: holds {foreign}, which this package did not write (the folder has no "
               f"{WRITTEN_RECORD}); give a new or empty folder, e.g. results/<name>")
    return msg


def _foreign_entry(out: Path) -> str | None:
    """The first entry of an existing results folder that no command of the package made (a folder
    the package writes carries :data:`WRITTEN_RECORD` from its first use on); None if it may be used."""
    if not out.is_dir() or (out / WRITTEN_RECORD).exists():
        return None
    return next((p.name for p in sorted(out.iterdir())), None)


def claim_folder(out: Path) -> None:
    """Create ``out`` and mark it as the package's (:data:`WRITTEN_RECORD`), so a later run may write there."""
    out.mkdir(parents=True, exist_ok=True)
    if not (out / WRITTEN_RECORD).exists():
        atomic_write_text(out / WRITTEN_RECORD, "")


def check_out_dir(out: str | Path, inputs: Iterable[str | Path] = (), flag: str = "--out",
                  parser: argparse.ArgumentParser | None = None, kind: str = "results") -> Path:
    """An output folder a command may create and write into, or one clear line.

    Refused: a path that is a file or lies under a file; a system, Python or package folder
    (:func:`place_error`); a folder that is, or holds, one of the command's ``inputs`` (writing
    there would overwrite what was read, e.g. a grid's ``summary.csv``); for results, a folder in
    a run's or grid's directory, or an existing folder the package did not make (a user's folder:
    its files would be overwritten); for a run or grid, an existing folder that is not one but
    holds files it would write (a user's ``curves.png`` or ``summary.csv``).

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
    kind : {"results", "run", "grid", "shipped"}
        What the folder receives: a command's results (an existing folder must carry the package's
        :data:`WRITTEN_RECORD`, i.e. have been made by a command: the command calls
        :func:`claim_folder` before its first write),
        a run's or grid's own files, or the repository's shipped example tables (regenerated on
        purpose, by name).

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
    msg = _folder_error(out, inputs, flag, kind)
    if msg:
        _refuse(msg, parser)
    return out


def check_out_file(out: str | Path, inputs: Iterable[str | Path] = (), flag: str = "--out",
                   parser: argparse.ArgumentParser | None = None) -> Path:
    """An output file a command may write, or one clear line: refused when it is a folder or lies
    under a file, lies in a protected place (:func:`place_error`), is one of ``inputs`` or a run's
    or grid's own file, or exists without the package having written it (:func:`written_by_package`).
    Call :func:`record_written` after writing it. Parameters as :func:`check_out_dir`."""
    out = Path(out)
    target = out.resolve()
    msg = None
    if out.is_dir() or any(p.exists() and not p.is_dir() for p in out.parents):
        msg = f"{flag} {out}: give a CSV file path (it is a folder, or lies under a file)"
    elif why := place_error(out.parent):
        msg = f"{flag} {out}: its folder {why}; give another path"
    elif any(target == Path(src).resolve() for src in inputs):
        msg = f"{flag} {out}: is the command's input; writing it would replace what was read; give another path"
    elif owner := _owned_by(target):
        msg = f"{flag} {out}: is {owner}; writing it would replace the {owner.split()[1]}'s record; give another path"
    elif out.exists() and not written_by_package(out):
        msg = (f"{flag} {out}: exists and was not written by this package (not in {out.parent / WRITTEN_RECORD}); "
               f"move it away or give another path")
    if msg:
        _refuse(msg, parser)
    return out


def default_out(kind: str, source: str | Path | None) -> Path:
    """``results/<kind>/<name of source>`` (or ``results/<kind>``): never inside a data folder.
    The name of a file is its stem, of a folder its own name (``.`` and ``runs/g/`` included)."""
    if not source:
        return Path("results") / kind
    src = Path(source)
    table = src.is_file() or src.suffix.lower() in {".csv", ".nc", ".parquet"}
    return Path("results") / kind / (src.stem if table else src.resolve().name)


__all__ = ["COUNT", "NONNEG_INT", "PROBABILITY_OPEN", "SYSTEM_FOLDERS", "WRITTEN_RECORD", "OutputPathError", "Range",
           "check_args", "check_out_dir", "claim_folder", "check_out_file", "default_out", "place_error", "range_error",
           "record_written", "written_by_package"]
