"""Scatter per level (issue 39 item 3): UPTLawSpec(sigma_by=...) recovers simulated per-C scatter."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ihstats import _bayes
from ihstats.law.sensitivity import compare_sigma_by, influence_table, sensitivity_table
from helpers_law import model_loglik_at
from ihstats.law.data import prepare
from ihstats.law.model import UPTLawModel
from ihstats.law.results import loglik
from ihstats.law.spec import UPTLawError, UPTLawSpec
from ihstats.simulate.law import simulate_emergence_table

warnings.filterwarnings("ignore", message=".*BLAS.*")
SIGMA_C = {16: 0.8, 64: 0.3, 256: 0.1}  # scatter falling with C, as in bxc-markov (issue 39)
FAST = dict(draws=400, tune=400, chains=2, seed=2)
SPEC = UPTLawSpec(sigma_by="C", likelihood="normal")


@pytest.fixture(scope="module")
def table():
    t, _ = simulate_emergence_table(B_values=(4, 8, 16, 32), C_values=tuple(SIGMA_C), n_seeds=4,
                                    sigma_C=SIGMA_C, me_sd=(0.02, 0.05), censor_frac=0.0, seed=11)
    return t


@pytest.fixture(scope="module")
def fitted(table):
    return UPTLawModel.from_table(table, SPEC).fit(**FAST)


def test_numpy_loglik_uses_each_runs_level_like_the_model(table):
    """Fast check of the wiring: the LOO log-likelihood (numpy) equals the PyMC model's terms with
    a different sigma per C level."""
    law = UPTLawModel.from_table(table, SPEC)
    model = law.pymc_model()
    z, mu_ls, sd_ls = np.array([0.9, -0.2, -1.1]), -1.0, 0.8
    point = {"alpha": 9.5, "a": 0.3, "b": 0.7, "log_sigma_mu": mu_ls, "log_sigma_sd": sd_ls, "sigma_z": z}
    lik = model_loglik_at(model, point)
    sigma = np.exp(mu_ls + sd_ls * z)
    post = {k: np.full((1, 1), point[k]) for k in ("alpha", "a", "b")} | {"sigma": sigma[None, None]}
    idata = _bayes.from_draws(post, dims={"sigma": ["sigma_level"]}, coords={"sigma_level": law.data.sigma_levels})
    assert loglik(law.data, idata).sum() == pytest.approx(float(lik), rel=1e-7)
    shared = _bayes.from_draws({**post, "sigma": np.full((1, 1), sigma.mean())})
    assert loglik(UPTLawModel.from_table(table, UPTLawSpec(likelihood="normal")).data, shared).sum() != pytest.approx(float(lik))


@pytest.mark.slow  # one fit, ~35 s on a shared 2-core machine
def test_per_level_scatter_is_recovered_inside_its_hdis(fitted):
    s = fitted.summary(0.9)
    for c, true in SIGMA_C.items():
        lo, hi = s.at[f"sigma[{c}]", "hdi_lo"], s.at[f"sigma[{c}]", "hdi_hi"]
        assert lo < true < hi, (c, lo, true, hi)
    assert s.at["sigma[256]", "hdi_hi"] < s.at["sigma[16]", "hdi_lo"]  # the levels are told apart
    for p, true in (("a", 0.37), ("b", 0.62)):
        assert s.at[p, "hdi_lo"] < true < s.at[p, "hdi_hi"]
    # a planned run at a fitted C gets that level's scatter: the prediction band narrows with C
    p = fitted.predict(8, [16, 256])
    width = np.log(p["pred_hi"] / p["pred_lo"]).to_numpy()
    assert width[0] > 3 * width[1]
    infl = influence_table(fitted)
    assert np.isfinite(infl["std_residual"]).all()


def test_sigma_by_input_errors(table):
    with pytest.raises(UPTLawError, match="sigma_by: no column 'context'"):
        prepare(table, UPTLawSpec(sigma_by="context"))
    with pytest.raises(UPTLawError, match="one level"):
        prepare(table, UPTLawSpec(sigma_by="metric"))  # every row "ps"
    with pytest.raises(UPTLawError, match="fewer than two uncensored runs"):
        prepare(table.drop(table.index[(table["C"] == 64)][1:]), UPTLawSpec(sigma_by="C"))
    with pytest.raises(UPTLawError, match="sigma_by: a column name"):
        UPTLawSpec(sigma_by="")
    d = prepare(table, SPEC)
    assert d.sigma_levels == ["16", "64", "256"] and set(d.sigma_idx) == {0, 1, 2}


@pytest.mark.slow
def test_loo_prefers_the_per_level_scatter_and_the_sensitivity_table_shows_both(table, fitted):
    cmp = compare_sigma_by(table, SPEC, fits={"sigma_by_C": fitted}, **FAST)
    assert cmp.index[0] == "sigma_by_C"
    assert cmp.at["shared_sigma", "elpd_diff"] > 2 * cmp.at["shared_sigma", "dse"]
    sens = sensitivity_table(table, SPEC, base=fitted, **FAST).set_index("variant")
    assert "shared sigma" in sens.index and sens.at["base", "sigma"].startswith("16: ")
    assert sens.at["base", "elpd_loo"] > sens.at["shared sigma", "elpd_loo"]
