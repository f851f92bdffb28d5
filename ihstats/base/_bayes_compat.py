"""Every difference between the two Bayesian stacks ihstats runs on, and nothing else.

- Python 3.11: PyMC 5 / ArviZ 0.2x. A fit is an ``arviz.InferenceData``.
- Python >= 3.12: PyMC 6 / ArviZ 1 (arviz-base, arviz-stats, arviz-plots). A fit is an
  ``xarray.DataTree``; summaries name their interval ``hdi90_lb``/``hdi90_ub`` and take
  ``ci_prob``/``ci_kind``, ``hdi`` takes ``prob``, LOO results name ``elpd``/``p``,
  ``compare`` has no ``ic``, the plots are ``arviz_plots`` (``plot_trace_dist``, ``plot_dist``)
  returning a ``PlotCollection``, and ``InferenceData.groups()`` is the property
  ``DataTree.groups`` of paths.

Both answer ``idata.posterior`` (a Dataset, or a DataTree node) with ``.attrs``, ``[name]``,
``.sizes`` and ``in``: that is all the fit modules use directly; everything else goes through
:mod:`ihstats._bayes`, which calls this module, so a fit module never branches on a version.

Saved fits: both stacks write one netCDF-4 file with a group per InferenceData group, so a
file written by either stack loads in the other (``tests/ihstats/test_bayes_compat.py``); a
file without those groups raises :class:`PosteriorFileError` naming the file.

arviz, xarray and matplotlib are imported inside the functions: importing them costs seconds.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

#: True on the ArviZ 1 stack (PyMC 6, Python >= 3.12); read from the installed metadata, which
#: costs no import of arviz.
ARVIZ_1 = int(metadata.version("arviz").split(".")[0]) >= 1
SUMMARY_COLUMNS = ["mean", "sd", "hdi_lo", "hdi_hi", "r_hat", "ess_bulk", "ess_tail", "mcse_mean"]


class PosteriorFileError(ValueError):
    """A netCDF file that is not a saved fit (no ``posterior`` group)."""


def new_idata(**groups):
    """A fit object (InferenceData / DataTree) from ``{group: xarray.Dataset}``."""
    import arviz as az
    import xarray as xr

    if ARVIZ_1:
        return xr.DataTree.from_dict({f"/{g}": ds for g, ds in groups.items()})
    return az.InferenceData(**groups)


def from_draws(posterior: dict, dims: dict | None = None, coords: dict | None = None):
    """A fit object holding only a posterior given as ``{name: array (chain, draw, ...)}``
    (known posteriors in tests and simulations), with optional ``dims`` / ``coords`` as in ArviZ."""
    import arviz as az

    if ARVIZ_1:
        return az.from_dict({"posterior": posterior}, dims=dims, coords=coords)
    return az.from_dict(posterior=posterior, dims=dims, coords=coords)


def set_group(idata, group: str, ds) -> None:
    """Add ``group`` to ``idata`` in place, replacing a group of that name."""
    import xarray as xr

    if ARVIZ_1:
        idata[group] = xr.DataTree(dataset=ds)
    else:
        idata.extend(new_idata(**{group: ds}), join="right")  # "right": ours replaces theirs


def groups(idata) -> list[str]:
    """Names of the groups of a fit (``posterior``, ``sample_stats``, ...)."""
    if ARVIZ_1:
        return [str(k) for k in idata.children]
    return list(idata.groups())


def group_dataset(idata, group: str):
    """The group ``group`` of a fit as an ``xarray.Dataset`` (attributes kept)."""
    node = idata[group] if ARVIZ_1 else getattr(idata, group)
    return node.to_dataset() if ARVIZ_1 else node


def posterior_dataset(idata):
    """The posterior group as an ``xarray.Dataset`` (attributes kept)."""
    post = idata.posterior
    return post.to_dataset() if ARVIZ_1 else post


def summary(idata, var_names, *, hdi_prob: float) -> pd.DataFrame:
    """ArviZ summary, unrounded, HDI at an explicit width: ``SUMMARY_COLUMNS``."""
    import arviz as az

    if ARVIZ_1:
        s = az.summary(idata, var_names=list(var_names), kind="all", round_to="none",
                       ci_prob=hdi_prob, ci_kind="hdi")
    else:
        s = az.summary(idata, var_names=list(var_names), hdi_prob=hdi_prob, kind="all",
                       round_to="none")
    lo, hi = [c for c in s.columns if c.startswith("hdi")]
    return s.rename(columns={lo: "hdi_lo", hi: "hdi_hi"})[SUMMARY_COLUMNS].astype(float)


def hdi(x: np.ndarray, *, hdi_prob: float) -> tuple[float, float]:
    """Highest-density interval of a 1-D sample."""
    import arviz as az

    x = np.asarray(x, dtype=float).ravel()
    lo, hi = az.hdi(x, prob=hdi_prob) if ARVIZ_1 else az.hdi(x, hdi_prob=hdi_prob)
    return float(lo), float(hi)


def loo(idata, *, var_name: str | None = None):
    """PSIS-LOO with pointwise values (the stack's ELPD object; read it with
    :func:`loo_numbers`)."""
    import arviz as az

    return az.loo(idata, var_name=var_name, pointwise=True)


def loo_numbers(elpd) -> dict:
    """``elpd_loo``, ``se``, ``p_loo`` and the pointwise ``pareto_k`` of a LOO result."""
    if ARVIZ_1:
        return {"elpd_loo": float(elpd.elpd), "se": float(elpd.se), "p_loo": float(elpd.p),
                "pareto_k": np.asarray(elpd.pareto_k, dtype=float).ravel()}
    return {"elpd_loo": float(elpd.elpd_loo), "se": float(elpd.se), "p_loo": float(elpd.p_loo),
            "pareto_k": np.asarray(elpd.pareto_k, dtype=float).ravel()}


def compare(idatas: dict, *, var_name: str | None = None) -> pd.DataFrame:
    """LOO comparison of named fits, best first, in ArviZ 0.x's column names
    (``rank, elpd_loo, p_loo, elpd_diff, weight, se, dse, warning, ...``)."""
    import arviz as az

    if ARVIZ_1:
        return az.compare(idatas, var_name=var_name).rename(columns={"elpd": "elpd_loo",
                                                                      "p": "p_loo"})
    return az.compare(idatas, ic="loo", var_name=var_name)


def to_netcdf(idata, path) -> str:
    """Write a fit to one netCDF-4 file (a group per InferenceData group); returns the path."""
    idata.to_netcdf(str(path))
    return str(path)


def from_netcdf(path):
    """Read a fit written by either stack, into memory (the file is closed on return)."""
    import arviz as az
    import xarray as xr

    if not ARVIZ_1:
        idata = az.from_netcdf(str(path))
    else:
        with xr.open_datatree(str(path)) as tree:
            idata = tree.load().copy()
    if "posterior" not in groups(idata):
        raise PosteriorFileError(f"{path}: no 'posterior' group; not a saved fit (write one with "
                                 f"a fit's save() or analyses/fit_upt_law.py)")
    return idata


# ------------------------------------------------------------------ plots (one Figure each)
def _figure_of(axes_or_collection):
    if ARVIZ_1:  # a PlotCollection: its figure is the scalar "figure" of its visuals tree
        return axes_or_collection.viz["figure"].item()
    return np.asarray(axes_or_collection).ravel()[0].get_figure()


def plot_trace(idata, var_names):
    """Compact trace plot (densities and traces) of ``var_names``; returns the Figure."""
    import arviz as az

    if ARVIZ_1:
        return _figure_of(az.plot_trace_dist(idata, var_names=list(var_names), compact=True,
                                             backend="matplotlib"))
    return _figure_of(az.plot_trace(idata, var_names=list(var_names), compact=True))


def plot_rank(idata, var_names):
    """Rank plots of ``var_names`` (ArviZ 1: the rank ECDF form); returns the Figure."""
    import arviz as az

    kw = {}
    if ARVIZ_1:  # ArviZ 1's default multi-chain test needs two chains; one chain: the envelope
        one = idata.posterior.sizes["chain"] < 2
        kw = {"backend": "matplotlib", "method": "envelope" if one else "mtc_c"}
    return _figure_of(az.plot_rank(idata, var_names=list(var_names), **kw))


def plot_ppc(idata, var_name: str, *, num_samples: int = 100, group: str = "posterior"):
    """ArviZ's own predictive check of ``var_name``: the observed density against ``num_samples``
    replicated ones, from the ``posterior_predictive`` (``group="prior"``: ``prior_predictive``)
    group; returns the Figure (ArviZ 1: ``plot_ppc_dist``)."""
    import arviz as az

    post = idata.posterior
    num_samples = min(num_samples, post.sizes["chain"] * post.sizes["draw"])  # ArviZ refuses more
    if ARVIZ_1:
        return _figure_of(az.plot_ppc_dist(idata, var_names=[var_name], group=f"{group}_predictive",
                                           num_samples=num_samples, backend="matplotlib"))
    return _figure_of(az.plot_ppc(idata, var_names=[var_name], group=group, num_pp_samples=num_samples,
                                  random_seed=0))


def plot_posterior(idata, var_names, *, hdi_prob: float, ref_val: dict | None = None):
    """Posterior densities with the mean and the HDI at ``hdi_prob``, and a solid reference
    line at ``ref_val[name]``; returns the Figure, one axes per name in ``var_names`` order."""
    import arviz as az

    names = list(var_names)
    if not ARVIZ_1:
        ref = {k: [{"ref_val": v}] for k, v in ref_val.items()} if ref_val else None
        return _figure_of(az.plot_posterior(idata, var_names=names, hdi_prob=hdi_prob,
                                            ref_val=ref, point_estimate="mean"))
    pc = az.plot_dist(idata, var_names=names, ci_prob=hdi_prob, ci_kind="hdi",
                      point_estimate="mean", backend="matplotlib")
    for name, value in (ref_val or {}).items():
        pc.viz["plot"][name].item().axvline(value, color="C1", lw=1.2)
    return _figure_of(pc)
