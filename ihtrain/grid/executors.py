"""Where grid runs execute: local worker processes or Ray tasks.

Each run trains in its own process, so a crash of one run (an exception, a segfault, an OOM kill)
is recorded as ``failed`` and the others go on. Thread and device placement is set in the worker
process (``torch.set_num_threads``, ``CUDA_VISIBLE_DEVICES``) rather than in the run config, so a
run's id does not depend on the machine that trained it.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from ihstats.base.command import EXIT_FAILED, EXIT_IO_ERROR
from ihstats.base.contract import read_status, status_record, write_status
from ihtrain.config import RunConfig
from ihstats.base.fileio import UnreadableFile, io_error_of
from ihtrain.run.locks import run_lock


@dataclass
class Task:
    """One run to execute: its config, run directory and placement. The config is the validated
    :class:`RunConfig` itself (pickled to the worker), never rebuilt from a dict there."""

    run_id: str
    config: RunConfig
    run_dir: str
    total_steps: int
    start_step: int = 0
    threads: int = 1
    gpu: str | None = None  # a CUDA device index, or None for CPU
    make_figures: bool = True
    members: list["Task"] = field(default_factory=list)  # a pack (ihtrain.run.packed): its runs, trained together

    @property
    def runs(self) -> list["Task"]:
        """The runs this task trains: its members if it is a pack, else itself."""
        return self.members or [self]


@dataclass
class Outcome:
    run_id: str
    status: dict[str, Any]  # the run's final status.json
    exitcode: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")




def mark_failed(run_dir: str | Path, reason: str, old: dict[str, Any] | None) -> dict[str, Any]:
    """Record a run that died without recording it itself (signal, OOM kill, lost Ray worker)."""
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    return write_status(run_dir, "failed", (old or {}).get("step", 0), reason, crossing=(old or {}).get("crossing"))


def _resumable_io(st: dict[str, Any] | None, run_dir: str | Path) -> dict[str, Any]:
    """The status of a run an I/O error stopped: ``running`` (a plain rerun resumes it) with the
    cause in ``io_error``; as the worker wrote it, or, when the disk refused even that, as the grid
    reports it (status.json keeps its last resumable state)."""
    if st and st.get("io_error"):
        return st
    why = f"see {Path(run_dir) / 'worker.log'}"
    return status_record("running", (st or {}).get("step", 0), f"stopped by an I/O error ({why}); fix it, then rerun "
                         "the same command to resume", io_error=why)


def settle(run_dir: str | Path, exitcode: int | None, error: str = "") -> dict[str, Any]:
    """The run's final status after its process ended: trust status.json unless it says running."""
    try:
        st = read_status(run_dir)
    except UnreadableFile as e:  # never overwritten: the file is the evidence, and the run may be done
        return status_record("unreadable", 0, str(e))
    except OSError as e:
        return _resumable_io(None, run_dir) if io_error_of(e) else mark_failed(run_dir, str(e), None)
    if st and st["status"] in ("done", "failed"):
        return st
    if st and st.get("stop_reason") == "interrupted" and exitcode in (0, 130):
        return st  # stopped on request: stays resumable
    if (st and st.get("io_error")) or exitcode == EXIT_IO_ERROR:
        return _resumable_io(st, run_dir)
    holder = run_lock(run_dir).holder()
    if holder:  # a trainer outside this grid is training the run: its status.json is not ours to overwrite
        return status_record("failed", (st or {}).get("step", 0), f"another trainer holds the run directory ({holder})")
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name if -exitcode in signal.Signals._value2member_map_ else -exitcode
        why = f"worker killed by signal {name}" + (" (out of memory?)" if -exitcode == signal.SIGKILL else "")
    else:
        why = error or f"worker exited with code {exitcode} without finishing" + _last_error(run_dir)
    return mark_failed(run_dir, why, st)


def _last_error(run_dir: str | Path) -> str:
    """``": <the last line of worker.log>"``: the exception of a run that failed before it could record
    it (a damaged config.json names itself there), or "" without a log."""
    log = Path(run_dir) / "worker.log"
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines()[-50:] if line.strip()]
    except OSError:
        return ""
    return f": {lines[-1].strip()}" if lines and not lines[-1].startswith("--- ") else ""


# ------------------------------------------------------------------------------ the worker
def _die_with_parent() -> None:
    """Linux: have the kernel SIGKILL this worker when the grid process dies (even by kill -9),
    so an orphan never keeps writing into a run directory that a rerun is resuming."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
        except OSError:
            pass


def _place(threads: int, gpu: str | None) -> None:
    """Before torch is imported: threads for BLAS/OpenMP and the visible GPU."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["MKL_NUM_THREADS"] = str(threads)
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu


STOP_FILE = "stop.request"  # in a run directory: a Ray run's request to checkpoint and stop
POLL_S = 0.5  # how often a run reports its progress (Ray) and looks for its stop file


def run_task(task: Task, counter: Any = None, parent_pid: int | None = None,
             stop_file: Path | None = None, report: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Train one run in this process (called in the worker). Returns its final status.

    The run stops at the next update boundary, checkpointed and resumable, on SIGTERM, when its
    parent (the grid) is gone, or when ``stop_file`` appears. The updates done this session go to
    ``counter.value`` (a shared integer, every update) and to ``report`` (every 0.5 s, with the
    stop-file check, so neither costs anything next to an update)."""
    # torch only here, in the worker, after _place: its thread pools read OMP_NUM_THREADS at import
    import torch

    from ihtrain.run.packed import train_pack  # imported in the worker: the grid process need not load torch
    from ihtrain.run.train import train_run

    torch.set_num_threads(max(1, task.threads))
    updates = -1  # should_stop runs once before each update (and once at the end): the first call sees 0
    next_poll = 0.0

    def should_stop() -> bool:
        nonlocal updates, next_poll
        updates += 1
        if counter is not None:
            counter.value = updates
        if _STOP["requested"] or (parent_pid is not None and os.getppid() != parent_pid):
            return True
        if time.monotonic() < next_poll:
            return False
        next_poll = time.monotonic() + POLL_S
        if report is not None:
            report(updates)
        return stop_file is not None and stop_file.exists()

    if task.members:
        statuses = train_pack([m.config for m in task.members], [m.run_dir for m in task.members],
                              should_stop=should_stop, make_figures=task.make_figures)
        return {"packed": statuses}
    return train_run(task.config, task.run_dir, progress=False, should_stop=should_stop,
                     make_figures=task.make_figures)


_STOP = {"requested": False}


def _request_stop(*_: Any) -> None:
    """SIGTERM: finish the current update, checkpoint, and leave the run resumable."""
    _STOP["requested"] = True


def _worker_main(task: Task, counter: Any, parent_pid: int, log_path: str) -> None:
    _die_with_parent()
    if os.getppid() != parent_pid:
        os._exit(3)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the grid process handles Ctrl-C and stops us
    signal.signal(signal.SIGTERM, _request_stop)
    _place(task.threads, task.gpu)
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "a", buffering=1)  # the worker's output goes to the run's log, not the terminal
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    print(f"--- {_now()} worker pid {os.getpid()} run {task.run_id} threads {task.threads} gpu {task.gpu}"
          + (f" packed: {' '.join(m.run_id for m in task.members)}" if task.members else ""))
    try:
        run_task(task, counter, parent_pid)
    except KeyboardInterrupt:
        sys.exit(130)
    except BaseException as e:  # noqa: BLE001 - train_run has recorded it in status.json
        traceback.print_exc()
        log.flush()
        sys.exit(EXIT_IO_ERROR if io_error_of(e) else EXIT_FAILED)
    log.flush()
    sys.exit(0)


# ------------------------------------------------------------------------------ executors
Callback = Callable[[Outcome], None]
Progress = Callable[[dict[str, tuple[int, int]]], None]  # run_id -> (step, total) of active runs


class LocalExecutor:
    """A pool of ``workers`` spawned processes, one fresh process per task (a run, or a pack of runs
    trained together: each member is reported when its status says it has finished)."""

    def __init__(self, workers: int, gpus: list[str] | None = None, poll_s: float = 0.5):
        self.workers = max(1, workers)
        self.gpus = list(gpus or [])
        self.poll_s = poll_s
        self.ctx = mp.get_context("spawn")

    def run(self, tasks: list[Task], on_done: Callback, on_progress: Progress | None = None) -> None:
        pending = list(tasks)
        active: dict[str, tuple[Any, Task, Any]] = {}
        reported: set[str] = set()  # runs whose outcome on_done has had (a pack's members finish one by one)
        before: dict[str, Any] = {}  # a pack member's status.json when its pack started (a failed one may rerun)

        def report(task: Task, exitcode: int | None) -> None:
            for run in task.runs:
                if run.run_id not in reported:
                    reported.add(run.run_id)
                    on_done(Outcome(run.run_id, settle(run.run_dir, exitcode), exitcode))

        try:
            while pending or active:
                while pending and len(active) < self.workers:
                    task = pending.pop(0)
                    if self.gpus:  # the least busy device
                        busy = [t.gpu for _, t, _ in active.values()]
                        task.gpu = min(self.gpus, key=busy.count)
                    counter = self.ctx.RawValue("l", 0)  # one writer (the worker), no lock needed
                    p = self.ctx.Process(target=_worker_main, name=f"ihgrid-{task.run_id}",
                                         args=(task, counter, os.getpid(), str(Path(task.run_dir) / "worker.log")))
                    before.update({r.run_id: read_status(r.run_dir) for r in task.members})
                    p.start()
                    active[task.run_id] = (p, task, counter)
                for rid, (p, task, _) in list(active.items()):
                    if p.exitcode is None:
                        for run in task.members:  # a member that stopped or failed has left its pack
                            st = read_status(run.run_dir)
                            if run.run_id not in reported and st != before[run.run_id] and \
                                    (st or {}).get("status") in ("done", "failed"):
                                reported.add(run.run_id)
                                on_done(Outcome(run.run_id, st))
                        continue
                    p.join()
                    del active[rid]
                    report(task, p.exitcode)
                if on_progress is not None:
                    on_progress({r.run_id: (r.start_step + c.value, r.total_steps)
                                 for _, t, c in active.values() for r in t.runs if r.run_id not in reported})
                time.sleep(self.poll_s)
        except BaseException:  # Ctrl-C, or the grid itself failed (a full disk): stop the workers cleanly
            # each saves a checkpoint and stays resumable
            for p, _, _ in active.values():
                if p.exitcode is None:
                    p.terminate()  # SIGTERM -> the worker checkpoints and stops
            for rid, (p, task, _) in active.items():
                p.join(timeout=120)
                if p.exitcode is None:
                    p.kill()
                    p.join()
            raise


def _python_signal_handlers() -> dict[int, Any]:
    """The Python handlers of SIGINT and SIGTERM (main thread only, where they can be set)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: h for s in (signal.SIGINT, signal.SIGTERM) if callable(h := signal.getsignal(s))}


def ray_task_options(threads: int, gpu_fraction: float) -> dict[str, Any]:
    """Per-run resource request: CPUs = threads; a GPU fraction packs small runs per device."""
    opts: dict[str, Any] = {"num_cpus": threads, "max_retries": 0}
    if gpu_fraction > 0:
        opts["num_gpus"] = gpu_fraction
    return opts


class ProgressBoard:
    """A Ray actor (``num_cpus=0``) where running tasks post their update counts and the grid
    reads them for its per-run progress, on any node of the cluster."""

    def __init__(self) -> None:
        self.updates: dict[str, int] = {}

    def post(self, run_id: str, updates: int) -> None:
        self.updates[run_id] = updates

    def read(self) -> dict[str, int]:
        return dict(self.updates)


def _ray_entry(task: Task, board: Any = None) -> dict[str, Any] | None:
    # Ray sets CUDA_VISIBLE_DEVICES for GPU tasks; a fresh worker per task (max_calls=1)
    stop_file = Path(task.run_dir) / STOP_FILE
    if stop_file.exists():  # the grid was stopped before this task started: leave the run as it is
        return None
    task.gpu = None
    _place(task.threads, None)
    report = (lambda updates: board.post.remote(task.run_id, updates)) if board is not None else None
    return run_task(task, stop_file=stop_file, report=report)


class RayExecutor:
    """Each run a Ray task with ``num_cpus = threads`` and ``num_gpus = 1 / runs_per_gpu`` (if GPUs).

    Run directories must sit on a filesystem that every Ray node can write (a shared disk). That
    disk also carries the stop request: on Ctrl-C or SIGTERM the grid writes ``stop.request`` into
    each unfinished run's directory, the runs checkpoint and return, and tasks not yet started
    return at once; only a run still busy after ``grace_s`` is cancelled by force.
    """

    def __init__(self, address: str | None = None, runs_per_gpu: int = 1, init_kwargs: dict | None = None,
                 grace_s: float = 120.0):
        self.address = address
        self.runs_per_gpu = runs_per_gpu
        self.init_kwargs = init_kwargs or {}
        self.grace_s = grace_s

    def run(self, tasks: list[Task], on_done: Callback, on_progress: Progress | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise RuntimeError("--executor ray needs Ray: pip install 'ihlaw[ray]'") from None
        started = False
        if not ray.is_initialized():
            kwargs = {"include_dashboard": False, "log_to_driver": False, **self.init_kwargs}
            handlers = _python_signal_handlers()
            ray.init(address=self.address, **kwargs)
            # Ray's core worker installs its own C-level SIGTERM handler, which exits at once; put
            # the grid's back so that `kill` stops the runs gracefully, as without Ray
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
            started = True
        refs: dict[Any, Task] = {}
        stop_files = [Path(t.run_dir) / STOP_FILE for t in tasks]
        for f in stop_files:  # left by an earlier stop that died before cleaning up
            f.unlink(missing_ok=True)
        waiting: list[Any] = []
        board = None
        try:
            gpu_fraction = 1.0 / self.runs_per_gpu if ray.cluster_resources().get("GPU", 0) > 0 else 0.0
            remote = ray.remote(max_calls=1)(_ray_entry)  # a fresh worker process per run
            board = ray.remote(num_cpus=0)(ProgressBoard).remote()
            for t in tasks:
                opts = ray_task_options(t.threads, gpu_fraction)
                ref = remote.options(**opts, name=f"ihgrid-{t.run_id}").remote(t, board)
                refs[ref] = t
                waiting.append(ref)
            reading = board.read.remote()
            while waiting:
                ready, waiting = ray.wait(waiting, num_returns=1, timeout=1.0)
                for ref in ready:
                    t = refs[ref]
                    err = ""
                    try:
                        ray.get(ref)
                    except Exception as e:  # noqa: BLE001 - task error or lost worker
                        err = f"ray task failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                    on_done(Outcome(t.run_id, settle(t.run_dir, 1 if err else 0, err)))
                if on_progress is not None and reading is not None and not ray.wait([reading], timeout=0)[1]:
                    try:  # the board's last answer; ask again, never block on it
                        updates, reading = ray.get(reading), board.read.remote()
                    except Exception:  # noqa: BLE001 - a lost board costs the per-run progress, nothing else
                        updates, reading = {}, None
                    running = {refs[ref].run_id: refs[ref] for ref in waiting}
                    on_progress({rid: (t.start_step + updates[rid], t.total_steps)
                                 for rid, t in running.items() if rid in updates})
        except KeyboardInterrupt:
            self._stop(ray, waiting, refs)
            raise
        finally:
            for f in stop_files:
                f.unlink(missing_ok=True)
            if board is not None:  # on a cluster we did not start, it would outlive the grid
                try:
                    ray.kill(board)
                except Exception:  # noqa: BLE001 - the cluster is gone, and the board with it
                    pass
            if started:
                ray.shutdown()

    def _stop(self, ray: Any, waiting: list[Any], refs: dict[Any, Task]) -> None:
        """Ask the unfinished runs to checkpoint and stop; force-cancel what is left after grace_s
        (or at a second Ctrl-C)."""
        for ref in waiting:
            Path(refs[ref].run_dir).mkdir(parents=True, exist_ok=True)
            (Path(refs[ref].run_dir) / STOP_FILE).touch()
        try:
            if waiting:
                _, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=self.grace_s)
        except KeyboardInterrupt:
            pass
        for ref in waiting:
            ray.cancel(ref, force=True)
