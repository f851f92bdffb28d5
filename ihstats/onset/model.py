"""Censored time-to-onset model: how fast induction heads form, as a function of the two knobs.

``log onset_i = a + e_f (log f_i - m_f) + e_r (log r_i - m_r) + sigma eps_i``, ``eps_i ~ N(0, 1)``
(log-normal accelerated failure time). Each run is one seed, so ``sigma`` is the seed-to-seed
scatter of log onset. A run that did not form by its budget (``formed`` False) is right-censored
at its last step: it enters through the log survival ``log P(log onset > log last_step)``. ``e_f``
and ``e_r`` are elasticities, both on the natural-log scale (unit-free, directly comparable): a
1% rise of the knob moves the onset by ``e``%. "Which knob matters more" is ``P(|e_f| > |e_r|)``,
claimed at 0.95 (:func:`ihstats.knobs.knob_verdict`).

Beside the logistic frontier (:mod:`ihstats.frontier`) this model says whether the frontier is a
line of equal onset at the budget: with onsets finite everywhere, the ``p = 0.5`` frontier is where
the median onset equals the budget (:meth:`OnsetResults.iso_onset`).

Pipeline (STYLE.md rule 5; as :mod:`ihstats.frontier.model`)::

    model = OnsetModel.from_table(table, OnsetSpec())   # checks, log knobs, censoring
    res = model.fit(draws=1000, tune=1000, chains=4, seed=0)   # -> OnsetResults
    res.summary(); res.elasticities(); res.verdict(); res.mle; res.save("out/")
    ihstats.onset.design.resolving_designs(res)    # seeds / levels that would resolve the knob

The maximum-likelihood cross-check (:func:`ihstats.onset.mle.fit_mle`) is fitted beside it.
Sampling, summaries and saving go through :mod:`ihstats._bayes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.fit_protocol import SAMPLER
from ihstats.knobs import KNOBS
from ihstats.onset.data import OnsetData, prepare
from ihstats.onset.mle import fit_mle
from ihstats.onset.results import OnsetResults
from ihstats.onset.spec import OnsetSpec


@dataclass
class OnsetModel:
    """A built onset model: runs, centred log knobs, censoring."""

    spec: OnsetSpec
    data: OnsetData
    center: dict = field(init=False)
    X: np.ndarray = field(init=False)  # (n_runs, 2) centred log f, log r

    @classmethod
    def from_table(cls, table: pd.DataFrame, spec: OnsetSpec | None = None) -> OnsetModel:
        """Validate ``table`` (:func:`ihstats.onset.data.prepare`) and build the model."""
        spec = spec or OnsetSpec()
        return cls(spec, prepare(table, spec))

    @property
    def runs(self) -> pd.DataFrame:
        """One row per run: the knobs, ``formed``, ``time`` and ``log_time``."""
        return self.data.table

    def __post_init__(self):
        self.center = {k: float(np.log(self.runs[k]).mean()) for k in KNOBS}
        self.X = np.column_stack([np.log(self.runs[k]) - self.center[k] for k in KNOBS])

    @property
    def censored(self) -> np.ndarray:
        return ~self.runs["formed"].to_numpy(bool)

    def pymc_model(self, X: np.ndarray | None = None, terms: tuple[str, ...] = KNOBS):
        """The PyMC model on the centred log knobs ``X`` (default: both, one elasticity each;
        :mod:`ihstats.onset.product` passes their sum, one elasticity on log f r)."""
        import pymc as pm

        X = self.X if X is None else X
        y, cen = self.runs["log_time"].to_numpy(), self.censored
        with pm.Model(coords={"knob": list(terms)}) as m:
            a = pm.Normal("intercept", float(y.mean()), self.spec.intercept_sd)
            e = pm.Normal("elasticity", 0.0, self.spec.elasticity_sd, dims="knob")
            sigma = pm.HalfNormal("sigma", self.spec.sigma_sd)
            mu = a + pm.math.dot(X, e)
            pm.Normal("log_onset", mu=mu[~cen], sigma=sigma, observed=y[~cen])
            if cen.any():  # not formed by last_step: log P(log onset > log last_step)
                pm.Potential("censored", pm.logccdf(pm.Normal.dist(mu[cen], sigma), y[cen]).sum())
        return m

    def fit(self, *, draws: int = SAMPLER.draws, tune: int = SAMPLER.tune, chains: int = SAMPLER.chains,
            seed: int = SAMPLER.seed, target_accept: float = SAMPLER.target_accept, cores: int = 1) -> OnsetResults:
        """Sample the posterior (NUTS) and fit the maximum-likelihood cross-check."""
        model = self.pymc_model()
        idata, timings = _bayes.sample(model, draws=draws, tune=tune, chains=chains,
                                       seed=seed, target_accept=target_accept, cores=cores,
                                       log_likelihood=False, label="the onset model")
        _bayes.add_prior(model, idata, draws=draws, seed=seed)  # saved with the fit (censored: no PPC)
        idata.posterior.attrs.update({"ihstats_model": "onset",
                                      **{f"version_{k}": v for k, v in _bayes.versions().items()}})
        mle = fit_mle(self.X, self.runs["log_time"].to_numpy(), self.censored)
        return OnsetResults(self, idata, mle, timings, sampler=dict(
            draws=draws, tune=tune, chains=chains, seed=seed, target_accept=target_accept))
