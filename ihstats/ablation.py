"""Head-ablation tables tested: top-k heads against random head sets.

Input: a tidy table with one row per (condition, example, ablated head set)::

    condition  str    model / training condition (e.g. "natural", "biinduct")
    example    any    example id; the same ids under every set of a condition
    ablation   str    "none" (unablated), "top" (the top-k heads) or "random"
    set_id     str    identifies a random head set (any value for none/top)
    value      float  per-example metric, higher is better by default (e.g. log-prob of the
                      answer, HITS@1); pass ``higher_is_better=False`` for a loss
    metric     str    optional: several metrics are tested separately

The drop of a set is ``value(none) - value(set)`` per example (sign flipped for losses), and its
mean over examples is the set's drop. Tests:

- :func:`~ihstats.permutation.random_set_test`: ``p = (1 + #{random drop >= top drop}) / (R + 1)``;
  exact when the random sets are all the other same-count-per-layer sets (see
  :func:`choose_head_sets`).
- :func:`~ihstats.permutation.sign_flip_test`: paired over examples; is the top-k drop's mean
  above 0?
- :func:`compare_conditions`: sign-flip test of the difference between two conditions in their
  per-example top-vs-random gap (examples paired across conditions).
- :func:`effect_sizes`: drops, gap, ratio, ``d_z`` and the top drop in random-set sd units, with
  bootstrap intervals over examples.
- :func:`run_ablation_tests`: all of the above per condition, with Holm and Benjamini-Hochberg
  corrections (``statsmodels.stats.multitest.multipletests``) across the rows.

The tests themselves (the p-value rule, sign flips, the corrections) are :mod:`ihstats.permutation`;
this module reads the table, chooses the random head sets and puts the tests, effect sizes and the
design's floor together.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ihstats.permutation import (
    PermutationResult, correct_pvalues, random_set_test, random_sets_needed, sign_flip_test, smallest_attainable_p,
)
from ihstats.tables import numeric_column, rows

COLUMNS = ("condition", "example", "ablation", "set_id", "value")
ABLATIONS = ("none", "top", "random")
# Random head sets drawn by default: the smallest attainable p is 1 / (R + 1) = 0.005, so a top set
# that beats every random set stays below 0.05 after Holm over up to 10 conditions.
DEFAULT_RANDOM_SETS = 199


# ---- input -------------------------------------------------------------------------------------

@dataclass
class AblationData:
    """Per-example drops of one condition. ``top``: (n,), ``random``: (R, n)."""

    condition: str
    examples: np.ndarray
    top: np.ndarray
    random: np.ndarray
    set_ids: list

    @property
    def n_examples(self) -> int:
        return self.top.size


def ablation_arrays(table: pd.DataFrame, condition: str, metric: str | None = None,
                    higher_is_better: bool = True) -> AblationData:
    """Pivot one condition of a tidy ablation table into per-example drop arrays.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns as in the module docstring.
    condition : str
        Which condition to take.
    metric : str, optional
        Which metric, when the table has a ``metric`` column.
    higher_is_better : bool
        False when ``value`` is a loss (the drop is then ablated minus unablated).

    Returns
    -------
    AblationData
    """
    check_table(table)
    df = table[table["condition"] == condition]
    if metric is not None:
        df = df[df["metric"] == metric]
    if df.empty:
        raise ValueError(f"condition: no rows for condition={condition!r} metric={metric!r}; "
                         f"conditions are {sorted(table['condition'].unique())}")
    key = df["set_id"].where(df["ablation"] == "random", df["ablation"])
    if (dup := df.assign(key=key).duplicated(["example", "key"])).any():
        raise ValueError(f"{condition}: duplicate (example, set) rows, e.g. "
                         f"{df[dup].iloc[0][['example', 'ablation', 'set_id']].to_dict()}")
    wide = df.assign(key=key).pivot(index="example", columns="key", values="value")
    for need in ("none", "top"):
        if need not in wide:
            raise ValueError(f"{condition}: no ablation == {need!r} rows")
    rand_cols = [c for c in wide.columns if c not in ("none", "top")]
    if not rand_cols:
        raise ValueError(f"{condition}: no ablation == 'random' rows")
    if wide.isna().any().any():
        bad = wide.columns[wide.isna().any()].tolist()[:5]
        raise ValueError(f"{condition}: sets {bad} do not cover the same examples as 'none' "
                         f"(every set needs a value for each of the {len(wide)} examples)")
    sign = 1.0 if higher_is_better else -1.0
    base = wide["none"].to_numpy(float)
    return AblationData(
        condition=str(condition), examples=wide.index.to_numpy(),
        top=sign * (base - wide["top"].to_numpy(float)),
        random=sign * (base[None, :] - wide[rand_cols].to_numpy(float).T),   # (R, n)
        set_ids=list(rand_cols))


#: ``ihtrain.ablate --prev-token-set`` labels the previous-token sets' rows ``"<condition>:prev_token"``
PREV_TOKEN_SUFFIX = ":prev_token"


def ablation_families(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The table split into its Holm families, each present one as ``(name, rows)``: ``"top"`` (the
    top-score sets) and ``"prev_token"`` (rows labelled with :data:`PREV_TOKEN_SUFFIX`, kept as is)."""
    prev = table["condition"].astype(str).str.endswith(PREV_TOKEN_SUFFIX)
    return [(name, table[mask]) for name, mask in (("top", ~prev), ("prev_token", prev)) if mask.any()]


def check_table(table: pd.DataFrame) -> None:
    """Raise a ValueError naming the problem if ``table`` is not a tidy ablation table."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table: expected a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in COLUMNS if c not in table]
    if missing:
        raise ValueError(f"missing columns: {missing}; the table needs {list(COLUMNS)}")
    bad = set(table["ablation"].unique()) - set(ABLATIONS)
    if bad:
        raise ValueError(f"ablation: unknown values {sorted(map(str, bad))}; allowed {ABLATIONS}")
    value = numeric_column(table, "value")  # text is named as text, not as NaN
    if not np.all(np.isfinite(value)):
        raise ValueError(f"value: blank or not finite in {rows(table, ~np.isfinite(value))}; every value must "
                         f"be a finite number")


# ---- head sets ---------------------------------------------------------------------------------

def count_head_sets(n_heads_per_layer, k_per_layer) -> int:
    """Number of head sets with ``k_per_layer[l]`` of the ``n_heads_per_layer[l]`` heads."""
    if len(n_heads_per_layer) != len(k_per_layer):
        raise ValueError("k_per_layer: one entry per layer needed")
    if any(not 0 <= k <= n for n, k in zip(n_heads_per_layer, k_per_layer)):
        raise ValueError(f"k_per_layer: each k must lie in [0, n_heads]; got {k_per_layer}")
    return math.prod(math.comb(n, k) for n, k in zip(n_heads_per_layer, k_per_layer))


def choose_head_sets(n_heads_per_layer, top_set, n_random: int, seed: int = 0, exclude=None):
    """Random head sets with the same count per layer as ``top_set``, excluding it.

    Parameters
    ----------
    n_heads_per_layer : sequence of int
    top_set : sequence of tuple of int
        Heads of the top-k set, one tuple per layer.
    n_random : int
        Wanted number of random sets ``R``.
    seed : int
    exclude : sequence of tuple of int, optional
        Heads no set may hold, one tuple per layer (e.g. a previous-token head that every circuit
        shares: a random set holding it would drop as much as any top set, whatever the top set is).
        The top set must avoid them too.

    Returns
    -------
    sets : list of tuple of tuple of int
        All other sets when there are at most ``n_random`` of them (``exact`` True), else
        ``n_random`` distinct sets sampled without replacement.
    exact : bool
    """
    top = tuple(tuple(sorted(h)) for h in top_set)
    ks = [len(h) for h in top]
    allowed = allowed_heads(n_heads_per_layer, exclude)
    if clash := [(l, h) for l, hs in enumerate(top) for h in hs if h not in allowed[l]]:
        raise ValueError(f"top_set: holds excluded head(s) {clash} (layer, head)")
    total = count_head_sets([len(a) for a in allowed], ks)
    if total - 1 <= n_random:
        per_layer = [list(itertools.combinations(a, k)) for a, k in zip(allowed, ks)]
        return [s for s in itertools.product(*per_layer) if s != top], True
    rng = np.random.default_rng(seed)
    seen, out = {top}, []
    while len(out) < n_random:                       # rejection: total >> n_random here
        s = tuple(tuple(sorted(rng.choice(a, size=k, replace=False).tolist())) for a, k in zip(allowed, ks))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out, False


def allowed_heads(n_heads_per_layer, exclude=None) -> list[list[int]]:
    """Per layer, the heads a set may hold: all of them but ``exclude`` (one tuple per layer)."""
    excl = [()] * len(n_heads_per_layer) if exclude is None else [tuple(h) for h in exclude]
    if len(excl) != len(n_heads_per_layer):
        raise ValueError(f"exclude: one tuple per layer needed ({len(n_heads_per_layer)}), got {len(excl)}")
    return [[h for h in range(n) if h not in set(e)] for n, e in zip(n_heads_per_layer, excl)]


# ---- comparing conditions ---------------------------------------------------------------------

def gap_per_example(data: AblationData) -> np.ndarray:
    """Top drop minus the mean random drop, per example: (n,)."""
    return data.top - data.random.mean(0)


def compare_conditions(a: AblationData, b: AblationData, n_resamples: int = 9999,
                       alternative: str = "two-sided", seed=0) -> PermutationResult:
    """Test whether conditions ``a`` and ``b`` differ in their top-vs-random gap.

    Paired over examples (the same probe examples evaluated under both conditions): the
    per-example gap difference is sign-flipped. The random-set mean is treated as fixed, so this
    tests example-level exchangeability, not set-level.
    """
    if a.n_examples != b.n_examples:
        raise ValueError(f"mismatched example counts between conditions: {a.condition!r} has "
                         f"{a.n_examples}, {b.condition!r} has {b.n_examples}; a paired "
                         "comparison needs the same examples")
    if not np.array_equal(np.sort(a.examples), np.sort(b.examples)):
        raise ValueError(f"example: conditions {a.condition!r} and {b.condition!r} hold "
                         "different example ids; a paired comparison needs the same examples")
    # pivots sort examples, so positions already align
    return sign_flip_test(gap_per_example(a) - gap_per_example(b), n_resamples, alternative, seed)


# ---- effect sizes ------------------------------------------------------------------------------

def _bootstrap_weights(n: int, n_boot: int, rng) -> np.ndarray:
    """Resampling counts per example, shape (n_boot, n), each row summing to n."""
    idx = rng.integers(0, n, (n_boot, n)) + (np.arange(n_boot) * n)[:, None]
    return np.bincount(idx.ravel(), minlength=n_boot * n).reshape(n_boot, n).astype(float)


def effect_sizes(data: AblationData, n_boot: int = 2000, ci: float = 0.95, seed=0
                 ) -> pd.DataFrame:
    """Effect sizes of the top-k ablation with percentile bootstrap intervals over examples.

    Quantities: ``top_drop``, ``random_drop`` (mean over sets), ``gap`` (their difference),
    ``ratio`` (top / random), ``d_z`` (mean / sd of per-example top drops) and ``z_random``
    ((top drop - mean random drop) / sd of random-set drops). ``z_random`` gets no interval
    (NaN): resampling examples adds its own noise to the between-set sd and biases it.

    Returns
    -------
    pandas.DataFrame
        ``quantity, estimate, lo, hi, ci``.
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci: must lie in (0, 1), got {ci}")
    n = data.n_examples
    W = _bootstrap_weights(n, n_boot, np.random.default_rng(seed))
    W = np.vstack([np.ones(n), W]) / n                                # row 0: the data itself
    top, top2 = W @ data.top, W @ data.top ** 2                       # (B+1,)
    sets = W @ data.random.T                                          # (B+1, R)
    rmean = sets.mean(1)
    rsd = sets.std(1, ddof=1) if sets.shape[1] > 1 else np.full_like(rmean, np.nan)
    tsd = np.sqrt(np.maximum(top2 - top ** 2, 0) * n / max(n - 1, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = {"top_drop": top, "random_drop": rmean, "gap": top - rmean, "ratio": top / rmean,
             "d_z": top / tsd, "z_random": (top - rmean) / rsd}
    a = (1 - ci) / 2
    no_ci = (np.nan, np.nan)
    rows = [(k, v[0], *(no_ci if k == "z_random" else np.nanquantile(v[1:], [a, 1 - a])))
            for k, v in q.items()]
    return pd.DataFrame(rows, columns=["quantity", "estimate", "lo", "hi"]).assign(ci=ci)


# ---- the whole table ---------------------------------------------------------------------------

def run_ablation_tests(table: pd.DataFrame, n_resamples: int = 9999, n_boot: int = 2000,
                       alpha: float = 0.05, seed: int = 0, higher_is_better: bool = True,
                       n_possible: int | None = None, compare=()) -> tuple[pd.DataFrame,
                                                                            pd.DataFrame]:
    """All tests for every condition (and metric) of a tidy ablation table, corrected.

    Parameters
    ----------
    table : pandas.DataFrame
        See the module docstring.
    n_resamples, n_boot : int
        Sign-flip resamples and bootstrap draws.
    alpha : float
        Family-wise / false-discovery level of the corrections.
    seed : int
    higher_is_better : bool
    n_possible : int, optional
        Number of possible same-count head sets (for the exact flag).
    compare : sequence of (str, str)
        Condition pairs whose top-vs-random gaps are compared.

    Returns
    -------
    tests : pandas.DataFrame
        One row per condition (x metric): drops, effect sizes with intervals, ``p_random``
        (top vs random sets), ``p_sign_flip`` (top drop > 0 over examples), ``p_sign_flip_gap``
        (top drop > mean random drop over examples, random sets held fixed) and their
        ``_holm`` / ``_fdr_bh`` adjustments across rows (each p column is its own family).
    comparisons : pandas.DataFrame
        One row per pair: gaps, difference, ``p`` and its adjustments.
    """
    check_table(table)
    metrics = sorted(table["metric"].unique()) if "metric" in table else [None]
    rows, comps, arrays = [], [], {}
    for metric in metrics:
        for cond in sorted(table["condition"].unique()):
            sub = table if metric is None else table[table["metric"] == metric]
            if not (sub["condition"] == cond).any():
                continue
            d = ablation_arrays(table, cond, metric, higher_is_better)
            arrays[cond, metric] = d
            rs = random_set_test(d.top.mean(), d.random.mean(1), n_possible=n_possible)
            sf = sign_flip_test(np.column_stack([d.top, gap_per_example(d)]), n_resamples,
                                seed=seed)
            eff = effect_sizes(d, n_boot=n_boot, seed=seed).set_index("quantity")
            row = {"condition": cond, "metric": metric, "n_examples": d.n_examples,
                   "n_random": d.random.shape[0], "p_random": rs.pvalue, "exact": rs.exact,
                   "p_sign_flip": sf[0].pvalue, "p_sign_flip_gap": sf[1].pvalue}
            for q in eff.index:
                row.update({q: eff.at[q, "estimate"], f"{q}_lo": eff.at[q, "lo"],
                            f"{q}_hi": eff.at[q, "hi"]})
            rows.append(row)
        for ca, cb in compare:
            if (ca, metric) not in arrays or (cb, metric) not in arrays:
                raise ValueError(f"compare: conditions {ca!r}, {cb!r} must both be in the table; "
                                 f"have {sorted(table['condition'].unique())}")
            a, b = arrays[ca, metric], arrays[cb, metric]
            res = compare_conditions(a, b, n_resamples, seed=seed)
            comps.append({"condition_a": ca, "condition_b": cb, "metric": metric,
                          "gap_a": gap_per_example(a).mean(), "gap_b": gap_per_example(b).mean(),
                          "diff": res.statistic, "p": res.pvalue})
    tests = pd.DataFrame(rows)
    for col in ("p_random", "p_sign_flip", "p_sign_flip_gap"):
        adj = correct_pvalues(tests[col], alpha)
        for m in ("holm", "fdr_bh"):
            tests[f"{col}_{m}"] = adj[f"p_{m}"].to_numpy()
    _add_design_floor(tests, alpha)
    comparisons = pd.DataFrame(comps, columns=["condition_a", "condition_b", "metric", "gap_a",
                                               "gap_b", "diff", "p"])
    if len(comparisons):
        adj = correct_pvalues(comparisons["p"], alpha)
        comparisons["p_holm"], comparisons["p_fdr_bh"] = adj["p_holm"], adj["p_fdr_bh"]
    if metrics == [None]:
        tests = tests.drop(columns="metric")
        comparisons = comparisons.drop(columns="metric")
    return tests, comparisons


def _add_design_floor(tests: pd.DataFrame, alpha: float) -> None:
    """Columns ``p_random_min`` / ``p_random_min_holm`` (the smallest attainable p of each row's
    random-set test, raw and after Holm over the rows) and ``can_reject``; a warning when a row's
    design cannot reach ``alpha`` whatever the drops (too few random sets, or too few possible)."""
    m = len(tests)
    floors = [smallest_attainable_p(r, m) for r in tests["n_random"]]
    tests["p_random_min"] = [f[0] for f in floors]
    tests["p_random_min_holm"] = [f[1] for f in floors]
    tests["can_reject"] = tests["p_random_min_holm"] <= alpha
    if m and not tests["can_reject"].all():
        worst = int(tests["n_random"].min())
        warnings.warn(f"the random-set test cannot reject at alpha {alpha} after Holm over {m} tests: with "
                      f"{worst} random sets its smallest attainable p is {min(1.0, m / (worst + 1)):.3g}; "
                      f"{random_sets_needed(m, alpha)} random sets are needed (python -m ihtrain.ablate "
                      f"--random-sets N; all sets are enumerated when fewer exist, and then the model has too "
                      f"few heads for this test: report the raw p and the floor)", stacklevel=3)
