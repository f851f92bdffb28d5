"""Logistic boundary models of whether an induction head forms, and the frontier they imply.

``logit p(formed) = b0 + bf zf + br zr [+ bfr zf zr] [+ covariates]`` where ``zf``, ``zr`` are
the standardised natural logs of frequency and reliability (so slopes are comparable: "which knob
matters more" is ``P(|bf| > |br|)``). The frontier is the ``p = 0.5`` contour, solved in closed
form per posterior draw on a grid of frequencies and summarised as a median curve and an HDI band.

Pipeline (STYLE.md rule 5; the same pattern as :mod:`ihstats.law`)::

    model = FrontierModel.from_table(table, FrontierSpec())  # checks + cell counts + separation
    res = model.fit(draws=1000, tune=1000, chains=4, seed=0)   # -> FrontierResults
    res.summary(); res.diagnostics(); res.frontier(hdi_prob=0.9); res.sensitivity(); res.glm
    res.save("out/")                                        # -> {"idata": Path, ...}

The statsmodels GLM cross-check (:func:`ihstats.frontier.glm.fit_glm`) detects (quasi-)complete
separation with a linear program and then falls back to Firth's penalised likelihood, flagged in
its result. Sampling, summaries and saving go through :mod:`ihstats._bayes`; the PyMC model
graph is :meth:`FrontierModel.pymc_model`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.fit_protocol import SAMPLER
from ihstats.frontier.data import FrontierData, prepare
from ihstats.frontier.glm import check_separation, fit_glm
from ihstats.frontier.results import FrontierResults
from ihstats.frontier.spec import FrontierSpec, KNOBS


@dataclass
class FrontierModel:
    """A built frontier model: cells, standardisation and the PyMC model."""

    spec: FrontierSpec
    data: FrontierData
    scale: dict = field(init=False)
    X: np.ndarray = field(init=False)
    terms: list = field(init=False)
    separation: str = field(init=False)

    @classmethod
    def from_table(cls, table: pd.DataFrame, spec: FrontierSpec | None = None) -> FrontierModel:
        """Validate ``table`` (:func:`ihstats.frontier.data.prepare`: aggregated into cells) and
        build the model."""
        spec = spec or FrontierSpec()
        return cls(spec, prepare(table, spec))

    @property
    def cells(self) -> pd.DataFrame:
        """One row per grid cell (``n_runs``, ``n_formed`` and the factors)."""
        return self.data.table

    def __post_init__(self):
        c, w = self.cells, self.cells["n_runs"].to_numpy(float)
        cols, self.scale = [], {}
        for name in list(KNOBS) + list(self.spec.covariates):
            v = c[name].to_numpy(float)
            if name in KNOBS or self.spec.log_covariates:
                v = np.log(v)  # positive: checked by prepare
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

    def fit(self, *, draws: int = SAMPLER.draws, tune: int = SAMPLER.tune, chains: int = SAMPLER.chains,
            seed: int = SAMPLER.seed, target_accept: float = SAMPLER.target_accept, cores: int = 1) -> FrontierResults:
        """Sample the posterior (NUTS) and fit the GLM cross-check."""
        model = self.pymc_model()
        idata, timings = _bayes.sample(model, draws=draws, tune=tune, chains=chains,
                                       seed=seed, target_accept=target_accept, cores=cores,
                                       log_likelihood=False, label="the frontier model")
        # the saved fit carries its prior and the posterior predictive of the formed counts
        _bayes.add_prior(model, idata, draws=draws, seed=seed)
        _bayes.posterior_predictive(model, idata, seed=seed)
        idata.posterior.attrs.update({"ihstats_model": "frontier", "separation": self.separation,
                                      **{f"version_{k}": v for k, v in _bayes.versions().items()}})
        glm = fit_glm(self.X, self.cells["n_formed"].to_numpy(), self.cells["n_runs"].to_numpy(),
                      self.terms, separation=self.separation)
        return FrontierResults(self, idata, glm, timings, sampler=dict(
            draws=draws, tune=tune, chains=chains, seed=seed, target_accept=target_accept))
