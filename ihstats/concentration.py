"""Concentration of a per-head score: how few heads carry it (Sabry and Belz 2025's claim that
natural-only circuits are more concentrated), per layer and over training.

From the per-head rows a run already logs (``metrics.parquet``: every evaluation has every head's
score), :func:`layer_concentration` gives, per step and layer, the effective number of heads
``(sum s)^2 / sum s^2`` and the top share (the ``k = max(1, round_half_up(frac H))`` largest
scores over the summed positive score; ``frac = 0.02``, the paper's top 2%, is one head for
``H < 75``). :func:`concentration_at_level` reads them at the first step where max-over-heads
reaches a level, so conditions are compared at matched PS rather than at matched step.
:func:`grid_concentration` does both for every run of a grid, with the run's factors:

    python -m ihstats.concentration GRID_DIR [--metric ps] [--level 0.2] [--frac 0.02] --out DIR
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ihstats.base.cli_checks import Range, check_args, claim_folder
from ihstats.base.contract import SchemaError, max_over_heads
from ihstats.base.io import load_grid
from ihstats.base.fileio import atomic_write_csv
from ihstats.base.command import out_folder, run_cli


def concentration(scores, k: int) -> tuple[float, float]:
    """Top-k share and effective number of heads of a score, over heads with positive score.

    Parameters
    ----------
    scores : array_like
        Per-head scores (any shape; flattened).
    k : int
        How many of the largest scores the share counts (>= 1).

    Returns
    -------
    tuple of float
        ``(sum of the k largest positive scores / sum of positive scores, (sum s)^2 / sum s^2)``;
        ``(0.0, 0.0)`` when no score is positive.
    """
    if k < 1:
        raise ValueError(f"k: must be >= 1, got {k}")
    s = np.asarray(scores, dtype=np.float64).ravel()
    s = np.sort(s[s > 0])[::-1]
    if s.size == 0:
        return 0.0, 0.0
    total = s.sum()
    return float(s[:k].sum() / total), float(total ** 2 / np.sum(s ** 2))


def layer_concentration(metrics: pd.DataFrame, metric: str = "ps", frac: float = 0.02) -> pd.DataFrame:
    """Per step and layer: ``top_share`` and ``n_eff`` of one run's per-head ``metric``.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Tidy rows of one run (``step, metric, layer, head, value``).
    metric : str
        A per-head metric (default ``ps``).
    frac : float
        Share of a layer's heads counted by ``top_share``: ``k = max(1, round_half_up(frac H))``.

    Returns
    -------
    pandas.DataFrame
        Columns ``step, layer, k, top_share, n_eff`` (NaN heads skipped).
    """
    if not 0 < frac <= 1:
        raise ValueError(f"frac: must lie in (0, 1], got {frac}")
    rows = metrics[(metrics["metric"] == metric) & (metrics["head"] >= 0)]
    if rows.empty:
        raise ValueError(f"metric: no per-head rows of {metric!r}; have {sorted(metrics['metric'].unique())}")
    out = []
    for (step, layer), g in rows.groupby(["step", "layer"], sort=True):
        v = g["value"].to_numpy(float)
        k = max(1, int(np.floor(frac * len(v) + 0.5)))
        share, neff = concentration(v[np.isfinite(v)], k)
        out.append({"step": int(step), "layer": int(layer), "k": k, "top_share": share, "n_eff": neff})
    return pd.DataFrame(out)


def concentration_at_level(metrics: pd.DataFrame, level: float, metric: str = "ps",
                           frac: float = 0.02) -> pd.DataFrame:
    """:func:`layer_concentration` at the first step where max-over-heads ``metric`` >= ``level``
    (one row per layer, plus ``level``); empty when the run never reaches it."""
    curve = max_over_heads(metrics, metric)
    hit = curve.index[curve.to_numpy() >= level]
    if not len(hit):
        return pd.DataFrame(columns=["step", "layer", "k", "top_share", "n_eff", "level"])
    step = int(hit[0])
    conc = layer_concentration(metrics[metrics["step"] == step], metric, frac)
    return conc.assign(level=float(level))


def grid_concentration(grid_dir: str | Path, metric: str = "ps", level: float = 0.2,
                       frac: float = 0.02) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per run of a grid: (:func:`layer_concentration` over training, :func:`concentration_at_level`),
    each row carrying the run's ``run_id`` and factors (``biinduct``, ``seed``, ...)."""
    grid = load_grid(grid_dir)
    over, at = [], []
    for run in grid.runs.to_dict("records"):
        m = grid.metrics[grid.metrics["run_id"] == run["run_id"]]
        keys = {k: v for k, v in run.items() if k not in ("path", "status")}
        over.append(layer_concentration(m, metric, frac).assign(**keys))
        at.append(concentration_at_level(m, level, metric, frac).assign(**keys))
    return pd.concat(over, ignore_index=True), pd.concat(at, ignore_index=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ihstats.concentration", description="Per-layer "
                                "concentration of a per-head score (effective heads, top share) over "
                                "training and at matched max score, for every run of a grid.")
    p.add_argument("grid", help="grid (or any directory of run directories)")
    p.add_argument("--metric", default="ps", help="per-head metric (default ps)")
    p.add_argument("--level", type=float, default=0.2, help="max-over-heads level for the matched "
                   "comparison (default 0.2)")
    p.add_argument("--frac", type=float, default=0.02, help="share of a layer's heads in the top share "
                   "(default 0.02: the paper's top 2%%, one head below 75 heads per layer)")
    p.add_argument("--out", default=None, help="folder for concentration.csv and concentration_at_level.csv "
                   "(default results/concentration/<name of the grid>)")
    args = p.parse_args(argv)
    check_args(p, args, {"level": Range(0, 1, lo_open=True), "frac": Range(0, 1, lo_open=True)})
    args.out = out_folder(args.out, "concentration", args.grid, inputs=[args.grid], parser=p)
    try:
        over, at = grid_concentration(args.grid, args.metric, args.level, args.frac)
    except (FileNotFoundError, ValueError, SchemaError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    claim_folder(out)  # made and marked as the package's before the first write
    atomic_write_csv(out / "concentration.csv", over, index=False)
    atomic_write_csv(out / "concentration_at_level.csv", at, index=False)
    print(at.to_string(index=False, float_format=lambda v: f"{v:.3f}") if len(at) else
          f"no run reached max {args.metric} >= {args.level}")
    print(f"wrote {out}/concentration.csv ({len(over)} rows) and concentration_at_level.csv")
    return 0


if __name__ == "__main__":
    run_cli(main)


__all__ = ["concentration", "concentration_at_level", "grid_concentration", "layer_concentration"]
