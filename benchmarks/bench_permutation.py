"""Time our sign-flip test against scipy.stats.permutation_test on the same problem.

    python benchmarks/bench_permutation.py [--n-examples 1000] [--n-resamples 9999] [--repeats 3]

Problem: paired sign-flip test of the mean of ``n`` per-example top-k drops, one-sided.
scipy runs with ``vectorized=True, permutation_type="samples"``. Prints both times (best of
``--repeats``), their ratio and both p-values (they agree within Monte-Carlo error).
"""

import argparse
import time

import numpy as np
from scipy import stats

from ihstats.ablation.permutation import sign_flip_test


def best_time(fn, repeats):
    best, out = np.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-examples", type=int, default=1000, help="examples (default 1000)")
    ap.add_argument("--n-resamples", type=int, default=9999, help="resamples (default 9999)")
    ap.add_argument("--repeats", type=int, default=3, help="timing repeats, best kept")
    args = ap.parse_args(argv)
    d = np.random.default_rng(0).normal(0.05, 1.0, args.n_examples)
    R = args.n_resamples

    t_ours, ours = best_time(lambda: sign_flip_test(d, R, "greater", seed=1), args.repeats)
    t_scipy, ref = best_time(lambda: stats.permutation_test(
        (d,), lambda x, axis: np.mean(x, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=R, alternative="greater", random_state=1), args.repeats)
    se = np.sqrt(2 * ref.pvalue * (1 - ref.pvalue) / R)
    print(f"problem: sign-flip test, n = {args.n_examples} examples, {R} resamples")
    print(f"ihstats.ablation.permutation.sign_flip_test : {t_ours * 1e3:8.1f} ms   p = {ours.pvalue:.4f}")
    print(f"scipy.stats.permutation_test       : {t_scipy * 1e3:8.1f} ms   p = {ref.pvalue:.4f}")
    print(f"ratio scipy / ours: {t_scipy / t_ours:.1f}x   |p diff| = "
          f"{abs(ours.pvalue - ref.pvalue):.4f} (MC se of the difference {se:.4f})")


if __name__ == "__main__":
    main()
