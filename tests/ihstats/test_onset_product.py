"""The product model (one elasticity on f r) recovers a simulated f r elasticity and the fixed-budget
boundary it implies; the likelihood ratio keeps its size when only the product matters and
rejects when the knobs act apart; local elasticities cover a constant elasticity."""

import numpy as np
import pytest

from ihstats.onset.mle import fit_mle
from ihstats.onset.model import OnsetModel
from ihstats.onset.product import (bootstrap_lr_p, compare_lines, compare_models, fit_product, held_out_check,
                                   likelihood_ratio, local_elasticities, product_X)
from ihstats.simulate.onsets import simulate_onsets

# freqrel's design: two transects through f = r = 0.9, 3 seeds, cap 4,200
CELLS = [(f, 0.9) for f in (0.7, 0.8, 0.85, 0.9)] + [(0.9, r) for r in (0.5, 0.7, 0.8)]
E = -4.0
PRODUCT = dict(log_t0=np.log(1330.0) - E * np.log(0.81), e_freq=E, e_rel=E, sigma=0.17, cap=4200.0)


def fits(table):
    m = OnsetModel.from_table(table)
    y, cen = m.runs["log_time"].to_numpy(), m.censored
    return m, fit_mle(m.X, y, cen), fit_mle(product_X(m), y, cen)


@pytest.fixture(scope="module")
def fitted():
    table, truth = simulate_onsets(CELLS, n_seeds=4, seed=7, **PRODUCT)
    model = OnsetModel.from_table(table)
    separate = model.fit(draws=300, tune=300, chains=2, seed=1)
    return model, truth, separate, fit_product(model, draws=300, tune=300, chains=2, seed=1)


def test_product_model_recovers_a_simulated_elasticity(fitted):
    model, truth, _, prod = fitted
    el = prod.elasticity(0.9)
    assert el["lo"] <= E <= el["hi"], el
    assert abs(el["mle"] - E) < 3 * el["mle_se"]
    assert abs(el["mle"] - el["median"]) < 0.5 * (el["hi"] - el["lo"])
    # the boundary at the cap: the product at which the true median onset is the cap (98% HDI: one
    # dataset, so a 90% interval would miss one time in ten)
    true_fr = np.exp((np.log(4200.0) - truth.log_t0) / E)
    b = prod.boundary([4200.0], hdi_prob=0.98).iloc[0]
    assert b["product_lo"] <= true_fr <= b["product_hi"], (true_fr, b.to_dict())
    assert b["reliability_at"] == pytest.approx(b["product"] / 0.9)  # the same line at f = 0.9
    pred = prod.median_onset([(0.9, 0.5)], hdi_prob=0.98).iloc[0]
    assert pred["lo"] <= truth.median_onset(0.9, 0.5) <= pred["hi"]


def test_comparison_table_prefers_neither_when_only_the_product_matters(fitted):
    model, _, separate, prod = fitted
    t = compare_models(model, separate, prod, n_boot=49).set_index("model")
    assert t.at["separate", "e_freq"] != t.at["separate", "e_rel"]
    assert t.at["product", "e_freq"] == t.at["product", "e_rel"]
    assert t.at["separate", "loglik"] >= t.at["product", "loglik"]  # nested: never lower
    assert 0 < t.at["separate", "lr_p_bootstrap"] <= 1 and 0 <= t.at["separate", "lr_p_value"] <= 1
    assert set(t["elpd_diff"]) >= {0.0} and np.isfinite(t["elpd_exact_loo"]).all()


def test_product_mle_coverage_and_likelihood_ratio_size_and_power():
    """90% Wald intervals of the product elasticity cover it in about 90% of datasets (measured
    0.88 on 200); the chi-square LRT rejects a true product model more than its 5% (measured
    0.10: why the report gives the bootstrap p too), and rejects e_f -6 / e_r -2 nearly always."""
    cover = size = power = 0
    n = 60
    for s in range(n):
        _, sep, prod = fits(simulate_onsets(CELLS, n_seeds=3, seed=1000 + s, **PRODUCT)[0])
        cover += abs(prod.params[1] - E) <= 1.645 * prod.se[1]
        size += likelihood_ratio(sep, prod)["p_value"] < 0.05
        _, sep, prod = fits(simulate_onsets(CELLS, n_seeds=3, seed=2000 + s,
                                            **{**PRODUCT, "e_freq": -6.0, "e_rel": -2.0})[0])
        power += likelihood_ratio(sep, prod)["p_value"] < 0.05
    assert 0.8 <= cover / n <= 0.97 and size / n <= 0.2 and power / n >= 0.9, (cover, size, power)


def test_bootstrap_p_is_a_p_value():
    m, sep, prod = fits(simulate_onsets(CELLS, n_seeds=3, seed=5, **{**PRODUCT, "e_freq": -6.0, "e_rel": -2.0})[0])
    stat = likelihood_ratio(sep, prod)["lr_stat"]
    assert bootstrap_lr_p(m, prod, stat, n_sims=39) == pytest.approx(1 / 40)  # far in the tail
    assert bootstrap_lr_p(m, prod, 0.0, n_sims=39) == 1.0


def test_local_elasticities_cover_a_constant_elasticity():
    hits, bounds = [], []
    for s in range(40):
        m, _, _ = fits(simulate_onsets(CELLS, n_seeds=3, seed=3000 + s, **PRODUCT)[0])
        loc = local_elasticities(m.runs)
        assert set(loc["knob"]) == {"frequency", "reliability"}
        point = loc[loc["bound"] == ""]
        hits += list((point["lo"] <= E) & (E <= point["hi"]))
        bounds += list(loc.loc[loc["bound"] != "", "lo"] >= E)  # "at most lo" holds for the truth
    assert 0.8 <= np.mean(hits) <= 0.97, np.mean(hits)
    assert not bounds or np.mean(bounds) >= 0.9


def test_the_likelihood_ratio_reading_has_a_middle_for_borderline_p():
    from ihstats.onset.product import product_reading

    assert product_reading(0.01, 0.03).startswith("the knobs act with different")
    assert product_reading(0.024, 0.05).startswith("weak evidence")  # freqrel + freqrel-extend
    assert product_reading(0.16, 0.21).startswith("no evidence")


def test_held_out_check_tells_a_budget_too_short_from_an_onset_slower_than_the_law():
    """r 0.5 under one elasticity -4: median onset ~14,000 updates, past the 4,200 cap, so three
    runs censored there are what the law expects (P(none formed) large). The same runs censored at
    40,000 updates, nearly 3x the law's median, reject it (P small): an onset slower than the law."""
    table, truth = simulate_onsets(CELLS, n_seeds=3, seed=7, **PRODUCT)
    at = (table["frequency"] == 0.9) & (table["reliability"] == 0.5)
    assert not table.loc[at, "formed"].any() and truth.median_onset(0.9, 0.5) > 3 * 4200
    short = held_out_check(OnsetModel.from_table(table), [(0.9, 0.5)]).iloc[0]
    assert short["n_runs"] == 3 and short["n_formed"] == 0 and short["p_none_formed"] > 0.5
    assert short["parameter_uncertainty"]  # drawn from the refit's covariance, not the point fit alone
    assert short["held_out_lo"] <= truth.median_onset(0.9, 0.5) <= short["held_out_hi"]
    table.loc[at, ["last_step", "budget"]] = 40000.0  # trained 40,000 updates, still no onset
    slow = held_out_check(OnsetModel.from_table(table), [(0.9, 0.5)]).iloc[0]
    assert slow["p_none_formed"] < 0.05 and slow["last_steps"] == "40000 40000 40000"
    with pytest.raises(ValueError, match="no run at frequency 0.6"):
        held_out_check(OnsetModel.from_table(table), [(0.6, 0.9)])


def test_the_report_reads_the_held_out_check(fitted):
    model, _, separate, prod = fitted
    table = compare_models(model, separate, prod, n_boot=0)
    unformed = prod.median_onset([(0.9, 0.5)]).merge(held_out_check(model, [(0.9, 0.5)]))
    text = "\n".join(compare_lines(table, prod, prod.boundary([4200.0]), local_elasticities(model.runs), 0.9, unformed))
    assert "P(none of 4 formed)" in text and "cannot tell it from a divergence" in text
