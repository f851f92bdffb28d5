"""A fitted UPT law: the results object, and what any saved UPT-law posterior answers.

:class:`UPTLawResults` is what ``UPTLawModel.from_table(table, spec).fit(...)`` returns
(:mod:`ihstats.law.model`): ``summary()``, ``diagnostics()``, ``save(dir)`` (the layout every fit of
ihstats shares, :func:`ihstats._bayes.save_fit`), plus the law's own checks (posterior predictive,
LOO, the OLS cross-check) and predictions. :func:`predict_from_posterior`, :func:`fitted_range`
and :func:`extrapolation_warnings` need only the posterior, so ``python -m ihstats.law.predict`` uses
them on a saved or shipped netCDF without the table it was fitted to.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from types import SimpleNamespace

import numpy as np
import pandas as pd
from scipy import stats

from ihstats import _bayes
from ihstats.law.data import LawData, design_values, seed_key
from ihstats.law.forms import FORM_PARAMS, FORM_TEXT, line_draws, posterior_form
from ihstats.law.spec import COEF, OBS, PUBLISHED, SEED_KINDS, UPTLawError, UPTLawSpec


def sigma_draws(data: LawData, idata) -> np.ndarray:
    """Posterior draws of each run's seed-level scatter, shape (S, n_runs) or (S, 1) when shared."""
    sigma = np.asarray(idata.posterior["sigma"].values, dtype=float)
    if data.sigma_idx is None:
        return sigma.reshape(-1, 1)
    return sigma.reshape(-1, sigma.shape[-1])[:, data.sigma_idx]  # sigma[level of the run]


def _scale_nu(data: LawData, idata):
    """Per-draw, per-run likelihood scale (S, n) and dof (S, 1) or None (Gaussian)."""
    scale = np.sqrt(sigma_draws(data, idata) ** 2 + data.me_sd[None] ** 2)
    nu = _bayes.posterior_draws(idata, "nu")[:, None] if "nu" in idata.posterior else None
    return scale, nu


def mu_draws(data: LawData, idata, form: str | None = None) -> np.ndarray:
    """Posterior draws of each run's expected log UPT, shape (S, n_runs); ``form`` overrides the
    posterior's attribute (the prior's draws carry none)."""
    mu = _bayes.posterior_draws(idata, "alpha")[:, None] + line_draws(
        form or posterior_form(idata), lambda name: _bayes.posterior_draws(idata, name)[:, None], data.logs, data.centres)
    kinds = [(kind, idx) for kind, (idx, _) in (data.kinds or {}).items()]
    for term, idx in (("cell", data.cell_idx), ("seed", data.seed_idx), *kinds):  # the fitted offsets sd * z[level]
        if idx is not None:
            z = np.asarray(idata.posterior[f"{term}_z"].values, dtype=float).reshape(mu.shape[0], -1)
            mu = mu + _bayes.posterior_draws(idata, f"{term}_sd")[:, None] * z[:, idx]
    return mu  # (S, n)


def replicates(data: LawData, idata, rng: np.random.Generator, form: str | None = None) -> np.ndarray:
    """One replicate of every run's observed log onset per draw of ``idata.posterior`` (any
    object with a ``posterior`` Dataset: the prior's draws too), shape (S, n_runs), clipped at
    each censored run's log last_step as the censored likelihood sees it."""
    mu = mu_draws(data, idata, form)
    scale, nu = _scale_nu(data, idata)
    eps = rng.standard_t(np.broadcast_to(nu, mu.shape)) if nu is not None else rng.standard_normal(mu.shape)
    return np.minimum(mu + scale * eps, data.upper[None])


def loglik(data: LawData, idata, form: str | None = None) -> np.ndarray:
    """Pointwise log-likelihood, shape (chain, draw, run): log density of the observed log onset
    for uncensored runs, log survival ``log P(log UPT > log last_step)`` for censored runs.
    Same likelihood as the PyMC model (checked in tests), computed with scipy."""
    mu = mu_draws(data, idata, form)
    scale, nu = _scale_nu(data, idata)
    dist = stats.t(df=nu, loc=mu, scale=scale) if nu is not None else stats.norm(mu, scale)
    y = np.broadcast_to(data.y[None], mu.shape)
    ll = np.where(data.censored[None], dist.logsf(y), dist.logpdf(y))
    c, d = idata.posterior.sizes["chain"], idata.posterior.sizes["draw"]
    return ll.reshape(c, d, -1)


def fitted_range(idata) -> dict:
    """``{factor: [min, max]}`` of the table the posterior was fitted on; empty for posteriors
    saved before the range was recorded."""
    attrs = idata.posterior.attrs
    return {k: [float(attrs[f"min_{k}"]), float(attrs[f"max_{k}"])] for k in COEF
            if f"min_{k}" in attrs and f"max_{k}" in attrs}


def extrapolation_warnings(idata, **values) -> list[str]:
    """One line per factor (``B=..., C=..., N=...``) outside the fitted range."""
    out = []
    for k, (lo, hi) in fitted_range(idata).items():
        v = values.get(k)
        if v is not None and not lo <= v <= hi:
            out.append(f"{k} = {v:g} lies outside the fitted range {lo:g}-{hi:g}: the prediction "
                       f"extrapolates the power law")
    return out


def seed_offset_draws(idata, run_seeds, rng: np.random.Generator, pick=None) -> np.ndarray:
    """Draws of each run's seed offset on log UPT, shape (S, n), or 0.0 when the posterior has no
    seed effect. ``run_seeds``: each run's :func:`~ihstats.law.data.seed_key` (None: unknown); a
    seed the fit saw takes its posterior ``seed_sd * z_seed``, any other a new ``seed_sd * z`` per
    draw. ``pick``: the draws to use (indices into chain * draw; default all)."""
    post = idata.posterior
    if "seed_sd" not in post:
        return 0.0
    sd = _bayes.posterior_draws(idata, "seed_sd")
    z = np.asarray(post["seed_z"].values, dtype=float).reshape(len(sd), -1)
    if pick is not None:
        sd, z = sd[pick], z[pick]
    known = [str(v) for v in post["seed"].values]
    out = sd[:, None] * rng.standard_normal((len(sd), len(run_seeds)))  # new seeds
    for j, key in enumerate(run_seeds):
        if key is not None and str(key) in known:
            out[:, j] = sd * z[:, known.index(str(key))]
    return out


def new_kind_offsets(idata, rng: np.random.Generator, shape: tuple) -> np.ndarray | float:
    """A new run's offsets of every seed kind the posterior has (``weight_seed_sd``, ``data_seed_sd``):
    a new weight seed and a new data seed, summed, shape ``shape`` (S, n); 0.0 without seed kinds.
    The headline prediction for a new seed integrates both."""
    out = 0.0
    for kind in SEED_KINDS:
        if f"{kind}_sd" in idata.posterior:
            out = out + _bayes.posterior_draws(idata, f"{kind}_sd")[:, None] * rng.standard_normal(shape)
    return out


def _run_seeds(idata, run_seed, design: dict) -> list:
    """``run_seed`` (None, one seed, or one per planned run) as each planned run's seed key (with a
    ``seed_within`` posterior: the seed and the run's value of that design factor), or Nones."""
    n = len(design["B"])
    if run_seed is None:
        return [None] * n
    if "seed_sd" not in idata.posterior:
        raise UPTLawError("run_seed: this posterior has no seed effect (fitted without "
                          "seed_effect / --seed-effect on), so the seed would be ignored; drop it")
    seeds = [run_seed] if np.ndim(run_seed) == 0 else list(run_seed)
    if len(seeds) not in (1, n):
        raise UPTLawError(f"run_seed: one seed or one per planned run ({n}), got {len(seeds)}")
    seeds = seeds * n if len(seeds) == 1 else seeds
    within = str(idata.posterior.attrs.get("seed_within", "") or "")
    if within and within not in design:
        raise UPTLawError(f"run_seed: this posterior's seed offsets are per seed and {within}, which a "
                          f"planned run's B, C and N do not give; predict without run_seed (a new seed)")
    return [seed_key(s, within or None, design[within][j] if within else None) for j, s in enumerate(seeds)]


def predict_from_posterior(idata, B, C, N=None, *, hdi_prob: float = 0.9,
                           seed: int = 0, run_seed=None) -> pd.DataFrame:
    """Predicted UPT for planned runs from a fitted posterior (any saved UPT-law netCDF).

    Parameters
    ----------
    idata : arviz.InferenceData
        Posterior with ``alpha, a, b[, c], sigma[, nu]`` and ``center_log*`` attributes.
    B, C, N : float or array-like
        Batch size (sequences per update), context length, non-embedding parameters (needed
        only when the posterior has the size term). Broadcast together.
    hdi_prob : float
        Interval width.
    seed : int
        Seed of the draws of new cells, seeds and scatter.
    run_seed : optional
        The planned run's training seed (one for all, or one per run), with a posterior that has a
        seed effect: a seed the fit saw shifts ``pred_lo/pred_hi`` by its fitted offset; None or an
        unseen seed draws a new seed's offset (a wider interval).

    Returns
    -------
    pandas.DataFrame
        ``upt`` (posterior median of the law's UPT), ``upt_lo/upt_hi`` (HDI of the law line:
        parameter uncertainty), ``cell_lo/cell_hi`` (HDI of a new cell's typical UPT: adds the
        cell-level residual ``cell_sd`` when the fit has a cell effect, else equal to
        ``upt_lo/upt_hi``), ``pred_lo/pred_hi`` (HDI of a new run's UPT in a new cell: adds the
        run-to-run scatter sigma, excluding measurement error, and with a seed effect the run's seed
        offset; a ``sigma_by`` fit takes the planned run's level, or a new level's, see
        ``planned_run_sigma``), and ``tokens = upt * B * C``.
    """
    attrs = idata.posterior.attrs
    size_term = bool(int(attrs.get("size_term", 0)))
    if size_term and N is None:
        raise UPTLawError("N: this posterior has a model-size term; pass N (non-embedding params)")
    B, C = design_values("B", B), design_values("C", C)
    N = design_values("N", N) if N is not None else np.array([np.nan])
    B, C, N = np.broadcast_arrays(B, C, N)
    logs = {"B": np.log(B), "C": np.log(C), **({"N": np.log(N)} if size_term else {})}
    mu = _bayes.posterior_draws(idata, "alpha")[:, None] + line_draws(  # (S, n), in the posterior's form
        posterior_form(idata), lambda name: _bayes.posterior_draws(idata, name)[:, None], logs,
        {k: attrs[f"center_log{k}"] for k in logs})
    rng = np.random.default_rng(seed)
    if "nu" in idata.posterior:
        eps = rng.standard_t(_bayes.posterior_draws(idata, "nu")[:, None], size=mu.shape)
    else:
        eps = rng.standard_normal(mu.shape)
    cell = mu
    if "cell_sd" in idata.posterior:  # a planned (B, C) is a new cell: its own offset from the law
        cell = mu + _bayes.posterior_draws(idata, "cell_sd")[:, None] * rng.standard_normal(mu.shape)
    design = {"B": B, "C": C, "N": N}
    new = (cell + seed_offset_draws(idata, _run_seeds(idata, run_seed, design), rng)
           + new_kind_offsets(idata, rng, mu.shape) + planned_run_sigma(idata, design, rng) * eps)
    out = []
    for j in range(mu.shape[1]):
        lo, hi = _bayes.hdi(mu[:, j], hdi_prob=hdi_prob)
        plo, phi = _bayes.hdi(new[:, j], hdi_prob=hdi_prob)
        clo, chi = _bayes.hdi(cell[:, j], hdi_prob=hdi_prob)
        upt = float(np.exp(np.median(mu[:, j])))
        out.append({"B": B[j], "C": C[j], "N": N[j], "upt": upt, "upt_lo": np.exp(lo),
                    "upt_hi": np.exp(hi), "cell_lo": np.exp(clo), "cell_hi": np.exp(chi),
                    "pred_lo": np.exp(plo), "pred_hi": np.exp(phi),
                    "tokens": upt * B[j] * C[j], "hdi_prob": hdi_prob})
    return pd.DataFrame(out)


def ols_fit(data: LawData, level: float = 0.9) -> pd.DataFrame:
    """OLS in log space on uncensored runs; exponents with the sign convention of the law.

    A factor with one value among the uncensored runs (every formed run at one C, the others
    censored) has no OLS slope: its row is NaN and ``attrs["constant"]`` names it, rather than
    letting its constant column stand in for the intercept."""
    import statsmodels.api as sm  # ~1 s to import; only fits and reports need it

    obs = ~data.censored
    names = list(data.logs)
    varying = data.varying_among_formed(names)
    X = sm.add_constant(np.column_stack([data.logs[k][obs] for k in varying]) if varying
                        else np.empty((int(obs.sum()), 0)), has_constant="add")
    fit = sm.OLS(data.y[obs], X).fit()
    ci = np.asarray(fit.conf_int(alpha=1 - level))
    out = [{"param": "log_T", "estimate": fit.params[0], "se": fit.bse[0],
            "ci_lo": ci[0, 0], "ci_hi": ci[0, 1]}]
    for k in names:
        if k not in varying:
            out.append({"param": COEF[k], "estimate": np.nan, "se": np.nan, "ci_lo": np.nan, "ci_hi": np.nan})
            continue
        j = varying.index(k) + 1
        # log UPT = log T - a log B: the exponent is minus the slope.
        out.append({"param": COEF[k], "estimate": -fit.params[j], "se": fit.bse[j],
                    "ci_lo": -ci[j, 1], "ci_hi": -ci[j, 0]})
    out.append({"param": "sigma", "estimate": float(np.sqrt(fit.scale)), "se": np.nan,
                "ci_lo": np.nan, "ci_hi": np.nan})
    frame = pd.DataFrame(out).set_index("param")
    frame.attrs.update(n_obs=int(obs.sum()), r2=float(fit.rsquared), level=level,
                       constant=[k for k in names if k not in varying])
    return frame


def planned_run_sigma(idata, design: dict, rng) -> np.ndarray:
    """Draws of a planned run's scatter, (S, 1) or (S, n): the shared sigma; with ``sigma_by`` a
    design factor (B, C, N), the fitted level's sigma where the value is one, else a new level
    drawn from the hierarchy (``exp(log_sigma_mu + log_sigma_sd * z)``); with ``sigma_by`` another
    column, always a new level."""
    post = idata.posterior
    sigma = np.asarray(post["sigma"].values, dtype=float)
    if "sigma_level" not in post["sigma"].dims:
        return sigma.reshape(-1, 1)
    sigma = sigma.reshape(-1, sigma.shape[-1])
    new = np.exp(_bayes.posterior_draws(idata, "log_sigma_mu")[:, None]
                 + _bayes.posterior_draws(idata, "log_sigma_sd")[:, None]
                 * rng.standard_normal((sigma.shape[0], len(design["B"]))))
    levels = [str(v) for v in post["sigma_level"].values]
    by = post.attrs.get("sigma_by", "")
    for j, v in enumerate(design.get(by, [np.nan] * len(design["B"]))):
        if np.isfinite(v) and f"{v:g}" in levels:
            new[:, j] = sigma[:, levels.index(f"{v:g}")]
    return new


@dataclass
class LawPosterior:
    """What every fitted law holds (the law's :class:`UPTLawResults`, the mixture's
    ``MixtureResults``): its model, posterior, timings and sampler settings.

    Attributes
    ----------
    model : UPTLawModel or CircuitMixtureModel
        The built model (``.spec``, ``.data``) the posterior belongs to.
    idata : arviz.InferenceData
    timings : dict
        Wall seconds of the compile+sample call, of sampling, of the log-likelihood.
    sampler : dict
        ``draws, tune, chains, seed, target_accept``.
    """

    model: object  # the model (not imported: it imports this module)
    idata: object
    timings: dict
    sampler: dict

    @property
    def spec(self) -> UPTLawSpec:
        return self.model.spec

    @property
    def data(self) -> LawData:
        return self.model.data


@dataclass
class UPTLawResults(LawPosterior):
    """A fitted UPT law: posterior, summaries, checks, predictions, saving (the fields:
    :class:`LawPosterior`)."""

    @property
    def params(self) -> list[str]:
        p = FORM_PARAMS[self.spec.form] + (["c"] if self.spec.size_term else []) + ["sigma"]
        p += ["cell_sd"] if self.spec.cell_effect else []
        p += ["seed_sd", "seed_offset"] if self.spec.seed_effect else []
        p += [f"{k}_sd" for k in SEED_KINDS if k in (self.data.kinds or {})]
        p += ["log_sigma_mu", "log_sigma_sd"] if self.spec.sigma_by else []
        return p + (["nu"] if self.spec.likelihood == "student_t" else [])

    def summary(self, hdi_prob: float | None = None) -> pd.DataFrame:
        """Posterior summary of the law parameters (mean, sd, HDI at ``hdi_prob``, r_hat, ESS)."""
        s = _bayes.summary(self.idata, self.params, hdi_prob=hdi_prob or self.spec.hdi_prob)
        s.index.name = "param"
        return s

    def mu_draws(self) -> np.ndarray:
        """Posterior draws of each run's expected log UPT, shape (S, n_runs)."""
        return mu_draws(self.data, self.idata)

    @property
    def r_obs_pred(self) -> float:
        """Pearson r between posterior-mean predicted and observed log UPT (uncensored runs)."""
        obs = ~self.data.censored
        pred = self.mu_draws().mean(axis=0)
        return float(np.corrcoef(pred[obs], self.data.y[obs])[0, 1])

    def ppc(self, seed: int = 0):
        """Posterior predictive draws of the observed (censored) log onset, added to ``idata``
        (and, when it has a ``prior`` group, the prior predictive as ``prior_predictive``).

        One replicate per draw: ``mu + scale * t(nu)``, clipped at each censored run's
        ``log last_step`` exactly as the censored likelihood sees the data. Drawn in numpy
        (the model is simple) to skip a pytensor compile; PyMC cannot draw it, the censored
        runs enter through a ``pm.Potential``.
        """
        have = _bayes.groups(self.idata)
        runs = {"run": self.data.table["run_id"].astype(str).tolist()}
        todo = [("posterior_predictive", self.idata.posterior, seed)]
        if "prior" in have:
            todo.append(("prior_predictive", _bayes.group_dataset(self.idata, "prior"), seed + 1))
        for group, draws, s in todo:
            if group in have:
                continue
            rep = replicates(self.data, SimpleNamespace(posterior=draws), np.random.default_rng(s), self.spec.form)
            c, d = draws.sizes["chain"], draws.sizes["draw"]
            _bayes.add_group(self.idata, group, {OBS: (("chain", "draw", "run"), rep.reshape(c, d, -1))},
                             coords={"chain": draws["chain"].values, "draw": draws["draw"].values, **runs},
                             sample_dims=False)
        return self.idata.posterior_predictive

    def loo(self):
        """PSIS-LOO (ArviZ ``ELPDData``) of the censored likelihood."""
        return _bayes.loo(self.idata, var_name=OBS)

    def predict(self, B, C, N=None, hdi_prob: float | None = None, run_seed=None) -> pd.DataFrame:
        """Predicted UPT with intervals for planned runs; see ``predict_from_posterior``."""
        return predict_from_posterior(self.idata, B, C, N, hdi_prob=hdi_prob or self.spec.hdi_prob,
                                      run_seed=run_seed)

    def diagnostics(self, *, rhat_max: float = 1.01, ess_min: float = 400) -> list[str]:
        """Sampler warnings (divergences, r_hat, ESS); empty when all checks pass."""
        return _bayes.sampler_warnings(self.idata, self.summary(),
                                       target_accept=self.sampler["target_accept"],
                                       rhat_max=rhat_max, ess_min=ess_min, skip=("T", "S_min", "B_noise"))

    def ols(self, level: float | None = None) -> pd.DataFrame:
        """Frequentist cross-check: OLS of log onset on log B, log C (and log N) over uncensored
        runs (statsmodels), as ``a, b, log_T[, c], sigma`` with a ``level`` confidence interval."""
        return ols_fit(self.data, level or self.spec.hdi_prob)

    def save(self, out_dir) -> dict:
        """Write the fit's folder (:func:`ihstats._bayes.save_fit`): ``idata.nc``,
        ``summary.csv``, ``fit.json`` (spec, priors, sampler, timings, run counts, centres, fitted
        range, r, diagnostics, published values, versions) and ``ols.csv``; returns
        ``{"idata", "summary", "fit", "ols"}`` -> path."""
        record = {
            "model": FORM_TEXT[self.spec.form] + (" - c log N" if self.spec.size_term else ""),
            "form": self.spec.form,
            "spec": asdict(self.spec), "priors": self.spec.resolved_priors,
            "sampler": self.sampler, "timings_s": self.timings,
            "n_runs": int(len(self.data.y)), "n_censored": int(self.data.censored.sum()),
            "centres": self.data.centres, "fitted_range": fitted_range(self.idata),
            "r_obs_pred": self.r_obs_pred, "hdi_prob": self.spec.hdi_prob,
            "diagnostics": self.diagnostics(), "published": PUBLISHED,
            "versions": _bayes.versions(),
        }
        return _bayes.save_fit(out_dir, self.idata, self.summary().reset_index(), record,
                               tables={"ols": self.ols().reset_index()})
