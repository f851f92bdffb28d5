"""Does only the product f r matter? One elasticity on log(f r) beside the two separate knobs.

Product model: ``log onset = a + e (log f + log r - m) + sigma eps``, right-censored as
:mod:`ihstats.onset.model` (which is the separate-knob model, ``e_f`` and ``e_r``); it is the
separate model with ``e_f = e_r``. The two are compared

- by a likelihood-ratio test (maximum likelihood, :func:`ihstats.onset.mle.fit_mle`):
  ``2 (ll_separate - ll_product)`` against chi-square with 1 degree of freedom;
- by PSIS-LOO of both posteriors (the censored pointwise log-likelihood, computed from the draws:
  the log density of a formed run's log onset, the log survival of a censored one).

Beside them, what the paper draws: the boundary at a fixed budget ``T``, the product at which the
median onset equals ``T`` (``f r = exp(m + (log T - a) / e)``, posterior median and HDI), as the
reliability at the top frequency and the frequency at the top reliability; and
:func:`local_elasticities` along each transect, free of any law.

Pipeline::

    prod = fit_product(model, draws=1000, tune=1000, chains=4, seed=0)   # -> ProductFit
    compare_models(model, separate_results, prod)    # LRT and LOO table
    prod.boundary([4200, 1400])                       # fixed-budget boundaries
    local_elasticities(model.runs)                   # neighbouring levels, Wald intervals
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import chi2, norm

from ihstats import _bayes
from ihstats.fit_protocol import SAMPLER
from ihstats.knobs import KNOBS
from ihstats.onset.mle import CensoredMLE, fit_mle, pointwise_loglik

PRODUCT_TERM = "freq_x_rel"


def product_X(model) -> np.ndarray:
    """The product model's one column: centred log f + centred log r (= centred log f r)."""
    return model.X.sum(axis=1, keepdims=True)


@dataclass
class ProductFit:
    """The product model's posterior (``idata``: intercept, elasticity (one), sigma) and MLE."""

    model: object  # the OnsetModel it was fitted to
    idata: object
    mle: CensoredMLE

    @property
    def center(self) -> float:
        return float(sum(self.model.center[k] for k in KNOBS))

    def draws(self) -> dict:
        return {"intercept": _bayes.posterior_draws(self.idata, "intercept"),
                "e": np.asarray(self.idata.posterior["elasticity"].values, float).reshape(-1),
                "sigma": _bayes.posterior_draws(self.idata, "sigma")}

    def elasticity(self, hdi_prob: float = 0.9) -> dict:
        """The product elasticity: posterior median, HDI, MLE and its standard error."""
        e = self.draws()["e"]
        lo, hi = _bayes.hdi(e, hdi_prob=hdi_prob)
        return {"term": "e_product", "median": float(np.median(e)), "lo": lo, "hi": hi,
                "mle": float(self.mle.params[1]), "mle_se": float(self.mle.se[1]), "hdi_prob": hdi_prob}

    def boundary(self, budgets, hdi_prob: float = 0.9) -> pd.DataFrame:
        """The boundary at each fixed budget: the product ``f r`` at which the median onset equals
        the budget (posterior median and HDI; heads form by the budget above it), and the same
        line read at the top level of each knob (``reliability_at`` the top frequency,
        ``frequency_at`` the top reliability; NaN where it leaves (0, 1])."""
        d, runs = self.draws(), self.model.runs
        f_top, r_top = float(runs["frequency"].max()), float(runs["reliability"].max())
        rows = []
        for T in np.atleast_1d(np.asarray(budgets, float)):
            log_fr = self.center + (np.log(T) - d["intercept"]) / d["e"]
            lo, hi = _bayes.hdi(log_fr, hdi_prob=hdi_prob)
            fr = np.exp([np.median(log_fr), lo, hi])
            inside = lambda v: np.where((v > 0) & (v <= 1), v, np.nan)  # noqa: E731
            rows.append({"budget": T, "product": fr[0], "product_lo": fr[1], "product_hi": fr[2],
                         "top_frequency": f_top, "reliability_at": float(inside(fr[0] / f_top)),
                         "top_reliability": r_top, "frequency_at": float(inside(fr[0] / r_top)),
                         "hdi_prob": hdi_prob})
        return pd.DataFrame(rows)

    def median_onset(self, cells, hdi_prob: float = 0.9) -> pd.DataFrame:
        """The median onset (updates) this model predicts at each ``(frequency, reliability)`` of
        ``cells`` (posterior median and HDI): where a constant elasticity puts untested cells."""
        d, rows = self.draws(), []
        for f, r in cells:
            log_t = d["intercept"] + d["e"] * (np.log(f * r) - self.center)
            lo, hi = _bayes.hdi(log_t, hdi_prob=hdi_prob)
            rows.append({"frequency": f, "reliability": r, "median_onset": float(np.exp(np.median(log_t))),
                         "lo": float(np.exp(lo)), "hi": float(np.exp(hi)), "hdi_prob": hdi_prob})
        return pd.DataFrame(rows)


def fit_product(model, *, draws: int = SAMPLER.draws, tune: int = SAMPLER.tune, chains: int = SAMPLER.chains,
                seed: int = SAMPLER.seed, target_accept: float = SAMPLER.target_accept) -> ProductFit:
    """Sample the product model (same priors and censoring as ``model``) and fit its MLE."""
    X = product_X(model)
    idata, _ = _bayes.sample(model.pymc_model(X, (PRODUCT_TERM,)), draws=draws, tune=tune, chains=chains,
                             seed=seed, target_accept=target_accept, log_likelihood=False,
                             label="the product onset model")
    mle = fit_mle(X, model.runs["log_time"].to_numpy(), model.censored)
    return ProductFit(model, idata, mle)


def _with_loglik(idata, X, model):
    """``idata`` with a ``log_likelihood`` group ``log_onset`` (chain, draw, run): each run's
    censored log-likelihood at every posterior draw."""
    post = idata.posterior
    a = post["intercept"].values[..., None]
    e = post["elasticity"].values  # (chain, draw, k)
    sigma = post["sigma"].values[..., None]
    y, cen = model.runs["log_time"].to_numpy(), model.censored
    mu = a + np.einsum("cdk,nk->cdn", e, X)
    z = (y - mu) / sigma
    ll = np.where(cen, norm.logsf(z), norm.logpdf(z) - np.log(sigma))
    return _bayes.add_group(idata, "log_likelihood", {"log_onset": (("chain", "draw", "run"), ll)},
                            coords={"run": np.arange(len(y))})


def exact_loo(X: np.ndarray, log_time: np.ndarray, censored: np.ndarray) -> np.ndarray:
    """Each run's log-likelihood under the MLE refitted without it (exact leave-one-out, plug-in):
    the check of PSIS-LOO where its Pareto k flags runs (a censored run near the cap often is)."""
    y, cen = np.asarray(log_time, float), np.asarray(censored, bool)
    out = np.empty(len(y))
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        fit = fit_mle(X[keep], y[keep], cen[keep])
        out[i] = pointwise_loglik(fit.params, X[i:i + 1], y[i:i + 1], cen[i:i + 1])[0]
    return out


def likelihood_ratio(separate: CensoredMLE, product: CensoredMLE) -> dict:
    """``2 (ll_separate - ll_product)`` and its chi-square (1 df) p-value: small p says the two
    knobs act with different elasticities; large p that one elasticity on f r suffices."""
    stat = max(2.0 * (separate.loglik - product.loglik), 0.0)
    return {"lr_stat": stat, "df": 1, "p_value": float(chi2.sf(stat, 1))}


def bootstrap_lr_p(model, product: CensoredMLE, observed: float, n_sims: int = 199, seed: int = 0) -> float:
    """Parametric-bootstrap p-value of the likelihood-ratio statistic: datasets simulated from the
    product model's MLE at the same runs, censored at the longest run's time (the cap), refitted
    both ways. The chi-square p is anti-conservative here (measured size 0.10 at nominal 0.05 on
    freqrel's design, 21 runs, 200 datasets), so this is the one to read."""
    rng = np.random.default_rng(seed)
    X1 = product_X(model)
    cap = float(model.runs["log_time"].max())
    a, e, sigma = product.params[0], product.params[1], float(np.exp(product.params[2]))
    stats = np.empty(n_sims)
    for s in range(n_sims):
        y = a + e * X1[:, 0] + sigma * rng.standard_normal(len(X1))
        cen = y > cap
        y = np.minimum(y, cap)
        stats[s] = 2.0 * (fit_mle(model.X, y, cen).loglik - fit_mle(X1, y, cen).loglik)
    return float((1 + np.sum(stats >= observed)) / (n_sims + 1))


def compare_models(model, separate, product: ProductFit, n_boot: int = 199, seed: int = 0) -> pd.DataFrame:
    """One row per model (separate knobs, product): elasticities (MLE), maximised
    log-likelihood, the likelihood-ratio test (on the separate row) and PSIS-LOO (elpd, se,
    difference from the best and its se, Pareto k > 0.7 count), the exact leave-one-out refit
    (:func:`exact_loo`) and the bootstrap p of the likelihood ratio (``n_boot`` datasets, 0: none).
    ``separate``: the :class:`ihstats.onset.results.OnsetResults` of ``model``."""
    fits = {"separate": _with_loglik(separate.idata, model.X, model),
            "product": _with_loglik(product.idata, product_X(model), model)}
    cmp = _bayes.compare(fits, var_name="log_onset")
    k_bad = {name: int((_bayes.loo_table(_bayes.loo(f, var_name="log_onset"))["pareto_k_gt_0.7"]).iloc[0])
             for name, f in fits.items()}
    lrt = likelihood_ratio(separate.mle, product.mle)
    p_boot = bootstrap_lr_p(model, product.mle, lrt["lr_stat"], n_boot, seed) if n_boot else np.nan
    y, cen = model.runs["log_time"].to_numpy(), model.censored
    exact = {"separate": exact_loo(model.X, y, cen), "product": exact_loo(product_X(model), y, cen)}
    diff = exact["separate"] - exact["product"]
    rows = []
    for name, mle in (("separate", separate.mle), ("product", product.mle)):
        c = cmp.loc[name]
        rows.append({"model": name, "n_params": mle.params.size, "loglik": mle.loglik,
                     "e_freq": mle.params[1], "e_rel": mle.params[2] if name == "separate" else mle.params[1],
                     "lr_stat": lrt["lr_stat"] if name == "separate" else np.nan,
                     "lr_p_value": lrt["p_value"] if name == "separate" else np.nan,
                     "lr_p_bootstrap": p_boot if name == "separate" else np.nan,
                     "elpd_loo": float(c["elpd_loo"]), "elpd_se": float(c["se"]),
                     "elpd_diff": float(c["elpd_diff"]), "elpd_diff_se": float(c["dse"]),
                     "pareto_k_gt_0.7": k_bad[name], "elpd_exact_loo": float(exact[name].sum()),
                     # separate minus product, paired over runs, on both rows
                     "exact_diff": float(diff.sum()), "exact_diff_se": float(np.sqrt(len(diff)) * diff.std(ddof=1))})
    return pd.DataFrame(rows)


def held_out_check(model, cells, n_draws: int = 4000, seed: int = 0) -> pd.DataFrame:
    """Would one constant elasticity on f r have seen an onset in a cell where no run formed?

    For each ``(frequency, reliability)`` of ``cells``, the product model's MLE is refitted without
    that cell's runs (so the cell cannot pull the elasticity toward itself), its parameters drawn
    from the fit's normal approximation, and for each draw the chance that none of the cell's runs
    forms by its own last step (the product of their normal survival probabilities on log time).
    ``p_none_formed`` is the mean over draws: small (under 0.05) says the constant elasticity
    expected an onset there, so the cell's onset is slower than the law (a steepening or a
    divergence); large says the cell, at its budget, cannot tell the two apart. Also returned: the
    held-out median onset (its 90% interval from the same draws) and the cell's run count and
    last steps; ``parameter_uncertainty`` False where the refit had no finite covariance (too few
    onsets left), and the probability is then the point fit's alone."""
    runs, X1 = model.runs, product_X(model)
    y, cen = runs["log_time"].to_numpy(), model.censored
    rng, rows = np.random.default_rng(seed), []
    for f, r in cells:
        inside = np.isclose(runs["frequency"].to_numpy(float), f) & np.isclose(runs["reliability"].to_numpy(float), r)
        if not inside.any():
            raise ValueError(f"cells: no run at frequency {f}, reliability {r}")
        fit = fit_mle(X1[~inside], y[~inside], cen[~inside])
        cov = fit.cov if np.all(np.isfinite(fit.cov)) else np.zeros_like(fit.cov)  # no curvature: the point fit
        theta = rng.multivariate_normal(fit.params, cov, n_draws)  # (n_draws, 3): a, e, log sigma
        x = float(X1[inside][0, 0])  # the cell's centred log f r
        mu, sigma = theta[:, 0] + theta[:, 1] * x, np.exp(theta[:, 2])
        z = (y[inside][None, :] - mu[:, None]) / sigma[:, None]  # (n_draws, runs in the cell)
        p_none = np.exp(norm.logsf(z).sum(axis=1))
        lo, hi = np.quantile(mu, [0.05, 0.95])
        rows.append({"frequency": f, "reliability": r, "n_runs": int(inside.sum()),
                     "n_formed": int((~cen[inside]).sum()), "last_steps": " ".join(f"{np.exp(v):.0f}" for v in y[inside]),
                     "held_out_median_onset": float(np.exp(np.median(mu))), "held_out_lo": float(np.exp(lo)),
                     "held_out_hi": float(np.exp(hi)), "p_none_formed": float(p_none.mean()),
                     "parameter_uncertainty": bool(cov.any())})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- local elasticities
def transects(runs: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The runs along each knob at the other knob's top level (the transects through the top
    corner; the top row and column of a full grid): ``[(knob, runs), ...]``."""
    out = []
    for knob, other in (("frequency", "reliability"), ("reliability", "frequency")):
        sub = runs[np.isclose(runs[other], runs[other].max())]
        if sub[knob].nunique() >= 2:
            out.append((knob, sub))
    return out


def _cell_means(sub: pd.DataFrame, knob: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, dict]:
    """Censored MLE of one mean log onset per level of ``knob`` that has an onset (a shared
    sigma): ``(levels, means, cov of the means, sigma, {all-censored level: (n runs, log cap)})``."""
    levels = np.sort(sub[knob].unique())[::-1]  # top level first
    blind = {}
    fit_levels = []
    for lv in levels:
        at = sub[np.isclose(sub[knob], lv)]
        if at["formed"].any():
            fit_levels.append(lv)
        else:  # no onset: the mean has no MLE (it runs to infinity); only a lower bound
            blind[lv] = (len(at), float(at["log_time"].min()))
    keep = sub[np.isin(sub[knob], fit_levels)]
    idx = np.searchsorted(-np.asarray(fit_levels), -keep[knob].to_numpy())
    X = (idx[:, None] == np.arange(1, len(fit_levels))[None, :]).astype(float)  # dummies; level 0 = intercept
    mle = fit_mle(X, keep["log_time"].to_numpy(), ~keep["formed"].to_numpy(bool))
    L = np.hstack([np.ones((len(fit_levels), 1)), np.eye(len(fit_levels))[:, 1:]])  # mean_j = a + b_j
    cov = L @ mle.cov[:-1, :-1] @ L.T
    return np.asarray(fit_levels), L @ mle.params[:-1], cov, float(np.exp(mle.params[-1])), blind


def local_elasticities(runs: pd.DataFrame, hdi_prob: float = 0.9) -> pd.DataFrame:
    """Elasticity of the onset between neighbouring levels along each transect, free of any law:
    ``(mean log onset at the lower level - at the higher) / (log lower - log higher)`` (negative:
    the onset rises as the knob falls), from a censored log-normal fit with one mean per level and
    a shared seed scatter (:func:`ihstats.onset.mle.fit_mle`), with Wald intervals. A level where
    no run formed has no mean, only a lower bound (the mean at which all its runs outlast their
    last step with probability (1 - ``hdi_prob``) / 2): the first such level below a transect's
    last onset gives a bound (``bound`` ``"at most"``: the true elasticity is at most ``lo``, i.e.
    at least that steep); its runs, and those of unformed levels between formed ones, are left out
    of the fit. With one run per level the scatter is not identified: the intervals are NaN.

    ``runs``: as :func:`ihstats.onset.data.prepare` returns them (its ``table``)."""
    z = norm.ppf(0.5 + hdi_prob / 2)
    alpha = (1 - hdi_prob) / 2
    rows = []
    for knob, sub in transects(runs):
        levels, mean, cov, sigma, blind = _cell_means(sub, knob)
        for i in range(len(levels) - 1):
            hi_lv, lo_lv = levels[i], levels[i + 1]
            dlog = np.log(lo_lv) - np.log(hi_lv)
            c = np.zeros(len(levels))
            c[i + 1], c[i] = 1.0 / dlog, -1.0 / dlog
            e, se = float(c @ mean), float(np.sqrt(max(c @ cov @ c, 0.0)))
            rows.append({"knob": knob, "level_hi": hi_lv, "level_lo": lo_lv, "elasticity": e, "se": se,
                         "lo": e - z * se, "hi": e + z * se, "bound": "", "hdi_prob": hdi_prob})
        below = [lv for lv in blind if lv < levels[-1]]
        if below:  # the first level below the last onset; further ones add nothing a bound can say
            lv = max(below)
            n, log_cap = blind[lv]
            # all n runs censored: mean >= log cap - sigma * Phi^-1(1 - alpha^(1/n)) at level alpha
            mean_lb = log_cap - sigma * norm.ppf(1 - alpha ** (1 / n))
            j = len(levels) - 1
            dlog = np.log(lv) - np.log(levels[j])
            upper_prev = mean[j] + z * np.sqrt(cov[j, j])
            e_bound = (mean_lb - upper_prev) / dlog
            rows.append({"knob": knob, "level_hi": levels[j], "level_lo": lv, "elasticity": np.nan, "se": np.nan,
                         "lo": e_bound, "hi": np.nan, "bound": "at most", "hdi_prob": hdi_prob})
    return pd.DataFrame(rows)


def product_reading(p_chi2: float, p_bootstrap: float) -> str:
    """What the likelihood ratio says, read on the larger of its two p-values (the chi-square one
    over-rejects at these sizes): below 0.05 the knobs act apart; 0.05-0.10 is a lean, not "no
    evidence" (a bootstrap p of 0.05 from 200 datasets sits on the line)."""
    p = max(p_chi2, p_bootstrap)
    if p < 0.05:
        return "the knobs act with different elasticities"
    if p < 0.10:
        return f"weak evidence that the knobs act apart (larger p {p:.2g}): not resolved"
    return "no evidence that the knobs act apart: only their product is resolved"


def compare_lines(table: pd.DataFrame, prod: ProductFit, boundary: pd.DataFrame, local: pd.DataFrame,
                  hdi_prob: float, unformed: pd.DataFrame | None = None) -> list[str]:
    """The ``## Product f r or separate knobs`` section of the frontier's summary.md."""
    sep, pr = table.set_index("model").loc["separate"], table.set_index("model").loc["product"]
    el = prod.elasticity(hdi_prob)
    pct = int(hdi_prob * 100)
    best = table.sort_values("elpd_diff").iloc[0]["model"]
    reading = product_reading(sep.lr_p_value, sep.lr_p_bootstrap)
    lines = ["", "## Product f r or separate knobs",
             f"Separate knobs (MLE): e_f {sep.e_freq:.2f}, e_r {sep.e_rel:.2f}; one elasticity on f r: "
             f"{el['median']:.2f} [{el['lo']:.2f}, {el['hi']:.2f}] ({pct}% HDI; MLE {el['mle']:.2f} "
             f"({el['mle_se']:.2f})). Likelihood ratio {sep.lr_stat:.2f}: p = {sep.lr_p_value:.2g} "
             f"(chi-square, 1 df), {sep.lr_p_bootstrap:.2g} (parametric bootstrap from the product fit) ({reading}).",
             f"PSIS-LOO: {best} first; the other {abs(float(table['elpd_diff'].max())):.2f} elpd behind "
             f"(se {float(table.loc[table['elpd_diff'].idxmax(), 'elpd_diff_se']):.2f}); elpd separate "
             f"{sep.elpd_loo:.2f}, product {pr.elpd_loo:.2f}; Pareto k > 0.7: {int(sep['pareto_k_gt_0.7'])} / "
             f"{int(pr['pareto_k_gt_0.7'])}. Exact leave-one-out (MLE refitted without each run): "
             f"separate minus product {sep.exact_diff:.2f} (se {sep.exact_diff_se:.2f}).", "",
             "Boundary at a fixed budget (the product at which the median onset equals it; heads form "
             f"by the budget above it; {pct}% HDI):", "",
             "| budget (updates) | f r | r at top f | f at top r |", "|---|---|---|---|"]
    for b in boundary.itertuples():
        lines.append(f"| {b.budget:,.0f} | {b.product:.3f} [{b.product_lo:.3f}, {b.product_hi:.3f}] | "
                     f"{b.reliability_at:.3f} (f {b.top_frequency:g}) | "
                     f"{b.frequency_at:.3f} (r {b.top_reliability:g}) |")
    lines += ["", f"Local elasticities between neighbouring levels ({pct}% Wald intervals; censored cell means, "
              "no law):", "", "| knob | from | to | elasticity |", "|---|---|---|---|"]
    for r in local.itertuples():
        if not r.bound:
            val = (f"{r.elasticity:.2f} [{r.lo:.2f}, {r.hi:.2f}]" if np.isfinite(r.lo) else
                   f"{r.elasticity:.2f} (no interval: too few onsets per level to estimate the scatter)")
        elif np.isfinite(r.lo) and r.lo < 0:
            val = f"<= {r.lo:.2f} (no run formed at {r.level_lo:g}: a bound)"
        else:
            val = f"not bounded (no run formed at {r.level_lo:g}; the data allow any steepness)"
        lines.append(f"| {r.knob} | {r.level_hi:g} | {r.level_lo:g} | {val} |")
    if unformed is not None and len(unformed):
        lines += ["", "Where one constant elasticity on f r puts the cells with no onset (median onset, "
                  f"{pct}% HDI; an extrapolation that a diverging onset would break): " + "; ".join(
                      f"f {u.frequency:g} r {u.reliability:g}: {u.median_onset:,.0f} [{u.lo:,.0f}, {u.hi:,.0f}]"
                      for u in unformed.itertuples()) + "."]
    if unformed is not None and "p_none_formed" in unformed:
        lines += ["", "Held out (the product MLE refitted without the cell, its parameters drawn from that "
                  "fit): the median onset it predicts there (90% interval) and the probability that none "
                  "of the cell's runs forms by its last step if one elasticity held:", ""]
        lines += [f"- f {u.frequency:g} r {u.reliability:g}: {u.held_out_median_onset:,.0f} "
                  f"[{u.held_out_lo:,.0f}, {u.held_out_hi:,.0f}]; P(none of {u.n_runs} formed) = "
                  f"{u.p_none_formed:.2g}: {held_out_reading(u.p_none_formed)}" for u in unformed.itertuples()]
    return lines


def held_out_reading(p_none: float, alpha: float = 0.05) -> str:
    """What :func:`held_out_check`'s probability says about a cell where no run formed."""
    if not np.isfinite(p_none):
        return "not computable"
    if p_none < alpha:
        return "the constant elasticity expected an onset here; the cell's onset is slower than the law"
    return "what one elasticity expects too; at this budget the cell cannot tell it from a divergence"
