"""Overhead of dense metric logging: the same run with metrics on and off, side by side.

    python benchmarks/bench_metrics_overhead.py [--preset cpu-tiny] [--steps N] [--threads 0]

Both runs use the preset's default metric schedule (``metrics.n_evals`` evaluations, log-spaced early,
even later) over the same number of updates. With ``--steps`` shorter than the preset's budget the
schedule is compressed into fewer updates, so the measured overhead is an upper bound on the full
run's; the script also prints the projection for the full budget from the measured cost of one
evaluation and one update.
"""

from __future__ import annotations

import argparse
import tempfile

import pandas as pd
import torch

from ihtrain.config import resolve
from ihtrain.train import train_run


def timed_run(cfg) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as d:
        status = train_run(cfg, d, progress=False, make_figures=False)
        wall = float(pd.read_parquet(f"{d}/train.parquet")["wall_s"].iloc[-1])
        n_evals = 0
        if cfg.metrics.enabled:
            n_evals = pd.read_parquet(f"{d}/metrics.parquet")["step"].nunique()
    return wall, n_evals if status["status"] == "done" else -1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cpu-tiny")
    ap.add_argument("--steps", type=int, default=0, help="updates per run (0: the preset's budget)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    a = ap.parse_args()
    overrides = dict(s.split("=", 1) for s in a.set)
    overrides.update({"train.threads": a.threads, "train.budget": "steps"})
    full = resolve(a.preset, overrides=overrides)
    steps = a.steps or full.train.max_steps
    overrides["train.max_steps"] = steps
    on = resolve(a.preset, overrides=overrides)
    off = resolve(a.preset, overrides={**overrides, "metrics.enabled": "false"})
    wall_off, _ = timed_run(off)
    wall_on, n_evals = timed_run(on)
    per_step = wall_off / steps
    per_eval = max(wall_on - wall_off, 0.0) / max(n_evals, 1)
    print(f"{a.preset}: {steps} updates, {n_evals} evaluations, threads={torch.get_num_threads()}")
    print(f"metrics off {wall_off:8.1f} s   metrics on {wall_on:8.1f} s   ratio on/off = {wall_on / wall_off:.3f} "
          f"(overhead {100 * (wall_on / wall_off - 1):.1f}%)")
    print(f"one evaluation {per_eval * 1e3:.0f} ms = {per_eval / per_step:.2f} updates; projected overhead at the "
          f"preset's full budget ({full.train.max_steps} updates, {full.metrics.n_evals} evaluations): "
          f"{100 * full.metrics.n_evals * per_eval / (full.train.max_steps * per_step):.1f}%")


if __name__ == "__main__":
    main()
