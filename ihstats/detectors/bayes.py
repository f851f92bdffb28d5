"""The Bayesian change-point detector (``bayes``, the default): onset with a credible interval.

``y = b0 + b1 r(x; a, b) + e``, ``r = clip((x - a) / (b - a), 0, 1)``, Gaussian noise, in
``x = ln(step)``. Flat prior on ``(b0, b1)`` and ``p(sigma) ~ 1/sigma`` integrate out
analytically, leaving ``p(y | a, b) ~ |X'X|^(-1/2) RSS^(-(n-2)/2)``; prior ``a`` uniform on
``[x_1, x_(n-1)]``, ``b | a`` uniform on ``(a, x_n]`` (``b = x_n`` also covers "still rising"),
pairs with ``b1 <= 0`` excluded. The posterior is computed exactly on a 2-D grid, refined once
around its mass; sums over each segment come from prefix sums, so a pair costs O(1). Onset = the
posterior median of ``a``, equal-tailed interval at ``level`` (``interval_kind = "credible"``);
midpoint and end are posterior medians. **No transition** (censored) unless both: the
change-point model beats the better of a flat and a linear-in-log-step model by
``log BF >= min_log_bf`` (BIC approximation, default 3, i.e. BF about 20) and the fitted rise
``b1 >= min_rise`` (metric units, default 0.1).

The interval is made to cover what the model leaves out (measured in
``benchmarks/bench_emergence.py`` on curves that are not this model, see
:mod:`ihstats.simulate.coverage_curves`):

* dependent noise: the likelihood is tempered to an effective sample size (AR(1) of the
  residuals near the rise, a sandwich factor for the weights, then halved: ``TEMPER_SCALE``);
* a hidden start (smooth rise, or the maximum over heads, whose noise lifts the baseline):
  the lower end moves down by the log-step span over which the fitted rise climbs ``lift``
  (3.5) robust noise sd (``_lift``);
* checkpoint placement: a rise that may start within the last two checkpoints is flagged
  ``late`` and its interval runs to the last checkpoint;
* two rises: the checkpoints before the interval, after the end, and the two halves of the
  rise are searched for a rise of their own (at least 3 noise sd); the first stage gives the
  onset, the other the column ``onset_alt``, and ``multimodal`` is set.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ihstats.detectors.base import (Detector, EmergenceResult, censored_result, check_curve, robust_noise,
                                    running_median)

MIN_POINTS = 8  # checkpoints at step > 0 a fit (and each sub-fit searching for a second rise) needs


def _pair_grid(x: np.ndarray, y: np.ndarray, wt: np.ndarray, a: np.ndarray, b: np.ndarray, xb_max: float,
               temper: float = 1.0) -> dict[str, np.ndarray]:
    """Log posterior (unnormalised) of every candidate pair ``(a_i, b_j)`` with ``b_j > a_i``.

    Weighted least squares with weights ``wt`` (mean 1). O(1) per pair: the weighted sums of r,
    r^2 and r*y over the ramp segment come from prefix sums of w, wx, wx^2, wy and wxy; points
    after ``b`` have r = 1, before ``a`` r = 0.
    """
    n = x.size
    A, Bv = np.meshgrid(a, b, indexing="ij")
    ok = Bv > A + 1e-9
    AI, BI = np.meshgrid(np.arange(a.size), np.arange(b.size), indexing="ij")
    ai, bi = AI[ok], BI[ok]  # (K,) indices into a and b
    A, Bv = A[ok], Bv[ok]  # (K,)
    P = [np.concatenate([[0.0], np.cumsum(t)]) for t in (wt, wt * x, wt * x * x, wt * y, wt * x * y)]
    ia, ib = np.searchsorted(x, a, "right")[ai], np.searchsorted(x, b, "right")[bi]
    cnt, s1, s2, sy, sxy = (p[ib] - p[ia] for p in P)
    W, Sy = P[0][n], P[3][n]
    n_after, y_after = W - P[0][ib], Sy - P[3][ib]
    w = Bv - A
    sr = (s1 - A * cnt) / w + n_after
    srr = (s2 - 2 * A * s1 + A * A * cnt) / w**2 + n_after
    sry = (sxy - A * sy) / w + y_after
    Syy = float(np.sum(wt * y * y))
    srr_c = srr - sr * sr / W
    sry_c = sry - sr * Sy / W
    syy_c = Syy - Sy * Sy / W
    good = srr_c > 1e-12 * W
    srr_c = np.where(good, srr_c, 1.0)
    slope = np.where(good, sry_c / srr_c, 0.0)
    rss = np.maximum(syy_c - sry_c * slope, 1e-12 * max(syy_c, 1e-300))
    loglik = -0.5 * np.log(W * srr_c) - 0.5 * (n - 2) * np.log(rss)
    logprior = np.where(good & (slope > 0), -np.log(xb_max - A), -np.inf)  # a uniform, b | a uniform on (a, x_n]
    g = {"a": A, "ai": ai, "b": Bv, "bi": bi, "loglik": loglik, "logprior": logprior,
         "rss": np.where(good, rss, np.inf), "slope": slope}
    return _temper(g, temper)


def _temper(g: dict[str, np.ndarray], temper: float) -> dict[str, np.ndarray]:
    g["logp"] = temper * g["loglik"] + g["logprior"]
    return g


def _calibration(x: np.ndarray, y: np.ndarray, wt: np.ndarray, g: dict[str, np.ndarray]) -> tuple[float, float]:
    """Learning rate for the likelihood from the best pair's fit: ``((1 - rho) / (1 + rho)) / k``.

    ``rho``: lag-1 autocorrelation of the residuals near the rise (within one rise width of
    it; clipped to [0, 0.95]); smooth corners the
    ramp cannot follow (and a fixed probe) correlate them, and an AR(1) series of n points carries
    about n (1 - rho) / (1 + rho) independent ones. ``k = sum(w^2 g^2) / sum(w g^2)``, g the
    derivative of the fit with respect to the onset: the sandwich ratio of the onset's sampling
    variance under equal-variance noise to the weighted model's posterior variance.
    """
    i = int(np.argmax(g["logp"]))
    a, b = g["a"][i], g["b"][i]
    r = np.clip((x - a) / (b - a), 0.0, 1.0)
    X = np.column_stack([np.ones_like(x), r])
    beta = np.linalg.lstsq(X * np.sqrt(wt)[:, None], y * np.sqrt(wt), rcond=None)[0]
    e = y - X @ beta
    near = (x > a - (b - a)) & (x < b + (b - a))  # the points that inform the knees
    if near.sum() >= 6:
        e = e[near]
    rho = float(np.clip(np.dot(e[1:], e[:-1]) / max(np.dot(e, e), 1e-300), 0.0, 0.95))
    grad = np.where((x > a) & (x < b), (x - b) / (b - a) ** 2, 0.0)
    k = float(np.sum(wt**2 * grad**2) / np.sum(wt * grad**2)) if np.any(grad) else 1.0
    return rho, (1 - rho) / (1 + rho) / k


def _wquantile(v: np.ndarray, w: np.ndarray, q: Any) -> np.ndarray:
    o = np.argsort(v)
    c = np.cumsum(w[o])
    return np.interp(np.asarray(q) * c[-1], c - 0.5 * w[o], v[o])


def _grid_quantile(grid: np.ndarray, mass: np.ndarray, q: Any) -> np.ndarray:
    """Quantiles of a density that is constant over the cells centred on an even ``grid``."""
    h = grid[1] - grid[0] if grid.size > 1 else 1.0
    edges = np.concatenate([grid - h / 2, [grid[-1] + h / 2]])
    cdf = np.concatenate([[0.0], np.cumsum(mass)]) / mass.sum()
    return np.interp(q, cdf, edges)


SUB_RISE = 3.0  # a second rise (before, after or inside the main one) must exceed 3 noise sd
# Halves the effective sample size that _calibration estimates: heavy-tailed noise, a maximum over
# heads and shape misfit leave dependence the lag-1 estimate misses (choice measured by coverage
# per shape x schedule x noise in benchmarks/bench_emergence.py: 1.0 left cells at 0.80-0.83)
TEMPER_SCALE = 0.5
LIFT = 3.5  # detection-limit extension of the interval's lower end, in noise sd (see _lift)


@dataclass
class BayesDetector(Detector):
    """Bayesian change-point onset with a credible interval at ``level`` (model: module docstring).

    Parameters
    ----------
    level : float
        Credible level of the onset interval, in (0, 1).
    min_rise : float
        Smallest fitted rise that counts (metric units).
    min_log_bf : float
        Log Bayes factor the change point needs over the better of flat and linear.
    n_grid : int
        Grid points per knee (the posterior is refined once on a fresh grid of this size).
    weights : {"log", "equal"}
        ``log``: each point weighs its share of the log-step axis; anything else: equal weights.
    lift : float
        Detection-limit extension of the interval's lower end, in noise sd (``_lift``).
    reach : float or None
        The level the onset's rise must carry the curve to (None: any rise). The curve is read
        floored at ``reach / 2`` (a creep below it is no part of the rise), and when it still rises
        in two stages and the first levels off below ``reach``, the onset and its interval are the
        stage that reaches it, the creep's onset going to ``onset_alt``.

    After the main rise is found, the checkpoints before its interval, after its end, and the two
    halves of the rise are searched for a rise of their own (at least ``SUB_RISE`` noise sd): the
    first stage gives the onset and its interval, the other stage ``onset_alt``, and
    ``multimodal`` is set.
    """

    name = "bayes"
    min_points = MIN_POINTS
    min_rise: float = 0.1
    min_log_bf: float = 3.0
    n_grid: int = 64
    weights: str = "log"
    lift: float = LIFT
    reach: float | None = None

    def fit(self, steps: Any, values: Any, label: str = "curve") -> EmergenceResult:
        s, y = check_curve(steps, values, self.min_points, label)
        if self.reach is not None:  # a creep below half the level is no part of the rise to it
            y = np.maximum(y, self.reach / 2)
        kw = dict(level=self.level, min_rise=self.min_rise, min_log_bf=self.min_log_bf, n_grid=self.n_grid,
                  weights=self.weights, lift=self.lift)
        r = _bayes_fit(s, y, **kw)
        if r.censored:
            return r
        # a second rise must stand out of the noise (3 sd): heavy-tailed noise makes short "rises"
        kw["min_rise"] = max(self.min_rise, SUB_RISE * robust_noise(y))
        kw["n_grid"] = max(16, self.n_grid // 2)  # the sub-fits only locate a second rise: a coarser grid
        early = _sub_fit(s, y, s < r.onset_lo, kw)
        if early is not None:
            if self._creep(s, y, early):
                return replace(r, multimodal=True, onset_alt=early.onset)
            return replace(early, midpoint=r.midpoint, end=r.end, last_step=r.last_step, rise=early.rise + r.rise,
                           log_bf=r.log_bf, multimodal=True, onset_alt=r.onset, late=False)
        later = _sub_fit(s, y, s > r.end, kw)
        if later is not None:
            if self._creep(s, y, r):
                return replace(later, multimodal=True, onset_alt=r.onset)
            return replace(r, multimodal=True, onset_alt=later.onset)
        stages = _two_stages(s, y, r, kw)
        if stages is None:
            return r
        first, second = stages
        if self._creep(s, y, first):  # the split fell between the creep and the jump
            return replace(r, onset=second.onset, onset_lo=second.onset_lo, onset_hi=second.onset_hi,
                           midpoint=second.midpoint, multimodal=True, onset_alt=first.onset)
        return replace(r, onset=first.onset, onset_lo=first.onset_lo, onset_hi=first.onset_hi, multimodal=True,
                       onset_alt=second.onset)

    def _creep(self, s: np.ndarray, y: np.ndarray, earlier: EmergenceResult) -> bool:
        """Whether the ``earlier`` stage levelled off below ``reach`` (the curve's running median at
        its end) while the curve ends at or above it: that stage was a creep, not the rise."""
        if self.reach is None:
            return False
        level = running_median(y, 5)
        at_end = float(np.interp(earlier.end, s, level))
        return at_end < self.reach <= level[-1]


def _sub_fit(s: np.ndarray, y: np.ndarray, keep: np.ndarray, kw: dict[str, Any]) -> EmergenceResult | None:
    """The uncensored fit of the checkpoints ``keep``, or None. Skips the fit when there are too
    few, or when their running median spans less than ``min_rise`` (no rise can pass then)."""
    if keep.sum() < MIN_POINTS or np.ptp(running_median(y[keep], 5)) < kw["min_rise"]:
        return None
    f = _bayes_fit(s[keep], y[keep], **kw)
    return None if f.censored else f


def _two_stages(s: np.ndarray, y: np.ndarray, r: EmergenceResult, kw: dict[str, Any],
                gap: int = 3) -> tuple[EmergenceResult, EmergenceResult] | None:
    """Fits of the first and second stage inside the main rise, or None.

    One ramp fitted over two rises spans both, leaning early. Split at its midpoint: two stages
    show as a rise that *ends* at least ``gap`` checkpoints before the split and one that
    *starts* at least ``gap`` checkpoints after it (a plateau between). A single smooth or linear
    rise is still rising at the split, so neither half has a plateau there.
    """
    if not _bent(s, y, r, 0.5 * kw["min_rise"]):
        return None
    left, right = s <= r.midpoint, s > r.midpoint
    lf = _sub_fit(s, y, left, kw)
    rf = _sub_fit(s, y, right, kw) if lf is not None else None
    if rf is None:
        return None
    # the plateau: the right rise's whole interval starts after the left rise ends, with at least
    # `gap` checkpoints and a tenth of the main rise's log-step width between them
    plateau = (s > lf.end) & (s < rf.onset_lo)
    if plateau.sum() >= gap and np.log(rf.onset_lo / lf.end) >= 0.1 * np.log(r.end / r.onset) \
            and np.sum(plateau & left) >= 1 and np.sum(plateau & right) >= 1:
        return lf, rf
    return None


def _bent(s: np.ndarray, y: np.ndarray, r: EmergenceResult, tol: float) -> bool:
    """Whether the curve leaves the fitted ramp by ``tol`` (running median of the residuals) inside
    the rise: a cheap screen before the two-stage fits (one straight ramp over two stages does)."""
    x = np.log(s)
    ramp = np.clip((x - np.log(r.onset)) / max(np.log(r.end / r.onset), 1e-12), 0.0, 1.0)
    X = np.column_stack([np.ones_like(x), ramp])
    resid = y - X @ np.linalg.lstsq(X, y, rcond=None)[0]
    inside = (s > r.onset) & (s < r.end)
    return inside.sum() >= 5 and float(np.max(np.abs(running_median(resid, 5)[inside]))) >= tol


def _weights(x0: np.ndarray, weights: str) -> np.ndarray:
    if weights != "log":
        return np.ones(x0.size)
    wt = np.gradient(x0)  # each point stands for its share of the log-step axis, clipped to
    med = np.median(wt)  # [1/4, 4] x the median so a few isolated points cannot dominate
    wt = np.clip(wt, med / 4, med * 4)
    return wt / wt.mean()


def _lift(lo: float, on: float, end: float, rise: float, noise: float, lift: float, x_first: float) -> float:
    """The interval's lower end, moved down by the log-step span over which the fitted rise
    climbs ``lift`` noise sd.

    A rise is invisible while it is below the noise, and two common departures from the model
    hide exactly that part and make the visible knee late: a smooth (sigmoid-like) start, and a
    maximum over heads, whose baseline the noise of the other heads lifts (by about 1.4 sd for
    8 heads). The credible interval of the three-segment model does not know either, so its lower
    end is extended by ``lift * noise / slope`` (slope = fitted rise per unit log step).
    """
    if not (rise > 0 and noise > 0 and end > on):
        return lo
    return max(x_first, min(lo, on - lift * noise * (end - on) / rise))


def _bayes_fit(s: np.ndarray, y: np.ndarray, *, level: float, min_rise: float, min_log_bf: float,
               n_grid: int, weights: str, lift: float) -> EmergenceResult:
    """One three-segment fit of a checked curve (steps ``s`` > 0): the posterior of the knees."""
    x = np.log(s)
    n = x.size
    xc, yc, ys = x.mean(), y.mean(), max(y.std(), 1e-12)  # centring keeps the prefix sums exact
    x0, y0 = x - xc, (y - yc) / ys
    # the onset may sit up to the second-to-last checkpoint: a rise seen at the last two points
    a_lo, a_hi, b_hi = x0[0], x0[-2], x0[-1]
    wt = _weights(x0, weights)
    a1, b1 = np.linspace(a_lo, a_hi, n_grid), np.linspace(a_lo, b_hi, n_grid)
    g = _pair_grid(x0, y0, wt, a1, b1, b_hi)
    if not np.isfinite(g["logp"].max()):
        return censored_result("bayes", s, level, rise=0.0)
    # Calibrated learning rate (a "generalised posterior"): see _calibration.
    rho, temper = _calibration(x0, y0, wt, g)
    temper *= TEMPER_SCALE
    g = _temper(g, temper)
    # refine once: a fresh grid over the region holding all but 1e-6 of the mass (+ one coarse cell)
    p = np.exp(g["logp"] - g["logp"].max())
    ha, hb = (a_hi - a_lo) / (n_grid - 1), (b_hi - a_lo) / (n_grid - 1)
    ra = _grid_quantile(a1, np.bincount(g["ai"], p, n_grid), [1e-6, 1 - 1e-6]) + [-ha, ha]
    rb = _grid_quantile(b1, np.bincount(g["bi"], p, n_grid), [1e-6, 1 - 1e-6]) + [-hb, hb]
    a_grid = np.linspace(max(a_lo, ra[0]), min(a_hi, ra[1]), n_grid)
    b_grid = np.linspace(max(a_lo, rb[0]), min(b_hi, rb[1]), n_grid)
    g2 = _pair_grid(x0, y0, wt, a_grid, b_grid, b_hi, temper)
    if not np.isfinite(g2["logp"].max()):
        g2, a_grid, b_grid = g, a1, b1
    p = np.exp(g2["logp"] - g2["logp"].max())
    a_mass = np.bincount(g2["ai"], weights=p, minlength=a_grid.size)
    qlo, qhi = (1 - level) / 2, (1 + level) / 2
    if a_grid[-1] > a_grid[0]:
        on, lo, hi = _grid_quantile(a_grid, a_mass, [0.5, qlo, qhi])
    else:
        on = lo = hi = a_grid[0]
    mid = _wquantile(0.5 * (g2["a"] + g2["b"]), p, 0.5)
    end = _grid_quantile(b_grid, np.bincount(g2["bi"], p, b_grid.size), 0.5) if b_grid[-1] > b_grid[0] else b_grid[0]
    # model comparison (BIC): change point (b0, b1, a, b, sigma) vs flat (b0, sigma) vs linear
    rss_cp = min(g["rss"][np.isfinite(g["logp"])].min(), g2["rss"][np.isfinite(g2["logp"])].min())
    # (same weights as the change-point fit, so the three RSS are comparable)
    rss_flat = float(np.sum(wt * (y0 - np.average(y0, weights=wt)) ** 2))
    rss_lin = float(np.sum(wt * (y0 - np.polyval(np.polyfit(x0, y0, 1, w=np.sqrt(wt)), x0)) ** 2))
    bic = lambda rss, k: n * np.log(max(rss, 1e-300) / n) + k * np.log(n)  # noqa: E731
    log_bf = 0.5 * (min(bic(rss_flat, 2), bic(rss_lin, 3)) - bic(rss_cp, 5))
    best = int(np.argmax(g2["logp"]))
    rise = float(g2["slope"][best] * ys)
    noise = float(np.sqrt(rss_cp / max(n - 4, 1)) * ys)
    details = {"a_grid": a_grid + xc, "a_mass": a_mass / a_mass.sum(), "rho": rho}
    if log_bf < min_log_bf or rise < min_rise:
        return censored_result("bayes", s, level, rise=rise, log_bf=log_bf, noise=noise, details=details)
    lo = _lift(lo, on, end, rise, robust_noise(y), lift, x0[0])
    e = lambda v: float(np.exp(v + xc))  # noqa: E731
    # A rise that may start within the last two checkpoints is flagged, and its interval runs to
    # the last one: a knee between the last two (the grid stops at the second-to-last) is seen
    # only as a higher last point.
    late = bool(e(hi) > s[-3])
    hi_step = float(s[-1]) if late else e(hi)
    return EmergenceResult("bayes", e(on), e(lo), hi_step, e(mid), e(end), False, float(s[-1]), level,
                           rise, float(log_bf), noise, details, late=late)
