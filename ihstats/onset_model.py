"""Censored time-to-onset model: how fast induction heads form, as a function of the two knobs.

``log onset_i = a + e_f (log f_i - m_f) + e_r (log r_i - m_r) + sigma eps_i``, ``eps_i ~ N(0, 1)``
(log-normal accelerated failure time). Each run is one seed, so ``sigma`` is the seed-to-seed
scatter of log onset. A run that did not form by its budget (``formed`` False) is right-censored
at its last step: it enters through the log survival ``log P(log onset > log last_step)``. ``e_f``
and ``e_r`` are elasticities, both on the natural-log scale (unit-free, directly comparable): a
1% rise of the knob moves the onset by ``e``%. "Which knob matters more" is ``P(|e_f| > |e_r|)``,
claimed at 0.95 (:func:`ihstats.frontier.knob_verdict`).

Beside the logistic frontier (:mod:`ihstats.frontier`) this model says whether the frontier is a
line of equal onset at the budget: with onsets finite everywhere, the ``p = 0.5`` frontier is where
the median onset equals the budget (:meth:`OnsetResults.iso_onset`).

Pipeline (STYLE.md rule 5; as :mod:`ihstats.frontier`)::

    model = OnsetSpec().build(table)               # checks, log knobs, censoring
    res = model.fit(draws=1000, tune=1000, chains=2, seed=0)   # -> OnsetResults
    res.summary(); res.elasticities(); res.verdict(); res.mle; res.save("out/")
    ihstats.onset_design.resolving_designs(res)    # seeds / levels that would resolve the knob

The maximum-likelihood cross-check (:func:`ihstats.onset_design.fit_mle`) is fitted beside it.
Sampling, summaries and saving go through :mod:`ihstats._bayes`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.frontier import KNOBS, knob_verdict
from ihstats.onset_design import CensoredMLE, fit_mle
from ihstats.tables import boolean_column

P_QUANTITY = "P(|e_freq| > |e_rel|)"


def prepare_onset_data(table: pd.DataFrame) -> pd.DataFrame:
    """Validate a run table for the onset model.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per run: ``frequency``, ``reliability`` in (0, 1], ``formed`` (or ``censored``),
        ``onset`` (updates; read for formed runs) and ``last_step`` (the censoring point of runs
        that did not form), as :func:`ihstats.budget.read_at_budget` or an emergence table
        with the knobs hold them.

    Returns
    -------
    pandas.DataFrame
        The knobs, ``formed``, ``time`` (onset if formed, else last_step) and ``log_time``.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table: expected a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in (*KNOBS, "onset", "last_step") if c not in table]
    if "formed" not in table and "censored" not in table:
        missing.append("formed (or censored)")
    if missing:
        raise ValueError(f"missing columns: {missing}; have {list(table.columns)}")
    formed = boolean_column(table, "formed") if "formed" in table else ~boolean_column(table, "censored")
    df = pd.DataFrame({k: pd.to_numeric(table[k], errors="coerce") for k in KNOBS})
    df["formed"] = np.asarray(formed, bool)
    df["time"] = np.where(df["formed"], pd.to_numeric(table["onset"], errors="coerce"),
                          pd.to_numeric(table["last_step"], errors="coerce"))
    for k in KNOBS:
        if not df[k].between(0, 1, inclusive="right").all():
            raise ValueError(f"{k}: values must lie in (0, 1]; got {sorted(df[k].unique())}")
        if df[k].nunique() < 2:
            raise ValueError(f"{k}: a single level ({df[k].iloc[0]}), so its elasticity is not "
                             "identified; the design needs at least two levels of each knob")
    if not (np.isfinite(df["time"]) & (df["time"] > 0)).all():
        raise ValueError("onset / last_step: every run needs a positive time (onset of a formed run, "
                         "last_step of one that did not form)")
    if df["formed"].sum() < 3:
        raise ValueError(f"formed: only {int(df['formed'].sum())} run(s) formed; the onset model needs "
                         "at least 3 onsets")
    df["log_time"] = np.log(df["time"])
    return df.reset_index(drop=True)


@dataclass(frozen=True)
class OnsetSpec:
    """Priors of the onset model.

    Parameters
    ----------
    elasticity_sd : float
        Normal(0, sd) prior of each elasticity (5: a 10% change of a knob moving the onset by up
        to ~60% is well inside it).
    sigma_sd : float
        Half-normal prior scale of the seed scatter (log onset).
    intercept_sd : float
        Normal prior sd of the intercept around the mean log time.
    """

    elasticity_sd: float = 5.0
    sigma_sd: float = 1.5
    intercept_sd: float = 3.0

    def build(self, table: pd.DataFrame) -> "OnsetModel":
        """Validate ``table`` and build the model."""
        if min(self.elasticity_sd, self.sigma_sd, self.intercept_sd) <= 0:
            raise ValueError("elasticity_sd, sigma_sd, intercept_sd: must be > 0")
        return OnsetModel(self, prepare_onset_data(table))


@dataclass
class OnsetModel:
    """A built onset model: runs, centred log knobs, censoring."""

    spec: OnsetSpec
    runs: pd.DataFrame
    center: dict = field(init=False)
    X: np.ndarray = field(init=False)  # (n_runs, 2) centred log f, log r

    def __post_init__(self):
        self.center = {k: float(np.log(self.runs[k]).mean()) for k in KNOBS}
        self.X = np.column_stack([np.log(self.runs[k]) - self.center[k] for k in KNOBS])

    @property
    def censored(self) -> np.ndarray:
        return ~self.runs["formed"].to_numpy(bool)

    def pymc_model(self):
        import pymc as pm

        y, cen = self.runs["log_time"].to_numpy(), self.censored
        with pm.Model(coords={"knob": list(KNOBS)}) as m:
            a = pm.Normal("intercept", float(y.mean()), self.spec.intercept_sd)
            e = pm.Normal("elasticity", 0.0, self.spec.elasticity_sd, dims="knob")
            sigma = pm.HalfNormal("sigma", self.spec.sigma_sd)
            mu = a + pm.math.dot(self.X, e)
            pm.Normal("log_onset", mu=mu[~cen], sigma=sigma, observed=y[~cen])
            if cen.any():  # not formed by last_step: log P(log onset > log last_step)
                pm.Potential("censored", pm.logccdf(pm.Normal.dist(mu[cen], sigma), y[cen]).sum())
        return m

    def fit(self, *, draws: int = 1000, tune: int = 1000, chains: int = 2, seed: int = 0,
            target_accept: float = 0.9, cores: int = 1) -> "OnsetResults":
        """Sample the posterior (NUTS) and fit the maximum-likelihood cross-check."""
        idata, timings = _bayes.sample(self.pymc_model(), draws=draws, tune=tune, chains=chains,
                                       seed=seed, target_accept=target_accept, cores=cores,
                                       log_likelihood=False)
        idata.posterior.attrs.update({"ihstats_model": "onset",
                                      **{f"version_{k}": v for k, v in _bayes.versions().items()}})
        mle = fit_mle(self.X, self.runs["log_time"].to_numpy(), self.censored)
        return OnsetResults(self, idata, mle, timings, sampler=dict(
            draws=draws, tune=tune, chains=chains, seed=seed, target_accept=target_accept))


@dataclass
class OnsetResults:
    """Posterior of the onset model with its maximum-likelihood cross-check (``mle``)."""

    model: OnsetModel
    idata: object
    mle: CensoredMLE
    timings: dict
    sampler: dict = field(default_factory=dict)

    def draws(self) -> dict:
        """Flattened posterior draws: ``intercept``, ``e_freq``, ``e_rel``, ``sigma``."""
        post = self.idata.posterior
        e = post["elasticity"].values.reshape(-1, len(KNOBS))
        return {"intercept": _bayes.posterior_draws(self.idata, "intercept"), "e_freq": e[:, 0],
                "e_rel": e[:, 1], "sigma": _bayes.posterior_draws(self.idata, "sigma")}

    def summary(self, hdi_prob: float = 0.9) -> pd.DataFrame:
        """Tidy posterior summary (``term``: intercept, e_freq, e_rel, sigma)."""
        s = _bayes.summary(self.idata, ["intercept", "elasticity", "sigma"], hdi_prob=hdi_prob)
        s.insert(0, "term", ["intercept", "e_freq", "e_rel", "sigma"])
        s["hdi_prob"] = hdi_prob
        return s.reset_index(drop=True)

    def diagnostics(self, *, rhat_max: float = 1.01, ess_min: float = 400) -> list[str]:
        """Sampler warnings (divergences, r_hat, ESS); empty when all checks pass."""
        return _bayes.sampler_warnings(self.idata, self.summary().set_index("term"),
                                       target_accept=self.sampler.get("target_accept", np.nan),
                                       rhat_max=rhat_max, ess_min=ess_min)

    def p_freq_larger(self) -> float:
        """Posterior probability that frequency has the larger elasticity (in absolute value)."""
        d = self.draws()
        return float(np.mean(np.abs(d["e_freq"]) > np.abs(d["e_rel"])))

    def verdict(self) -> str:
        """Which knob moves the onset more, claimed only at posterior probability >= 0.95."""
        return knob_verdict(self.p_freq_larger(), quantity=P_QUANTITY)

    def elasticities(self, hdi_prob: float = 0.9) -> pd.DataFrame:
        """Both elasticities: posterior median, HDI, the MLE and its standard error."""
        d, rows = self.draws(), []
        for i, k in enumerate(("e_freq", "e_rel")):
            lo, hi = _bayes.hdi(d[k], hdi_prob=hdi_prob)
            rows.append({"term": k, "median": float(np.median(d[k])), "lo": lo, "hi": hi,
                         "mle": float(self.mle.params[1 + i]), "mle_se": float(self.mle.se[1 + i]),
                         "hdi_prob": hdi_prob})
        return pd.DataFrame(rows)

    def iso_onset(self, budget: float, frequencies) -> pd.DataFrame:
        """Reliability at which the posterior-median onset equals ``budget``, per frequency: the
        frontier this model draws at that budget (NaN where it leaves (0, 1])."""
        d = self.draws()
        lf = np.log(np.asarray(frequencies, float))[:, None] - self.model.center["frequency"]
        with np.errstate(divide="ignore", invalid="ignore"):
            zr = (np.log(budget) - d["intercept"] - d["e_freq"] * lf) / d["e_rel"]
        r = np.exp(np.median(zr, axis=1) + self.model.center["reliability"])
        return pd.DataFrame({"frequency": np.asarray(frequencies, float),
                             "reliability": np.where((r > 0) & (r <= 1), r, np.nan), "budget": budget})

    def save(self, out_dir, tables: dict | None = None) -> dict:
        """Write the fit's folder (:func:`ihstats._bayes.save_fit`): ``idata.nc``, ``summary.csv``,
        ``fit.json``, ``elasticities.csv``, ``runs.csv`` and any extra ``tables``."""
        record = {"model": "log onset = a + e_f (log f - m_f) + e_r (log r - m_r) + sigma eps, "
                           "right-censored at last_step",
                  "spec": asdict(self.model.spec), "sampler": self.sampler, "timings_s": self.timings,
                  "diagnostics": self.diagnostics(), "center": self.model.center,
                  "p_freq_larger": self.p_freq_larger(), "verdict": self.verdict(),
                  "n_runs": len(self.model.runs), "n_censored": int(self.model.censored.sum()),
                  "versions": _bayes.versions()}
        return _bayes.save_fit(out_dir, self.idata, self.summary(), record,
                               {"elasticities": self.elasticities(), "runs": self.model.runs, **(tables or {})})
