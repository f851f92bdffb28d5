"""Every PyMC / ArviZ call of ihstats (ArviZ's plots: ihstats.figures.posterior), and the one layout of a saved fit.

Two stacks are supported: PyMC 5 / ArviZ 0.2x (Python 3.11) and PyMC 6 / ArviZ 1 (Python >=
3.12; 89% ETI intervals by default, ``xarray.DataTree`` instead of ``InferenceData``). Every call
that may differ lives here or in :mod:`ihstats.base._bayes_compat` (which holds each difference), takes
its interval width explicitly and returns plain numpy / pandas objects where it can. Beyond
one-line wrappers it holds what the fits (``ihstats.law``, ``ihstats.frontier``, ``ihstats.onset``) share:
adding a group computed outside PyMC to an ``InferenceData``, thinning a posterior for shipping,
the sampler checks behind ``diagnostics()``, and ``save_fit`` / ``load_fit``, which write and
read a fit's folder under the same file names for every model (``FIT_FILES``; older names in
``OLD_FIT_FILES`` still load). Nothing here knows about a particular model.

pymc, pytensor and arviz are imported inside the functions that use them: importing them costs
seconds, and CLIs that only read tables or print a prediction should not pay it.
"""

from __future__ import annotations

import json
import logging
import platform
import shutil
import sys
import time
import warnings
from importlib import metadata
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

import ihstats
from ihstats.base import _bayes_compat as compat
from ihstats.base import progress
from ihstats.fit_protocol import SAMPLER
from ihstats.base.display import CSV_FLOAT_FORMAT
from ihstats.base.fileio import atomic_write, atomic_write_csv, atomic_write_text

#: What ``save_fit`` writes, for every model: the InferenceData, the ``summary()`` table and a JSON
#: record of the fit (spec, sampler settings, timings, ``diagnostics()``, versions, model extras).
FIT_FILES = {"idata": "idata.nc", "summary": "summary.csv", "fit": "fit.json"}
#: Names written before one layout was shared (UPT law: ``upt_law.nc``, ``upt_law_summary.json``;
#: frontier: ``spec.json``): ``load_fit`` falls back to them so earlier outputs keep loading.
OLD_FIT_FILES = {"idata": ("upt_law.nc",), "fit": ("upt_law_summary.json", "spec.json")}

# PyTensor's "Using NumPy C-API based implementation for BLAS functions" is logged at import on
# every machine without a linked BLAS: it says nothing about a fit, and printed before every one
logging.getLogger("pytensor.tensor.blas").setLevel(logging.ERROR)
# ... and "PyTensor could not link to a BLAS installation" is a UserWarning on every fit of a pip
# install (the fits are small: they run as well without it); filtered here, for every entry point
warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS installation", category=UserWarning)
# ArviZ 0.2x announces its 1.0 split on import, as a multi-line FutureWarning on every fit's console;
# ihstats/base/_bayes_compat.py already handles both stacks, so the notice tells a user nothing to do
warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor", category=FutureWarning)


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


#: terminal columns PyMC's per-chain statistics (divergences, step size, gradient evaluations) need
#: beside the bar; on a narrower terminal or in a log file rich cuts its headers ("Progre...")
PYMC_STATS_COLUMNS = 120


def progress_style(show: bool) -> bool | str:
    """PyMC's ``progressbar`` value: the bar with the sampler's statistics where the terminal is wide
    enough to hold their headers, else the bar alone (progress, draws, speed, times: fits 80 columns)."""
    if not show:
        return False
    wide = sys.stderr.isatty() and shutil.get_terminal_size((80, 24)).columns >= PYMC_STATS_COLUMNS
    return "split+stats" if wide else "split"


def sample(model, *, draws: int, tune: int, chains: int, seed: int, target_accept: float = SAMPLER.target_accept,
           cores: int = 1, log_likelihood: bool = True, progressbar: bool | None = None,
           label: str = "the model"):
    """NUTS with PyMC's default sampler; returns ``(idata, timings)``.

    ``cores=1`` by default: chains run sequentially in one process, which on small models is
    faster than spawning workers (and fair on shared machines). ``timings`` holds the
    compile+sample wall seconds and PyMC's own sampling time so callers can check that the
    pytensor compile is not dominating. A line on stderr says what is sampled (``label``) and
    PyMC's progress shows unless ``progressbar=False`` or ``IHLAW_PROGRESS=0``
    (:mod:`ihstats.base.progress`): a fit of minutes is never silent.
    """
    import pymc as pm

    show = progress_style(progress.enabled() if progressbar is None else progressbar)
    progress.step(f"sampling {label}: {chains} chain(s) x ({tune} tune + {draws} draws), one after another")
    t0 = time.perf_counter()
    with model, quiet_pymc():
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed,
                          target_accept=target_accept, progressbar=show,
                          compute_convergence_checks=False)
        t1 = time.perf_counter()
        if log_likelihood:
            pm.compute_log_likelihood(idata, model=model, progressbar=False)
    t2 = time.perf_counter()
    sampling = float(idata.posterior.attrs.get("sampling_time", np.nan))
    return idata, {"sample_call_s": t1 - t0, "sampling_s": sampling,
                   "compile_overhead_s": (t1 - t0) - sampling, "log_likelihood_s": t2 - t1}


def add_prior(model, idata, *, draws: int, seed: int):
    """Add the ``prior`` group to ``idata`` (in place): ``draws`` draws of the model's free
    parameters and deterministics from their priors, so a saved fit carries its prior for
    prior-predictive checks (``az.plot_dist(idata, group="prior")`` and the like). Observed
    variables are left out: a censored likelihood (a ``pm.Potential``) has no prior predictive in
    PyMC, so a fit that wants one draws it itself (:meth:`ihstats.law.results.UPTLawResults.ppc`)."""
    import pymc as pm

    names = [v.name for v in (*model.free_RVs, *model.deterministics)]
    with model, quiet_pymc(), warnings.catch_warnings():
        # "the effect of Potentials ... is ignored": the prior of the parameters is what is drawn
        warnings.filterwarnings("ignore", message="The effect of Potentials")
        prior = pm.sample_prior_predictive(draws=draws, var_names=names, random_seed=seed)
    compat.set_group(idata, "prior", compat.group_dataset(prior, "prior"))
    return idata


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
    chain/draw coordinates; used for quantities computed outside PyMC (log-likelihood, PPC, the
    observed data of a censored likelihood, which replaces the one PyMC recorded)."""
    import xarray as xr

    post = idata.posterior
    base = {"chain": post["chain"].values, "draw": post["draw"].values} if sample_dims else {}
    compat.set_group(idata, group, xr.Dataset(data_vars, coords={**base, **(coords or {})}))
    return idata


def from_draws(posterior: dict, dims: dict | None = None, coords: dict | None = None):
    """A fit holding only a posterior, from ``{name: array (chain, draw, ...)}`` (optional ArviZ
    ``dims`` / ``coords``); for known posteriors (tests, simulations)."""
    return compat.from_draws(posterior, dims=dims, coords=coords)


def group_dataset(idata, group: str):
    """One group of a fit (``prior``, ``posterior_predictive``, ...) as an ``xarray.Dataset``."""
    return compat.group_dataset(idata, group)


def groups(idata) -> list[str]:
    """Names of the groups of a fit (``posterior``, ``sample_stats``, ...)."""
    return compat.groups(idata)


def summary(idata, var_names, *, hdi_prob: float) -> pd.DataFrame:
    """ArviZ summary with an explicit HDI width: ``mean, sd, hdi_lo, hdi_hi, r_hat, ess_bulk,
    ess_tail, mcse_mean``."""
    return compat.summary(idata, var_names, hdi_prob=hdi_prob)


def hdi(x: np.ndarray, *, hdi_prob: float) -> tuple[float, float]:
    """Highest-density interval of a 1-D sample at an explicit width."""
    return compat.hdi(x, hdi_prob=hdi_prob)


def divergences(idata) -> int:
    """Number of divergent transitions after tuning (0 when the sampler recorded none)."""
    ss = getattr(idata, "sample_stats", None)
    if ss is None or "diverging" not in ss:
        return 0
    return int(ss["diverging"].values.sum())


def loo(idata, *, var_name: str | None = None):
    """PSIS-LOO with pointwise values (the stack's ELPD object: read it with :func:`loo_table`,
    or ``.pareto_k``)."""
    return compat.loo(idata, var_name=var_name)


def loo_table(elpd) -> pd.DataFrame:
    """One-row frame from a :func:`loo` result: elpd_loo, se, p_loo, Pareto-k counts."""
    n = compat.loo_numbers(elpd)
    k = n.pop("pareto_k")
    return pd.DataFrame([{**n, "n_obs": int(k.size), "pareto_k_gt_0.7": int((k > 0.7).sum())}])


def compare(idatas: dict, *, var_name: str | None = None) -> pd.DataFrame:
    """LOO comparison (``az.compare``) of named fits; best model first (columns ``rank,
    elpd_loo, p_loo, elpd_diff, weight, se, dse, ...`` on both stacks)."""
    return compat.compare(idatas, var_name=var_name)


def to_netcdf(idata, path) -> str:
    """Write a fit (InferenceData / DataTree) to netCDF, atomically (never through a symlink);
    returns the path."""
    atomic_write(path, lambda tmp: compat.to_netcdf(idata, tmp))
    return str(path)


def from_netcdf(path):
    """Read a fit from netCDF, written by either stack (``compat.PosteriorFileError`` when the
    file holds no posterior)."""
    return compat.from_netcdf(path)


def posterior_draws(idata, name: str) -> np.ndarray:
    """Flattened (chain * draw,) posterior draws of a scalar variable."""
    return np.asarray(idata.posterior[name].values, dtype=float).reshape(-1)


def thin_posterior(idata, n_draws: int, *, seed: int = 0):
    """A new fit with only the posterior group, ``n_draws`` draws picked at random (one chain),
    attributes kept: small enough to ship."""
    post = compat.posterior_dataset(idata).stack(sample=("chain", "draw"))
    rng = np.random.default_rng(seed)
    n = post.sizes["sample"]
    idx = np.sort(rng.choice(n, size=min(n_draws, n), replace=False))
    sub = post.isel(sample=idx).drop_vars(["sample", "chain", "draw"])
    sub = sub.rename({"sample": "draw"}).expand_dims("chain").transpose("chain", "draw", ...)
    sub.attrs.update(idata.posterior.attrs)
    return compat.new_idata(posterior=sub)


def sampler_warnings(idata, summary: pd.DataFrame, *, target_accept: float,
                     rhat_max: float = 1.01, ess_min: float = 400, skip=()) -> list[str]:
    """Sampler warnings (divergences, r_hat, bulk ESS) of a fit; empty when all checks pass.

    ``summary``: the output of :func:`summary`, indexed by parameter name; rows named in ``skip``
    (derived quantities such as ``T = exp(log T)``) are not checked.
    """
    out = []
    n_div = divergences(idata)
    if n_div:
        out.append(f"{n_div} divergent transitions after tuning: raise target_accept "
                   f"(now {target_accept}) or check the data")
    for name, row in summary.iterrows():
        if name in skip:
            continue
        if not row["r_hat"] <= rhat_max:
            out.append(f"r_hat of {name} is {row['r_hat']:.3f} > {rhat_max}: chains disagree")
        if not row["ess_bulk"] >= ess_min:
            out.append(f"bulk ESS of {name} is {row['ess_bulk']:.0f} < {ess_min}: "
                       f"draw more samples")
    return out


def _json_default(obj):
    # numpy scalars (np.bool_, np.int64) to Python; anything else (a tuple key's repr, a Path)
    # as its string, so a record of the fit never fails to write.
    return obj.item() if isinstance(obj, np.generic) else str(obj)


def save_fit(out_dir, idata, summary: pd.DataFrame, record: dict,
             tables: dict[str, pd.DataFrame] | None = None) -> dict[str, Path]:
    """Write a fit's folder: ``idata.nc``, ``summary.csv``, ``fit.json`` (``record``) and one
    ``<name>.csv`` per entry of ``tables``; returns ``{"idata", "summary", "fit", *tables}`` ->
    path. ``summary`` and ``tables`` are written without their index (reset it first to keep it).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {key: out / name for key, name in FIT_FILES.items()}
    to_netcdf(idata, paths["idata"])
    atomic_write_csv(paths["summary"], summary, index=False, float_format=CSV_FLOAT_FORMAT)
    atomic_write_text(paths["fit"], json.dumps(record, indent=2, default=_json_default))
    for name, frame in (tables or {}).items():
        paths[name] = out / f"{name}.csv"
        atomic_write_csv(paths[name], frame, index=False, float_format=CSV_FLOAT_FORMAT)
    return paths


def fit_file(path, key: str) -> Path:
    """The file ``key`` (``"idata"``, ``"summary"``, ``"fit"``) of a saved fit: ``path`` itself
    when it is a file, else its ``FIT_FILES`` name in the folder ``path``, else the first of its
    ``OLD_FIT_FILES`` names that exists there (the new name when none does)."""
    p = Path(path)
    if not p.is_dir():
        return p
    for name in (FIT_FILES[key], *OLD_FIT_FILES.get(key, ())):
        if (p / name).exists():
            return p / name
    return p / FIT_FILES[key]


def load_fit(path) -> tuple:
    """Read a saved fit's folder (written by any model's ``save``, under today's file names or
    the older ones): returns ``(idata, record)``, ``record`` being the JSON record of the fit
    (``{}`` when the folder has none)."""
    js = fit_file(path, "fit")
    record = json.loads(js.read_text()) if js.exists() else {}
    return from_netcdf(fit_file(path, "idata")), record


def versions() -> dict:
    """Versions of the Python stack, stamped into saved results and reports."""
    import arviz
    import pymc
    import pytensor
    import scipy
    import statsmodels

    out = {"python": platform.python_version(), "ihstats": ihstats.__version__,
           "pymc": pymc.__version__, "pytensor": pytensor.__version__,
           "arviz": arviz.__version__, "numpy": np.__version__, "pandas": pd.__version__,
           "scipy": scipy.__version__, "statsmodels": statsmodels.__version__}
    if compat.ARVIZ_1:  # ArviZ 1 is a meta-package: the code that ran is in its three parts
        out.update({p: metadata.version(p) for p in ("arviz-base", "arviz-stats", "arviz-plots")})
    return out
