"""Which B x C design identifies the law's exponents (issue 66): expected 90% interval widths of a and b
for candidate designs, simulated at the variances measured from a shipped grid's logs.

    python analyses/design_law.py                       # bxc-cross's variances, 100 simulated grids per design
    python analyses/design_law.py --sims 400 --cell-sd 0.2 --out results/design_law

Reads ``data/reference_runs/bxc-cross/summary.csv`` (``--summary``), estimates the within-cell scatter,
the law's cell misfit and the seed term (:func:`ihstats.simulate.design.measured_variances`), and for
each candidate (B levels, C levels, layout, seeds per cell) writes the mean and 90th-percentile widths
and the coverage of the simulated intervals to ``design_widths.csv`` with a ``summary.md`` beside it.
``--cell-sd`` overrides the measured cell misfit (the maximum-likelihood value sits at 0 on 8 cells, an
optimistic end: the sensitivity row). Torch-free.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ihstats.base.cli_checks import claim_folder
from ihstats.base.fileio import atomic_write_text
from ihstats.simulate.design import Variances, design_cells, design_widths, measured_variances
from ihstats.base.command import out_folder, run_cli

ROOT = Path(__file__).resolve().parents[1]
B_SPANS = {"16-128": [16, 32, 64, 128], "8-128": [8, 16, 32, 64, 128]}
C_SPANS = {"32-128": [32, 64, 128], "32-128x5": [32, 45, 64, 90, 128]}
#: (name, B span, C span, layout, seeds per cell); bxc-cross is the shipped cross, as shipped
CANDIDATES = [("bxc-cross (shipped)", "cross8", None, "list", 3),
              ("cross 16-128 x 32-128", "16-128", "32-128", "cross", 5),
              ("factorial 4 x 3", "16-128", "32-128", "factorial", 5),
              ("factorial 5 x 3", "8-128", "32-128", "factorial", 5),
              ("factorial 5 x 3, 8 seeds", "8-128", "32-128", "factorial", 8),
              ("factorial 4 x 5", "16-128", "32-128x5", "factorial", 5),
              ("factorial 5 x 5 (bxc-ident)", "8-128", "32-128x5", "factorial", 5)]
BXC_CROSS = [(16, 64), (32, 64), (64, 64), (128, 64), (32, 32), (64, 32), (32, 128), (64, 128)]


def table(var: Variances, sims: int) -> pd.DataFrame:
    rows = []
    for name, b_span, c_span, layout, seeds in CANDIDATES:
        cells = BXC_CROSS if layout == "list" else design_cells(B_SPANS[b_span], C_SPANS[c_span], layout)
        rows.append({"design": name, **design_widths(cells, seeds, var, n_sims=sims)})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--summary", default=str(ROOT / "data/reference_runs/bxc-cross/summary.csv"),
                   help="a grid's summary.csv whose formed runs give the variances (default: bxc-cross's)")
    p.add_argument("--sims", type=int, default=100, help="simulated grids per design (default 100)")
    p.add_argument("--cell-sd", type=float, default=None, help="override the measured cell misfit sd")
    p.add_argument("--out", default=None, help="output folder (default results/design_law)")
    args = p.parse_args(argv)
    if args.sims < 10:
        p.error("--sims must be >= 10")
    args.out = out_folder(args.out, "design_law", inputs=[args.summary], parser=p)  # never over what it reads
    try:
        var, fit = measured_variances(pd.read_csv(args.summary))
    except (OSError, KeyError, ValueError) as e:
        print(f"error: {args.summary}: {e}", file=sys.stderr)
        return 2
    if args.cell_sd is not None:
        var = Variances(var.sigma, args.cell_sd, var.weight_sd, var.data_sd)
    out = Path(args.out)
    claim_folder(out)
    t = table(var, args.sims)
    atomic_write_text(out / "design_widths.csv", t.to_csv(index=False))
    head = (f"variances from {args.summary} ({fit['n_runs']} formed runs, maximum likelihood): sigma {var.sigma:.3f}, "
            f"cell_sd {var.cell_sd:.3f}{' (set)' if args.cell_sd is not None else ''}, seed sd {var.weight_sd:.3f} "
            f"(weights and data together); its a {fit['a']:.2f} (se {fit['se_a']:.2f}), b {fit['b']:.2f} (se {fit['se_b']:.2f})")
    text = head + "\n\n" + t.round(3).to_string(index=False) + "\n"
    atomic_write_text(out / "summary.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    run_cli(main)
