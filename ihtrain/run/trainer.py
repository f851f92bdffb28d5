"""The trainer: one run's state around its updates (data stream, model and optimizer, evaluation
schedule, buffered logs, checkpoints, exact resume, divergence watch and stop rule).

Every batch is a pure function of ``(seed, step)``: the data RNG is re-seeded each update, so a
run resumed from a checkpoint draws exactly the batches it would have drawn (tested: N steps, stop,
resume to 2N equals 2N straight on CPU). Logs are buffered in memory and flushed atomically together
with each checkpoint, so what is on disk always agrees with the last checkpoint.

The update itself is the driver's: :func:`ihtrain.run.train.solo_update` for a run alone,
:class:`ihtrain.run.packed.Pack` for runs packed together. Around the trainer: :mod:`ihtrain.run.schedule`
(when to evaluate, the learning rate, the until-emergence stop steps), :mod:`ihtrain.run.checkpoint`
(the checkpoint files), :mod:`ihtrain.run.divergence` (the divergence rule), :mod:`ihtrain.run.provenance`
(``config.json``).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ihstats.base.contract import GENERAL_PROBE_METRICS, GENERAL_SCORE, ps_crossing, read_status, write_status
from ihtrain.run import checkpoint
from ihtrain.config import ConfigError, RunConfig
from ihtrain.data import build_source, copy_band_of, repeat_start_of
from ihtrain.run.divergence import DivergenceWatch
from ihstats.base.fileio import atomic_write_json, atomic_write_parquet, read_parquet
from ihstats.base.progress import bar as progress_bar
from ihtrain.metrics import evaluate, to_rows
from ihtrain.model import GPT
from ihtrain.data.successors import source_successors
from ihtrain.probes import make_probes
from ihtrain.run.provenance import config_record
from ihtrain.run.files import check_resumed_data, check_resumed_log
from ihtrain.run.schedule import emergence_recheck_step, emergence_stop_step, eval_schedule, lr_at

TRAIN_DATA_STREAM = 1  # RNG stream ids, so data, probes and init never share random numbers


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"train.device: {name!r} requested but CUDA is not available; use cpu or auto")
    return torch.device(name)


class _Logs:
    """Buffered tidy logs; flushed atomically (with the checkpoint that they agree with)."""

    def __init__(self, run_dir: Path, keep_through: dict[str, int] | None, first: dict[str, int] | None = None):
        """keep_through: per kind, the last step whose logged rows the checkpoint agrees with;
        first: per kind, the step of its first row (a resumed log must start there)."""
        self.run_dir = run_dir
        self.frames: dict[str, list[pd.DataFrame]] = {"metrics": [], "train": []}
        self.pending: dict[str, list] = {"metrics": [], "train": []}
        for kind in self.frames:
            path, old = run_dir / f"{kind}.parquet", None
            if keep_through is not None and path.is_file():
                old = read_parquet(path, what=f"{kind} log", remedy=f"a resume needs the logs: delete {run_dir} "
                                   "to train the run again")
                self.frames[kind].append(old[old["step"] <= keep_through[kind]])
            if keep_through is not None and first is not None and kind in first:
                check_resumed_log(path, old, first[kind], keep_through[kind])

    def add_metrics(self, frame: pd.DataFrame) -> None:
        self.pending["metrics"].append(frame)

    def metric_frame(self) -> pd.DataFrame:
        """Every metric row logged so far, flushed or pending."""
        return pd.concat([*self.frames["metrics"], *self.pending["metrics"]], ignore_index=True)

    def add_train(self, row: dict[str, Any]) -> None:
        self.pending["train"].append(row)

    def flush(self) -> None:
        for kind in ("train", "metrics"):
            new = self.pending[kind]
            if new:
                self.frames[kind].append(pd.concat(new, ignore_index=True) if kind == "metrics" else pd.DataFrame(new))
                self.pending[kind] = []
            if self.frames[kind]:
                frame = pd.concat(self.frames[kind], ignore_index=True)
                self.frames[kind] = [frame]
                atomic_write_parquet(self.run_dir / f"{kind}.parquet", frame)



class Trainer:
    """One run's state around its updates: data stream, model and optimizer, evaluation schedule,
    logs, checkpoints, divergence watch and stop rule. The update itself is the caller's
    (:func:`ihtrain.run.train.solo_update`, a packed update in :mod:`ihtrain.run.packed`), so a run trains
    the same alone or packed with others. Building it writes ``config.json`` and resumes from ``last.pt``.

    A driver calls ``go_on()`` (evaluates when due; False once the run has reached its end), then
    ``next_batch()``, updates ``model``, and hands the loss and gradient norm to ``after_update``;
    at the end, ``finish()``.
    """

    def __init__(self, cfg: RunConfig, run_dir: Path, progress: bool = True):
        self.cfg, self.run_dir = cfg, run_dir
        self._place()
        self._build(progress)
        if (checkpoint.checkpoint_dir(run_dir) / checkpoint.LAST).is_file():  # resuming: the same data?
            check_resumed_data(run_dir, self.source.fingerprint)
        self._write_config()
        self._resume()
        self.watch = DivergenceWatch(cfg.train, self.initial_loss, before_fail=self.logs.flush)
        self.t_start = time.perf_counter()
        self.last_ckpt_time, self.last_log_time, self.last_log_step = self.t_start, self.t_start, self.step
        self.stop_reason = cfg.cap_reason
        self.bar = progress_bar(total=self.total, initial=self.step, show=progress, desc=cfg.name, unit="upd",
                                leave=progress)
        self.ps_now = float("nan")
        self.packed = False  # set by ihtrain.run.packed: the weights are views into a stack shared with other runs
        self.model.train()

    # ---- building
    def _place(self) -> None:
        """Device and precision: bf16 autocast on CUDA unless the config asks for float32."""
        t = self.cfg.train
        self.device = resolve_device(t.device)
        self.on_cuda = self.device.type == "cuda"
        if self.on_cuda:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        use_bf16 = t.dtype == "bfloat16" or (t.dtype == "auto" and self.on_cuda)
        self.autocast = torch.autocast(device_type=self.device.type, dtype=torch.bfloat16) if use_bf16 else nullcontext()

    def _build(self, progress: bool) -> None:
        cfg, t = self.cfg, self.cfg.train
        self.source = source = build_source(cfg.data, seed=cfg.stream_seed, progress=progress, context=t.context)
        vocab = source.vocab_size
        if cfg.model.vocab_size not in (0, vocab):
            raise ConfigError(f"model.vocab_size: {cfg.model.vocab_size} does not match the tokenizer's vocabulary "
                              f"size {vocab} for data.source={cfg.data.source!r}; set model.vocab_size=0 to take it "
                              f"from the data")
        self.model_cfg = dataclasses.replace(cfg.model, vocab_size=vocab)
        torch.manual_seed(cfg.init_seed)  # the weights' seed (issue 66: a kind of its own)
        self.model = GPT(self.model_cfg).to(self.device)
        self.optimizer = self.model.configure_optimizer(t.weight_decay, t.lr, (t.beta1, t.beta2), self.device.type)
        self.total = cfg.cap_steps
        self.schedule = set(eval_schedule(self.total, cfg.metrics.n_evals, cfg.metrics.log_fraction).tolist()) \
            if cfg.metrics.enabled else set()
        if t.budget == "until-emergence" and not cfg.metrics.enabled:
            raise ConfigError("train.budget: 'until-emergence' needs metrics.enabled=true (it watches the PS curve)")
        self.val_tokens = torch.as_tensor(source.val_sample(cfg.metrics.val_seqs, t.context + 1), dtype=torch.long)
        self.copy_start = repeat_start_of(cfg.data, t.context + 1)  # the in-distribution probes' region
        # the general probe's filler: the held-out sequences (in distribution); its spans in the repeat region
        self.probes = make_probes(vocab, t.context, seed=cfg.stream_seed, ordinary_range=source.ordinary_range,
                                  sep_token=source.special_tokens.get("sep"), n_seqs=cfg.metrics.probe_seqs,
                                  n=cfg.metrics.probe_len, repeat_start=self.copy_start, filler=self.val_tokens,
                                  copy_band=copy_band_of(cfg.data))
        self.successors = source_successors(source)  # None: no ps_indist_ctrl, no successor ceilings
        self.include = cfg.metrics.include or None

    def _write_config(self) -> None:
        """config.json: resolved config + provenance (written before the first step)."""
        model = self.model
        atomic_write_json(self.run_dir / "config.json", config_record(
            self.cfg, data_fingerprint=self.source.fingerprint, vocab_size=self.model_cfg.vocab_size,
            n_params=model.num_params(non_embedding=False), n_params_non_embedding=model.num_params(non_embedding=True),
            device=str(self.device), threads=torch.get_num_threads()))

    def _resume(self) -> None:
        self.step, self.wall_before, self.crossing, self.last_eval = 0, 0.0, None, -1
        self.stop_at = None  # until-emergence: the next update at which to check whether the head has formed
        self.resumed_at = None  # a step whose evaluation the checkpoint already holds
        keep_through = None  # per log kind, the last step whose rows the checkpoint agrees with
        self.initial_loss = None  # the first update's loss: the divergence rule's reference
        remedy = (f"delete it to restart the run from update 0, or delete {self.run_dir} (in a grid, rerun with "
                  f"--retry-failed after either)")
        ckpt = checkpoint.read_last(self.run_dir, self.device, remedy=remedy)
        if ckpt is not None:
            checkpoint.check_run_id(checkpoint.checkpoint_dir(self.run_dir) / checkpoint.LAST, ckpt, self.cfg.run_id(),
                                    remedy)
            self.model.load_state_dict(ckpt["model"])
            self.optimizer.load_state_dict(ckpt["optimizer"])
            torch.set_rng_state(ckpt["torch_rng"])
            self.step, self.wall_before, self.crossing = ckpt["step"], ckpt["wall_s"], ckpt.get("crossing")
            self.stop_at = ckpt.get("stop_at", None if self.crossing is None
                                    else emergence_stop_step(self.cfg, self.crossing))
            self.initial_loss = ckpt.get("initial_loss")  # absent in older checkpoints: the next update's loss
            self.resumed_at = self.step if ckpt.get("evaluated") else None
            # A kill between a later flush and its checkpoint can leave rows past the checkpoint: drop them.
            # The checkpoint's own step keeps its metric rows only if it was evaluated before it was saved;
            # otherwise the resumed loop evaluates that step again.
            keep_through = {"train": self.step, "metrics": self.step if self.resumed_at is not None else self.step - 1}
        else:
            for kind in ("metrics", "train"):  # a crash before the first checkpoint: start clean
                (self.run_dir / f"{kind}.parquet").unlink(missing_ok=True)
        # the global RNG as this run left it (packed runs share the global RNG, so each keeps its own)
        self.torch_rng = torch.get_rng_state()
        first = {"train": min(self.cfg.train.log_every, self.total)} | ({"metrics": 0} if self.schedule else {})
        self.logs = _Logs(self.run_dir, keep_through, first)
        if self.crossing is None and self.logs.frames["metrics"]:  # checkpoints kept it for until-emergence only
            self.crossing = ps_crossing(self.logs.metric_frame(), self.cfg.train.emergence_threshold,
                                        self.cfg.train.emergence_metric)

    # ---- around each update
    def go_on(self) -> bool:
        """Evaluate the metrics if due and decide whether to train on: False once the run has emerged
        (until-emergence stops exactly at its stop step, evaluated there) or reached its cap."""
        t = self.cfg.train
        until_emergence = t.budget == "until-emergence"
        at_stop = until_emergence and self.stop_at is not None and self.step >= self.stop_at
        if (self.step in self.schedule or at_stop) and self.step != self.resumed_at:
            self.ps_now = self._evaluate()
            if until_emergence and self.crossing is not None and self.stop_at is None:  # it crossed just now
                self.stop_at = emergence_stop_step(self.cfg, self.crossing)
            self.bar.set_postfix(ps=f"{self.ps_now:.2f}", refresh=False)
        if at_stop:
            if self._has_crossed():
                self.stop_reason = "emerged"
                return False
            self.stop_at = emergence_recheck_step(self.cfg, self.crossing, self.step)
        return self.step < self.total

    def next_batch(self) -> torch.Tensor:
        """Set this update's learning rate and draw its batch (B, C + 1), a pure function of (seed, step)."""
        cfg, t = self.cfg, self.cfg.train
        self.lr = lr_at(self.step, cfg, self.total, self.crossing)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr
        rng = np.random.default_rng([cfg.stream_seed, TRAIN_DATA_STREAM, self.step])
        tokens, self.stats = self.source.sample(rng, t.batch_size, t.context + 1, progress=self.step / self.total)
        batch = torch.from_numpy(np.ascontiguousarray(tokens, dtype=np.int64))
        if self.on_cuda:
            batch = batch.pin_memory().to(self.device, non_blocking=True)
        return batch

    def after_update(self, loss_sum: torch.Tensor, grad_norm: torch.Tensor) -> None:
        """Count the update; log it at logged steps (where the loss is read off the device) and
        checkpoint when due. Raises :class:`TrainingDiverged` on a non-finite or diverged run."""
        t = self.cfg.train
        self.step += 1
        step = self.step
        self.bar.update(1)
        if self.watch.initial is None:
            self.watch.start(float(loss_sum) / self.cfg.grad_accum)
        if step % t.log_every == 0 or step == self.total:
            self._log_update(loss_sum, grad_norm)
        if step in t.keep_checkpoints:
            self.save_checkpoint(f"step_{step}.pt")
        due = (step % t.checkpoint_every == 0) if t.checkpoint_every else \
            (time.perf_counter() - self.last_ckpt_time >= t.checkpoint_seconds)
        if due:
            self.save_checkpoint()
            write_status(self.run_dir, "running", step, reason="training", crossing=self.crossing)
            self.last_ckpt_time = time.perf_counter()

    def _log_update(self, loss_sum: torch.Tensor, grad_norm: torch.Tensor) -> None:
        """A train.parquet row for this update (reads the loss off the device), and the divergence check."""
        cfg, step, now = self.cfg, self.step, time.perf_counter()
        row = {"step": step, "tokens": step * cfg.tokens_per_step, "loss": float(loss_sum) / cfg.grad_accum,
               "lr": self.lr, "grad_norm": float(grad_norm),
               "tokens_per_s": (step - self.last_log_step) * cfg.tokens_per_step / max(now - self.last_log_time, 1e-9),
               "wall_s": self.wall_before + now - self.t_start}
        row.update({k: float(v) for k, v in self.stats.items()})
        self.logs.add_train(row)
        self.watch.check(step, row["loss"], row["grad_norm"])
        self.last_log_time, self.last_log_step = now, step
        self.bar.set_postfix(loss=f"{row['loss']:.3f}", ps=f"{self.ps_now:.2f}", refresh=False)

    def finish(self, make_figures: bool = True) -> dict[str, Any]:
        """Checkpoint; unless interrupted, check the end for divergence, write ``final.pt``, the
        curves and status ``done``. Returns the final status."""
        self.bar.close()
        interrupted = self.stop_reason == "interrupted"
        if not interrupted:
            self.watch.at_end(self.step)
        self.save_checkpoint()
        if interrupted:
            write_status(self.run_dir, "running", self.step, reason="interrupted", stop_reason="interrupted",
                         crossing=self.crossing)
            return read_status(self.run_dir)
        checkpoint.save_final(self.run_dir, self.model, self.model_cfg, self.step, self.cfg.run_id())
        if make_figures:
            _draw_curves(self.run_dir)
        write_status(self.run_dir, "done", self.step, reason="finished", stop_reason=self.stop_reason,
                     crossing=self.crossing)
        return read_status(self.run_dir)

    # ---- evaluation and checkpoints
    def _evaluate(self) -> float:
        self.last_eval = self.step
        results = evaluate(self.model, self.probes, val_tokens=self.val_tokens.to(self.device), include=self.include,
                           copy_start=self.copy_start, successors=self.successors)
        rows = to_rows(results, step=self.step, tokens=self.step * self.cfg.tokens_per_step)
        self.logs.add_metrics(rows)
        threshold = self.cfg.train.emergence_threshold
        # every budget records the crossing in status.json; until-emergence stops by it. ps_crossing
        # (pandas) costs ~10% of a tiny model's evaluation: call it only once some head reaches
        # the threshold, the only case in which it finds a crossing
        watched = self.cfg.train.emergence_metric  # ps, ps_indist (the data's copies) or ps_gen (certificate)
        score = watched_score(results, watched)
        if self.crossing is None and score is not None and np.any(score >= threshold):
            self.crossing = ps_crossing(rows, threshold, watched)
        return float(np.nanmax(score)) if score is not None else float("nan")

    def _has_crossed(self) -> bool:
        """The until-emergence stop rule: the watched PS crossed (uncensored onset, max PS at the run's
        formed level at the end; ``formation``'s ``crossed``). It is not the verdict: whether the run
        *formed* (certified, ihstats.certificate) is read from the logs by the summary and the tables."""
        from ihstats.emergence import formation  # looked up per call: tests replace the verdict

        return formation(self.logs.metric_frame(), formed_level=self.cfg.train.emergence_threshold,
                         metric=self.cfg.train.emergence_metric)["crossed"]

    def save_checkpoint(self, name: str = checkpoint.LAST) -> None:
        """Flush the logs, then checkpoint the state they agree with (only a finite one)."""
        self.logs.flush()
        if not all(bool(torch.isfinite(p).all()) for p in self.model.parameters()):  # keep the last finite one
            self.watch.fail(self.step, "the weights went non-finite (not checkpointed: checkpoints hold only "
                                       "finite states); lower train.lr or lengthen the warmup")
        if not self.packed:
            self.torch_rng = torch.get_rng_state()
        checkpoint.write_sidecar(self.run_dir, self.model_cfg, self.cfg.run_id())
        checkpoint.save_last(self.run_dir, self.model, self.optimizer, step=self.step,
                             wall_s=self.wall_before + (time.perf_counter() - self.t_start), torch_rng=self.torch_rng,
                             crossing=self.crossing, stop_at=self.stop_at, run_id=self.cfg.run_id(),
                             evaluated=self.last_eval == self.step, initial_loss=self.watch.initial, name=name)


def _draw_curves(run_dir: Path) -> None:
    """curves.png/pdf of a finished run; a figure must never fail the run. ihtrain.plots is imported
    here: matplotlib costs a grid worker's start a second, and only finished runs draw."""
    try:
        from ihtrain.plots import plot_run_curves  # imports matplotlib: only when a run finishes

        plot_run_curves(run_dir)
    except Exception as e:  # noqa: BLE001
        print(f"warning: could not draw curves for {run_dir}: {e}", file=sys.stderr)


def watched_score(results: dict, watched: str) -> np.ndarray | None:
    """The per-head (L, H) scores the budget watches in one evaluation's ``results``: a logged PS, or
    for ``ps_gen`` each head's weakest general-probe distance (contract.max_over_heads); None when
    the evaluation did not log it."""
    if watched == GENERAL_SCORE:
        if not all(m in results for m in GENERAL_PROBE_METRICS):
            return None
        return np.min([np.asarray(results[m], np.float64) for m in GENERAL_PROBE_METRICS], axis=0)
    return np.asarray(results[watched], np.float64) if watched in results else None

