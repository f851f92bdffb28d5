"""Atomic file writes (a reader never sees a half-written file under its final name) and checked
reads (a damaged file gives :class:`UnreadableFile` naming it, what is wrong and what to do).

Fault injection (tests only): ``IHLAW_FAULT_ENOSPC=NAME:N`` makes the N-th atomic write of a file
named NAME in each process raise ``OSError(ENOSPC)``, as a full disk would; unset, it costs nothing.

Torch-free and stdlib + pandas only: both halves read and write through it (the trainer's
checkpoints, which need torch, are :mod:`ihtrain.run.checkpoint`'s).
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable
import pandas as pd


_UMASK = os.umask(0)
os.umask(_UMASK)


_FAULT_COUNTS: dict[str, int] = {}


def _maybe_inject_enospc(path: Path) -> None:
    """The ``IHLAW_FAULT_ENOSPC`` hook (module docstring): a simulated full disk for tests."""
    spec = os.environ.get("IHLAW_FAULT_ENOSPC")
    if not spec:
        return
    name, _, nth = spec.rpartition(":")
    if path.name != name:
        return
    _FAULT_COUNTS[name] = _FAULT_COUNTS.get(name, 0) + 1
    if _FAULT_COUNTS[name] == int(nth):
        raise OSError(errno.ENOSPC, "No space left on device (simulated: IHLAW_FAULT_ENOSPC)", str(path))


#: the file in an output folder naming, one a line, the files the package wrote there (relative
#: paths, for files in its sub-folders): :func:`atomic_write` adds every file it writes under a
#: folder that carries one (``ihstats.base.cli_checks`` reads it: a file it does not list is the user's)
WRITTEN_RECORD = ".ihlaw-written"
#: how many folders up :func:`atomic_write` looks for a :data:`WRITTEN_RECORD` (a fit's figures/, onset/)
_RECORD_DEPTH = 3


def control_character(name: str) -> str | None:
    """The first control character of ``name`` (newline, tab, escape, ...), as ``repr``; None if none.
    A name holding one could forge a line of :data:`WRITTEN_RECORD` or a terminal message."""
    bad = next((c for c in str(name) if ord(c) < 32 or ord(c) == 127), None)
    return None if bad is None else repr(bad)


def _record_in_folder(path: Path) -> None:
    """Add ``path`` (relative) to the :data:`WRITTEN_RECORD` of the nearest folder above that has one."""
    for depth, folder in enumerate(path.parents):
        if depth >= _RECORD_DEPTH:
            return
        record = folder / WRITTEN_RECORD
        if record.is_file() and not record.is_symlink():
            rel = path.relative_to(folder).as_posix()
            lines = record.read_text(errors="replace").split("\n")
            temporary = path.name.startswith(".") and path.name.endswith(".tmp")  # a nested atomic write's
            if rel != WRITTEN_RECORD and rel not in lines and not temporary:
                _replace_with(record, "".join(f"{x}\n" for x in lines if x) + rel + "\n")
            return


def _replace_with(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o666 & ~_UMASK)
    os.replace(tmp, path)


def atomic_write(path: str | Path, write: Callable[[str], None]) -> Path:
    """Call ``write(tmp_path)`` then rename into place (same directory, so rename is atomic).

    Never writes through a symlink: the rename replaces a link named ``path`` with the new file
    (its target is left as it was). A name with a control character is refused (ValueError). The
    file is added to the :data:`WRITTEN_RECORD` of its output folder when that folder has one."""
    path = Path(path)
    if (bad := control_character(path.name)) is not None:
        raise ValueError(f"{path!r}: the file name holds the control character {bad}; give a plain name")
    path.parent.mkdir(parents=True, exist_ok=True)
    _maybe_inject_enospc(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual permissions
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _record_in_folder(path)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def atomic_write_parquet(path: str | Path, frame: Any) -> Path:
    return atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))


def atomic_write_csv(path: str | Path, frame: Any, **to_csv: Any) -> Path:
    """``frame.to_csv(path, **to_csv)``, atomically (a result table is never half-written nor
    written through a symlink)."""
    return atomic_write(path, lambda tmp: frame.to_csv(tmp, **to_csv))


# ---------------------------------------------------------------------------- checked reads
# Every file a run or grid directory holds is read through these: a damaged file gives one error
# that names it, says what is wrong and what to do, never a bare JSONDecodeError or pyarrow trace.

class UnreadableFile(ValueError):
    """A file is empty, truncated or not in its format. ``str(e)`` is ``"PATH: PROBLEM; REMEDY"``."""

    def __init__(self, path: str | Path, problem: str, remedy: str = ""):
        self.path, self.problem, self.remedy = Path(path), problem, remedy
        super().__init__(f"{path}: {problem}" + (f"; {remedy}" if remedy else ""))


# errno values of a cause outside the run (a full disk, lost permissions, a failing device): the run
# itself is fine and resumes from its checkpoint once the cause is fixed
IO_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EIO,
                       errno.EFBIG})


def io_error_of(e: BaseException | None) -> OSError | None:
    """The OSError with an :data:`IO_ERRNOS` errno in ``e`` or its causes, else None."""
    seen = 0
    while e is not None and seen < 10:
        if isinstance(e, OSError) and e.errno in IO_ERRNOS:
            return e
        e, seen = e.__cause__ or e.__context__, seen + 1
    return None


def describe_os_error(e: OSError) -> str:
    """``"PATH: No space left on device"`` (the path when the error carries one)."""
    where = e.filename if e.filename is not None else ""
    return f"{where}: {e.strerror or e}" if where else str(e.strerror or e)


def first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else ""


def is_os_error(e: BaseException) -> bool:
    """An error of the operating system (errno set), as opposed to a format error that pyarrow or
    torch report as an OSError without an errno: the first is raised as is, the second is the file's."""
    return isinstance(e, OSError) and e.errno is not None


def read_json(path: str | Path, what: str = "file", remedy: str = "") -> dict[str, Any]:
    """A JSON object from ``path``; :class:`UnreadableFile` when missing, empty, truncated or not
    an object. ``what`` names the file's role in the message; ``remedy`` says what to do."""
    path = Path(path)
    if not path.is_file():
        raise UnreadableFile(path, f"missing ({what})", remedy)
    text = path.read_text(errors="replace")
    if not text.strip():
        raise UnreadableFile(path, f"empty ({len(text)} bytes): the {what} was not written to the end", remedy)
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise UnreadableFile(path, f"invalid JSON ({e}; truncated or damaged {what})", remedy) from None
    if not isinstance(obj, dict):
        raise UnreadableFile(path, f"holds a JSON {type(obj).__name__}, expected an object ({what})", remedy)
    return obj


def read_parquet(path: str | Path, columns: list[str] | None = None, what: str = "table",
                 remedy: str = "") -> Any:
    """A DataFrame from ``path``; :class:`UnreadableFile` when missing, empty, not parquet, or
    without the asked ``columns``. Operating-system errors (permissions, I/O) are raised as they are."""
    path = Path(path)
    if not path.is_file():
        raise UnreadableFile(path, f"missing ({what})", remedy)
    if path.stat().st_size == 0:
        raise UnreadableFile(path, f"empty (0 bytes): the {what} was not written to the end", remedy)
    try:
        return pd.read_parquet(path, columns=columns)
    except Exception as e:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, KeyError, ...
        if is_os_error(e):
            raise
        first = first_line(e)
        problem = (f"lacks column(s) {columns} ({what})" if "FieldRef" in first or isinstance(e, KeyError)
                   else f"not a readable parquet file ({type(e).__name__}: {first}); the {what} is damaged")
        raise UnreadableFile(path, problem, remedy) from None


def read_table(path: str | Path, what: str = "table", remedy: str = "") -> Any:
    """A CSV or parquet table (by suffix) with at least one row; :class:`UnreadableFile` otherwise."""
    path = Path(path)
    if path.suffix == ".parquet":
        frame = read_parquet(path, what=what, remedy=remedy)
    else:
        if not path.is_file():
            raise UnreadableFile(path, f"missing ({what})", remedy)
        try:
            frame = pd.read_csv(path)
        except pd.errors.EmptyDataError:
            raise UnreadableFile(path, f"empty: no header and no rows ({what})", remedy) from None
        except (pd.errors.ParserError, UnicodeDecodeError) as e:
            raise UnreadableFile(path, f"not a readable CSV file ({e}) ({what})", remedy) from None
    if frame.empty:
        raise UnreadableFile(path, f"has no rows (columns: {', '.join(map(str, frame.columns))}) ({what})", remedy)
    return frame
