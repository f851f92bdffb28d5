"""``python -m ihtrain.grid``: a grid spec -> many training runs in one grid directory.

    python -m ihtrain.grid                          # the default preset, bxc-main
    python -m ihtrain.grid --preset bxc-paper --out runs/bxc-paper --runs-per-gpu 4
    python -m ihtrain.grid --spec my_grid.toml --dry-run
    python -m ihtrain.grid --seeds 3                # every cell of the default grid at seeds 0, 1, 2
    python -m ihtrain.grid --only 2500654b3228,dd64   # some runs of the default grid (ids or prefixes)
    python -m ihtrain.grid --spec my_grid.toml --executor ray --ray-address auto

Rerunning the same command resumes: done runs are skipped, interrupted runs resume from their
last checkpoint, failed runs rerun only with ``--retry-failed``. Exit codes: 0 all runs done,
1 some run failed, 2 bad input, 3 another grid holds the directory's lock, 130 interrupted.
Ctrl-C, ``kill -INT`` and ``kill`` (SIGTERM) all stop the grid the same way: each running run
checkpoints and stays resumable.
Spec format: :mod:`ihtrain.grid.spec`.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from ihstats.base.progress import bar as progress_bar
from ihstats.base.schema import check_grid_dir
from ihtrain import __version__
from ihtrain.config import ConfigError, parse_set_args
from ihtrain.grid.executors import Outcome, Task
from ihstats.base.cli_checks import OutputPathError, check_out_dir
from ihstats.base.fileio import UnreadableFile, atomic_write_json, atomic_write_text, describe_os_error, read_json
from ihtrain.grid.plan import (
    PACK_AUTO_MAX_TOKENS, GridOptions, make_tasks, place, prepare_data, select_runs, start_order,
)
from ihtrain.grid.expand import GridSpec, PlannedRun, design_check_message, probe_geometry_warning, probe_region_check
from ihtrain.grid.spec import grid_preset_paths, load_grid_preset, load_spec, parse_spec
from ihstats.base.display import rounded_csv
from ihtrain.grid.status import (
    format_table, narrow_table, run_keys, run_state, status_report, summary_display, summary_frame, to_execute,
    write_manifest,
)
from ihtrain.run.locks import DirectoryLocked, GridLock
from ihtrain.presets import GRID_SPEC_DIR
from ihtrain.grid.run_cost import budget_of, describe_budget, human
from ihtrain.run.files import changed_settings
from ihstats.base.command import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_LOCKED, run_cli

DEFAULT_PRESET = "bxc-main"


def queue(runs: list[PlannedRun], grid_dir: Path, retry_failed: bool, order: str,
          only: set[str] | None = None) -> tuple[dict[str, tuple[str, Any]], list[PlannedRun]]:
    """Each run's (state, status) and the runs to execute (of ``only``, if given), in start order."""
    states = {r.run_id: run_state(r, grid_dir) for r in runs}
    todo = [r for r in runs if to_execute(states[r.run_id][0], retry_failed) and (only is None or r.run_id in only)]
    return states, start_order(todo, states, order)


def factor_str(run: PlannedRun) -> str:
    return " ".join(f"{k.split('.')[-1]}={v}" for k, v in run.factors.items())


def list_presets() -> str:
    lines = []
    for name, path in grid_preset_paths().items():
        try:
            spec = load_spec(path)
            runs = spec.expand()
            tok = sum(budget_of(r.config)["max_tokens"] for r in runs)
            cap = "<=" if any(r.config.train.budget == "until-emergence" for r in runs) else ""
            size = f"{len(runs):>4} runs {cap}{human(tok)} tokens"
            lines.append(f"{name:<16} {size:<24} {spec.description}")
        except ConfigError as e:
            lines.append(f"{name:<16} {'(invalid)':<24} {e}")
    return "\n".join(lines) + f"\n(default: {DEFAULT_PRESET}; spec files in {GRID_SPEC_DIR})"


def dry_run_table(runs: list[PlannedRun], grid_dir: Path, retry_failed: bool, order: str = "longest-first",
                  only: set[str] | None = None) -> str:
    states, todo = queue(runs, grid_dir, retry_failed, order, only)
    start = {r.run_id: i + 1 for i, r in enumerate(todo)}
    rows = []
    for i, r in enumerate(runs):
        state, st = states[r.run_id]
        if only is not None and r.run_id not in only:
            action = "skip (not in --only)"
        else:
            action = "run" if state == "new" else (
                f"resume from step {st['step']}" if state == "interrupted" else
                "skip (done)" if state == "done" else "skip (unreadable status.json)" if state == "unreadable" else
                ("rerun (failed)" if retry_failed else "skip (failed; --retry-failed)"))
        rows.append({"#": i, "run_id": r.run_id, **run_keys(r),
                     **{k.split(".")[-1]: v for k, v in r.factors.items()},
                     "budget": describe_budget(r.config), "starts": start.get(r.run_id, "-"), "action": action})
    return format_table(pd.DataFrame(rows))


# ------------------------------------------------------------------------------ the grid
def load(*, spec: str | None = None, preset: str | None = None, seeds: int | None = None,
         overrides: dict[str, Any] | None = None) -> GridSpec:
    """The grid spec to run: a spec file or a grid preset (default :data:`DEFAULT_PRESET`), with
    ``--seeds`` replicates and ``--set`` base overrides checked against it (errors name the flag)."""
    if spec and preset:
        raise ConfigError("--spec and --preset: give one of them, not both")
    grid = load_spec(spec) if spec else load_grid_preset(preset or DEFAULT_PRESET)
    if seeds is not None:
        grid.set_seeds(seeds, "--seeds")
    if overrides:
        grid.override_base(overrides)
    return grid


def recorded_spec(grid_dir: Path, given: GridSpec | None) -> GridSpec:
    """The spec a grid directory was made with, rebuilt from its ``grid.json`` (the spec as read,
    its seeds and base overrides): ``--status`` reports the directory's own grid, never a default.
    Without a grid.json (a grid that never wrote one) the ``given`` spec (--spec/--preset) serves."""
    if not grid_dir.is_dir():
        raise ConfigError(f"--out {grid_dir}: no such directory; give the --out the grid was run with")
    path = grid_dir / "grid.json"
    if not path.is_file():
        if given is None:
            raise ConfigError(f"--out {grid_dir}: has no grid.json (not a grid directory?); pass the grid's --spec or "
                              f"--preset to read it as that grid")
        return given
    old = read_json(path, "grid's description", "rerun the grid command that made it (it writes grid.json anew)")
    if not isinstance(old.get("spec"), dict):
        raise ConfigError(f"{path}: has no 'spec' (written by another version?)")
    # grid.json holds the spec with its ``extends`` already merged in: resolving it again from here
    # would look for a parent file next to grid.json
    spec = parse_spec({k: v for k, v in old["spec"].items() if k != "extends"}, source=str(path))
    if given is not None and given.name != spec.name:
        raise ConfigError(f"--out {grid_dir}: holds grid {spec.name!r}, not {given.name!r}; drop --spec/--preset to "
                          f"read it as its own grid")
    if old.get("seeds"):
        spec.set_seeds(old["seeds"], f"{path}: seeds")
    # base.overrides records the spec's own [base] fields beside the --set ones; only the latter are
    # applied again (a spec's base may set an axis field to keep the base config valid, as bxc-law does)
    recorded = (old.get("base") or {}).get("overrides") or {}
    own = spec.base_overrides
    spec.override_base({k: v for k, v in recorded.items() if k not in own or own[k] != v}, f"{path}: base.overrides")
    return spec


def _status(args: argparse.Namespace) -> int:
    """``--status``: the grid directory's own record (:func:`recorded_spec`)."""
    try:
        named = args.spec or args.preset or not args.out
        given = load(spec=args.spec, preset=args.preset, seeds=args.seeds,
                     overrides=parse_set_args(args.set)) if named else None
        grid_dir = Path(args.out) if args.out else Path("runs") / given.name
        spec = recorded_spec(grid_dir, given)
        print(status_report(spec, spec.expand(), grid_dir, wide=args.wide))
    except (ConfigError, UnreadableFile) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def write_grid_json(spec: GridSpec, runs: list[PlannedRun], grid_dir: Path) -> None:
    path = grid_dir / "grid.json"
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if path.is_file():
        old = read_json(path, "grid's description", "delete it and rerun the same command (the grid writes it anew)")
        if old.get("name") != spec.name:
            raise ConfigError(f"--out {grid_dir}: holds grid {old.get('name')!r}, not {spec.name!r}; "
                              f"choose another directory")
        if why := changed_settings(old, spec.base_overrides, [r.run_id for r in runs]):
            raise ConfigError(f"--out {grid_dir}: {why}")
        created = old.get("created", created)
    atomic_write_json(path, {
        "name": spec.name, "description": spec.description, "source": spec.source, "spec": spec.raw,
        "base": {"preset": spec.base_preset, "overrides": spec.base_overrides},
        "factors": [{"name": ax.name, "fields": ax.fields, "levels": ax.labels, "group": ax.group}
                    for ax in spec.sweep],
        "columns": spec.columns, "seeds": spec.seeds, "include": spec.include, "exclude": spec.exclude,
        "runs": [{"run_id": r.run_id, **run_keys(r), "factors": r.factors, "overrides": r.overrides,
                  "origin": r.origin, **budget_of(r.config)} for r in runs],
        "created": created, "updated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "ihlaw_version": __version__,
    })


def execute(spec: GridSpec, runs: list[PlannedRun], grid_dir: Path, options: GridOptions = GridOptions(),
            only: set[str] | None = None) -> int:
    """PlannedRun a grid's unfinished runs (of ``only``, if given) into ``grid_dir``; write its grid.json,
    manifest and summary. Returns the exit code (0 done, :data:`EXIT_FAILED` if a run is not done)."""
    states, todo = queue(runs, grid_dir, options.retry_failed, options.order, only)
    _announce(spec, runs, grid_dir, states, todo, options)
    if options.executor == "local" or not options.ray_address:  # a remote cluster's nodes have their own caches
        for line in prepare_data(todo, progress=options.progress):
            print(line)
    placement = place(todo, options)
    print(placement.description)
    tasks = make_tasks(placement, states, grid_dir, make_figures=options.figures)
    t0 = time.time()
    _run_tasks(spec, runs, grid_dir, len(todo), placement.executor, tasks, options.progress)
    return _close(spec, runs, grid_dir, only, options.retry_failed, t0)


def _announce(spec: GridSpec, runs: list[PlannedRun], grid_dir: Path, states: dict[str, tuple[str, Any]],
              todo: list[PlannedRun], options: GridOptions) -> None:
    """grid.json and the manifest before anything runs, and the grid log's first lines."""
    others = sorted(p.name for p in grid_dir.iterdir() if p.is_dir() and p.name not in {r.run_id for r in runs})
    if others:
        print(f"note: {len(others)} run directories in {grid_dir} are not in this spec (left untouched)")
    write_grid_json(spec, runs, grid_dir)
    write_manifest(spec, runs, grid_dir)
    n_skip = {s: sum(1 for v, _ in states.values() if v == s) for s in ("done", "failed", "unreadable")}
    print(f"grid {spec.name}: {len(runs)} runs in {grid_dir}; {len(todo)} to run "
          f"({n_skip['done']} done, {n_skip['failed'] if not options.retry_failed else 0} failed skipped"
          + (f", {n_skip['unreadable']} with an unreadable status.json skipped" if n_skip["unreadable"] else "")
          + ")")


def _run_tasks(spec: GridSpec, runs: list[PlannedRun], grid_dir: Path, n_todo: int, executor: Any, tasks: list[Task],
               progress: bool) -> None:
    """Execute the tasks; the manifest is rewritten as each run ends (and on an interrupt), one
    line per run goes to the log, the bar shows the active runs' updates."""
    by_id = {r.run_id: r for r in runs}
    # the runs this command runs (with --only, not the whole grid); the log's first lines count the rest
    bar = progress_bar(total=n_todo, unit="run", desc=spec.name, show=progress)

    def on_done(o: Outcome) -> None:
        st = o.status
        write_manifest(spec, runs, grid_dir)
        shown = "interrupted" if st["status"] == "running" else st["status"]  # resumable by a rerun
        line = (f"{shown:<6} {o.run_id} {factor_str(by_id[o.run_id])} steps={st.get('step')} "
                f"stop={st.get('stop_reason') or '-'}")
        if st["status"] != "done":
            line += f" reason={st.get('reason')}"
        bar.write(line)
        bar.update(1)

    def on_progress(active: dict[str, tuple[int, int]]) -> None:
        if active:
            bar.set_postfix_str(" ".join(f"{rid[:6]}:{s}/{n}" for rid, (s, n) in active.items()), refresh=True)

    try:
        executor.run(tasks, on_done, on_progress)
    except KeyboardInterrupt:
        bar.close()
        write_manifest(spec, runs, grid_dir)
        raise
    bar.close()


def _close(spec: GridSpec, runs: list[PlannedRun], grid_dir: Path, only: set[str] | None, retry_failed: bool,
           t0: float) -> int:
    """The final manifest and summary.csv, the closing table, and what to do about runs not done."""
    write_manifest(spec, runs, grid_dir)
    summary = summary_frame(spec, runs, grid_dir)
    atomic_write_text(grid_dir / "summary.csv", rounded_csv(summary))
    print(narrow_table(summary_display(summary)))  # summary.csv and --status --wide have every column
    failed = summary[(summary["status"] != "done") & (summary["run_id"].isin(only) if only else True)]
    n_done = int((summary["status"] == "done").sum())
    n_formed = int(summary["formed"].fillna(False).astype(bool).sum())
    n_crossed = int((summary["crossed"].fillna(False).astype(bool) & ~summary["formed"].fillna(False).astype(bool)).sum())
    print(f"grid {spec.name}: {n_done}/{len(summary)} runs done, {n_formed} formed (certified), {n_crossed} crossed "
          f"without the certificate, in {time.time() - t0:.0f} s; "
          f"wrote {grid_dir}/manifest.parquet, summary.csv")
    if len(failed):
        for _, row in failed.iterrows():
            print(f"  {row['status']}: {row['run_id']}: {row['reason']} ({grid_dir / row['run_id']})", file=sys.stderr)
        hints = []
        if (failed["status"] == "failed").any() and not retry_failed:
            hints.append("rerun with --retry-failed to retry the failed")
        if failed["reason"].str.startswith("stopped by an I/O error").any():
            hints.append("free space or fix permissions for those stopped by an I/O error")
        if failed["status"].isin(["interrupted", "running"]).any():
            hints.append("rerun the same command to resume the interrupted")
        if (failed["status"] == "unreadable").any():
            hints.append("an unreadable run's files are left as they are: fix or delete the file its line names "
                         "(deleting the run directory trains it again), then rerun the same command")
        print(f"error: {len(failed)} run(s) not done" + "".join(f"; {h}" for h in hints), file=sys.stderr)
        return EXIT_FAILED
    problems = check_grid_dir(grid_dir, weights="where-kept")  # runs copied from a shipped set have no weights
    if problems:  # the runs are done, but the directory breaks the contract: no reader will accept it
        print(f"error: schema check of {grid_dir}: {len(problems)} problem(s): " + "; ".join(problems[:5])
              + f"; see python -m ihstats.base.schema {grid_dir}", file=sys.stderr)
        return EXIT_FAILED
    done_ids = summary.loc[summary["status"] == "done", "run_id"]
    logs_only = sum(not (grid_dir / rid / "checkpoints").exists() for rid in done_ids)
    print("schema check: ok" + (f" ({logs_only} done run(s) are logs without weights, as copied from a "
                                "shipped set: ablations and scoring need their weights)" if logs_only else ""))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ihtrain.grid", description="Train a grid of runs (a spec's "
                                "axes product plus include minus exclude) into one grid directory; resumable.")
    src = p.add_argument_group("what to run")
    src.add_argument("--preset", help=f"named grid preset (default: {DEFAULT_PRESET}); see --list-presets")
    src.add_argument("--spec", help="grid spec TOML file (format: ihtrain/grid/spec.py docstring)")
    src.add_argument("--set", action="append", metavar="FIELD=VALUE", default=[],
                     help="override a base config field for every run, e.g. --set train.max_steps=100")
    src.add_argument("--seeds", type=int, metavar="N", help="replicate every cell at seeds 0..N-1 (replaces the "
                     "spec's seeds; an error if the spec sweeps seed under [axes])")
    src.add_argument("--out", help="grid directory (default: runs/<grid name>)")
    src.add_argument("--only", metavar="ID|FIELD=VALUE[,...]", help="run only these runs of the grid: run ids or "
                     "unique id prefixes (ids hash the whole config, so another --set gives other ids: see "
                     "--dry-run), or cell coordinates FIELD=VALUE (all given must match, e.g. "
                     "train.batch_size=16,train.context=32); the others are left as they are")
    src.add_argument("--retry-failed", action="store_true", help="rerun runs recorded as failed")
    src.add_argument("--dry-run", action="store_true", help="print the runs, their ids, budgets and what would "
                     "happen to each, then exit")
    src.add_argument("--order", choices=("longest-first", "spec"), default="longest-first",
                     help="start order: most training FLOPs left under the cap first (shortest grid on "
                     "several workers; the default), or the spec's order")
    src.add_argument("--list-presets", action="store_true", help="print the grid presets and exit")
    src.add_argument("--status", action="store_true", help="print each run's state in the grid directory (status, "
                     "updates, max PS, threshold crossing, wall time) without running anything; safe while the "
                     "grid runs")
    src.add_argument("--wide", action="store_true", help="with --status: every summary column (circuit scores, "
                     "the other onsets, N, ...), not the narrow view")
    ex = p.add_argument_group("where to run")
    ex.add_argument("--executor", choices=("local", "ray"), default="local", help="local worker processes (default) or Ray")
    ex.add_argument("--workers", type=int, help="local: parallel runs (default: CPUs // threads per run; on "
                    "GPUs: devices x --runs-per-gpu)")
    ex.add_argument("--threads-per-run", type=int, help="torch CPU threads per run (default: CPUs split "
                    "between workers; ray: 1)")
    ex.add_argument("--runs-per-gpu", type=int, default=1, help="small runs packed per GPU (ray: fractional GPUs; default 1)")
    ex.add_argument("--ray-address", help="existing Ray cluster address (default: start a local one)")
    ex.add_argument("--pack", action=argparse.BooleanOptionalAction, default=None,
                    help="train runs that share model shape, B, C, dtype and device (they may differ in seed, "
                    "learning rate, data) packed: one process, one batched forward/backward, each run its own "
                    "optimizer, data, metrics, checkpoints and run directory (ihtrain/run/packed.py); a group is split "
                    "over the workers (two one-thread packs beat one two-thread pack). Default: on for the local "
                    "executor on CPU for runs of at most %d tokens per update (B x C), where sharing the "
                    "fixed cost of an update pays (benchmarks/bench_packing.py); off for larger runs, on GPUs "
                    "and with Ray" % PACK_AUTO_MAX_TOKENS)
    ex.add_argument("--pack-size", type=int, default=8, help="at most this many runs per pack (default 8)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-figures", action="store_true", help="do not draw each run's curves.png/pdf")
    return p


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.list_presets:
        print(list_presets())
        return 0
    if args.status:
        return _status(args)
    try:
        if args.seeds is not None and args.seeds < 1:
            raise ConfigError(f"--seeds: must be a positive integer, got {args.seeds}")
        options = GridOptions.from_args(args)
        spec = load(spec=args.spec, preset=args.preset, seeds=args.seeds, overrides=parse_set_args(args.set))
        runs = spec.expand()
        only = select_runs(runs, args.only)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if geometry := probe_geometry_warning(runs):  # at plan time: before anything trains
        print(f"warning: {geometry}", file=sys.stderr)
    misses, blocking = probe_region_check(runs)
    if misses:  # the design check: where the probe sits against where the data teaches
        print(f"{'error' if blocking and not args.dry_run else 'warning'}: {design_check_message(misses, blocking)}",
              file=sys.stderr)
    grid_dir = Path(args.out or Path("runs") / spec.name)
    if args.dry_run:
        print(f"grid {spec.name}: {len(runs)} runs -> {grid_dir}  ({spec.description})")
        print(dry_run_table(runs, grid_dir, options.retry_failed, options.order, only))
        print("design check: " + ("FAILS (a real run refuses to start)" if blocking else
                                  "warns (see above)" if misses else "every cell's probe sits where its data repeats"))
        return 0
    if blocking:
        return EXIT_BAD_INPUT
    if grid_dir.exists() and not grid_dir.is_dir():
        print(f"error: --out {grid_dir}: is a file, not a grid directory; choose another path", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:  # the output guard: no system or package folder, no user's files a grid would overwrite
        check_out_dir(grid_dir, kind="grid")
    except OutputPathError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    lock = GridLock(grid_dir)
    try:
        lock.acquire()
    except DirectoryLocked as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_LOCKED
    except OSError as e:  # a read-only or unwritable --out
        print(f"error: --out {grid_dir}: cannot write the grid directory ({describe_os_error(e)}); choose a "
              f"writable path", file=sys.stderr)
        return EXIT_BAD_INPUT
    # SIGTERM stops the grid like Ctrl-C, and SIGINT does so even when the shell started the grid
    # in the background with SIGINT ignored (``cmd &`` in a script, nohup); restored on return
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
                signal.SIGTERM: signal.signal(signal.SIGTERM, _interrupt)}
    try:
        return execute(spec, runs, grid_dir, options, only)
    except (ConfigError, UnreadableFile) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as e:  # the grid's own files (manifest, summary) on a full or read-only disk
        print(f"error: {describe_os_error(e)}; the runs are checkpointed: fix it, then rerun the same command "
              f"to resume ({grid_dir})", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:  # while the data was being built, or from the executor (runs checkpointed)
        print(f"interrupted; rerun the same command to resume ({grid_dir})", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        lock.release()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    run_cli(main)
