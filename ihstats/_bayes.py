"""Thin wrappers around every PyMC / ArviZ call used by ihstats.

PyMC 6 and ArviZ 1 change defaults (ArviZ 1: 89% ETI intervals, DataTree instead of
InferenceData). Every call that may change lives here, takes its interval width explicitly and
returns plain numpy / pandas objects where it can, so a port stays local to this file.
Generic: nothing here knows about a particular model.
"""

from __future__ import annotations

import logging
import platform
import time
from contextlib import contextmanager

import numpy as np
import pandas as pd


@contextmanager
def quiet_pymc():
    """Silence PyMC's per-run INFO chatter (sampler names, timings); warnings still pass."""
    logger = logging.getLogger("pymc")
    old = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(old)


def sample(model, *, draws: int, tune: int, chains: int, seed: int, target_accept: float = 0.9,
           cores: int = 1, log_likelihood: bool = True, progressbar: bool = False):
    """NUTS with PyMC's default sampler; returns ``(idata, timings)``.

    ``cores=1`` by default: chains run sequentially in one process, which on small models is
    faster than spawning workers (and fair on shared machines). ``timings`` holds the
    compile+sample wall seconds and PyMC's own sampling time so callers can check that the
    pytensor compile is not dominating.
    """
    import pymc as pm

    t0 = time.perf_counter()
    with model, quiet_pymc():
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed,
                          target_accept=target_accept, progressbar=progressbar,
                          compute_convergence_checks=False)
        t1 = time.perf_counter()
        if log_likelihood:
            pm.compute_log_likelihood(idata, model=model, progressbar=False)
    t2 = time.perf_counter()
    sampling = float(idata.posterior.attrs.get("sampling_time", np.nan))
    return idata, {"sample_call_s": t1 - t0, "sampling_s": sampling,
                   "compile_overhead_s": (t1 - t0) - sampling, "log_likelihood_s": t2 - t1}


def posterior_predictive(model, idata, *, seed: int):
    """Add the ``posterior_predictive`` group to ``idata`` (in place) and return it."""
    import pymc as pm

    with model, quiet_pymc():
        pm.sample_posterior_predictive(idata, random_seed=seed, extend_inferencedata=True,
                                       progressbar=False)
    return idata


def add_group(idata, group: str, data_vars: dict, *, coords: dict | None = None,
              sample_dims: bool = True):
    """Add (or replace) a group of ``idata`` from ``{name: (dims, array)}`` with the posterior's
    chain/draw coordinates; used for quantities computed outside PyMC (log-likelihood, PPC)."""
    import xarray as xr

    post = idata.posterior
    base = {"chain": post["chain"].values, "draw": post["draw"].values} if sample_dims else {}
    ds = xr.Dataset(data_vars, coords={**base, **(coords or {})})
    if group in idata.groups():
        delattr(idata, group)
        idata._groups = [g for g in idata._groups if g != group]
    idata.add_groups({group: ds})
    return idata


def student_t_logsf(z, nu):
    """``log P(T > z)`` of a standard Student-t with ``nu`` dof, as a pytensor expression.

    Same value as ``pm.logccdf(pm.StudentT.dist(nu), z)``, but PyMC's version differentiates the
    regularized incomplete beta symbolically in ``nu``, which builds a graph that takes tens of
    seconds to construct and compile. Here the value comes from scipy, ``d/dz`` is the exact
    ``-pdf/sf`` and ``d/dnu`` a central finite difference (relative step 1e-4; smooth in nu).
    ``z``: vector; ``nu``: scalar.
    """
    import pytensor.tensor as pt

    return _StudentTLogSF()(pt.as_tensor_variable(z, dtype="float64"),
                            pt.as_tensor_variable(nu, dtype="float64"))


def _t_logsf_np(z, nu):
    # scipy.special.stdtr directly: scipy.stats.t.logsf costs ~1 ms per call in argument
    # checking, which dominated sampling. Tails beyond ~1e-300 are floored (a censored run
    # that far below its prediction is a data error, not a tail to resolve).
    from scipy import special

    return np.log(np.maximum(special.stdtr(nu, -np.asarray(z, dtype=np.float64)), 1e-300))


def _make_ops():
    import pytensor.tensor as pt
    from pytensor.gradient import grad_not_implemented
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from scipy.special import gammaln

    class StudentTLogSFdNu(Op):
        __props__ = ()

        def make_node(self, z, nu):
            return Apply(self, [z, nu], [z.type()])

        def perform(self, node, inputs, outputs):
            z, nu = inputs
            h = 1e-4 * float(nu)
            outputs[0][0] = (_t_logsf_np(z, nu + h) - _t_logsf_np(z, nu - h)) / (2 * h)

        def grad(self, inputs, g):
            return [grad_not_implemented(self, i, inputs[i]) for i in range(2)]

    class StudentTLogSF(Op):
        __props__ = ()

        def make_node(self, z, nu):
            return Apply(self, [z, nu], [z.type()])

        def perform(self, node, inputs, outputs):
            z, nu = inputs
            outputs[0][0] = _t_logsf_np(z, nu)

        def grad(self, inputs, g):
            z, nu = inputs
            logpdf = (pt.gammaln((nu + 1) / 2) - pt.gammaln(nu / 2) - 0.5 * pt.log(nu * np.pi)
                      - (nu + 1) / 2 * pt.log1p(z**2 / nu))
            dz = -pt.exp(logpdf - self(z, nu))
            return [g[0] * dz, pt.sum(g[0] * StudentTLogSFdNu()(z, nu))]

    del gammaln
    return StudentTLogSF


_OPS = {}


def _StudentTLogSF():
    if "t" not in _OPS:
        _OPS["t"] = _make_ops()
    return _OPS["t"]()


def summary(idata, var_names, *, hdi_prob: float) -> pd.DataFrame:
    """ArviZ summary with an explicit HDI width; columns renamed to ``hdi_lo``/``hdi_hi``."""
    import arviz as az

    s = az.summary(idata, var_names=list(var_names), hdi_prob=hdi_prob, kind="all",
                   round_to="none")
    lo, hi = [c for c in s.columns if c.startswith("hdi_")]
    return s.rename(columns={lo: "hdi_lo", hi: "hdi_hi"})[
        ["mean", "sd", "hdi_lo", "hdi_hi", "r_hat", "ess_bulk", "ess_tail", "mcse_mean"]]


def hdi(x: np.ndarray, *, hdi_prob: float) -> tuple[float, float]:
    """Highest-density interval of a 1-D sample at an explicit width."""
    import arviz as az

    lo, hi = az.hdi(np.asarray(x, dtype=float).ravel(), hdi_prob=hdi_prob)
    return float(lo), float(hi)


def divergences(idata) -> int:
    """Number of divergent transitions after tuning (0 when the sampler recorded none)."""
    ss = getattr(idata, "sample_stats", None)
    if ss is None or "diverging" not in ss:
        return 0
    return int(ss["diverging"].values.sum())


def loo(idata, *, var_name: str | None = None):
    """PSIS-LOO with pointwise values (ArviZ ``ELPDData``)."""
    import arviz as az

    return az.loo(idata, var_name=var_name, pointwise=True)


def loo_table(elpd) -> pd.DataFrame:
    """One-row frame from an ``ELPDData``: elpd_loo, se, p_loo, Pareto-k counts."""
    k = np.asarray(elpd.pareto_k)
    return pd.DataFrame([{
        "elpd_loo": float(elpd.elpd_loo), "se": float(elpd.se), "p_loo": float(elpd.p_loo),
        "n_obs": int(k.size), "pareto_k_gt_0.7": int((k > 0.7).sum()),
    }])


def compare(idatas: dict, *, var_name: str | None = None) -> pd.DataFrame:
    """LOO comparison (``az.compare``) of named fits; best model first."""
    import arviz as az

    return az.compare(idatas, ic="loo", var_name=var_name)


def to_netcdf(idata, path) -> str:
    """Write InferenceData to netCDF; returns the path."""
    idata.to_netcdf(str(path))
    return str(path)


def from_netcdf(path):
    """Read InferenceData from netCDF."""
    import arviz as az

    return az.from_netcdf(str(path))


def posterior_draws(idata, name: str) -> np.ndarray:
    """Flattened (chain * draw,) posterior draws of a scalar variable."""
    return np.asarray(idata.posterior[name].values, dtype=float).reshape(-1)


def thin_posterior(idata, n_draws: int, *, seed: int = 0):
    """A new InferenceData with only the posterior group, ``n_draws`` draws picked at random
    (one chain), attributes kept: small enough to ship."""
    import arviz as az

    post = idata.posterior.stack(sample=("chain", "draw"))
    rng = np.random.default_rng(seed)
    n = post.sizes["sample"]
    idx = np.sort(rng.choice(n, size=min(n_draws, n), replace=False))
    sub = post.isel(sample=idx).drop_vars(["sample", "chain", "draw"])
    sub = sub.rename({"sample": "draw"}).expand_dims("chain").transpose("chain", "draw", ...)
    new = az.InferenceData(posterior=sub)
    new.posterior.attrs.update(idata.posterior.attrs)
    return new


def versions() -> dict:
    """Versions of the Python stack, stamped into saved results and reports."""
    import arviz
    import pymc
    import pytensor
    import scipy
    import statsmodels

    import ihstats

    return {"python": platform.python_version(), "ihstats": ihstats.__version__,
            "pymc": pymc.__version__, "pytensor": pytensor.__version__,
            "arviz": arviz.__version__, "numpy": np.__version__, "pandas": pd.__version__,
            "scipy": scipy.__version__, "statsmodels": statsmodels.__version__}
