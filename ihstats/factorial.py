"""The mechanism factorial (issue 66, item 4): each factor's effect on the certified onset, one contrast each.

The arms are the grid's cell labels (``ihtrain/presets/mechanism-factorial.toml``): ``centre`` (B 32,
C 64, copy distance 8-12, 0.4 copies per token) and, moving one factor each way, ``c32`` / ``c128``
(C), ``near`` / ``far`` (copy distance 4-6 / 20-28) and ``sparse`` / ``dense`` (0.2 / 0.6 copies
per token). Everything else is held, so each factor's effect is the contrast of its two arms.

The basis is the certified onset: a run's onset counts where the emergence table says ``formed``
(certified, :mod:`ihstats.certificate`; :func:`ihstats.tables.formed_column`, which on logs without
the general probe reads the crossing and says so); a run not certified by its last step is
right-censored at ``last_step``, whatever it grew instead (its class is reported, never counted).

Per contrast (each factor's high arm minus its low arm, and each arm minus the centre):

- ``estimate``, ``lo``, ``hi``: the difference of the arms' mean log onset under one censored normal
  model (one mean per arm, one shared sigma), maximum likelihood with its profile-likelihood
  interval (:mod:`ihstats.onset.contrast`; ``onset_ratio`` is its exp, onset high / onset low);
- ``elasticity`` (with ``elasticity_lo`` / ``_hi``): the estimate per unit log of the factor's
  realised ratio between the arms (C; the mean copy distance; copies per token), where the table
  gives it;
- ``rank_p``: the exact two-sided rank test of onsets (a run not certified ranks after every onset:
  :func:`ihstats.ablation.permutation.stratified_rank_test`, one stratum), and ``p_floor``, the
  smallest p the arms' sizes allow (:func:`ihstats.ablation.seeds.two_sample_floor`; 2 / 252 for
  5 runs against 5);
- ``testable``: both arms hold at least :data:`MIN_CERTIFIED` certified runs. Otherwise no estimate
  and no p is given, and ``why`` says which arm lacks onsets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ihstats.ablation.permutation import stratified_rank_test
from ihstats.ablation.seeds import two_sample_floor
from ihstats.onset.contrast import fit_arms, profile_interval
from ihstats.tables import boolean_column, formed_column, numeric_column


class FactorialError(ValueError):
    """A table or grid that is not the mechanism factorial's, or lacks what its contrasts read."""


@dataclass(frozen=True)
class Factor:
    """One factor of the design: its name, its low and high arms, the column holding its value."""

    name: str
    low: str
    high: str
    column: str


CENTRE = "centre"
FACTORS = (Factor("C", "c32", "c128", "C"), Factor("copy distance", "near", "far", "copy_distance"),
           Factor("copy density", "sparse", "dense", "copies_per_token"))
ARMS = (CENTRE, *(a for f in FACTORS for a in (f.low, f.high)))
#: runs per arm in the preset (seeds = 5): what the rank test's floor reaches when every run is in
DESIGN_SEEDS = 5
#: certified runs an arm needs before its mean log onset is compared (one onset has no spread)
MIN_CERTIFIED = 2
#: the columns a run table needs; C, copy_band, copy_distance, copies_per_token and stop_reason are
#: read where present
NEEDED = ("arm", "onset", "last_step")
#: the stop reason of a run the until-emergence budget stopped (on its emergence metric's crossing)
STOPPED_BY_BUDGET = "emerged"


def factor_of(arm: str) -> Factor | None:
    return next((f for f in FACTORS if arm in (f.low, f.high)), None)


def check_arms(labels, source: str) -> None:
    """Refuse ``labels`` (a grid's cell labels) that do not hold the factorial's seven arms."""
    have = {str(v) for v in pd.Series(labels).dropna()}
    missing = [a for a in ARMS if a not in have]
    if missing:
        raise FactorialError(f"{source}: not the mechanism factorial: no arm {', '.join(missing)} among its cell "
                             f"labels ({', '.join(sorted(have)) or 'none'}); the design needs the cells "
                             f"{', '.join(ARMS)} (python -m ihtrain.grid --preset mechanism-factorial)")


def run_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per run with what the contrasts read: ``certified``, ``time`` (the onset of a
    certified run, else ``last_step``, where it is censored), the class of an uncertified run.

    ``table`` is an emergence table (``python -m ihstats.emergence``) with an ``arm`` column (the
    grid's cell label); ``formed``/``crossed``/``onset_basis`` are read as every fit reads them."""
    missing = [c for c in NEEDED if c not in table.columns]
    if missing:
        raise FactorialError(f"table: no column {', '.join(missing)} (an emergence table with the grid's cell "
                             f"label as arm)")
    check_arms(table["arm"], "table")
    t = table[table["arm"].isin(ARMS)].reset_index(drop=True)
    certified = formed_column(t, error=FactorialError)
    onset, last = numeric_column(t, "onset", FactorialError), numeric_column(t, "last_step", FactorialError)
    if (certified & ~np.isfinite(onset)).any() or (~certified & ~np.isfinite(last)).any():
        raise FactorialError("onset, last_step: a certified run needs its onset, every other run its last_step")
    crossed = boolean_column(t, "crossed", FactorialError) if "crossed" in t else np.zeros(len(t), bool)
    mechanism = t["mechanism"].fillna("").astype(str) if "mechanism" in t else pd.Series("", index=t.index)
    return t.assign(certified=certified, time=np.where(certified, onset, last), crossed=crossed,
                    mechanism=mechanism.where(~certified, ""))


def _classes(runs: pd.DataFrame) -> str:
    counts = runs["mechanism"].replace("", "unclassified").value_counts()
    return "; ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"


def _median(times: np.ndarray, certified: np.ndarray) -> float:
    """Median onset counting an uncertified run as later than every onset (inf when half never certified)."""
    return float(np.median(np.where(certified, times, np.inf))) if times.size else np.nan


def arm_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per arm: its factor and setting, runs, certified runs, the uncertified runs (crossed or not)
    with their classes and last steps, the median onset and the certified onsets."""
    rows = []
    for arm in ARMS:
        g = runs[runs["arm"] == arm]
        unc = g[~g["certified"]]
        f = factor_of(arm)
        rows.append({"arm": arm, "factor": f.name if f else "(centre)",
                     "C": _mean(g, "C"), "copy_band": _first(g, "copy_band"), "copy_distance": _mean(g, "copy_distance"),
                     "copies_per_token": _mean(g, "copies_per_token"), "n": len(g), "certified": int(g["certified"].sum()),
                     "not_certified": len(unc), "crossed_not_certified": int(unc["crossed"].sum()),
                     "stopped_not_certified": _stopped(unc),
                     "uncertified_classes": _classes(unc) if len(unc) else "-",
                     "uncertified_last_steps": ", ".join(f"{v:.0f}" for v in sorted(unc["time"])) or "-",
                     "median_onset": _median(g["time"].to_numpy(), g["certified"].to_numpy()),
                     "onsets": ", ".join(f"{v:.0f}" for v in sorted(g.loc[g["certified"], "time"])) or "-"})
    return pd.DataFrame(rows)


def _stopped(unc: pd.DataFrame) -> int:
    """Uncertified runs the until-emergence budget stopped: their emergence metric (e.g. the
    in-distribution PS) crossed without a certificate, so they are censored at that stop, not at the cap."""
    return int((unc["stop_reason"].astype(str) == STOPPED_BY_BUDGET).sum()) if "stop_reason" in unc else 0


def _mean(g: pd.DataFrame, col: str) -> float:
    return float(pd.to_numeric(g[col], errors="coerce").mean()) if col in g and len(g) else np.nan


def _first(g: pd.DataFrame, col: str) -> str:
    return str(g[col].iloc[0]) if col in g and len(g) else ""


def contrast_pairs() -> list[tuple[Factor, str, str]]:
    """(factor, high, low): each factor's high arm against its low one, then each arm against the centre."""
    return [(f, f.high, f.low) for f in FACTORS] + [(f, a, CENTRE) for f in FACTORS for a in (f.low, f.high)]


def _untestable_why(arms: pd.DataFrame, high: str, low: str) -> str:
    short = [f"{a}: {arms.at[a, 'certified']} of {arms.at[a, 'n']} runs certified" for a in (high, low)
             if arms.at[a, "certified"] < MIN_CERTIFIED]
    return f"not testable: {'; '.join(short)} (needs {MIN_CERTIFIED} certified runs per arm)" if short else ""


def _fit(runs: pd.DataFrame):
    """The censored normal fit over every arm with an onset, or the reason there is none."""
    with_onset = runs[runs.groupby("arm")["certified"].transform("sum") > 0]
    try:
        fit = fit_arms(with_onset["arm"], np.log(with_onset["time"]), ~with_onset["certified"])
    except ValueError as e:
        return None, f"not testable: {e}"
    return (fit, "") if fit.converged else (None, "not testable: the likelihood's maximum was not reached")


def contrast_table(runs: pd.DataFrame, level: float = 0.9, cut: str = "t") -> pd.DataFrame:
    """Every contrast of :func:`contrast_pairs` on a :func:`run_table`: estimate with its ``level``
    profile interval, elasticity, rank test and floor, or why it is not testable."""
    arms = arm_table(runs).set_index("arm")
    pairs = contrast_pairs()
    whys = {(h, lo): _untestable_why(arms, h, lo) for _, h, lo in pairs}
    fit, fit_why = _fit(runs) if not all(whys.values()) else (None, "")
    rows = []
    for factor, high, low in pairs:
        n_h, n_l = int(arms.at[high, "n"]), int(arms.at[low, "n"])
        ratio = arms.at[high, factor.column] / arms.at[low, factor.column]  # NaN where the table lacks it
        row = {"factor": factor.name, "contrast": f"{high} - {low}", "high": high, "low": low, "n_high": n_h,
               "certified_high": int(arms.at[high, "certified"]), "n_low": n_l,
               "certified_low": int(arms.at[low, "certified"]), "factor_ratio": ratio,
               "p_floor": two_sample_floor(n_h, n_l)[0] if n_h and n_l else np.nan,
               "testable": False, "why": whys[(high, low)] or fit_why}
        if not row["why"]:
            row.update(testable=True, **_estimate(fit, runs, high, low, ratio, level, cut))
        rows.append(row)
    cols = ["factor", "contrast", "high", "low", "n_high", "certified_high", "n_low", "certified_low", "estimate",
            "lo", "hi", "onset_ratio", "factor_ratio", "elasticity", "elasticity_lo", "elasticity_hi", "rank_p",
            "rank_shift", "p_floor", "testable", "why"]
    return pd.DataFrame(rows).reindex(columns=cols)


def _estimate(fit, runs: pd.DataFrame, high: str, low: str, ratio: float, level: float, cut: str) -> dict:
    est, lo, hi = profile_interval(fit, high, low, level, cut)
    times = [np.where(g["certified"], g["time"], np.inf) for g in (runs[runs["arm"] == a] for a in (high, low))]
    p, shift = stratified_rank_test([tuple(times)])
    out = {"estimate": est, "lo": lo, "hi": hi, "onset_ratio": np.exp(est), "rank_p": p, "rank_shift": shift,
           "elasticity": np.nan, "elasticity_lo": np.nan, "elasticity_hi": np.nan}
    log_ratio = np.log(ratio) if np.isfinite(ratio) and ratio > 0 else 0.0
    if log_ratio != 0:  # a ratio below 1 (an arm under the centre) flips the interval's ends
        e = sorted((lo / log_ratio, hi / log_ratio))
        out.update(elasticity=est / log_ratio, elasticity_lo=e[0], elasticity_hi=e[1])
    return out
