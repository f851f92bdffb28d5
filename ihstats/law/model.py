"""Bayesian power law for updates-to-emergence (UPT).

Model (one row per run of an emergence table, docs/DESIGN.md columns)::

    log UPT_i = log T - a log B_i - b log C_i [- c log N_i] + eps_i

(the power form, the default; ``UPTLawSpec(form=...)`` swaps the line for the critical-batch or
the tokens form of :mod:`ihstats.law.forms`, everything below unchanged)

fitted on centred log predictors ``x = log B - mean(log B)`` (same for C, N), so the intercept
``alpha`` is the expected log UPT at the design's centre and ``log T = alpha + a mean(log B) +
b mean(log C) [+ c mean(log N)]`` is a derived quantity (reported as ``log_T`` and ``T``).

Priors (weakly informative on the centred log scale)::

    alpha ~ Normal(mean observed log onset, 2)   # data-centred: only the location is borrowed
    a, b  ~ Normal(0.5, 0.5)                      # both published values (0.37, 0.62) well inside
    c     ~ Normal(0, 0.5)                        # size term centred on "no effect"
    sigma ~ HalfNormal(1)                         # run-to-run scatter in log updates
    nu    ~ Gamma(2, 0.1)                         # Student-t dof (robust likelihood)

Scatter by level (``sigma_by = "C"``, or any column): one seed-level sigma per level k of the
column, partially pooled on the log scale (non-centred)::

    log sigma_k = log_sigma_mu + log_sigma_sd * z_k,  z_k ~ Normal(0, 1)
    log_sigma_mu ~ Normal(-1, 1)                  # median scatter 0.37 in log updates
    log_sigma_sd ~ HalfNormal(1)                  # how much the levels' scatters differ

Hierarchical rather than independent because a grid has few levels (3 C values) with a dozen
runs each: a level with few or tightly clustered runs borrows from the others instead of
collapsing to its prior or to zero, ``log_sigma_sd -> 0`` recovers the shared sigma (so LOO
compares nested models, :func:`ihstats.law.sensitivity.compare_sigma_by`), and a new level (a C
not fitted) has a predictive scatter. Why it matters: a Student-t fit reads scatter that grows at
short C as heavy tails (issue 39: within-cell sd of log onset 1.07 at C = 16, 0.13 at C = 64, nu 1.5).

Cell and seed effects (both non-centred; ``UPTLawSpec(cell_effect=True, seed_effect=True)``)::

    mu_i += cell_sd * z_cell[cell_i] + seed_sd * z_seed[seed_i],  z ~ Normal(0, 1)
    cell_sd, seed_sd ~ HalfNormal(0.5)

The seed effect is crossed with the cells: in a grid every cell's seed s starts from the same
initial weights (where the shapes match) and data order, so a seed that is slow in one cell tends
to be slow in the others. Without the term that shared lottery inflates ``sigma`` and leaves the
runs of one seed correlated; with it a run at a seed the fit saw is predicted with that seed's
offset (``seed_offset = seed_sd * z_seed``, derived after sampling), at a new seed with a new draw.

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

Use (the same pattern as :mod:`ihstats.frontier.model`)::

    model = UPTLawModel.from_table(table, UPTLawSpec())   # checks the table (ihstats.law.data)
    res = model.fit(draws=1000, tune=1000, chains=4, seed=0)   # -> UPTLawResults
    res.summary(); res.diagnostics(); res.predict(B=512, C=2048); res.save("out/")

Modules of :mod:`ihstats.law`: ``spec`` (what to fit), ``data`` prepares the table, this module
the PyMC model (with the Student-t survival Op its censored likelihood needs), ``results`` the
results object and the predictions any saved posterior gives, ``sensitivity`` what the fit depends
on (variants, LOO comparisons), ``report`` its report, ``predict`` the prediction CLI,
``validation`` and ``scoring`` its out-of-sample scores.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from ihstats import _bayes
from ihstats.fit_protocol import SAMPLER
from ihstats.law.data import LawData, prepare
from ihstats.law.forms import derived, pymc_line
from ihstats.law.results import UPTLawResults, loglik
from ihstats.law.spec import OBS, UPTLawSpec


@dataclass
class UPTLawModel:
    """A built UPT law: the spec and the checked table's arrays; ``fit`` samples it.

    Attributes
    ----------
    spec : UPTLawSpec
    data : LawData
        From :func:`ihstats.law.data.prepare`.
    """

    spec: UPTLawSpec
    data: LawData

    @classmethod
    def from_table(cls, table: pd.DataFrame, spec: UPTLawSpec | None = None) -> UPTLawModel:
        """Validate ``table`` (:func:`ihstats.law.data.prepare`) and return the model to fit."""
        spec = spec or UPTLawSpec()
        return cls(spec, prepare(table, spec))

    def pymc_model(self):
        """The ``pm.Model`` (built anew on each call; see the module docstring for the model)."""
        import pymc as pm  # seconds to import: CLIs that only predict never do
        import pytensor.tensor as pt

        d, pr = self.data, self.spec.resolved_priors
        coords = {"run": d.table["run_id"].astype(str).tolist()}
        if d.cells is not None:
            coords["cell"] = d.cells
        if d.sigma_levels is not None:
            coords["sigma_level"] = d.sigma_levels
        if d.seeds is not None:
            coords["seed"] = d.seeds
        coords.update({kind: labels for kind, (_, labels) in (d.kinds or {}).items()})
        with pm.Model(coords=coords) as model:
            alpha = pm.Normal("alpha", mu=float(d.y[~d.censored].mean()), sigma=pr["alpha_sd"])
            mu = alpha + pymc_line(pm, self.spec.form, d.x, d.centres, pr)  # the form's line
            if d.cells is not None:  # non-centred: cell_z ~ N(0, 1) samples well at small cell_sd
                cell_sd = pm.HalfNormal("cell_sd", sigma=pr["cell_sd"])
                cell_z = pm.Normal("cell_z", 0.0, 1.0, dims="cell")
                mu = mu + cell_sd * cell_z[d.cell_idx]
            if d.seeds is not None:  # crossed with the cells: one offset per training seed
                seed_sd = pm.HalfNormal("seed_sd", sigma=pr["seed_sd"])
                seed_z = pm.Normal("seed_z", 0.0, 1.0, dims="seed")
                mu = mu + seed_sd * seed_z[d.seed_idx]
            for kind, (idx, _) in (d.kinds or {}).items():  # seeds by kind: weights and data, crossed
                kind_sd = pm.HalfNormal(f"{kind}_sd", sigma=pr[f"{kind}_sd"])
                kind_z = pm.Normal(f"{kind}_z", 0.0, 1.0, dims=kind)
                mu = mu + kind_sd * kind_z[idx]
            sigma = self._sigma(pm, pr)
            scale = pt.sqrt(sigma**2 + pm.Data("me_sd", d.me_sd, dims="run") ** 2)
            obs, cen = np.flatnonzero(~d.censored), np.flatnonzero(d.censored)
            # Uncensored runs: density of the observed log onset. Censored runs: log survival
            # at log last_step (a Potential; same terms as pm.Censored, but the Student-t
            # survival uses an Op with a cheap gradient, which cuts the compile from ~40 s to
            # a few seconds; see student_t_logsf).
            z_cen = (d.upper[cen] - mu[cen]) / scale[cen]
            if self.spec.likelihood == "student_t":
                nu = pm.Gamma("nu", alpha=pr["nu"][0], beta=pr["nu"][1])
                pm.StudentT(OBS + "_uncensored", nu=nu, mu=mu[obs], sigma=scale[obs],
                            observed=d.y[obs])
                if len(cen):
                    pm.Potential(OBS + "_censored", student_t_logsf(z_cen, nu))
            else:
                pm.Normal(OBS + "_uncensored", mu=mu[obs], sigma=scale[obs], observed=d.y[obs])
                if len(cen):
                    pm.Potential(OBS + "_censored", pm.logccdf(pm.Normal.dist(), z_cen))
        return model

    def _sigma(self, pm, pr):
        """The seed-level scatter of each run: one shared ``sigma``, or ``sigma[level]`` of the
        ``sigma_by`` column (non-centred: samples well when the levels hardly differ)."""
        d = self.data
        if d.sigma_levels is None:
            return pm.HalfNormal("sigma", sigma=pr["sigma"])
        mu_ls = pm.Normal("log_sigma_mu", mu=pr["log_sigma_mu"][0], sigma=pr["log_sigma_mu"][1])
        sd_ls = pm.HalfNormal("log_sigma_sd", sigma=pr["log_sigma_sd"])
        z = pm.Normal("sigma_z", 0.0, 1.0, dims="sigma_level")
        sigma = pm.Deterministic("sigma", pm.math.exp(mu_ls + sd_ls * z), dims="sigma_level")
        return sigma[d.sigma_idx]

    def fit(self, *, draws: int = SAMPLER.draws, tune: int = SAMPLER.tune, chains: int = SAMPLER.chains,
            seed: int = SAMPLER.seed, target_accept: float = SAMPLER.target_accept, cores: int = 1) -> UPTLawResults:
        """Sample the posterior with NUTS; returns :class:`~ihstats.law.results.UPTLawResults`."""
        # log T and T are derived after sampling (not pm.Deterministic) and the pointwise
        # log-likelihood is computed in numpy: each avoids one more pytensor compile, which
        # dominates the run time of this small model.
        model = self.pymc_model()
        idata, timings = _bayes.sample(model, draws=draws, tune=tune, chains=chains,
                                       seed=seed, target_accept=target_accept, cores=cores,
                                       log_likelihood=False, label="the UPT law")
        for name, value in derived(self.spec.form, idata.posterior, self.data.centres).items():
            idata.posterior[name] = value
        if "seed_z" in idata.posterior:  # each seed's offset on log UPT, as reports print it
            idata.posterior["seed_offset"] = idata.posterior["seed_sd"] * idata.posterior["seed_z"]
        for kind in self.data.kinds or {}:
            idata.posterior[f"{kind}_offset"] = idata.posterior[f"{kind}_sd"] * idata.posterior[f"{kind}_z"]
        runs = {"run": self.data.table["run_id"].astype(str).tolist()}
        _bayes.add_group(idata, "log_likelihood",
                         {OBS: (("chain", "draw", "run"), loglik(self.data, idata, self.spec.form))}, coords=runs)
        # All runs, censored ones at log last_step (what the censored likelihood conditions on).
        _bayes.add_group(idata, "observed_data", {OBS: (("run",), self.data.y)}, coords=runs,
                         sample_dims=False)
        add_run_data(idata, self.data)
        attrs = {f"center_log{k}": v for k, v in self.data.centres.items()}
        # The fitted range travels with the posterior so predict can warn when it extrapolates.
        for k in self.data.logs:
            v = self.data.table[k].to_numpy(dtype=float)
            attrs.update({f"min_{k}": float(v.min()), f"max_{k}": float(v.max())})
        attrs.update(size_term=int(self.spec.size_term), likelihood=self.spec.likelihood, form=self.spec.form,
                     cell_effect=int(self.spec.cell_effect), seed_effect=int(self.spec.seed_effect),
                     seed_within=self.spec.seed_within or "", seed_kinds=json.dumps(sorted(self.data.kinds or {})),
                     sigma_by=self.spec.sigma_by or "",
                     sigma_levels=json.dumps(self.data.sigma_levels or []),
                     model="ihstats.law.model", ihstats_versions=json.dumps(_bayes.versions()))
        idata.posterior.attrs.update(attrs)
        # the saved fit carries its prior and both predictives (prior and posterior checks in ArviZ)
        _bayes.add_prior(model, idata, draws=draws, seed=seed)
        res = UPTLawResults(self, idata, timings, sampler=dict(
            draws=draws, tune=tune, chains=chains, seed=seed, target_accept=target_accept))
        res.ppc(seed)
        return res


def add_run_data(idata, data) -> None:
    """Put each run's raw data into ``constant_data`` beside PyMC's centred predictors: ``run_id``,
    ``B``, ``C`` (and ``N`` where fitted), ``onset`` and ``last_step`` in updates, and ``censored``
    (True: not formed, its ``log_upt`` observation is its log last step). With them a user of the
    saved ``idata.nc`` (``az.plot_ppc``, own code) can split censored from observed runs."""
    t = data.table
    runs = {"run": t["run_id"].astype(str).tolist()}
    run_vars = {"run_id": (("run",), t["run_id"].astype(str).to_numpy()),
                "censored": (("run",), np.asarray(data.censored, dtype=bool)),
                "onset": (("run",), t["onset"].to_numpy(dtype=float)),
                "last_step": (("run",), t["last_step"].to_numpy(dtype=float)),
                **{k: (("run",), t[k].to_numpy(dtype=float)) for k in ("B", "C", "N") if k in data.logs}}
    have = _bayes.group_dataset(idata, "constant_data") if "constant_data" in _bayes.groups(idata) else None
    kept = {k: (v.dims, v.values) for k, v in have.data_vars.items()} if have is not None else {}
    _bayes.add_group(idata, "constant_data", {**kept, **run_vars}, coords=runs, sample_dims=False)


# ---- the censored Student-t likelihood's survival function ---------------------------------

def student_t_logsf(z, nu):
    """``log P(T > z)`` of a standard Student-t with ``nu`` dof, as a pytensor expression.

    Same value as ``pm.logccdf(pm.StudentT.dist(nu), z)``, but PyMC's version differentiates the
    regularized incomplete beta symbolically in ``nu``, which builds a graph that takes tens of
    seconds to construct and compile. Here the value comes from scipy, ``d/dz`` is the exact
    ``-pdf/sf`` and ``d/dnu`` a central finite difference (relative step 1e-4; smooth in nu).
    ``z``: vector; ``nu``: scalar.
    """
    import pytensor.tensor as pt  # seconds to import: only building a model needs it

    return _student_t_logsf_op()(pt.as_tensor_variable(z, dtype="float64"),
                                 pt.as_tensor_variable(nu, dtype="float64"))


def _t_logsf_np(z, nu):
    # scipy.special.stdtr directly: scipy.stats.t.logsf costs ~1 ms per call in argument
    # checking, which dominated sampling. Tails beyond ~1e-300 are floored (a censored run
    # that far below its prediction is a data error, not a tail to resolve).
    return np.log(np.maximum(special.stdtr(nu, -np.asarray(z, dtype=np.float64)), 1e-300))


@functools.cache
def _student_t_logsf_op():
    """The Op behind :func:`student_t_logsf`; its classes subclass pytensor's ``Op``, so they are
    defined on first use (pytensor is not imported with this module)."""
    import pytensor.tensor as pt
    from pytensor.gradient import grad_not_implemented
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op

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

        def pullback(self, inputs, outputs, cotangents):  # pytensor >= 3's name for grad (PyMC 6)
            return self.grad(inputs, cotangents)

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

        def pullback(self, inputs, outputs, cotangents):  # pytensor >= 3 calls this, not grad
            return self.grad(inputs, cotangents)

    return StudentTLogSF()
