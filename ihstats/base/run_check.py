"""One check of a run directory's files against each other, made by every reader before it counts
a run (issue 50): ``ihstats.base.io.load_run`` / ``load_grid`` (and so ``ihstats.emergence``, the law,
frontier and Bi-Induct readers), ``python -m ihstats.base.schema``, ``ihtrain.ablate`` and the
trainer's resume (``ihtrain.run.files``).

A run's files are written by one trainer in one directory; a file edited, copied or lost after the
run was made breaks one of these rules, and a reader that trusted it would report a wrong factor
(an edited batch size), a wrong censoring step (a lost last evaluation) or the same run twice:

- ``config.json``'s ``config`` hashes to its ``run_id`` (:func:`ihstats.base.ids.config_hash`);
- in a grid the directory is named by that ``run_id`` (a renamed copy is not);
- a run whose ``status.json`` says ``done`` has a ``metrics.parquet`` whose last evaluation is the
  step ``status.json`` records (the trainer always evaluates its last update);
- a grid holds each ``run_id`` once (a copy or a symlink of a run is a second row of the same run),
  and every sub-directory holding a run's files has its ``config.json``.

Checkpoints are torch files, which ihstats cannot read: the trainer checks the ``run_id`` a
``last.pt`` carries on resume, and ``ihtrain.ablate`` the one of ``final.pt``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ihstats.base.contract import METRICS_FILE, STATUS_FILE, WATCHED_METRICS
from ihstats.base.ids import config_hash
from ihstats.base.series import SERIES_KIND, is_series_dir, series_id

#: a run's data: a sub-directory with one of them but no config.json is a run that lost its config
#: (not an unrelated folder to pass over; a status.json alone is a run that failed before it wrote one)
RUN_FILES = (METRICS_FILE, "train.parquet", "checkpoints")
#: everything a trainer writes in a run directory, and a grid in its directory (beside the runs):
#: no other command may write over them (ihstats.base.cli_checks, the output guard)
RUN_OWN_FILES = ("config.json", STATUS_FILE, *RUN_FILES, "error.txt", "curves.png", "curves.pdf", "worker.log", "stop.request",
                 ".run.lock")
GRID_OWN_FILES = ("grid.json", "manifest.parquet", "summary.csv", ".grid.lock")


def folder_kind(folder: str | Path) -> str | None:
    """``"run"`` (a config.json, or the status.json of a run that failed before writing one),
    ``"grid"`` (a grid.json or manifest.parquet) or None."""
    f = Path(folder)
    if (f / "config.json").is_file() or (f / STATUS_FILE).is_file():
        return "run"
    return "grid" if (f / "grid.json").is_file() or (f / "manifest.parquet").is_file() else None


def config_problem(meta: Any) -> str | None:
    """Why a ``config.json`` dict is not a run's own record (None: it is): ``run_id`` and
    ``config`` present, and the config hashing to the run_id (else it was edited after the run)."""
    if isinstance(meta, dict) and meta.get("kind") == SERIES_KIND:  # a scored series: its sidecar's identity
        got = series_id(meta)
        return None if got == meta.get("run_id") else (f"its identity hashes to {got}, not its run_id "
                                                       f"{meta.get('run_id')} (series.json edited after scoring?)")
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict) or "run_id" not in meta:
        return "has no 'run_id' and 'config' (not a run's config.json)"
    got = config_hash(meta["config"])
    if got != meta["run_id"]:
        return (f"its config hashes to {got}, not its run_id {meta['run_id']} (edited after the run was made? "
                f"the run's factors would be misreported)")
    return None


def _number(value: Any, integer: bool = False) -> bool:
    """A finite number (a whole one when ``integer``), never a boolean (``true`` is no batch size)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and (not integer or float(value).is_integer())


def _get(d: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        d = d.get(part) if isinstance(d, dict) else None
    return d


#: the config values a reader turns into factors or verdicts, with the trainer's own ranges
#: (``ihtrain.config_checks``; ihstats cannot import the trainer): (dotted field, integer, test, range)
CONFIG_RANGES = (
    ("seed", True, lambda v: v >= 0, ">= 0"),
    ("train.batch_size", True, lambda v: v > 0, "> 0"),
    ("train.context", True, lambda v: v > 1, "> 1"),
    ("model.n_layer", True, lambda v: v > 0, "> 0"),
    ("model.n_head", True, lambda v: v > 0, "> 0"),
    ("model.d_model", True, lambda v: v > 0, "> 0"),
    ("model.context", True, lambda v: v > 0, "> 0"),
    ("model.mlp_ratio", True, lambda v: v > 0, "> 0"),
    ("train.lr", False, lambda v: v > 0, "> 0"),
)


def config_value_problems(meta: dict[str, Any]) -> list[str]:
    """Every value of a run's ``config.json`` a reader would use that the trainer would refuse, or
    that disagrees with the hashed ``config`` (each a phrase naming the field): the ranged fields of
    :data:`CONFIG_RANGES`, the formed level ``train.emergence_threshold`` (in (0, 1]) and its metric,
    the top-level ``seed`` (a copy of ``config.seed``), and the parameter counts (``n_params_non_embedding``
    computed from the hashed model config; ``n_params`` adds the embeddings of ``vocab_size``)."""
    cfg, found = meta["config"], []
    for field, integer, test, words in CONFIG_RANGES:
        value = _get(cfg, field)
        if value is not None and not (_number(value, integer) and test(value)):
            found.append(f"config.{field} is {value!r}; the trainer needs {'an integer' if integer else 'a number'} {words}")
    level = _get(cfg, "train.emergence_threshold")
    if level is not None and not (_number(level) and 0 < level <= 1):
        found.append(f"config.train.emergence_threshold (the formed level) is {level!r}; the trainer needs (0, 1]")
    metric = _get(cfg, "train.emergence_metric")
    if metric is not None and metric not in WATCHED_METRICS:
        found.append(f"config.train.emergence_metric is {metric!r}; the trainer needs one of {', '.join(WATCHED_METRICS)}")
    if "seed" in meta and meta["seed"] != cfg.get("seed", meta["seed"]):
        found.append(f"its top-level seed {meta['seed']!r} is not the hashed config.seed {cfg.get('seed')!r}")
    return found + ([] if found else _count_problems(meta, cfg["model"] if isinstance(cfg.get("model"), dict) else {}))


def non_embedding_params(model: dict[str, Any]) -> int | None:
    """Non-embedding parameters of our GPT (``ihtrain.model.GPT.num_params``) from its model config:
    per block LayerNorm, fused qkv and output projection, MLP (none when ``attn_only``), biases when
    ``bias``; and the final LayerNorm. None when a field it needs is missing."""
    try:
        d, L, r = int(model["d_model"]), int(model["n_layer"]), int(model["mlp_ratio"])
        bias, attn_only = bool(model["bias"]), bool(model["attn_only"])
    except (KeyError, TypeError, ValueError):
        return None
    ln = d * (2 if bias else 1)
    attn = 4 * d * d + (4 * d if bias else 0)
    mlp = 2 * r * d * d + ((r * d + d) if bias else 0)
    return L * (ln + attn + (0 if attn_only else ln + mlp)) + ln


def _count_problems(meta: dict[str, Any], model: dict[str, Any]) -> list[str]:
    n, total, vocab = meta.get("n_params_non_embedding"), meta.get("n_params"), meta.get("vocab_size")
    for key, value in (("n_params_non_embedding", n), ("n_params", total), ("vocab_size", vocab)):
        if value is not None and not (_number(value, True) and value > 0):
            return [f"its {key} is {value!r}, not a positive integer"]
    want = non_embedding_params(model)
    if n is not None and want is not None and n != want:
        return [f"its n_params_non_embedding {n} is not the {want} its hashed model config has (edited?)"]
    if None in (n, total, vocab) or want is None:
        return []
    if model.get("vocab_size") and vocab != model["vocab_size"]:
        return [f"its vocab_size {vocab} is not the hashed model.vocab_size {model['vocab_size']}"]
    d, ctx = int(model["d_model"]), int(model["context"])
    emb = vocab * d * (1 if model.get("tie_embeddings", True) else 2) + ctx * d
    return [] if total == n + emb else [f"its n_params {total} is not n_params_non_embedding + embeddings "
                                        f"({n} + {emb} for vocab_size {vocab}; edited?)"]


#: the range each metric's values lie in (docs/DESIGN.md, "Metric definitions"): attention
#: fractions and shares in [0, 1], the OV copying score in [-1, 1], a rank or loss >= 0, a
#: log-probability <= 0; ``RANGE_SLACK`` allows for low-precision rounding above, ``BELOW_SLACK``
#: for the Gaussian noise simulated logs (:mod:`ihstats.simulate`) carry below (a value too low forms
#: no run; one too high, a PS of 5.0, would). Unlisted: any finite value.
METRIC_RANGES = {**{m: (0.0, 1.0) for m in ("ps", "prev_token", "la", "copy_fwd", "anti_induction", "ar_acc",
                                            "dup_bwd", "ps_nat", "ps_indist", "anti_copy")},
                 "ov_copy": (-1.0, 1.0), "ar_rank": (0.0, math.inf), "val_loss": (0.0, math.inf),
                 **{m: (-math.inf, 0.0) for m in ("repeat_nat_logprob", "copy_fwd_logprob", "copy_bwd_logprob")}}
RANGE_SLACK, BELOW_SLACK = 0.01, 0.25


def metric_range_problem(df: Any, source: str) -> str | None:
    """Why a metric log (columns metric, value, step, layer, head) holds a value outside its
    :data:`METRIC_RANGES` range, naming the file and metric (None: every value is inside)."""
    unbounded = (-math.inf, math.inf)
    lo = df["metric"].map(lambda m: METRIC_RANGES.get(m, unbounded)[0]).to_numpy(float)
    hi = df["metric"].map(lambda m: METRIC_RANGES.get(m, unbounded)[1]).to_numpy(float)
    v = df["value"].to_numpy(float)
    bad = (v < lo - BELOW_SLACK) | (v > hi + RANGE_SLACK)
    if not bad.any():
        return None
    i = int(bad.nonzero()[0][0])
    row = df.iloc[i]
    return (f"{source}: metric {row['metric']!r} has {int(bad.sum())} value(s) outside its range [{lo[i]:g}, "
            f"{hi[i]:g}] (first {row['value']:g} at step {row['step']}, layer {row['layer']}, head {row['head']}); "
            f"the log was edited or damaged")


def logs_problem(status: dict[str, Any] | None, last_metric_step: int | None) -> str | None:
    """Why a run's metric log disagrees with its ``status.json`` (None: it agrees). Only a done run
    is held to it: a running run's status may trail its log (rows past a checkpoint are dropped on
    resume)."""
    if not status or status.get("status") != "done":
        return None
    step = status.get("step")
    if last_metric_step is None:
        return f"{METRICS_FILE} is missing, but {STATUS_FILE} says the run is done at update {step}"
    if last_metric_step != step:
        return (f"{METRICS_FILE} ends at update {last_metric_step}, but {STATUS_FILE} says the run is done at update "
                f"{step} (evaluations missing: its onset or censoring step would be wrong)")
    return None


def run_problems(run_dir: str | Path, meta: Any, status: dict[str, Any] | None, last_metric_step: int | None, *,
                 named: bool = False) -> list[str]:
    """Every rule of the module docstring one run breaks (empty: none), each a phrase naming the
    file. ``named``: the directory belongs to a grid, so it must be named by the run_id."""
    rd = Path(run_dir)
    found = []
    why = config_problem(meta)
    if why:
        found.append(f"config.json: {why}")
    elif meta.get("kind") != SERIES_KIND and (values := config_value_problems(meta)):
        found.append(f"config.json: {'; '.join(values)}")
    elif named and rd.name != meta["run_id"]:
        what = f"a symlink to {rd.resolve()}" if rd.is_symlink() else "a renamed copy?"
        found.append(f"the directory is named {rd.name} but holds run {meta['run_id']} ({what})")
    why = logs_problem(status, last_metric_step)
    if why:
        found.append(why)
    return found


def run_dirs_of(grid_dir: str | Path) -> tuple[list[Path], list[str]]:
    """The run directories directly under ``grid_dir`` (those with a config.json, sorted) and the
    sub-directories that hold a run's files without one (each a phrase: a run must not vanish
    from a table because its config.json was lost)."""
    runs, orphans = [], []
    for p in sorted(q for q in Path(grid_dir).iterdir() if q.is_dir()):
        if (p / "config.json").is_file() or is_series_dir(p):
            runs.append(p)
        elif any((p / f).exists() for f in RUN_FILES):
            orphans.append(f"{p}: holds a run's files but no config.json (lost?); restore it, or move the "
                           f"directory out of {grid_dir}")
    return runs, orphans


def duplicate_runs(run_ids: list[str], paths: list[str | Path]) -> list[str]:
    """One phrase per run_id held by more than one directory (a copy or a symlink of a run)."""
    where: dict[str, list[str]] = {}
    for rid, p in zip(run_ids, paths):
        link = " (a symlink)" if Path(p).is_symlink() else ""
        where.setdefault(rid, []).append(f"{p}{link}")
    return [f"run {rid} is held by {len(ps)} directories ({', '.join(ps)}): a copy or a symlink counts it twice; "
            f"keep one" for rid, ps in where.items() if len(ps) > 1]


__all__ = ["BELOW_SLACK", "CONFIG_RANGES", "METRIC_RANGES", "RANGE_SLACK", "metric_range_problem", "GRID_OWN_FILES", "RUN_FILES", "RUN_OWN_FILES", "folder_kind", "config_problem",
           "config_value_problems", "non_embedding_params", "duplicate_runs", "logs_problem", "run_dirs_of", "run_problems"]
