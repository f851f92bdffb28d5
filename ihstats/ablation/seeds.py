"""Between-condition contrasts with seeds as the unit, and the floors of a grid's tests.

A grid with ``n_a`` seeds of condition A and ``n_b`` of B compares one number per run (an onset,
a final score, a concentration at matched PS): runs of one condition are exchangeable under the
null, so :func:`two_sample_test` enumerates every relabelling of the ``n_a + n_b`` runs (exact).
Its smallest attainable p is :func:`two_sample_floor`: with 3 seeds per condition ``1 / C(6, 3)
= 0.05`` one-sided and ``0.1`` two-sided, so no effect, however large, rejects two-sided at 0.05;
4 seeds give ``2 / 70 = 0.029``, 5 give ``2 / 252 = 0.0079`` two-sided.

:func:`ablation_floor` is the head-ablation design's floor (``ihstats.ablation``): the top
set against all other same-count-per-layer sets, ``1 / (number of sets)``, then Holm over the
family of tests.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from ihstats.ablation.spec import count_head_sets
from ihstats.ablation.permutation import (
    ALTERNATIVES, PermutationResult, correct_pvalues, smallest_attainable_p,
)

#: relabellings enumerated at most (C(16, 8) = 12,870); beyond, the test refuses
MAX_RELABELLINGS = 20_000


def two_sample_test(a, b, alternative: str = "two-sided") -> PermutationResult:
    """Exact two-sample permutation test of ``mean(a) - mean(b)`` over all relabellings.

    Parameters
    ----------
    a, b : array_like
        One finite value per run (seed) of each condition; at least one each.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: is A's mean above B's.

    Returns
    -------
    PermutationResult
        ``statistic`` the observed difference of means, ``pvalue`` the share of the
        ``C(n_a + n_b, n_a)`` relabellings at least as extreme (the observed one included),
        ``exact`` True. Two-sided: twice the smaller one-sided p, at most 1.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative: {alternative!r} not in {ALTERNATIVES}")
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    if a.size < 1 or b.size < 1:
        raise ValueError(f"a, b: need at least one run per condition, got {a.size} and {b.size}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a, b: values must be finite (drop or impute runs without a value first)")
    n_perm = math.comb(a.size + b.size, a.size)
    if n_perm > MAX_RELABELLINGS:
        raise ValueError(f"a, b: {n_perm} relabellings exceed {MAX_RELABELLINGS}; use a sampled test")
    pooled = np.concatenate([a, b])
    total = pooled.sum()
    idx = np.array(list(itertools.combinations(range(pooled.size), a.size)))  # (n_perm, n_a)
    sum_a = pooled[idx].sum(1)
    null = sum_a / a.size - (total - sum_a) / b.size  # (n_perm,), the observed labelling included
    observed = a.mean() - b.mean()
    gamma = max(abs(observed), 1.0) * 1e-12  # ties in float round-off count as ties
    greater, less = np.mean(null >= observed - gamma), np.mean(null <= observed + gamma)
    p = {"greater": greater, "less": less, "two-sided": min(1.0, 2 * min(greater, less))}[alternative]
    return PermutationResult(float(observed), float(p), int(n_perm), True, alternative)


def two_sample_floor(n_a: int, n_b: int, alternative: str = "two-sided", n_tests: int = 1) -> tuple[float, float]:
    """Smallest p :func:`two_sample_test` can give with ``n_a`` and ``n_b`` runs, raw and after
    Holm over ``n_tests`` contrasts: ``1 / C(n_a + n_b, n_a)`` one-sided, twice that two-sided."""
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative: {alternative!r} not in {ALTERNATIVES}")
    if n_a < 1 or n_b < 1 or n_tests < 1:
        raise ValueError(f"n_a, n_b, n_tests: must be >= 1, got {n_a}, {n_b}, {n_tests}")
    raw = (1 if alternative != "two-sided" else 2) / math.comb(n_a + n_b, n_a)
    return min(1.0, raw), min(1.0, n_tests * raw)


def condition_contrasts(runs: pd.DataFrame, value: str, baseline: str, condition: str = "biinduct",
                        alternative: str = "two-sided", alpha: float = 0.05) -> pd.DataFrame:
    """Every condition against ``baseline`` with seeds as the unit, Holm over the contrasts.

    Parameters
    ----------
    runs : pandas.DataFrame
        One row per run: a ``condition`` column and a numeric ``value`` column (e.g. a grid's
        ``summary.csv`` with ``biinduct`` from ``ihstats.base.io.config_factors``, and ``onset``).
        Runs whose value is missing are left out (and counted in ``n_missing``); a condition (or
        the baseline) with no value at all is not tested (``p`` empty) and not counted in Holm.
    value, baseline, condition : str
        Column tested, baseline level, column naming the condition.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: the condition's mean above the baseline's.
    alpha : float
        Level of the Holm correction.

    Returns
    -------
    pandas.DataFrame
        Per condition: ``diff`` (mean minus the baseline's), ``n``, ``n_baseline``, ``n_missing``,
        ``p``, ``p_holm``, ``reject_holm``, and the design's floor ``p_floor`` (raw) and
        ``p_floor_holm`` (:func:`two_sample_floor` over the contrasts).
    """
    for col in (condition, value):
        if col not in runs:
            raise ValueError(f"runs: no column {col!r}; have {list(runs.columns)}")
    if baseline not in set(runs[condition]):
        raise ValueError(f"baseline: {baseline!r} is not a level of {condition!r}: {sorted(map(str, set(runs[condition])))}")
    v = pd.to_numeric(runs[value], errors="coerce")
    base = v[runs[condition] == baseline].dropna().to_numpy()
    others = [c for c in pd.unique(runs[condition]) if c != baseline]
    rows = []
    for c in others:
        x = v[runs[condition] == c]
        row = {"condition": c, "baseline": baseline, "value": value, "diff": np.nan, "n": int(x.notna().sum()),
               "n_baseline": base.size, "n_missing": int(x.isna().sum()), "p": np.nan}
        if row["n"] and base.size:  # a side with no value (a level it never reached): no test, p left empty
            r = two_sample_test(x.dropna().to_numpy(), base, alternative)
            row |= {"diff": r.statistic, "p": r.pvalue}
        rows.append(row)
    out = pd.DataFrame(rows).assign(p_floor=np.nan, p_floor_holm=np.nan, p_holm=np.nan, reject_holm=False)
    tested = out["p"].notna()
    for i in out.index[tested]:  # the floors and Holm count only the contrasts that were tested
        out.loc[i, ["p_floor", "p_floor_holm"]] = two_sample_floor(out.at[i, "n"], base.size, alternative,
                                                                   int(tested.sum()))
    if tested.any():
        adj = correct_pvalues(out.loc[tested, "p"], alpha, methods=("holm",))
        out.loc[tested, "p_holm"] = adj["p_holm"].to_numpy()
        out.loc[tested, "reject_holm"] = adj["reject_holm"].to_numpy()
    return out


def per_layer_count(n_head: int, top_frac: float) -> int:
    """Heads per layer of the ``--top-frac F --per-layer`` rule: ``max(1, round_half_up(F H))``
    (as ``ihtrain.ablate.head_sets.top_heads``)."""
    if not 0 < top_frac <= 1:
        raise ValueError(f"top_frac: must lie in (0, 1], got {top_frac}")
    return max(1, int(np.floor(top_frac * n_head + 0.5)))


def ablation_floor(n_layer: int, n_head: int, top_frac: float = 0.02, n_tests: int = 1) -> dict[str, float]:
    """The ablation design's floor for an ``n_layer x n_head`` model and the per-layer top rule.

    Returns
    -------
    dict
        ``k_per_layer``, ``n_sets`` (same-count sets, top included), ``p_raw`` (``1 / n_sets``: the
        top set beats all others) and ``p_holm`` (times ``n_tests``, at most 1).
    """
    k = per_layer_count(n_head, top_frac)
    n_sets = count_head_sets([n_head] * n_layer, [k] * n_layer)
    raw, holm = smallest_attainable_p(n_sets - 1, n_tests)
    return {"k_per_layer": k, "n_sets": n_sets, "p_raw": raw, "p_holm": holm}


__all__ = ["MAX_RELABELLINGS", "ablation_floor", "condition_contrasts", "per_layer_count", "two_sample_floor", "two_sample_test"]
