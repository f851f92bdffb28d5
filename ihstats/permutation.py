"""Permutation tests on head-ablation drops: top-k heads against random head sets.

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

- :func:`random_set_test`: ``p = (1 + #{random drop >= top drop}) / (R + 1)``; exact when the
  random sets are all the other same-count-per-layer sets (see :func:`choose_head_sets`).
- :func:`sign_flip_test`: paired over examples; is the top-k drop's mean above 0?
- :func:`compare_conditions`: sign-flip test of the difference between two conditions in their
  per-example top-vs-random gap (examples paired across conditions).
- :func:`effect_sizes`: drops, gap, ratio, ``d_z`` and the top drop in random-set sd units, with
  bootstrap intervals over examples.
- :func:`run_ablation_tests`: all of the above per condition, with Holm and Benjamini-Hochberg
  corrections (``statsmodels.stats.multitest.multipletests``) across the rows.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ihstats.tables import numeric_column, rows

COLUMNS = ("condition", "example", "ablation", "set_id", "value")
ABLATIONS = ("none", "top", "random")
ALTERNATIVES = ("greater", "less", "two-sided")
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


def choose_head_sets(n_heads_per_layer, top_set, n_random: int, seed: int = 0):
    """Random head sets with the same count per layer as ``top_set``, excluding it.

    Parameters
    ----------
    n_heads_per_layer : sequence of int
    top_set : sequence of tuple of int
        Heads of the top-k set, one tuple per layer.
    n_random : int
        Wanted number of random sets ``R``.
    seed : int

    Returns
    -------
    sets : list of tuple of tuple of int
        All other sets when there are at most ``n_random`` of them (``exact`` True), else
        ``n_random`` distinct sets sampled without replacement.
    exact : bool
    """
    top = tuple(tuple(sorted(h)) for h in top_set)
    ks = [len(h) for h in top]
    total = count_head_sets(n_heads_per_layer, ks)
    if total - 1 <= n_random:
        per_layer = [list(itertools.combinations(range(n), k))
                     for n, k in zip(n_heads_per_layer, ks)]
        return [s for s in itertools.product(*per_layer) if s != top], True
    rng = np.random.default_rng(seed)
    seen, out = {top}, []
    while len(out) < n_random:                       # rejection: total >> n_random here
        s = tuple(tuple(sorted(rng.choice(n, size=k, replace=False).tolist()))
                  for n, k in zip(n_heads_per_layer, ks))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out, False


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


# ---- corrections and the whole table -----------------------------------------------------------

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
