"""Speed and accuracy of ihstats.emergence on simulated curves with known onsets.

    python benchmarks/bench_emergence.py            # speed (1,000 x 300) + accuracy (200 curves)
    python benchmarks/bench_emergence.py --fast     # smaller, for a quick look

Prints: seconds for the Bayesian detector on 1,000 curves of 300 checkpoints; 90% interval
coverage, median |log onset error| (dense schedules) and flat-curve false positives; and the
agreement of the three detectors on clean curves (Spearman rank correlation, median |log ratio|).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import spearmanr

from ihstats.emergence import detect
from ihstats.simulate import simulate_curve, simulate_curves


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fast", action="store_true", help="200 curves for speed, 100 for accuracy")
    a = p.parse_args()
    n_speed, n_acc = (200, 100) if a.fast else (1000, 200)

    curves = simulate_curves(n_speed, schedules=("linear",), n=300, seed=1)
    t0 = time.perf_counter()
    for c in curves:
        detect(c.steps, c.values, "bayes")
    dt = time.perf_counter() - t0
    print(f"speed: bayes on {n_speed} curves x 300 checkpoints: {dt:.2f} s ({1e3 * dt / n_speed:.1f} ms/curve; "
          f"target <= 10 s per 1,000)")

    cs = simulate_curves(n_acc, schedules=("linear", "mixed", "log", "sparse"), seed=0)
    rs = [detect(c.steps, c.values, "bayes", level=0.9) for c in cs]
    hit = np.array([r.onset_lo <= c.onset <= r.onset_hi for c, r in zip(cs, rs)])
    err = np.array([abs(np.log(r.onset / c.onset)) for c, r in zip(cs, rs)])
    print(f"accuracy ({n_acc} curves, shapes ramp/sigmoid/gompertz/rgompertz):")
    print(f"  90% interval coverage: {hit.mean():.3f} (target 0.85-0.95); censored: {np.mean([r.censored for r in rs]):.3f}")
    for sc in ("linear", "mixed", "log", "sparse"):
        i = [j for j, c in enumerate(cs) if c.schedule == sc]
        print(f"    {sc:7s} coverage {hit[i].mean():.3f}  median |log onset error| {np.median(err[i]):.4f}")
    dense = [j for j, c in enumerate(cs) if c.schedule in ("linear", "mixed")]
    print(f"  median |log onset error|, dense schedules: {np.median(err[dense]):.4f} (target <= 0.05)")
    flats = [simulate_curve("flat", sc, seed=i, noise=0.04) for i in range(n_acc // 2) for sc in ("mixed", "sparse")]
    fp = np.mean([not detect(c.steps, c.values).censored for c in flats])
    print(f"  flat curves called emergent: {fp:.3f} of {len(flats)} (target <= 0.05)")

    clean = simulate_curves(n_acc // 4, schedules=("mixed",), n=150, noise=0.01, seed=3)
    on = {m: np.array([detect(c.steps, c.values, m).onset for c in clean]) for m in ("bayes", "pelt", "threshold")}
    truth = np.array([c.onset for c in clean])
    print(f"agreement on {len(clean)} clean curves (mixed schedule, 150 checkpoints, noise 0.01):")
    for m1, m2 in (("bayes", "pelt"), ("bayes", "threshold"), ("pelt", "threshold")):
        rho = spearmanr(on[m1], on[m2])[0]
        d = np.log(on[m2] / on[m1])
        print(f"  {m1} vs {m2}: Spearman {rho:.3f}, median log({m2}/{m1}) {np.median(d):+.3f}, "
              f"median |log ratio| {np.median(np.abs(d)):.3f}")
    for m in on:
        print(f"  {m}: median log(onset/true) {np.median(np.log(on[m] / truth)):+.3f}")


if __name__ == "__main__":
    main()
