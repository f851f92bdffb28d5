"""Circuits in the law: a two-circuit mixture, so a prediction covers a run that switches circuit.

A run's induction head forms on a previous-token head (circuit ``prev-token``) or without one
(``no-prev-token``, 2-5x slower in bxc-law and bxc-markov; :func:`ihstats.emergence.circuit`). One
power law across both mispredicts the runs of the rarer circuit. The mixture (one row per run, on
the centred log factors of :mod:`ihstats.law.model`)::

    P(no-prev-token | B, C) = pi = logistic(q0 + qB x_B + qC x_C)
    log UPT | circuit k     ~ alpha_k - a_k x_B - b_k x_C [+ cell_sd z_cell] + sigma_k t(nu)

with the power law's priors per circuit (alpha_k ~ Normal(mean observed log onset, 2), a_k, b_k ~
Normal(0.5, 0.5), sigma_k ~ HalfNormal(1), nu ~ Gamma(2, 0.1)), q0 ~ Normal(0, 1.5), qB, qC ~
Normal(0, 1), and the law's measurement error, censoring and optional cell effect (shared by the
circuits: a cell offset moves both).

Labels (``labels=``): ``observed`` (the default where the table's ``circuit`` column labels two or
more runs of each circuit): a labelled run contributes ``log pi_k + log f_k(y)`` of its own circuit
k, so the logs, not the onsets, say which law a run follows, and the components cannot swap. A run
without a label (not formed, so censored, or a run whose logs hold no previous-token score) is
marginalised: ``log sum_k pi_k f_k(y)`` (``f_k`` its survival when censored). ``marginal``: every
run is marginalised (the onsets alone separate the circuits); the slow circuit is then ordered
above the fast one (``alpha_1 = alpha_0 + delta``, ``delta ~ HalfNormal(1)``) so the components
keep their names.

Comparison with the single-circuit law (:func:`ihstats.law.comparison.compare_circuits`): the
mixture's ``log_likelihood`` group holds each run's marginal density ``log sum_k pi_k f_k(y_i)``,
the quantity the single law's holds and the one a new run's prediction uses (its circuit is not
known in advance), so ``az.compare`` compares like with like. With observed labels PSIS-LOO leaves
out the run's onset but not its label (its posterior keeps ``pi``'s information from that label):
a small optimism of one label in dozens; the held-out log score of ``analyses/validate_law.py`` has
none. A new cell's prediction (:func:`mixture_predictive`, :func:`predict_mixture`) draws the
circuit from ``pi`` at the cell's B and C, so its interval covers a circuit switch.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import special, stats

from ihstats import _bayes
from ihstats.base.contract import CIRCUITS
from ihstats.fit_protocol import SAMPLER
from ihstats.law.data import LawData, design_values, prepare
from ihstats.law.model import student_t_logsf
from ihstats.law.results import LawPosterior, fitted_range
from ihstats.law.scoring import Predictive
from ihstats.law.spec import OBS, UPTLawError, UPTLawSpec

MODEL_NAME = "ihstats.law.mixture"
LABEL_MODES = ("observed", "marginal")
#: Priors of the circuit probability's logit (Normal(mu, sd)); the laws take the spec's.
Q_PRIORS = {"q0": (0.0, 1.5), "qB": (0.0, 1.0), "qC": (0.0, 1.0)}
PARAMS = ["q0", "qB", "qC", "alpha", "a", "b", "sigma"]


def circuit_labels(table: pd.DataFrame) -> np.ndarray:
    """Each run's circuit as an index into ``CIRCUITS`` (0 prev-token, 1 no-prev-token), -1 where
    the table gives none (no ``circuit`` column, a blank cell, a run that did not form)."""
    if "circuit" not in table.columns:
        return np.full(len(table), -1)
    lab = table["circuit"].fillna("").astype(str).to_numpy()
    return np.select([lab == CIRCUITS[0], lab == CIRCUITS[1]], [0, 1], default=-1)


def is_mixture(idata) -> bool:
    """Whether a saved posterior is a circuit mixture (else a single law)."""
    return idata.posterior.attrs.get("model", "") == MODEL_NAME


@dataclass
class CircuitMixtureModel:
    """A built two-circuit mixture: spec, the checked table's arrays, each run's label (-1: none)."""

    spec: UPTLawSpec
    data: LawData
    labels: np.ndarray
    mode: str

    @classmethod
    def from_table(cls, table: pd.DataFrame, spec: UPTLawSpec | None = None,
                   labels: str = "auto") -> CircuitMixtureModel:
        """Check ``table`` as the law does (:func:`ihstats.law.data.prepare`) and read its labels;
        ``labels="auto"``: observed where two or more runs of each circuit are labelled, else marginal."""
        spec = spec or UPTLawSpec()
        if spec.form != "power" or spec.size_term or spec.sigma_by or spec.seed_effect:
            raise UPTLawError("mixture: each circuit has a power law with one scatter per circuit; fit it "
                              "with form='power', no size term, no sigma_by and no seed_effect")
        if labels not in (*LABEL_MODES, "auto"):
            raise UPTLawError(f"labels: must be one of {[*LABEL_MODES, 'auto']}, got {labels!r}")
        data = prepare(table, spec)
        lab = np.where(data.censored, -1, circuit_labels(data.table))
        enough = all((lab == k).sum() >= 2 for k in (0, 1))
        mode = ("observed" if enough else "marginal") if labels == "auto" else labels
        if mode == "observed" and not enough:
            raise UPTLawError(f"circuit: labels='observed' needs two or more formed runs of each circuit "
                              f"{list(CIRCUITS)}; the table has {[(lab == k).sum() for k in (0, 1)]}: "
                              f"use labels='marginal'")
        return cls(spec, data, lab if mode == "observed" else np.full(len(lab), -1), mode)

    def pymc_model(self):
        """The ``pm.Model`` of the module docstring (built anew on each call)."""
        import pymc as pm  # seconds to import
        import pytensor.tensor as pt

        d, pr = self.data, self.spec.resolved_priors
        coords = {"run": d.table["run_id"].astype(str).tolist(), "circuit": list(CIRCUITS)}
        if d.cells is not None:
            coords["cell"] = d.cells
        with pm.Model(coords=coords) as model:
            q = {k: pm.Normal(k, mu=m, sigma=s) for k, (m, s) in Q_PRIORS.items()}
            logit = q["q0"] + q["qB"] * d.x["B"] + q["qC"] * d.x["C"]
            centre = float(d.y[~d.censored].mean())
            if self.mode == "marginal":  # ordered: the slow circuit's intercept above the fast one's
                a0 = pm.Normal("alpha_fast", mu=centre, sigma=pr["alpha_sd"])
                alpha = pm.Deterministic("alpha", pt.stack([a0, a0 + pm.HalfNormal("delta", 1.0)]), dims="circuit")
            else:
                alpha = pm.Normal("alpha", mu=centre, sigma=pr["alpha_sd"], dims="circuit")
            a = pm.Normal("a", mu=pr["a"][0], sigma=pr["a"][1], dims="circuit")
            b = pm.Normal("b", mu=pr["b"][0], sigma=pr["b"][1], dims="circuit")
            sigma = pm.HalfNormal("sigma", sigma=pr["sigma"], dims="circuit")
            offset = 0.0
            if d.cells is not None:
                offset = pm.HalfNormal("cell_sd", sigma=pr["cell_sd"]) * pm.Normal("cell_z", 0.0, 1.0, dims="cell")[d.cell_idx]
            nu = pm.Gamma("nu", alpha=pr["nu"][0], beta=pr["nu"][1]) if self.spec.likelihood == "student_t" else None
            joint = []
            for k in (0, 1):
                mu = alpha[k] - a[k] * d.x["B"] - b[k] * d.x["C"] + offset
                scale = pt.sqrt(sigma[k] ** 2 + d.me_sd ** 2)
                log_pi = -pt.softplus(-logit) if k == 1 else -pt.softplus(logit)
                joint.append(log_pi + _pt_logf(pm, pt, d, mu, scale, nu))
            pm.Potential(OBS + "_mixture", _pt_total(pt, pt.stack(joint, axis=1), self.labels))
        return model

    # long: the fit's bookkeeping (derived groups, attributes, prior) is one sequence read top to bottom
    def fit(self, *, draws: int = SAMPLER.draws, tune: int = SAMPLER.tune, chains: int = SAMPLER.chains,
            seed: int = SAMPLER.seed, target_accept: float = SAMPLER.target_accept, cores: int = 1) -> MixtureResults:
        """Sample with NUTS; the pointwise marginal log-likelihood is added for LOO."""
        model = self.pymc_model()
        idata, timings = _bayes.sample(model, draws=draws, tune=tune, chains=chains, seed=seed,
                                       target_accept=target_accept, cores=cores, log_likelihood=False,
                                       label="the two-circuit mixture")
        attrs = {f"center_log{k}": v for k, v in self.data.centres.items()}
        for k in self.data.logs:
            v = self.data.table[k].to_numpy(dtype=float)
            attrs.update({f"min_{k}": float(v.min()), f"max_{k}": float(v.max())})
        attrs.update(model=MODEL_NAME, form="power", labels=self.mode, likelihood=self.spec.likelihood,
                     cell_effect=int(self.spec.cell_effect), size_term=0, sigma_by="",
                     ihstats_versions=json.dumps(_bayes.versions()))
        idata.posterior.attrs.update(attrs)  # first: the log-likelihood reads the centres
        runs = {"run": self.data.table["run_id"].astype(str).tolist()}
        ll = special.logsumexp(component_joint(self.data, idata), axis=-1)
        c, dr = idata.posterior.sizes["chain"], idata.posterior.sizes["draw"]
        _bayes.add_group(idata, "log_likelihood", {OBS: (("chain", "draw", "run"), ll.reshape(c, dr, -1))}, coords=runs)
        _bayes.add_group(idata, "observed_data", {OBS: (("run",), self.data.y)}, coords=runs, sample_dims=False)
        return MixtureResults(self, idata, timings, dict(draws=draws, tune=tune, chains=chains, seed=seed,
                                                           target_accept=target_accept))


def _pt_logf(pm, pt, d: LawData, mu, scale, nu):
    """Per run: log density of the observed log onset, or log survival at log last_step (censored)."""
    z = (d.y - mu) / scale
    obs, cen = np.flatnonzero(~d.censored), np.flatnonzero(d.censored)
    # each kind of run only on its own rows: a survival far in its tail has a huge gradient that a
    # switch over all rows would turn into NaN (0 * inf)
    std = pm.Normal.dist() if nu is None else pm.StudentT.dist(nu=nu)
    logf = pt.set_subtensor(pt.zeros(len(d.y))[obs], pm.logp(std, z[obs]) - pt.log(scale[obs]))
    if len(cen):
        surv = pm.logccdf(std, z[cen]) if nu is None else student_t_logsf(z[cen], nu)
        logf = pt.set_subtensor(logf[cen], surv)
    return logf


def _pt_total(pt, joint, labels: np.ndarray):
    """The log-likelihood: a labelled run's own circuit's joint term, an unlabelled run's marginal."""
    total = pt.logsumexp(joint[np.flatnonzero(labels < 0)], axis=1).sum()
    for k in (0, 1):
        total = total + joint[np.flatnonzero(labels == k), k].sum()
    return total


def _vec(idata, name: str) -> np.ndarray:
    """Draws of a (circuit,)-vector parameter, shape (S, 2); of a scalar, (S, 1)."""
    v = np.asarray(idata.posterior[name].values, dtype=float)
    return v.reshape(v.shape[0] * v.shape[1], -1)


def _logit(idata, logs: dict) -> np.ndarray:
    """Draws of each run's logit of P(no-prev-token), (S, n), on the posterior's centres."""
    attrs = idata.posterior.attrs
    xB = np.asarray(logs["B"]) - attrs["center_logB"]
    xC = np.asarray(logs["C"]) - attrs["center_logC"]
    return _vec(idata, "q0") + _vec(idata, "qB") * xB[None] + _vec(idata, "qC") * xC[None]


def _lines(idata, logs: dict) -> np.ndarray:
    """Draws of each circuit's law line at each run, (S, n, 2), on the posterior's centres."""
    attrs = idata.posterior.attrs
    xB = (np.asarray(logs["B"]) - attrs["center_logB"])[None, :, None]
    xC = (np.asarray(logs["C"]) - attrs["center_logC"])[None, :, None]
    return _vec(idata, "alpha")[:, None] - _vec(idata, "a")[:, None] * xB - _vec(idata, "b")[:, None] * xC


def component_joint(data: LawData, idata) -> np.ndarray:
    """``log pi_k + log f_k(y_i)`` per draw, run and circuit, (S, n, 2) (numpy; the model's terms)."""
    mu = _lines(idata, data.logs)
    if data.cell_idx is not None:
        z = _vec(idata, "cell_z")[:, data.cell_idx]
        mu = mu + (_vec(idata, "cell_sd") * z)[:, :, None]
    scale = np.sqrt(_vec(idata, "sigma")[:, None] ** 2 + data.me_sd[None, :, None] ** 2)
    dist = (stats.t(df=_vec(idata, "nu")[:, :, None], loc=mu, scale=scale) if "nu" in idata.posterior
            else stats.norm(mu, scale))
    y = np.broadcast_to(data.y[None, :, None], mu.shape)
    logf = np.where(data.censored[None, :, None], dist.logsf(y), dist.logpdf(y))
    logit = _logit(idata, data.logs)
    log_pi = np.stack([-np.logaddexp(0.0, logit), -np.logaddexp(0.0, -logit)], axis=-1)
    return log_pi + logf


def _new_runs(idata, logs: dict, rng, *, with_noise: bool = True):
    """One draw per posterior draw of a new cell's circuit: returns ``(p_slow, line, cell, run,
    sigma)``, each (S, n): the slow circuit's probability, the drawn circuit's line, plus a new
    cell's offset, plus a new run's scatter (``with_noise``), and that circuit's sigma."""
    post = idata.posterior
    p_slow = special.expit(_logit(idata, logs))
    k = (rng.uniform(size=p_slow.shape) < p_slow).astype(int)
    line = np.take_along_axis(_lines(idata, logs), k[:, :, None], axis=2)[:, :, 0]
    cell = line + (_vec(idata, "cell_sd") * rng.standard_normal(line.shape) if "cell_sd" in post else 0.0)
    sigma = np.take_along_axis(np.broadcast_to(_vec(idata, "sigma")[:, None], (*k.shape, 2)), k[:, :, None], 2)[:, :, 0]
    eps = (rng.standard_t(np.broadcast_to(_vec(idata, "nu"), k.shape)) if "nu" in post
           else rng.standard_normal(k.shape))
    return p_slow, line, cell, (cell + sigma * eps if with_noise else cell), sigma


def mixture_predictive(idata, data: LawData, *, n_draws: int = 2000, seed: int = 0) -> Predictive:
    """The mixture's predictive of the runs in ``data`` (new cells): each component is one
    posterior draw with a circuit drawn from its ``pi`` at the run's B and C, that circuit's line
    plus a new cell's offset, and its scatter with the run's measurement sd in quadrature."""
    rng = np.random.default_rng(seed)
    total = idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]
    pick = np.sort(rng.choice(total, size=min(n_draws, total), replace=False))
    _, _, cell, _, sigma = _new_runs(idata, data.logs, rng, with_noise=False)
    nu = _vec(idata, "nu")[pick] if "nu" in idata.posterior else None
    return Predictive(cell[pick], np.sqrt(sigma[pick] ** 2 + data.me_sd[None] ** 2), nu)


def predict_mixture(idata, B, C, *, hdi_prob: float = 0.9, seed: int = 0) -> pd.DataFrame:
    """Predicted UPT of planned runs from a mixture posterior: the columns of
    :func:`ihstats.law.results.predict_from_posterior` (``upt``: median of the line with the
    circuit drawn; intervals over the circuit draw, then a new cell, then a new run) and
    ``p_no_prev_token``, the posterior mean probability of the slow circuit."""
    B, C = np.broadcast_arrays(design_values("B", B), design_values("C", C))
    rng = np.random.default_rng(seed)
    p_slow, line, cell, new, _ = _new_runs(idata, {"B": np.log(B), "C": np.log(C)}, rng)
    out = []
    for j in range(len(B)):
        (lo, hi), (clo, chi), (plo, phi) = (_bayes.hdi(v[:, j], hdi_prob=hdi_prob) for v in (line, cell, new))
        upt = float(np.exp(np.median(line[:, j])))
        out.append({"B": B[j], "C": C[j], "N": np.nan, "upt": upt, "upt_lo": np.exp(lo), "upt_hi": np.exp(hi),
                    "cell_lo": np.exp(clo), "cell_hi": np.exp(chi), "pred_lo": np.exp(plo), "pred_hi": np.exp(phi),
                    "tokens": upt * B[j] * C[j], "hdi_prob": hdi_prob, "p_no_prev_token": float(p_slow[:, j].mean())})
    return pd.DataFrame(out)


@dataclass
class MixtureResults(LawPosterior):
    """A fitted two-circuit mixture: ``summary``, ``loo``, ``diagnostics``, ``predict``, ``save``
    (its fields: :class:`ihstats.law.results.LawPosterior`, ``model`` a :class:`CircuitMixtureModel`)."""

    @property
    def params(self) -> list[str]:
        return PARAMS + (["cell_sd"] if self.spec.cell_effect else []) + (["nu"] if "nu" in self.idata.posterior else [])

    def summary(self, hdi_prob: float | None = None) -> pd.DataFrame:
        """Posterior summary; per-circuit rows read ``alpha[prev-token]`` and the like."""
        s = _bayes.summary(self.idata, self.params, hdi_prob=hdi_prob or self.spec.hdi_prob)
        s.index.name = "param"
        return s

    def loo(self):
        """PSIS-LOO of each run's marginal density (module docstring)."""
        return _bayes.loo(self.idata, var_name=OBS)

    def diagnostics(self, *, rhat_max: float = 1.01, ess_min: float = 400) -> list[str]:
        """Sampler warnings (divergences, r_hat, ESS); empty when all checks pass."""
        return _bayes.sampler_warnings(self.idata, self.summary(), target_accept=self.sampler["target_accept"],
                                       rhat_max=rhat_max, ess_min=ess_min)

    def predict(self, B, C, hdi_prob: float | None = None) -> pd.DataFrame:
        """:func:`predict_mixture` from this posterior."""
        return predict_mixture(self.idata, B, C, hdi_prob=hdi_prob or self.spec.hdi_prob)

    def save(self, out_dir) -> dict:
        """The fit's folder (:func:`ihstats._bayes.save_fit`): idata.nc, summary.csv, fit.json."""
        record = {"model": "two-circuit mixture (ihstats.law.mixture)", "labels": self.model.mode,
                  "spec": asdict(self.spec), "sampler": self.sampler, "timings_s": self.timings,
                  "n_runs": int(len(self.data.y)), "n_censored": int(self.data.censored.sum()),
                  "n_labelled": {c: int((self.model.labels == k).sum()) for k, c in enumerate(CIRCUITS)},
                  "centres": self.data.centres, "fitted_range": fitted_range(self.idata),
                  "diagnostics": self.diagnostics(), "versions": _bayes.versions()}
        return _bayes.save_fit(out_dir, self.idata, self.summary().reset_index(), record)
