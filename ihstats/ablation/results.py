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

- :func:`~ihstats.ablation.permutation.random_set_test`: ``p = (1 + #{random drop >= top drop}) / (R + 1)``;
  exact when the random sets are all the other same-count-per-layer sets (see
  :func:`ihstats.ablation.spec.choose_head_sets`).
- :func:`~ihstats.ablation.permutation.sign_flip_test`: paired over examples; is the top-k drop's mean
  above 0?
- :func:`compare_conditions`: sign-flip test of the difference between two conditions in their
  per-example top-vs-random gap (examples paired across conditions).
- :func:`effect_sizes`: drops, gap, ratio, ``d_z`` and the top drop in random-set sd units, with
  bootstrap intervals over examples.
- :func:`run_ablation_tests`: all of the above per condition, with Holm and Benjamini-Hochberg
  corrections (``statsmodels.stats.multitest.multipletests``) across the rows.

:class:`AblationResults` holds a table's tests as every fit's results do
(:class:`ihstats.fit_protocol.FitResults`: ``summary()``, ``diagnostics()``, ``save(dir)``).

The tests themselves (the p-value rule, sign flips, the corrections) are
:mod:`ihstats.ablation.permutation`; the table's columns and the head-set design are
:mod:`ihstats.ablation.spec`, its checks and pivot :mod:`ihstats.ablation.data`; this module puts the
tests, effect sizes and the design's floor together.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ihstats.ablation.data import AblationData, check_table, prepare
from ihstats.ablation.spec import AblationError, AblationSpec
from ihstats.ablation.permutation import (
    PermutationResult, correct_pvalues, random_set_test, random_sets_needed, sign_flip_test, smallest_attainable_p,
)
from ihstats.base.fileio import atomic_write_text

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
            d = prepare(table, AblationSpec(cond, metric, higher_is_better))
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



#: the key -> value recall's per-prompt table (``python -m ihtrain.ablate RUN --icl``: ``icl_kv_prompts.csv``)
KV_PROMPT_COLUMNS = ("control", "prompt", "logprob")


def kv_true_above(prompts: pd.DataFrame, n_resamples: int = 9999, seed: int = 0) -> pd.DataFrame:
    """Per control of the key -> value recall, the one-sided paired sign-flip p over prompts that
    the true pairs' answer log-prob is above the control's (the controls share the true prompts'
    keys): ``control, n_prompts, p_true_above``. The trainer measures; this tests (issue 67)."""
    missing = sorted(set(KV_PROMPT_COLUMNS) - set(prompts.columns))
    if missing:
        raise AblationError(f"key-value prompts table: no column {missing}; write it with python -m ihtrain.ablate RUN_DIR --icl")
    wide = prompts.pivot(index="prompt", columns="control", values="logprob")
    if "true" not in wide:
        raise AblationError("key-value prompts table: no 'true' control to compare the others with")
    return pd.DataFrame([{"control": c, "n_prompts": int(wide[c].notna().sum()),
                          "p_true_above": sign_flip_test((wide["true"] - wide[c]).to_numpy(), n_resamples,
                                                         "greater", seed=seed).pvalue}
                         for c in prompts["control"].drop_duplicates() if c != "true"])

@dataclass
class AblationResults:
    """A table's tests (:func:`run_ablation_tests`), with the seed-pooled ones when there are any
    (:func:`ihstats.ablation.pooled.pooled_ablation_tests`), as every fit's results
    (:class:`ihstats.fit_protocol.FitResults`)."""

    tests: pd.DataFrame
    comparisons: pd.DataFrame
    pooled: pd.DataFrame = field(default_factory=pd.DataFrame)

    def summary(self) -> pd.DataFrame:
        """One row per test (condition[, metric]): drops, gap, p-values, corrections, the floor."""
        return self.tests

    def diagnostics(self) -> list[str]:
        """The rows whose design cannot reject at its level, whatever the drops (the floor)."""
        if "can_reject" not in self.tests:
            return []
        return [f"{r['condition']}{' ' + str(r['metric']) if r.get('metric') else ''}: the random-set test "
                f"cannot reject (smallest attainable p "
                f"{r['p_random_min_holm']:.3g} after Holm, {r['n_random']} random sets)"
                for r in self.tests.to_dict("records") if not r["can_reject"]]

    def save(self, out_dir) -> dict[str, Path]:
        """``tests.csv``, ``comparisons.csv`` and, with seed-pooled tests, ``pooled.csv``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        frames = {"tests": self.tests, "comparisons": self.comparisons}
        if len(self.pooled):
            frames["pooled"] = self.pooled
        return {name: atomic_write_text(out / f"{name}.csv", frame.to_csv(index=False))
                for name, frame in frames.items()}
