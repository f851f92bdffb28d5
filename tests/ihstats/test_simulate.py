"""Seeded simulators: reproducible, sorted schedules, the planted onset matches its definition."""

import numpy as np
import pytest

from ihstats.simulate.curves import (SCHEDULES, knee_constants, make_schedule, simulate_curve, simulate_curves,
                                     unit_rise)


@pytest.mark.parametrize("kind", SCHEDULES)
def test_schedules_sorted_unique_positive(kind):
    s = make_schedule(kind, 300, 10_000)
    assert s[0] >= 1 and s[-1] == 10_000
    assert np.all(np.diff(s) > 0)
    assert len(s) == (30 if kind == "sparse" else 300 if kind == "linear" else len(s))


def test_same_seed_same_curve_and_different_seed_differs():
    a, b = simulate_curve("sigmoid", seed=4), simulate_curve("sigmoid", seed=4)
    c = simulate_curve("sigmoid", seed=5)
    assert np.array_equal(a.values, b.values) and a.onset == b.onset
    assert not np.array_equal(a.values, c.values)


def test_ramp_truth_is_exact_knee():
    c = simulate_curve("ramp", "linear", onset=1000.0, width=1.0, baseline=0.1, rise=0.5, noise=1e-9, seed=0)
    x = np.log(c.steps)
    before, after = c.values[x < np.log(1000) - 1e-9], c.values[x > np.log(1000) + 1.0 + 1e-9]
    assert np.allclose(before, 0.1, atol=1e-6) and np.allclose(after, 0.6, atol=1e-6)
    assert c.end == pytest.approx(1000 * np.e) and c.midpoint == pytest.approx(1000 * np.exp(0.5))


def test_logistic_knees_are_symmetric_and_match_tangent_geometry():
    ka, kb = knee_constants("sigmoid")
    assert ka == pytest.approx(-kb, abs=1e-4)
    # the least-squares ramp is a little flatter than the tangent at the midpoint (knees at -2, 2)
    assert -2.8 < ka < -2.0
    # Gompertz and its mirror image have mirrored knees
    g, r = knee_constants("gompertz"), knee_constants("rgompertz")
    assert g[0] == pytest.approx(-r[1], abs=1e-4) and g[1] == pytest.approx(-r[0], abs=1e-4)


def test_planted_onset_is_the_least_squares_knee_of_the_clean_curve():
    """Brute-force ramp from 0 to 1 on a clean sigmoid: its knee is the planted onset."""
    u = np.linspace(-12, 12, 4001)
    f = unit_rise("sigmoid", u)
    best = (np.inf, 0.0)
    for a in np.linspace(-3.0, -2.2, 161):
        r = np.clip((u - a) / (-2 * a), 0, 1)  # symmetric knees
        rss = np.sum((f - r) ** 2)
        best = min(best, (rss, a))
    assert best[1] == pytest.approx(knee_constants("sigmoid")[0], abs=0.01)


def test_flat_curves_have_no_onset_and_batches_cycle_shapes():
    f = simulate_curve("flat", seed=1)
    assert not f.emergent and np.isnan(f.onset)
    cs = simulate_curves(8, seed=0)
    assert {c.shape for c in cs} == {"ramp", "sigmoid", "gompertz", "rgompertz"}
    assert all(c.steps[0] < c.onset < c.end < c.steps[-1] for c in cs)


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="shape"):
        simulate_curve("wiggle")
    with pytest.raises(ValueError, match="schedule"):
        make_schedule("weird")


def test_onset_simulator_shapes_and_estimands():
    from ihstats.simulate.coverage_curves import ONSET_SHAPES, simulate_onset_curve

    for shape in ONSET_SHAPES:
        a, b = simulate_onset_curve(shape, "mixed", 0.02, seed=3), simulate_onset_curve(shape, "mixed", 0.02, seed=3)
        assert np.array_equal(a.values, b.values) and a.onset == b.onset and a.steps[0] < a.onset < a.steps[-1]
    quiet = simulate_onset_curve("ramp", "linear", 1e-9, seed=1)
    x, a = np.log(quiet.steps), np.log(quiet.onset)
    assert np.ptp(quiet.values[x < a]) < 1e-6 and quiet.values[-1] > quiet.values[0] + 0.25  # exact knee
    late = simulate_onset_curve("late", "sparse", 1e-9, seed=2)
    assert late.values[-1] - late.values[0] < 0.7 * late.params["rise"] + 1e-6  # never reaches the plateau
    two = simulate_onset_curve("twostage", "log", 0.02, seed=4)
    assert two.onset < two.params["onset2"] < two.end
    ka, _ = knee_constants("sigmoid")
    s = simulate_onset_curve("sigmoid", "log", 1e-9, seed=5)
    rise = (s.values - s.params["baseline"]) / s.params["rise"]
    assert np.interp(np.log(s.onset), np.log(s.steps), rise) == pytest.approx(unit_rise("sigmoid", np.array(ka)), abs=1e-3)
    heads = simulate_onset_curve("maxheads", "linear", 0.05, seed=6)
    flat = simulate_onset_curve("flat", "linear", 0.05, seed=6)
    assert np.median(heads.values[:50]) > np.median(flat.values[:50]) + 0.03  # the max lifts the baseline
