"""Speed and calibration of ihstats.emergence on curves that are not the detector's own model.

    python benchmarks/bench_emergence.py            # full: 100 curves per cell (6,000 curves)
    python benchmarks/bench_emergence.py --quick    # 25 curves per cell, fewer speed curves

Prints:

1. speed: seconds for the Bayesian detector on 1,000 (quick: 200) curves of 300 checkpoints,
   and for ruptures PELT on the first 100 of them (the ratio is the speed claim);
2. the 90% interval coverage table of ``bayes`` per shape (ramp, sigmoid in log step, max over
   8 noisy heads, two-stage, late partial rise) x schedule (dense linear, log-spaced, mixed,
   30 log-spaced points) x noise sd (0.005, 0.02, 0.08), from :mod:`ihstats.simulate.coverage_curves`
   (AR(1) Student-t noise; shapes and onset estimands in its docstring). ``cov``: share of the
   detected (uncensored) curves whose interval holds the true onset; ``det``: share detected.
   Targets: cov >= 0.85 for ramp and maxheads cells, >= 0.80 elsewhere; cells below are marked *;
3. share of curves flagged ``multimodal`` per shape (wanted for twostage only), mean (cell range);
4. flat-curve false positives of every method (target <= 0.05), same noise levels and schedules.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ihstats.detectors import detect
from ihstats.simulate.coverage_curves import ONSET_SHAPES, simulate_onset_curve
from ihstats.simulate.curves import SCHEDULES, simulate_curves

NOISES = (0.005, 0.02, 0.08)
TARGET = {"ramp": 0.85, "maxheads": 0.85}


def speed(n_curves: int) -> None:
    curves = simulate_curves(n_curves, schedules=("linear",), n=300, seed=1)
    t0 = time.perf_counter()
    for c in curves:
        detect(c.steps, c.values, "bayes")
    dt = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in curves[:100]:
        detect(c.steps, c.values, "pelt")
    dp = (time.perf_counter() - t0) / min(100, n_curves)
    print(f"speed: bayes on {n_curves} curves x 300 checkpoints: {dt:.2f} s ({1e3 * dt / n_curves:.1f} ms/curve); "
          f"pelt {1e3 * dp:.1f} ms/curve; pelt/bayes = {dp / (dt / n_curves):.0f}x")


def _cell_seed(shape: str, schedule: str, noise: float) -> int:
    return 100_000 * (100 * ONSET_SHAPES.index(shape) + 10 * SCHEDULES.index(schedule) + NOISES.index(noise))


def coverage_cell(shape: str, schedule: str, noise: float, n: int) -> dict[str, float]:
    hits, det, multi = [], 0, 0
    for i in range(n):
        c = simulate_onset_curve(shape, schedule, noise, seed=_cell_seed(shape, schedule, noise) + i)
        r = detect(c.steps, c.values, "bayes", level=0.9)
        multi += bool(getattr(r, "multimodal", False))
        if r.censored:
            continue
        det += 1
        hits.append(r.onset_lo <= c.onset <= r.onset_hi)
    return {"cov": float(np.mean(hits)) if hits else np.nan, "det": det / n, "multi": multi / n}


def coverage_table(n: int) -> None:
    print(f"\n90% interval coverage of bayes ({n} curves per cell; cov among detected, det = share detected)")
    head = "".join(f"  {sc:>6s}/{z:<5g}" for sc in SCHEDULES for z in NOISES)
    print(f"{'shape':9s}{head}")
    worst: dict[str, float] = {}
    multi: dict[str, list[float]] = {}
    for shape in ONSET_SHAPES:
        cells = [coverage_cell(shape, sc, z, n) for sc in SCHEDULES for z in NOISES]
        multi[shape] = [c["multi"] for c in cells]
        mark = lambda c: "*" if c["cov"] < TARGET.get(shape, 0.80) else " "  # noqa: E731
        print(f"{shape:9s}" + "".join(f"  {c['cov']:5.2f}{mark(c)}({c['det']:4.2f})" for c in cells))
        worst[shape] = min(c["cov"] for c in cells)
    print("worst cell per shape: " + ", ".join(f"{k} {v:.2f}" for k, v in worst.items()))
    print("flagged multimodal (twostage: wanted; others: false flags): "
          + ", ".join(f"{k} {np.mean(v):.2f} ({min(v):.2f}-{max(v):.2f})" for k, v in multi.items()))


def false_positives(n: int) -> None:
    print(f"\nflat curves called emergent ({n} per schedule x noise, {n * 12} per method; target <= 0.05)")
    flats = {z: [simulate_onset_curve("flat", sc, z, seed=7_000_000 + 1000 * SCHEDULES.index(sc) + i)
                 for sc in SCHEDULES for i in range(n)] for z in NOISES}
    for m in ("bayes", "threshold", "pelt"):
        fp = {z: np.mean([not detect(c.steps, c.values, m).censored for c in cs]) for z, cs in flats.items()}
        print(f"  {m:9s} " + "  ".join(f"sd {z:g}: {v:.3f}" for z, v in fp.items()))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="25 curves per cell, 200 speed curves")
    p.add_argument("--per-cell", type=int, default=None, help="curves per coverage cell (default 100, quick 25)")
    p.add_argument("--skip-speed", action="store_true")
    a = p.parse_args()
    n = a.per_cell or (25 if a.quick else 100)
    if not a.skip_speed:
        speed(200 if a.quick else 1000)
    coverage_table(n)
    false_positives(n // 2 if a.quick else 50)


if __name__ == "__main__":
    main()
