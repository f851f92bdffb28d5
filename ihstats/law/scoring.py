"""Out-of-sample scores of a predictive distribution of log UPT, and the baselines scored with it.

A prediction for one run is a distribution of its log UPT. Every predictor here (the fitted law's
posterior predictive and each baseline) gives it as an equal-weight mixture of S location-scale
components, Student-t or normal (:class:`Predictive`), so one scorer treats them all alike
(:func:`score_runs`):

- coverage of the central 50% and 90% intervals (equal-tailed quantiles of the mixture; the
  predictive is symmetric in log UPT, so these match the HDIs ``ihstats.law.predict`` prints);
- the probability integral transform (PIT) ``F(y)``: uniform when the predictive is calibrated;
- the log predictive density ``log p(y)``;
- the error of the predictive median in log UPT.

A censored run (no emergence by ``last_step``) has no onset: its log score is the survival
probability ``log P(log UPT > log last_step)``, it counts as *inside* an interval when the
interval's upper end lies past ``log last_step`` (the interval still allows what was seen), its
PIT is drawn uniformly from ``[F(log last_step), 1]`` (the randomised PIT of a censored value) and
it has no median error.

Baselines (:func:`baseline_predictives`) are fitted on the same training runs: fixed exponents
``(a, b)`` with ``log T`` and the scatter fitted by censored-normal maximum likelihood (the
published exponents 0.37/0.62, the tokens form a = b = 0.5, constant tokens per head a = b = 1,
constant updates a = b = 0), and an OLS fit of both exponents on the uncensored runs that ignores
censoring (Student-t prediction interval).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from ihstats import _bayes
from ihstats.law.data import LawData, seed_keys
from ihstats.law.forms import line_draws, posterior_form
from ihstats.law.results import planned_run_sigma, seed_offset_draws
from ihstats.law.spec import OBS, SEED_KINDS

#: Baselines with fixed exponents ``(a, b)``; ``log T`` and the scatter are fitted.
FIXED_BASELINES = {
    "published a .37 b .62": (0.37, 0.62),
    "tokens a = b = .5": (0.5, 0.5),
    "tokens per head a = b = 1": (1.0, 1.0),
    "constant updates a = b = 0": (0.0, 0.0),
}
OLS_BASELINE = "OLS, censoring ignored"
LAW = "law (posterior predictive)"


@dataclass
class Predictive:
    """Predictive distribution of log UPT for n runs: an equal-weight mixture over S components.

    Attributes
    ----------
    loc, scale : numpy.ndarray
        Shape (S, n): location and scale of each component.
    nu : numpy.ndarray or None
        Shape (S, 1): Student-t degrees of freedom of each component; None for normal components.
    """

    loc: np.ndarray
    scale: np.ndarray
    nu: np.ndarray | None = None

    def _z(self, y):
        return (np.asarray(y, dtype=float)[None] - self.loc) / self.scale

    def cdf(self, y) -> np.ndarray:
        """``P(log UPT <= y)`` per run."""
        z = self._z(y)
        f = special.ndtr(z) if self.nu is None else special.stdtr(self.nu, z)
        return f.mean(axis=0)

    def logpdf(self, y) -> np.ndarray:
        """Log predictive density at ``y`` per run (log of the mixture's mean density)."""
        z = self._z(y)
        lp = (stats.norm.logpdf(z) if self.nu is None else stats.t.logpdf(z, self.nu)) - np.log(self.scale)
        return special.logsumexp(lp, axis=0) - np.log(lp.shape[0])

    def logsf(self, y) -> np.ndarray:
        """``log P(log UPT > y)`` per run."""
        return np.log(np.maximum(1.0 - self.cdf(y), 1e-300))

    def quantile(self, q: float) -> np.ndarray:
        """The ``q`` quantile per run, by bisection on the mixture CDF (monotone, no closed form)."""
        # a t component with nu ~ 1 puts its 0.1% quantile ~300 scales out: bracket wide
        lo = (self.loc - 1e3 * self.scale).min(axis=0)
        hi = (self.loc + 1e3 * self.scale).max(axis=0)
        for _ in range(80):
            mid = (lo + hi) / 2
            below = self.cdf(mid) < q
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return (lo + hi) / 2

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """One draw from each component, shape (S, n)."""
        shape = self.loc.shape
        z = rng.standard_normal(shape) if self.nu is None else rng.standard_t(self.nu, size=shape)
        return self.loc + self.scale * z


def score_runs(pred: Predictive, y, censored, *, levels=(0.5, 0.9), seed: int = 0) -> pd.DataFrame:
    """Score each run against its predictive distribution.

    Parameters
    ----------
    pred : Predictive
        The predictive of the n runs' log UPT.
    y : array-like
        Per run: the observed log onset, or ``log last_step`` for a censored run.
    censored : array-like of bool
        True for runs that showed no emergence by ``last_step``.
    levels : sequence of float
        Central interval probabilities to score.
    seed : int
        Seed of the randomised PIT of censored runs.

    Returns
    -------
    pandas.DataFrame
        One row per run: ``pit``, ``lpd``, ``median``, ``abs_err`` (NaN when censored) and, per
        level ``p`` (as a percentage ``P``), ``lo_P``, ``hi_P``, ``inside_P`` and ``hi_lo_ratio_P``
        (the interval's span as a ratio of UPTs, ``exp(hi - lo)``).
    """
    y = np.asarray(y, dtype=float)
    cens = np.asarray(censored, dtype=bool)
    F = pred.cdf(y)
    u = np.random.default_rng(seed).uniform(size=len(y))
    med = pred.quantile(0.5)
    out = {"pit": np.where(cens, F + u * (1.0 - F), F),
           "lpd": np.where(cens, pred.logsf(y), pred.logpdf(y)),
           "median": med, "abs_err": np.where(cens, np.nan, np.abs(med - y))}
    for p in levels:
        lo, hi = pred.quantile((1 - p) / 2), pred.quantile((1 + p) / 2)
        tag = f"{round(100 * p)}"
        out[f"lo_{tag}"], out[f"hi_{tag}"] = lo, hi
        out[f"inside_{tag}"] = np.where(cens, hi > y, (lo <= y) & (y <= hi))
        out[f"hi_lo_ratio_{tag}"] = np.exp(hi - lo)  # the interval in UPT: hi / lo, not hi - lo
    return pd.DataFrame(out)


def summarize_scores(runs: pd.DataFrame, by=("model",), levels=(0.5, 0.9)) -> pd.DataFrame:
    """Per group (default: per model) of :func:`score_runs` rows: runs, censored runs, coverage
    per level, mean log predictive density, median |error| of the median (uncensored runs),
    median interval span ``median_hi_lo_ratio_P`` (hi / lo of the interval in UPT) and the KS p-value of the PIT against uniform."""
    def one(g: pd.DataFrame) -> pd.Series:
        row = {"n_runs": len(g), "n_censored": int(g["censored"].sum())}
        for p in levels:
            tag = f"{round(100 * p)}"
            row[f"cover_{tag}"] = float(g[f"inside_{tag}"].mean())
        row["mean_lpd"] = float(g["lpd"].mean())
        row["median_abs_err"] = float(g["abs_err"].median())
        for p in levels:
            tag = f"{round(100 * p)}"
            row[f"median_hi_lo_ratio_{tag}"] = float(g[f"hi_lo_ratio_{tag}"].median())
        row["pit_ks_p"] = float(stats.kstest(g["pit"], "uniform").pvalue) if len(g) > 1 else np.nan
        return pd.Series(row)

    groups = runs.groupby(list(by), sort=False)
    return pd.DataFrame({k: one(g) for k, g in groups}).T.rename_axis(list(by)).reset_index()


# ---- the law's posterior predictive -----------------------------------------------------------

def law_predictive(idata, data: LawData, *, new_cell: bool = True, known_seeds: bool = True,
                   n_draws: int = 2000, seed: int = 0) -> Predictive:
    """Posterior predictive of the runs in ``data`` from a UPT-law posterior.

    Each component is one posterior draw: its law line at the run's (B, C[, N]) (centred on the
    posterior's own ``center_log*``, not on the test table's), plus, with ``new_cell`` and a fit
    with a cell effect, one draw of a new cell's offset ``cell_sd * z``; its scale is the seed
    scatter and the run's own measurement sd in quadrature (as in the likelihood), its dof the
    draw's ``nu`` (Student-t fits). ``new_cell=False`` leaves the cell offset out (the check that
    the scores can tell a predictive that misses the cell-level variance). With a seed effect, a
    run whose ``seed`` (a column of ``data.table``; with ``seed_within``, the seed at the run's value
    of that column) the fit saw takes that seed's offset, any other
    run a new seed's (:func:`~ihstats.law.results.seed_offset_draws`); ``known_seeds=False`` treats
    every seed as new (what the seed's offset is worth).
    """
    post, attrs = idata.posterior, idata.posterior.attrs
    rng = np.random.default_rng(seed)
    total = post.sizes["chain"] * post.sizes["draw"]
    pick = np.sort(rng.choice(total, size=min(n_draws, total), replace=False))

    def draws(name):
        return _bayes.posterior_draws(idata, name)[pick][:, None]

    # the posterior's own form and centres; a size term only where the posterior has one
    logs = {k: v for k, v in data.logs.items() if k != "N" or "c" in post}
    loc = draws("alpha") + line_draws(posterior_form(idata), draws, logs,
                                      {k: attrs[f"center_log{k}"] for k in logs})
    if new_cell and "cell_sd" in post:
        loc += draws("cell_sd") * rng.standard_normal(loc.shape)
    t = data.table
    seeds = seed_keys(t, attrs.get("seed_within") or None) if known_seeds else [None] * len(t)
    loc = loc + seed_offset_draws(idata, seeds, rng, pick)
    for kind in SEED_KINDS:  # seeds by kind: a held-out run draws a new weight seed and a new data seed
        if f"{kind}_sd" in post:
            loc = loc + draws(f"{kind}_sd") * rng.standard_normal(loc.shape)
    # shared sigma, or with sigma_by each run's level (a level the fit never saw: a new one)
    design = {k: np.exp(v) for k, v in data.logs.items()}
    sigma = planned_run_sigma(idata, design, rng)[pick]
    scale = np.sqrt(sigma ** 2 + data.me_sd[None] ** 2)
    nu = draws("nu") if "nu" in post else None
    return Predictive(loc, scale, nu)


def add_predictions(idata, data: LawData, *, seed: int = 0):
    """Add ArviZ's ``predictions`` group to ``idata`` (in place): per posterior draw, one draw of
    each run's log UPT (``log_upt``, dims chain, draw, run) from :func:`law_predictive` with a new
    cell's offset (the runs are cells the fit never saw) and, with a seed effect, its seed's offset
    (a new seed's when the fit never saw it), and ``predictions_constant_data``: each
    run's factors (B, C[, N]), its ``observed`` log onset (``log last_step`` when ``censored``: then
    a lower bound) and the censoring flag. Unclipped: a prediction of the onset itself."""
    post = idata.posterior
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    pred = law_predictive(idata, data, n_draws=chains * draws, seed=seed)  # every draw, in order
    y = pred.sample(np.random.default_rng([seed, 1])).reshape(chains, draws, -1)
    runs = {"run": data.table["run_id"].astype(str).tolist()}
    _bayes.add_group(idata, "predictions", {OBS: (("chain", "draw", "run"), y)}, coords=runs)
    const = {k: (("run",), np.exp(v)) for k, v in data.logs.items()}
    const.update(observed=(("run",), data.y), censored=(("run",), data.censored))
    _bayes.add_group(idata, "predictions_constant_data", const, coords=runs, sample_dims=False)
    return idata


# ---- baselines -------------------------------------------------------------------------------

def _censored_normal_mle(r: np.ndarray, cens: np.ndarray) -> tuple[float, float]:
    """ML location and scale of ``r ~ Normal(m, s)`` where censored entries are lower bounds."""
    obs = r[~cens]
    s0 = float(obs.std()) if len(obs) > 1 and obs.std() > 0 else 1.0

    def nll(theta):
        m, log_s = theta
        s = np.exp(log_s)
        return -(stats.norm.logpdf(obs, m, s).sum() + stats.norm.logsf(r[cens], m, s).sum())

    res = optimize.minimize(nll, x0=[float(obs.mean()), np.log(s0)], method="Nelder-Mead",
                            options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 4000})
    return float(res.x[0]), float(np.exp(res.x[1]))


def fixed_exponent_predictive(train: LawData, test: LawData, a: float, b: float, *,
                              n_draws: int = 500, seed: int = 0) -> Predictive:
    """Baseline ``log UPT = log T - a log B - b log C + Normal(0, s)``, ``a, b`` fixed, ``log T``
    and ``s`` by censored-normal ML on ``train``; the components carry the uncertainty of
    ``log T`` (``s / sqrt(n uncensored)``)."""
    def shift(d: LawData) -> np.ndarray:
        return a * d.logs["B"] + b * d.logs["C"]

    m, s = _censored_normal_mle(train.y + shift(train), train.censored)
    se = s / np.sqrt(max(1, int((~train.censored).sum())))
    z = np.random.default_rng(seed).standard_normal((n_draws, 1))
    loc = (m + se * z) - shift(test)[None]
    return Predictive(loc, np.full_like(loc, s))


def ols_predictive(train: LawData, test: LawData) -> Predictive:
    """OLS of log onset on log B and log C over the uncensored training runs (censored runs
    dropped, as a fit that ignores censoring would); the classical Student-t prediction interval
    ``x b +- t s sqrt(1 + x (X'X)^-1 x')``. A factor with one value among the uncensored
    training runs has no slope to fit and is left out (slope 0), not given the arbitrary split
    with the intercept that a minimum-norm solution would extrapolate from."""
    obs = ~train.censored
    keys = train.varying_among_formed(["B", "C"])
    X = np.column_stack([np.ones(obs.sum())] + [train.logs[k][obs] for k in keys])
    Xt = np.column_stack([np.ones(len(test.y))] + [test.logs[k] for k in keys])
    beta, *_ = np.linalg.lstsq(X, train.y[obs], rcond=None)
    dof = max(1, X.shape[0] - X.shape[1])
    s = np.sqrt(np.sum((train.y[obs] - X @ beta) ** 2) / dof)
    lever = np.einsum("ij,jk,ik->i", Xt, np.linalg.pinv(X.T @ X), Xt)
    return Predictive((Xt @ beta)[None], (s * np.sqrt(1.0 + lever))[None], np.array([[float(dof)]]))


def baseline_predictives(train: LawData, test: LawData, *, seed: int = 0) -> dict[str, Predictive]:
    """Every baseline of the module docstring, fitted on ``train``, predicting ``test``."""
    out = {name: fixed_exponent_predictive(train, test, a, b, seed=seed)
           for name, (a, b) in FIXED_BASELINES.items()}
    out[OLS_BASELINE] = ols_predictive(train, test)
    return out
