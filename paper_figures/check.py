"""``make.py --check``: does a regenerated CSV still say what the committed one says?

Deterministic tables (curves, onsets, counts, permutation tests with fixed seeds) and the
deterministic columns of every table (the data a fit read: run ids, B, C, observed onsets, grid
points, GLM contours) must match exactly, up to 1e-9 of the column's largest value (the last
bits of floating point move across CPUs and library versions).

A sampler's output moves with library versions, CPUs and seeds without changing a conclusion, so
its tables (``SAMPLER_TABLES``) are compared on what a figure's reader relies on, within a Monte
Carlo tolerance:

- a posterior mean with its own ``mcse_mean`` column (the ``*_params.csv`` summaries): within
  ``Z`` standard errors of the difference, ``Z * sqrt(mcse_new**2 + mcse_old**2)``;
- an interval end (or a point estimate, e.g. a posterior median) without a recorded MCSE: its
  MCSE is taken as ``C_END`` (``C_POINT``) times the row's interval width over ``sqrt(ESS)``,
  ``ESS`` being the row's own ``ess_tail`` or else the smallest ESS of the fit's ``*_params.csv``
  (for a normal posterior and a 90% interval the exact factors are 0.64 for an end and 0.38 for
  a median; the larger factors cover heavier tails and an HDI's extra noise);
- a percentile bootstrap interval end (``ablation_tests.csv``): as an interval end, with
  ``ESS`` the number of bootstrap draws (the table's point estimates are exact);
- a fraction of draws (``frac_*``, a posterior probability without an interval): binomial MCSE
  ``sqrt(p (1 - p) / ESS)``, at least ``1 / ESS``;

each plus ``REL_FLOOR`` of the committed value. Where an estimate is undefined on one side only
(the frontier's median where most draws have no crossing), the row passes when one of its
fractions lies within its tolerance of a level that defines the estimate (0.5, or an interval's
tail mass), as Monte Carlo noise then decides which side it falls on. Spreads (``sd``) and the
MCSEs themselves are not compared; the diagnostics (``r_hat``, ``ess_bulk``, ``ess_tail``) are
checked against thresholds on the regenerated table, never against the committed values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

Z = 4.0           # tolerance in standard errors of the difference of two independent estimates
REL_FLOOR = 1e-3  # plus this fraction of the committed value
C_POINT, C_END = 0.4, 1.0
EXACT_REL = 1e-9  # deterministic columns: within this fraction of the column's largest value
RHAT_MAX = 1.01
ESS_MIN_PER_CHAIN = 100  # bulk and tail ESS of every parameter (Vehtari et al. 2021)


@dataclass(frozen=True)
class Estimate:
    """A column holding a posterior estimate, and where its Monte Carlo error comes from.

    ``kind``: ``"mean"`` (the row's ``mcse`` column), ``"point"`` or ``"end"`` (the row's
    interval ``lo``/``hi``), ``"fraction"`` (binomial), ``"value"`` (a point estimate where the
    row has an interval, else a posterior probability: a fraction). ``log``: the interval is
    taken on the log scale (the column is the log of ``lo``/``hi``'s quantity).
    """

    kind: str
    lo: str | None = None
    hi: str | None = None
    mcse: str | None = None
    log: bool = False


@dataclass(frozen=True)
class SamplerTable:
    """How to compare one sampler CSV; columns named nowhere here are deterministic (exact)."""

    estimates: dict[str, Estimate]
    skip: tuple[str, ...] = ()         # spreads and error estimates: not compared
    diagnostics: bool = False          # r_hat / ess_bulk / ess_tail columns against thresholds
    params: str | None = None          # the fit's *_params.csv, whose ESS applies to every row
    bootstrap: bool = False            # its intervals are percentile bootstraps: ESS = n_boot


def _interval(lo: str, hi: str, log: bool = False) -> dict[str, Estimate]:
    return {lo: Estimate("end", lo, hi, log=log), hi: Estimate("end", lo, hi, log=log)}


PARAMS = SamplerTable({"mean": Estimate("mean", mcse="mcse_mean"), **_interval("hdi_lo", "hdi_hi")},
                      skip=("sd", "mcse_mean"), diagnostics=True)


def _upt_rows(params: str) -> SamplerTable:
    return SamplerTable({"predicted": Estimate("point", "pred_lo", "pred_hi"),
                         "log_predicted": Estimate("point", "pred_lo", "pred_hi", log=True),
                         **_interval("pred_lo", "pred_hi")}, params=params)


def _law_rows(params: str) -> SamplerTable:
    return SamplerTable({"upt": Estimate("point", "upt_lo", "upt_hi"),
                         **_interval("upt_lo", "upt_hi")}, params=params)


_FRONTIER = SamplerTable({
    "log_reliability_median": Estimate("point", "log_reliability_lo", "log_reliability_hi"),
    **_interval("log_reliability_lo", "log_reliability_hi"),
    "reliability_median": Estimate("point", "reliability_lo", "reliability_hi"),
    **_interval("reliability_lo", "reliability_hi"),
    **{f"frac_{k}": Estimate("fraction") for k in ("no_crossing", "decreasing", "above_1")},
}, params="frontier_params.csv")

#: Every sampler CSV of the figures, by file name.
SAMPLER_TABLES: dict[str, SamplerTable] = {
    "upt_law_params.csv": PARAMS, "upt_law_default_params.csv": PARAMS,
    "frontier_params.csv": PARAMS,
    "upt_law.csv": _upt_rows("upt_law_params.csv"),
    "upt_law_default.csv": _upt_rows("upt_law_default_params.csv"),
    "upt_law_law.csv": _law_rows("upt_law_params.csv"),
    "upt_law_default_law.csv": _law_rows("upt_law_default_params.csv"),
    # the held-out runs' predictive (draws of the default's posterior): medians and interval ends
    # with the fit's ESS; the scores derived from them (log density, errors, spans) not compared
    "validation_holdout.csv": SamplerTable({"median": Estimate("point", "lo_90", "hi_90"),
                                            **_interval("lo_90", "hi_90"), **_interval("lo_50", "hi_50"),
                                            "pit": Estimate("fraction")},
                                           skip=("lpd", "abs_err", "hi_lo_ratio_50", "hi_lo_ratio_90"),
                                           params="upt_law_default_params.csv"),
    "validation_holdout_summary.csv": SamplerTable({}, skip=("mean_lpd", "median_abs_err", "median_hi_lo_ratio_50",
                                                            "median_hi_lo_ratio_90", "pit_ks_p")),
    # posterior summaries without their own ESS (b per arm; the product model's boundary and line):
    # the ESS is taken as n_boot (2,000 at full sampling, below the 4 x 1,000 draws' typical ESS)
    "mechanism_b.csv": SamplerTable({"b": Estimate("point", "b_lo", "b_hi"), **_interval("b_lo", "b_hi"),
                                     "diff": Estimate("point", "diff_lo", "diff_hi"),
                                     **_interval("diff_lo", "diff_hi"), "p_diff_pos": Estimate("fraction")},
                                    bootstrap=True),
    "frontier_onsets_boundary.csv": SamplerTable({c: Estimate("point", "product_lo", "product_hi") for c in
                                                  ("product", "reliability_at", "frequency_at")}
                                                 | _interval("product_lo", "product_hi"), bootstrap=True),
    "frontier_onsets_line.csv": SamplerTable({"median_onset": Estimate("point", "lo", "hi"), **_interval("lo", "hi")},
                                             bootstrap=True),
    "frontier.csv": _FRONTIER,
    # percentile bootstrap intervals over examples (fixed seed): a Monte Carlo estimate from
    # n_boot draws; a ratio whose denominator's interval covers 0 moves by whole units when the
    # last bits of a bootstrap mean do (numpy 2.4 -> 2.5: ratio_hi 25.0 -> 22.6 on 2000 draws)
    "ablation_tests.csv": SamplerTable({k: v for m in ("top_drop", "random_drop", "gap", "ratio",
                                                       "d_z", "z_random")
                                        for k, v in _interval(f"{m}_lo", f"{m}_hi").items()},
                                       bootstrap=True),
    "frontier_sensitivity.csv": SamplerTable({"value": Estimate("value", "lo", "hi"),
                                              **_interval("lo", "hi")},
                                             params="frontier_params.csv"),
}
DIAGNOSTICS = ("r_hat", "ess_bulk", "ess_tail")


def fit_ess(params: pd.DataFrame | None) -> float:
    """The smallest bulk or tail ESS of a fit's ``*_params.csv`` (NaN without one)."""
    if params is None or not set(DIAGNOSTICS[1:]) <= set(params.columns):
        return np.nan
    return float(params[list(DIAGNOSTICS[1:])].to_numpy(float).min())


def _binomial(p: np.ndarray, ess: np.ndarray) -> np.ndarray:
    p = np.clip(p, 0.0, 1.0)
    return np.maximum(np.sqrt(p * (1 - p) / ess), 1.0 / ess)


def mcse(est: Estimate, frame: pd.DataFrame, col: str, ess: float) -> np.ndarray:
    """Monte Carlo standard error of every row of ``frame[col]`` (see the module docstring);
    ``ess`` applies where the row has no ``ess_tail`` of its own."""
    x = frame[col].to_numpy(float)
    row_ess = frame["ess_tail"].to_numpy(float) if "ess_tail" in frame else np.full(len(x), ess)
    if est.kind == "mean":
        return frame[est.mcse].to_numpy(float)
    if est.kind == "fraction":
        return _binomial(x, row_ess)
    lo, hi = frame[est.lo].to_numpy(float), frame[est.hi].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        width = np.abs(np.log(hi) - np.log(lo) if est.log else hi - lo)
    out = (C_END if est.kind == "end" else C_POINT) * width / np.sqrt(row_ess)
    if est.kind == "value":
        out = np.where(np.isfinite(width), out, _binomial(x, row_ess))
    return out


def _levels(frame: pd.DataFrame) -> list[float]:
    """Fractions of draws at which a median or an interval end becomes undefined."""
    h = float(frame["hdi_prob"].iloc[0]) if "hdi_prob" in frame and len(frame) else 0.9
    return [0.5, (1 - h) / 2, (1 + h) / 2]


def _near_a_level(rule: SamplerTable, new, old, ess: tuple[float, float]) -> np.ndarray:
    """Rows where some fraction of draws lies within its tolerance of a defining level."""
    near = np.zeros(len(old), dtype=bool)
    for col, est in rule.estimates.items():
        if est.kind != "fraction" or col not in old:
            continue
        for frame, e in ((new, ess[0]), (old, ess[1])):
            p, tol = frame[col].to_numpy(float), Z * mcse(est, frame, col, e)
            near |= np.any([np.abs(p - level) <= tol for level in _levels(frame)], axis=0)
    return near


def _exact(x: pd.Series, y: pd.Series) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
        x, y = x.to_numpy(float), y.to_numpy(float)
        span = np.nanmax(np.abs(y[np.isfinite(y)])) if np.isfinite(y).any() else 0.0
        with np.errstate(invalid="ignore"):  # inf - inf: equal infinities compare by ==
            return (np.isnan(x) & np.isnan(y)) | (x == y) | (np.abs(x - y) <= EXACT_REL * span + 1e-12)
    # a missing cell is missing on both sides (pandas' string dtype keeps NaN through astype(str))
    return (x.astype(object).where(x.notna(), "").astype(str) == y.astype(object).where(y.notna(), "").astype(str)).to_numpy()


def _within(rule, col, new, old, ess) -> tuple[np.ndarray, np.ndarray]:
    """(agrees, tolerance) per row of an estimate column."""
    est = rule.estimates[col]
    x, y = new[col].to_numpy(float), old[col].to_numpy(float)
    tol = Z * np.hypot(mcse(est, new, col, ess[0]), mcse(est, old, col, ess[1]))
    tol = tol + REL_FLOOR * np.abs(y)
    both_nan, one_nan = np.isnan(x) & np.isnan(y), np.isnan(x) ^ np.isnan(y)
    with np.errstate(invalid="ignore"):
        ok = both_nan | (np.abs(x - y) <= tol) | (one_nan & _near_a_level(rule, new, old, ess))
    return ok, tol


def diagnostics_problems(name: str, frame: pd.DataFrame, *, rhat_max: float,
                         ess_min: float) -> list[str]:
    """Sampler diagnostics of a regenerated ``*_params.csv`` that miss their thresholds."""
    out = []
    label = frame.iloc[:, 0].astype(str).to_numpy()
    for col, bad in (("r_hat", frame["r_hat"] > rhat_max), ("ess_bulk", frame["ess_bulk"] < ess_min),
                     ("ess_tail", frame["ess_tail"] < ess_min)):
        bound = f"> {rhat_max}" if col == "r_hat" else f"< {ess_min:.0f}"
        out += [f"{name}: {col} of {label[i]} is {frame[col].iloc[i]:.3g} {bound} (sampler "
                f"not converged)" for i in np.flatnonzero(bad.to_numpy())]
    return out


def sampler_differences(name: str, new: pd.DataFrame, old: pd.DataFrame, rule: SamplerTable,
                        ess: tuple[float, float]) -> list[str]:
    """Why sampler table ``name`` (regenerated ``new`` vs committed ``old``) says something
    else; ``ess``: the (new, committed) fit's smallest ESS, for rows without their own."""
    bad = []
    for col in old.columns:
        if col in rule.skip or (rule.diagnostics and col in DIAGNOSTICS):
            continue
        if col not in rule.estimates:
            same = _exact(new[col], old[col])
            if not same.all():
                bad.append(f"{name}: column {col!r} differs in {int((~same).sum())} row(s)")
            continue
        ok, tol = _within(rule, col, new, old, ess)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            bad.append(f"{name}: column {col!r} differs beyond Monte Carlo tolerance in "
                       f"{int((~ok).sum())} row(s) (first: {old.iloc[i, 0]}: {new[col].iloc[i]:.4g}"
                       f" vs committed {old[col].iloc[i]:.4g}, tolerance {tol[i]:.2g})")
    return bad


def csv_differences(new: Path, old: Path, *, rhat_max: float = RHAT_MAX,
                    ess_min: float = 4 * ESS_MIN_PER_CHAIN, n_boot: int = 2000) -> list[str]:
    """Why the regenerated CSV ``new`` differs from the committed ``old`` (empty when they
    agree); a sampler table's ``*_params.csv`` is read from beside each of them; ``n_boot``:
    the bootstrap draws behind a bootstrap table's intervals."""
    if not old.is_file():
        return [f"{old.name}: not committed"]
    a, b = pd.read_csv(new), pd.read_csv(old)
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return [f"{old.name}: shape/columns {a.shape} vs committed {b.shape}"]
    rule = SAMPLER_TABLES.get(old.name)
    if rule is None:
        bad = [f"{old.name}: column {c!r} differs in {int((~s).sum())} row(s)"
               for c in b.columns if not (s := _exact(a[c], b[c])).all()]
        return bad
    ess = tuple(float(n_boot) if rule.bootstrap else
                fit_ess(_read(p.parent / rule.params)) if rule.params else np.nan for p in (new, old))
    bad = sampler_differences(old.name, a, b, rule, ess)
    if rule.diagnostics:
        bad += diagnostics_problems(old.name, a, rhat_max=rhat_max, ess_min=ess_min)
    return bad


def _read(path: Path) -> pd.DataFrame | None:
    return pd.read_csv(path) if path.is_file() else None
