"""Emergence tables from a known law of each form (:mod:`ihstats.law.forms`), and from two circuits.

Both simulators draw noise that is *not* the fits' own likelihood (a Student-t in log UPT): the
forms' run-to-run scatter is logistic, the circuits' Gaussian, so a recovery test shows the fit
holds when its noise model is only close. Measurement intervals and the shared token budget that
censors the runs with large ``B C`` are those of :mod:`ihstats.simulate.law`.

- :func:`simulate_form_table`: ``log UPT`` from the power, critical-batch or tokens form.
- :func:`simulate_circuit_table`: each run forms by one of two circuits, ``no-prev-token`` with
  probability ``logistic(q0 + qB x_B + qC x_C)`` (centred log factors), each circuit with its own
  power law; a formed run carries its ``circuit`` label, a censored one none (as
  ``ihstats.emergence`` writes them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ihstats.base.contract import CIRCUITS
from ihstats.simulate.law import EMERGENCE_COLUMNS, _design, _observed_table


def _logistic_noise(rng, n: int, sd: float) -> np.ndarray:
    """Logistic draws with standard deviation ``sd`` (scale ``sd sqrt(3) / pi``)."""
    return rng.logistic(0.0, sd * np.sqrt(3.0) / np.pi, size=n)


def form_line(form: str, params: dict, B, C) -> np.ndarray:
    """The true log UPT of each form at (B, C), without noise.

    ``power``: ``log_T, a, b``; ``tokens``: ``log_T, g``; ``critical_batch``: ``log_S_min`` (at
    ``C_centre``), ``B_noise``, ``b``, ``C_centre``."""
    lB, lC = np.log(np.asarray(B, dtype=float)), np.log(np.asarray(C, dtype=float))
    if form == "power":
        return params["log_T"] - params["a"] * lB - params["b"] * lC
    if form == "tokens":
        return params["log_T"] - params["g"] * (lB + lC)
    if form == "critical_batch":
        return (params["log_S_min"] + np.log1p(params["B_noise"] / np.exp(lB))
                - params["b"] * (lC - np.log(params["C_centre"])))
    raise ValueError(f"form: unknown {form!r}")


def simulate_form_table(form: str, params: dict, *, sigma: float = 0.15, B_values=(8, 16, 32, 64, 128, 256),
                        C_values=(32, 64, 128), n_seeds: int = 1, me_sd=(0.03, 0.08), level: float = 0.9,
                        censor_frac: float = 0.15, seed: int = 0) -> pd.DataFrame:
    """An emergence table from the law ``form`` with ``params`` (:func:`form_line`; for the
    critical-batch form ``C_centre`` defaults to the design's geometric-mean C, the centre the fit
    uses), logistic scatter of sd ``sigma`` and measurement error uniform in ``me_sd``."""
    if form == "critical_batch" and "C_centre" not in params:
        params = {**params, "C_centre": float(np.exp(np.mean(np.log(C_values))))}
    rng = np.random.default_rng(seed)
    B, C, N = _design(B_values, C_values, (1.0e6,), n_seeds)
    log_upt = form_line(form, params, B, C) + _logistic_noise(rng, len(B), sigma)
    sd = rng.uniform(me_sd[0], me_sd[1], size=len(B))
    table = _observed_table(B, C, N, log_upt + sd * rng.standard_normal(len(B)), sd, level, censor_frac, seed)
    return table[EMERGENCE_COLUMNS]


def simulate_circuit_table(*, q=(-0.5, 1.2, 0.0), laws=((8.0, 0.6, 0.2), (9.0, 0.3, 0.2)), sigma=(0.15, 0.2),
                           B_values=(8, 16, 32, 64, 128, 256), C_values=(32, 64, 128), n_seeds: int = 4,
                           me_sd=(0.03, 0.08), level: float = 0.9, censor_frac: float = 0.1,
                           seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """An emergence table from two circuits.

    Parameters
    ----------
    q : (q0, qB, qC)
        ``P(no-prev-token) = logistic(q0 + qB x_B + qC x_C)``, ``x`` the log factors centred on
        the design's means (the fit's centres).
    laws : ((alpha, a, b), (alpha, a, b))
        Per circuit (``prev-token``, ``no-prev-token``): ``log UPT = alpha - a x_B - b x_C``.
    sigma : (float, float)
        Per circuit: Gaussian run-to-run scatter in log UPT.

    Returns
    -------
    table, truth
        The emergence table (with ``cell_id`` and ``circuit``) and what was planted, including the
        drawn circuit of every run (``truth["circuit"]``, censored runs too).
    """
    rng = np.random.default_rng(seed)
    B, C, N = _design(B_values, C_values, (1.0e6,), n_seeds)
    xB, xC = np.log(B) - np.log(B).mean(), np.log(C) - np.log(C).mean()
    p_slow = 1.0 / (1.0 + np.exp(-(q[0] + q[1] * xB + q[2] * xC)))
    k = (rng.uniform(size=len(B)) < p_slow).astype(int)
    law = np.asarray(laws, dtype=float)[k]
    log_upt = law[:, 0] - law[:, 1] * xB - law[:, 2] * xC + np.asarray(sigma)[k] * rng.standard_normal(len(B))
    sd = rng.uniform(me_sd[0], me_sd[1], size=len(B))
    table = _observed_table(B, C, N, log_upt + sd * rng.standard_normal(len(B)), sd, level, censor_frac, seed)
    table["cell_id"] = [f"cell{i:03d}" for i in np.arange(len(B)) // n_seeds]
    table["circuit"] = np.where(table["censored"], "", np.asarray(CIRCUITS)[k])
    truth = {"q": tuple(q), "laws": tuple(map(tuple, laws)), "sigma": tuple(sigma), "circuit": k, "p_slow": p_slow}
    return table, truth
