"""Exclusive directory locks, shared by the grid (``.grid.lock``) and single runs (``.run.lock``).

The lock is ``flock`` on a file in the directory: the kernel drops it when the holder dies, even by
``kill -9``, so a stale lock file never blocks a rerun; a holder that ends normally removes the file. The holder writes ``pid N on HOST`` into the
file so that whoever is refused can be told who holds it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class DirectoryLocked(RuntimeError):
    """Another live process holds the directory's lock (the message names it)."""


def _holder_text(fd: int) -> str:
    """The ``pid N on HOST`` line a lock holder wrote into the lock file."""
    return os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown pid"


def _still_named(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (not unlinked, not replaced)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


class DirLock:
    """An exclusive, non-blocking lock on ``directory`` through the file ``name`` in it; ``what``
    names the kind of holder in the refusal ("another grid is running on this directory")."""

    def __init__(self, directory: str | Path, name: str, what: str):
        self.path = Path(directory) / name
        self.what = what
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder_text(fd)
            os.close(fd)
            raise DirectoryLocked(f"{self.path.parent}: another {self.what} is running on this directory "
                                  f"({holder}); wait for it or stop it") from None
        if not _still_named(fd, self.path):  # a holder unlinked it between our open and flock: lock anew
            os.close(fd)
            return self.acquire()
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}\n".encode(), 0)
        self.fd = fd

    def holder(self) -> str | None:
        """Who holds the lock now (``"pid N on HOST"``), or None when no live process holds it."""
        if not self.path.is_file():
            return None
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder_text(fd)
        finally:
            os.close(fd)  # also drops the shared lock if we got it
        return None

    def release(self) -> None:
        """Remove the lock file, then drop the lock: a finished run or grid leaves no lock file behind.
        The file goes while still locked, so whoever opened it meanwhile sees it gone (acquire checks)."""
        if self.fd is not None:
            if _still_named(self.fd, self.path):
                self.path.unlink(missing_ok=True)
            os.close(self.fd)  # closing drops the flock
            self.fd = None

    def __enter__(self) -> "DirLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


RUN_LOCK_NAME = ".run.lock"


def run_lock(run_dir: str | Path) -> DirLock:
    """The lock a trainer holds on its run directory while it trains there."""
    return DirLock(run_dir, RUN_LOCK_NAME, "trainer")


GRID_LOCK_NAME = ".grid.lock"


class GridLock(DirLock):
    """The grid directory's lock (``.grid.lock``): one grid at a time. Each run's worker takes its own
    run directory's lock (:func:`run_lock`), a different file, so the two never wait on each other."""

    def __init__(self, grid_dir: str | Path):
        super().__init__(grid_dir, GRID_LOCK_NAME, "grid")
