"""The UPT law's input: an emergence table checked and turned into model arrays.

:func:`prepare` is the table-preparation step of ``UPTLawModel.from_table(table, spec)``
(:mod:`ihstats.law.model`): one row per run, the log onset (or, for a censored run, its log
``last_step``), the measurement sd each onset interval implies, the centred log design factors and
the run -> cell index of the cell effect. Every refusal is a :class:`UPTLawError` naming the column
and the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ihstats.fit_protocol import FitData
from ihstats.law.spec import SEED_KINDS, UPTLawError, UPTLawSpec
from ihstats.tables import formed_column, numeric_column, one_row_per_run, onsets_within_runs, rows

REQUIRED_COLUMNS = ("run_id", "B", "C", "onset", "censored", "last_step")
INTERVAL_COLUMNS = ("onset_lo", "onset_hi")


@dataclass
class LawData(FitData):
    """Validated arrays for the model (one entry per run; ``table``: the runs kept)."""

    y: np.ndarray          # log onset (uncensored) or log last_step (censored)
    upper: np.ndarray      # +inf (uncensored) or log last_step (censored)
    censored: np.ndarray   # bool
    me_sd: np.ndarray      # measurement sd on the log scale (0 when measurement_error=False)
    logs: dict             # {"B": log B, "C": ..., ["N": ...]}
    centres: dict          # {"B": mean log B, ...}
    cell_idx: np.ndarray | None = None  # run -> index into cells (cell_effect)
    cells: list | None = None           # cell ids in index order
    sigma_idx: np.ndarray | None = None  # run -> index into sigma_levels (sigma_by)
    sigma_levels: list | None = None     # the sigma_by column's levels, as strings, in index order
    seed_idx: np.ndarray | None = None   # run -> index into seeds (seed_effect)
    seeds: list | None = None            # seed labels (seed_label) in index order
    kinds: dict | None = None            # seed_kinds: {kind: (run -> index, labels)} per SEED_KINDS

    @property
    def x(self) -> dict:
        return {k: v - self.centres[k] for k, v in self.logs.items()}

    def varying_among_formed(self, names=None) -> list:
        """The factors (of ``names``, default all) with more than one value among the uncensored
        runs: the only ones a fit that drops censored runs (OLS) can give a slope."""
        obs = ~self.censored
        if not obs.any():
            return []
        return [k for k in (names or list(self.logs)) if np.ptp(self.logs[k][obs]) > 0]


def _fail(msg: str):
    raise UPTLawError(msg)


def prepare(table: pd.DataFrame, spec: UPTLawSpec) -> LawData:
    """Validate an emergence table and turn it into model arrays.

    Raises
    ------
    UPTLawError
        Missing columns, a blank or non-boolean ``censored``/``formed`` cell, ``formed`` on a
        censored run, text in ``onset``, a formed run without its interval, a non-finite or non-positive
        UPT (uncensored runs) or last_step, ``onset_lo <= onset <= onset_hi`` broken, a single
        distinct B or C (exponent not identifiable), all runs censored, duplicated run ids; each
        message names the column and the rows (by run_id).
    """
    df = _select_rows(table, spec)
    cens = ~formed_column(df, error=UPTLawError)  # not formed = right-censored at last_step
    onset = numeric_column(df, "onset", error=UPTLawError)
    _check_values(df, cens, onset, spec)
    last = df["last_step"].to_numpy(dtype=float)
    y = np.where(cens, np.log(last), np.log(np.where(cens, 1.0, onset)))
    upper = np.where(cens, np.log(last), np.inf)
    me_sd = _measurement_sd(df, cens, onset, spec) if spec.measurement_error else np.zeros(len(df))
    logs = {"B": np.log(df["B"].to_numpy(dtype=float)), "C": np.log(df["C"].to_numpy(dtype=float))}
    if spec.size_term:
        logs["N"] = np.log(df["N"].to_numpy(dtype=float))
    centres = {k: float(v.mean()) for k, v in logs.items()}
    cell_idx, cells = _cells(df, spec)
    sigma_idx, sigma_levels = _sigma_levels(df, cens, spec)
    seed_idx, seeds = _seeds(df, spec)
    kinds = _seed_kinds(df) if spec.seed_kinds else None
    return LawData(kinds=kinds, table=df.reset_index(drop=True), y=y, upper=upper, censored=cens,
                   me_sd=me_sd, logs=logs, centres=centres, cell_idx=cell_idx, cells=cells,
                   sigma_idx=sigma_idx, sigma_levels=sigma_levels, seed_idx=seed_idx, seeds=seeds)


def _select_rows(table: pd.DataFrame, spec: UPTLawSpec) -> pd.DataFrame:
    """The rows to fit: required columns present, one metric, one row per run."""
    if not isinstance(table, pd.DataFrame):
        _fail(f"table: expected a pandas DataFrame, got {type(table).__name__}")
    df = table.copy()
    if "N" not in df.columns and "n_params" in df.columns:
        df["N"] = df["n_params"]
    need = list(REQUIRED_COLUMNS) + (["N"] if spec.size_term else [])
    if spec.measurement_error:
        need += list(INTERVAL_COLUMNS)
    missing = [c for c in need if c not in df.columns]
    if missing:
        hint = (" (or fit with measurement_error=False / --no-measurement-error)"
                if set(missing) & set(INTERVAL_COLUMNS) else "")
        _fail(f"emergence table: missing column(s) {missing}; required: {need}{hint}")
    if "metric" in df.columns:
        metrics = sorted(df["metric"].astype(str).unique())
        metric = spec.metric or (metrics[0] if len(metrics) == 1 else "ps" if "ps" in metrics
                                 else None)
        if metric is None or metric not in metrics:
            _fail(f"metric: {spec.metric or 'none chosen'!r} not in the table's metrics {metrics}; "
                  f"pass metric= / --metric")
        df = df[df["metric"].astype(str) == metric]
    one_row_per_run(df, "the law", UPTLawError)
    if len(df) == 0:
        _fail("emergence table: no rows to fit")
    return df


def _check_values(df: pd.DataFrame, cens: np.ndarray, onset: np.ndarray, spec: UPTLawSpec) -> None:
    """Positive design factors and steps, usable onsets, and enough spread to fit the exponents."""
    for col in ("B", "C", "last_step") + (("N",) if spec.size_term else ()):
        v = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
        if not np.all(np.isfinite(v) & (v > 0)):
            _fail(f"{col}: must be a positive number in every row")
    if cens.all():
        _fail(f"censored: all {len(df)} runs are censored (no emergence by last_step); the law "
              f"cannot be fitted: train longer or add runs that emerge")
    bad = ~cens & ~(np.isfinite(onset) & (onset > 0))
    if bad.any():
        _fail(f"onset: UPT must be a finite number > 0 updates for uncensored runs; got "
              f"{onset[bad][:3].tolist()} in {rows(df, bad)}: fix the onset or mark the run "
              f"censored")
    onsets_within_runs(df, onset, cens, UPTLawError)
    _check_intervals(df, onset)
    for col, par in (("B", "a"), ("C", "b")) + ((("N", "c"),) if spec.size_term else ()):
        vals = np.unique(df[col].to_numpy(dtype=float))
        if len(vals) < 2:
            _fail(f"{col}: only one distinct value ({vals[0]:g}); the exponent {par} is not "
                  f"identifiable: the table needs runs at two or more values of {col}")
    n_free = 3 + int(spec.size_term)
    if (~cens).sum() < n_free:
        _fail(f"censored: only {(~cens).sum()} uncensored runs; need at least {n_free}")


def _measurement_sd(df: pd.DataFrame, cens: np.ndarray, onset: np.ndarray,
                    spec: UPTLawSpec) -> np.ndarray:
    """Each run's measurement sd of log onset from its interval (see the model docstring);
    censored runs take the median of the formed runs' (a formed run without an interval is refused)."""
    level = (pd.to_numeric(df["level"], errors="coerce").to_numpy(dtype=float)
             if "level" in df.columns else np.full(len(df), spec.interval_level))
    level = np.where(np.isfinite(level), level, spec.interval_level)
    if np.any((level <= 0) | (level >= 1)):
        _fail("level: interval levels must be in (0, 1)")
    z = stats.norm.ppf(0.5 + level / 2)
    lo = pd.to_numeric(df["onset_lo"], errors="coerce").to_numpy(dtype=float)
    hi = pd.to_numeric(df["onset_hi"], errors="coerce").to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        two_sided = (np.log(hi) - np.log(lo)) / (2 * z)
        # An interval touching 0 updates has no log lower end: use its upper half only.
        upper_half = (np.log(hi) - np.log(onset)) / z
    sd = np.where(lo > 0, two_sided, upper_half)
    # pelt/threshold brackets carry no level: the onset is anywhere between two checkpoints
    kind = (df["interval_kind"].astype(str).to_numpy() if "interval_kind" in df.columns
            else np.array([""] * len(df)))
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.where(kind == "bracketing", (np.log(hi) - np.log(lo)) / np.sqrt(12), sd)
    gap = ~cens & ~(np.isfinite(lo) & np.isfinite(hi))
    if gap.any():  # never filled in silently: the interval is the run's measurement error
        _fail(f"onset_lo, onset_hi: blank or not finite on uncensored {rows(df, gap)}; each formed run "
              f"needs its interval (python -m ihstats.emergence writes it): fill them, or fit with "
              f"--no-measurement-error")
    ok = ~cens & np.isfinite(sd) & (sd >= 0)
    fill = float(np.median(sd[ok])) if ok.any() else 0.0
    return np.where(ok, sd, fill)


def _cells(df: pd.DataFrame, spec: UPTLawSpec):
    """Run -> cell index for the cell effect (None without it); needs replicates to separate it."""
    if not spec.cell_effect:
        return None, None
    if "cell_id" not in df.columns:
        _fail("cell_id: the cell effect needs a cell_id column (emergence tables of grids carry it); "
              "fit without cell_effect / --cell-effect off")
    codes, cells = pd.factorize(df["cell_id"].astype(str))
    if len(cells) == len(df):
        _fail("cell_id: every run is its own cell, so a cell effect cannot be told from the seed "
              "scatter; add seeds (grid --seeds N) or fit without cell_effect / --cell-effect off")
    return codes.astype(int), list(cells)


def seed_label(value) -> str:
    """A training seed as the seed effect names it: ``"2"`` for 2, 2.0 and "2" alike (a table
    read back from CSV may hold seeds as floats or text), so a test run finds its seed in the fit."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value).strip()
    return f"{int(v)}" if np.isfinite(v) and v == int(v) else str(value).strip()


def seed_key(seed, within: str | None = None, value=None) -> str | None:
    """The seed effect's label of a run: its seed (:func:`seed_label`), or with ``within`` the seed
    and that column's value (``"2|C=64"``); None when the seed (or the value) is missing."""
    if seed is None or pd.isna(seed) or (within and (value is None or pd.isna(value))):
        return None
    if not within:
        return seed_label(seed)
    return f"{seed_label(seed)}|{within}={value:g}" if isinstance(value, (int, float, np.number)) else \
        f"{seed_label(seed)}|{within}={value}"


def seed_keys(df: pd.DataFrame, within: str | None = None) -> list:
    """Each row's :func:`seed_key` (all None without a ``seed`` column, or without ``within``'s)."""
    if "seed" not in df.columns or (within and within not in df.columns):
        return [None] * len(df)
    values = df[within].tolist() if within else [None] * len(df)
    return [seed_key(s, within, v) for s, v in zip(df["seed"].tolist(), values)]


def seeds_crossed(table: pd.DataFrame) -> bool:
    """Whether a table's seeds are crossed with its cells (two or more seeds, and some seed run in
    two or more cells): what the CLIs' ``--seed-effect auto`` turns the seed effect on for."""
    if "seed" not in table.columns or table["seed"].nunique() < 2:
        return False
    cells = table["cell_id"] if "cell_id" in table.columns else table[["B", "C"]].astype(str).agg("x".join, axis=1)
    return bool(cells.groupby(table["seed"]).nunique().max() > 1)


def _numeric_first(label: str) -> tuple:
    """Sort key: integer seeds in numeric order (2 before 10), then any others as text."""
    seed, _, rest = label.partition("|")
    whole = seed.lstrip("-").isdigit()
    return (not whole, int(seed) if whole else 0, seed, rest)


def _seeds(df: pd.DataFrame, spec: UPTLawSpec):
    """Run -> seed index for the crossed seed effect (None without it); needs two or more seeds."""
    if not spec.seed_effect:
        return None, None
    within = spec.seed_within
    for col in ["seed"] + ([within] if within else []):
        if col not in df.columns:
            _fail(f"{col}: the seed effect{' within ' + col if col == within else ''} needs a {col} column "
                  f"(emergence tables of grids carry seed); fit without seed_effect / --seed-effect off")
    labels = seed_keys(df, within)
    blank = np.array([k is None for k in labels]) | (df["seed"].astype(str).str.strip() == "").to_numpy()
    if blank.any():
        _fail(f"seed: blank in {rows(df, blank)}; the seed effect needs each run's training seed"
              + (f" and its {within}" if within else ""))
    seeds = sorted(set(labels), key=_numeric_first)
    if len(seeds) < 2:
        _fail(f"seed: one seed ({seeds[0]!r}) in the table; a seed effect needs runs at two or more "
              f"seeds: fit without seed_effect / --seed-effect off")
    return np.array([seeds.index(v) for v in labels], dtype=int), seeds


def _seed_kinds(df: pd.DataFrame) -> dict:
    """Run -> index per seed kind (``weight_seed``, ``data_seed``; ``seed`` where a column is
    missing or blank). A kind with a single value is left out (its effect is not identified)."""
    if "seed" not in df.columns and not set(SEED_KINDS) <= set(df.columns):
        _fail("seed: the seed effect by kind needs weight_seed and data_seed columns (or seed); "
              "fit without seed_kinds")
    out = {}
    for kind in SEED_KINDS:
        col = df[kind] if kind in df.columns else df["seed"]
        col = col.where(col.notna(), df["seed"]) if "seed" in df.columns else col
        if col.isna().any():
            _fail(f"{kind}: blank in {rows(df, col.isna().to_numpy())}; each run needs its {kind} (or seed)")
        labels = [seed_label(v) for v in col.tolist()]
        levels = sorted(set(labels), key=_numeric_first)
        if len(levels) > 1:
            out[kind] = (np.array([levels.index(v) for v in labels], dtype=int), levels)
    if not out:
        _fail("seed_kinds: one weight seed and one data seed in the table; nothing to estimate: fit without seed_kinds")
    return out


def _sigma_levels(df: pd.DataFrame, cens: np.ndarray, spec: UPTLawSpec):
    """Run -> level index of the ``sigma_by`` column (None without it). Each level needs two or
    more uncensored runs: its scatter is estimated from them."""
    col = spec.sigma_by
    if not col:
        return None, None
    if col not in df.columns:
        _fail(f"sigma_by: no column {col!r} in the emergence table; columns: {sorted(map(str, df.columns))}")
    values = df[col]
    if values.isna().any():
        _fail(f"{col}: blank in {rows(df, values.isna().to_numpy())}; sigma_by needs a level in every row")
    levels = sorted(values.unique().tolist(), key=lambda v: (isinstance(v, str), v))
    if len(levels) < 2:
        _fail(f"sigma_by {col}: one level ({levels[0]!r}); a scatter per level needs two or more "
              f"(fit with a shared sigma instead)")
    idx = np.array([levels.index(v) for v in values], dtype=int)
    n_obs = np.bincount(idx[~cens], minlength=len(levels))
    thin = [f"{levels[k]!r} ({n_obs[k]})" for k in range(len(levels)) if n_obs[k] < 2]
    if thin:
        _fail(f"sigma_by {col}: level(s) {', '.join(thin)} have fewer than two uncensored runs; a "
              f"level's scatter needs two or more (add seeds, or fit with a shared sigma)")
    return idx, [f"{v:g}" if isinstance(v, (int, float, np.number)) else str(v) for v in levels]


def _check_intervals(df: pd.DataFrame, onset: np.ndarray) -> None:
    """``onset_lo <= onset <= onset_hi`` wherever both ends of a pair are given: a swapped or
    missed interval would otherwise fit quietly and crash later in the report's error bars."""
    cols = {c: pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float)
            for c in INTERVAL_COLUMNS if c in df.columns}
    cols["onset"] = onset
    for lo, hi in (("onset_lo", "onset"), ("onset", "onset_hi"), ("onset_lo", "onset_hi")):
        if lo in cols and hi in cols:
            with np.errstate(invalid="ignore"):
                bad = cols[lo] > cols[hi]          # NaN (not given) compares False: not checked
            if bad.any():
                _fail(f"{lo}, {hi}: {lo} > {hi} in {rows(df, bad)}; the interval must hold the "
                      f"onset (onset_lo <= onset <= onset_hi): swap or fix those cells")


def design_values(name: str, values) -> np.ndarray:
    """A design factor as a float array; NaN, inf or <= 0 has no log and would print as a
    prediction (NaN updates, or 0 from an overflow), so it is refused here."""
    try:
        v = np.atleast_1d(np.asarray(values, dtype=float))
    except (TypeError, ValueError):
        raise UPTLawError(f"{name}: must be a number, got {values!r}") from None
    bad = ~(np.isfinite(v) & (v > 0))
    if bad.any():
        raise UPTLawError(f"{name}: must be a finite number > 0, got {v[bad][:3].tolist()}")
    return v
