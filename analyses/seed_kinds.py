"""The variance of each seed kind at one cell (issue 66), by the method of moments.

Weight seed x data seed crossed at one (B, C) cell, one run per pair (--preset bxc-seed-kinds: 3 x 3).

    python analyses/seed_kinds.py runs/bxc-seed-kinds        # after python -m ihtrain.grid --preset bxc-seed-kinds
    python analyses/seed_kinds.py --emergence emergence.csv  # an emergence table of one cell's crossed block
    python analyses/seed_kinds.py GRID --cell CELL_ID         # one cell of a grid of several

Onsets: :mod:`ihstats.emergence` on the grid (the certified onset where the logs hold the general
probe, as every fit reads them; the Bayesian detector, max over heads), or the given table. The
block: log onset per (weight seed, data seed), one run per pair. The statistic,
:mod:`ihstats.law.seed_block`: the two-way crossed random-effects model without replication, by
the ANOVA method of moments; each kind's sd with its MLS interval and its F test against the
residual; the residual sd holds the interaction of the kinds and each run's own noise, which one
run per pair cannot separate. The law's ``--seed-kinds`` fit (analyses/fit_upt_law.py) needs B and
C to vary; this reads the block alone.

Writes into --out (default results/seed_kinds/<grid or table name>): block.csv (log onsets,
weight seeds down, data seeds across), components.csv (kind, sd, lo, hi, F, df, df_den, p, var_mom,
ms) and summary.md. A block with a pair that did not form, or has no run yet, is not testable on
certified onsets: block.csv and summary.md say which, no components.csv, exit 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ihstats.base.cli_checks import PROBABILITY_OPEN, check_args, claim_folder
from ihstats.base.command import EXIT_BAD_INPUT, EXIT_FAILED, out_folder, run_cli
from ihstats.base.display import CSV_FLOAT_FORMAT
from ihstats.base.fileio import UnreadableFile, atomic_write_csv, atomic_write_text, read_table
from ihstats.base.io import load_grids
from ihstats.emergence import emergence_table, onset_metric
from ihstats.law.seed_block import NotTestable, SeedBlock, SeedBlockError, log_onset_block, seed_block
from ihstats.tables import outcome_basis

DEFAULT_GRID = Path("runs/bxc-seed-kinds")  # where python -m ihtrain.grid --preset bxc-seed-kinds writes
COLUMNS = ["kind", "sd", "lo", "hi", "F", "df", "df_den", "p", "var_mom", "ms"]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python analyses/seed_kinds.py", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[1:]))
    p.add_argument("grid", nargs="?", type=Path, default=None,
                   help=f"the grid directory (default {DEFAULT_GRID}: python -m ihtrain.grid --preset bxc-seed-kinds)")
    p.add_argument("--emergence", type=Path, default=None,
                   help="an emergence table instead of a grid (python -m ihstats.emergence GRID writes one)")
    p.add_argument("--cell", default=None, help="keep the runs of this cell_id (a table or grid of several cells)")
    p.add_argument("--level", type=float, default=0.9, help="the intervals' level (default 0.9)")
    p.add_argument("--out", type=Path, default=None, help="output folder (default results/seed_kinds/<input name>)")
    args = p.parse_args(argv)
    check_args(p, args, {"level": PROBABILITY_OPEN})
    if args.grid and args.emergence:
        p.error("give a grid or --emergence, not both")
    src = args.emergence or args.grid or DEFAULT_GRID
    if args.emergence is None and not src.is_dir():
        p.error(f"grid {src}: not a directory; train it first (python -m ihtrain.grid --preset bxc-seed-kinds) "
                "or pass --emergence TABLE")
    args.source = src
    args.out = out_folder(args.out, "seed_kinds", src, inputs=[src], parser=p)
    return args


def emergence_of_grid(grid: Path) -> pd.DataFrame:
    """The grid's emergence table as every fit reads it: the onset :func:`onset_metric` picks
    (certified where the logs hold the general probe), max over heads, the Bayesian detector."""
    data = load_grids([grid], on_error="skip")
    for why in data.skipped:
        print(f"warning: {why} (run skipped)", file=sys.stderr)
    return emergence_table(data, metric=onset_metric(data.metrics, "auto"), head="max", method="bayes",
                           on_error="skip")


def one_cell(table: pd.DataFrame, cell: str | None) -> pd.DataFrame:
    if cell is None:
        return table
    if "cell_id" not in table.columns:
        raise SeedBlockError("cell_id: not in the table, so --cell cannot pick a cell; drop --cell")
    kept = table[table["cell_id"].astype(str) == cell]
    if kept.empty:
        cells = ", ".join(sorted(table["cell_id"].astype(str).unique()))
        raise SeedBlockError(f"--cell {cell}: no run; the table's cells: {cells}")
    return kept


def block_csv(runs: pd.DataFrame) -> pd.DataFrame:
    """block.csv: log onsets, weight seeds down, data seeds across (``data_seed=J``)."""
    b = log_onset_block(runs)
    return b.rename(columns=lambda j: f"data_seed={j}").reset_index()


def _fmt(v: float, spec: str) -> str:
    return "-" if pd.isna(v) else format(v, spec)


def _onset(r) -> str:
    """A formed run's onset; else where the table censored it (its last step), or ``-`` without a run."""
    return _fmt(r.onset, ",.0f") if r.formed else ("-" if pd.isna(r.onset) else f"none by {r.onset:,.0f}")


def summary_lines(runs: pd.DataFrame, source: Path, basis: str, block: SeedBlock | None, why: str | None) -> list[str]:
    md = ["# Seeds by kind at one cell", "", f"- input: {source}", f"- formed: {basis}",
          "- onsets in updates; log onset in the block; one run per (weight seed, data seed)", "",
          "## Runs", "", "| weight seed | data seed | run | onset | log onset | formed |", "|---|---|---|---|---|---|"]
    md += [f"| {r.weight_seed} | {r.data_seed} | {r.run_id if isinstance(r.run_id, str) else '-'} | "
           f"{_onset(r)} | {_fmt(r.log_onset, '.3f')} | {'yes' if r.formed else 'no'} |"
           for r in runs.itertuples()]
    if block is None:
        return md + ["", f"**Not testable on certified onsets**: {why}."]
    c = block.components
    md += ["", f"## Variance components (method of moments; {block.level:.0%} intervals)", "",
           "| source | sd (log onset) | interval | F | df | p |", "|---|---|---|---|---|---|"]
    md += [f"| {r.kind} | {r.sd:.3f} | [{r.lo:.3f}, {r.hi:.3f}] | {_fmt(r.F, '.2f')} | "
           f"{r.df}{'' if pd.isna(r.df_den) else f', {int(r.df_den)}'} | {_fmt(r.p, '.3g')} |" for r in c.itertuples()]
    return md + ["", "- a kind's sd: max(0, (MS_kind - MS_residual) / (levels of the other kind)), square-rooted; "
                 "var_mom in components.csv is the unbiased difference before the floor",
                 "- F: MS_kind / MS_residual, the exact test of sd = 0 under normal errors",
                 "- residual: the interaction of the two kinds and each run's own noise together; one run per "
                 "pair cannot separate them",
                 "- intervals: modified large-sample (Ting et al. 1990) for the kinds, chi-square for the residual "
                 "(ihstats.law.seed_block)"]


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        table = (read_table(args.emergence, "emergence table") if args.emergence
                 else emergence_of_grid(args.grid or DEFAULT_GRID))
        block, why = seed_block(one_cell(table, args.cell), args.level), None
        runs = block.runs
    except NotTestable as e:
        block, why, runs = None, e.reason, e.runs
    except (SeedBlockError, UnreadableFile, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    basis = block.basis if block else outcome_basis(table)
    claim_folder(args.out)  # made and marked as the package's before the first write
    atomic_write_csv(args.out / "block.csv", block_csv(runs), index=False, float_format=CSV_FLOAT_FORMAT)
    if block is not None:
        atomic_write_csv(args.out / "components.csv", block.components[COLUMNS], index=False,
                         float_format=CSV_FLOAT_FORMAT)
    atomic_write_text(args.out / "summary.md", "\n".join(summary_lines(runs, args.source, basis, block, why)) + "\n")
    print(f"formed: {basis}")
    print("log onset (weight seeds down, data seeds across; NaN: no certified onset):")
    print(log_onset_block(runs).round(3).to_string())
    if block is None:
        print(f"error: the seed block is not testable on certified onsets: {why}", file=sys.stderr)
        print(f"wrote {args.out}/ (block.csv, summary.md)")
        return EXIT_FAILED
    print(f"\nvariance components of log onset ({block.level:.0%} intervals; F against the residual):")
    print(block.components[COLUMNS].round(4).to_string(index=False))
    print(f"wrote {args.out}/ (block.csv, components.csv, summary.md)")
    return 0


if __name__ == "__main__":
    run_cli(main)
