"""ihstats.base.chance: each measure's chance level, and the rule that says a group of runs sits at it."""

import math

import numpy as np
import pytest

from ihstats.base.chance import (Floor, at_floor, band_edge, copy_probe_floors, copy_probe_len, top_share_floor,
                            uniform_attention, uniform_logprob)


def test_uniform_attention_is_what_a_random_uniform_head_puts_on_one_key():
    """Simulated: at query q a uniform head gives each of its q + 1 keys 1 / (q + 1); averaging the
    mass on one fixed key over queries drawn from the probe's range recovers the formula."""
    rng = np.random.default_rng(0)
    q = np.arange(51, 101)
    mass = [np.full(k + 1, 1.0 / (k + 1))[rng.integers(0, k + 1)] for k in rng.choice(q, 20_000)]
    assert np.mean(mass) == pytest.approx(uniform_attention(q), rel=0.01)
    with pytest.raises(ValueError, match="queries"):
        uniform_attention([])


def test_copy_probe_floors_follow_the_probe_layout():
    # C 128: n = 50, m = min(50, 63) = 50; duplicate-token queries 51..100, anti-induction 51..99
    assert copy_probe_len(128) == 50 and copy_probe_len(16) == 7 and copy_probe_len(128, 30) == 30
    f = copy_probe_floors(128, 0, 258)
    assert f["dup_bwd"] == pytest.approx(np.mean(1 / np.arange(52, 102)))
    assert f["anti_induction"] == pytest.approx(np.mean(1 / np.arange(52, 101)))
    assert f["copy_bwd_logprob"] == pytest.approx(-math.log(258)) == uniform_logprob(258)


def test_top_share_floor_is_the_share_of_equal_heads():
    assert top_share_floor(4) == 0.25 and top_share_floor(8) == 0.125
    assert top_share_floor(50) == pytest.approx(0.02) and top_share_floor(100) == pytest.approx(0.02)
    with pytest.raises(ValueError, match="n_heads"):
        top_share_floor(0)


def test_at_floor_within_a_factor_of_chance_or_beyond_it():
    # ratio scale: attention 0.0137 at chance; 1.9x still at it, 2.1x not; below chance is at it
    assert at_floor([0.013, 0.022, 0.026], 0.0137, "ratio")
    assert not at_floor([0.029, 0.03], 0.0137, "ratio")
    assert at_floor([0.0], 0.05, "ratio")
    # log scale: -5.03 is within ln 2 of -ln 256; -8 (a confident wrong guess) is beyond it
    assert at_floor([-5.26, -5.10, -4.70], -math.log(258), "log") and at_floor([-8.2], -math.log(258), "log")
    assert not at_floor([-1.0, -0.5], -math.log(258), "log")
    # a measure the mechanism lowers (late minus early loss): at 0 unless below -ln 2
    assert at_floor([-0.3, 0.4], 0.0, "log", higher=False) and not at_floor([-2.5], 0.0, "log", higher=False)
    assert band_edge(0.25, "ratio", 3.0) == 0.75 and band_edge(0.0, "log") == pytest.approx(math.log(2))
    assert at_floor([0.2, np.nan], 0.125, "ratio")  # NaN runs dropped


def test_bad_floors_are_named():
    with pytest.raises(ValueError, match="scale"):
        Floor("x_floor", "x", "linear")
    with pytest.raises(ValueError, match="no finite value"):
        at_floor([np.nan], 0.1, "ratio")
    with pytest.raises(ValueError, match="factor"):
        band_edge(0.1, "ratio", 1.0)
    with pytest.raises(ValueError, match="ratio-scale floor"):
        at_floor([0.1], -1.0, "ratio")
