"""The successor ceilings and chance levels of runs whose logs predate them (issue 65), from each
run's own generator, and the provisional class each crossing gets with them.

    python analyses/legacy_ceilings.py data/reference_runs/bxc-cross
    python analyses/legacy_ceilings.py data/reference_runs/law-mechanism --out results/legacy_ceilings

Runs logged before issue 65 hold neither the general probe nor the successor control, so none is
certified (``ihstats.certificate``); a crossing of ``ps_indist`` gets a provisional class read from
what the logs hold. This script rebuilds each run's data source from its ``config.json``
(``ihtrain.data.build_source``, the generator and its transitions), its held-out sequences and their
copy labels exactly as the trainer does, and computes the ceilings the trainer logs today
(``ihstats.base.chance.indist_ceilings``): uniform chance of ``ps_indist`` and of its successor-controlled
form, and the ``ps_indist`` of the oracle successor head and of its PMI-sharpened form. They join the
run's metrics as model-level rows, so ``ihstats.certificate.provisional_class`` can tell a successor
lookup (``ps_indist`` within ``CERT_MARGIN`` of the sharpened ceiling) from an in-distribution lookup.
Sources without successor statistics (builtin text) are skipped with a note.

Writes --out/legacy_ceilings.csv (one row per run) and prints the per-cell ranges.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ihstats.certificate import certify_run
from ihstats.base.cli_checks import claim_folder
from ihstats.base.fileio import UnreadableFile, atomic_write_text, read_json, read_parquet
from ihtrain.config import ConfigError, from_dict
from ihtrain.data import build_source, repeat_start_of
from ihtrain.data.successors import source_successors
from ihstats.base.command import out_folder, run_cli

CEILINGS = ("chance_indist", "chance_ctrl", "ceil_succ_indist", "ceil_succ_pmi_indist", "ceil_succ_ctrl")


def run_ceilings(run_dir: Path) -> dict | None:
    """One run's ceilings from its generator (None when its source has no successor statistics)."""
    meta = read_json(run_dir / "config.json", "run's config", f"is {run_dir} a run directory of ihtrain.run.train?")
    try:
        cfg = from_dict(meta["config"])
    except (ConfigError, KeyError) as e:
        raise UnreadableFile(run_dir / "config.json", f"not a run config this version reads ({e})") from None
    C = cfg.train.context
    source = build_source(cfg.data, seed=cfg.seed, progress=False, context=C)
    succ = source_successors(source)
    if succ is None:
        return None
    val = np.asarray(source.val_sample(cfg.metrics.val_seqs, C + 1), dtype=np.int64)
    return {"meta": meta, **succ.labelled(val, repeat_start_of(cfg.data, C + 1))["ceilings"]}


def with_ceilings(metrics: pd.DataFrame, ceilings: dict) -> pd.DataFrame:
    """``metrics`` with the ceilings as model-level rows at every evaluated step."""
    steps = metrics["step"].unique()
    rows = pd.DataFrame([{"step": s, "metric": k, "layer": -1, "head": -1, "value": ceilings[k]}
                         for s in steps for k in CEILINGS])
    return pd.concat([metrics, rows], ignore_index=True)


def grid_table(grid: Path) -> pd.DataFrame:
    """One row per run of ``grid``: B, C, seed, the ceilings, final max ps_indist, provisional class."""
    rows = []
    dirs = [grid] if (grid / "config.json").is_file() else sorted(p.parent for p in grid.glob("*/config.json"))
    for rd in dirs:
        c = run_ceilings(rd)
        if c is None:
            print(f"note: {rd}: its source has no successor statistics; skipped", file=sys.stderr)
            continue
        meta = c.pop("meta")
        m = read_parquet(rd / "metrics.parquet", ["step", "metric", "layer", "head", "value"], "metric log")
        cert = certify_run(with_ceilings(m, c), meta)
        last = m[(m["step"] == m["step"].max()) & (m["metric"] == "ps_indist")]["value"]
        t = meta["config"]["train"]
        rows.append({"grid": grid.name, "run_id": meta["run_id"], "B": t["batch_size"], "C": t["context"],
                     "seed": meta.get("seed"), **c, "ps_indist_end": float(last.max()) if len(last) else np.nan,
                     "crossing": cert.crossing_step, "provisional": cert.provisional})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("grids", nargs="+", type=Path, help="grid or run directories")
    p.add_argument("--out", type=Path, default=None, help="output folder (default results/legacy_ceilings)")
    a = p.parse_args(argv)
    try:
        a.out = out_folder(a.out, "legacy_ceilings", inputs=a.grids)
        frames = [grid_table(g) for g in a.grids]
    except (UnreadableFile, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    table = pd.concat([f for f in frames if len(f)], ignore_index=True)
    if table.empty:
        print("error: no run with successor statistics in the given grids", file=sys.stderr)
        return 2
    claim_folder(a.out)  # made and marked as the package's before the first write
    atomic_write_text(a.out / "legacy_ceilings.csv", table.to_csv(index=False))
    cells = table.groupby(["grid", "B", "C"]).agg(
        **{k: (k, lambda v: f"{v.min():.3f}-{v.max():.3f}") for k in (*CEILINGS, "ps_indist_end")},
        classes=("provisional", lambda v: ", ".join(f"{n} {k}" for k, n in v.value_counts().items())))
    print(cells.to_string())
    print(f"wrote {len(table)} runs to {a.out / 'legacy_ceilings.csv'}")
    return 0


if __name__ == "__main__":
    run_cli(main)
