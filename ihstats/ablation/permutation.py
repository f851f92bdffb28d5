"""Permutation tests with scipy's p-value rule, vectorised: random-set tests and paired sign flips.

- :func:`random_set_test`: ``p = (1 + #{random >= observed}) / (R + 1)``: an observed statistic
  against ``R`` draws of the null (e.g. the drop of the top-k heads against random head sets);
  exact when the draws are all the other possibilities. :func:`smallest_attainable_p` and
  :func:`random_sets_needed` give the floor such a design cannot go below.
- :func:`sign_flip_test`: paired over examples, is the mean of the differences above 0? All
  ``2^n`` sign patterns when that is not more than the resamples asked for (exact), else random
  ones (Monte Carlo); :func:`sign_flip_power` its simulated power.
- :func:`correct_pvalues`: Holm and Benjamini-Hochberg corrections
  (``statsmodels.stats.multitest.multipletests``).

The tests of a head-ablation table built on these are :mod:`ihstats.ablation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

ALTERNATIVES = ("greater", "less", "two-sided")


# ---- the random-set design's floor -------------------------------------------------------------

def smallest_attainable_p(n_random: int, n_tests: int = 1) -> tuple[float, float]:
    """The smallest p a random-set test can give with ``n_random`` sets, raw (``1 / (R + 1)``: the top
    set beats every random set) and after Holm over ``n_tests`` tests (``n_tests`` times that, at
    most 1). No effect, however large, gets below these: the design's floor."""
    raw = 1.0 / (int(n_random) + 1)
    return raw, min(1.0, n_tests * raw)


def random_sets_needed(n_tests: int, alpha: float = 0.05) -> int:
    """Fewest random sets whose smallest attainable p reaches ``alpha`` after Holm over ``n_tests``."""
    return max(1, math.ceil(n_tests / alpha - 1 - 1e-9))


# ---- tests -------------------------------------------------------------------------------------

@dataclass
class PermutationResult:
    """Outcome of one permutation test (statistic, p-value and how it was obtained)."""

    statistic: float
    pvalue: float
    n_resamples: int
    exact: bool
    alternative: str


def _pvalue(null: np.ndarray, observed, alternative: str, exact: bool) -> np.ndarray:
    """scipy.stats.permutation_test's rule: ties count, +1 correction unless exact."""
    gamma = np.abs(observed) * np.finfo(float).eps * 100   # float round-off in the resamples
    adj = 0 if exact else 1
    n = null.shape[0]
    greater = ((null >= observed - gamma).sum(0) + adj) / (n + adj)
    less = ((null <= observed + gamma).sum(0) + adj) / (n + adj)
    if alternative == "greater":
        return greater
    if alternative == "less":
        return less
    return np.minimum(2 * np.minimum(greater, less), 1.0)


def random_set_test(top_drop: float, random_drops, alternative: str = "greater",
                    n_possible: int | None = None) -> PermutationResult:
    """Compare the top-k drop with the drops of ``R`` random head sets.

    Parameters
    ----------
    top_drop : float
        Mean drop of the top-k set.
    random_drops : array_like, shape (R,)
        Mean drops of the random sets.
    alternative : {"greater", "less", "two-sided"}
    n_possible : int, optional
        Number of possible same-count sets (top included); when ``R == n_possible - 1`` the random
        sets are all the others and the p-value is the exact permutation p-value.

    Returns
    -------
    PermutationResult
        ``pvalue = (1 + #{random >= top}) / (R + 1)`` for ``"greater"``.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative: {alternative!r} not in {ALTERNATIVES}")
    r = np.asarray(random_drops, float).ravel()
    if r.size == 0:
        raise ValueError("random_drops: need at least one random set")
    if n_possible is not None and r.size > n_possible - 1:
        raise ValueError(f"random_drops: {r.size} random sets but only {n_possible - 1} other "
                         "sets exist (duplicates?)")
    exact = n_possible is not None and r.size == n_possible - 1
    # the top set is one draw of the null: +1 in numerator and denominator (exact either way)
    p = _pvalue(r[:, None], np.array([top_drop]), alternative, exact=False)[0]
    return PermutationResult(float(top_drop), float(p), int(r.size), bool(exact), alternative)


def _sign_flip_null(d: np.ndarray, n_resamples: int, rng, batch: int) -> tuple[np.ndarray, bool]:
    """Null means of sign-flipped ``d`` (n, m): all 2^n patterns if few, else random ones."""
    n = d.shape[0]
    if n <= 30 and 2 ** n <= n_resamples:
        codes = np.arange(2 ** n, dtype=np.uint32)[:, None]
        bits = ((codes >> np.arange(n, dtype=np.uint32)) & 1).astype(float)   # (2^n, n)
        return (2 * bits @ d - d.sum(0)) / n, True
    out = np.empty((n_resamples, d.shape[1]))
    nbytes, total = (n + 7) // 8, d.sum(0)
    for i in range(0, n_resamples, batch):
        c = min(batch, n_resamples - i)
        # 8 sign bits per random byte: the RNG is the bottleneck otherwise
        bits = np.unpackbits(rng.integers(0, 256, (c, nbytes), dtype=np.uint8), axis=1, count=n)
        out[i:i + c] = (2 * (bits.astype(float) @ d) - total) / n   # sum(s d) with s = 2b - 1
    return out, False


def sign_flip_test(diffs, n_resamples: int = 9999, alternative: str = "greater", seed=0,
                   batch: int = 2000, return_null: bool = False):
    """Paired sign-flip permutation test of ``mean(diffs) = 0``.

    Parameters
    ----------
    diffs : array_like, shape (n,) or (n, m)
        Per-example paired differences (e.g. top-k drops); ``m`` columns are tested with the same
        sign flips.
    n_resamples : int
        Random sign patterns; all ``2^n`` are enumerated (exact test) when that is not more.
    alternative : {"greater", "less", "two-sided"}
    seed : int or numpy.random.Generator
    batch : int
        Resamples per chunk (memory ``batch * n`` floats).
    return_null : bool
        Also return the null distribution.

    Returns
    -------
    PermutationResult (or a list of them for 2-D input), and the null if asked.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative: {alternative!r} not in {ALTERNATIVES}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples: must be >= 1, got {n_resamples}")
    d = np.asarray(diffs, float)
    one = d.ndim == 1
    d = d[:, None] if one else d
    if d.ndim != 2 or d.shape[0] < 1 or not np.all(np.isfinite(d)):
        raise ValueError("diffs: need a finite (n,) or (n, m) array with n >= 1")
    rng = np.random.default_rng(seed)
    null, exact = _sign_flip_null(d, n_resamples, rng, batch)
    obs = d.mean(0)
    p = _pvalue(null, obs, alternative, exact)
    res = [PermutationResult(float(o), float(q), null.shape[0], exact, alternative)
           for o, q in zip(obs, p)]
    res = res[0] if one else res
    return (res, null) if return_null else res


# ---- corrections and power ---------------------------------------------------------------------

def correct_pvalues(pvalues, alpha: float = 0.05, methods=("holm", "fdr_bh")) -> pd.DataFrame:
    """Holm / Benjamini-Hochberg adjusted p-values and rejections (statsmodels ``multipletests``).

    Returns
    -------
    pandas.DataFrame
        ``p``, and per method ``p_<method>`` and ``reject_<method>``; NaN p-values pass through.
    """
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, float)
    out = pd.DataFrame({"p": p})
    ok = np.isfinite(p)
    for m in methods:
        adj, rej = np.full(p.shape, np.nan), np.zeros(p.shape, bool)
        if ok.any():
            rej[ok], adj[ok] = multipletests(p[ok], alpha=alpha, method=m)[:2]
        out[f"p_{m}"], out[f"reject_{m}"] = adj, rej
    return out


def sign_flip_power(effect_size: float, n_examples: int, alpha: float = 0.05, n_sim: int = 200,
                    n_resamples: int = 999, seed: int = 0) -> float:
    """Simulated power of the one-sided sign-flip test for a standardised effect ``d_z``.

    Per-example differences are ``N(effect_size, 1)``; returns the fraction of ``n_sim``
    simulated data sets with ``p <= alpha``.
    """
    rng = np.random.default_rng(seed)
    d = rng.normal(effect_size, 1.0, (n_examples, n_sim))      # each column one data set
    res = sign_flip_test(d, n_resamples, "greater", rng)
    return float(np.mean([r.pvalue <= alpha for r in res]))


# ---- formed counts in matched strata -----------------------------------------------------------


def stratified_exact_test(strata, alternative: str = "two-sided") -> float:
    """Exact conditional test that group A forms as often as group B within matched strata.

    ``strata``: ``[(formed_a, runs_a, formed_b, runs_b), ...]``, one per stratum (e.g. two cells
    matched in entropy rate). Under the null the runs' labels are exchangeable within each stratum,
    so A's formed count there is hypergeometric given the stratum's margins; the statistic is A's
    total, whose null law is the convolution of those (the exact Mantel-Haenszel / Zelen test). The
    p-value is ``P(T <= t)`` for ``"less"`` (A forms less), ``P(T >= t)`` for ``"greater"``, and the
    sum of the null probabilities not above ``P(T = t)`` for ``"two-sided"`` (Fisher's rule: one
    stratum gives ``scipy.stats.fisher_exact``'s p-value).
    """
    from scipy.stats import hypergeom

    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative: must be one of {ALTERNATIVES}, got {alternative!r}")
    pmf, observed, lo = np.array([1.0]), 0, 0
    for i, (ka, na, kb, nb) in enumerate(strata):
        if not (0 <= ka <= na and 0 <= kb <= nb and na + nb > 0):
            raise ValueError(f"strata[{i}]: need 0 <= formed <= runs in both groups, got {(ka, na, kb, nb)}")
        K = ka + kb
        support = np.arange(max(0, K - nb), min(K, na) + 1)
        pmf = np.convolve(pmf, hypergeom.pmf(support, na + nb, K, na))
        lo += int(support[0])
        observed += int(ka)
    t = observed - lo
    if alternative == "less":
        return float(min(1.0, pmf[:t + 1].sum()))
    if alternative == "greater":
        return float(min(1.0, pmf[t:].sum()))
    return float(min(1.0, pmf[pmf <= pmf[t] * (1 + 1e-7)].sum()))



def stratified_rank_test(strata) -> tuple[float, float]:
    """Exact stratified rank test that group A's onsets come as early as group B's, with censoring.

    ``strata``: ``[(onsets_a, onsets_b), ...]``, one per stratum (cells matched in entropy rate);
    a run that did not form by the shared budget is ``inf`` (later than every onset: under one cap
    Gehan's ordering of censored times reduces to this). Within a stratum the runs' labels are
    exchangeable under the null, so A's sum of mid-ranks there has the law of a random subset's; the
    statistic is A's total over the strata, whose exact null law is the convolution of those (van
    Elteren's test with unit weights; one stratum without ties is the exact Mann-Whitney test).

    Returns ``(p, shift)``: the two-sided p-value (the null probability of totals at least as far
    from the null mean) and A's mean rank minus its null mean, per run (negative: A is earlier).
    """
    from itertools import combinations

    from scipy.stats import rankdata

    law, observed, expected, n_a = {0: 1.0}, 0, 0.0, 0
    for i, (a, b) in enumerate(strata):
        a, b = np.asarray(a, float), np.asarray(b, float)
        if not len(a) or not len(b) or np.isnan(np.r_[a, b]).any():
            raise ValueError(f"strata[{i}]: need runs in both groups and no NaN (inf = not formed), got {a}, {b}")
        ranks2 = np.rint(2 * rankdata(np.r_[a, b])).astype(int)  # mid-ranks are halves: doubled, integers
        subset = pd.Series([int(ranks2[list(c)].sum()) for c in combinations(range(len(ranks2)), len(a))])
        stratum = subset.value_counts(normalize=True).to_dict()
        total: dict[int, float] = {}
        for s, p in law.items():
            for t, q in stratum.items():
                total[s + t] = total.get(s + t, 0.0) + p * q
        law = total
        observed += int(ranks2[:len(a)].sum())
        expected += len(a) * (len(ranks2) + 1)  # doubled: 2 x len(a) x (n + 1) / 2
        n_a += len(a)
    if not n_a:
        raise ValueError("strata: no stratum given")
    far = abs(observed - expected) - 1e-9
    p = sum(q for s, q in law.items() if abs(s - expected) >= far)
    return float(min(1.0, p)), float((observed - expected) / (2 * n_a))
