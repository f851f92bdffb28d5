"""Seeds by kind at one cell (issue 66): the variance of the weight seed and of the data seed from a
crossed block of runs, by the ANOVA method of moments (numpy and scipy only, no sampler).

The law's ``--seed-kinds`` fit needs B and C to vary; this reads the block alone. Model: the
two-way crossed random-effects model without replication, on the log onset of the run with weight
seed i and data seed j (I x J runs, every pair once, at one (B, C) cell)::

    y_ij = mu + w_i + d_j + e_ij,   w_i ~ (0, sigma_w^2),  d_j ~ (0, sigma_d^2),  e_ij ~ (0, sigma_e^2)

    source       mean square                                              df            E[MS]
    weight seed  MS_W = J sum_i (ybar_i. - ybar..)^2 / (I - 1)             I - 1         sigma_e^2 + J sigma_w^2
    data seed    MS_D = I sum_j (ybar_.j - ybar..)^2 / (J - 1)             J - 1         sigma_e^2 + I sigma_d^2
    residual     MS_E = sum (y_ij - ybar_i. - ybar_.j + ybar..)^2 / df_E   (I-1)(J-1)    sigma_e^2

Estimates: ``sigma_w^2 = max(0, (MS_W - MS_E) / J)``, ``sigma_d^2 = max(0, (MS_D - MS_E) / I)``,
``sigma_e^2 = MS_E``. The differences before the floor (``var_mom``) are unbiased; the floored
ones are biased up, as every non-negative estimator. ``sigma_e^2`` holds the interaction of the
two kinds (a weight seed that suits one data seed more than another) and each run's own noise
(the detector's reading of its onset, nondeterminism) together: with one run per pair they cannot
be told apart (a second run at the same two seeds would separate them).

Tests: ``F = MS_W / MS_E`` on (I - 1, (I - 1)(J - 1)) df, exact for ``sigma_w = 0`` under
normal errors (the data seed's effect cancels in both mean squares); the same for the data seed.
Measured on 400 3 x 3 blocks with sigma_w = 0: rejection at 0.1 of 0.1125 with Student-t (4 df)
errors (0.095 with normal ones; tests/ihstats/test_seed_block.py).

Intervals (``level``, default 0.9): for ``sigma_e^2`` the exact chi-square interval; for
``sigma_w^2`` and ``sigma_d^2`` the modified large-sample (MLS) interval on a difference of mean
squares ``c (MS_1 - MS_2)`` (Ting, Burdick, Graybill, Jeyaratnam and Lu 1990, J. Statist. Comput.
Simul. 35; Burdick and Graybill 1992, *Confidence Intervals on Variance Components*):
closed form, exact when ``MS_2`` is 0, bounds below 0 set to 0; each sd's interval is the square
root of its variance's. Chosen over a parametric bootstrap, which draws from the floored fit
(an sd of 0 whenever MS_W < MS_E) and so is narrowest where the block says least. Measured
coverage of the true sd at nominal 0.90, 4,000 3 x 3 blocks each: (sigma_w, sigma_d, sigma_e) =
(0.3, 0.2, 0.3), normal errors: weight 0.892, data 0.902, residual 0.901; Student-t (4 df)
errors: 0.897, 0.914, and 0.834 for the residual (its chi-square interval is exact only under
normality); (0.6, 0, 0.2): 0.891, 0.950 (an sd of 0 is covered whenever the lower bound is
floored), 0.901. With 2 and 4 df the intervals are wide: at (0.3, 0.2, 0.3) the weight sd's
median interval is [0, 1.27] (lower bound 0 in 71% of blocks); at sigma_w = 0.6 its median
upper-to-lower ratio is 8.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from ihstats.law.spec import SEED_KINDS, UPTLawError
from ihstats.tables import formed_column, numeric_column, one_row_per_run, outcome_basis, rows

#: the columns that tell cells apart, whichever the table has (an emergence table has all three)
CELL_COLUMNS = ("cell_id", "B", "C")
#: the sources of the block's variance, in the order of the components table
SOURCES = (*SEED_KINDS, "residual")
LEVEL = 0.9


class SeedBlockError(UPTLawError):
    """The table is not one crossed block of seeds at one cell: the message names the column and what to do."""


class NotTestable(SeedBlockError):
    """The block is complete in its design but not on certified onsets: a run did not form, or a
    pair of seeds has no run. ``reason`` says which (:func:`not_testable_reason`), ``runs`` holds
    the block as far as it goes (:func:`block_runs`)."""

    def __init__(self, reason: str, runs: pd.DataFrame):
        super().__init__(f"the seed block is not testable on certified onsets: {reason}")
        self.reason, self.runs = reason, runs


class MeanSquares(NamedTuple):
    """The three mean squares of an (..., I, J) block and their degrees of freedom."""
    weight: np.ndarray
    data: np.ndarray
    residual: np.ndarray
    df: tuple[int, int, int]


def mean_squares(y) -> MeanSquares:
    """The mean squares of the module docstring for blocks ``y`` of shape (..., I, J): rows are
    weight seeds, columns data seeds; leading axes are separate blocks (simulations)."""
    y = np.asarray(y, dtype=float)
    n_w, n_d = y.shape[-2:]
    grand = y.mean(axis=(-2, -1), keepdims=True)
    row = y.mean(axis=-1, keepdims=True)  # (..., I, 1): each weight seed's mean
    col = y.mean(axis=-2, keepdims=True)  # (..., 1, J): each data seed's mean
    df = (n_w - 1, n_d - 1, (n_w - 1) * (n_d - 1))
    ss_w = n_d * ((row - grand) ** 2).sum(axis=(-2, -1))
    ss_d = n_w * ((col - grand) ** 2).sum(axis=(-2, -1))
    ss_e = ((y - row - col + grand) ** 2).sum(axis=(-2, -1))
    return MeanSquares(ss_w / df[0], ss_d / df[1], ss_e / df[2], df)


def mls_interval(c: float, ms1, n1: int, ms2, n2: int, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """The two-sided MLS interval on ``c (E[MS_1] - E[MS_2])`` (Ting et al. 1990; Burdick and
    Graybill 1992), floored at 0; ``ms1``, ``ms2`` may be arrays (one interval each)."""
    a = (1 - level) / 2
    f1_hi, f1_lo = stats.chi2.ppf(1 - a, n1) / n1, stats.chi2.ppf(a, n1) / n1  # F(n1, inf) quantiles
    f2_hi, f2_lo = stats.chi2.ppf(1 - a, n2) / n2, stats.chi2.ppf(a, n2) / n2
    f12_hi, f12_lo = stats.f.ppf(1 - a, n1, n2), stats.f.ppf(a, n1, n2)
    g1, h1, g2, h2 = 1 - 1 / f1_hi, 1 / f1_lo - 1, 1 - 1 / f2_hi, 1 / f2_lo - 1
    g12 = ((f12_hi - 1) ** 2 - g1 ** 2 * f12_hi ** 2 - h2 ** 2) / f12_hi
    h12 = ((1 - f12_lo) ** 2 - h1 ** 2 * f12_lo ** 2 - g2 ** 2) / f12_lo
    ms1, ms2 = np.asarray(ms1, dtype=float), np.asarray(ms2, dtype=float)
    est = c * (ms1 - ms2)
    v_lo = c ** 2 * (g1 ** 2 * ms1 ** 2 + h2 ** 2 * ms2 ** 2 + g12 * ms1 * ms2)
    v_hi = c ** 2 * (h1 ** 2 * ms1 ** 2 + g2 ** 2 * ms2 ** 2 + h12 * ms1 * ms2)
    return np.maximum(est - np.sqrt(v_lo), 0.0), np.maximum(est + np.sqrt(v_hi), 0.0)


def chi2_interval(ms, df: int, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """The exact interval on ``E[MS]`` of a mean square on ``df`` degrees of freedom (normal errors)."""
    a = (1 - level) / 2
    ms = np.asarray(ms, dtype=float)
    return df * ms / stats.chi2.ppf(1 - a, df), df * ms / stats.chi2.ppf(a, df)


def variance_components(y, level: float = LEVEL) -> pd.DataFrame:
    """One row per source (weight_seed, data_seed, residual) of the I x J block ``y``: ``ms``,
    ``df``, ``var_mom`` (the unbiased difference, may be negative), ``var`` (floored at 0), ``sd``,
    ``lo``/``hi`` (the sd's ``level`` interval), ``F``, ``df_den`` and ``p`` (the F test of the
    kind against the residual; blank for the residual)."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 2 or min(y.shape) < 2 or not np.isfinite(y).all():
        raise SeedBlockError(f"the block must be a finite I x J array with I, J >= 2; got shape {y.shape}")
    ms = mean_squares(y)
    out = []
    for kind, ms_k, df_k, n_other in ((SEED_KINDS[0], ms.weight, ms.df[0], y.shape[1]),
                                      (SEED_KINDS[1], ms.data, ms.df[1], y.shape[0])):
        lo, hi = mls_interval(1 / n_other, ms_k, df_k, ms.residual, ms.df[2], level)
        f = float(ms_k / ms.residual) if ms.residual > 0 else (np.inf if ms_k > 0 else np.nan)  # an exact fit
        out.append({"kind": kind, "ms": float(ms_k), "df": df_k, "var_mom": float((ms_k - ms.residual) / n_other),
                    "lo": float(np.sqrt(lo)), "hi": float(np.sqrt(hi)), "F": f, "df_den": ms.df[2],
                    "p": float(stats.f.sf(f, df_k, ms.df[2]))})
    lo, hi = chi2_interval(ms.residual, ms.df[2], level)
    out.append({"kind": "residual", "ms": float(ms.residual), "df": ms.df[2], "var_mom": float(ms.residual),
                "lo": float(np.sqrt(lo)), "hi": float(np.sqrt(hi)), "F": np.nan, "df_den": np.nan, "p": np.nan})
    table = pd.DataFrame(out)
    table.insert(4, "var", table["var_mom"].clip(lower=0.0))
    table.insert(5, "sd", np.sqrt(table["var"]))
    return table


# ------------------------------------------------------------------------------ the table -> the block
def _check_columns(table: pd.DataFrame) -> None:
    need = [*SEED_KINDS, "onset"]
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise SeedBlockError(f"{', '.join(missing)}: missing from the table (python -m ihstats.emergence GRID "
                             "writes weight_seed and data_seed for every run; a grid that crosses them: "
                             "--preset bxc-seed-kinds)")
    if "formed" not in table.columns and "censored" not in table.columns:
        raise SeedBlockError("formed, censored: the table needs one of them (python -m ihstats.emergence writes both)")
    if "run_id" in table.columns:
        one_row_per_run(table, "the seed block", SeedBlockError)
    for kind in SEED_KINDS:
        bad = ~np.isfinite(numeric_column(table, kind, SeedBlockError))
        if bad.any():
            raise SeedBlockError(f"{kind}: blank in {rows(table, bad)}; every run needs its seeds by kind")


def _check_one_cell(table: pd.DataFrame) -> None:
    """Refuse a table of several cells (or one that cannot show it is one): the block is one cell's."""
    cols = [c for c in CELL_COLUMNS if c in table.columns]
    if not cols:
        raise SeedBlockError(f"{', '.join(CELL_COLUMNS)}: the table has none of them, so it cannot show its runs "
                             "share one cell; use the emergence table of the grid (python -m ihstats.emergence)")
    cells = table[cols].astype(str).drop_duplicates()
    if len(cells) > 1:
        shown = "; ".join(", ".join(f"{c} {v}" for c, v in r.items()) for _, r in cells.head(4).iterrows())
        raise SeedBlockError(f"{'/'.join(cols)}: {len(cells)} cells in the table ({shown}); the seed block is "
                             "one cell's runs: keep one cell_id (analyses/seed_kinds.py --cell CELL_ID)")


def _check_crossed(table: pd.DataFrame) -> tuple[list, list]:
    """The weight and data seeds of the block, each pair at most once, at least two of each kind."""
    pair = table[list(SEED_KINDS)].astype(int)
    dup = pair.duplicated(keep=False).to_numpy()
    if dup.any():
        w, d = pair[dup].iloc[0]
        raise SeedBlockError(f"weight_seed, data_seed: {rows(table, dup)} share a pair (e.g. weight {w}, data {d}); "
                             "the block has one run per pair (no replication): keep one replicate seed")
    levels = [sorted(pair[k].unique().tolist()) for k in SEED_KINDS]
    for kind, lv in zip(SEED_KINDS, levels):
        if len(lv) < 2:
            raise SeedBlockError(f"{kind}: one value ({lv[0]}) in the table; a variance needs at least two, "
                                 "crossed with the other kind (--preset bxc-seed-kinds: 3 x 3)")
    return levels[0], levels[1]


def block_runs(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (weight_seed, data_seed) pair of the block the table spans (every weight seed
    seen x every data seed seen): ``run_id`` (blank where no run has the pair), ``onset``,
    ``formed`` (the fits' rule, :func:`ihstats.tables.formed_column`), ``log_onset`` (NaN unless
    formed). Refuses (:class:`SeedBlockError`) a table that is not one cell's crossed block."""
    _check_columns(table)
    _check_one_cell(table)
    weights, datas = _check_crossed(table)
    onset = numeric_column(table, "onset", SeedBlockError)
    formed = formed_column(table, error=SeedBlockError)
    bad = formed & ~(onset > 0)
    if bad.any():
        raise SeedBlockError(f"onset: not a positive number on a formed run in {rows(table, bad)}; onsets are updates")
    have = pd.DataFrame({"weight_seed": table["weight_seed"].astype(int).to_numpy(),
                         "data_seed": table["data_seed"].astype(int).to_numpy(),
                         "run_id": table["run_id"].astype(str).to_numpy() if "run_id" in table else "",
                         "onset": onset, "formed": formed})
    grid = pd.MultiIndex.from_product([weights, datas], names=list(SEED_KINDS)).to_frame(index=False)
    out = grid.merge(have, on=list(SEED_KINDS), how="left")
    out["formed"] = out["formed"].astype("boolean").fillna(False).astype(bool)
    out["log_onset"] = np.where(out["formed"], np.log(out["onset"].where(out["formed"], 1.0)), np.nan)
    return out


def log_onset_block(runs: pd.DataFrame) -> pd.DataFrame:
    """The block's log onsets, weight seeds down, data seeds across (NaN: no certified onset)."""
    return runs.pivot(index="weight_seed", columns="data_seed", values="log_onset")


def not_testable_reason(runs: pd.DataFrame) -> str | None:
    """Why the block has no certified onset at every pair (None when it has): how many formed, the
    runs that did not, the pairs with no run."""
    missing = runs["run_id"].isna()
    unformed = ~runs["formed"] & ~missing
    if not (missing.any() or unformed.any()):
        return None
    parts = [f"{int(runs['formed'].sum())} of {len(runs)} pairs formed"]
    if unformed.any():
        parts.append(f"not formed: {_pairs(runs[unformed])}")
    if missing.any():
        parts.append(f"no run in the table: {_pairs(runs[missing])} (still training, or skipped: see the warnings)")
    return "; ".join(parts)


def _pairs(runs: pd.DataFrame) -> str:
    return ", ".join(f"weight {r.weight_seed} x data {r.data_seed}"
                     + (f" (run {r.run_id})" if isinstance(r.run_id, str) and r.run_id else "")
                     for r in runs.itertuples())


@dataclass
class SeedBlock:
    """A crossed block read by the method of moments: its runs (:func:`block_runs`), the table of
    :func:`variance_components`, what formed rests on (:func:`ihstats.tables.outcome_basis`) and the level."""
    runs: pd.DataFrame
    components: pd.DataFrame
    basis: str
    level: float = LEVEL

    @property
    def log_onsets(self) -> pd.DataFrame:
        return log_onset_block(self.runs)


def seed_block(table: pd.DataFrame, level: float = LEVEL) -> SeedBlock:
    """The variance of each seed kind from an emergence table restricted to one cell.

    Parameters
    ----------
    table : DataFrame
        One row per run (``python -m ihstats.emergence GRID``): ``weight_seed``, ``data_seed``,
        ``onset``, ``formed`` (or ``censored``), and ``cell_id`` (or ``B``/``C``) showing one cell.
    level : float
        The intervals' level (default 0.9).

    Raises
    ------
    SeedBlockError
        The table is not one cell's crossed block (several cells, a pair twice, a kind with one seed,
        a missing column): the message names the column and what to do.
    NotTestable
        A pair has no run or its run did not form: not testable on certified onsets; the message
        says how many formed and which runs are missing, ``.runs`` holds the block as far as it goes.
    """
    if not 0 < level < 1:
        raise SeedBlockError(f"level: must be in (0, 1), got {level}")
    runs = block_runs(table)
    why = not_testable_reason(runs)
    if why:
        raise NotTestable(why, runs)
    comps = variance_components(log_onset_block(runs).to_numpy(), level)
    return SeedBlock(runs, comps, outcome_basis(table), level)


__all__ = ["CELL_COLUMNS", "LEVEL", "MeanSquares", "NotTestable", "SOURCES", "SeedBlock", "SeedBlockError",
           "block_runs", "chi2_interval", "log_onset_block", "mean_squares", "mls_interval", "not_testable_reason",
           "seed_block", "variance_components"]
