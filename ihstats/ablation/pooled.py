"""Head-ablation tests with seeds as the unit: each seed's top set against its own random sets,
combined over the seeds of a condition.

Within one run, :func:`~ihstats.ablation.permutation.random_set_test` gives ``p_s = (1 + #{random drop >=
top drop}) / (R_s + 1)``, and its floor is ``1 / (R_s + 1)`` (``1 / 144`` for a 2 x 12 model with
one head per layer ablated: no single run rejects after Holm over more than 7 tests). Under the
null (the top set is exchangeable with the random sets of its run) the seeds are independent, so
Fisher's statistic ``-2 sum_s log p_s`` has an exact null: each seed's ``p`` is that of a set drawn
uniformly among its ``R_s + 1`` sets (ties included). :func:`pooled_random_set_test` counts that
null exactly (enumerating all but the last seed, then a sorted search), so its floor is
``prod_s 1 / (R_s + 1)``: 3 seeds of 144 sets give ``3.3e-7``.

Seed labels: ``ihtrain.ablate --condition MODE@sN`` writes rows whose condition is ``MODE@sN``;
:func:`pooled_ablation_tests` pools the rows of one ``MODE`` over ``N`` (:func:`condition_of`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ihstats.ablation.data import check_table, prepare
from ihstats.ablation.spec import AblationSpec
from ihstats.ablation.permutation import PermutationResult, correct_pvalues
from ihstats.tables import seed_label

#: null points enumerated at most before the last seed's sorted search
MAX_ENUMERATED = 5_000_000


def condition_of(label: str) -> str:
    """``"forward@s1"`` -> ``"forward"``; a label without a seed part is its own condition; a label
    with ``@`` but not ``MODE@sSEED`` exactly (``forward@s1x``) is refused (:func:`ihstats.tables.seed_label`)."""
    parsed = seed_label(label)
    return parsed[0] if parsed else str(label)


def _set_pvalues(top: float, random) -> np.ndarray:
    """p of every one of the ``R + 1`` sets (top first) against the others: ``(1 + #{others >= v})
    / (R + 1)``, the value the random-set test would give were that set the top set."""
    v = np.concatenate([[top], np.asarray(random, float).ravel()])
    gamma = np.abs(v).max() * np.finfo(float).eps * 100
    s = np.sort(v)
    n_ge = v.size - np.searchsorted(s, v - gamma, side="left")  # itself included
    return n_ge / v.size


def pooled_random_set_test(top_drops, random_drops) -> PermutationResult:
    """Fisher's combination of per-seed random-set tests with its exact null.

    Parameters
    ----------
    top_drops : sequence of float, one per seed
        Mean drop of each seed's top set.
    random_drops : sequence of array_like, one per seed
        Mean drops of that seed's random sets (``R_s`` each; they may differ).

    Returns
    -------
    PermutationResult
        ``statistic``: ``-2 sum log p_s``; ``pvalue``: the null's share at or above it (exact);
        ``n_resamples``: the null's size ``prod (R_s + 1)``.
    """
    if len(top_drops) != len(random_drops) or not len(top_drops):
        raise ValueError(f"top_drops, random_drops: need one entry per seed, got {len(top_drops)} "
                         f"and {len(random_drops)}")
    if not all(np.isfinite(t) and np.isfinite(np.asarray(r, float)).all() for t, r in zip(top_drops, random_drops)):
        raise ValueError("top_drops, random_drops: non-finite drops; check the ablation table")
    logs = [-2 * np.log(_set_pvalues(t, r)) for t, r in zip(top_drops, random_drops)]
    observed = float(sum(x[0] for x in logs))
    head = np.zeros(1)
    for x in logs[:-1]:  # every combination of the first S - 1 seeds
        if head.size * x.size > MAX_ENUMERATED:
            raise ValueError(f"random_drops: {head.size * x.size:,} null points exceed {MAX_ENUMERATED:,}; "
                             "use fewer random sets or seeds")
        head = (head[:, None] + x[None, :]).ravel()
    head.sort()
    last = logs[-1]
    gamma = max(abs(observed), 1.0) * 1e-12
    n_ge = head.size - np.searchsorted(head, observed - gamma - last, side="left")  # per last-seed value
    total = head.size * last.size
    return PermutationResult(observed, float(n_ge.sum() / total), int(total), True, "greater")


def pooled_floor(n_random) -> float:
    """Smallest p of :func:`pooled_random_set_test`: every seed's top set beats all its random sets."""
    return float(np.prod([1.0 / (int(r) + 1) for r in n_random]))


def pooled_ablation_tests(table: pd.DataFrame, alpha: float = 0.05,
                          higher_is_better: bool = True) -> pd.DataFrame:
    """Seed-pooled top-vs-random tests per condition (and metric), Holm over the rows.

    Parameters
    ----------
    table : pandas.DataFrame
        A tidy ablation table (``ihstats.ablation``) whose conditions are ``MODE@sN`` labels.

    Returns
    -------
    pandas.DataFrame
        Per condition (x metric): ``n_seeds``, ``top_drop`` and ``random_drop`` (means over seeds),
        ``gap_min`` / ``gap_max`` (the seeds' top-minus-mean-random drops), ``p_seeds`` (each
        seed's own p, joined), ``p_pooled``, its floor ``p_floor``, and ``p_pooled_holm`` /
        ``p_floor_holm`` over the rows; ``p_pooled_less`` (and its Holm) tests the other side:
        the top set hurts less than the random sets.
    """
    check_table(table)
    labels = pd.Series(table["condition"].astype(str).unique())
    metrics = sorted(table["metric"].unique()) if "metric" in table else [None]
    rows = []
    for metric in metrics:
        for cond, group in labels.groupby(labels.map(condition_of)):
            data = [prepare(table, AblationSpec(lab, metric, higher_is_better)) for lab in sorted(group)]
            tops = [d.top.mean() for d in data]
            rands = [d.random.mean(1) for d in data]
            res = pooled_random_set_test(tops, rands)
            less = pooled_random_set_test([-t for t in tops], [-r for r in rands])  # top hurts less
            gaps = [t - r.mean() for t, r in zip(tops, rands)]
            per_seed = [float(_set_pvalues(t, r)[0]) for t, r in zip(tops, rands)]
            rows.append({"condition": cond, "metric": metric, "n_seeds": len(data),
                         "top_drop": float(np.mean(tops)), "random_drop": float(np.mean([r.mean() for r in rands])),
                         "gap_min": float(min(gaps)), "gap_max": float(max(gaps)),
                         "p_seeds": " ".join(f"{p:.3g}" for p in per_seed), "p_pooled": res.pvalue,
                         "p_pooled_less": less.pvalue,
                         "p_floor": pooled_floor([r.size for r in rands])})
    out = pd.DataFrame(rows)
    adj = correct_pvalues(out["p_pooled"], alpha, methods=("holm",))
    out["p_pooled_holm"] = adj["p_holm"].to_numpy()
    out["p_pooled_less_holm"] = correct_pvalues(out["p_pooled_less"], alpha, methods=("holm",))["p_holm"].to_numpy()
    out["p_floor_holm"] = np.minimum(1.0, out["p_floor"] * len(out))
    return out if metrics != [None] else out.drop(columns="metric")


__all__ = ["condition_of", "pooled_ablation_tests", "pooled_floor", "pooled_random_set_test"]
