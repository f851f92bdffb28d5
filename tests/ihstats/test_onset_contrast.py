"""ihstats.onset.contrast: arm means of censored log onsets, one shared sigma, profile intervals.

Checked against scipy (one arm: ``scipy.stats.norm.fit`` on ``CensoredData``), against the onset
model's own MLE (:func:`ihstats.onset.mle.fit_mle`, arms as dummies), against the exact t interval
(no censoring), and by simulation: log onsets that are not normal (Student-t with 4 df, log of a
gamma), censored at a common cap, 7 arms x 5 runs as the mechanism factorial.
"""

import numpy as np
import pytest
from scipy import stats
from scipy.special import digamma, polygamma

from ihstats.onset.contrast import MEASURED_COVERAGE, fit_arms, likelihood_cut, profile_interval, profile_loglik
from ihstats.onset.mle import fit_mle

#: true arm offsets in log onset around the centre (the factorial's shape: each factor both ways)
OFFSETS = {"centre": 0.0, "c32": -0.3, "c128": 0.2, "near": -0.2, "far": 0.3, "sparse": 0.4, "dense": -0.3}
PAIRS = (("c128", "c32"), ("far", "near"), ("dense", "sparse"))
SD = 0.3  # seed scatter of log onset (bxc and markov-entropy seeds: 0.1-0.3)
CAP = 0.45  # common cap, log units above the centre: 13-15% of runs censored


def _noise(kind: str, rng, n: int) -> np.ndarray:
    """Errors of sd ``SD`` and a fixed shape: every arm is the same shape shifted, so the true
    contrast (a difference of locations) is the difference of the offsets."""
    if kind == "normal":
        return rng.normal(0, SD, n)
    if kind == "student_t4":  # sd of t(4) is sqrt(2)
        return rng.standard_t(4, n) * SD / np.sqrt(2)
    shape = 3.0  # log of a gamma(3): left-skewed, mean digamma(3), variance trigamma(3)
    return (np.log(rng.gamma(shape, size=n)) - digamma(shape)) * SD / np.sqrt(polygamma(1, shape))


def _simulate(kind: str, rng, n_runs: int = 5):
    arm = np.repeat(list(OFFSETS), n_runs)
    y = np.log(1000) + np.array([OFFSETS[a] for a in arm]) + _noise(kind, rng, arm.size)
    cap = np.log(1000) + CAP
    return arm, np.minimum(y, cap), y > cap


def _coverage(kind: str, n_sets: int, cut: str = "t", seed: int = 0) -> tuple[float, float, int]:
    """Share of 90% intervals holding the true contrast over the testable contrasts (both arms with
    two onsets or more, the factorial's rule), the share of runs censored, intervals counted."""
    rng = np.random.default_rng(seed)
    hits, n, censored = 0, 0, []
    for _ in range(n_sets):
        arm, y, cen = _simulate(kind, rng)
        censored.append(cen.mean())
        onsets = {a: int((~cen[arm == a]).sum()) for a in OFFSETS}
        keep = np.isin(arm, [a for a in OFFSETS if onsets[a]])
        fit = fit_arms(arm[keep], y[keep], cen[keep])
        for high, low in PAIRS:
            if min(onsets[high], onsets[low]) < 2:
                continue
            _, lo, hi = profile_interval(fit, high, low, 0.9, cut)
            hits += lo <= OFFSETS[high] - OFFSETS[low] <= hi
            n += 1
    return hits / n, float(np.mean(censored)), n


def test_one_arm_matches_scipy_censored_fit():
    rng = np.random.default_rng(3)
    y = rng.normal(7.0, 0.4, 12)
    cap = 7.2
    cen = y > cap
    assert 2 <= cen.sum() <= 6
    fit = fit_arms(["a"] * y.size, np.minimum(y, cap), cen)
    loc, scale = stats.norm.fit(stats.CensoredData(uncensored=y[~cen], right=np.full(cen.sum(), cap)))
    assert fit.converged
    assert fit.mean("a") == pytest.approx(loc, abs=1e-3) and fit.sigma == pytest.approx(scale, abs=1e-3)


def test_arms_match_the_onset_models_mle():
    """Shared sigma over three arms: the same maximum as fit_mle with the arms as dummies."""
    rng = np.random.default_rng(4)
    arm, y, cen = _simulate("normal", rng)
    fit = fit_arms(arm, y, cen)
    arms = list(fit.arms)
    X = np.array([[a == b for b in arms[1:]] for a in arm], float)
    mle = fit_mle(X, y, cen)
    assert fit.loglik == pytest.approx(mle.loglik, abs=1e-6)
    assert fit.mu == pytest.approx(mle.params[0] + np.r_[0, mle.params[1:len(arms)]], abs=1e-3)
    assert fit.log_sigma == pytest.approx(mle.params[-1], abs=1e-3)


def test_without_censoring_the_interval_is_the_exact_t_interval():
    rng = np.random.default_rng(5)
    arm = np.repeat(["a", "b", "c"], [5, 4, 6])
    y = rng.normal(0, 0.3, arm.size) + (arm == "b") * 0.5
    fit = fit_arms(arm, y, np.zeros(arm.size, bool))
    est, lo, hi = profile_interval(fit, "b", "a", 0.9)
    means = {g: y[arm == g].mean() for g in "abc"}
    rss = sum(((y[arm == g] - means[g]) ** 2).sum() for g in "abc")
    df = arm.size - 3
    half = stats.t.ppf(0.95, df) * np.sqrt(rss / df * (1 / 4 + 1 / 5))
    assert est == pytest.approx(means["b"] - means["a"], abs=1e-6)
    assert (lo, hi) == pytest.approx((est - half, est + half), abs=1e-5)
    # the large-sample cut is narrower: chi2_1's 2.71 below n log(1 + t^2 / df)
    assert likelihood_cut(0.9, 15, 3, "chi2") < likelihood_cut(0.9, 15, 3, "t")
    assert profile_loglik(fit, "b", "a", est) == pytest.approx(fit.loglik, abs=1e-8)


def test_an_arm_held_up_by_censoring_gives_an_open_interval_and_refusals():
    """One onset and four runs censored just after it, beside a widely spread arm: the likelihood
    stays flat towards late onsets, so the upper bound is infinite (the profile is still inside the
    interval 8 log units out)."""
    arm = np.array(["a"] * 3 + ["b"] * 5)
    y = np.array([0, 3, 6, 3.0, 3.2, 3.2, 3.2, 3.2])
    cen = np.array([False] * 4 + [True] * 4)
    est, lo, hi = profile_interval(fit_arms(arm, y, cen), "b", "a")
    assert np.isfinite(est) and lo < est and hi == np.inf
    y[:3] = [0, 1, 2]  # a tighter arm pins sigma: the bound closes
    assert np.isfinite(profile_interval(fit_arms(arm, y, cen), "b", "a")[2])
    with pytest.raises(ValueError, match="no uncensored run"):
        fit_arms(arm, y, np.r_[cen[:3], [True] * 5])
    with pytest.raises(ValueError, match="sigma is not identified"):
        fit_arms(["a", "b"], [1.0, 2.0], [False, False])


@pytest.mark.parametrize("kind", ["student_t4", "log_gamma"])
def test_profile_interval_covers_the_true_contrast_on_non_normal_onsets(kind):
    """200 datasets, 7 arms x 5 runs, 13-15% of runs censored at one cap; log onsets Student-t (4 df)
    or log-gamma (shape 3), so the normal model is wrong. Measured 90% coverage over the testable
    contrasts (3 per dataset, 553-574 intervals, seed 0), the "t" cut: student_t4 0.908, log_gamma
    0.920 (normal log onsets: 0.913); the "chi2" cut: 0.864, 0.857 (normal 0.853). The band is the
    issue's; MEASURED_COVERAGE records the numbers."""
    cover, censored, n = _coverage(kind, 200)
    assert 0.10 <= censored <= 0.20
    assert n >= 540  # of 600: few contrasts dropped as not testable
    assert 0.80 <= cover <= 0.97, (kind, cover)
    assert cover == pytest.approx(MEASURED_COVERAGE["t"][kind], abs=0.005)
