"""The frontier's frequentist cross-check: a binomial GLM that survives separation.

:func:`fit_glm` fits ``logit p(formed)`` by maximum likelihood (statsmodels) after
:func:`check_separation` has looked for (quasi-)complete separation with a linear program; when the
data are separated, or the MLE blows up without the LP seeing it, it falls back to Firth's
penalised likelihood (:func:`_firth`), which stays finite, and says so in its result. Used by
:mod:`ihstats.frontier`, which compares its contour with the Bayesian one.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import linprog


def check_separation(X: np.ndarray, n_formed: np.ndarray, n_runs: np.ndarray) -> str:
    """Classify a binomial design as ``"none"``, ``"quasi"`` or ``"complete"`` separation.

    Linear programs after Konis (2007): expand cells into +/- rows (sign ``s_i``); the data are
    separated when some direction ``w`` has ``s_i x_i.w >= 0`` for all rows with a positive sum
    (quasi), or ``>= t > 0`` for all rows (complete). Cells holding both outcomes force
    ``x_i.w = 0``, so mixed data are never separated.
    """
    rows = np.concatenate([X[n_formed > 0], -X[(n_runs - n_formed) > 0]])
    n, p = rows.shape
    bounds = [(-1, 1)] * p
    # quasi: maximise sum_i s_i x_i.w subject to s_i x_i.w >= 0
    quasi = linprog(-rows.sum(0), A_ub=-rows, b_ub=np.zeros(n), bounds=bounds, method="highs")
    if not quasi.success or -quasi.fun <= 1e-7:
        return "none"
    # complete: maximise t subject to s_i x_i.w >= t
    c = np.r_[np.zeros(p), -1.0]
    A = np.c_[-rows, np.ones(n)]
    comp = linprog(c, A_ub=A, b_ub=np.zeros(n), bounds=bounds + [(None, 1)], method="highs")
    return "complete" if comp.success and -comp.fun > 1e-7 else "quasi"


#: Each separation status in plain words (reports, the CLI and the figure title say these).
SEPARATION_WORDS = {
    "none": "none: formed and not-formed runs overlap, so the maximum-likelihood fit exists",
    "quasi": ("partial: a straight line in the (log f, log r) plane puts every formed run on one side "
              "and every not-formed run on the other, with some cells on the line; the maximum-likelihood "
              "slopes run off to infinity, so the posterior is held finite by its prior and the GLM "
              "cross-check uses Firth's penalty"),
    "complete": ("complete: a straight line in the (log f, log r) plane splits formed from not-formed runs "
                 "exactly; the maximum-likelihood slopes run off to infinity, so the posterior is held "
                 "finite by its prior and the GLM cross-check uses Firth's penalty"),
    "numerical": ("numerical: the maximum-likelihood fit diverged although no separating line was found; "
                  "the GLM cross-check uses Firth's penalty"),
}
#: The same, in a few words for a figure title.
SEPARATION_SHORT = {"quasi": "formed / not formed split by a line (touching some cells): slopes set by the prior",
                    "complete": "formed / not formed split exactly by a line: slopes set by the prior",
                    "numerical": "maximum likelihood diverged: slopes set by the prior"}


@dataclass
class GLMFrontier:
    """Maximum-likelihood (or Firth-penalised, when separated) logistic fit.

    Attributes
    ----------
    params, bse : ndarray
        Coefficients on the standardised scale (``b0, bf, br[, bfr, covariates]``), std errors.
    method : str
        ``"mle"`` or ``"firth"``.
    separation : str
        ``"none"``, ``"quasi"`` or ``"complete"`` (from :func:`check_separation`, or ``"numerical"``
        when the MLE blew up without the LP seeing it).
    """

    terms: list
    params: np.ndarray
    bse: np.ndarray
    method: str
    separation: str
    converged: bool

    def table(self) -> pd.DataFrame:
        return pd.DataFrame({"term": self.terms, "estimate": self.params, "se": self.bse,
                             "method": self.method, "separation": self.separation})


def _firth(X, y, n, max_iter: int = 100, tol: float = 1e-8):
    """Firth's bias-reduced binomial logistic regression (finite under separation)."""
    beta = np.zeros(X.shape[1])

    def penalised(b):
        p = 1 / (1 + np.exp(-(X @ b)))
        p = np.clip(p, 1e-12, 1 - 1e-12)
        info = X.T @ (X * (n * p * (1 - p))[:, None])
        ll = np.sum(y * np.log(p) + (n - y) * np.log1p(-p))
        return ll + 0.5 * np.linalg.slogdet(info)[1], p, info

    cur, p, info = penalised(beta)
    converged = False
    for _ in range(max_iter):
        inv = np.linalg.inv(info)
        w = n * p * (1 - p)
        h = w * np.einsum("ij,jk,ik->i", X, inv, X)           # hat-matrix diagonal
        step = inv @ (X.T @ (y - n * p + h * (0.5 - p)))
        t = 1.0
        while t > 1e-6:                                        # step halving on the penalised ll
            new, p_new, info_new = penalised(beta + t * step)
            if new >= cur - 1e-12:
                break
            t /= 2
        beta, cur, p, info = beta + t * step, new, p_new, info_new
        if np.max(np.abs(t * step)) < tol:
            converged = True
            break
    return beta, np.sqrt(np.diag(np.linalg.inv(info))), converged


def fit_glm(X: np.ndarray, n_formed: np.ndarray, n_runs: np.ndarray, terms, separation=None,
            max_abs_coef: float = 15.0) -> GLMFrontier:
    """statsmodels binomial GLM with an explicit separation check and a Firth fallback.

    Parameters
    ----------
    X : ndarray, shape (n_cells, n_terms)
        Design with an intercept column first.
    n_formed, n_runs : ndarray, shape (n_cells,)
        Successes and trials per cell.
    terms : list of str
        Names of the columns of ``X``.
    separation : str, optional
        Result of :func:`check_separation` if already known.
    max_abs_coef : float
        A standardised coefficient larger than this is treated as a numerical blow-up.

    Returns
    -------
    GLMFrontier
    """
    # statsmodels takes seconds to import: only a fit pays it, not `fit_frontier.py --help`
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

    sep = separation or check_separation(X, n_formed, n_runs)
    if sep == "none":
        endog = np.column_stack([n_formed, n_runs - n_formed])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", PerfectSeparationWarning)
                res = sm.GLM(endog, X, family=sm.families.Binomial()).fit()
            params, bse = np.asarray(res.params), np.asarray(res.bse)
            if np.all(np.isfinite(params)) and np.max(np.abs(params)) < max_abs_coef:
                return GLMFrontier(list(terms), params, bse, "mle", "none", bool(res.converged))
        except (PerfectSeparationError, PerfectSeparationWarning, np.linalg.LinAlgError):
            pass
        sep = "numerical"
    params, bse, conv = _firth(X, n_formed.astype(float), n_runs.astype(float))
    return GLMFrontier(list(terms), params, bse, "firth", sep, conv)
