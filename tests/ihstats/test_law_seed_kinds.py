"""The law's seed terms by kind (issue 66): ``UPTLawSpec(seed_kinds=True)`` gives the weight seed and
the data seed each a crossed effect, and a new run's prediction draws a new seed of each kind."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ihstats.law.data import prepare
from ihstats.law.model import UPTLawModel
from ihstats.law.results import predict_from_posterior
from ihstats.law.spec import UPTLawError, UPTLawSpec

W_SD, D_SD, SIGMA = 0.6, 0.1, 0.15
W_Z, D_Z = np.array([-1.2, 1.3, -0.1]), np.array([0.5, -0.9, 0.4])
SPEC = UPTLawSpec(seed_kinds=True, likelihood="normal", measurement_error=False)


def kinds_table(seed: int = 2) -> pd.DataFrame:
    """A 3 x 3 crossed block (weight seed x data seed) at each of four (B, C) cells, power law a 0.5,
    b 0.4, with a large weight-seed effect and a small data-seed one."""
    rng = np.random.default_rng(seed)
    rows = []
    for B in (16, 128):
        for C in (32, 128):
            for w in range(3):
                for d in range(3):
                    y = (np.log(2000) - 0.5 * np.log(B / 45) - 0.4 * np.log(C / 64) + W_SD * W_Z[w] + D_SD * D_Z[d]
                         + SIGMA * rng.standard_normal())
                    rows.append({"run_id": f"b{B}c{C}w{w}d{d}", "cell_id": f"b{B}c{C}", "seed": 0, "weight_seed": w,
                                 "data_seed": d, "B": B, "C": C, "onset": float(np.exp(y)), "censored": False,
                                 "last_step": 10 ** 6})
    return pd.DataFrame(rows)


def test_prepare_indexes_each_kind_and_falls_back_to_seed():
    table = kinds_table()
    d = prepare(table, SPEC)
    assert set(d.kinds) == {"weight_seed", "data_seed"} and d.kinds["weight_seed"][1] == ["0", "1", "2"]
    legacy = table.drop(columns=["weight_seed", "data_seed"]).assign(seed=table["weight_seed"])
    d2 = prepare(legacy, SPEC)  # a shipped table: both kinds are the seed
    assert np.array_equal(d2.kinds["weight_seed"][0], d2.kinds["data_seed"][0])
    with pytest.raises(UPTLawError, match="seed_kinds"):
        UPTLawSpec(seed_kinds=True, seed_effect=True)


@pytest.mark.slow
def test_fit_separates_the_kinds_and_predicts_a_new_seed():
    res = UPTLawModel.from_table(kinds_table(), SPEC).fit(draws=400, tune=400, chains=2, seed=0)
    post = res.idata.posterior
    w_sd, d_sd = float(post["weight_seed_sd"].median()), float(post["data_seed_sd"].median())
    assert w_sd > 2 * d_sd and 0.25 < w_sd < 1.5
    assert "weight_seed_sd" in res.params and "data_seed_sd" in res.params
    pred = predict_from_posterior(res.idata, B=[45], C=[64], hdi_prob=0.9)
    width = float(np.log(pred["pred_hi"].iloc[0] / pred["pred_lo"].iloc[0]))
    # a new run draws both kinds: wider than the within-seed scatter's 90% interval alone
    assert width > 2 * 1.645 * SIGMA


def test_new_seed_headline_keeps_runs_at_seeds_of_both_kinds_the_fit_never_saw():
    from ihstats.law.validation import LAW, new_seed_headline
    runs = pd.DataFrame({"model": LAW, "run_id": list("abcd"), "weight_seed": [0, 7, 7, 8], "data_seed": [7, 0, 7, 9],
                         "pit": [0.05, 0.5, 0.55, 0.95], "inside_90": [True, True, True, False],
                         "hi_lo_ratio_90": [2.0, 3.0, 4.0, 6.0]})
    train = kinds_table()  # weight and data seeds 0-2
    h = new_seed_headline(runs, train)
    assert h["n_runs"] == 2 and h["cover"] == 0.5 and h["median_hi_lo_ratio"] == 5.0  # runs c and d
    assert h["pit_hist"][5] == 1 and h["pit_hist"][9] == 1 and sum(h["pit_hist"]) == 2
    assert new_seed_headline(runs, None)["n_runs"] == 4  # no training table: every run, said so
    assert "not known" in new_seed_headline(runs, None)["basis"]


@pytest.mark.slow
def test_holdout_at_new_seeds_draws_both_kinds():
    from ihstats.law.validation import ValidationSpec, validate_holdout
    train = kinds_table()
    test = kinds_table(seed=5).query("weight_seed == 0 and data_seed == 0").assign(
        run_id=lambda d: d["run_id"] + "-new", weight_seed=9, data_seed=9)
    res = validate_holdout(test, ValidationSpec(law=SPEC, baselines=False), train_table=train,
                           fit_kw=dict(draws=300, tune=300, chains=2, seed=1))
    h = res.meta["new_seed"]
    assert h["n_runs"] == 4 and h["median_hi_lo_ratio"] > np.exp(2 * 1.645 * SIGMA)
