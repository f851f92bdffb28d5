"""Logistic boundary models of whether an induction head forms, and the frontier they imply.

``logit p(formed) = b0 + bf zf + br zr [+ bfr zf zr] [+ covariates]`` where ``zf``, ``zr`` are
the standardised natural logs of frequency and reliability (so slopes are comparable: "which knob
matters more" is ``P(|bf| > |br|)``). The frontier is the ``p = 0.5`` contour, solved in closed
form per posterior draw on a grid of frequencies and summarised as a median curve and an HDI band.

Pipeline (STYLE.md rule 5; the same pattern as :mod:`ihstats.upt_law`)::

    model = FrontierSpec(interaction=False).build(table)   # checks + cell counts + separation
    res = model.fit(draws=1000, tune=1000, chains=2, seed=0)   # -> FrontierResults
    res.summary(); res.diagnostics(); res.frontier(hdi_prob=0.9); res.sensitivity(); res.glm
    res.save("out/")                                        # -> {"idata": Path, ...}

The statsmodels GLM cross-check (:func:`ihstats.frontier_glm.fit_glm`) detects (quasi-)complete
separation with a linear program and then falls back to Firth's penalised likelihood, flagged in
its result. Sampling, summaries and saving go through :mod:`ihstats._bayes`; the PyMC model
graph is :meth:`FrontierModel.pymc_model`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.frontier_glm import GLMFrontier, check_separation, fit_glm
from ihstats.tables import formed_column, numeric_column

KNOBS = ("frequency", "reliability")


# ---- input -------------------------------------------------------------------------------------

def prepare_frontier_data(table: pd.DataFrame, covariates=(), metric: str | None = None
                          ) -> pd.DataFrame:
    """Validate a run table and aggregate it into grid cells.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per run with ``frequency`` and ``reliability`` in (0, 1] and either a boolean
        ``formed`` column or an emergence table's ``censored`` column (formed = not censored).
        An emergence table with several metrics needs ``metric``.
    covariates : sequence of str
        Other numeric factors entered linearly (standardised); the frontier is drawn at their mean.
    metric : str, optional
        Keep only rows of this ``metric`` (emergence tables).

    Returns
    -------
    pandas.DataFrame
        One row per cell: knobs, covariates, ``n_runs``, ``n_formed``, ``frac_formed``.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table: expected a pandas DataFrame, got {type(table).__name__}")
    df = table.copy()
    if metric is not None:
        if "metric" not in df:
            raise ValueError(f"metric={metric!r} given but the table has no 'metric' column")
        df = df[df["metric"] == metric]
        if df.empty:
            raise ValueError(f"metric: no rows with metric == {metric!r}; "
                             f"available: {sorted(table['metric'].unique())}")
    elif "metric" in df and df["metric"].nunique() > 1:
        raise ValueError("metric: the table holds several metrics "
                         f"{sorted(df['metric'].unique())}; choose one with metric=")
    needed = list(KNOBS) + list(covariates)
    missing = [c for c in needed if c not in df]
    if "formed" not in df and "censored" not in df:
        missing.append("formed (or censored)")
    if missing:
        raise ValueError(f"missing columns: {missing}; have {list(table.columns)}")
    df["formed"] = formed_column(df)  # the one rule (docs/DESIGN.md, "What the fits accept")
    for k in KNOBS:
        v = pd.Series(numeric_column(df, k), index=df.index)
        bad = v.isna() | (v <= 0) | (v > 1)
        if bad.any():
            raise ValueError(f"{k}: values must lie in (0, 1]; got {sorted(df.loc[bad, k].unique())[:5]}")
        df[k] = v.astype(float)
    for k in needed:
        if df[k].nunique() < 2:
            raise ValueError(f"{k}: needs at least 2 levels to fit a slope, got {df[k].unique()}")
    cells = (df.groupby(needed, as_index=False)
               .agg(n_runs=("formed", "size"), n_formed=("formed", "sum")))
    cells["frac_formed"] = cells["n_formed"] / cells["n_runs"]
    return cells


# ---- contour -----------------------------------------------------------------------------------

def contour_z(coef: np.ndarray, zf: np.ndarray, interaction: bool) -> np.ndarray:
    """Standardised log reliability on the ``p = 0.5`` contour.

    Parameters
    ----------
    coef : ndarray, shape (n_draws, n_terms)
        Columns ``b0, bf, br[, bfr]`` (covariates at their mean contribute 0).
    zf : ndarray, shape (n_grid,)
        Standardised log frequencies.
    interaction : bool
        Whether column 3 is the interaction.

    Returns
    -------
    ndarray, shape (n_draws, n_grid)
        ``zr`` solving ``b0 + bf zf + (br + bfr zf) zr = 0``. Where the reliability slope
        ``br + bfr zf`` is zero there is no crossing: ``+inf`` when ``p < 0.5`` at every
        reliability (no head forms), ``-inf`` when ``p > 0.5`` at every reliability.
    """
    coef = np.atleast_2d(coef)
    num = coef[:, [0]] + coef[:, [1]] * zf[None, :]          # (D, G)
    den = coef[:, [2]] + (coef[:, [3]] * zf[None, :] if interaction else 0.0)
    den = np.broadcast_to(den, num.shape)
    flat = np.abs(den) < 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        z = -num / den
    z[flat] = np.where(num[flat] > 0, -np.inf, np.inf)
    return z


def _hdi_columns(x: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Narrowest interval holding ``prob`` of the draws, per column; infinite draws allowed."""
    s = np.sort(x, axis=0)                                     # (D, G)
    n = s.shape[0]
    k = max(int(np.ceil(prob * n)), 1)
    with np.errstate(invalid="ignore"):
        width = s[k - 1:] - s[: n - k + 1]                     # (n-k+1, G)
    width = np.where(np.isnan(width), np.inf, width)           # inf - inf: unbounded window
    i = np.argmin(width, axis=0)
    cols = np.arange(s.shape[1])
    return s[i, cols], s[i + k - 1, cols]


def single_outcome(cells: pd.DataFrame) -> str | None:
    """"every run formed (k of n)" / "no run formed (0 of n)", or None when both outcomes occur."""
    n, k = int(cells["n_runs"].sum()), int(cells["n_formed"].sum())
    return (f"every run formed ({k} of {n})" if k == n else
            f"no run formed (0 of {n})" if k == 0 else None)


def _keep_contour_in_unit_interval(out: pd.DataFrame, drop_all: bool) -> pd.DataFrame:
    """Reliability is a probability: a contour above 1 (or at 0) means p = 0.5 is never reached
    there, so it is not reported; the band is cut at 1. With a single outcome the data hold no
    boundary at all and nothing is reported (the fit there is the prior's)."""
    for k in ("median", "glm"):
        col = "glm_reliability" if k == "glm" else "reliability_median"
        bad = drop_all | ~((out[col] > 0) & (out[col] <= 1))
        out.loc[bad, [col, col.replace("reliability", "log_reliability", 1)]] = np.nan
    gone = drop_all | ~(out["reliability_lo"] <= 1)
    out.loc[gone, ["reliability_lo", "reliability_hi", "log_reliability_lo",
                   "log_reliability_hi"]] = np.nan
    out["reliability_hi"] = out["reliability_hi"].clip(upper=1.0)
    out["log_reliability_hi"] = out["log_reliability_hi"].clip(upper=0.0)
    return out


# ---- Bayesian model ----------------------------------------------------------------------------

@dataclass(frozen=True)
class FrontierSpec:
    """What to fit: terms and priors (on the standardised scale).

    Parameters
    ----------
    interaction : bool
        Add the ``zf * zr`` term.
    covariates : tuple of str
        Extra numeric factors (standardised, linear; logged first when ``log_covariates``).
    prior_sd : float
        Normal prior sd of each slope (2.5: weakly informative on the logit scale, Gelman 2008).
    intercept_sd : float
        Normal prior sd of the intercept.
    metric : str, optional
        Emergence-table metric to keep.
    """

    interaction: bool = False
    covariates: tuple = ()
    log_covariates: bool = True
    prior_sd: float = 2.5
    intercept_sd: float = 5.0
    metric: str | None = None

    def build(self, table: pd.DataFrame) -> "FrontierModel":
        """Validate ``table``, aggregate it into cells and build the PyMC model."""
        if self.prior_sd <= 0 or self.intercept_sd <= 0:
            raise ValueError("prior_sd, intercept_sd: must be > 0")
        cells = prepare_frontier_data(table, self.covariates, self.metric)
        return FrontierModel(self, cells)


@dataclass
class FrontierModel:
    """A built frontier model: cells, standardisation and the PyMC model."""

    spec: FrontierSpec
    cells: pd.DataFrame
    scale: dict = field(init=False)
    X: np.ndarray = field(init=False)
    terms: list = field(init=False)
    separation: str = field(init=False)

    def __post_init__(self):
        c, w = self.cells, self.cells["n_runs"].to_numpy(float)
        cols, self.scale = [], {}
        for name in list(KNOBS) + list(self.spec.covariates):
            v = c[name].to_numpy(float)
            if name in KNOBS or self.spec.log_covariates:
                if np.any(v <= 0):
                    raise ValueError(f"{name}: log_covariates=True needs positive values")
                v = np.log(v)
            mu = np.average(v, weights=w)                      # moments over runs, not cells
            sd = np.sqrt(np.average((v - mu) ** 2, weights=w))
            self.scale[name] = (float(mu), float(sd))
            cols.append((v - mu) / sd)
        zf, zr, *zc = cols
        self.terms = ["intercept", "frequency", "reliability"]
        X = [np.ones_like(zf), zf, zr]
        if self.spec.interaction:
            self.terms.append("frequency:reliability")
            X.append(zf * zr)
        self.terms += list(self.spec.covariates)
        self.X = np.column_stack(X + zc)
        self.separation = check_separation(self.X, self.cells["n_formed"].to_numpy(),
                                           self.cells["n_runs"].to_numpy())

    def pymc_model(self):
        import pymc as pm

        slopes = self.terms[1:]
        with pm.Model(coords={"term": slopes, "cell": np.arange(len(self.cells))}) as m:
            b0 = pm.Normal("intercept", 0.0, self.spec.intercept_sd)
            beta = pm.Normal("beta", 0.0, self.spec.prior_sd, dims="term")
            eta = b0 + pm.math.dot(self.X[:, 1:], beta)
            pm.Binomial("formed", n=self.cells["n_runs"].to_numpy(), logit_p=eta,
                        observed=self.cells["n_formed"].to_numpy(), dims="cell")
        return m

    def fit(self, *, draws: int = 1000, tune: int = 1000, chains: int = 2, seed: int = 0,
            target_accept: float = 0.9, cores: int = 1) -> "FrontierResults":
        """Sample the posterior (NUTS) and fit the GLM cross-check."""
        idata, timings = _bayes.sample(self.pymc_model(), draws=draws, tune=tune, chains=chains,
                                       seed=seed, target_accept=target_accept, cores=cores,
                                       log_likelihood=False)
        idata.posterior.attrs.update({"ihstats_model": "frontier", "separation": self.separation,
                                      **{f"version_{k}": v for k, v in _bayes.versions().items()}})
        glm = fit_glm(self.X, self.cells["n_formed"].to_numpy(), self.cells["n_runs"].to_numpy(),
                      self.terms, separation=self.separation)
        return FrontierResults(self, idata, glm, timings, sampler=dict(
            draws=draws, tune=tune, chains=chains, seed=seed, target_accept=target_accept))


# ---- results -----------------------------------------------------------------------------------

@dataclass
class FrontierResults:
    """Posterior of a frontier model with its GLM cross-check.

    Attributes
    ----------
    model : FrontierModel
    idata : arviz.InferenceData
    glm : GLMFrontier
    timings : dict
    sampler : dict
        ``draws, tune, chains, seed, target_accept`` (empty for results not made by ``fit``).
    """

    model: FrontierModel
    idata: object
    glm: GLMFrontier
    timings: dict
    sampler: dict = field(default_factory=dict)

    @property
    def separation(self) -> str:
        """Separation status of the data (``"none"``, ``"quasi"``, ``"complete"``)."""
        return self.model.separation

    def coef_draws(self) -> np.ndarray:
        """Posterior draws, shape (n_draws, n_terms), columns in ``model.terms`` order."""
        post = self.idata.posterior
        b0 = post["intercept"].values.reshape(-1, 1)
        beta = post["beta"].values.reshape(b0.shape[0], -1)
        return np.hstack([b0, beta])

    def summary(self, hdi_prob: float = 0.9) -> pd.DataFrame:
        """Tidy posterior summary of the standardised coefficients (``term`` column)."""
        s = _bayes.summary(self.idata, ["intercept", "beta"], hdi_prob=hdi_prob)
        s.insert(0, "term", self.model.terms)
        s["hdi_prob"] = hdi_prob
        return s.reset_index(drop=True)

    def diagnostics(self, *, rhat_max: float = 1.01, ess_min: float = 400) -> list[str]:
        """Sampler warnings (divergences, r_hat, ESS); empty when all checks pass."""
        s = self.summary().set_index("term")
        return _bayes.sampler_warnings(self.idata, s,
                                       target_accept=self.sampler.get("target_accept", np.nan),
                                       rhat_max=rhat_max, ess_min=ess_min)

    def _grid(self, n_grid: int):
        mu, sd = self.model.scale["frequency"]
        f = self.model.cells["frequency"]
        log_f = np.linspace(np.log(f.min()), np.log(f.max()), n_grid)
        return log_f, (log_f - mu) / sd

    def _to_log_r(self, z):
        mu, sd = self.model.scale["reliability"]
        return mu + sd * z

    def frontier(self, hdi_prob: float = 0.9, n_grid: int = 60) -> pd.DataFrame:
        """The ``p = 0.5`` contour: posterior median and HDI band on a frequency grid.

        Returns
        -------
        pandas.DataFrame
            ``frequency, reliability_median, reliability_lo, reliability_hi`` (reliability on the
            contour; NaN where it would leave (0, 1], i.e. no reliability reaches p = 0.5 there,
            and everywhere when every run formed or none did; the band is cut at 1), their logs,
            ``frac_no_crossing`` (draws with a zero reliability slope there),
            ``frac_decreasing`` (draws where p falls with reliability), ``frac_above_1``,
            ``glm_reliability`` (the GLM contour) and ``hdi_prob``.
        """
        if not 0 < hdi_prob < 1:
            raise ValueError(f"hdi_prob: must lie in (0, 1), got {hdi_prob}")
        coef = self.coef_draws()
        log_f, zf = self._grid(n_grid)
        inter = self.model.spec.interaction
        log_r = self._to_log_r(contour_z(coef, zf, inter))     # (D, G)
        lo, hi = _hdi_columns(log_r, hdi_prob)
        slope = coef[:, [2]] + (coef[:, [3]] * zf[None, :] if inter else 0.0)
        glm_lr = self._to_log_r(contour_z(self.glm.params, zf, inter))[0]
        with np.errstate(over="ignore"):
            out = pd.DataFrame({
                "frequency": np.exp(log_f), "log_frequency": log_f,
                "log_reliability_median": np.median(log_r, axis=0),
                "log_reliability_lo": lo, "log_reliability_hi": hi,
                "frac_no_crossing": np.mean(~np.isfinite(log_r), axis=0),
                "frac_decreasing": np.mean(np.broadcast_to(slope, log_r.shape) < 0, axis=0),
                "frac_above_1": np.mean(log_r > 0, axis=0),
                "glm_log_reliability": glm_lr,
            })
            for k in ("median", "lo", "hi"):
                out[f"reliability_{k}"] = np.exp(out[f"log_reliability_{k}"])
            out["glm_reliability"] = np.exp(glm_lr)
        out["hdi_prob"] = hdi_prob
        return _keep_contour_in_unit_interval(out, single_outcome(self.model.cells) is not None)

    def boundary_note(self, hdi_prob: float = 0.9) -> str | None:
        """One line when the grid holds no boundary to draw (single outcome, or the median
        contour outside the grid's reliabilities at every frequency); None otherwise."""
        one = single_outcome(self.model.cells)
        if one:
            return f"{one}: the data hold no boundary, so no frontier is drawn or reported"
        r = self.model.cells["reliability"]
        if not self.frontier(hdi_prob)["reliability_median"].between(r.min(), r.max()).any():
            return (f"the p = 0.5 boundary lies outside the grid (reliability {r.min():g}-"
                    f"{r.max():g}) at every frequency: no frontier inside the grid")
        return None

    def compare_glm(self, hdi_prob: float = 0.9, n_grid: int = 60) -> pd.DataFrame:
        """GLM contour against the Bayesian median where both are finite (log-reliability gap)."""
        fr = self.frontier(hdi_prob, n_grid)
        ok = np.isfinite(fr["log_reliability_median"]) & np.isfinite(fr["glm_log_reliability"])
        fr = fr[ok].copy()
        fr["diff_log"] = fr["glm_log_reliability"] - fr["log_reliability_median"]
        fr["glm_in_band"] = fr["glm_log_reliability"].between(fr["log_reliability_lo"],
                                                              fr["log_reliability_hi"])
        return fr[["frequency", "log_reliability_median", "glm_log_reliability", "diff_log",
                   "glm_in_band"]].assign(glm_method=self.glm.method)

    def sensitivity(self, hdi_prob: float = 0.9) -> pd.DataFrame:
        """Which knob matters more, on the standardised scale.

        Returns
        -------
        pandas.DataFrame
            Rows ``P(|b_freq| > |b_rel|)``, ``P(b_freq > 0)``, ``P(b_rel > 0)`` (and the
            interaction's sign) with ``value``; and ``|b_freq| / |b_rel|`` with median and HDI.
        """
        coef = self.coef_draws()
        bf, br = coef[:, 1], coef[:, 2]
        ratio = np.abs(bf) / np.abs(br)
        lo, hi = _hdi_columns(np.log(ratio)[:, None], hdi_prob)
        rows = [
            ("P(|b_freq| > |b_rel|)", np.mean(np.abs(bf) > np.abs(br)), np.nan, np.nan),
            ("P(b_freq > 0)", np.mean(bf > 0), np.nan, np.nan),
            ("P(b_rel > 0)", np.mean(br > 0), np.nan, np.nan),
            ("|b_freq| / |b_rel|", np.median(ratio), np.exp(lo[0]), np.exp(hi[0])),
        ]
        if self.model.spec.interaction:
            rows.append(("P(b_freq:rel > 0)", np.mean(coef[:, 3] > 0), np.nan, np.nan))
        return pd.DataFrame(rows, columns=["quantity", "value", "lo", "hi"]).assign(
            hdi_prob=hdi_prob, scale="standardised log knobs")

    def sensitivity_verdict(self, hdi_prob: float = 0.9) -> str:
        """One line on which knob matters more, claimed only with evidence (:func:`knob_verdict`)."""
        return knob_verdict(self.sensitivity(hdi_prob).set_index("quantity").at["P(|b_freq| > |b_rel|)", "value"])

    def save(self, out_dir) -> dict:
        """Write the fit's folder (:func:`ihstats._bayes.save_fit`): ``idata.nc``,
        ``summary.csv``, ``fit.json`` (spec, sampler, timings, diagnostics, terms, scale,
        separation, GLM method, boundary note, versions) and ``frontier.csv``,
        ``sensitivity.csv``, ``cells.csv``, ``glm.csv``; returns ``{"idata", "summary", "fit",
        "frontier", "sensitivity", "cells", "glm"}`` -> path."""
        record = {"model": "logit p(formed) = b0 + bf zf + br zr"
                           + (" + bfr zf zr" if self.model.spec.interaction else "")
                           + "".join(f" + b_{c} z_{c}" for c in self.model.spec.covariates),
                  "spec": asdict(self.model.spec), "sampler": self.sampler,
                  "timings_s": self.timings, "diagnostics": self.diagnostics(),
                  "terms": self.model.terms, "scale": self.model.scale,
                  "separation": self.separation, "glm_method": self.glm.method,
                  "boundary_note": self.boundary_note(), "versions": _bayes.versions()}
        tables = {"frontier": self.frontier(), "sensitivity": self.sensitivity(),
                  "cells": self.model.cells, "glm": self.glm.table()}
        return _bayes.save_fit(out_dir, self.idata, self.summary(), record, tables)

    def plot_frontier(self, path=None, hdi_prob: float = 0.9):
        """The frontier map; see :func:`ihstats.plots.plot_frontier`."""
        from ihstats import plots  # matplotlib loads only when a figure is drawn (CLI import time)

        return plots.plot_frontier(self, path, hdi_prob)


CLAIM_PROBABILITY = 0.95  # a knob "matters more" only past this posterior probability


def knob_verdict(p_freq_larger: float, level: float = CLAIM_PROBABILITY,
                 quantity: str = "P(|b_freq| > |b_rel|)") -> str:
    """The answer to "which knob matters more", given the posterior probability ``quantity`` that
    frequency does (the frontier's ``P(|b_freq| > |b_rel|)``, the onset model's elasticities): a
    claim only when the posterior probability of it is at least ``level``; otherwise "not
    resolved", because a probability of 0.6 or 0.8 is a lean, not a finding."""
    if not np.isfinite(p_freq_larger):
        return "not resolved (the posterior probability is not finite)"
    for p, knob in ((p_freq_larger, "frequency"), (1.0 - p_freq_larger, "reliability")):
        if p >= level:
            return f"more sensitive to {knob} (posterior probability {p:.3f} >= {level})"
    lean = "frequency" if p_freq_larger > 0.5 else "reliability"
    return (f"not resolved: {quantity} = {p_freq_larger:.3f}, a lean toward {lean} "
            f"below the {level} needed to claim it")
