"""Where each run's repeat probe sits against the positions where its training data holds repeats.

    python analyses/probe_audit.py                        # every shipped grid under data/reference_runs
    python analyses/probe_audit.py runs/bxc-law          # -> results/probe_audit/bxc-law/probe_audit.csv

The design check of ``python -m ihtrain.grid`` (``ihtrain.grid.expand.probe_region_check``) applied
after the fact to finished runs: for each cell, the repeat probe's ``n`` PS queries sit at positions
``[n, 2n - 1]`` and the source declares its repeat region ``[start, C - 1]``
(``ihtrain.data.repeat_start_of``). A cell with fewer than half of its queries in the region had its
PS-probe onset measured off the training distribution ("off"; "partly" when some overlap; "in"
otherwise). Runs that logged ``ps_indist`` have the in-distribution onset beside it.

Writes --out/probe_audit.csv (one row per grid and cell) and prints it. The default --out is named by
the inputs (``results/probe_audit/<grid>``, ``<grid>+<grid>`` for several, ``shipped`` for the default),
so a second audit of other grids does not replace the first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ihstats.base.cli_checks import claim_folder
from ihstats.base.fileio import UnreadableFile, atomic_write_text, read_json, read_parquet
from ihtrain.config import ConfigError, from_dict
from ihtrain.data import probe_in_region
from ihstats.base.command import out_folder, run_cli

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "data" / "reference_runs"


def run_dirs(grid: Path) -> list[Path]:
    """The run directories under ``grid`` (itself, when it is one)."""
    return [grid] if (grid / "config.json").is_file() else sorted(p.parent for p in grid.glob("*/config.json"))


def audit_grid(grid: Path) -> pd.DataFrame:
    """One row per cell of ``grid``: C, B, probe n, queries in the repeat region, the region, verdict."""
    rows = []
    for rd in run_dirs(grid):
        meta = read_json(rd / "config.json", "run's config", f"is {rd} a run directory of ihtrain.run.train?")
        try:
            cfg = from_dict(meta["config"])
        except (ConfigError, KeyError) as e:
            raise UnreadableFile(rd / "config.json", f"not a run config this version reads ({e})") from None
        n, inside, start = probe_in_region(cfg)
        logged = set(read_parquet(rd / "metrics.parquet", ["metric"], "metric log")["metric"].unique()) \
            if (rd / "metrics.parquet").is_file() else set()
        C = cfg.train.context
        rows.append({"grid": grid.name, "cell_id": meta.get("cell_id", ""), "source": cfg.data.source,
                     "B": cfg.train.batch_size, "C": C, "probe_n": n, "queries": f"{n}-{2 * n - 1}",
                     "repeat_region": f"{start}-{C - 1}", "in_region": inside,
                     "verdict": "in" if 2 * inside >= n else ("partly" if inside else "off"),
                     "ps_indist_logged": "ps_indist" in logged})
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows)
    keys = [c for c in table.columns if c not in ("cell_id",)]
    return table.groupby(keys, as_index=False, sort=False).agg(runs=("cell_id", "size"))


def audit_name(grids: list[Path]) -> str:
    """The default output folder's name: the grids' own names joined by ``+`` (``shipped`` for none;
    past 80 characters, the first name and a count)."""
    if not grids:
        return "shipped"
    names = [g.resolve().name for g in grids]
    joined = "+".join(names)
    return joined if len(joined) <= 80 else f"{names[0]}+{len(names) - 1}-more"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("grids", nargs="*", type=Path, help="grid or run directories (default: every shipped grid)")
    p.add_argument("-o", "--out", type=Path, default=None,
                   help="output folder (default: results/probe_audit/<the grids' names, or 'shipped'>)")
    a = p.parse_args(argv)
    grids = a.grids or sorted(d for d in SHIPPED.iterdir() if d.is_dir())
    try:
        a.out = out_folder(a.out, "probe_audit", sub=audit_name(a.grids), inputs=grids)
        frames = [audit_grid(g) for g in grids]
    except (UnreadableFile, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    table = pd.concat([f for f in frames if len(f)], ignore_index=True)
    claim_folder(a.out)  # made and marked as the package's before the first write
    atomic_write_text(a.out / "probe_audit.csv", table.to_csv(index=False))
    print(table.to_string(index=False))
    print(f"wrote {len(table)} cells to {a.out / 'probe_audit.csv'}")
    return 0


if __name__ == "__main__":
    run_cli(main)
