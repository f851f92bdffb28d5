"""Checks every command line applies before it starts work (issue 38): numeric flags against the
range that gives them a meaning, and outputs against the files a command reads.

The output guard (issue 50; :func:`check_out_dir` for folders, :func:`check_out_file` for one
file) is the one place every writing command asks where it may write. Refused: an output that is,
or holds, one of the command's inputs; a run's or grid's own files (``ihstats.base.run_check``), and
results written into a run's or grid's folder; a file the package did not write (each folder keeps
the names the package wrote there in :data:`WRITTEN_RECORD`, see :func:`record_written`); a train or
grid ``--out`` that already holds such files without being a run or grid; and system or package
folders (``/``, ``/usr``, the Python installation, the ``ihstats``/``ihtrain`` sources).

Each CLI lists its ranged flags once, by name, in a ``{dest: Range}`` table and calls
:func:`check_args` right after parsing; its output folder goes through :func:`check_out_dir` (a
results folder by way of :func:`ihstats.base.command.out_folder`, which also names its default).
A bad value ends the command with one line naming the flag, its range and the value given, before
anything is read, fitted or written.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ihstats.base.fileio import WRITTEN_RECORD, atomic_write_text, control_character
from ihstats.base.run_check import GRID_OWN_FILES, RUN_OWN_FILES, folder_kind
from ihstats.base.series import is_series_dir


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


def check_unused(parser: argparse.ArgumentParser, args: argparse.Namespace, rules: Mapping[str, str | None]) -> None:
    """Exit through ``parser.error`` (status 2, one line) when a flag given on the command line has no
    effect in the chosen mode (a threshold without the threshold detector, ``--onset`` with a given
    table): a flag silently ignored reads as if it had been applied.

    Parameters
    ----------
    rules : mapping of str to str or None
        Argument ``dest`` -> why it does nothing here (e.g. ``"only --onset-method threshold reads
        it"``), or None when it has an effect. A flag left at its default is never refused.
    """
    for dest, why in rules.items():
        if why and getattr(args, dest) != parser.get_default(dest):
            parser.error(f"--{dest.replace('_', '-')} {getattr(args, dest)!r}: has no effect here: {why}; drop it")


class OutputPathError(ValueError):
    """An output path a command must not write to (the message is one line naming the flag)."""


#: system folders no command writes into or under ("/" itself only: every path lies under it)
SYSTEM_FOLDERS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin", "/sys", "/usr")
OWN_FILES = {"run": (*RUN_OWN_FILES, "series.json", ".score.lock"), "grid": GRID_OWN_FILES}  # a series is a run


def _protected() -> list[tuple[Path, str]]:
    """Folders refused with everything under them: the system's, Python's and the package's."""
    src = Path(__file__).resolve().parents[1]  # the ihstats folder (this module lives in ihstats/base)
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


def data_folder_of(target: Path) -> Path | None:
    """The nearest run or grid directory (:func:`ihstats.base.run_check.folder_kind`: a scored series is
    a run) that is ``target`` or holds it; None when it lies in none."""
    return next((f for f in [target, *target.parents] if folder_kind(f)), None)


def _owned_by(target: Path, allowed: Iterable[str] = ()) -> str | None:
    """Why the file ``target`` may not be written inside a run or grid folder, as a phrase (its own
    file, or any other file there: such a folder holds only what its trainer writes); else None.
    ``allowed``: names the command may write in the run directory itself (``ablate``'s own tables)."""
    folder = data_folder_of(target.parent)
    if folder is None:
        return None
    kind, first = folder_kind(folder), target.relative_to(folder).parts[0]
    if first in OWN_FILES[kind]:
        return f"is the {kind} {folder}'s own {first}; writing it would replace the {kind}'s record"
    if kind == "run" and target.parent == folder and target.name in allowed:
        return None
    return (f"lies in the {kind} directory {folder}, which holds only what its trainer writes; "
            f"give a path outside it (e.g. results/<name>/{target.name})")


def _record_lines(folder: Path) -> list[str]:
    record = folder / WRITTEN_RECORD
    return [x for x in record.read_text(errors="replace").split("\n") if x] if record.is_file() else []


def written_by_package(path: Path) -> bool:
    """Whether the package wrote the file ``path`` (its folder's :data:`WRITTEN_RECORD` names it)."""
    return path.name in _record_lines(path.parent)


def record_written(path: str | Path) -> None:
    """Note in the folder's :data:`WRITTEN_RECORD` that the package wrote ``path`` (call after writing)."""
    path = Path(path)
    if not written_by_package(path):
        record = path.parent / WRITTEN_RECORD
        old = record.read_text() if record.is_file() else ""
        atomic_write_text(record, old + path.name + "\n")


def name_error(out: Path, flag: str) -> str | None:
    """A path holding a control character (a newline would forge a :data:`WRITTEN_RECORD` line)."""
    bad = control_character(str(out))
    return None if bad is None else f"{flag} {out!r}: the path holds the control character {bad}; give a plain name"


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
    msg = name_error(out, flag) or _under_file(out, flag)
    msg = msg or (f"{flag} {out}: {why}; give another folder" if (why := place_error(out)) else None)
    target = out.resolve()
    for src in inputs:
        if msg is None and (target == Path(src).resolve() or target in Path(src).resolve().parents):
            msg = (f"{flag} {out}: holds the input {src}; writing there would overwrite it; give another "
                   f"folder (e.g. results/<name>)")
    return msg or _data_folder_error(out, target, flag, kind) or _kind_error(out, flag, kind)


def _data_folder_error(out: Path, target: Path, flag: str, kind: str) -> str | None:
    """A folder output inside a run's, series' or grid's directory (only a run or grid may lie in a
    grid, and only a series' rerun into itself is its own folder)."""
    owner = data_folder_of(target)
    if owner is None or (kind in ("run", "grid") and (owner == target or folder_kind(owner) == "grid")):
        return None
    if (kind == "series" and owner == target and is_series_dir(target)) or (
            kind == "checkpoint" and owner == target and _our_checkpoint(target)):
        return None
    where = (f"the {folder_kind(owner)} directory {owner}, which holds only what its "
             f"{'scorer' if is_series_dir(owner) else 'trainer'} writes")
    hint = _cwd_hint(out, owner, flag)
    return f"{flag} {out}: {'is' if owner == target else 'lies in'} {where}; give another folder{hint}"


def _cwd_hint(out: Path, owner: Path, flag: str) -> str:
    """For a relative (often default) output under a data folder that is the current folder."""
    cwd = Path.cwd().resolve()
    inside = not out.is_absolute() and (cwd == owner or owner in cwd.parents)
    return (f" (a relative path is made under the current folder: run the command from outside {owner}, or "
            f"give {flag} outside it)" if inside else "")


def _our_checkpoint(folder: Path) -> bool:
    """A checkpoint folder a converter wrote: its record lists its config.json, and no run files."""
    return "config.json" in _record_lines(folder) and not (folder / "status.json").exists()


def _kind_error(out: Path, flag: str, kind: str) -> str | None:
    if kind in OWN_FILES and out.is_dir() and folder_kind(out) != kind:
        theirs = sorted(f for f in OWN_FILES[kind] if (out / f).exists())
        if theirs:
            return (f"{flag} {out}: holds {', '.join(theirs)} but is not a {kind} directory; the {kind} would "
                    f"overwrite them: move them away or give another folder")
    if kind == "series" and out.is_dir() and not is_series_dir(out) and any(
            p.name != ".score.lock" for p in out.iterdir()):  # a lock alone: a scorer that failed early
        return f"{flag} {out}: a non-empty folder without series.json; pass a new or series directory"
    if kind in ("results", "checkpoint") and (foreign := _foreign_entry(out)):
        return (f"{flag} {out}: holds {foreign}, which this package did not write (not listed in its "
                f"{WRITTEN_RECORD}); move it away, or give a new or empty folder, e.g. results/<name>")
    return None


def _foreign_entry(out: Path) -> str | None:
    """The first entry of an existing output folder the package did not write: any entry when the
    folder has no :data:`WRITTEN_RECORD`, else a file the record does not list, or a symlink (a
    write there would land where the link points); None if the folder may be written."""
    if not out.is_dir():
        return None
    if not (out / WRITTEN_RECORD).is_file():
        return next((p.name for p in sorted(out.iterdir())), None)
    listed = set(_record_lines(out))
    for root, dirs, files in os.walk(out):  # links are not followed: a linked folder is an entry
        for name in sorted(dirs + files):
            path = Path(root) / name
            rel = path.relative_to(out).as_posix()
            if path.is_symlink():
                return f"{rel} (a symlink: a write would land at {os.readlink(path)})"
            if name in files and rel != WRITTEN_RECORD and not _temp_file(name) and rel not in listed:
                return rel
    return None


def _temp_file(name: str) -> bool:
    """A temporary file of a killed atomic write (``ihstats.base.fileio.atomic_write``): never a result."""
    return name.startswith(".") and name.endswith(".tmp")


#: where a refit sets aside the files of the fit before it (replaced by the next refit)
EARLIER_RUN = "earlier_run"


def claim_folder(out: Path, fresh: bool = True) -> None:
    """Create ``out`` and mark it as the package's (:data:`WRITTEN_RECORD`), so a later run may write
    there. ``fresh`` (a refit): first move the files the earlier run recorded into ``out/earlier_run/``
    (:data:`EARLIER_RUN`; the one set aside before is removed), so no stale result sits beside the
    new ones and a refit that then fails has lost nothing; the record then lists those files under
    ``earlier_run/`` and what this run writes. ``fresh=False`` keeps them in place (a command that
    rewrites part of its folder, e.g. ``paper_figures/make.py --only``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if not fresh:
        if not (out / WRITTEN_RECORD).is_file():
            atomic_write_text(out / WRITTEN_RECORD, "")
        return
    kept = _set_aside_recorded(out)
    atomic_write_text(out / WRITTEN_RECORD, "".join(f"{EARLIER_RUN}/{rel}\n" for rel in kept))
    if kept:
        print(f"{out}: moved {len(kept)} file(s) of the earlier run here into {EARLIER_RUN}/ "
              f"(listed in its {WRITTEN_RECORD}; the next refit replaces them)")


def _set_aside_recorded(out: Path) -> list[str]:
    """Move every file ``out``'s record lists (only inside ``out``; a link is moved, never followed)
    into ``out/earlier_run/`` under the same relative path, after removing what an earlier refit set
    aside there; the sub-folders left empty go. Returns the moved files' relative paths."""
    root, aside, kept, folders = out.resolve(), out / EARLIER_RUN, [], set()
    lines = [rel for rel in _record_lines(out) if not rel.startswith(EARLIER_RUN + "/")]
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside)
    for rel in lines:
        path = out / rel
        parent = path.parent.resolve()
        if Path(rel).is_absolute() or ".." in Path(rel).parts or not (parent == root or root in parent.parents):
            continue
        if path.is_symlink() or path.is_file():
            (aside / rel).parent.mkdir(parents=True, exist_ok=True)
            path.rename(aside / rel)  # a move inside the folder, not a write
            kept.append(rel)
            folders.update(p for p in path.parents if p != out and out in p.parents)
    for folder in sorted(folders, key=lambda p: -len(p.parts)):
        if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
            folder.rmdir()
    return kept


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
    kind : {"results", "run", "grid", "series", "checkpoint", "shipped"}
        What the folder receives: a command's results (an existing folder must carry the package's
        :data:`WRITTEN_RECORD` and hold only files it lists, and no symlink: the command calls
        :func:`claim_folder` before its first write), a run's or grid's own files, a scored
        series (``ihtrain.score``: new, empty or that series), a converted checkpoint
        (``ihtrain.score.convert``: as results, never in or over a run, series or grid), or the
        repository's shipped example tables (regenerated on purpose, by name).

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
                   parser: argparse.ArgumentParser | None = None, allowed_in_run: Iterable[str] = ()) -> Path:
    """An output file a command may write, or one clear line: refused when its name holds a control
    character, it is a folder or lies under a file, lies in a protected place (:func:`place_error`),
    is one of ``inputs``, lies anywhere in a run's, series' or grid's directory (``allowed_in_run``:
    the names a command may write in a run directory itself, ``ablate``'s own tables), or exists
    without the package having written it (:func:`written_by_package`). A symlink at ``out`` is
    replaced by the file, never written through (:func:`ihstats.base.fileio.atomic_write`). Call
    :func:`record_written` after writing it. Other parameters as :func:`check_out_dir`."""
    out = Path(out)
    target = out.parent.resolve() / out.name  # a link named ``out`` is replaced, so its own path counts
    msg = name_error(out, flag)
    if msg is None and (out.is_dir() or any(p.exists() and not p.is_dir() for p in out.parents)):
        msg = f"{flag} {out}: give a CSV file path (it is a folder, or lies under a file)"
    elif msg is None and (why := place_error(out.parent)):
        msg = f"{flag} {out}: its folder {why}; give another path"
    elif msg is None and any(target == Path(src).resolve() for src in inputs):
        msg = f"{flag} {out}: is the command's input; writing it would replace what was read; give another path"
    elif msg is None and (owner := _owned_by(target, allowed_in_run)):
        msg = f"{flag} {out}: {owner}{_cwd_hint(out, data_folder_of(target.parent), flag)}"
    elif msg is None and (out.exists() or out.is_symlink()) and not written_by_package(out):
        msg = (f"{flag} {out}: exists and was not written by this package (not in {out.parent / WRITTEN_RECORD}); "
               f"move it away or give another path")
    if msg:
        _refuse(msg, parser)
    return out


__all__ = ["COUNT", "NONNEG_INT", "PROBABILITY_OPEN", "SYSTEM_FOLDERS", "WRITTEN_RECORD", "OutputPathError", "Range",
           "check_args", "check_out_dir", "check_unused", "claim_folder", "check_out_file", "data_folder_of", "name_error",
           "place_error", "range_error", "record_written", "written_by_package"]
