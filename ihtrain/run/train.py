"""One training run: ``python -m ihtrain.train`` and :func:`train_run`, the loop that drives a
:class:`ihtrain.run.trainer.Trainer` with one model's update.

    python -m ihtrain.train --preset cpu-tiny --out runs/single/cpu-tiny

The run's state (data, evaluation, logs, checkpoints, exact resume, stop rules) is the trainer's
(:mod:`ihtrain.run.trainer`); starting a run directory and recording an exception in it,
:mod:`ihtrain.run.files`. :func:`solo_update` is the update of a run alone; :mod:`ihtrain.run.packed`
drives the same trainer with one update shared by several runs.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any, Callable

import torch

from ihstats.base.cli_checks import OutputPathError, check_out_dir
from ihstats.base.contract import read_status
from ihtrain.run import checkpoint
from ihtrain.config import ConfigError, RunConfig, parse_set_args, resolve, to_json
from ihtrain.run.divergence import TrainingDiverged  # noqa: F401 - train.TrainingDiverged is documented
from ihstats.base.fileio import UnreadableFile, describe_os_error, io_error_of
from ihtrain.run.locks import DirectoryLocked, run_lock
from ihtrain.presets import describe_presets
from ihtrain.data import probe_in_region
from ihtrain.run.files import record_exception, resume_threads, start_or_record
from ihtrain.run.trainer import Trainer
from ihtrain.run.update import adamw_step_, clip_grad_norms_
from ihstats.base.command import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_IO_ERROR, EXIT_LOCKED, run_cli


def train_run(cfg: RunConfig, out_dir: str | Path, progress: bool = True,
              should_stop: Callable[[], bool] | None = None, make_figures: bool = True) -> dict[str, Any]:
    """Train one run into ``out_dir`` (a run directory), resuming if a checkpoint is there.

    Returns the final status dict (with ``already_done: True``, never written, when the run was
    done before this call and nothing was trained). Exceptions are recorded in ``status.json`` (``failed``) and
    ``error.txt``, then re-raised; a run that went non-finite or diverged raises
    :class:`TrainingDiverged`. The run directory is locked while it trains: a second trainer on it
    gets :class:`ihtrain.run.locks.DirectoryLocked` (naming the holder) before it touches anything.
    """
    run_dir = Path(out_dir)
    with run_lock(run_dir):
        if not start_or_record(cfg, run_dir):  # done before: nothing trained, nothing written
            return {**read_status(run_dir), "already_done": True}
        try:
            return _train(cfg, run_dir, progress, should_stop, make_figures)
        except BaseException as e:  # noqa: BLE001 - record, then re-raise
            record_exception(run_dir, e)
            raise


def _train(cfg: RunConfig, run_dir: Path, progress: bool, should_stop, make_figures: bool) -> dict[str, Any]:
    resuming = (checkpoint.checkpoint_dir(run_dir) / checkpoint.LAST).is_file()
    threads = resume_threads(cfg, run_dir, torch.get_num_threads(), resuming)
    if threads > 0:
        torch.set_num_threads(threads)
    run = Trainer(cfg, run_dir, progress)
    step_model = torch.compile(run.model) if cfg.train.compile else run.model
    while run.go_on():
        if should_stop is not None and should_stop():
            run.stop_reason = "interrupted"
            break
        batch = run.next_batch()
        run.after_update(*solo_update(run, step_model, batch))
    return run.finish(make_figures)


def solo_update(run: Trainer, step_model: torch.nn.Module, batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimizer update of one model on ``batch`` (B, C + 1), in micro-batches. Returns the summed
    micro-batch losses and the gradient norm before clipping, as tensors (no device sync here)."""
    cfg = run.cfg
    micro, accum = cfg.micro_batch, cfg.grad_accum
    loss_sum: Any = 0.0
    for k in range(accum):
        chunk = batch[k * micro:(k + 1) * micro]
        with run.autocast:
            _, loss = step_model(chunk[:, :-1], chunk[:, 1:])
        (loss / accum).backward()
        loss_sum = loss_sum + loss.detach()
    grads = {p: p.grad for p in run.model.parameters() if p.grad is not None}
    grad_norm = clip_grad_norms_([list(grads.values())], [cfg.train.grad_clip])[0]
    adamw_step_([(run.optimizer, grads)])  # the packed path's update too (ihtrain.run.update)
    for p in grads:
        p.grad = None
    return loss_sum, grad_norm


# ---------------------------------------------------------------------------- CLI


def _report_failure(out: Path, e: Exception) -> int:
    """The one-line message of a run that raised: an I/O cause (resumable) or a failure."""
    details = f" (details in {out / 'error.txt'})" if (out / "error.txt").is_file() else ""
    io = io_error_of(e)
    if io is not None:
        print(f"error: run stopped by an I/O error: {describe_os_error(io)}; free space or fix permissions, "
              f"then rerun the same command to resume{details}", file=sys.stderr)
        return EXIT_IO_ERROR
    print(f"error: run failed: {type(e).__name__}: {e}{details}", file=sys.stderr)
    return 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ihtrain.train", description="Train one GPT run with dense "
                                "per-head induction metrics into a run directory.")
    p.add_argument("--preset", default="cpu-tiny", help="named run preset (default: cpu-tiny); see --list-presets")
    p.add_argument("--config", help="TOML file of config fields applied on top of the preset")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE", default=[],
                   help="override a config field by its dotted name, e.g. --set train.batch_size=32 (repeatable)")
    p.add_argument("--out", help="run directory (default: runs/single/<preset name>-<run_id>)")
    p.add_argument("--list-presets", action="store_true", help="print the named presets and exit")
    p.add_argument("--print-config", action="store_true", help="print the resolved config as JSON and exit")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt


def _train_until_stopped(cfg: RunConfig, out: Path, progress: bool) -> dict[str, Any]:
    """:func:`train_run` with SIGTERM stopping it as Ctrl-C does (checkpointed, resumable, exit 130
    as docs/DESIGN.md says; the default action would kill it with 143 between checkpoints)."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return train_run(cfg, out, progress=progress)
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.list_presets:
        print(describe_presets())
        return 0
    try:
        cfg = resolve(args.preset, args.config, parse_set_args(args.set))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.print_config:
        print(to_json(cfg))
        return 0
    n, inside, start = probe_in_region(cfg)  # the design check of a grid, for one run: said, not refused
    if cfg.metrics.enabled and 2 * inside < n:
        print(f"warning: the repeat probe's PS queries (positions {n}-{2 * n - 1}) hold {inside} of {n} positions "
              f"where the training data repeats ({start}-{cfg.train.context - 1}): its PS is measured off the "
              f"training distribution; read ps_indist (set train.emergence_metric = \"ps_indist\" for an "
              f"until-emergence budget)", file=sys.stderr)
    try:  # the output guard (a file, a system folder, a user's files): one line, before anything is written
        out = check_out_dir(args.out or f"runs/single/{cfg.name}-{cfg.run_id()}", kind="run")
    except OutputPathError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        status = _train_until_stopped(cfg, out, progress=not args.no_progress)
    except (ConfigError, UnreadableFile) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except DirectoryLocked as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_LOCKED
    except KeyboardInterrupt:
        print(f"interrupted; rerun the same command to resume from {out}/checkpoints/last.pt", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001
        return _report_failure(out, e)
    if status.get("already_done"):
        print(f"already done: {out} ({status['step']} updates, stopped: {status['stop_reason']}); nothing trained "
              f"or written (delete the directory to train it again)")
        return 0
    print(f"wrote {out} ({status['status']}, {status['step']} updates, stopped: {status['stop_reason']})")
    return 0


if __name__ == "__main__":
    run_cli(main)
