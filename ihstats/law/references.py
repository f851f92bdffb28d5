"""The seed papers' forms as reference lines, scored like for like with the fitted power law (issue 66).

Each line is fitted by maximum likelihood on the law's own data (:class:`ihstats.law.data.LawData`:
log onsets, censoring at log last_step, each run's measurement sd), Gaussian scatter ``sigma`` free,
with only the parameters the reference leaves open:

- ``free power``: ``log UPT = log T - a log B - b log C`` with log T, a, b free (the law's line);
- ``Aoyama exponents``: a 0.37, b 0.62, log T free; ``Aoyama as published``: ln T 13.26 too;
- ``tokens T sqrt(B C)``: tokens to emergence ``T sqrt(B C)``, i.e. ``UPT = T / sqrt(B C)``
  (a = b = 0.5), T free; ``tokens, T 10^5.7``: T fixed at the paper's order.

The table reports the maximised log-likelihood and its difference to the free power line *apart*
from the parameter penalty (the number of free line parameters and AIC's ``2 k``), so a form that
wins on a penalty is not read as a better fit. Torch-free (scipy).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import optimize, stats

from ihstats.law.data import LawData
from ihstats.law.spec import PUBLISHED

LN10 = float(np.log(10.0))
#: name -> fixed parameters (absent: fitted); every line has the form log T - a log B - b log C
REFERENCES = {
    "free power": {},
    "Aoyama exponents (a 0.37, b 0.62)": {"a": PUBLISHED["a"], "b": PUBLISHED["b"]},
    "Aoyama as published (ln T 13.26)": {"a": PUBLISHED["a"], "b": PUBLISHED["b"], "log_T": PUBLISHED["log_T"]},
    "tokens T sqrt(B C)": {"a": 0.5, "b": 0.5},
    "tokens, T 10^5.7": {"a": 0.5, "b": 0.5, "log_T": 5.7 * LN10},
}
LINE = ("log_T", "a", "b")


def _loglik(data: LawData, p: dict, sigma: float) -> float:
    mu = p["log_T"] - p["a"] * data.logs["B"] - p["b"] * data.logs["C"]
    scale = np.sqrt(sigma ** 2 + data.me_sd ** 2)
    obs, cen = ~data.censored, data.censored
    return float(stats.norm.logpdf(data.y[obs], mu[obs], scale[obs]).sum()
                 + stats.norm.logsf(data.upper[cen], mu[cen], scale[cen]).sum())


def fit_reference(data: LawData, fixed: dict) -> dict:
    """Maximum-likelihood fit of one reference line (``fixed``: the parameters it sets): the line's
    parameters, ``sigma``, ``max_loglik`` and ``n_free`` (free line parameters)."""
    free = [k for k in LINE if k not in fixed]
    y_obs = data.y[~data.censored]
    start = {"log_T": float(np.mean(y_obs + 0.5 * data.logs["B"][~data.censored] + 0.5 * data.logs["C"][~data.censored])),
             "a": 0.5, "b": 0.5}

    def unpack(v):
        return {**fixed, **dict(zip(free, v[:-1]))}, float(np.exp(v[-1]))

    def nll(v):
        p, sigma = unpack(v)
        return -_loglik(data, p, sigma)

    v0 = np.array([start[k] for k in free] + [np.log(max(np.std(y_obs), 0.05))])
    sol = optimize.minimize(nll, v0, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-8, "maxiter": 4000})
    p, sigma = unpack(sol.x)
    return {**p, "sigma": sigma, "max_loglik": -float(sol.fun), "n_free": len(free)}


def reference_table(data: LawData) -> pd.DataFrame:
    """Every :data:`REFERENCES` line fitted (:func:`fit_reference`), with ``loglik_diff`` (its maximised
    log-likelihood minus the free power line's: the fit) and ``penalty_diff`` (AIC's ``2 k`` minus the
    free line's: the penalty) in their own columns, and ``aic_diff`` = ``-2 loglik_diff + penalty_diff``."""
    rows = [{"form": name, **fit_reference(data, fixed)} for name, fixed in REFERENCES.items()]
    t = pd.DataFrame(rows).set_index("form")
    ref = t.loc["free power"]
    t["loglik_diff"] = t["max_loglik"] - ref["max_loglik"]
    t["penalty_diff"] = 2 * (t["n_free"] - ref["n_free"])
    t["aic_diff"] = -2 * t["loglik_diff"] + t["penalty_diff"]
    return t
