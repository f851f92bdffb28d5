"""Seeds as the unit: the exact two-sample permutation test, its floor, and the ablation design's
floor for the biinduct preset's shape (issue 42)."""

import math

import numpy as np
import pandas as pd
import pytest

from ihstats.ablation.seeds import ablation_floor, per_layer_count, two_sample_floor, two_sample_test


def test_exact_values_on_a_separated_sample():
    r = two_sample_test([3.0, 4.0, 5.0], [0.0, 1.0, 2.0], "greater")
    assert r.statistic == pytest.approx(3.0) and r.exact and r.n_resamples == 20
    assert r.pvalue == pytest.approx(1 / 20)  # only the observed labelling is as extreme
    assert two_sample_test([3.0, 4.0, 5.0], [0.0, 1.0, 2.0]).pvalue == pytest.approx(2 / 20)
    assert two_sample_test([3.0, 4.0, 5.0], [0.0, 1.0, 2.0], "less").pvalue == pytest.approx(1.0)
    # identical samples: every relabelling ties, p = 1
    assert two_sample_test([1.0, 1.0], [1.0, 1.0]).pvalue == pytest.approx(1.0)


def test_floor_matches_the_most_extreme_sample():
    for n_a, n_b in [(3, 3), (4, 4), (5, 5), (3, 5)]:
        a, b = np.arange(n_a) + 100.0, np.arange(n_b) * 1.0
        for alt in ("greater", "two-sided"):
            raw, holm = two_sample_floor(n_a, n_b, alt, n_tests=4)
            assert two_sample_test(a, b, alt).pvalue == pytest.approx(raw)
            assert holm == pytest.approx(min(1.0, 4 * raw))
    assert two_sample_floor(3, 3)[0] == pytest.approx(0.1)  # cannot reject two-sided at 0.05
    assert two_sample_floor(5, 5)[0] == pytest.approx(2 / 252)
    with pytest.raises(ValueError, match="n_a"):
        two_sample_floor(0, 3)


def test_null_size_by_simulation():
    """Under the null (both conditions from one distribution) the test rejects at most alpha of
    the time; 2,000 simulated 5-vs-5 seed contrasts, skewed noise."""
    rng = np.random.default_rng(0)
    p = np.array([two_sample_test(rng.exponential(size=5), rng.exponential(size=5)).pvalue
                  for _ in range(2000)])
    assert np.mean(p <= 0.05) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)
    assert np.mean(p <= 0.5) > 0.4  # not degenerate: p spreads over (0, 1]


def test_power_on_a_large_shift():
    rng = np.random.default_rng(1)
    p = [two_sample_test(rng.normal(3, 1, 5), rng.normal(0, 1, 5)).pvalue for _ in range(200)]
    assert np.mean(np.array(p) <= 0.05) > 0.9


def test_errors():
    with pytest.raises(ValueError, match="finite"):
        two_sample_test([1.0, np.nan], [0.0])
    with pytest.raises(ValueError, match="at least one"):
        two_sample_test([], [0.0])
    with pytest.raises(ValueError, match="alternative"):
        two_sample_test([1.0], [0.0], "bigger")
    with pytest.raises(ValueError, match="relabellings"):
        two_sample_test(np.zeros(12), np.zeros(12))


def test_ablation_floor_of_the_biinduct_preset_is_below_005_after_holm():
    """The preset's shape, read from its TOML: one head per layer under the top-2% rule; with seeds
    as the unit (ihstats.ablation.pooled: each condition's seeds combined) the test can reject at
    0.05 after Holm over the preset's family: its conditions x the 4 ablation metrics of the
    closing note (repeat, repeat_nat, val, kv log-probs)."""
    from ihtrain.grid.spec import load_grid_preset
    from ihstats.ablation.pooled import pooled_floor

    grid = load_grid_preset("biinduct")
    runs = grid.expand()
    cfg = runs[0].config.model
    modes = [r.factors["data.biinduct.mode"] for r in runs]
    n_seeds = {modes.count(m) for m in modes}
    assert len(set(modes)) == 5 and n_seeds == {3}
    f = ablation_floor(cfg.n_layer, cfg.n_head, 0.02)
    assert f["k_per_layer"] == 1 and f["n_sets"] == cfg.n_head ** cfg.n_layer
    pooled = pooled_floor([f["n_sets"] - 1] * 3)
    assert pooled == pytest.approx(f["p_raw"] ** 3)
    assert pooled * len(set(modes)) * 4 < 0.05
    # one run alone could not: 16 sets floor at 1/16 raw, 0.25 after Holm over 4 conditions
    old = ablation_floor(2, 4, 0.02, 4)
    assert (old["n_sets"], old["p_raw"], old["p_holm"]) == (16, 1 / 16, 0.25)
    assert per_layer_count(12, 0.02) == 1 and per_layer_count(100, 0.02) == 2


def test_condition_contrasts_holm_and_floor():
    from ihstats.ablation.seeds import condition_contrasts

    runs = pd.DataFrame({"biinduct": ["none"] * 5 + ["forward"] * 5 + ["random"] * 5,
                         "onset": [10.0, 11, 12, 13, 14] + [0.0, 1, 2, 3, 4] + [10.5, 11.5, 12.5, 13.5, np.nan]})
    c = condition_contrasts(runs, "onset", "none").set_index("condition")
    assert list(c.index) == ["forward", "random"]
    assert c.at["forward", "diff"] == pytest.approx(-10.0)
    assert c.at["forward", "p"] == pytest.approx(2 / 252)  # completely separated: the floor
    assert c.at["forward", "p_floor"] == pytest.approx(2 / 252)
    assert c.at["forward", "p_floor_holm"] == pytest.approx(4 / 252)
    assert c.at["random", "n"] == 4 and c.at["random", "n_missing"] == 1
    assert c.at["random", "p_floor"] == pytest.approx(2 / math.comb(9, 4))
    assert c.at["random", "p"] > 0.5 and not c.at["random", "reject_holm"]
    assert c.at["forward", "reject_holm"] and c.at["forward", "p_holm"] == pytest.approx(2 * 2 / 252)
    # a condition with no value at all (a level it never reached) is not tested, nor counted in Holm
    runs.loc[runs["biinduct"] == "random", "onset"] = np.nan
    c = condition_contrasts(runs, "onset", "none").set_index("condition")
    assert np.isnan(c.at["random", "p"]) and np.isnan(c.at["random", "p_holm"]) and not c.at["random", "reject_holm"]
    assert c.at["forward", "p_holm"] == pytest.approx(2 / 252) and c.at["forward", "p_floor_holm"] == pytest.approx(2 / 252)
    # nor is any condition when the baseline has none
    runs.loc[runs["biinduct"] == "none", "onset"] = np.nan
    assert condition_contrasts(runs, "onset", "none")["p"].isna().all()
    with pytest.raises(ValueError, match="baseline"):
        condition_contrasts(runs, "onset", "natural")
    with pytest.raises(ValueError, match="no column"):
        condition_contrasts(runs, "max_ps", "none")
