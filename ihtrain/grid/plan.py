"""How a grid's runs are executed: the options, start order, packing, workers and threads, the
data built once, and the executor tasks. :mod:`ihtrain.grid.cli` decides *what* runs; this module
decides *where and in which order*, from :class:`GridOptions`.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ihtrain.config import ConfigError
from ihtrain.data import DataError, cached_stream_config, load_stream
from ihtrain.grid.executors import LocalExecutor, RayExecutor, Task
from ihtrain.grid.expand import PlannedRun
from ihtrain.grid.run_cost import budget_of, human, train_flops_per_token

PACK_AUTO_MAX_TOKENS = 512  # --pack's default packs CPU runs of at most this many tokens per update (B x C)


@dataclass(frozen=True)
class GridOptions:
    """How :func:`ihtrain.grid.cli.execute` runs a grid: the command line's execution flags, checked
    once (``--workers`` etc. must be positive). Defaults are the CLI's."""

    retry_failed: bool = False  # rerun runs recorded as failed
    order: Literal["longest-first", "spec"] = "longest-first"
    executor: Literal["local", "ray"] = "local"
    workers: int | None = None  # local: parallel tasks (None: CPUs // threads, or GPUs x runs_per_gpu)
    threads_per_run: int | None = None  # None: CPUs split between workers (ray: 1)
    runs_per_gpu: int = 1
    ray_address: str | None = None  # None: start a local Ray cluster
    pack: bool | None = None  # None: auto (CPU runs of at most PACK_AUTO_MAX_TOKENS per update)
    pack_size: int = 8
    progress: bool = True  # progress bars
    figures: bool = True  # each run's curves.png/pdf

    def __post_init__(self) -> None:
        for name in ("workers", "threads_per_run", "runs_per_gpu", "pack_size"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ConfigError(f"--{name.replace('_', '-')}: must be a positive integer, got {v}")
        if self.order not in ("longest-first", "spec"):
            raise ConfigError(f"--order: must be longest-first or spec, got {self.order!r}")
        if self.executor not in ("local", "ray"):
            raise ConfigError(f"--executor: must be local or ray, got {self.executor!r}")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> GridOptions:
        """From ``ihtrain.grid.cli.build_parser().parse_args(...)``."""
        return cls(retry_failed=args.retry_failed, order=args.order, executor=args.executor, workers=args.workers,
                   threads_per_run=args.threads_per_run, runs_per_gpu=args.runs_per_gpu, ray_address=args.ray_address,
                   pack=args.pack, pack_size=args.pack_size, progress=not args.no_progress,
                   figures=not args.no_figures)


# ------------------------------------------------------------------------------ --only
def _same(value: Any, text: str) -> bool:
    """Whether a run's factor is the ``--only`` value: as numbers when both are (``1e-2`` is
    ``0.01``), else as text."""
    if str(value) == text:
        return True
    try:
        return not isinstance(value, (bool, str)) and float(value) == float(text)
    except (TypeError, ValueError):
        return False


def select_runs(runs: list[PlannedRun], only: str | None) -> set[str] | None:
    """``--only``: comma-separated run ids or unique id prefixes, or cell coordinates ``FIELD=VALUE``
    (a run matches when every coordinate given matches its manifest column) -> the ids (None: all)."""
    if only is None:
        return None
    keys = [k.strip() for k in only.split(",") if k.strip()]
    coords = dict(k.split("=", 1) for k in keys if "=" in k)
    chosen = set()
    if coords:
        unknown = [f for f in coords if runs and f not in runs[0].factors]
        if unknown:
            raise ConfigError(f"--only: {unknown[0]} is not an axis of this grid; its axes: {', '.join(runs[0].factors)}")
        chosen = {r.run_id for r in runs if all(_same(r.factors[f], v) for f, v in coords.items())}
        if not chosen:
            raise ConfigError(f"--only: no run of this grid has {', '.join(f'{f}={v}' for f, v in coords.items())}; "
                              f"see --dry-run for its cells")
    for key in (k for k in keys if "=" not in k):
        hits = [r.run_id for r in runs if r.run_id.startswith(key)]
        if len(hits) != 1:
            what = "no run id" if not hits else f"{len(hits)} run ids ({', '.join(hits)})"
            raise ConfigError(f"--only: {what} of this grid start with {key!r} (ids hash the whole config: another "
                              f"--set gives other ids; or select by cell, FIELD=VALUE); its ids: "
                              + ", ".join(r.run_id for r in runs))
        chosen.add(hits[0])
    return chosen


# ------------------------------------------------------------------------------ order
def flops_left(run: PlannedRun, state: dict[str, Any] | None) -> float:
    """Training FLOPs between a run's checkpoint and its budget's cap (until-emergence: the cap
    bounds the run, and its tokens per update and model size set its pace)."""
    steps_left = budget_of(run.config)["max_steps"] - int((state or {}).get("step", 0))
    return max(0, steps_left) * run.config.tokens_per_step * train_flops_per_token(run.config)


def start_order(todo: list[PlannedRun], states: dict[str, tuple[str, Any]], order: str) -> list[PlannedRun]:
    """``longest-first``: interrupted runs resume first (their results are closest), then the rest
    start by most FLOPs left, ties in spec order. With several workers this is the classic
    longest-processing-time rule: in spec order the largest-B x C runs would start last and keep one
    worker busy for hours after the others finish. ``spec``: as listed."""
    if order == "spec":
        return list(todo)
    return sorted(todo, key=lambda r: (states[r.run_id][0] != "interrupted", -flops_left(r, states[r.run_id][1])))


# ------------------------------------------------------------------------------ placement
def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cuda_devices() -> list[str]:
    # torch is imported here: the grid process itself never trains, and `--status` / `--dry-run`
    # answer without paying for torch
    import torch

    if not torch.cuda.is_available():
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [d.strip() for d in visible.split(",") if d.strip()] if visible else []
    return ids or [str(i) for i in range(torch.cuda.device_count())]


def plan_local(n_tasks: int, workers: int | None, threads: int | None, gpus: list[str],
               runs_per_gpu: int) -> tuple[int, int]:
    """(workers, threads per run): threads split between workers; on GPUs, runs_per_gpu per device."""
    cpus = cpu_count()
    if gpus:
        w = workers or len(gpus) * runs_per_gpu
    else:
        w = workers or max(1, cpus // (threads or 1))
    w = max(1, min(w, n_tasks))
    t = threads or max(1, cpus // w)
    return w, t


def pack_groups(todo: list[PlannedRun], pack_size: int, spread: int, auto: bool) -> list[list[PlannedRun]]:
    """The runs to execute, in groups that train packed (:func:`ihtrain.run.packed.pack_key`: same model
    shape, B, C, dtype, device), in start order; a run that cannot be packed is a group of its own.
    A group of n runs is split into packs of ``min(pack_size, ceil(n / spread))``: on a CPU, two
    one-thread packs beat one two-thread pack (a tiny model's ops gain little from a second thread).
    ``auto``: pack only runs of at most ``PACK_AUTO_MAX_TOKENS`` tokens per update (where it pays)."""
    from ihtrain.run.packed import pack_key  # imports torch: not for --status, --dry-run, --list-presets

    groups: dict[Any, list[PlannedRun]] = {}
    for r in todo:
        key = pack_key(r.config) if pack_size > 1 else None
        if auto and r.config.train.batch_size * r.config.train.context > PACK_AUTO_MAX_TOKENS:
            key = None
        groups.setdefault(key if key is not None else ("alone", r.run_id), []).append(r)
    out = []
    for runs in groups.values():
        size = min(pack_size, max(1, math.ceil(len(runs) / spread)))
        out += [runs[i:i + size] for i in range(0, len(runs), size)]
    return out


@dataclass
class Placement:
    """Where the runs execute: the executor, the runs grouped into tasks (packs), threads per task."""

    executor: Any  # LocalExecutor | RayExecutor
    groups: list[list[PlannedRun]]
    threads: int
    description: str  # the grid log's line about it


def place(todo: list[PlannedRun], options: GridOptions) -> Placement:
    """Pack the runs and size the executor: local workers split the CPUs (or GPUs x runs_per_gpu);
    Ray gets one task per run, never packed."""
    o = options
    local = o.executor == "local"
    gpus = cuda_devices() if local and todo else []
    pack = local and (o.pack if o.pack is not None else not gpus)
    spread = o.workers or (len(gpus) * o.runs_per_gpu if gpus else cpu_count() // (o.threads_per_run or 1))
    groups = pack_groups(todo, o.pack_size if pack else 1, max(1, spread), auto=o.pack is None)
    if not local:
        threads = o.threads_per_run or 1
        return Placement(RayExecutor(o.ray_address, runs_per_gpu=o.runs_per_gpu), groups, threads,
                         f"executor ray: {o.ray_address or 'local cluster'}, {threads} CPU(s) per run")
    workers, threads = plan_local(len(groups), o.workers, o.threads_per_run, gpus, o.runs_per_gpu)
    line = (f"executor local: {workers} worker(s) x {threads} thread(s)"
            + (f", {len(gpus)} GPU(s) x {o.runs_per_gpu} run(s) each" if gpus else ", CPU")
            + (f"; {len(todo)} runs packed into {len(groups)} task(s)" if len(groups) < len(todo) else ""))
    return Placement(LocalExecutor(workers, gpus=gpus), groups, threads, line)


def make_tasks(placement: Placement, states: dict[str, tuple[str, Any]], grid_dir: Path,
               make_figures: bool) -> list[Task]:
    """One executor task per group: a run, or a pack whose log and progress live with its first
    member. Each run's config travels as the validated :class:`ihtrain.config.RunConfig`."""
    def task_of(r: PlannedRun) -> Task:
        st = states[r.run_id][1] or {}
        return Task(r.run_id, r.config, str(grid_dir / r.run_id), budget_of(r.config)["max_steps"],
                    int(st.get("step", 0)), placement.threads, make_figures=make_figures)

    tasks = []
    for group in placement.groups:
        members = [task_of(r) for r in group]
        if len(members) == 1:
            tasks.append(members[0])
        else:
            first = members[0]
            tasks.append(Task(f"pack-{first.run_id}+{len(members) - 1}", first.config, first.run_dir,
                              first.total_steps, first.start_step, placement.threads, make_figures=make_figures,
                              members=members))
    return tasks


# ------------------------------------------------------------------------------ data, once
def prepare_data(todo: list[PlannedRun], progress: bool = True) -> list[str]:
    """Build each distinct cached token stream the runs read (corpus, tokenizer, token memmap) once,
    here, before any worker starts: on a cold cache every worker would build the same one at once.
    Sources made in memory (markov, Bi-Induct snippets) are left to the workers, which would make
    them anyway. A stream that fails here is reported, not raised: its runs record the error.
    Returns one line per stream for the grid's log."""
    streams: dict[str, Any] = {}  # the fields the token cache depends on -> the stream's config
    n_runs: Counter[str] = Counter()
    for r in todo:
        cfg = cached_stream_config(r.config.data)
        if cfg is not None:
            key = repr((cfg.source, cfg.max_corpus_chars, cfg.cache_dir, cfg.tokenizer, cfg.vocab_size))
            streams.setdefault(key, cfg)
            n_runs[key] += 1
    lines = []
    for key, cfg in streams.items():
        t0 = time.perf_counter()
        try:
            fp = load_stream(cfg, progress=progress).fingerprint
        except (DataError, OSError, ImportError, ValueError) as e:
            lines.append(f"data {cfg.source}: not ready ({e}); its {n_runs[key]} run(s) will record the error")
            continue
        lines.append(f"data {cfg.source} ({fp['tokenizer']['name']}): {human(fp['n_tokens'])} tokens ready in "
                     f"{time.perf_counter() - t0:.1f} s for {n_runs[key]} run(s)")
    return lines
