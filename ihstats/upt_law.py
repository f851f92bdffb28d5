"""Bayesian power law for updates-to-emergence (UPT).

Model (one row per run of an emergence table, docs/DESIGN.md columns)::

    log UPT_i = log T - a log B_i - b log C_i [- c log N_i] + eps_i

fitted on centred log predictors ``x = log B - mean(log B)`` (same for C, N), so the intercept
``alpha`` is the expected log UPT at the design's centre and ``log T = alpha + a mean(log B) +
b mean(log C) [+ c mean(log N)]`` is a derived quantity (reported as ``log_T`` and ``T``).

Priors (weakly informative on the centred log scale)::

    alpha ~ Normal(mean observed log onset, 2)   # data-centred: only the location is borrowed
    a, b  ~ Normal(0.5, 0.5)                      # both published values (0.37, 0.62) well inside
    c     ~ Normal(0, 0.5)                        # size term centred on "no effect"
    sigma ~ HalfNormal(1)                         # run-to-run scatter in log updates
    nu    ~ Gamma(2, 0.1)                         # Student-t dof (robust likelihood)

Measurement error: each uncensored run's onset interval ``[onset_lo, onset_hi]`` at level
``level`` gives ``s_i = (log hi - log lo) / (2 z)`` with ``z = Phi^-1(0.5 + level / 2)``; it is
added in quadrature to the likelihood scale, ``scale_i = sqrt(sigma^2 + s_i^2)`` (equivalent to
integrating out a latent true log UPT under a Gaussian error; no extra parameters, fast to
sample). Censored runs have no interval and take the median ``s_i`` of the uncensored runs.
A bracketing interval (``interval_kind = "bracketing"``: pelt, threshold) has no level and is
read as uniform over the bracket in log step, ``s_i = (log hi - log lo) / sqrt(12)``.

Censoring: a run with ``censored = True`` showed no emergence by ``last_step``, so its UPT is
only known to exceed ``last_step``; it enters through ``pm.Censored`` as the log survival
function ``log P(log UPT > log last_step)`` (not dropped, not imputed).

Use::

    law = UPTLaw(UPTLawSpec())
    model = law.build(table)                       # the pm.Model
    res = law.fit(draws=1000, tune=1000, chains=4, seed=0)
    res.summary(); res.predict(B=512, C=2048); res.save("out/")
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from ihstats import _bayes
from ihstats.tables import boolean_column, rows

REQUIRED_COLUMNS = ("run_id", "B", "C", "onset", "censored", "last_step")
INTERVAL_COLUMNS = ("onset_lo", "onset_hi")
#: Published exponents (Aoyama et al. 2025): reference lines in reports.
PUBLISHED = {"a": 0.37, "b": 0.62, "log_T": 13.26}
DEFAULT_PRIORS = {
    "a": (0.5, 0.5),          # Normal(mu, sd)
    "b": (0.5, 0.5),          # Normal(mu, sd)
    "c": (0.0, 0.5),          # Normal(mu, sd)
    "alpha_sd": 2.0,          # Normal(mean observed log onset, alpha_sd)
    "sigma": 1.0,             # HalfNormal(sd)
    "nu": (2.0, 0.1),         # Gamma(alpha, beta)
    "cell_sd": 0.5,           # HalfNormal(sd) of the cell effect (cell_effect=True)
}
OBS = "log_upt"


class UPTLawError(ValueError):
    """Bad input to the UPT law fit; the message names the field and what is allowed."""


@dataclass(frozen=True)
class UPTLawSpec:
    """What to fit.

    Parameters
    ----------
    size_term : bool
        Add ``- c log N`` (needs an ``N`` column with two or more distinct values).
    priors : dict
        Overrides of ``DEFAULT_PRIORS`` (keys ``a, b, c, alpha_sd, sigma, nu``).
    likelihood : {"student_t", "normal"}
        Robust Student-t (default) or Gaussian noise.
    measurement_error : bool
        Use the onset intervals (columns ``onset_lo``, ``onset_hi``, ``level``).
    metric : str or None
        Keep rows of this ``metric``; None takes the only metric present (or ``ps``).
    interval_level : float
        Level of the onset intervals when the table has no ``level`` column.
    hdi_prob : float
        Default interval width of summaries and predictions.
    cell_effect : bool
        With replicates (several seeds per ``cell_id``): a per-cell effect
        ``cell_sd * z_cell`` on log UPT, so ``cell_sd`` is the law's own residual (how far cells
        sit from the line) and ``sigma`` the seed-to-seed scatter within a cell.
    """

    size_term: bool = False
    priors: dict = field(default_factory=dict)
    likelihood: Literal["student_t", "normal"] = "student_t"
    measurement_error: bool = True
    metric: str | None = None
    interval_level: float = 0.9
    hdi_prob: float = 0.9
    cell_effect: bool = False

    def __post_init__(self):
        if self.likelihood not in ("student_t", "normal"):
            raise UPTLawError(f"likelihood: must be 'student_t' or 'normal', got {self.likelihood!r}")
        unknown = set(self.priors) - set(DEFAULT_PRIORS)
        if unknown:
            raise UPTLawError(f"priors: unknown key(s) {sorted(unknown)}; allowed: "
                              f"{sorted(DEFAULT_PRIORS)}")
        for name in ("interval_level", "hdi_prob"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise UPTLawError(f"{name}: must be in (0, 1), got {getattr(self, name)}")

    @property
    def resolved_priors(self) -> dict:
        return {**DEFAULT_PRIORS, **self.priors}


@dataclass
class LawData:
    """Validated arrays for the model (one entry per run)."""

    table: pd.DataFrame
    y: np.ndarray          # log onset (uncensored) or log last_step (censored)
    upper: np.ndarray      # +inf (uncensored) or log last_step (censored)
    censored: np.ndarray   # bool
    me_sd: np.ndarray      # measurement sd on the log scale (0 when measurement_error=False)
    logs: dict             # {"B": log B, "C": ..., ["N": ...]}
    centres: dict          # {"B": mean log B, ...}
    cell_idx: np.ndarray | None = None  # run -> index into cells (cell_effect)
    cells: list | None = None           # cell ids in index order

    @property
    def x(self) -> dict:
        return {k: v - self.centres[k] for k, v in self.logs.items()}


def _fail(msg: str):
    raise UPTLawError(msg)


def prepare(table: pd.DataFrame, spec: UPTLawSpec) -> LawData:
    """Validate an emergence table and turn it into model arrays.

    Raises
    ------
    UPTLawError
        Missing columns, a blank or non-boolean ``censored`` cell, a non-finite or non-positive
        UPT (uncensored runs) or last_step, ``onset_lo <= onset <= onset_hi`` broken, a single
        distinct B or C (exponent not identifiable), all runs censored, duplicated run ids; each
        message names the column and the rows (by run_id).
    """
    if not isinstance(table, pd.DataFrame):
        _fail(f"table: expected a pandas DataFrame, got {type(table).__name__}")
    df = table.copy()
    if "N" not in df.columns and "n_params" in df.columns:
        df["N"] = df["n_params"]
    need = list(REQUIRED_COLUMNS) + (["N"] if spec.size_term else [])
    if spec.measurement_error:
        need += list(INTERVAL_COLUMNS)
    missing = [c for c in need if c not in df.columns]
    if missing:
        hint = (" (or fit with measurement_error=False / --no-measurement-error)"
                if set(missing) & set(INTERVAL_COLUMNS) else "")
        _fail(f"emergence table: missing column(s) {missing}; required: {need}{hint}")
    if "metric" in df.columns:
        metrics = sorted(df["metric"].astype(str).unique())
        metric = spec.metric or (metrics[0] if len(metrics) == 1 else "ps" if "ps" in metrics
                                 else None)
        if metric is None or metric not in metrics:
            _fail(f"metric: {spec.metric or 'none chosen'!r} not in the table's metrics {metrics}; "
                  f"pass metric= / --metric")
        df = df[df["metric"].astype(str) == metric]
    if df["run_id"].duplicated().any():
        dup = df.loc[df["run_id"].duplicated(), "run_id"].astype(str).unique()[:3].tolist()
        _fail(f"run_id: duplicated rows {dup}; the law needs one row per run (filter by "
              f"metric/head first)")
    if len(df) == 0:
        _fail("emergence table: no rows to fit")
    cens = boolean_column(df, "censored", error=UPTLawError)
    for col in ("B", "C", "last_step") + (("N",) if spec.size_term else ()):
        v = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
        if not np.all(np.isfinite(v) & (v > 0)):
            _fail(f"{col}: must be a positive number in every row")
    onset = pd.to_numeric(df["onset"], errors="coerce").to_numpy(dtype=float)
    last = df["last_step"].to_numpy(dtype=float)
    if cens.all():
        _fail(f"censored: all {len(df)} runs are censored (no emergence by last_step); the law "
              f"cannot be fitted: train longer or add runs that emerge")
    bad = ~cens & ~(np.isfinite(onset) & (onset > 0))
    if bad.any():
        _fail(f"onset: UPT must be a finite number > 0 updates for uncensored runs; got "
              f"{onset[bad][:3].tolist()} in {rows(df, bad)}: fix the onset or mark the run "
              f"censored")
    _check_intervals(df, onset)
    for col, par in (("B", "a"), ("C", "b")) + ((("N", "c"),) if spec.size_term else ()):
        vals = np.unique(df[col].to_numpy(dtype=float))
        if len(vals) < 2:
            _fail(f"{col}: only one distinct value ({vals[0]:g}); the exponent {par} is not "
                  f"identifiable: the table needs runs at two or more values of {col}")
    n_free = 3 + int(spec.size_term)
    if (~cens).sum() < n_free:
        _fail(f"censored: only {(~cens).sum()} uncensored runs; need at least {n_free}")

    y = np.where(cens, np.log(last), np.log(np.where(cens, 1.0, onset)))
    upper = np.where(cens, np.log(last), np.inf)
    me_sd = np.zeros(len(df))
    if spec.measurement_error:
        level = (pd.to_numeric(df["level"], errors="coerce").to_numpy(dtype=float)
                 if "level" in df.columns else np.full(len(df), spec.interval_level))
        level = np.where(np.isfinite(level), level, spec.interval_level)
        if np.any((level <= 0) | (level >= 1)):
            _fail("level: interval levels must be in (0, 1)")
        z = stats.norm.ppf(0.5 + level / 2)
        lo = pd.to_numeric(df["onset_lo"], errors="coerce").to_numpy(dtype=float)
        hi = pd.to_numeric(df["onset_hi"], errors="coerce").to_numpy(dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            two_sided = (np.log(hi) - np.log(lo)) / (2 * z)
            # An interval touching 0 updates has no log lower end: use its upper half only.
            upper_half = (np.log(hi) - np.log(onset)) / z
        sd = np.where(lo > 0, two_sided, upper_half)
        # pelt/threshold brackets carry no level: the onset is anywhere between two checkpoints
        kind = df["interval_kind"].astype(str).to_numpy() if "interval_kind" in df.columns else np.array([""] * len(df))
        with np.errstate(divide="ignore", invalid="ignore"):
            sd = np.where(kind == "bracketing", (np.log(hi) - np.log(lo)) / np.sqrt(12), sd)
        ok = ~cens & np.isfinite(sd) & (sd >= 0)
        fill = float(np.median(sd[ok])) if ok.any() else 0.0
        me_sd = np.where(ok, sd, fill)
    logs = {"B": np.log(df["B"].to_numpy(dtype=float)), "C": np.log(df["C"].to_numpy(dtype=float))}
    if spec.size_term:
        logs["N"] = np.log(df["N"].to_numpy(dtype=float))
    centres = {k: float(v.mean()) for k, v in logs.items()}
    cell_idx, cells = _cells(df, spec)
    return LawData(table=df.reset_index(drop=True), y=y, upper=upper, censored=cens,
                   me_sd=me_sd, logs=logs, centres=centres, cell_idx=cell_idx, cells=cells)


def _cells(df: pd.DataFrame, spec: UPTLawSpec):
    """Run -> cell index for the cell effect (None without it); needs replicates to separate it."""
    if not spec.cell_effect:
        return None, None
    if "cell_id" not in df.columns:
        _fail("cell_id: the cell effect needs a cell_id column (emergence tables of grids carry it); "
              "fit without cell_effect / --cell-effect off")
    codes, cells = pd.factorize(df["cell_id"].astype(str))
    if len(cells) == len(df):
        _fail("cell_id: every run is its own cell, so a cell effect cannot be told from the seed "
              "scatter; add seeds (grid --seeds N) or fit without cell_effect / --cell-effect off")
    return codes.astype(int), list(cells)


def _check_intervals(df: pd.DataFrame, onset: np.ndarray) -> None:
    """``onset_lo <= onset <= onset_hi`` wherever both ends of a pair are given: a swapped or
    missed interval would otherwise fit quietly and crash later in the report's error bars."""
    cols = {c: pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float)
            for c in INTERVAL_COLUMNS if c in df.columns}
    cols["onset"] = onset
    for lo, hi in (("onset_lo", "onset"), ("onset", "onset_hi"), ("onset_lo", "onset_hi")):
        if lo in cols and hi in cols:
            with np.errstate(invalid="ignore"):
                bad = cols[lo] > cols[hi]          # NaN (not given) compares False: not checked
            if bad.any():
                _fail(f"{lo}, {hi}: {lo} > {hi} in {rows(df, bad)}; the interval must hold the "
                      f"onset (onset_lo <= onset <= onset_hi): swap or fix those cells")


_COEF = {"B": "a", "C": "b", "N": "c"}


class UPTLaw:
    """Spec -> build -> fit for the UPT power law (see the module docstring for the model)."""

    def __init__(self, spec: UPTLawSpec | None = None):
        self.spec = spec or UPTLawSpec()
        self.data: LawData | None = None
        self.model = None

    def build(self, table: pd.DataFrame):
        """Validate ``table`` and build the PyMC model; returns the ``pm.Model``."""
        import pymc as pm
        import pytensor.tensor as pt

        self.data = d = prepare(table, self.spec)
        pr = self.spec.resolved_priors
        coords = {"run": d.table["run_id"].astype(str).tolist()}
        if d.cells is not None:
            coords["cell"] = d.cells
        with pm.Model(coords=coords) as model:
            alpha = pm.Normal("alpha", mu=float(d.y[~d.censored].mean()), sigma=pr["alpha_sd"])
            mu = alpha
            for k, x in d.x.items():
                name = _COEF[k]
                m, s = pr[name]
                coef = pm.Normal(name, mu=m, sigma=s)
                mu = mu - coef * pm.Data(f"x_{k}", x, dims="run")
            if d.cells is not None:  # non-centred: cell_z ~ N(0, 1) samples well at small cell_sd
                cell_sd = pm.HalfNormal("cell_sd", sigma=pr["cell_sd"])
                cell_z = pm.Normal("cell_z", 0.0, 1.0, dims="cell")
                mu = mu + cell_sd * cell_z[d.cell_idx]
            sigma = pm.HalfNormal("sigma", sigma=pr["sigma"])
            scale = pt.sqrt(sigma**2 + pm.Data("me_sd", d.me_sd, dims="run") ** 2)
            obs, cen = np.flatnonzero(~d.censored), np.flatnonzero(d.censored)
            # Uncensored runs: density of the observed log onset. Censored runs: log survival
            # at log last_step (a Potential; same terms as pm.Censored, but the Student-t
            # survival uses an Op with a cheap gradient, which cuts the compile from ~40 s to
            # a few seconds; see _bayes.student_t_logsf).
            z_cen = (d.upper[cen] - mu[cen]) / scale[cen]
            if self.spec.likelihood == "student_t":
                nu = pm.Gamma("nu", alpha=pr["nu"][0], beta=pr["nu"][1])
                pm.StudentT(OBS + "_uncensored", nu=nu, mu=mu[obs], sigma=scale[obs],
                            observed=d.y[obs])
                if len(cen):
                    pm.Potential(OBS + "_censored", _bayes.student_t_logsf(z_cen, nu))
            else:
                pm.Normal(OBS + "_uncensored", mu=mu[obs], sigma=scale[obs], observed=d.y[obs])
                if len(cen):
                    pm.Potential(OBS + "_censored", pm.logccdf(pm.Normal.dist(), z_cen))
        self.model = model
        return model

    def fit(self, table: pd.DataFrame | None = None, *, draws: int = 1000, tune: int = 1000,
            chains: int = 4, seed: int = 0, target_accept: float = 0.9,
            cores: int = 1) -> "UPTLawResults":
        """Sample the posterior with NUTS (builds first when ``table`` is given)."""
        if table is not None:
            self.build(table)
        if self.model is None:
            raise UPTLawError("table: call build(table) or pass fit(table, ...) first")
        # log T and T are derived after sampling (not pm.Deterministic) and the pointwise
        # log-likelihood is computed in numpy: each avoids one more pytensor compile, which
        # dominates the run time of this small model.
        idata, timings = _bayes.sample(self.model, draws=draws, tune=tune, chains=chains,
                                       seed=seed, target_accept=target_accept, cores=cores,
                                       log_likelihood=False)
        post = idata.posterior
        log_T = post["alpha"] + sum(post[_COEF[k]] * c for k, c in self.data.centres.items())
        idata.posterior["log_T"] = log_T
        idata.posterior["T"] = np.exp(log_T)
        runs = {"run": list(self.model.coords["run"])}
        _bayes.add_group(idata, "log_likelihood",
                         {OBS: (("chain", "draw", "run"), loglik(self.data, idata))}, coords=runs)
        # All runs, censored ones at log last_step (what the censored likelihood conditions on).
        _bayes.add_group(idata, "observed_data", {OBS: (("run",), self.data.y)}, coords=runs,
                         sample_dims=False)
        attrs = {f"center_log{k}": v for k, v in self.data.centres.items()}
        # The fitted range travels with the posterior so predict can warn when it extrapolates.
        for k in self.data.logs:
            v = self.data.table[k].to_numpy(dtype=float)
            attrs.update({f"min_{k}": float(v.min()), f"max_{k}": float(v.max())})
        attrs.update(size_term=int(self.spec.size_term), likelihood=self.spec.likelihood,
                     cell_effect=int(self.spec.cell_effect),
                     model="ihstats.upt_law", ihstats_versions=json.dumps(_bayes.versions()))
        idata.posterior.attrs.update(attrs)
        return UPTLawResults(self.spec, self.data, idata, self.model, timings,
                             sampler=dict(draws=draws, tune=tune, chains=chains, seed=seed,
                                          target_accept=target_accept))


def _scale_nu(data: LawData, idata):
    """Per-draw, per-run likelihood scale (S, n) and dof (S, 1) or None (Gaussian)."""
    sigma = _bayes.posterior_draws(idata, "sigma")[:, None]
    scale = np.sqrt(sigma**2 + data.me_sd[None] ** 2)
    nu = _bayes.posterior_draws(idata, "nu")[:, None] if "nu" in idata.posterior else None
    return scale, nu


def _mu_draws(data: LawData, idata) -> np.ndarray:
    mu = _bayes.posterior_draws(idata, "alpha")[:, None]
    for k, x in data.x.items():
        mu = mu - _bayes.posterior_draws(idata, _COEF[k])[:, None] * x[None]
    if data.cell_idx is not None:
        z = np.asarray(idata.posterior["cell_z"].values, dtype=float).reshape(mu.shape[0], -1)
        mu = mu + _bayes.posterior_draws(idata, "cell_sd")[:, None] * z[:, data.cell_idx]
    return mu  # (S, n)


def loglik(data: LawData, idata) -> np.ndarray:
    """Pointwise log-likelihood, shape (chain, draw, run): log density of the observed log onset
    for uncensored runs, log survival ``log P(log UPT > log last_step)`` for censored runs.
    Same likelihood as the PyMC model (checked in tests), computed with scipy."""
    mu = _mu_draws(data, idata)
    scale, nu = _scale_nu(data, idata)
    dist = stats.t(df=nu, loc=mu, scale=scale) if nu is not None else stats.norm(mu, scale)
    y = np.broadcast_to(data.y[None], mu.shape)
    ll = np.where(data.censored[None], dist.logsf(y), dist.logpdf(y))
    c, d = idata.posterior.sizes["chain"], idata.posterior.sizes["draw"]
    return ll.reshape(c, d, -1)


def _design_values(name: str, values) -> np.ndarray:
    """A design factor as a float array; NaN, inf or <= 0 has no log and would print as a
    prediction (NaN updates, or 0 from an overflow), so it is refused here."""
    try:
        v = np.atleast_1d(np.asarray(values, dtype=float))
    except (TypeError, ValueError):
        raise UPTLawError(f"{name}: must be a number, got {values!r}") from None
    bad = ~(np.isfinite(v) & (v > 0))
    if bad.any():
        raise UPTLawError(f"{name}: must be a finite number > 0, got {v[bad][:3].tolist()}")
    return v


def fitted_range(idata) -> dict:
    """``{factor: [min, max]}`` of the table the posterior was fitted on; empty for posteriors
    saved before the range was recorded."""
    attrs = idata.posterior.attrs
    return {k: [float(attrs[f"min_{k}"]), float(attrs[f"max_{k}"])] for k in _COEF
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


def predict_from_posterior(idata, B, C, N=None, *, hdi_prob: float = 0.9,
                           seed: int = 0) -> pd.DataFrame:
    """Predicted UPT for planned runs from a fitted posterior (any saved ``upt_law`` netCDF).

    Parameters
    ----------
    idata : arviz.InferenceData
        Posterior with ``alpha, a, b[, c], sigma[, nu]`` and ``center_log*`` attributes.
    B, C, N : float or array-like
        Batch size (sequences per update), context length, non-embedding parameters (needed
        only when the posterior has the size term). Broadcast together.
    hdi_prob : float
        Interval width.

    Returns
    -------
    pandas.DataFrame
        ``upt`` (posterior median of the law's UPT), ``upt_lo/upt_hi`` (HDI of the law line:
        parameter uncertainty), ``cell_lo/cell_hi`` (HDI of a new cell's typical UPT: adds the
        cell-level residual ``cell_sd`` when the fit has a cell effect, else equal to
        ``upt_lo/upt_hi``), ``pred_lo/pred_hi`` (HDI of a new run's UPT in a new cell: adds the
        run-to-run scatter sigma, excluding measurement error), and ``tokens = upt * B * C``.
    """
    attrs = idata.posterior.attrs
    size_term = bool(int(attrs.get("size_term", 0)))
    if size_term and N is None:
        raise UPTLawError("N: this posterior has a model-size term; pass N (non-embedding params)")
    B, C = _design_values("B", B), _design_values("C", C)
    N = _design_values("N", N) if N is not None else np.array([np.nan])
    B, C, N = np.broadcast_arrays(B, C, N)
    draw = {k: _bayes.posterior_draws(idata, k) for k in ("alpha", "a", "b", "sigma")}
    mu = (draw["alpha"][:, None]
          - draw["a"][:, None] * (np.log(B) - attrs["center_logB"])[None]
          - draw["b"][:, None] * (np.log(C) - attrs["center_logC"])[None])  # (S, n)
    if size_term:
        mu = mu - _bayes.posterior_draws(idata, "c")[:, None] * (np.log(N) - attrs["center_logN"])
    rng = np.random.default_rng(seed)
    if "nu" in idata.posterior:
        eps = rng.standard_t(_bayes.posterior_draws(idata, "nu")[:, None], size=mu.shape)
    else:
        eps = rng.standard_normal(mu.shape)
    cell = mu
    if "cell_sd" in idata.posterior:  # a planned (B, C) is a new cell: its own offset from the law
        cell = mu + _bayes.posterior_draws(idata, "cell_sd")[:, None] * rng.standard_normal(mu.shape)
    new = cell + draw["sigma"][:, None] * eps
    rows = []
    for j in range(mu.shape[1]):
        lo, hi = _bayes.hdi(mu[:, j], hdi_prob=hdi_prob)
        plo, phi = _bayes.hdi(new[:, j], hdi_prob=hdi_prob)
        clo, chi = _bayes.hdi(cell[:, j], hdi_prob=hdi_prob)
        upt = float(np.exp(np.median(mu[:, j])))
        rows.append({"B": B[j], "C": C[j], "N": N[j], "upt": upt, "upt_lo": np.exp(lo),
                     "upt_hi": np.exp(hi), "cell_lo": np.exp(clo), "cell_hi": np.exp(chi),
                     "pred_lo": np.exp(plo), "pred_hi": np.exp(phi),
                     "tokens": upt * B[j] * C[j], "hdi_prob": hdi_prob})
    return pd.DataFrame(rows)


class UPTLawResults:
    """A fitted UPT law: posterior, summaries, checks, predictions, saving."""

    def __init__(self, spec, data, idata, model, timings, sampler):
        self.spec, self.data, self.idata, self.model = spec, data, idata, model
        self.timings, self.sampler = timings, sampler

    @property
    def params(self) -> list[str]:
        p = ["a", "b", "log_T", "T"] + (["c"] if self.spec.size_term else []) + ["sigma"]
        p += ["cell_sd"] if self.spec.cell_effect else []
        return p + (["nu"] if self.spec.likelihood == "student_t" else [])

    def summary(self, hdi_prob: float | None = None) -> pd.DataFrame:
        """Posterior summary of the law parameters (mean, sd, HDI at ``hdi_prob``, r_hat, ESS)."""
        s = _bayes.summary(self.idata, self.params, hdi_prob=hdi_prob or self.spec.hdi_prob)
        s.index.name = "param"
        return s

    def mu_draws(self) -> np.ndarray:
        """Posterior draws of each run's expected log UPT, shape (S, n_runs)."""
        return _mu_draws(self.data, self.idata)

    @property
    def r_obs_pred(self) -> float:
        """Pearson r between posterior-mean predicted and observed log UPT (uncensored runs)."""
        obs = ~self.data.censored
        pred = self.mu_draws().mean(axis=0)
        return float(np.corrcoef(pred[obs], self.data.y[obs])[0, 1])

    def ppc(self, seed: int = 0):
        """Posterior predictive draws of the observed (censored) log onset, added to ``idata``.

        One replicate per posterior draw: ``mu + scale * t(nu)``, clipped at each censored run's
        ``log last_step`` exactly as the censored likelihood sees the data. Drawn in numpy
        (the model is simple) to skip a pytensor compile.
        """
        if "posterior_predictive" not in self.idata.groups():
            rng = np.random.default_rng(seed)
            mu = self.mu_draws()
            scale, nu = _scale_nu(self.data, self.idata)
            eps = (rng.standard_t(np.broadcast_to(nu, mu.shape)) if nu is not None
                   else rng.standard_normal(mu.shape))
            rep = np.minimum(mu + scale * eps, self.data.upper[None])
            c, d = self.idata.posterior.sizes["chain"], self.idata.posterior.sizes["draw"]
            _bayes.add_group(self.idata, "posterior_predictive",
                             {OBS: (("chain", "draw", "run"), rep.reshape(c, d, -1))},
                             coords={"run": list(self.model.coords["run"])})
        return self.idata.posterior_predictive

    def loo(self):
        """PSIS-LOO (ArviZ ``ELPDData``) of the censored likelihood."""
        return _bayes.loo(self.idata, var_name=OBS)

    def predict(self, B, C, N=None, hdi_prob: float | None = None) -> pd.DataFrame:
        """Predicted UPT with intervals for planned runs; see ``predict_from_posterior``."""
        return predict_from_posterior(self.idata, B, C, N, hdi_prob=hdi_prob or self.spec.hdi_prob)

    def diagnostics(self, *, rhat_max: float = 1.01, ess_min: float = 400) -> list[str]:
        """Sampler warnings (divergences, r_hat, ESS); empty when all checks pass."""
        out = []
        n_div = _bayes.divergences(self.idata)
        if n_div:
            out.append(f"{n_div} divergent transitions after tuning: raise target_accept "
                       f"(now {self.sampler['target_accept']}) or check the data")
        s = self.summary()
        for name, row in s.iterrows():
            if name == "T":
                continue
            if not row["r_hat"] <= rhat_max:
                out.append(f"r_hat of {name} is {row['r_hat']:.3f} > {rhat_max}: chains disagree")
            if not row["ess_bulk"] >= ess_min:
                out.append(f"bulk ESS of {name} is {row['ess_bulk']:.0f} < {ess_min}: "
                           f"draw more samples")
        return out

    def ols(self, level: float | None = None) -> pd.DataFrame:
        """Frequentist cross-check: OLS of log onset on log B, log C (and log N) over uncensored
        runs (statsmodels), as ``a, b, log_T[, c], sigma`` with a ``level`` confidence interval."""
        return ols_fit(self.data, level or self.spec.hdi_prob)

    def save(self, out_dir) -> dict:
        """Write ``upt_law.nc`` (InferenceData) and ``upt_law_summary.json``; returns paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        nc = _bayes.to_netcdf(self.idata, out / "upt_law.nc")
        doc = {
            "model": "log UPT = log T - a log B - b log C" + (" - c log N" if self.spec.size_term
                                                             else ""),
            "spec": asdict(self.spec), "priors": self.spec.resolved_priors,
            "sampler": self.sampler, "timings_s": self.timings,
            "n_runs": int(len(self.data.y)), "n_censored": int(self.data.censored.sum()),
            "centres": self.data.centres, "fitted_range": fitted_range(self.idata),
            "r_obs_pred": self.r_obs_pred,
            "hdi_prob": self.spec.hdi_prob,
            "summary": self.summary().reset_index().to_dict(orient="records"),
            "ols": self.ols().reset_index().to_dict(orient="records"),
            "diagnostics": self.diagnostics(), "published": PUBLISHED,
            "versions": _bayes.versions(),
        }
        js = out / "upt_law_summary.json"
        js.write_text(json.dumps(doc, indent=2, default=float))
        return {"netcdf": nc, "summary_json": str(js)}


def ols_fit(data: LawData, level: float = 0.9) -> pd.DataFrame:
    """OLS in log space on uncensored runs; exponents with the sign convention of the law."""
    import statsmodels.api as sm

    obs = ~data.censored
    names = list(data.logs)
    X = sm.add_constant(np.column_stack([data.logs[k][obs] for k in names]))
    fit = sm.OLS(data.y[obs], X).fit()
    ci = fit.conf_int(alpha=1 - level)
    rows = [{"param": "log_T", "estimate": fit.params[0], "se": fit.bse[0],
             "ci_lo": ci[0, 0], "ci_hi": ci[0, 1]}]
    for j, k in enumerate(names, start=1):
        # log UPT = log T - a log B: the exponent is minus the slope.
        rows.append({"param": _COEF[k], "estimate": -fit.params[j], "se": fit.bse[j],
                     "ci_lo": -ci[j, 1], "ci_hi": -ci[j, 0]})
    rows.append({"param": "sigma", "estimate": float(np.sqrt(fit.scale)), "se": np.nan,
                 "ci_lo": np.nan, "ci_hi": np.nan})
    out = pd.DataFrame(rows).set_index("param")
    out.attrs.update(n_obs=int(obs.sum()), r2=float(fit.rsquared), level=level)
    return out


def compare_size_term(table: pd.DataFrame, spec: UPTLawSpec | None = None, *,
                      fits: dict | None = None, **fit_kwargs) -> pd.DataFrame:
    """LOO comparison of the law with and without the model-size term ``- c log N``.

    Parameters
    ----------
    table : pandas.DataFrame
        Emergence table with an ``N`` column holding two or more distinct values.
    spec : UPTLawSpec, optional
        Base spec; its ``size_term`` is overridden.
    fits : dict, optional
        Already fitted results under keys ``"without_N"`` / ``"with_N"`` (reused, not refitted).
    **fit_kwargs
        Passed to ``UPTLaw.fit`` (draws, tune, chains, seed, ...).

    Returns
    -------
    pandas.DataFrame
        ``az.compare`` frame (rank, elpd_loo, p_loo, elpd_diff, weight, se, dse, ...).
    """
    from dataclasses import replace

    spec = spec or UPTLawSpec()
    fits = dict(fits or {})
    for key, flag in (("without_N", False), ("with_N", True)):
        if key not in fits:
            fits[key] = UPTLaw(replace(spec, size_term=flag)).fit(table, **fit_kwargs)
    return _bayes.compare({k: v.idata for k, v in fits.items()}, var_name=OBS)
