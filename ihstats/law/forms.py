"""The law's forms: what the expected log UPT of a run is, given its B and C, in each form compared.

Each form is the ``mu`` of the same model (:mod:`ihstats.law.model`: the same likelihood family,
censoring, measurement error, cell effect and per-level scatter); only the line differs. On centred
log predictors ``x_B = log B - mean log B`` (same for C), with ``alpha`` the expected log UPT at the
design's centre in every form:

- ``power`` (the default): ``mu = alpha - a x_B - b x_C [- c x_N]``, i.e.
  ``log UPT = log T - a log B - b log C``.
- ``critical_batch``: ``UPT = S_min(C) (1 + B_noise / B)`` (McCandlish et al.'s steps-vs-batch
  curve), ``S_min(C) = S_min (C / C_centre)^-b``, so
  ``mu = alpha + log(1 + B_noise / B) - log(1 + B_noise / B_centre) - b x_C``. Its local B
  exponent ``-d log UPT / d log B = B_noise / (B + B_noise)`` falls from 1 (B << B_noise) to 0
  (B >> B_noise). C enters as a second (power) term on S_min, not through tokens per update
  (batch ``B C`` tokens), because (1) the measured C effect has either sign (b = +0.24 on natural
  text, -0.76 on the Markov generator, docs/RESULTS.md) and a batch counted in tokens forces C to
  act like B, always shortening training; (2) with the same ``- b x_C`` term as the power law, an
  elpd difference between the two is about the shape in B alone. Derived and reported:
  ``B_noise``, ``S_min`` (at the centre C), and ``a``, the local B exponent at the centre B (so
  reports that read ``a`` and ``b`` read this form too).
- ``tokens``: B and C act only through the tokens per update ``B C``:
  ``mu = alpha - g (x_B + x_C)``, i.e. tokens to emergence ``UPT B C = T (B C)^(1 - g)``; the
  paper's earlier form ``N = T sqrt(B C)`` is ``g = 0.5`` (Aoyama et al.; docs/REFERENCES.md).
  ``g`` is fitted (prior Normal(0.5, 0.5)) rather than fixed: the posterior of ``g`` says how far
  the data sit from 0.5, and the fixed form is already a baseline of :mod:`ihstats.law.scoring`.
  ``a`` and ``b`` are stored as copies of ``g``.

A posterior records its form in the attribute ``form`` (absent: ``power``, the only form before).
This module imports only :mod:`ihstats.law.spec` (numpy at the top, pymc inside the builder).
"""

from __future__ import annotations

import numpy as np

from ihstats.law.spec import COEF, FORMS, UPTLawError
#: The summary parameters of each form (besides the scatter, cell effect and dof), derived ones too.
FORM_PARAMS = {"power": ["a", "b", "log_T", "T"],
               "tokens": ["g", "log_T", "T", "a", "b"],  # a = b = g: read by the sensitivity table and figures
               "critical_batch": ["b", "log_B_noise", "B_noise", "log_S_min", "S_min", "a"]}
#: The law of each form, as reports print it.
FORM_TEXT = {"power": "log UPT = log T - a log B - b log C",
             "tokens": "log UPT = log T - g log(B C)  (tokens to emergence T (B C)^(1 - g))",
             "critical_batch": "UPT = S_min (C / C_centre)^-b (1 + B_noise / B)"}


def posterior_form(idata) -> str:
    """The form a saved posterior was fitted with (``power`` for posteriors saved before forms)."""
    form = str(idata.posterior.attrs.get("form", "power") or "power")
    if form not in FORMS:
        raise UPTLawError(f"form: the posterior says {form!r}; this ihstats knows {list(FORMS)}")
    return form


def pymc_line(pm, form: str, x: dict, centres: dict, priors: dict):
    """The form's ``mu`` (a pytensor vector over runs) with its priors, inside an open ``pm.Model``.

    ``x``: centred log factors by name (``B``, ``C``[, ``N``]); ``centres``: their means."""
    if form == "power":
        mu = 0.0
        for k, v in x.items():
            coef = pm.Normal(COEF[k], mu=priors[COEF[k]][0], sigma=priors[COEF[k]][1])
            mu = mu - coef * pm.Data(f"x_{k}", v, dims="run")
        return mu
    if form == "tokens":
        g = pm.Normal("g", mu=priors["g"][0], sigma=priors["g"][1])
        return -g * pm.Data("x_BC", x["B"] + x["C"], dims="run")
    b = pm.Normal("b", mu=priors["b"][0], sigma=priors["b"][1])
    # B_noise on the log scale, centred on the design's centre B: the curve is told from a power
    # law only where it bends, so the prior lets the bend sit anywhere within e^+-2 of the design
    log_bn = pm.Normal("log_B_noise", mu=centres["B"], sigma=priors["log_B_noise_sd"])
    log_b = pm.Data("log_B", x["B"] + centres["B"], dims="run")
    bend = pm.math.log1pexp(log_bn - log_b) - pm.math.log1pexp(log_bn - centres["B"])
    return bend - b * pm.Data("x_C", x["C"], dims="run")


def line_draws(form: str, draw, logs: dict, centres: dict) -> np.ndarray:
    """Draws of each run's law line without the intercept, shape (S, n).

    ``draw(name)``: a parameter's draws as an (S, 1) array; ``logs``: log factors by name (n,);
    ``centres``: the centres the posterior was fitted with."""
    x = {k: np.asarray(v, dtype=float)[None] - centres[k] for k, v in logs.items()}
    if form == "power":
        return -sum(draw(COEF[k]) * v for k, v in x.items())
    if form == "tokens":
        return -draw("g") * (x["B"] + x["C"])
    log_bn = draw("log_B_noise")
    bend = np.logaddexp(0.0, log_bn - (x["B"] + centres["B"])) - np.logaddexp(0.0, log_bn - centres["B"])
    return bend - draw("b") * x["C"]


def derived(form: str, post, centres: dict) -> dict:
    """The derived quantities of a form from its posterior (xarray variables): name -> variable."""
    alpha = post["alpha"]
    if form == "power":
        log_T = alpha + sum(post[COEF[k]] * c for k, c in centres.items())
        return {"log_T": log_T, "T": np.exp(log_T)}
    if form == "tokens":
        g = post["g"]
        log_T = alpha + g * (centres["B"] + centres["C"])
        return {"a": g, "b": g, "log_T": log_T, "T": np.exp(log_T)}
    log_bn = post["log_B_noise"]
    log_s_min = alpha - np.logaddexp(0.0, log_bn - centres["B"])   # S_min at the centre C
    local_a = 1.0 / (1.0 + np.exp(centres["B"] - log_bn))          # B_noise / (B_c + B_noise)
    return {"B_noise": np.exp(log_bn), "log_S_min": log_s_min, "S_min": np.exp(log_s_min), "a": local_a}

