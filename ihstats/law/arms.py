"""The C exponent per arm at one B (issue 53's mechanism experiment): one model over all arms.

    log UPT_i = alpha_arm - b_arm (log C_i - log C_ref) + e_i,
    e_i ~ Student-t(nu, 0, sqrt(sigma^2 + me_i^2))   (or Normal)

with ``me_i`` the onset's own interval width (``(log hi - log lo) / 3.29``, a 90% interval),
priors ``b ~ N(0, 1)``, ``alpha ~ N(mean log UPT, 2)``, ``sigma ~ HalfNormal(1)``,
``nu ~ Gamma(2, 0.1)``; censored runs contribute their survival at ``log last_step`` (as
:mod:`ihstats.law.model`). The law's own model needs B to vary; this one holds B fixed and gives
each arm its own line. Sampled through :func:`ihstats._bayes.sample` like every fit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.fit_protocol import SAMPLER
from ihstats.law.model import student_t_logsf

REFERENCE = "fixed"  # the arm the others are compared with
Z90 = 3.29  # width of a 90% normal interval in sds


def _arrays(table: pd.DataFrame) -> dict:
    """Log onsets (censored at the last step), measurement sds and centred log C of ``table``."""
    cens = table["censored"].astype(bool).to_numpy()
    y = np.log(np.where(cens, table["last_step"], table["onset"]).astype(float))
    lo, hi = (pd.to_numeric(table[c], errors="coerce").to_numpy(dtype=float) for c in ("onset_lo", "onset_hi"))
    with np.errstate(divide="ignore", invalid="ignore"):  # runs without an interval: no measurement error
        me = np.where(~cens & (lo > 0) & (hi > lo), (np.log(hi) - np.log(lo)) / Z90, 0.0)
    logC = np.log(table["C"].to_numpy(dtype=float))
    return {"y": y, "me": me, "x": logC - np.log(np.exp(logC).mean()), "cens": cens}


def arm_model(table: pd.DataFrame, arms: list[str], likelihood: str = "student_t"):
    """The ``pm.Model`` of the module docstring for ``table`` (``arm, C, onset, onset_lo, onset_hi,
    censored, last_step``; one row per run and arm)."""
    import pymc as pm  # seconds to import: only the fit needs it
    import pytensor.tensor as pt

    a = _arrays(table)
    idx = table["arm"].map({arm: i for i, arm in enumerate(arms)}).to_numpy()
    obs, cen = np.flatnonzero(~a["cens"]), np.flatnonzero(a["cens"])
    with pm.Model(coords={"arm": arms}) as model:
        alpha = pm.Normal("alpha", mu=float(a["y"][obs].mean()), sigma=2.0, dims="arm")
        b = pm.Normal("b", mu=0.0, sigma=1.0, dims="arm")
        sigma = pm.HalfNormal("sigma", sigma=1.0)
        mu = alpha[idx] - b[idx] * a["x"]
        scale = pt.sqrt(sigma**2 + a["me"] ** 2)
        z_cen = (a["y"][cen] - mu[cen]) / scale[cen]
        if likelihood == "student_t":
            nu = pm.Gamma("nu", alpha=2.0, beta=0.1)
            pm.StudentT("log_upt", nu=nu, mu=mu[obs], sigma=scale[obs], observed=a["y"][obs])
            if cen.size:
                pm.Potential("log_upt_censored", student_t_logsf(z_cen, nu))
        else:
            pm.Normal("log_upt", mu=mu[obs], sigma=scale[obs], observed=a["y"][obs])
            if cen.size:
                pm.Potential("log_upt_censored", pm.logccdf(pm.Normal.dist(), z_cen))
    return model


def fit_arms(table: pd.DataFrame, *, likelihood: str = "student_t", draws: int = SAMPLER.draws,
             tune: int = SAMPLER.tune, chains: int = SAMPLER.chains, seed: int = SAMPLER.seed,
             target_accept: float = SAMPLER.target_accept) -> tuple[dict[str, np.ndarray], int]:
    """Posterior draws of ``b`` per arm (arm -> (n_draws,) array) and the number of divergences."""
    arms = sorted(table["arm"].unique(), key=lambda arm: (arm != REFERENCE, arm))
    idata, _ = _bayes.sample(arm_model(table, arms, likelihood), draws=draws, tune=tune, chains=chains,
                             seed=seed, target_accept=target_accept, log_likelihood=False,
                             label="the C exponent per arm")
    post = idata.posterior["b"]
    div = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else 0
    return {arm: post.sel(arm=arm).to_numpy().ravel() for arm in arms}, div
