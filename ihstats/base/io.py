"""Read run and grid directories (layout: ``docs/DESIGN.md``) into tidy pandas frames.

Schema problems raise :class:`SchemaError` naming the file, the column and the problem. Softer
findings (an unknown metric name, a run that is not ``done``) are kept in ``problems`` lists and
the data is still loaded: a run that is still running or failed is flagged by its ``status``.
The names, column types, factor names and status values checked here are
:mod:`ihstats.base.contract`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ihstats.base.contract import (
    FACTOR_FIELDS, METRIC_NAMES, METRICS_COLUMNS, METRICS_FILE, STATUS_FILE, STATUSES, TRAIN_COLUMNS,
    UNKNOWN_STATUS, SchemaError, emergence_metric, formed_level, run_crossing,
)
from ihstats.base.fileio import UnreadableFile, read_json, read_parquet
from ihstats.base.ids import cell_hash, seed_kinds
from ihstats.base.run_check import METRIC_RANGES, duplicate_runs, metric_range_problem, run_dirs_of, run_problems
from ihstats.base.series import is_series_dir, read_series, series_factors
from ihstats.base.sources import source_factors, wrapper_factors

KNOWN_METRICS = METRIC_NAMES  # the contract's names (ihstats.base.contract), under the name io always used


@dataclass
class RunData:
    """One run directory: its config, grid factors, status and tidy frames."""

    run_id: str
    path: Path
    meta: dict[str, Any]  # config.json as written by the trainer
    factors: dict[str, Any]
    status: str
    metrics: pd.DataFrame  # step, tokens, metric, layer, head, value, run_id
    train: pd.DataFrame | None
    problems: list[str] = field(default_factory=list)
    # first update at which max PS reached the run's emergence threshold (None: not reached), as
    # status.json records it or, for older runs, from the metrics (ihstats.base.contract.run_crossing)
    crossing: int | None = None


@dataclass
class GridData:
    """A grid (or any directory of runs): one row per run in ``runs``, long ``metrics``/``train``."""

    path: Path
    runs: pd.DataFrame  # run_id, status, path, factors...
    metrics: pd.DataFrame  # tidy metrics with run_id
    train: pd.DataFrame
    spec: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # on_error="skip": why each left-out run was unreadable


# -------------------------------------------------------------------------- checks
def _kind_ok(series: pd.Series, kind: str) -> bool:
    t = pd.api.types
    if kind == "integer":
        return t.is_integer_dtype(series)
    if kind == "float":
        return t.is_float_dtype(series) or t.is_integer_dtype(series)
    return t.is_string_dtype(series) or isinstance(series.dtype, pd.CategoricalDtype) or \
        (series.dtype == object and series.map(lambda v: isinstance(v, str)).all())


def check_frame(df: pd.DataFrame, columns: dict[str, str], source: str) -> pd.DataFrame:
    """Check required columns and their dtypes; return a copy with canonical dtypes.

    Raises
    ------
    SchemaError
        ``"<source>: column 'x' is missing ..."`` or ``"... has dtype ..., expected ..."``.
    """
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise SchemaError(f"{source}: missing column(s) {', '.join(missing)}; "
                          f"required: {', '.join(columns)}; found: {', '.join(map(str, df.columns))}")
    for col, kind in columns.items():
        if not _kind_ok(df[col], kind):
            raise SchemaError(f"{source}: column '{col}' has dtype {df[col].dtype}, expected {kind}")
    out = df.copy()
    for col, kind in columns.items():
        out[col] = out[col].astype({"integer": "int64", "float": "float64", "string": str}[kind])
    return out


def _check_values(df: pd.DataFrame, source: str, nonfinite: str, problems: list[str]) -> pd.DataFrame:
    bad = ~np.isfinite(df["value"].to_numpy())
    if bad.any():
        first = df.loc[bad].iloc[0]
        msg = (f"{source}: column 'value' has {int(bad.sum())} NaN/infinite value(s) "
               f"(first at step {first['step']}, metric {first['metric']!r})")
        if nonfinite == "error":
            raise SchemaError(msg + "; pass nonfinite='drop' (python -m ihstats.emergence: --nonfinite drop) "
                                    "to drop them")
        problems.append(msg + "; dropped")
        df = df.loc[~bad]
    return df


def _check_ranges(df: pd.DataFrame, source: str) -> None:
    """A metric value outside its range (:data:`ihstats.base.run_check.METRIC_RANGES`: a PS of 5.0) is an
    edited or broken log: it would form a run that never formed. Raises :class:`SchemaError`."""
    why = metric_range_problem(df, source)
    if why:
        raise SchemaError(f"{why}; {SKIP_HINT}")


def read_metrics(path: str | Path, *, nonfinite: str = "error",
                 problems: list[str] | None = None) -> pd.DataFrame:
    """Read and check a ``metrics.parquet`` file.

    Parameters
    ----------
    path : path to the parquet file.
    nonfinite : {"error", "drop"}
        What to do with NaN or infinite values.
    problems : list, optional
        Receives soft findings (unknown metric names, dropped rows).
    """
    if nonfinite not in ("error", "drop"):
        raise ValueError(f"nonfinite: must be 'error' or 'drop', got {nonfinite!r}")
    problems = problems if problems is not None else []
    path = Path(path)
    raw = _checked(read_parquet, path, what="metric log")
    df = check_frame(raw, METRICS_COLUMNS, str(path))
    df = _check_values(df, str(path), nonfinite, problems)
    _check_ranges(df, str(path))
    unknown = sorted(set(df["metric"]) - set(KNOWN_METRICS))
    if unknown:
        problems.append(f"{path}: column 'metric' has names not in docs/DESIGN.md: {', '.join(unknown)} (kept)")
    return df.reset_index(drop=True)


# ------------------------------------------------------------------------- factors
def _get(d: dict[str, Any], dotted: str, default: Any = None) -> Any:
    for p in dotted.split("."):
        if not isinstance(d, dict) or p not in d:
            return default
        d = d[p]
    return d


def config_factors(meta: dict[str, Any]) -> dict[str, Any]:
    """Map a ``config.json`` dict to short factor names.

    ``cell_id`` (the run_id hash of the config without its seed, as ``RunConfig.cell_id``: shared by
    the seed replicates of a grid cell), ``seed``, ``weight_seed`` and ``data_seed`` (the seeds of the
    initial weights and of the data: ``seed`` unless the config sets them), ``B`` (train.batch_size), ``C`` (train.context),
    ``N`` (n_params_non_embedding), ``n_params``, ``n_layer``, ``n_head``, ``d_model``, ``lr``,
    ``source``; ``frequency``, ``reliability`` and the active source's knobs by leaf name
    (:func:`ihstats.base.sources.source_factors`: ``data.seminatural.*`` for ``seminatural``,
    ``data.markov.*`` for ``markov``, frequency and reliability there only when imposed, i.e. >= 0);
    each wrapper's mode and, when it is on, its knobs (:func:`ihstats.base.sources.wrapper_factors`:
    ``biinduct``). Inactive knobs are missing (NaN in frames).
    """
    cfg = meta.get("config", {})
    out: dict[str, Any] = {"cell_id": cell_hash(cfg), "seed": _get(cfg, "seed", meta.get("seed"))}  # the hashed one
    out.update(seed_kinds({**cfg, "seed": out["seed"]}))  # weight_seed, data_seed: = seed unless set (issue 66)
    out.update({k: _get(cfg, f) for k, f in FACTOR_FIELDS.items()})
    out["N"] = meta.get("n_params_non_embedding")
    out["n_params"] = meta.get("n_params")
    out["source"] = _get(cfg, "data.source")
    out["frequency"] = out["reliability"] = None
    out.update(source_factors(_get(cfg, "data", {})))
    out.update(wrapper_factors(_get(cfg, "data", {})))
    return out


# --------------------------------------------------------------------------- loaders
SKIP_HINT = "pass --skip-bad (on_error='skip') to leave the run out"


def _checked(read: Any, path: Path, **kw: Any) -> Any:
    """A checked read (:mod:`ihstats.base.fileio`) whose damaged file raises :class:`SchemaError`,
    naming the file and what is wrong."""
    try:
        return read(path, **kw, remedy=SKIP_HINT)
    except UnreadableFile as e:
        raise SchemaError(str(e)) from None


def _read_json(path: Path) -> dict[str, Any]:
    return _checked(read_json, path, what=path.stem)


def load_run(path: str | Path, *, nonfinite: str = "error", named: bool = False) -> RunData:
    """Load one run directory, refused (:class:`SchemaError` naming the run and why) when its files
    disagree with each other (:mod:`ihstats.base.run_check`: an edited config.json, a done run whose
    log misses its last evaluation).

    Parameters
    ----------
    path : run directory holding ``config.json`` (or a scored series' ``series.json``,
        :mod:`ihstats.base.series`) and (once it has evaluated) ``metrics.parquet``.
    nonfinite : {"error", "drop"}
        NaN/infinite metric values raise a :class:`SchemaError` or are dropped (and reported).
    named : bool
        The directory is a grid's, so it must be named by its run_id.

    Returns
    -------
    RunData
        ``metrics`` gains a ``run_id`` column; a missing ``metrics.parquet`` gives an empty frame
        and a problem; ``status`` is ``running|done|failed`` or ``unknown`` (no status.json);
        ``crossing`` as :func:`ihstats.base.contract.run_crossing`.
    """
    path = Path(path)
    if not path.is_dir():
        raise SchemaError(f"{path}: not a directory")
    meta, factors = _run_meta(path)
    run_id = str(meta["run_id"])
    problems: list[str] = []
    st_path = path / STATUS_FILE
    status, record = UNKNOWN_STATUS, None
    if st_path.is_file():
        record = _read_json(st_path)
        status = str(record.get("status", UNKNOWN_STATUS))
        if status not in STATUSES:
            problems.append(f"{st_path}: key 'status' is {status!r}, expected one of {', '.join(STATUSES)}")
    else:
        problems.append(f"{st_path}: missing; status 'unknown'")
    if status != "done":
        problems.append(f"{path}: run status is {status!r}, not 'done' (loaded, flagged)")
    m_path = path / "metrics.parquet"
    if m_path.is_file():
        metrics = read_metrics(m_path, nonfinite=nonfinite, problems=problems)
    else:
        problems.append(f"{m_path}: missing (no evaluations yet)")
        metrics = pd.DataFrame({c: pd.Series(dtype={"string": object, "integer": "int64", "float": "float64"}[k])
                                for c, k in METRICS_COLUMNS.items()})
    metrics["run_id"] = run_id
    t_path = path / "train.parquet"
    train = None
    if t_path.is_file():
        train = check_frame(_checked(read_parquet, t_path, what="training log"), TRAIN_COLUMNS, str(t_path))
        train["run_id"] = run_id
    last = int(metrics["step"].max()) if len(metrics) else None
    bad = run_problems(path, meta, record, last, named=named) + _log_problems(meta, factors, metrics)
    if bad:
        raise SchemaError(f"run {run_id} ({path}): {'; '.join(bad)}; {SKIP_HINT}")
    crossing = run_crossing(record, metrics, formed_level(meta), emergence_metric(meta))
    return RunData(run_id, path, meta, factors, status, metrics, train, problems, crossing)


def _log_problems(meta: dict[str, Any], factors: dict[str, Any], metrics: pd.DataFrame) -> list[str]:
    """The metric log against the run's hashed record: heads inside its ``n_layer`` x ``n_head``, and
    for a scored series only the steps of its revisions (a row at another step has no checkpoint)."""
    found = []
    L, H = factors.get("n_layer"), factors.get("n_head")
    heads = metrics[metrics["layer"] >= 0]
    if len(heads) and isinstance(L, int) and isinstance(H, int) and (
            heads["layer"].max() >= L or heads["head"].max() >= H):
        found.append(f"{METRICS_FILE} has heads up to layer {heads['layer'].max()}, head {heads['head'].max()}, "
                     f"but the model is {L} x {H}")
    if meta.get("kind") == "series" and len(metrics):
        steps = {r["step"] for r in meta["revisions"]}
        extra = sorted(set(metrics["step"].tolist()) - steps)
        if extra:
            found.append(f"{METRICS_FILE} has step(s) {extra[:5]} that no revision of series.json has")
    return found


def _run_meta(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(meta, factors) of a run directory: a trained run's ``config.json``, or a scored series'
    ``series.json`` (:mod:`ihstats.base.series`) when it has no config.json."""
    cfg_path = path / "config.json"
    if not cfg_path.is_file() and is_series_dir(path):
        meta = read_series(path)
        return meta, series_factors(meta)
    if not cfg_path.is_file():
        raise SchemaError(f"{cfg_path}: missing (every run directory needs config.json, or series.json "
                          f"for a scored checkpoint series)")
    meta = _read_json(cfg_path)
    for key in ("run_id", "config"):
        if key not in meta:
            raise SchemaError(f"{cfg_path}: missing key '{key}'")
    return meta, config_factors(meta)


def _is_run_dir(p: Path) -> bool:
    return (p / "config.json").is_file() or is_series_dir(p)


def load_grid(path: str | Path, *, nonfinite: str = "error", on_error: str = "raise") -> GridData:
    """Load a grid directory, or any directory of run directories (``grid.json`` optional).

    Parameters
    ----------
    path : directory whose sub-directories with a ``config.json`` (or a scored series'
        ``series.json``) are runs; a run directory itself is accepted too (a one-run grid).
    nonfinite : {"error", "drop"}
        See :func:`load_run`.
    on_error : {"raise", "skip"}
        A run that cannot be read (a damaged or unreadable file) raises, or is skipped and
        reported in ``problems`` and ``skipped``; if no run can be read, it raises.

    Returns
    -------
    GridData
        ``runs``: one row per run (run_id, status, path, factors; plus ``manifest_status`` when a
        ``manifest.parquet`` lists the run); ``metrics``/``train``: long frames with ``run_id``.
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error: must be 'raise' or 'skip', got {on_error!r}")
    path = Path(path)
    if not path.is_dir():
        raise SchemaError(f"{path}: not a directory")
    run_dirs, orphans = ([path], []) if _is_run_dir(path) else run_dirs_of(path)
    if not run_dirs and not orphans:
        raise SchemaError(f"{path}: no run directories (sub-directories with a config.json or series.json) found")
    if orphans and on_error == "raise":
        raise SchemaError(f"{orphans[0]}; {SKIP_HINT}")
    spec = _read_json(path / "grid.json") if (path / "grid.json").is_file() else None
    problems: list[str] = [f"{o} (run skipped)" for o in orphans]
    skipped: list[str] = list(orphans)
    runs, metrics, train = [], [], []
    for d in run_dirs:
        try:
            r = load_run(d, nonfinite=nonfinite, named=spec is not None and d != path)
        except (SchemaError, OSError) as e:  # a damaged file, or one the OS cannot read
            if on_error == "raise":
                raise
            skipped.append(str(e))
            problems.append(f"{e} (run skipped)")
            continue
        problems += r.problems
        runs.append({"run_id": r.run_id, "status": r.status, "path": str(d), **r.factors,
                     "formed_level": formed_level(r.meta)})
        metrics.append(r.metrics)
        if r.train is not None:
            train.append(r.train)
    if not runs:
        raise SchemaError(f"{path}: none of its {len(run_dirs) + len(orphans)} run(s) could be read "
                          f"(first: {skipped[0]})")
    runs_df = pd.DataFrame(runs)
    dups = duplicate_runs(list(runs_df["run_id"]), list(runs_df["path"]))
    if dups:
        raise SchemaError(f"{path}: {dups[0]}")
    man_path = path / "manifest.parquet"
    if man_path.is_file():
        man = _checked(read_parquet, man_path, what="grid manifest")
        if "run_id" not in man.columns:
            raise SchemaError(f"{man_path}: missing column 'run_id'")
        if "status" in man.columns:
            runs_df = runs_df.merge(man[["run_id", "status"]].rename(columns={"status": "manifest_status"}),
                                    on="run_id", how="left")
        absent = sorted(set(man["run_id"]) - set(runs_df["run_id"]))
        if absent:
            problems.append(f"{man_path}: {len(absent)} run(s) listed but without a run directory: "
                            f"{', '.join(absent[:5])}")
    return GridData(path, runs_df, pd.concat(metrics, ignore_index=True),
                    pd.concat(train, ignore_index=True) if train else pd.DataFrame(), spec, problems, skipped)


def load_grids(paths: list[str | Path], *, nonfinite: str = "error", on_error: str = "raise") -> GridData:
    """Several grid, run or scored-series directories as one :class:`GridData` (each read with
    :func:`load_grid`; ``path`` is the first one's). A run_id found in two of them raises."""
    grids = [load_grid(p, nonfinite=nonfinite, on_error=on_error) for p in paths]
    if len(grids) == 1:
        return grids[0]
    runs = pd.concat([g.runs for g in grids], ignore_index=True)
    dup = runs.loc[runs["run_id"].duplicated(), "run_id"].tolist()
    if dup:
        raise SchemaError(f"{', '.join(map(str, paths))}: run_id(s) {', '.join(dup)} in more than one "
                          f"directory (the same run or series given twice?)")
    trains = [g.train for g in grids if len(g.train)]
    return GridData(Path(paths[0]), runs, pd.concat([g.metrics for g in grids], ignore_index=True),
                    pd.concat(trains, ignore_index=True) if trains else pd.DataFrame(), None,
                    [p for g in grids for p in g.problems], [s for g in grids for s in g.skipped])


__all__ = ["FACTOR_FIELDS", "GridData", "KNOWN_METRICS", "METRICS_COLUMNS", "METRIC_RANGES", "RunData", "SchemaError", "STATUSES",
           "TRAIN_COLUMNS", "check_frame", "config_factors", "load_grid", "load_grids", "load_run", "read_metrics"]
