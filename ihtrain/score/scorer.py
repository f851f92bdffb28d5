"""Score a checkpoint series: the trainer's metrics at every revision, into one series directory.

:class:`ScoreSpec` says what to score (model, revisions, B and C, probes, metrics, dtype, device);
:func:`score_series` scores it: the probes are built once from the model's vocabulary and reused at
every revision (the general induction probe's filler: the held-out text of ``--val-tokens``, else
random ordinary tokens; its successor statistics, for ``ps_indist_ctrl`` and the ceilings: that
text's bigram counts, else none), one checkpoint is in memory at a time, and each revision's rows are appended to
``metrics.parquet`` atomically before the next one loads, so a killed command rerun the same way
goes on with the first unscored revision. The directory (docs/DESIGN.md, "Scored series
directory"): ``series.json`` (:mod:`ihstats.base.series`), ``metrics.parquet``, ``status.json``.
"""

from __future__ import annotations

import fcntl
import gc
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from ihstats.base import progress
from ihstats.base.contract import FORMED_LEVEL, METRICS_FILE, ps_crossing, write_status
from ihstats.base.fileio import atomic_write_parquet, read_parquet
from ihstats.base.series import SERIES_KIND, is_series_dir, read_series, series_id, shape_id, write_series
from ihstats.certificate import certify_run
from ihtrain.data.successors import Successors, bigram_successors
from ihtrain.metrics import evaluate, metric_names, to_rows
from ihtrain.probes import ProbeSet, make_probes
from ihtrain.run.provenance import git_commit, package_versions
from ihtrain.score.adapter import HFModel, family_of
from ihtrain.score.load import Revision, ScoreError, count_params, load_checkpoint, one_line, vocabulary


@dataclass
class ScoreSpec:
    """One scoring command: the revisions of one model, and how to score them."""

    model: str  # the Hub name or local directory, as given (recorded in series.json)
    revisions: list[Revision]
    out: Path
    batch_size: int  # B: sequences per update of the model's training (tokens = step * B * C)
    context: int  # C: its training context; also caps the probes (n = min(50, C // 2))
    dtype: str = "float32"
    device: str = "cpu"
    probe_seed: int = 0
    probe_seqs: int = 100
    probe_len: int = 0  # 0: min(50, C // 2), as the trainer
    include: list[str] = field(default_factory=list)  # metric names; empty: the trainer's default set
    ordinary_range: tuple[int, int] | None = None  # None: from the tokenizer (load.vocabulary)
    sep_token: int | None = None
    val_tokens: np.ndarray | None = None  # (n, T + 1) held-out ids for val_loss, ps_nat, ...
    progress: bool = True


def _probes(spec: ScoreSpec, first: Revision, vocab_size: int) -> tuple[ProbeSet, str]:
    if spec.ordinary_range is not None:
        rng, sep, where = spec.ordinary_range, spec.sep_token, "--ordinary-range"
    else:
        rng, sep, where = vocabulary(first, vocab_size)
        sep = spec.sep_token if spec.sep_token is not None else sep
    try:
        # a pretrained model's data may copy anywhere: the general probe's region starts at 0
        return make_probes(vocab_size, spec.context, spec.probe_seed, rng, sep, n_seqs=spec.probe_seqs,
                           n=spec.probe_len, repeat_start=0, filler=spec.val_tokens), where
    except ValueError as e:
        raise ScoreError(f"probes: {e}") from None


def _successors(spec: ScoreSpec, vocab_size: int) -> Successors | None:
    """Bigram counts of the held-out text (``--val-tokens``); None without it."""
    if spec.val_tokens is None:
        return None
    try:
        return bigram_successors(spec.val_tokens, vocab_size)
    except ValueError as e:
        raise ScoreError(f"--val-tokens: {e}") from None


def _check_positions(hf: torch.nn.Module, probes: ProbeSet) -> None:
    """The longest probe must fit the model's positions (a learned table has no row past them)."""
    c = hf.config
    most = getattr(c, "n_positions", None) or getattr(c, "max_position_embeddings", None)
    longest = max(probes.repeat.shape[1], probes.copy_fwd.shape[1], probes.general.shape[1])
    if most is not None and longest > most:
        raise ScoreError(f"--context {probes.context}: probes of {longest} tokens exceed the model's "
                         f"{most} positions; lower --context or --probe-len")


def _record(spec: ScoreSpec, hf: torch.nn.Module, probes: ProbeSet, names: list[str], where: str,
            successors: Successors | None) -> dict[str, Any]:
    """series.json for ``spec`` (ihstats.base.series.SERIES_KEYS), from the first checkpoint."""
    shape = HFModel(hf).cfg
    n_params, n_non_emb = count_params(hf)
    versions = package_versions()
    versions["transformers"] = metadata.version("transformers")
    probe = {"seed": probes.seed, "n_seqs": probes.n_seqs, "n": probes.n, "n_copy": probes.n_copy,
             "n_copy_seqs": probes.n_copy_seqs, "ordinary_range": list(probes.ordinary_range),
             "sep_token": probes.sep_token, "vocab_size": probes.vocab_size, "vocabulary_from": where,
             "val_tokens": None if spec.val_tokens is None else list(spec.val_tokens.shape),
             "general": {"span": probes.general_layout["span"], "distances": list(probes.general_layout["distances"]),
                         "rows": int(probes.general.shape[0]), "filler": probes.general_filler},
             "successors": None if successors is None else successors.what}
    rec = {"kind": SERIES_KIND, "run_id": "", "model": spec.model, "family": hf.config.model_type,
           "B": spec.batch_size, "C": spec.context, "revisions": [r.record(spec.batch_size, spec.context)
                                                                  for r in spec.revisions],
           "probe": probe, "metrics": names, "dtype": spec.dtype, "n_params": n_params,
           "n_params_non_embedding": n_non_emb, "n_layer": shape.n_layer, "n_head": shape.n_head,
           "d_model": int(hf.get_input_embeddings().weight.shape[1]), "versions": versions,
           "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "git_commit": git_commit(), "device": spec.device, "threads": torch.get_num_threads()}
    rec["run_id"] = series_id(rec)
    rec["shape_id"] = shape_id(rec)  # N and width are checked by readers against it (ihstats.base.series)
    return rec


def _merge_existing(out: Path, rec: dict[str, Any]) -> dict[str, Any]:
    """A rerun into a series directory: the same identity (else an error naming what differs), its
    revisions joined with the new ones, its creation time kept."""
    old = read_series(out)
    if old["run_id"] != rec["run_id"]:
        differ = [k for k in ("model", "family", "B", "C", "probe", "metrics", "dtype") if old[k] != rec[k]]
        raise ScoreError(f"{out}: holds a series scored with other settings ({', '.join(differ)} differ); "
                         f"rerun with its settings to resume, or pass another --out")
    by_name = {r["revision"]: r for r in old["revisions"]}
    by_name.update({r["revision"]: r for r in rec["revisions"]})
    revs = sorted(by_name.values(), key=lambda r: r["step"])
    steps = [r["step"] for r in revs]
    if len(set(steps)) != len(steps):
        raise ScoreError(f"{out}: two revisions with the same step ({', '.join(r['revision'] for r in revs)})")
    return {**rec, "revisions": revs, "created": old["created"]}


def _scored_steps(out: Path) -> set[int]:
    path = out / METRICS_FILE
    return set() if not path.is_file() else set(read_parquet(path, ["step"], "metric log")["step"].tolist())


def _append_rows(out: Path, rows: pd.DataFrame) -> pd.DataFrame:
    """metrics.parquet with ``rows`` added (sorted by step), written atomically: a kill leaves the
    old file or the new one, never half of one."""
    path = out / METRICS_FILE
    old = read_parquet(path, what="metric log") if path.is_file() else None
    frame = rows if old is None else pd.concat([old[old["step"] != rows["step"].iloc[0]], rows], ignore_index=True)
    frame = frame.sort_values("step", kind="stable").reset_index(drop=True)
    atomic_write_parquet(path, frame)
    return frame


def _score_one(spec: ScoreSpec, rev: Revision, probes: ProbeSet, names: list[str], first: dict[str, Any],
               hf: torch.nn.Module | None = None, successors: Successors | None = None) -> pd.DataFrame:
    """metrics.parquet rows of one revision (``hf``: already loaded, else loaded here)."""
    hf = hf if hf is not None else load_checkpoint(rev, spec.dtype, spec.device)
    model = HFModel(hf)
    emb = hf.get_input_embeddings().weight.shape  # (V, d)
    shape = {"family": hf.config.model_type, "n_layer": model.cfg.n_layer, "n_head": model.cfg.n_head,
             "d_model": int(emb[1])}
    theirs = {k: first[k] for k in shape}
    if shape != theirs or int(emb[0]) != first["probe"]["vocab_size"]:
        raise ScoreError(f"revision {rev.name}: a {shape} model with {int(emb[0])} embedding rows, not the "
                         f"series' {theirs} with {first['probe']['vocab_size']}: one series is one model")
    res = evaluate(model, probes, spec.val_tokens, include=names, successors=successors)
    del model, hf
    return to_rows(res, rev.step, rev.step * spec.batch_size * spec.context)


class RevisionLog:
    """Progress over revisions: a tqdm bar on a terminal; elsewhere (a log file, CI, ``nohup``) one
    plain line per scored revision with the time it took and the time left, no carriage returns."""

    def __init__(self, name: str, total: int, show: bool):
        self.name, self.total, self.show = name, total, show and progress.enabled()
        self.terminal = progress.interactive()
        self.t0 = self.t_last = time.monotonic()
        self.n = 0
        self._bar: Any = None

    def bar(self, todo: list) -> Any:
        if self.terminal:
            self._bar = tqdm(todo, desc=f"scoring {self.name}", unit="rev", disable=not self.show)
            return self._bar
        return todo

    def scored(self, rev_name: str) -> None:
        self.n += 1
        now = time.monotonic()
        if self._bar is not None:
            self._bar.set_postfix_str(rev_name)
        elif self.show:
            left = (now - self.t0) / self.n * (self.total - self.n)
            print(f"scored {self.name} {rev_name} ({self.n}/{self.total}) in {now - self.t_last:.0f} s; "
                  f"about {left:.0f} s left", file=sys.stderr, flush=True)
        self.t_last = now


def score_series(spec: ScoreSpec) -> dict[str, Any]:
    """Score every revision of ``spec`` not yet in ``spec.out``; returns the series.json written.

    Resumable: a directory holding the same series (same identity, :data:`ihstats.base.series.IDENTITY_KEYS`)
    keeps its scored revisions and scores the rest; another series there is an error.
    """
    out = Path(spec.out)
    if out.exists() and not out.is_dir():
        raise ScoreError(f"--out {out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not is_series_dir(out):
        raise ScoreError(f"--out {out}: a non-empty directory without series.json; pass a new or series directory")
    first_rev = spec.revisions[0]
    hf = load_checkpoint(first_rev, spec.dtype, spec.device)
    family_of(hf)  # an unsupported family fails before anything is written
    probes, where = _probes(spec, first_rev, int(hf.get_input_embeddings().weight.shape[0]))
    _check_positions(hf, probes)
    successors = _successors(spec, probes.vocab_size)
    names = metric_names(spec.include or None, has_val=spec.val_tokens is not None, has_successors=successors is not None)
    rec = _record(spec, hf, probes, names, where, successors)
    out.mkdir(parents=True, exist_ok=True)
    with series_lock(out):
        if is_series_dir(out):
            rec = _merge_existing(out, rec)
        write_series(out, rec)
        first = [hf]  # handed over, not kept here: one checkpoint in memory at a time
        del hf
        try:
            _score_todo(spec, out, rec, probes, names, first, successors)
        except Exception as e:  # noqa: BLE001 - whatever stops it, the series says failed, in one line
            msg = str(e) if isinstance(e, ScoreError) else f"{type(e).__name__}: {one_line(e)}"
            write_status(out, "failed", _last_scored(out), reason=msg)
            raise ScoreError(msg) from None
    return rec


LOCK_FILE = ".score.lock"  # held (flock) by the one scorer writing a series directory


@contextmanager
def series_lock(out: Path) -> Iterator[None]:
    """Hold ``out/.score.lock``: a second scorer into the same series stops with one line instead
    of both appending to one log."""
    with open(out / LOCK_FILE, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ScoreError(f"--out {out}: another scorer is writing this series now ({out / LOCK_FILE} is "
                             f"held); wait for it to finish, or pass another --out") from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _last_scored(out: Path) -> int:
    try:
        return max(_scored_steps(out), default=0)
    except (OSError, ValueError):  # a damaged log: the failed status still gets written
        return 0


def _score_todo(spec: ScoreSpec, out: Path, rec: dict[str, Any], probes: ProbeSet, names: list[str],
                first: list[torch.nn.Module], successors: Successors | None = None) -> None:
    """Score the revisions of ``spec`` not yet in ``out`` (``first``: the first one, loaded)."""
    first_rev, hf = spec.revisions[0], first.pop()
    done = _scored_steps(out)
    todo = [r for r in spec.revisions if r.step not in done]
    loaded = hf if todo and todo[0] is first_rev else None  # the first revision is not loaded twice
    del hf
    log = RevisionLog(Path(spec.model).name, len(todo), spec.progress)
    frame = None
    for rev in log.bar(todo):
        write_status(out, "running", max(done, default=0), reason=f"scoring {rev.name}")
        frame = _append_rows(out, _score_one(spec, rev, probes, names, rec, loaded, successors))
        loaded = None
        done.add(rev.step)
        log.scored(rev.name)
        gc.collect()  # one checkpoint in memory at a time: free this one before the next loads
        if spec.device.startswith("cuda"):
            torch.cuda.empty_cache()
    if frame is None and (out / METRICS_FILE).is_file():
        frame = read_parquet(out / METRICS_FILE, what="metric log")
    last = max(done, default=0)
    crossing = ps_crossing(frame, FORMED_LEVEL) if frame is not None else None
    write_status(out, "done", last, crossing=crossing)


def mechanism_line(out: Path, rec: dict[str, Any]) -> str:
    """One line for a scored series: its mechanism class and whether it formed
    (:func:`ihstats.certificate.certify_run` on its metrics at the default level), with the reason."""
    path = Path(out) / METRICS_FILE
    if not path.is_file():
        return f"{rec['model']}: nothing scored"
    cert = certify_run(read_parquet(path, what="metric log"), rec)
    verdict = f"formed (certified from step {cert.certified_step})" if cert.certified else "not formed"
    return f"{Path(rec['model']).name}: {cert.cls}, {verdict} ({cert.reason})"


__all__ = ["LOCK_FILE", "ScoreSpec", "mechanism_line", "score_series", "series_lock"]
