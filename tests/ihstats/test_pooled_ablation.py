"""Seed-pooled head-ablation tests (ihstats.ablation.pooled): exact null, floor, Holm, labels."""

import itertools

import numpy as np
import pandas as pd
import pytest

from ihstats.ablation.pooled import condition_of, pooled_ablation_tests, pooled_floor, pooled_random_set_test


def test_exact_null_matches_brute_force_enumeration_with_ties():
    rng = np.random.default_rng(1)
    tops = [0.3, 1.0, 0.0]
    rands = [rng.normal(size=4), np.array([1.0, 0.5, 1.0]), np.round(rng.normal(size=5))]
    res = pooled_random_set_test(tops, rands)
    # brute force: every seed's "top" is any one of its R + 1 sets
    def p_of(v, i):
        others = np.delete(v, i)
        return (1 + np.sum(others >= v[i] - 1e-12)) / v.size
    vals = [np.concatenate([[t], r]) for t, r in zip(tops, rands)]
    stats = [sum(-2 * np.log(p_of(v, i)) for v, i in zip(vals, idx))
             for idx in itertools.product(*[range(v.size) for v in vals])]
    obs = sum(-2 * np.log(p_of(v, 0)) for v in vals)
    assert res.statistic == pytest.approx(obs)
    assert res.pvalue == pytest.approx(np.mean(np.array(stats) >= obs - 1e-9))
    assert res.n_resamples == 5 * 4 * 6 and res.exact


def test_null_is_uniform_and_a_clear_effect_reaches_the_floor():
    rng = np.random.default_rng(0)
    ps = np.array([pooled_random_set_test(rng.normal(size=3), [rng.normal(size=143) for _ in range(3)]).pvalue
                   for _ in range(600)])
    assert 0.02 <= np.mean(ps <= 0.05) <= 0.09  # level holds (1.96 binomial sd around 0.05)
    best = pooled_random_set_test([9.0] * 3, [rng.normal(size=143) for _ in range(3)])
    assert best.pvalue == pytest.approx(pooled_floor([143] * 3)) == pytest.approx(144.0 ** -3)
    # one seed's top set in the middle of its random sets weakens, but does not void, the others
    mixed = pooled_random_set_test([9.0, 9.0, 0.0], [np.linspace(-1, 1, 143)] * 3)
    assert best.pvalue < mixed.pvalue < 1e-3


def _table(effects, n_random=20, n_ex=6, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for label, eff in effects.items():
        for e in range(n_ex):
            base = rng.normal()
            rows.append((label, e, "none", "none", base))
            rows.append((label, e, "top", "top", base - eff))
            rows += [(label, e, "random", f"r{j}", base - 0.1 * rng.normal()) for j in range(n_random)]
    return pd.DataFrame(rows, columns=["condition", "example", "ablation", "set_id", "value"])


def test_pooled_tests_group_seed_labels_and_correct_with_holm():
    t = _table({"none@s0": 2.0, "none@s1": 2.0, "none@s2": 2.0,
                "random@s0": 0.0, "random@s1": 0.0, "random@s2": 0.0}).pipe(
        lambda d: d.assign(metric="repeat_nat_logprob"))
    out = pooled_ablation_tests(t).set_index("condition")
    assert list(out.index) == ["none", "random"] and (out["n_seeds"] == 3).all()
    assert out.at["none", "p_pooled"] == pytest.approx(21.0 ** -3)
    assert out.at["none", "p_pooled_holm"] == pytest.approx(2 * 21.0 ** -3)
    assert out.at["none", "p_floor_holm"] == pytest.approx(2 * 21.0 ** -3)
    assert out.at["random", "p_pooled"] > 0.01
    assert out.at["none", "p_pooled_less"] == pytest.approx(1.0)  # the other side: nowhere near
    assert out.at["none", "gap_min"] > 1.5 and out.at["none", "p_seeds"].split() == ["0.0476"] * 3
    assert condition_of("backward@s12") == "backward" and condition_of("plain") == "plain"


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="one entry per seed"):
        pooled_random_set_test([1.0], [])
    with pytest.raises(ValueError, match="non-finite"):
        pooled_random_set_test([np.nan], [np.zeros(3)])
