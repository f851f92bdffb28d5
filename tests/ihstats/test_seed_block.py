"""ihstats.law.seed_block: the seed kinds' variances from a crossed block by the method of moments.

A hand-computed block, the sums of squares against statsmodels, and the statistic's behaviour
measured by simulation (3 x 3 blocks, seeded): the F test's size under heavy-tailed errors, the
unbiasedness of the moment estimators, the MLS interval's coverage. Measured with these seeds:
null rejection at 0.1, Student-t (4 df) errors, 400 blocks: 0.1125; moment means over 4,000
normal blocks 0.0917, 0.0384, 0.0897 for truths 0.09, 0.04, 0.09; coverage of the true sd at
nominal 0.90, 4,000 normal blocks at (0.3, 0.2, 0.3): weight 0.892, data 0.902, residual 0.901.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ihstats.law.seed_block import (NotTestable, SeedBlockError, block_runs, chi2_interval, mean_squares,
                                    mls_interval, seed_block, variance_components)

#: weight effects (-3, 0, 3), data effects (-1, 0, 1), a double-centred residual of +-1 at the corners
HAND = np.array([[-3.0, -3.0, -3.0], [-1.0, 0.0, 1.0], [1.0, 3.0, 5.0]])


def _blocks(rng, n, sd_w, sd_d, sd_e, errors="normal", shape=(3, 3)):
    """``n`` simulated blocks (n, I, J) of ``5 + w_i + d_j + e_ij``; Student-t errors scaled to sd ``sd_e``."""
    I, J = shape
    w, d = rng.normal(0, sd_w, (n, I, 1)), rng.normal(0, sd_d, (n, 1, J))
    e = rng.normal(0, sd_e, (n, I, J)) if errors == "normal" else sd_e * rng.standard_t(4, (n, I, J)) / np.sqrt(2)
    return 5.0 + w + d + e


def test_a_hand_computed_block():
    """Row means -3, 0, 3 and column means -1, 0, 1 about 0: SS_W = 3 (9 + 0 + 9) = 54, SS_D = 3 (1 + 0 + 1)
    = 6, SS_E = 4 corners of 1; F(2, 4) has the survival (1 + F / 2)^-2."""
    ms = mean_squares(HAND)
    assert (ms.weight, ms.data, ms.residual, ms.df) == (27.0, 3.0, 1.0, (2, 2, 4))
    c = variance_components(HAND).set_index("kind")
    assert c.loc["weight_seed", "var_mom"] == pytest.approx(26 / 3, abs=1e-12)
    assert c.loc["data_seed", "var_mom"] == pytest.approx(2 / 3, abs=1e-12)
    assert c.loc["residual", "var"] == pytest.approx(1.0, abs=1e-12)
    assert c.loc["weight_seed", "sd"] == pytest.approx(np.sqrt(26 / 3), abs=1e-12)
    assert (c.loc["weight_seed", "F"], c.loc["data_seed", "F"]) == (27.0, 3.0)
    assert c.loc["weight_seed", "p"] == pytest.approx(1 / 14.5 ** 2, abs=1e-12)
    assert c.loc["data_seed", "p"] == pytest.approx(1 / 2.5 ** 2, abs=1e-12)
    lo, hi = np.sqrt(4 / stats.chi2.ppf(0.95, 4)), np.sqrt(4 / stats.chi2.ppf(0.05, 4))
    assert (c.loc["residual", "lo"], c.loc["residual", "hi"]) == pytest.approx((lo, hi), abs=1e-12)
    assert (c["lo"] <= c["sd"]).all() and (c["sd"] <= c["hi"]).all()


def test_sums_of_squares_match_statsmodels():
    """A 3 x 4 block (not square, so rows and columns cannot be swapped unseen) to 1e-9."""
    smf = pytest.importorskip("statsmodels.formula.api")
    from statsmodels.stats.anova import anova_lm

    y = _blocks(np.random.default_rng(3), 1, 0.4, 0.3, 0.2, shape=(3, 4))[0]
    frame = pd.DataFrame([(i, j, y[i, j]) for i in range(3) for j in range(4)], columns=["w", "d", "y"])
    ref = anova_lm(smf.ols("y ~ C(w) + C(d)", data=frame).fit())
    ms = mean_squares(y)
    assert ref["df"].tolist() == [2, 3, 6]
    assert ref["mean_sq"].to_numpy() == pytest.approx([ms.weight, ms.data, ms.residual], abs=1e-9)
    assert ref["sum_sq"].to_numpy() == pytest.approx([2 * ms.weight, 3 * ms.data, 6 * ms.residual], abs=1e-9)
    c = variance_components(y).set_index("kind")
    assert c.loc[["weight_seed", "data_seed"], "F"].to_numpy() == pytest.approx(ref["F"].to_numpy()[:2], abs=1e-9)
    assert c.loc[["weight_seed", "data_seed"], "p"].to_numpy() == pytest.approx(ref["PR(>F)"].to_numpy()[:2], abs=1e-9)


def test_the_f_test_holds_its_size_with_heavy_tailed_errors():
    """sigma_w = 0, a data-seed effect (it cancels), Student-t (4 df) errors: 400 blocks, rejected at
    0.1 in 0.1125 of them (the binomial sd at 400 is 0.015)."""
    ms = mean_squares(_blocks(np.random.default_rng(0), 400, 0.0, 0.5, 0.3, errors="t"))
    rate = float(np.mean(stats.f.sf(ms.weight / ms.residual, 2, 4) < 0.1))
    assert 0.05 <= rate <= 0.16, rate


def test_the_moment_estimators_are_unbiased():
    """The differences before the floor: mean over 4,000 normal blocks within 4 Monte-Carlo sd of the truth."""
    truth = {"weight": 0.3 ** 2, "data": 0.2 ** 2, "residual": 0.3 ** 2}
    ms = mean_squares(_blocks(np.random.default_rng(1), 4000, 0.3, 0.2, 0.3))
    est = {"weight": (ms.weight - ms.residual) / 3, "data": (ms.data - ms.residual) / 3, "residual": ms.residual}
    for kind, x in est.items():
        se = x.std(ddof=1) / np.sqrt(x.size)
        assert abs(x.mean() - truth[kind]) < 4 * se, (kind, x.mean(), truth[kind], se)
    floored = np.maximum(est["weight"], 0)
    assert floored.mean() > truth["weight"]  # the floor at 0 biases up: why var_mom is kept beside var


@pytest.mark.parametrize("sds,band", [((0.3, 0.2, 0.3), (0.86, 0.94)), ((0.6, 0.0, 0.2), (0.86, 0.97))])
def test_the_interval_covers_the_true_sd(sds, band):
    """MLS for the kinds, chi-square for the residual, 4,000 normal blocks at nominal 0.90:
    (0.3, 0.2, 0.3) covers 0.892 / 0.902 / 0.901; (0.6, 0, 0.2) 0.891 / 0.950 / 0.901 (an sd of 0
    is covered whenever the lower bound is floored). Not asserted, measured the same way with
    Student-t (4 df) errors: the kinds 0.897 / 0.914, the residual's chi-square interval 0.834."""
    sd_w, sd_d, sd_e = sds
    ms = mean_squares(_blocks(np.random.default_rng(2), 4000, *sds))
    for sd, (lo, hi) in ((sd_w, mls_interval(1 / 3, ms.weight, 2, ms.residual, 4)),
                         (sd_d, mls_interval(1 / 3, ms.data, 2, ms.residual, 4)),
                         (sd_e, chi2_interval(ms.residual, 4))):
        cover = float(np.mean((lo <= sd ** 2) & (sd ** 2 <= hi)))
        assert band[0] <= cover <= band[1], (sd, cover)


def test_the_mls_interval_is_exact_without_a_second_mean_square():
    lo, hi = mls_interval(0.5, 2.0, 3, 0.0, 6, level=0.9)
    assert (lo, hi) == pytest.approx(tuple(0.5 * np.asarray(chi2_interval(2.0, 3, 0.9))), rel=1e-12)


# ------------------------------------------------------------------------------- from the table
def _table(y=HAND, formed=None, cell="c1") -> pd.DataFrame:
    """A fake emergence table of a block: onset = 1000 exp(y), weight seeds down, data seeds across."""
    I, J = y.shape
    t = pd.DataFrame([{"run_id": f"r{i}{j}" + ("" if cell == "c1" else cell), "cell_id": cell, "B": 32, "C": 64,
                       "weight_seed": i, "data_seed": j, "onset": 1000 * np.exp(y[i, j]), "censored": False,
                       "formed": True}
                      for i in range(I) for j in range(J)])
    if formed is not None:
        t["formed"] = formed
    return t


def test_the_table_gives_the_blocks_components():
    res = seed_block(_table().sample(frac=1.0, random_state=0))  # row order does not matter
    assert res.log_onsets.to_numpy() - np.log(1000) == pytest.approx(HAND, abs=1e-12)
    pd.testing.assert_frame_equal(res.components, variance_components(HAND))
    assert res.basis == "the table's formed column"  # no onset_basis column: said as such


def test_a_run_that_did_not_form_or_a_missing_pair_makes_it_not_testable():
    t = _table()
    t.loc[t["run_id"] == "r12", ["formed", "censored"]] = [False, True]
    t = t[t["run_id"] != "r20"]
    with pytest.raises(NotTestable) as e:
        seed_block(t)
    msg = str(e.value)
    assert "7 of 9 pairs formed" in msg and "weight 1 x data 2 (run r12)" in msg
    assert "no run in the table: weight 2 x data 0" in msg
    assert e.value.runs["formed"].sum() == 7 and len(e.value.runs) == 9
    uncertified = _table()  # a rise with an onset that the certificate did not pass
    uncertified.loc[0, "formed"] = False
    with pytest.raises(NotTestable, match="not formed: weight 0 x data 0"):
        with pytest.warns(UserWarning, match="uncensored"):  # the fits' rule says so for every such run
            seed_block(uncertified)


@pytest.mark.parametrize("change,match", [
    (lambda t: pd.concat([t, _table(cell="c2")]), "2 cells in the table"),
    (lambda t: t.drop(columns=["cell_id", "B", "C"]), "cannot show its runs share one cell"),
    (lambda t: t.assign(data_seed=np.where(t["run_id"] == "r01", 0, t["data_seed"])), "share a pair"),
    (lambda t: t[t["data_seed"] == 0], "data_seed: one value"),
    (lambda t: t.drop(columns=["weight_seed"]), "weight_seed: missing"),
    (lambda t: t.drop(columns=["formed", "censored"]), "formed, censored"),
    (lambda t: pd.concat([t, t.iloc[:1]]), "more than once"),
])
def test_what_is_not_one_cells_crossed_block_is_refused(change, match):
    with pytest.raises(SeedBlockError, match=match) as e:
        seed_block(change(_table()))
    assert not isinstance(e.value, NotTestable)


def test_block_runs_spans_every_pair_seen():
    runs = block_runs(_table().iloc[1:])
    assert len(runs) == 9 and runs["run_id"].isna().sum() == 1 and np.isnan(runs["log_onset"].iloc[0])
