"""Tests of ihstats.law: input checks, likelihood, predictions, recovery, censoring."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from ihstats import _bayes
from helpers_law import model_loglik_at
from ihstats.law.data import prepare
from ihstats.law.model import UPTLawModel, student_t_logsf
from ihstats.law.results import loglik, ols_fit, predict_from_posterior
from ihstats.law.spec import UPTLawError, UPTLawSpec
from ihstats.simulate.law import example_table, simulate_emergence_table

warnings.filterwarnings("ignore", message=".*BLAS.*")
FAST = dict(draws=300, tune=300, chains=2, seed=3)


@pytest.fixture(scope="module")
def example():
    return example_table()


@pytest.fixture(scope="module")
def fitted(example):
    table, truth = example
    return UPTLawModel.from_table(table, UPTLawSpec()).fit(**FAST), truth


# ---- input checks (no sampling) ----------------------------------------------------------------

@pytest.mark.parametrize("mutate, match", [
    (lambda t: t.drop(columns=["onset"]), r"missing column\(s\) \['onset'\]"),
    (lambda t: t.drop(columns=["onset_hi"]), r"onset_hi.*--no-measurement-error"),
    (lambda t: t.assign(onset=np.where(t.censored, np.nan, 0.0)), r"onset: UPT must be a finite number > 0"),
    (lambda t: t.assign(onset=-t.onset), r"onset: UPT must be a finite number > 0"),
    (lambda t: t.assign(B=8), r"B: only one distinct value \(8\); the exponent a is not identifiable"),
    (lambda t: t.assign(C=64), r"C: only one distinct value .*exponent b is not identifiable"),
    (lambda t: t.assign(censored=True), r"censored: all 30 runs are censored"),
    (lambda t: t.assign(last_step=0), r"last_step: must be a positive number"),
    (lambda t: t.assign(run_id="x"), r"run_id: .* list the same run more than once"),
    (lambda t: t.assign(metric="la"), None),  # single other metric: used, no error
])
def test_bad_input_errors(example, mutate, match):
    table = mutate(example[0].copy())
    if match is None:
        assert len(prepare(table, UPTLawSpec()).y) == 30
        return
    with pytest.raises(UPTLawError, match=match):
        prepare(table, UPTLawSpec())


def test_spec_and_metric_errors(example):
    with pytest.raises(UPTLawError, match="likelihood: must be"):
        UPTLawSpec(likelihood="cauchy")
    with pytest.raises(UPTLawError, match="priors: unknown key"):
        UPTLawSpec(priors={"gamma": (0, 1)})
    two = pd.concat([example[0], example[0].assign(metric="la")])
    assert len(prepare(two, UPTLawSpec()).y) == 30  # "ps" chosen among several
    with pytest.raises(UPTLawError, match=r"metric: 'xx' not in .*\['la', 'ps'\]"):
        prepare(two, UPTLawSpec(metric="xx"))
    with pytest.raises(UPTLawError, match="N: only one distinct value"):
        prepare(example[0].assign(N=1e6), UPTLawSpec(size_term=True))


def test_measurement_sd_from_interval(example):
    table = example[0]
    d = prepare(table, UPTLawSpec())
    obs = ~d.censored
    z = 1.6448536269514722  # 90% two-sided
    want = (np.log(table.onset_hi) - np.log(table.onset_lo))[obs] / (2 * z)
    np.testing.assert_allclose(d.me_sd[obs], want, rtol=1e-9)
    # simulator draws sd uniformly in [0.05, 0.15]; censored rows get the median
    assert 0.05 <= d.me_sd.min() and d.me_sd.max() <= 0.15
    np.testing.assert_allclose(d.me_sd[~obs], np.median(want))
    np.testing.assert_allclose(d.upper[~obs], np.log(table.last_step[~obs]))
    assert np.all(np.isinf(d.upper[obs]))


# ---- likelihood and gradient ---------------------------------------------------------------------

def test_student_t_logsf_op_value_and_gradient():
    import pytensor
    import pytensor.tensor as pt
    from scipy import stats

    z, nu = pt.dvector("z"), pt.dscalar("nu")
    out = student_t_logsf(z, nu).sum()
    f = pytensor.function([z, nu], [out, *pytensor.grad(out, [z, nu])])
    zv, nuv = np.array([-2.0, -0.3, 0.4, 1.7, 5.0]), 3.7
    val, gz, gnu = f(zv, nuv)
    assert val == pytest.approx(stats.t.logsf(zv, nuv).sum(), rel=1e-10)
    h = 1e-6
    num_z = (stats.t.logsf(zv + h, nuv) - stats.t.logsf(zv - h, nuv)) / (2 * h)
    num_nu = (stats.t.logsf(zv, nuv + h).sum() - stats.t.logsf(zv, nuv - h).sum()) / (2 * h)
    np.testing.assert_allclose(gz, num_z, rtol=1e-5)
    assert gnu == pytest.approx(num_nu, rel=1e-5)


@pytest.mark.parametrize("likelihood", ["student_t", "normal"])
def test_numpy_loglik_matches_pymc_model(example, likelihood):
    """The pointwise log-likelihood used for LOO equals the model's own likelihood terms."""
    law = UPTLawModel.from_table(example[0], UPTLawSpec(likelihood=likelihood))
    model = law.pymc_model()
    point = {"alpha": 9.5, "a": 0.3, "b": 0.7, "sigma": 0.25, "nu": 4.0}
    lik = model_loglik_at(model, point)
    post = {k: np.full((1, 1), v) for k, v in point.items()
            if likelihood == "student_t" or k != "nu"}
    idata = _bayes.from_draws(post)
    assert loglik(law.data, idata).sum() == pytest.approx(float(lik), rel=1e-7)  # log-transform round trip


# ---- predictions from a known posterior ----------------------------------------------------------

def test_predict_from_known_posterior():
    S = 4000
    post = {"alpha": np.full((1, S), 10.0), "a": np.full((1, S), 0.4),
            "b": np.full((1, S), 0.6), "sigma": np.full((1, S), 0.2)}
    idata = _bayes.from_draws(post)
    idata.posterior.attrs.update(center_logB=np.log(16), center_logC=np.log(64), size_term=0)
    out = predict_from_posterior(idata, B=[16, 64], C=[64, 256], hdi_prob=0.9)
    want = np.exp(10.0 - 0.4 * np.log([1, 4]) - 0.6 * np.log([1, 4]))
    np.testing.assert_allclose(out.upt, want, rtol=1e-12)  # no parameter uncertainty
    np.testing.assert_allclose(out.upt_lo, want, rtol=1e-12)
    # the new-run interval is exp(mu +- 1.645 sigma) for Gaussian scatter (Monte Carlo tolerance)
    np.testing.assert_allclose(out.pred_hi / want, np.exp(1.645 * 0.2), rtol=0.03)
    np.testing.assert_allclose(out.tokens, want * np.array([16 * 64, 64 * 256]))
    with pytest.raises(UPTLawError, match=r"B: must be a finite number > 0, got \[0.0\]"):
        predict_from_posterior(idata, B=0, C=64)


# ---- one real fit on the shipped example ----------------------------------------------------------

def test_fit_recovers_example_truth(fitted, tmp_path):
    res, truth = fitted
    s = res.summary(hdi_prob=0.9)
    assert list(s.index) == ["a", "b", "log_T", "T", "sigma", "nu"]
    assert {"mean", "hdi_lo", "hdi_hi", "r_hat", "ess_bulk"} <= set(s.columns)
    for p, v in (("a", truth.a), ("b", truth.b), ("log_T", truth.log_T)):
        assert s.loc[p, "hdi_lo"] < v < s.loc[p, "hdi_hi"], (p, s.loc[p].to_dict())
    np.testing.assert_allclose(s.loc["T", "mean"], np.exp(res.idata.posterior["log_T"]).mean(),
                               rtol=1e-9)
    assert res.r_obs_pred > 0.9
    # 99% HDI wider than 50% HDI
    assert (res.summary(0.99).hdi_hi - res.summary(0.99).hdi_lo >
            s.hdi_hi - s.hdi_lo).all()
    assert isinstance(res.diagnostics(), list)
    assert any("bulk ESS" in w for w in res.diagnostics(ess_min=1e9))  # checks really run
    pp = res.ppc()["log_upt"]
    assert pp.shape == (2, 300, 30)
    cen = res.data.censored
    assert np.all(pp.values[..., cen] <= res.data.upper[cen] + 1e-12)  # clipped like the data
    loo = _bayes.loo_table(res.loo())
    assert loo.n_obs.item() == 30 and np.isfinite(loo.elpd_loo.item())
    pred = res.predict(B=512, C=2048)
    assert pred.upt_lo.item() < pred.upt.item() < pred.upt_hi.item()
    assert pred.pred_lo.item() < pred.upt_lo.item()  # new-run interval is wider
    paths = res.save(tmp_path)
    doc = json.loads(paths["fit"].read_text())
    assert doc["n_runs"] == 30 and doc["n_censored"] == int(cen.sum())
    assert set(pd.read_csv(paths["summary"])["param"]) >= {"a", "b", "T"}
    back = _bayes.from_netcdf(paths["idata"])
    assert back.posterior.attrs["center_logB"] == pytest.approx(res.data.centres["B"])


def test_ols_matches_statsmodels_on_exact_law():
    """Noise-free law: OLS returns the exact exponents with our sign convention."""
    table, _ = simulate_emergence_table(sigma=1e-9, me_sd=(1e-9, 2e-9), censor_frac=0.0, seed=1)
    o = ols_fit(prepare(table, UPTLawSpec()))
    assert o.loc["a", "estimate"] == pytest.approx(0.37, abs=1e-6)
    assert o.loc["b", "estimate"] == pytest.approx(0.62, abs=1e-6)
    assert o.loc["log_T", "estimate"] == pytest.approx(13.26, abs=1e-5)


def test_ols_with_every_formed_run_at_one_C_has_no_b_and_the_right_intercept():
    """bxc-law's shape: every formed run at C 64, those at C 128 censored. log C is then constant
    among the runs OLS sees: b is NaN (named in attrs), and the intercept and a are those of a fit
    on B alone (statsmodels' add_constant used to skip the intercept, taking log C for it, and
    the index of b ran off the end), and the OLS baseline predicts C 128 without a made-up slope."""
    table, _ = simulate_emergence_table(sigma=1e-9, me_sd=(1e-9, 2e-9), censor_frac=0.0, seed=1,
                                        B_values=(8, 16, 32, 64), C_values=(64, 128))
    table.loc[table["C"] == 128, "censored"] = True
    data = prepare(table, UPTLawSpec())
    o = ols_fit(data)
    assert o.loc["a", "estimate"] == pytest.approx(0.37, abs=1e-6) and np.isnan(o.loc["b", "estimate"])
    assert o.attrs["constant"] == ["C"]
    assert o.loc["log_T", "estimate"] == pytest.approx(13.26 - 0.62 * np.log(64), abs=1e-5)
    from ihstats.law.scoring import ols_predictive
    pred = ols_predictive(data, data)
    at128 = (np.exp(data.logs["C"]) > 100)
    np.testing.assert_allclose(pred.loc[0, at128], 13.26 - 0.62 * np.log(64) - 0.37 * data.logs["B"][at128], atol=1e-5)


def test_censoring_pulls_fit_upward():
    """Known answer: runs censored at a last_step below their true UPT must raise the fitted
    UPT at those runs compared with dropping them, and dropping biases the law downward."""
    table, truth = simulate_emergence_table(sigma=0.3, censor_frac=0.3, seed=11,
                                            B_values=(4, 8, 16, 32, 64, 128),
                                            C_values=(16, 32, 64, 128, 256))
    cen = table.censored.to_numpy()
    assert 0.2 < cen.mean() < 0.4
    kw = dict(draws=300, tune=300, chains=1, seed=5)
    spec = UPTLawSpec(likelihood="normal")
    with_c = UPTLawModel.from_table(table, spec).fit(**kw)
    dropped = UPTLawModel.from_table(table[~cen], spec).fit(**kw)
    x = {k: v[cen] - dropped.data.centres[k] for k, v in with_c.data.logs.items()}
    mu_drop = (_bayes.posterior_draws(dropped.idata, "alpha")[:, None]
               - _bayes.posterior_draws(dropped.idata, "a")[:, None] * x["B"]
               - _bayes.posterior_draws(dropped.idata, "b")[:, None] * x["C"]).mean(0)
    mu_cens = with_c.mu_draws().mean(0)[cen]
    assert np.all(mu_cens > mu_drop)
    # censored runs sit at large B*C: dropping them overstates both exponents here
    s_c, s_d = with_c.summary(), dropped.summary()
    for p in ("a", "b"):
        assert abs(s_c.loc[p, "mean"] - getattr(truth, p)) < abs(s_d.loc[p, "mean"] -
                                                                 getattr(truth, p))


@pytest.mark.slow
def test_recovery_benchmark_slow():
    """40-data-set coverage study and OLS agreement (benchmarks/bench_upt_recovery.py)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_upt_recovery.py"
    spec = importlib.util.spec_from_file_location("bench_upt_recovery", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cov = mod.coverage_study(40, verbose=False)
    # The 80-97% band, read on the 40-data-set grid: 32/40 .. 39/40 is the central 95%
    # range of Binomial(40, 0.9), so 39/40 (97.5%) is within sampling variation of a calibrated
    # 90% interval. Measured at this seed: a 38/40, b 39/40.
    assert 32 <= cov.a_covered.sum() <= 39
    assert 32 <= cov.b_covered.sum() <= 39
    agree = mod.ols_agreement()
    assert agree[["a_diff", "b_diff"]].to_numpy().max() < 0.02


def test_cell_effect_separates_seed_scatter_from_the_law_residual():
    """Issue 27 item 4: with replicates, cell_sd (cells off the law) and sigma (seeds within a cell)
    are told apart; a new cell's interval is wider than the law line's."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    rows = []
    for B in (8, 16, 32, 64):
        for C in (64, 128, 256, 512):
            cell = rng.normal(0, 0.4)  # the law's residual
            for seed in range(4):
                log_upt = 13.26 - 0.37 * np.log(B) - 0.62 * np.log(C) + cell + rng.normal(0, 0.1)
                rows.append({"run_id": f"{B}-{C}-{seed}", "cell_id": f"{B}-{C}", "B": B, "C": C,
                             "onset": np.exp(log_upt), "censored": False, "last_step": 1e7})
    table = pd.DataFrame(rows)
    spec = UPTLawSpec(cell_effect=True, likelihood="normal", measurement_error=False)
    res = UPTLawModel.from_table(table, spec).fit(draws=400, tune=400, chains=2, seed=1)
    s = res.summary()
    assert s.at["cell_sd", "hdi_lo"] < 0.4 < s.at["cell_sd", "hdi_hi"]
    assert s.at["sigma", "hdi_lo"] < 0.1 < s.at["sigma", "hdi_hi"] and s.at["sigma", "hdi_hi"] < 0.2
    p = res.predict(32, 128)
    assert (p["cell_hi"] / p["cell_lo"] > 1.5 * p["upt_hi"] / p["upt_lo"]).all()
    with pytest.raises(UPTLawError, match="cell_id"):  # no replicates: nothing to separate
        UPTLawModel.from_table(table.drop_duplicates("cell_id"), spec)
