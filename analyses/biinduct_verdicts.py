"""Bi-Induct verdicts: each claim of Sabry and Belz tested on a biinduct grid, seeds as the unit.

    python analyses/biinduct_verdicts.py GRID_DIR [--ablation TABLE] [--metric repeat_nat_logprob]
        [--level 0.2] [--out DIR]

Reads the grid's runs (``summary.csv``, ``metrics.parquet``, and ``icl_kv.csv`` where
``ihtrain.ablate --icl`` wrote one) and, with ``--ablation``, the tidy ablation table of all runs
(conditions labelled ``MODE@sN``). Writes into ``--out`` (default ``results/biinduct/<grid name>``): ``runs.csv`` (one row per run:
``ihstats.ablation.biinduct.run_table``), ``claims.csv`` (each claim's primary test: Bi-Induct runs
against natural-only, exact two-sample permutation, its floor, the measure's chance level and
whether both groups sit at it (then "not testable by this design"), the design's confound, the verdict), ``contrasts.csv``
(each condition against natural-only per column, Holm over the four, floors), ``summary.md`` and
``curves.png``/``.pdf`` (every run's induction, previous-token, anti-induction and loss curves,
coloured by condition).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ihstats.ablation.biinduct import NATURAL, claim_tests, curves_frame, run_table
from ihstats.base.chance import CHANCE_FACTOR
from ihstats.base.cli_checks import Range, check_args, claim_folder
from ihstats.base.fileio import UnreadableFile, atomic_write_csv, atomic_write_text, read_table
from ihstats.base.io import load_grid
from ihstats.figures.save import save_figure
from ihstats.figures.plots_paper import plot_biinduct
from ihstats.ablation.seeds import condition_contrasts
from ihstats.base.command import out_folder, run_cli

CONTRAST_COLUMNS = ("ps", "ps_nat", "onset_or_cap", "repeat_nat_logprob", "copy_fwd_logprob", "copy_bwd_logprob",
                    "dup_bwd", "anti_induction", "anti_copy", "icl_token_index", "kv_hits1", "kv_gain", "top_share",
                    "n_eff", "ablation_gap", "val_loss")
#: the curves figure's panels: the two induction probes, the circuit's first step, the paper's
#: anti-induction attention and the held-out loss
CURVE_PANELS = {"ps": "induction (max PS over heads)", "ps_nat": "induction on natural-stream repeats",
                "prev_token": "previous-token attention (max)", "anti_induction": "anti-induction attention (max)",
                "val_loss": "held-out loss (nats/token)"}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("grid", type=Path, help="biinduct grid directory")
    ap.add_argument("--ablation", type=Path, default=None, help="tidy ablation table of all runs (MODE@sN labels)")
    ap.add_argument("--metric", default="repeat_nat_logprob", help="ablation metric of the gap column")
    ap.add_argument("--onset", choices=("auto", "ps", "indist", "loss"), default="auto",
                    help="which onset the emergence claims read: auto (default: the summary's, in-distribution "
                         "where logged), ps (the repeat probe), loss (the in-distribution loss gain)")
    ap.add_argument("--level", type=float, default=0.2, help="max PS at which concentration is compared")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--out", type=Path, default=None,
                    help="output folder (default results/biinduct/<name of the grid>)")
    args = ap.parse_args(argv)
    check_args(ap, args, {"level": Range(0, 1, lo_open=True), "alpha": Range(0, 1, lo_open=True, hi_open=True)})
    args.out = out_folder(args.out, "biinduct", args.grid, inputs=[args.grid] + ([args.ablation] if args.ablation else []),
                          parser=ap)
    return args


def contrasts(runs: pd.DataFrame, alpha: float) -> pd.DataFrame:
    out = []
    for col in CONTRAST_COLUMNS:
        if col in runs and runs[col].notna().sum() > 1 and NATURAL in set(runs["mode"]):
            out.append(condition_contrasts(runs.rename(columns={"mode": "condition"}), col, NATURAL,
                                           condition="condition", alpha=alpha))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def _md_table(df: pd.DataFrame, cols) -> list[str]:
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
    return ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)] + [
        "| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in df.to_dict("records")]


def write_summary(path: Path, runs, claims, contr, source: str, level: float) -> None:
    md = ["# Bi-Induct verdicts", "", f"- grid: {source}; {len(runs)} runs; conditions "
          + ", ".join(f"{k} ({v})" for k, v in runs["mode"].value_counts().sort_index().items()),
          f"- formed (the earlier-emergence claim's onset or cap): {runs['basis'].iloc[0] if len(runs) else '-'}",
          f"- concentration compared at the first evaluation with max PS >= {level}",
          "- each measure: Bi-Induct runs (the curricula named) against natural-only, exact two-sample "
          "permutation over runs, one-sided in the predicted direction (for a claim of no increase, one-sided "
          "for an increase, which would refute it; of no decrease, e.g. the token-index score where lower is better, "
          "for a decrease); floor 1 / C(n + n_baseline, n_baseline); Holm over a "
          "claim's measures (p_for_holm, floor_holm)",
          f"- chance: the measure's chance level (ihstats.base.chance); a group sits at it when its mean is within a "
          f"factor {CHANCE_FACTOR:g} of it (ln {CHANCE_FACTOR:g} on a log scale) or beyond it; both groups at it: "
          "not testable by this design", "",
          "## Claims", ""]
    md += _md_table(claims, ["claim", "measure", "runs", "n", "mean", "mean_baseline", "chance", "chance_what", "diff",
                             "p_for", "p_for_holm", "p_against_holm", "floor_holm", "verdict", "confound"])
    md += ["", "## Runs", ""]
    md += _md_table(runs, [c for c in ("mode", "seed", "formed", "onset", "ps", "ps_nat", "repeat_nat_logprob",
                                       "copy_bwd_logprob", "dup_bwd", "anti_induction", "anti_copy",
                                       "icl_token_index", "kv_hits1", "kv_gain", "top_share", "heads_per_layer",
                                       "ablation_gap", "val_loss") if c in runs])
    if len(contr):
        md += ["", "## Each condition against natural-only (two-sided, Holm over the conditions)", ""]
        md += _md_table(contr, ["value", "condition", "diff", "n", "p", "p_holm", "p_floor", "p_floor_holm"])
    atomic_write_text(path, "\n".join(md) + "\n")


def main(argv=None) -> int:
    args = parse_args(argv)
    ablation = None
    try:
        if args.ablation is not None:
            ablation = read_table(args.ablation, "ablation table", "write it with python -m ihtrain.ablate RUN_DIR")
        runs = run_table(args.grid, args.level, ablation, args.metric, args.onset)
    except (UnreadableFile, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    claims, contr = claim_tests(runs, alpha=args.alpha), contrasts(runs, args.alpha)
    claim_folder(args.out)  # made and marked as the package's before the first write
    atomic_write_csv(args.out / "runs.csv", runs, index=False)
    atomic_write_csv(args.out / "claims.csv", claims, index=False)
    atomic_write_csv(args.out / "contrasts.csv", contr, index=False)
    write_summary(args.out / "summary.md", runs, claims, contr, str(args.grid), args.level)
    fig = plot_biinduct(curves_frame(load_grid(args.grid), CURVE_PANELS), CURVE_PANELS,
                        f"Bi-Induct ({args.grid.name}): induction, previous-token and anti-induction scores; held-out loss")
    save_figure(fig, args.out / "curves", close=True)
    print(f"formed: {runs['basis'].iloc[0] if len(runs) else '-'}")
    print(claims[["claim", "column", "diff", "p_for_holm", "floor_holm", "verdict"]].to_string(index=False))
    print(f"wrote {args.out}/ (runs.csv, claims.csv, contrasts.csv, summary.md, curves.png/pdf)")
    return 0


if __name__ == "__main__":
    run_cli(main)
