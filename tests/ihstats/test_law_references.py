"""Forms compared honestly (issue 66): the seed papers' lines fitted like for like, the fit apart
from the parameter penalty; LOO tables split the same way."""

import numpy as np
import pandas as pd
import pytest

from ihstats.law.comparison import preference, split_penalty
from ihstats.law.data import prepare
from ihstats.law.references import reference_table
from ihstats.law.spec import UPTLawSpec


def _table(a=0.5, b=0.5, log_T=9.0, sigma=0.3, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for B in (8, 16, 32, 64, 128):
        for C in (32, 64, 128):
            for s in range(3):
                y = log_T - a * np.log(B) - b * np.log(C) + sigma * rng.standard_normal()
                rows.append({"run_id": f"b{B}c{C}s{s}", "B": B, "C": C, "onset": float(np.exp(y)),
                             "censored": False, "last_step": 10 ** 7})
    return pd.DataFrame(rows)


def test_the_tokens_form_fits_data_made_by_it_and_the_penalty_is_apart():
    t = reference_table(prepare(_table(), UPTLawSpec(measurement_error=False)))
    free, tok = t.loc["free power"], t.loc["tokens T sqrt(B C)"]
    assert free["a"] == pytest.approx(0.5, abs=0.1) and free["sigma"] == pytest.approx(0.3, abs=0.08)
    assert -3 < tok["loglik_diff"] <= 1e-6 and tok["penalty_diff"] == -4 and tok["n_free"] == 1
    assert tok["aic_diff"] == pytest.approx(-2 * tok["loglik_diff"] - 4)
    assert t.loc["Aoyama as published (ln T 13.26)", "loglik_diff"] < -20  # its T is another setup's
    far = reference_table(prepare(_table(a=1.0, b=0.2), UPTLawSpec(measurement_error=False)))
    assert far.loc["tokens T sqrt(B C)", "loglik_diff"] < -10  # data off the form: the fit says so


def test_split_penalty_and_the_sentence():
    frame = pd.DataFrame({"rank": [0, 1], "elpd_loo": [-20.0, -20.65], "p_loo": [3.0, 4.0], "elpd_diff": [0.0, 0.65],
                          "se": [3.0, 3.0], "dse": [0.0, 0.5], "weight": [0.6, 0.4]}, index=["tokens", "power"])
    out = split_penalty(frame)
    assert out.loc["power", "lpd_diff"] == pytest.approx(-0.35) and out.loc["power", "p_loo_diff"] == pytest.approx(1.0)
    assert np.allclose(out["elpd_diff"], out["lpd_diff"] + out["p_loo_diff"])
    assert "fit -0.35 and parameter penalty 1.00" in preference(out, "forms")
