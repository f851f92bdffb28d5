"""Law forms (ihstats.law.forms) and the two-circuit mixture (ihstats.law.mixture): likelihoods
against PyMC's, predictions from known posteriors, recovery of simulated parameters with censoring
(noise not the fit's own: logistic for the forms, Gaussian per circuit), and the comparisons."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special

from helpers_law import model_loglik_at
from ihstats import _bayes
from ihstats.law.comparison import (MIXTURE, SINGLE, best_form, compare_circuits, compare_forms, fit_forms,
                                    heldout_table, preference)
from ihstats.law.mixture import CircuitMixtureModel, component_joint, mixture_predictive, predict_mixture
from ihstats.law.model import UPTLawModel
from ihstats.law.results import loglik, predict_from_posterior
from ihstats.law.spec import UPTLawError, UPTLawSpec
from ihstats.law.validation import ValidationSpec, validate_holdout
from ihstats.simulate.law_forms import form_line, simulate_circuit_table, simulate_form_table

warnings.filterwarnings("ignore", message=".*BLAS.*")
FAST = dict(draws=300, tune=300, chains=2, seed=1)
HDI = 0.95
#: The truth of each form (critical batch: the bend inside B 4-1024, as on the C 64 cells of bxc-law).
TRUTH = {"power": dict(log_T=10.0, a=0.5, b=0.3), "tokens": dict(log_T=10.0, g=0.45),
         "critical_batch": dict(log_S_min=5.3, B_noise=60.0, b=0.3)}
#: The fitted parameter each true value is read against (name in the posterior -> truth).
CHECKED = {"power": {"a": 0.5, "b": 0.3, "log_T": 10.0}, "tokens": {"g": 0.45, "log_T": 10.0},
           "critical_batch": {"log_B_noise": np.log(60.0), "b": 0.3, "log_S_min": 5.3}}
WIDE_B = (4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _table(form):
    return simulate_form_table(form, TRUTH[form], B_values=WIDE_B, sigma=0.1, seed=1)


@pytest.fixture(scope="module")
def form_fits():
    """Each form fitted to its own simulated table."""
    return {form: UPTLawModel.from_table(_table(form), UPTLawSpec(form=form)).fit(**FAST) for form in TRUTH}


@pytest.fixture(scope="module")
def circuits():
    table, truth = simulate_circuit_table(seed=2, n_seeds=3)
    return table, truth, CircuitMixtureModel.from_table(table).fit(**FAST)


# ---- no sampling -------------------------------------------------------------------------------

def test_spec_refuses_an_unknown_form_and_a_size_term_outside_the_power_form():
    with pytest.raises(UPTLawError, match="form: must be one of"):
        UPTLawSpec(form="exponential")
    with pytest.raises(UPTLawError, match="size_term: the tokens form has no model-size term"):
        UPTLawSpec(form="tokens", size_term=True)


@pytest.mark.parametrize("form, point", [
    ("tokens", {"alpha": 7.0, "g": 0.4, "sigma": 0.3, "nu": 4.0}),
    ("critical_batch", {"alpha": 6.0, "b": 0.3, "log_B_noise": 4.0, "sigma": 0.2, "nu": 5.0}),
])
def test_numpy_loglik_of_each_form_matches_the_pymc_model(form, point):
    model = UPTLawModel.from_table(_table(form), UPTLawSpec(form=form))
    assert model.data.censored.any()  # the censored runs' survival terms are compared too
    idata = _bayes.from_draws({k: np.full((1, 1), v) for k, v in point.items()})
    ll = loglik(model.data, idata, form).sum()
    np.testing.assert_allclose(ll, model_loglik_at(model.pymc_model(), point), rtol=1e-9)


def test_predictions_answer_from_the_posterior_form():
    """A known critical-batch posterior: the line is S_min (1 + B_noise / B) at the centre C, so at
    B = B_noise it is twice S_min, and a large B gives S_min itself."""
    cB, cC = np.log(64.0), np.log(64.0)
    post = {"alpha": np.full((1, 400), np.log(150.0) + np.log1p(60.0 / 64.0)), "b": np.full((1, 400), 0.3),
            "log_B_noise": np.full((1, 400), np.log(60.0)), "sigma": np.full((1, 400), 1e-6)}
    idata = _bayes.from_draws(post)
    idata.posterior.attrs.update(form="critical_batch", center_logB=cB, center_logC=cC)
    pred = predict_from_posterior(idata, [60.0, 1e7], [64.0, 64.0])
    np.testing.assert_allclose(pred["upt"], [300.0, 150.0], rtol=1e-4)
    np.testing.assert_allclose(pred["upt"], np.exp(form_line("critical_batch", dict(
        log_S_min=np.log(150.0), B_noise=60.0, b=0.3, C_centre=64.0), [60.0, 1e7], [64.0, 64.0])), rtol=1e-4)


def test_mixture_prediction_draws_the_circuit_from_its_probability():
    """Known mixture posterior: circuits 1 and 3 in log UPT apart, P(slow) = 0.25 at the centre."""
    n = 4000
    const = {"q0": special.logit(0.25), "qB": 0.0, "qC": 0.0, "nu": 30.0}
    post = {k: np.full((1, n), v) for k, v in const.items()}
    post.update({"alpha": np.tile([5.0, 8.0], (1, n, 1)), "a": np.zeros((1, n, 2)), "b": np.zeros((1, n, 2)),
                 "sigma": np.full((1, n, 2), 0.05)})
    idata = _bayes.from_draws(post, dims={k: ["circuit"] for k in ("alpha", "a", "b", "sigma")})
    idata.posterior.attrs.update(center_logB=np.log(32.0), center_logC=np.log(64.0))
    row = predict_mixture(idata, 32.0, 64.0, hdi_prob=0.9).iloc[0]
    assert row.p_no_prev_token == pytest.approx(0.25)
    # the 90% interval of a new run must reach the slow circuit (25% of the mass lies there)
    assert row.pred_lo < np.exp(5.0) < np.exp(8.0) < row.pred_hi
    model = CircuitMixtureModel.from_table(simulate_circuit_table(seed=0, n_seeds=2)[0])
    p = mixture_predictive(idata, model.data, n_draws=n)
    frac_slow = (p.loc > 6.5).mean()
    assert frac_slow == pytest.approx(0.25, abs=0.03)


def test_numpy_mixture_terms_match_the_pymc_model():
    """The model's likelihood (labelled runs: their circuit's joint term; unlabelled: the marginal)
    equals the numpy terms that the log-likelihood group is built from."""
    model = CircuitMixtureModel.from_table(simulate_circuit_table(seed=0, n_seeds=2)[0])
    assert model.mode == "observed" and (model.labels < 0).any()
    point = {"q0": -0.3, "qB": 0.8, "qC": 0.1, "alpha": np.array([8.0, 9.0]), "a": np.array([0.6, 0.3]),
             "b": np.array([0.2, 0.1]), "sigma": np.array([0.2, 0.3]), "nu": 6.0}
    post = {k: np.asarray(v, dtype=float)[None, None] for k, v in point.items()}
    idata = _bayes.from_draws(post, dims={k: ["circuit"] for k in ("alpha", "a", "b", "sigma")})
    idata.posterior.attrs.update({f"center_log{k}": v for k, v in model.data.centres.items()})
    joint = component_joint(model.data, idata)[0]
    lab = model.labels
    want = special.logsumexp(joint[lab < 0], axis=1).sum() + sum(joint[lab == k, k].sum() for k in (0, 1))
    np.testing.assert_allclose(model_loglik_at(model.pymc_model(), point), want, rtol=1e-9)


def test_mixture_refuses_what_it_cannot_fit():
    table, _ = simulate_circuit_table(seed=0, n_seeds=2)
    with pytest.raises(UPTLawError, match="mixture: each circuit has a power law"):
        CircuitMixtureModel.from_table(table, UPTLawSpec(form="tokens"))
    one = table.assign(circuit=np.where(table["censored"], "", "prev-token"))
    with pytest.raises(UPTLawError, match="labels='observed' needs two or more formed runs of each circuit"):
        CircuitMixtureModel.from_table(one, labels="observed")
    assert CircuitMixtureModel.from_table(one).mode == "marginal"  # auto: nothing to observe


def test_heldout_table_is_a_paired_elpd_difference():
    runs = pd.DataFrame({"fold": "h", "run_id": list("abcd") * 2, "model": ["m1"] * 4 + ["m2"] * 4,
                         "lpd": [0.0, 1.0, 0.5, 0.2, -1.0, 0.0, 0.5, -0.3]})
    tab = heldout_table(runs, ["m1", "m2"])
    assert list(tab.index) == ["m1", "m2"]
    d = np.array([1.0, 1.0, 0.0, 0.5])
    assert tab.loc["m2", "elpd_diff"] == pytest.approx(d.sum())
    assert tab.loc["m2", "dse"] == pytest.approx(np.sqrt(4 * d.var(ddof=1)))
    assert "the data prefer m1 over m2" in preference(tab, "x", elpd="elpd")


# ---- recovery (sampling; each form and the mixture once) -----------------------------------------

@pytest.mark.parametrize("form", list(TRUTH))
def test_each_form_recovers_its_simulated_parameters_with_censoring(form_fits, form):
    res = form_fits[form]
    assert res.data.censored.sum() >= 2
    summ = res.summary(HDI)
    for name, true in CHECKED[form].items():
        assert summ.at[name, "hdi_lo"] <= true <= summ.at[name, "hdi_hi"], (form, name, summ.loc[name].to_dict())
    assert summ.at["sigma", "hdi_lo"] <= 0.1 <= summ.at["sigma", "hdi_hi"]


def test_mixture_recovers_the_circuit_probability_and_both_onset_laws(circuits):
    table, truth, res = circuits
    assert res.model.mode == "observed" and res.data.censored.sum() >= 2
    summ = res.summary(HDI)
    for name, true in zip(("q0", "qB", "qC"), truth["q"]):
        assert summ.at[name, "hdi_lo"] <= true <= summ.at[name, "hdi_hi"], (name, summ.loc[name].to_dict())
    for k, circuit in enumerate(("prev-token", "no-prev-token")):
        for name, true in zip(("alpha", "a", "b"), truth["laws"][k]):
            row = summ.loc[f"{name}[{circuit}]"]
            assert row["hdi_lo"] <= true <= row["hdi_hi"], (name, circuit, row.to_dict())
    # the circuit probability itself, per cell, against the one planted
    p_fit = special.expit(_bayes.posterior_draws(res.idata, "q0")[:, None]
                          + _bayes.posterior_draws(res.idata, "qB")[:, None] * res.data.x["B"][None]
                          + _bayes.posterior_draws(res.idata, "qC")[:, None] * res.data.x["C"][None]).mean(axis=0)
    assert np.abs(p_fit - truth["p_slow"]).mean() < 0.1


# ---- comparisons (more fits) ----------------------------------------------------------------------

@pytest.mark.slow
def test_loo_picks_the_true_form_on_clearly_separated_data(form_fits):
    """Critical-batch data over B 4-1024 (local B exponent 0.94 to 0.06): the critical-batch form
    ranks first, more than 2 SE ahead of the power and tokens forms."""
    table = _table("critical_batch")
    fits = fit_forms(table, UPTLawSpec(), fits={"critical_batch": form_fits["critical_batch"]}, **FAST)
    cmp = compare_forms(fits)
    assert best_form(cmp) == "critical_batch"
    assert (cmp["elpd_diff"].iloc[1:] > 2 * cmp["dse"].iloc[1:]).all(), cmp


@pytest.mark.slow
def test_loo_prefers_the_mixture_when_runs_switch_circuit(circuits):
    table, _, mixture = circuits
    single = UPTLawModel.from_table(table, UPTLawSpec()).fit(**FAST)
    cmp = compare_circuits({SINGLE: single, MIXTURE: mixture})
    assert cmp.index[0] == MIXTURE
    assert cmp["elpd_diff"].iloc[1] > 2 * cmp["dse"].iloc[1], cmp


# ---- the commands ----------------------------------------------------------------------------------

def test_fit_cli_saves_the_form_and_predict_answers_from_it(tmp_path):
    """analyses/fit_upt_law.py --form tokens: the posterior records its form, the report names it,
    and python -m ihstats.law.predict answers from the tokens line (a = b = g)."""
    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "fit"
    p = subprocess.run([sys.executable, str(root / "analyses" / "fit_upt_law.py"), "--emergence",
                        str(root / "data" / "example_emergence.csv"), "--fast", "--form", "tokens", "--out", str(out)],
                       cwd=root, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    idata, record = _bayes.load_fit(out)
    assert idata.posterior.attrs["form"] == "tokens" and record["form"] == "tokens"
    assert "(tokens form, ihstats.law.forms)" in (out / "report.md").read_text()
    q = subprocess.run([sys.executable, "-m", "ihstats.law.predict", "--batch-size", "32", "--context", "64",
                        "--posterior", str(out)], cwd=root, capture_output=True, text=True, timeout=300)
    assert q.returncode == 0, q.stderr[-2000:]
    assert "tokens form: log UPT = log T - g log(B C)" in q.stdout
    g = _bayes.posterior_draws(idata, "g")
    want = np.exp(np.median(_bayes.posterior_draws(idata, "log_T") - g * np.log(32 * 64)))
    got = float(q.stdout.split("posterior median): ")[1].split(" updates")[0].replace(",", ""))
    assert got == pytest.approx(want, rel=0.01)


@pytest.mark.slow
def test_holdout_validation_compares_forms_and_circuits():
    """validate_holdout with forms and circuits: LOO tables on the fitted grid, held-out tables on
    the test grid, and each alternative scored per run."""
    train, _ = simulate_circuit_table(seed=3, n_seeds=2)
    test, _ = simulate_circuit_table(seed=4, n_seeds=1, B_values=(12, 48, 192))
    spec = ValidationSpec(forms=("power", "tokens"), circuits=True, baselines=False, n_pred_draws=300)
    res = validate_holdout(test, spec, train_table=train, fit_kw=FAST)
    models = set(res.runs["model"])
    assert {"power form", "tokens form", SINGLE, MIXTURE} <= models
    for key, names in (("loo_forms", {"power form", "tokens form"}), ("heldout_forms", {"power form", "tokens form"}),
                       ("loo_circuits", {SINGLE, MIXTURE}), ("heldout_circuits", {SINGLE, MIXTURE})):
        assert {r["model"] for r in res.meta[key]} == names, key
    held = pd.DataFrame(res.meta["heldout_circuits"]).set_index("model")
    assert (held["n_runs"] == len(test)).all()
