"""Mechanism factorial (issue 66, item 4): C, copy distance and copy density, each moved alone around one centre.

    python analyses/mechanism_factorial.py [GRID] [--out DIR]     # default GRID: runs/mechanism-factorial
    python analyses/mechanism_factorial.py --emergence TABLE.csv   # an emergence table with a cell (or arm) column

Reads the grid of ``python -m ihtrain.grid --preset mechanism-factorial``: its arms are the cell
labels of the manifest (centre, c32 / c128, near / far, sparse / dense), the onsets the emergence
table's (:mod:`ihstats.emergence`, the general curve: certified onsets), each factor's setting the
manifest's (C, the copy band) and, where ``train.parquet`` logs it, the realised mean copy distance
and copies per token. A grid without the seven arms is refused. Each factor's effect is the contrast
of its two arms (and each arm against the centre): :mod:`ihstats.factorial` (what every column
means), its interval :mod:`ihstats.onset.contrast`. A contrast with an arm of fewer than 2 certified
runs is not testable and says why; every testable one gives the rank test's p beside the smallest
p the arm sizes allow.

Writes into --out (default results/mechanism_factorial/<grid>): arms.csv, contrasts.csv, summary.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ihstats.base.cli_checks import PROBABILITY_OPEN, check_args, claim_folder
from ihstats.base.command import out_folder, run_cli
from ihstats.base.display import CSV_FLOAT_FORMAT
from ihstats.base.fileio import UnreadableFile, atomic_write_csv, atomic_write_text, read_table
from ihstats.base.io import load_grids
from ihstats.emergence import emergence_table, onset_metric
from ihstats.ablation.seeds import two_sample_floor
from ihstats.factorial import (DESIGN_SEEDS, MIN_CERTIFIED, FactorialError, arm_table, check_arms, contrast_table,
                               run_table)
from ihstats.onset.contrast import CUTS
from ihstats.tables import outcome_basis

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GRID = ROOT / "runs" / "mechanism-factorial"
REMEDY = "run the grid with python -m ihtrain.grid --preset mechanism-factorial"
#: train.parquet's realised copy statistics -> the factor columns they measure
REALISED = {"realised_copy_distance": "copy_distance", "realised_copies_per_token": "copies_per_token"}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python analyses/mechanism_factorial.py", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[1:]))
    p.add_argument("grid", nargs="?", type=Path, default=None,
                   help="the mechanism-factorial grid directory (default runs/mechanism-factorial)")
    p.add_argument("--emergence", type=Path, default=None,
                   help="an emergence table instead of a grid: cell (or arm), onset, last_step, formed (crossed, "
                        "onset_basis, mechanism, C, copy_distance, copies_per_token where known)")
    p.add_argument("--level", type=float, default=0.9, help="interval level (default 0.9)")
    p.add_argument("--cut", choices=CUTS, default="t",
                   help="profile-likelihood cut: t (default; the exact t interval without censoring) or chi2 "
                        "(chi2_1's quantile, large-sample)")
    p.add_argument("--out", default=None, help="output folder (default results/mechanism_factorial/<grid or table>)")
    args = p.parse_args(argv)
    if args.grid and args.emergence:
        p.error("give a GRID or --emergence, not both")
    args.grid = args.grid or (None if args.emergence else DEFAULT_GRID)
    check_args(p, args, {"level": PROBABILITY_OPEN})
    src = args.emergence or args.grid
    args.out = out_folder(args.out, "mechanism_factorial", src, inputs=[src], parser=p)
    return args


def _column(frame: pd.DataFrame, suffix: str) -> pd.Series:
    """The manifest's axis column ending in ``suffix`` (``data.<source>.min_distance``), NaN if none."""
    name = next((c for c in frame.columns if c == suffix or c.endswith("." + suffix)), None)
    return pd.to_numeric(frame[name], errors="coerce") if name else pd.Series(np.nan, index=frame.index)


def settings(manifest: pd.DataFrame) -> pd.DataFrame:
    """Per run: its arm (cell label), copy band and its midpoint, copies per token as set, why it stopped."""
    lo, hi = _column(manifest, "min_distance"), _column(manifest, "max_distance")
    band = [f"{a:g}-{b:g}" if np.isfinite(a) and np.isfinite(b) and a > 0 else "" for a, b in zip(lo, hi)]
    stop = manifest["stop_reason"] if "stop_reason" in manifest else pd.Series("", index=manifest.index)
    return pd.DataFrame({"run_id": manifest["run_id"], "arm": manifest["cell"], "copy_band": band,
                         "copy_distance": (lo + hi) / 2, "copies_per_token": _column(manifest, "copies_per_token"),
                         "stop_reason": stop.fillna("").astype(str)})


def realised(train: pd.DataFrame) -> pd.DataFrame:
    """Per run, the mean over its logged steps of each realised copy statistic train.parquet holds."""
    cols = [c for c in REALISED if c in train.columns]
    if train.empty or not cols:
        return pd.DataFrame(columns=["run_id", *REALISED.values()])
    return train.groupby("run_id")[cols].mean().rename(columns=REALISED).reset_index()


def read_grid(grid: Path) -> pd.DataFrame:
    """The grid's emergence table with each run's arm and factor settings (realised where logged)."""
    manifest = read_table(grid / "manifest.parquet", "grid manifest", REMEDY)
    if "cell" not in manifest.columns:
        raise FactorialError(f"{grid}: its manifest has no cell labels, so no arms: not the mechanism factorial "
                             f"({REMEDY})")
    check_arms(manifest["cell"], str(grid))  # before reading every run's logs
    data = load_grids([grid], on_error="skip")
    for why in data.skipped:
        print(f"warning: {why} (run skipped)", file=sys.stderr)
    table = emergence_table(data, metric=onset_metric(data.metrics, "auto"), head="max", method="bayes",
                            on_error="skip")
    set_, real = settings(manifest), realised(data.train)
    table = table.merge(set_, on="run_id", how="left").merge(real, on="run_id", how="left", suffixes=("", "_real"))
    for col in REALISED.values():  # the realised value where the run logged it, else the setting
        if f"{col}_real" in table:
            table[col] = table.pop(f"{col}_real").fillna(table[col])
    return table


def read_emergence(path: Path) -> pd.DataFrame:
    table = read_table(path, "emergence table", "write one with python -m ihstats.emergence and add the cell column")
    if "arm" not in table.columns:
        if "cell" not in table.columns:
            raise FactorialError(f"{path}: needs a cell (or arm) column naming each run's arm")
        table = table.assign(arm=table["cell"])
    return table


def _num(v: float, fmt: str) -> str:
    if np.isnan(v):
        return "-"
    return ("inf" if v > 0 else "-inf") if np.isinf(v) else format(v, fmt)


def _interval(r, a: str, b: str, c: str, fmt: str) -> str:
    return f"{_num(getattr(r, a), fmt)} [{_num(getattr(r, b), fmt)}, {_num(getattr(r, c), fmt)}]"


def summary_lines(contrasts: pd.DataFrame, arms: pd.DataFrame, source, basis: str, level: float, cut: str) -> list[str]:
    cut_words = ("n log(1 + t^2 / (n - k)), the exact t interval when nothing is censored" if cut == "t"
                 else "chi2_1's quantile")
    md = ["# Mechanism factorial: each factor moved alone around the centre", "",
          f"- input: {source}", f"- onsets: {basis}; a run not certified by its last step is censored there",
          "- arms (certified / runs): " + "; ".join(f"{r.arm} {r.certified}/{r.n}" for r in arms.itertuples()),
          f"- onset ratio: exp of the difference of the arms' mean log onset (high arm over low arm), maximum "
          f"likelihood under one normal model of log onset (a mean per arm, one sigma shared by all arms, right-"
          f"censored); {level:.0%} profile-likelihood interval, cut {cut_words}",
          "- elasticity: the log onset ratio per log of the factor's ratio between the arms (C; the realised mean "
          "copy distance; realised copies per token, where the logs hold them, else the settings)",
          "- rank p: exact two-sided rank test of onsets (a run never certified ranks after every onset), "
          f"uncorrected; floor: the smallest p the arms' sizes allow ({DESIGN_SEEDS} runs against {DESIGN_SEEDS}, "
          f"the design's: {two_sample_floor(DESIGN_SEEDS, DESIGN_SEEDS)[0]:.2g})",
          f"- not testable: an arm with fewer than {MIN_CERTIFIED} certified runs; no estimate is given",
          *_stopped_line(arms), "",
          "| contrast | factor ratio | certified (high vs low) | onset ratio [interval] | elasticity [interval] | "
          "rank p | p floor | note |", "|---|---|---|---|---|---|---|---|"]
    for r in contrasts.itertuples():
        md.append(f"| {r.contrast} | {_num(r.factor_ratio, '.3g')} | {r.certified_high}/{r.n_high} vs "
                  f"{r.certified_low}/{r.n_low} | {_interval_ratio(r)} | "
                  f"{_interval(r, 'elasticity', 'elasticity_lo', 'elasticity_hi', '.2f')} | {_num(r.rank_p, '.3g')} | "
                  f"{_num(r.p_floor, '.3g')} | {r.why if isinstance(r.why, str) and r.why else 'testable'} |")
    return md


def _stopped_line(arms: pd.DataFrame) -> list[str]:
    stopped = arms[arms["stopped_not_certified"] > 0]
    if stopped.empty:
        return []
    return ["- stopped before a certificate: " + "; ".join(f"{r.arm} {r.stopped_not_certified} (last steps "
            f"{r.uncertified_last_steps})" for r in stopped.itertuples()) + ": the until-emergence budget stopped "
            "them on their emergence metric's crossing, so they are censored at that stop, not at the cap (the rank "
            "test still ranks them after every onset)"]


def _interval_ratio(r) -> str:
    return f"{_num(np.exp(r.estimate), '.3g')} [{_num(np.exp(r.lo), '.3g')}, {_num(np.exp(r.hi), '.3g')}]"


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        table = read_grid(args.grid) if args.grid else read_emergence(args.emergence)
        runs = run_table(table)
    except (FactorialError, UnreadableFile, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    arms, contrasts = arm_table(runs), contrast_table(runs, args.level, args.cut)
    basis = outcome_basis(table)
    claim_folder(args.out)  # made and marked as the package's before the first write
    atomic_write_csv(args.out / "arms.csv", arms, index=False, float_format=CSV_FLOAT_FORMAT)
    atomic_write_csv(args.out / "contrasts.csv", contrasts, index=False, float_format=CSV_FLOAT_FORMAT)
    src = args.grid or args.emergence
    atomic_write_text(args.out / "summary.md", "\n".join(summary_lines(contrasts, arms, src, basis, args.level,
                                                                       args.cut)) + "\n")
    print(f"onsets: {basis}")
    print(arms[["arm", "n", "certified", "crossed_not_certified", "stopped_not_certified", "uncertified_classes",
                "median_onset"]]
          .round({"median_onset": 0}).to_string(index=False))
    shown = pd.DataFrame({
        "contrast": contrasts["contrast"],
        "certified": [f"{r.certified_high}/{r.n_high} vs {r.certified_low}/{r.n_low}" for r in contrasts.itertuples()],
        "log onset ratio": [_interval(r, "estimate", "lo", "hi", "+.3f") for r in contrasts.itertuples()],
        "elasticity": [_interval(r, "elasticity", "elasticity_lo", "elasticity_hi", "+.2f") for r in contrasts.itertuples()],
        "rank p": [_num(v, ".3g") for v in contrasts["rank_p"]], "p floor": [_num(v, ".3g") for v in contrasts["p_floor"]],
        "note": contrasts["why"].fillna("").replace("", "testable")})
    print(f"\ncontrasts (log onset, high arm - low arm, {args.level:.0%} profile interval):")
    print(shown.to_string(index=False))
    print(f"wrote {args.out}/ (arms.csv, contrasts.csv, summary.md)")
    return 0


if __name__ == "__main__":
    run_cli(main)
