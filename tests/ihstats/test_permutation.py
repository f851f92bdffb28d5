"""ihstats.ablation.permutation and ihstats.ablation (the ablation table's tests): validity under the null, power,
agreement with scipy, bad input."""

import time

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ihstats.ablation.data import prepare
from ihstats.ablation.spec import AblationSpec
from ihstats.ablation.results import compare_conditions, effect_sizes, run_ablation_tests
from ihstats.ablation.permutation import correct_pvalues, random_set_test, sign_flip_power, sign_flip_test
from ihstats.ablation.spec import choose_head_sets, count_head_sets
from ihstats.simulate.ablation import simulate_ablation


def _mean(x, axis):
    return np.mean(x, axis=axis)


def test_random_set_pvalue_formula():
    r = np.array([0.1, 0.5, 0.3, 0.7])
    assert random_set_test(0.4, r).pvalue == pytest.approx((1 + 2) / 5)
    assert random_set_test(0.8, r).pvalue == pytest.approx(1 / 5)
    assert random_set_test(0.5, r).pvalue == pytest.approx((1 + 2) / 5)   # ties count
    assert random_set_test(0.0, r, alternative="less").pvalue == pytest.approx(1 / 5)


def test_random_set_exact_enumeration():
    # 2 layers x 4 heads, one head per layer: 16 sets; the other 15 are enumerated
    sets, exact = choose_head_sets([4, 4], [(0,), (1,)], n_random=100)
    assert exact and len(sets) == 15 == count_head_sets([4, 4], [1, 1]) - 1
    assert ((0,), (1,)) not in sets and len(set(sets)) == 15
    # a drop that is a known function of the set: exact p = rank of the top set among all 16
    drop = {s: s[0][0] + 10 * s[1][0] for s in sets}
    res = random_set_test(0 + 10 * 1, list(drop.values()), n_possible=16)
    n_ge = sum(v >= 10 for v in drop.values())
    assert res.exact and res.pvalue == pytest.approx((1 + n_ge) / 16)
    sampled, exact = choose_head_sets([12, 12], [(0, 1), (2, 3)], n_random=50, seed=1)
    assert not exact and len(set(sampled)) == 50
    assert all(len(layer) == 2 for s in sampled for layer in s)


def test_random_sets_leave_an_excluded_head_out():
    """Excluding the shared previous-token head (layer 0, head 2 of 8 + 8): no set holds it; one
    head per layer leaves 7 x 8 = 56 sets, the top set's 55 others enumerated."""
    excl = [(2,), ()]
    sets, exact = choose_head_sets([8, 8], [(0,), (5,)], n_random=100, exclude=excl)
    assert exact and len(sets) == 55 == count_head_sets([7, 8], [1, 1]) - 1
    assert all(s[0] != (2,) for s in sets) and ((0,), (5,)) not in sets
    sampled, exact = choose_head_sets([8, 8], [(0,), (5,)], n_random=20, seed=3, exclude=excl)
    assert not exact and len(set(sampled)) == 20 and all(s[0] != (2,) for s in sampled)
    with pytest.raises(ValueError, match="excluded head"):
        choose_head_sets([8, 8], [(2,), (5,)], n_random=10, exclude=excl)
    with pytest.raises(ValueError, match="one tuple per layer"):
        choose_head_sets([8, 8], [(0,), (5,)], n_random=10, exclude=[(2,)])


def test_sign_flip_matches_scipy_exact_small_n():
    d = np.random.default_rng(3).normal(0.2, 1, 11)
    for alt in ("greater", "less", "two-sided"):
        ours = sign_flip_test(d, 9999, alternative=alt)
        ref = stats.permutation_test((d,), _mean, permutation_type="samples", vectorized=True,
                                     n_resamples=9999, alternative=alt)
        assert ours.exact
        assert ours.pvalue == pytest.approx(ref.pvalue, abs=1e-12)


@pytest.mark.parametrize("alt", ["greater", "two-sided"])
def test_sign_flip_matches_scipy_within_mc_error(alt):
    d = np.random.default_rng(4).normal(0, 1, 60)
    d = d - d.mean() + 0.25 * d.std()             # t about 1.9: p about 0.03 (one-sided)
    R = 9999
    ours = sign_flip_test(d, R, alternative=alt, seed=1).pvalue
    ref = stats.permutation_test((d,), _mean, permutation_type="samples", vectorized=True,
                                 n_resamples=R, alternative=alt, random_state=2).pvalue
    se = np.sqrt(2 * ref * (1 - ref) / R)          # sd of the difference of two MC estimates
    assert 0.005 < ref < 0.5                        # an informative regime
    assert abs(ours - ref) < 4 * se + 1e-4


def test_sign_flip_null_uniform_ks():
    rng = np.random.default_rng(0)
    d = rng.laplace(0.0, 1.0, (40, 400))          # 400 null data sets, symmetric errors
    p = np.array([r.pvalue for r in sign_flip_test(d, 999, seed=rng)])
    assert stats.kstest(p, "uniform").pvalue > 0.01
    assert abs(np.mean(p <= 0.05) - 0.05) < 0.035


def test_random_set_null_uniform_ks():
    rng = np.random.default_rng(1)
    p = []
    for _ in range(400):            # top set exchangeable with 199 random sets
        drops = (0.2 + rng.normal(0, 0.05, 200)[:, None] + rng.normal(0, 0.5, (200, 30))).mean(1)
        p.append(random_set_test(drops[0], drops[1:]).pvalue)
    assert stats.kstest(p, "uniform").pvalue > 0.01


def test_pipeline_null_pvalues_uniform():
    # the whole table path: 40 null conditions in one table, top set exchangeable with 19 others
    conds = tuple(f"c{i}" for i in range(40))
    tab, _ = simulate_ablation(conditions=conds, effects=(0.0,) * 40, n_examples=30,
                               n_random=19, seed=7)
    tests, _ = run_ablation_tests(tab, n_resamples=199, n_boot=20)
    assert stats.kstest(tests["p_random"], "uniform").pvalue > 0.001
    assert (tests["p_random_holm"] >= tests["p_random_fdr_bh"] - 1e-12).all()


def test_power_for_stated_effect():
    from statsmodels.stats.power import TTestPower

    effect, n = 0.3, 80   # d_z = 0.3 with 80 examples
    power = sign_flip_power(effect, n, alpha=0.05, n_sim=300, n_resamples=999, seed=2)
    ref = TTestPower().power(effect, n, 0.05, alternative="larger")
    print(f"sign-flip power for d_z={effect}, n={n}: {power:.3f} (t-test {ref:.3f})")
    assert abs(power - ref) < 0.08
    assert sign_flip_power(0.0, n, n_sim=300, seed=3) < 0.1


def test_vectorised_speed():
    d = np.random.default_rng(0).normal(size=1000)
    sign_flip_test(d, 100)
    t = time.perf_counter()
    sign_flip_test(d, 10_000)
    assert time.perf_counter() - t < 1.0


def test_effect_sizes_and_intervals():
    # set_sd=0: the bootstrap over examples then holds all the uncertainty (it is conditional
    # on the random sets drawn)
    tab, truth = simulate_ablation(conditions=("x",), effects=(0.3,), n_examples=400,
                                   n_random=60, set_sd=0.0, seed=5)
    d = prepare(tab, AblationSpec("x"))
    eff = effect_sizes(d, n_boot=500, seed=0).set_index("quantity")
    assert eff.at["top_drop", "estimate"] == pytest.approx(d.top.mean())
    assert eff.at["random_drop", "estimate"] == pytest.approx(d.random.mean())
    assert eff.at["d_z", "estimate"] == pytest.approx(d.top.mean() / d.top.std(ddof=1))
    boot = eff.drop(index="z_random")
    assert (boot["lo"] <= boot["estimate"]).all() and (boot["estimate"] <= boot["hi"]).all()
    assert np.isnan(eff.at["z_random", "lo"]) and eff.at["z_random", "estimate"] > 3
    assert eff.at["gap", "lo"] < 0.3 < eff.at["gap", "hi"]
    assert eff.at["random_drop", "lo"] < truth.random_drop < eff.at["random_drop", "hi"]


def test_run_ablation_tests_detects_and_corrects():
    tab, _ = simulate_ablation(conditions=("nat", "syn"), effects=(0.4, 0.0), n_examples=200,
                               n_random=99, seed=0)
    tests, comps = run_ablation_tests(tab, n_resamples=1999, n_boot=200,
                                      compare=[("nat", "syn")])
    t = tests.set_index("condition")
    assert t.at["nat", "p_random"] == pytest.approx(0.01)     # top beats all 99 random sets
    assert t.at["nat", "p_sign_flip_gap"] < 0.01
    assert t.at["syn", "p_random"] > 0.05
    assert (tests["p_random_holm"] >= tests["p_random"]).all()
    assert comps["p"].iloc[0] < 0.01 and comps["diff"].iloc[0] > 0.2


def test_correct_pvalues_known_values():
    out = correct_pvalues([0.01, 0.04, 0.03, 0.2])
    np.testing.assert_allclose(out["p_holm"], [0.04, 0.09, 0.09, 0.2])
    np.testing.assert_allclose(out["p_fdr_bh"], [0.04, 0.0533333, 0.0533333, 0.2], rtol=1e-5)
    assert out["reject_holm"].tolist() == [True, False, False, False]


def test_losses_flip_the_drop():
    tab, _ = simulate_ablation(conditions=("x",), effects=(0.3,), n_examples=20, n_random=5)
    loss = tab.assign(value=-tab["value"])
    a, b = prepare(tab, AblationSpec("x")), prepare(loss, AblationSpec("x", higher_is_better=False))
    np.testing.assert_allclose(a.top, b.top)


def test_bad_input_errors():
    tab, _ = simulate_ablation(n_examples=20, n_random=5)
    with pytest.raises(ValueError, match="missing columns.*value"):
        run_ablation_tests(tab.drop(columns="value"))
    with pytest.raises(ValueError, match="ablation: unknown values.*'bottom'"):
        run_ablation_tests(tab.replace({"ablation": {"top": "bottom"}}))
    with pytest.raises(ValueError, match="no ablation == 'top'"):
        prepare(tab[tab["ablation"] != "top"], AblationSpec("natural"))
    short = tab[~((tab["set_id"] == "r0002") & (tab["example"] == 3))]
    with pytest.raises(ValueError, match="do not cover the same examples"):
        prepare(short, AblationSpec("natural"))
    a = prepare(tab, AblationSpec("natural"))
    b = prepare(tab[tab["example"] < 18], AblationSpec("biinduct"))
    with pytest.raises(ValueError, match="mismatched example counts between conditions"):
        compare_conditions(a, b)
    with pytest.raises(ValueError, match="alternative"):
        sign_flip_test(np.ones(5), alternative="bigger")
    with pytest.raises(ValueError, match="duplicates"):
        random_set_test(0.1, np.zeros(20), n_possible=16)
    with pytest.raises(ValueError, match="compare"):
        run_ablation_tests(tab, n_resamples=99, n_boot=10, compare=[("natural", "nope")])


def test_metric_column_gives_separate_tests():
    tab, _ = simulate_ablation(n_examples=30, n_random=9)
    two = pd.concat([tab.assign(metric="hits1"), tab.assign(metric="logp")])
    tests, _ = run_ablation_tests(two, n_resamples=99, n_boot=20)
    assert len(tests) == 4 and set(tests["metric"]) == {"hits1", "logp"}


def test_default_random_sets_can_reject_three_conditions_after_holm(tmp_path):
    """Issue 27 item 5: with 3 conditions and the default number of random sets, a top drop larger
    than every random drop is significant after Holm, and the report states the design's floor."""
    import sys
    from pathlib import Path

    from ihstats.ablation.spec import DEFAULT_RANDOM_SETS
    from ihstats.ablation.permutation import random_sets_needed, smallest_attainable_p

    conds = ("a", "b", "c")
    tab, _ = simulate_ablation(conditions=conds, effects=(4.0, 4.0, 4.0), n_examples=50,
                               n_random=DEFAULT_RANDOM_SETS, seed=3)
    tests, _ = run_ablation_tests(tab, n_resamples=999, n_boot=100)
    assert (tests["n_random"] == DEFAULT_RANDOM_SETS).all()
    assert np.allclose(tests["p_random"], 1 / (DEFAULT_RANDOM_SETS + 1))  # the top set beats every set
    assert (tests["p_random_holm"] < 0.05).all() and tests["can_reject"].all()
    assert tests["p_random_min_holm"].iloc[0] == pytest.approx(3 / (DEFAULT_RANDOM_SETS + 1))
    # the README's former 50 sets could not: 3 / 51 > 0.05 whatever the drops, and it says so
    small, _ = simulate_ablation(conditions=conds, effects=(4.0, 4.0, 4.0), n_examples=50, n_random=50, seed=3)
    with pytest.warns(UserWarning, match="cannot reject.*59 random sets are needed"):
        t50, _ = run_ablation_tests(small, n_resamples=999, n_boot=100)
    assert (t50["p_random_holm"] > 0.05).all() and not t50["can_reject"].any()
    assert smallest_attainable_p(50, 3) == (pytest.approx(1 / 51), pytest.approx(3 / 51))
    assert random_sets_needed(3) == 59 and smallest_attainable_p(59, 3)[1] <= 0.05
    # the report states the floor
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "analyses"))
    import ablation_tests

    csv = tmp_path / "ablation.csv"
    tab.to_csv(csv, index=False)
    assert ablation_tests.main(["--table", str(csv), "--out", str(tmp_path / "out"), "--n-resamples", "199",
                                "--n-boot", "50"]) == 0
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "smallest attainable p" in summary and f"{3 / (DEFAULT_RANDOM_SETS + 1):.3g} Holm" in summary


def test_stratified_exact_test_is_fisher_in_one_stratum_and_exact_across_strata():
    from ihstats.ablation.permutation import stratified_exact_test

    for ka, na, kb, nb in [(1, 3, 3, 3), (1, 9, 9, 9), (2, 5, 4, 7), (0, 3, 0, 3)]:
        for alt in ("two-sided", "less", "greater"):
            ref = stats.fisher_exact([[ka, na - ka], [kb, nb - kb]], alternative=alt)[1]
            assert stratified_exact_test([(ka, na, kb, nb)], alt) == pytest.approx(ref, rel=1e-9)
    # two matched pairs, A 1/3 vs B 3/3 and 0/3 vs 3/3: P(A forms at most 1) = 4/20 * 1/20
    assert stratified_exact_test([(1, 3, 3, 3), (0, 3, 3, 3)], "less") == pytest.approx(0.2 * 0.05)
    # stratifying matters: pooled, the same runs look alike when each stratum's rate differs
    strata = [(3, 3, 3, 3), (0, 3, 0, 3), (3, 3, 0, 3)]
    assert stratified_exact_test(strata) < stats.fisher_exact([[6, 3], [3, 6]])[1]
    # valid under the null: P(p <= 0.05) <= 0.05 for three strata with different rates
    rng = np.random.default_rng(0)
    ps = [stratified_exact_test([(rng.binomial(3, q), 3, rng.binomial(3, q), 3) for q in (0.2, 0.5, 0.9)])
          for _ in range(400)]
    assert np.mean(np.array(ps) <= 0.05) <= 0.05
    with pytest.raises(ValueError, match="strata\\[0\\]"):
        stratified_exact_test([(4, 3, 0, 3)])


def test_stratified_rank_test_is_mann_whitney_in_one_stratum_and_reads_censoring_as_latest():
    from scipy.stats import mannwhitneyu

    from ihstats.ablation.permutation import stratified_rank_test

    a, b = [310.0, 120.0, 450.0], [500.0, 260.0, 720.0, 905.0]
    p, shift = stratified_rank_test([(a, b)])
    assert p == pytest.approx(mannwhitneyu(a, b, method="exact").pvalue, rel=1e-9)
    assert shift < 0  # A is earlier
    # a run that never formed is later than every onset: the same ranks as a huge finite onset
    assert stratified_rank_test([(a, [500.0, np.inf])]) == stratified_rank_test([(a, [500.0, 1e9])])
    # two strata: the exact law is the convolution; checked against brute-force relabelling
    strata = [([1.0, 4.0], [2.0, 3.0, 5.0]), ([10.0, 30.0, np.inf], [20.0, 40.0])]
    p2, _ = stratified_rank_test(strata)
    from itertools import combinations, product

    from scipy.stats import rankdata

    def total(choice):
        return sum(rankdata(np.r_[sa, sb])[list(c)].sum() for (sa, sb), c in zip(strata, choice))

    choices = list(product(*[list(combinations(range(len(sa) + len(sb)), len(sa))) for sa, sb in strata]))
    obs = total([tuple(range(len(sa))) for sa, _ in strata])
    mean = np.mean([total(c) for c in choices])
    brute = np.mean([abs(total(c) - mean) >= abs(obs - mean) - 1e-9 for c in choices])
    assert p2 == pytest.approx(brute, rel=1e-9)
    with pytest.raises(ValueError, match=r"strata\[0\]"):
        stratified_rank_test([([], [1.0])])
