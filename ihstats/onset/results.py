"""A fitted onset model: both elasticities, which knob moves the onset more, the iso-onset line.

:class:`OnsetResults` is what :meth:`ihstats.onset.model.OnsetModel.fit` returns; its report
section is :mod:`ihstats.onset.report`, the designs that would resolve it :mod:`ihstats.onset.design`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.knobs import KNOBS, knob_verdict
from ihstats.onset.mle import CensoredMLE
from ihstats.onset.spec import P_QUANTITY


@dataclass
class OnsetResults:
    """Posterior of the onset model with its maximum-likelihood cross-check (``mle``)."""

    model: object  # the ihstats.onset.model.OnsetModel (not imported: it imports this module)
    idata: object
    mle: CensoredMLE
    timings: dict
    sampler: dict = field(default_factory=dict)

    def draws(self) -> dict:
        """Flattened posterior draws: ``intercept``, ``e_freq``, ``e_rel``, ``sigma``."""
        post = self.idata.posterior
        e = post["elasticity"].values.reshape(-1, len(KNOBS))
        return {"intercept": _bayes.posterior_draws(self.idata, "intercept"), "e_freq": e[:, 0],
                "e_rel": e[:, 1], "sigma": _bayes.posterior_draws(self.idata, "sigma")}

    def summary(self, hdi_prob: float = 0.9) -> pd.DataFrame:
        """Tidy posterior summary (``term``: intercept, e_freq, e_rel, sigma)."""
        s = _bayes.summary(self.idata, ["intercept", "elasticity", "sigma"], hdi_prob=hdi_prob)
        s.insert(0, "term", ["intercept", "e_freq", "e_rel", "sigma"])
        s["hdi_prob"] = hdi_prob
        return s.reset_index(drop=True)

    def diagnostics(self, *, rhat_max: float = 1.01, ess_min: float = 400) -> list[str]:
        """Sampler warnings (divergences, r_hat, ESS); empty when all checks pass."""
        return _bayes.sampler_warnings(self.idata, self.summary().set_index("term"),
                                       target_accept=self.sampler.get("target_accept", np.nan),
                                       rhat_max=rhat_max, ess_min=ess_min)

    def p_freq_larger(self) -> float:
        """Posterior probability that frequency has the larger elasticity (in absolute value)."""
        d = self.draws()
        return float(np.mean(np.abs(d["e_freq"]) > np.abs(d["e_rel"])))

    def verdict(self) -> str:
        """Which knob moves the onset more, claimed only at posterior probability >= 0.95."""
        return knob_verdict(self.p_freq_larger(), quantity=P_QUANTITY)

    def elasticities(self, hdi_prob: float = 0.9) -> pd.DataFrame:
        """Both elasticities: posterior median, HDI, the MLE and its standard error."""
        d, rows = self.draws(), []
        for i, k in enumerate(("e_freq", "e_rel")):
            lo, hi = _bayes.hdi(d[k], hdi_prob=hdi_prob)
            rows.append({"term": k, "median": float(np.median(d[k])), "lo": lo, "hi": hi,
                         "mle": float(self.mle.params[1 + i]), "mle_se": float(self.mle.se[1 + i]),
                         "hdi_prob": hdi_prob})
        return pd.DataFrame(rows)

    def iso_onset(self, budget: float, frequencies) -> pd.DataFrame:
        """Reliability at which the posterior-median onset equals ``budget``, per frequency: the
        frontier this model draws at that budget (NaN where it leaves (0, 1])."""
        d = self.draws()
        lf = np.log(np.asarray(frequencies, float))[:, None] - self.model.center["frequency"]
        with np.errstate(divide="ignore", invalid="ignore"):
            zr = (np.log(budget) - d["intercept"] - d["e_freq"] * lf) / d["e_rel"]
        r = np.exp(np.median(zr, axis=1) + self.model.center["reliability"])
        return pd.DataFrame({"frequency": np.asarray(frequencies, float),
                             "reliability": np.where((r > 0) & (r <= 1), r, np.nan), "budget": budget})

    def save(self, out_dir, tables: dict | None = None) -> dict:
        """Write the fit's folder (:func:`ihstats._bayes.save_fit`): ``idata.nc``, ``summary.csv``,
        ``fit.json``, ``elasticities.csv``, ``runs.csv`` and any extra ``tables``."""
        record = {"model": "log onset = a + e_f (log f - m_f) + e_r (log r - m_r) + sigma eps, "
                           "right-censored at last_step",
                  "spec": asdict(self.model.spec), "sampler": self.sampler, "timings_s": self.timings,
                  "diagnostics": self.diagnostics(), "center": self.model.center,
                  "p_freq_larger": self.p_freq_larger(), "verdict": self.verdict(),
                  "n_runs": len(self.model.runs), "n_censored": int(self.model.censored.sum()),
                  "versions": _bayes.versions()}
        return _bayes.save_fit(out_dir, self.idata, self.summary(), record,
                               {"elasticities": self.elasticities(), "runs": self.model.runs, **(tables or {})})
