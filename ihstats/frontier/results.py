"""A fitted frontier: the ``p = 0.5`` contour per posterior draw, its band, which knob matters more.

:class:`FrontierResults` is what :meth:`ihstats.frontier.model.FrontierModel.fit` returns; it
holds numbers (the figure is :func:`ihstats.figures.frontier.plot_frontier`, the report
:mod:`ihstats.frontier.report`). Which knob matters more is claimed by
:func:`ihstats.knobs.knob_verdict`, the one rule the onset model (:mod:`ihstats.onset`) shares.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.frontier.glm import SEPARATION_SHORT, GLMFrontier
from ihstats.frontier.spec import CLAIM_PROBABILITY
from ihstats.knobs import knob_verdict


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


# the two scales of "which knob matters more" (FrontierResults.sensitivity)
STANDARDISED, PER_LOG_UNIT = "standardised log knobs", " per log unit"


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

    model: object  # the ihstats.frontier.model.FrontierModel (not imported: it imports this module)
    idata: object
    glm: GLMFrontier
    timings: dict
    sampler: dict = field(default_factory=dict)

    @property
    def separation(self) -> str:
        """Separation status of the data (``"none"``, ``"quasi"``, ``"complete"``)."""
        return self.model.separation

    @property
    def separation_short(self) -> str:
        """The separation in a figure title's words ("" when the data are not separated): the
        figures read it here, never from the fit's modules (issue 67)."""
        return SEPARATION_SHORT.get(self.separation, "")

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
        """Which knob matters more, on two scales.

        Standardised log knobs (``scale`` "standardised log knobs": slopes per sd of the design's
        log levels) answer "over the ranges this design tested", so a knob tested over a wider
        range looks stronger; per unit log knob (``... per log unit``: the slope divided by that
        sd, an elasticity of the odds) does not depend on the ranges, and is the one the verdict
        (:meth:`sensitivity_verdict`) and the onset model's elasticities use. In a square grid
        the two agree.

        Returns
        -------
        pandas.DataFrame
            Rows ``P(|b_freq| > |b_rel|)``, ``P(b_freq > 0)``, ``P(b_rel > 0)`` (and the
            interaction's sign) with ``value``; ``|b_freq| / |b_rel|`` with median and HDI; and
            ``P(|b_freq| > |b_rel|) per log unit``, ``|b_freq| / |b_rel| per log unit``.
        """
        coef = self.coef_draws()
        bf, br = coef[:, 1], coef[:, 2]
        sd_f, sd_r = self.model.scale["frequency"][1], self.model.scale["reliability"][1]
        rows = [("P(b_freq > 0)", np.mean(bf > 0), np.nan, np.nan, STANDARDISED),
                ("P(b_rel > 0)", np.mean(br > 0), np.nan, np.nan, STANDARDISED)]
        for suffix, f, r, scale in (("", bf, br, STANDARDISED),
                                    (PER_LOG_UNIT, bf / sd_f, br / sd_r, "per unit log knob")):
            ratio = np.abs(f) / np.abs(r)
            lo, hi = _hdi_columns(np.log(ratio)[:, None], hdi_prob)
            rows += [(f"P(|b_freq| > |b_rel|){suffix}", np.mean(np.abs(f) > np.abs(r)), np.nan, np.nan, scale),
                     (f"|b_freq| / |b_rel|{suffix}", np.median(ratio), np.exp(lo[0]), np.exp(hi[0]), scale)]
        if self.model.spec.interaction:
            rows.append(("P(b_freq:rel > 0)", np.mean(coef[:, 3] > 0), np.nan, np.nan, STANDARDISED))
        return pd.DataFrame(rows, columns=["quantity", "value", "lo", "hi", "scale"]).assign(hdi_prob=hdi_prob)

    def sensitivity_verdict(self, hdi_prob: float = 0.9) -> str:
        """One line on which knob matters more per unit log knob (the scale that does not depend
        on the design's ranges), claimed only with evidence (:func:`knob_verdict`)."""
        key = f"P(|b_freq| > |b_rel|){PER_LOG_UNIT}"
        return knob_verdict(self.sensitivity(hdi_prob).set_index("quantity").at[key, "value"], quantity=key)

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
