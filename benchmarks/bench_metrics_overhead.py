"""Overhead of dense metric logging: the same run with metrics on and off, side by side.

    python benchmarks/bench_metrics_overhead.py [--preset cpu-tiny] [--steps N] [--threads 0]
    python benchmarks/bench_metrics_overhead.py --grid bxc-law --cell 0 --steps 600 --threads 1

``--grid G --cell K`` takes the K-th cell of a grid preset (the default grid's runs) instead of a
run preset. A third run without the in-distribution probes (``ps_indist``, ``indist_gain``: issue
52) prints what they add to a run's wall time on their own.

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

from ihstats.base.contract import OPT_IN_METRICS
from ihtrain.config import apply_overrides, resolve
from ihtrain.grid.spec import load_grid_preset
from ihtrain.metrics import REGISTRY
from ihtrain.run.train import train_run

INDIST = ("ps_indist", "indist_gain")


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
    ap.add_argument("--grid", default=None, help="a grid preset: time one of its cells instead")
    ap.add_argument("--cell", type=int, default=0, help="with --grid: which run of the grid (default 0)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    a = ap.parse_args()
    overrides = dict(s.split("=", 1) for s in a.set)
    overrides.update({"train.threads": a.threads, "train.budget": "steps"})
    make = (lambda o: resolve(a.preset, overrides=o)) if a.grid is None else \
        (lambda o: apply_overrides(load_grid_preset(a.grid).expand()[a.cell].config, o))
    full = make(overrides)
    steps = a.steps or full.train.max_steps
    overrides["train.max_steps"] = steps
    on = make(overrides)
    off = make({**overrides, "metrics.enabled": "false"})
    rest = [m for m in REGISTRY if m not in OPT_IN_METRICS and m not in INDIST]
    older = make({**overrides, "metrics.include": rest})
    wall_off, _ = timed_run(off)
    wall_on, n_evals = timed_run(on)
    wall_older, _ = timed_run(older)
    print(f"in-distribution probes: with {wall_on:8.1f} s   without {wall_older:8.1f} s   ratio = "
          f"{wall_on / wall_older:.3f} (they add {100 * (wall_on / wall_older - 1):.1f}%)")
    per_step = wall_off / steps
    per_eval = max(wall_on - wall_off, 0.0) / max(n_evals, 1)
    print(f"{a.preset}: {steps} updates, {n_evals} evaluations, threads={torch.get_num_threads()}")
    print(f"metrics off {wall_off:8.1f} s   metrics on {wall_on:8.1f} s   ratio on/off = {wall_on / wall_off:.3f} "
          f"(overhead {100 * (wall_on / wall_off - 1):.1f}%)")
    print(f"one evaluation {per_eval * 1e3:.0f} ms = {per_eval / per_step:.2f} updates; projected overhead at the "
          f"preset's full budget ({full.train.max_steps} updates, {full.metrics.n_evals} evaluations): "
          f"{100 * full.metrics.n_evals * per_eval / (full.train.max_steps * per_step):.1f}%")
    per_new = max(wall_on - wall_older, 0.0) / max(n_evals, 1)
    print(f"the in-distribution probes alone: {per_new * 1e3:.0f} ms per evaluation; projected at the full budget: "
          f"{100 * full.metrics.n_evals * per_new / (full.train.max_steps * per_step):.1f}% of the run's wall time")


if __name__ == "__main__":
    main()
