"""A fit's posterior diagnostics, drawn by ArviZ: trace, rank, posterior densities and the
posterior predictive check (the law report's ``trace``, ``rank``, ``posterior`` and ``ppc`` figures)."""

from __future__ import annotations

from typing import Any

import ihstats.figures.save  # noqa: F401  (first: the Agg backend before ArviZ draws)

import numpy as np

from ihstats.base import _bayes_compat


# The only ArviZ plotting calls; what differs between ArviZ 0.x and 1 is in ihstats.base._bayes_compat.
def plot_trace(idata: Any, var_names: Any) -> Any:
    """Trace plot (compact) of ``var_names``."""
    fig = _bayes_compat.plot_trace(idata, var_names)
    if len(fig.axes) == 2 * len(var_names):  # rows of (density, trace) per name, on both ArviZ stacks
        for name, dens, trace in zip(var_names, fig.axes[0::2], fig.axes[1::2]):
            draws = np.asarray(idata.posterior[name]).ravel()
            lo, hi = np.quantile(draws, [0.005, 0.995])
            if draws.max() - draws.min() > 3 * (hi - lo):  # one far draw (nu's tail) would squash the rest
                pad = 0.1 * (hi - lo)
                dens.set_xlim(lo - pad, hi + pad)
                trace.set_ylim(lo - pad, hi + pad)
                dens.set_title(f"{name} (axes: central 99% of draws; max {draws.max():.3g})", fontsize=9)
    fig.tight_layout()  # ArviZ's default spacing lets each row's title overlap the ticks above it
    return fig


def plot_ppc(idata: Any, var_name: str, *, num_samples: int = 100) -> Any:
    """ArviZ's posterior predictive check of ``var_name`` from the fit's ``posterior_predictive``
    group (the saved ``idata.nc`` holds it, so ``az.plot_ppc`` reproduces this figure); titled."""
    fig = _bayes_compat.plot_ppc(idata, var_name, num_samples=num_samples)
    y = np.asarray(_bayes_compat.group_dataset(idata, "observed_data")[var_name]).ravel()
    cens = _censored_flags(idata, y.size)
    lo, hi = float(np.nanmin(y)), float(np.nanmax(y))
    pad = max(0.5, 0.25 * (hi - lo))  # a heavy-tailed replicate (nu near 1) would stretch the axis to +-20
    for ax in fig.axes:
        ax.set_xlim(lo - pad, hi + pad)
        if cens is not None:  # the runs themselves, split as the likelihood reads them
            bottom = ax.get_ylim()[0]
            ax.plot(y[~cens], np.full((~cens).sum(), bottom), "|", color="k", ms=10, label="formed: onset")
            if cens.any():
                ax.plot(y[cens], np.full(cens.sum(), bottom), "^", mfc="none", color="C3", ms=7,
                        label="not formed: its last step (censored)")
            ax.legend(fontsize=7, loc="upper left", frameon=False)
    n_cens = int(cens.sum()) if cens is not None else None
    fig.suptitle(f"Posterior predictive check (ArviZ): observed {var_name} against {num_samples} replicates\n"
                 + (f"({n_cens} censored runs at their last step, as the likelihood sees them; "
                    f"x axis: the data's range +- {pad:.1f})" if n_cens is not None else
                    "(censored runs at their last step, as the likelihood sees them)"), fontsize=8)
    return fig


def _censored_flags(idata: Any, n: int) -> Any:
    """``constant_data.censored`` of a law fit (``ihstats.law.model.add_run_data``), else None."""
    if "constant_data" not in _bayes_compat.groups(idata):
        return None
    const = _bayes_compat.group_dataset(idata, "constant_data")
    if "censored" not in const or const["censored"].size != n:
        return None
    return np.asarray(const["censored"], dtype=bool).ravel()


def plot_rank(idata: Any, var_names: Any) -> Any:
    """Rank plots of ``var_names`` (chains mixing: flat histograms)."""
    return _bayes_compat.plot_rank(idata, var_names)


def plot_posterior(idata: Any, var_names: Any, *, hdi_prob: float, ref_val: dict | None = None,
                   extra_ref: tuple[float, str] | None = None) -> Any:
    """Posterior densities with the HDI at an explicit width, optional reference lines
    ``ref_val = {name: value}`` (solid, "published") and ``extra_ref = (value, label)``, a second
    reference drawn dotted on every panel (the UPT report: the tokens form's a = b = 0.5). The
    references are named in each panel's legend, not written over the density."""
    fig = _bayes_compat.plot_posterior(idata, var_names, hdi_prob=hdi_prob)
    for name, ax in zip(var_names, fig.axes):
        if ref_val and name in ref_val:
            ax.axvline(ref_val[name], color="C3", lw=1.4, label=f"published {name} = {ref_val[name]:g}")
        if extra_ref is not None:
            ax.axvline(extra_ref[0], ls=":", color="0.3", lw=1.4, label=extra_ref[1])
        for text in ax.texts:  # ArviZ's "mean=", "90% HDI" and bound labels sit where a reference line may run
            text.set_bbox({"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1.5})
            text.set_zorder(5)
        if ax.get_legend_handles_labels()[0]:
            # below the axes: a legend inside sits on the density or the HDI bar in some panel
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    fig.tight_layout()
    return fig
