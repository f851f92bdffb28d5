"""Checks of run and grid directories against the contract (:mod:`ihstats.base.contract`,
docs/DESIGN.md "Data contracts"): every file present, keys and columns there, logs consistent
with ``status.json``.

Used by ``python -m ihtrain.grid`` at the end of a grid, beside the checks ``ihstats.base.io`` makes
while loading. Functions return a list of problems (empty: ok) so callers decide whether to warn
or fail; ``assert_grid_dir`` raises. No torch import.

    python -m ihstats.base.schema runs/bxc-text
    python -m ihstats.base.schema --logs-only data/reference_runs/bxc-cpu-h200-bf16
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ihstats.base.contract import (
    CONFIG_KEYS, MANIFEST_COLUMNS, MANIFEST_KEY_COLUMNS, METRICS_COLUMNS, METRICS_KEY, MODEL_LEVEL, PER_HEAD,
    STATUSES, TRAIN_COLUMNS, SchemaError, emergence_metric, formed_level, ps_crossing,
)
from ihstats.base.fileio import UnreadableFile, read_json, read_parquet
from ihstats.base.run_check import (config_problem, config_value_problems, duplicate_runs, logs_problem, metric_range_problem,
                               run_dirs_of)
from ihstats.base.series import is_series_dir, read_series
from ihstats.base.command import run_cli


def _json(path: Path, problems: list[str]) -> dict | None:
    try:
        return read_json(path, path.stem)
    except UnreadableFile as e:
        problems.append(str(e))
        return None


def _parquet(path: Path, problems: list[str], columns: list[str] | None = None) -> pd.DataFrame | None:
    try:
        return read_parquet(path, columns)
    except UnreadableFile as e:
        problems.append(str(e))
        return None


def check_run_dir(run_dir: str | Path, weights: bool | str = True) -> list[str]:
    """Problems with one run directory; a finished run must have every file, a running one may not.
    ``weights=False`` checks logs only (a copy without checkpoints, e.g. data/reference_runs);
    ``weights="where-kept"`` asks for ``final.pt`` only where a ``checkpoints`` folder exists (a
    grid that resumed into a logs-only copy: its copied runs have none, its trained runs must)."""
    rd = Path(run_dir)
    if is_series_dir(rd) and not (rd / "config.json").is_file():
        return check_series_dir(rd)
    problems: list[str] = []
    status = _json(rd / "status.json", problems)
    if status is not None:
        problems += _check_status(rd, status)
    done = bool(status) and status.get("status") == "done"
    if not done and not (rd / "config.json").is_file():
        return problems  # a run that failed before writing its config: status.json says why
    cfg = _json(rd / "config.json", problems)
    if cfg is not None:
        missing = [k for k in CONFIG_KEYS if k not in cfg]
        if missing:
            problems.append(f"{rd}/config.json: missing keys {missing}")
        why = config_problem(cfg)
        if why:
            problems.append(f"{rd}/config.json: {why}")
        elif values := config_value_problems(cfg):
            problems.append(f"{rd}/config.json: {'; '.join(values)}")
        elif cfg.get("run_id") != rd.name:
            problems.append(f"{rd}/config.json: run_id {cfg.get('run_id')!r} does not match the directory name")
    if not done:
        return problems
    kept = weights is True or (weights == "where-kept" and (rd / "checkpoints").is_dir())
    if kept and not (rd / "checkpoints" / "final.pt").is_file():
        problems.append(f"{rd}/checkpoints/final.pt: missing for a done run")
    problems += check_metrics(rd / "metrics.parquet")
    tp = rd / "train.parquet"
    tr = _parquet(tp, problems)
    if tr is not None:
        miss = [c for c in TRAIN_COLUMNS if c not in tr.columns]
        if miss:
            problems.append(f"{tp}: missing columns {miss}")
        elif tr["step"].duplicated().any():
            problems.append(f"{tp}: duplicated steps {sorted(tr.loc[tr['step'].duplicated(), 'step'])[:5]}")
    if status and (rd / "metrics.parquet").is_file() and not problems:
        problems += _check_logs_agree(rd, status, cfg or {})
    return problems


def check_series_dir(series_dir: str | Path) -> list[str]:
    """Problems with a scored checkpoint series (``python -m ihtrain.score``): series.json
    (:func:`ihstats.base.series.read_series`), status.json, the metric log, every scored step one of
    the sidecar's revisions with tokens = step * B * C; no weights or training log."""
    rd = Path(series_dir)
    problems: list[str] = []
    try:
        rec = read_series(rd)
    except SchemaError as e:
        return [str(e)]
    status = _json(rd / "status.json", problems)
    if status is not None:
        problems += _check_status(rd, status)
    if not (status and status.get("status") == "done"):
        return problems
    problems += check_metrics(rd / "metrics.parquet")
    if problems:
        return problems
    m = read_parquet(rd / "metrics.parquet", columns=["step", "tokens"]).drop_duplicates()
    tokens = {r["step"]: r["tokens"] for r in rec["revisions"]}
    stray = sorted(set(m["step"]) - set(tokens))
    if stray:
        problems.append(f"{rd}/metrics.parquet: step(s) {stray[:5]} are no revision of series.json")
    wrong = m[m["step"].map(tokens).notna() & (m["step"].map(tokens) != m["tokens"])]
    if len(wrong):
        problems.append(f"{rd}/metrics.parquet: tokens at step {int(wrong['step'].iloc[0])} differ from "
                        f"series.json's (step * B * C)")
    return problems + _check_logs_agree(rd, status, {})


def _check_logs_agree(rd: Path, status: dict, cfg: dict) -> list[str]:
    """A done run's status.json against its (well-formed) metric log: the last evaluation is the
    last update, and a recorded crossing is the one the log gives."""
    m = read_parquet(rd / "metrics.parquet", columns=["step", "metric", "layer", "head", "value"])
    problems = []
    why = logs_problem(status, int(m["step"].max()))
    if why:
        problems.append(f"{rd}: {why}")
    # a log continued after its early rows were lost starts late: the first evaluation comes before
    # the first logged update, and that comes at train.log_every at the latest
    log_every = (cfg.get("config") or {}).get("train", {}).get("log_every")
    tr = read_parquet(rd / "train.parquet", columns=["step"]) if (rd / "train.parquet").is_file() else None
    first_train = int(tr["step"].min()) if tr is not None and len(tr) else None
    if first_train is not None and int(m["step"].min()) > first_train:
        problems.append(f"{rd}/metrics.parquet: starts at update {int(m['step'].min())}, after train.parquet's "
                        f"first row ({first_train}): its early rows are missing")
    if first_train is not None and log_every and first_train > log_every:
        problems.append(f"{rd}/train.parquet: starts at update {first_train}, after train.log_every = {log_every}: "
                        f"its early rows are missing")
    if "crossing" in status:
        logged = ps_crossing(m, formed_level(cfg), emergence_metric(cfg))
        if logged != status["crossing"]:
            problems.append(f"{rd}: status.json crossing {status['crossing']} != {logged}, the first step at "
                            f"which metrics.parquet's max PS (train.emergence_metric) reaches train.emergence_threshold")
    return problems


def _check_status(rd: Path, status: dict) -> list[str]:
    """The keys of one status.json; ``crossing`` is optional (files written before it lack it)."""
    problems = []
    if status.get("status") not in STATUSES:
        problems.append(f"{rd}/status.json: status must be one of {STATUSES}, got {status.get('status')!r}")
    for k in ("reason", "step", "stop_reason"):
        if k not in status:
            problems.append(f"{rd}/status.json: missing key {k!r}")
    crossing = status.get("crossing")
    if crossing is not None and (not isinstance(crossing, int) or isinstance(crossing, bool) or crossing < 0
                                 or crossing > int(status.get("step", crossing))):
        problems.append(f"{rd}/status.json: crossing must be null or an update in [0, step], got {crossing!r}")
    return problems


def check_metrics(path: Path) -> list[str]:
    problems: list[str] = []
    m = _parquet(path, problems)
    if m is None:
        return problems
    miss = [c for c in METRICS_COLUMNS if c not in m.columns]
    if miss:
        return [f"{path}: missing columns {miss}"]
    problems = []
    key = list(METRICS_KEY)
    dup = m.duplicated(key)
    if dup.any():
        problems.append(f"{path}: {int(dup.sum())} duplicated (step, metric, layer, head) rows, e.g. "
                        f"{m.loc[dup, key].iloc[0].tolist()}")
    model_rows = m[m["metric"].isin(MODEL_LEVEL)]
    if ((model_rows["layer"] != -1) | (model_rows["head"] != -1)).any():
        problems.append(f"{path}: model-level metrics {MODEL_LEVEL} must have layer = head = -1")
    head_rows = m[m["metric"].isin(PER_HEAD)]
    if ((head_rows["layer"] < 0) | (head_rows["head"] < 0)).any():
        problems.append(f"{path}: per-head metrics must have layer, head >= 0")
    if why := metric_range_problem(m, str(path)):
        problems.append(why)
    if "ps" not in set(m["metric"]):
        problems.append(f"{path}: no 'ps' rows")
    # every evaluation step carries the same set of (metric, layer, head) rows
    per_step = m.groupby("step").size()
    if per_step.nunique() > 1:
        problems.append(f"{path}: evaluation steps have different row counts {sorted(set(per_step))}")
    return problems


def check_grid_dir(grid_dir: str | Path, weights: bool | str = True) -> list[str]:
    """Problems with a grid directory: grid.json, manifest.parquet, and every listed run
    (``weights`` as :func:`check_run_dir`)."""
    gd = Path(grid_dir)
    problems: list[str] = []
    grid = _json(gd / "grid.json", problems)
    man = _parquet(gd / "manifest.parquet", problems)
    mp = gd / "manifest.parquet"
    if man is None:
        return problems
    if "run_id" in man.columns:
        problems += _check_run_set(gd, set(man["run_id"]))
    required = MANIFEST_COLUMNS + (MANIFEST_KEY_COLUMNS if grid is not None and "seeds" in grid else ())
    miss = [c for c in required if c not in man.columns]
    if miss:
        return problems + [f"{mp}: missing columns {miss}"]
    if man["run_id"].duplicated().any():
        problems.append(f"{mp}: duplicated run ids")
    if grid is not None:
        ids = [r["run_id"] for r in grid.get("runs", [])]
        if sorted(ids) != sorted(man["run_id"]):
            problems.append(f"{mp}: run ids differ from grid.json's run list")
        for c in grid.get("columns", []):
            if c not in man.columns:
                problems.append(f"{mp}: missing factor column {c!r}")
    for _, row in man.iterrows():
        rd = gd / row["run_id"]
        if row["status"] == "pending":
            continue
        if not rd.is_dir():
            problems.append(f"{rd}: listed in the manifest as {row['status']} but missing")
            continue
        st = _json(rd / "status.json", problems) or {} if (rd / "status.json").is_file() else {}
        disk = "interrupted" if st.get("status") == "running" else st.get("status")
        if disk != row["status"]:
            problems.append(f"{mp}: {row['run_id']} is {row['status']} in the manifest but {disk} on disk")
        problems += check_run_dir(rd, weights)
    return problems


def _check_run_set(gd: Path, listed: set[str]) -> list[str]:
    """The grid's run directories as a set: each run once (no copy or symlink of another), each
    listed in the manifest, none without its config.json (:mod:`ihstats.base.run_check`)."""
    dirs, problems = run_dirs_of(gd)
    ids = [str((_json(d / "config.json", []) or {}).get("run_id")) for d in dirs]
    problems += duplicate_runs(ids, dirs)
    problems += [f"{d}: a run directory not listed in {gd}/manifest.parquet (a copy? move it out of the grid)"
                 for d in dirs if d.name not in listed]
    return problems


def assert_grid_dir(grid_dir: str | Path) -> None:
    problems = check_grid_dir(grid_dir)
    if problems:
        raise SchemaError(f"{grid_dir}: {len(problems)} problem(s): " + "; ".join(problems[:10]))


def main(argv: list[str] | None = None, prog: str = "python -m ihstats.base.schema") -> int:
    p = argparse.ArgumentParser(prog=prog, description="Check a grid or run directory "
                                "against the data contract.")
    p.add_argument("path", help="grid directory (with manifest.parquet) or run directory (with status.json)")
    p.add_argument("--logs-only", action="store_true", help="do not require checkpoints/final.pt (a copy of "
                   "the logs without weights)")
    args = p.parse_args(argv)
    path = Path(args.path)
    if not path.is_dir():
        print(f"error: {path}: no such directory; give a grid or run directory", file=sys.stderr)
        return 2
    check = check_grid_dir if (path / "manifest.parquet").is_file() else check_run_dir
    problems = check(path, weights=not args.logs_only)
    for msg in problems:
        print(msg)
    print(f"{path}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    run_cli(main)
