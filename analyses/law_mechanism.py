"""Why context length helps or hurts (issue 53): the C exponent b per arm of the law-mechanism grid.

    python analyses/law_mechanism.py --grid runs/law-mechanism         # after python -m ihtrain.grid --preset law-mechanism
    python analyses/law_mechanism.py --grid runs/law-mechanism --fast  # 2 chains x 300 draws, a first look
    python analyses/law_mechanism.py --grid data/reference_runs/law-mechanism-d32 --share density=fixed-c64
    python analyses/law_mechanism.py --emergence onsets.csv --fast     # a table with arm, C, onset columns

Arms are the grid's cell labels up to ``-c<C>`` (``fixed-c64`` -> ``fixed``); ``--share`` lets a
cell enter another arm as well (default ``density=fixed-c32``: the preset's density arm starts from
the fixed arm's C 32 cell, whose data are the same; ``density=fixed-c64`` for law-mechanism-d32).
Onsets: :mod:`ihstats.emergence` on the in-distribution PS (``ps_indist``, the law's default onset), censored at the last step where a run
did not form. The fit, one model over all arms with its own line per arm (B fixed), is
:mod:`ihstats.law.arms`. Positive b: fewer updates at longer C. Printed: the mechanism table (per arm and C: copies per token, copies
per sequence and mean copy distance, measured from the cell's training sequences by
:func:`ihtrain.copystats.source_table`, independently of the generator), the onsets per seed,
and b per arm with its HDI plus each arm's difference from the fixed arm. The density account
predicts ``b_density - b_fixed`` about ``|e| k`` (e about -4.3, freqrel's onset elasticity in the
frequency; k 0.43); the distance account a capped arm with b above the fixed arm's.

Writes into --out: mechanism.csv, onsets.csv, b.csv.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ihstats.base.cli_checks import COUNT, PROBABILITY_OPEN, check_args, claim_folder
from ihstats.fit_protocol import SAMPLER_RANGES, add_sampler_flags, apply_fast
from ihstats.emergence import emergence_table, onset_metric
from ihstats.base.fileio import UnreadableFile, atomic_write_csv, read_json, read_table
from ihstats.base.io import load_grids
from ihstats.law.arms import REFERENCE, fit_arms
from ihstats.tables import formed_column, outcome_basis
from ihstats.base.display import CSV_FLOAT_FORMAT
from ihstats.base.command import out_folder, run_cli

RANGES = {**SAMPLER_RANGES, "hdi_prob": PROBABILITY_OPEN, "seqs": COUNT}


def arm_of(label: str) -> str:
    """``fixed-c64`` -> ``fixed``: a cell label up to its ``-c<C>`` suffix."""
    return re.sub(r"-c\d+$", "", str(label))


def with_shares(table: pd.DataFrame, shares: dict[str, list[str]]) -> pd.DataFrame:
    """``table`` (with ``cell`` and ``arm``) plus a copy of each shared cell's rows in its extra arm."""
    extra = [table[table["cell"] == cell].assign(arm=arm) for arm, cells in shares.items() for cell in cells]
    return pd.concat([table, *extra], ignore_index=True)


def hdi(x: np.ndarray, prob: float) -> tuple[float, float]:
    """The narrowest interval holding ``prob`` of the draws ``x``."""
    s = np.sort(np.asarray(x, dtype=float).ravel())
    k = max(1, int(np.ceil(prob * s.size)))
    w = s[k - 1:] - s[: s.size - k + 1]
    i = int(np.argmin(w))
    return float(s[i]), float(s[i + k - 1])


def b_table(draws: dict[str, np.ndarray], prob: float) -> pd.DataFrame:
    """b per arm (mean, HDI) and each arm's difference from the fixed arm (mean, HDI, P(> 0))."""
    rows = []
    for arm, d in draws.items():
        lo, hi = hdi(d, prob)
        row = {"arm": arm, "b": d.mean(), "b_lo": lo, "b_hi": hi}
        if REFERENCE in draws and arm != REFERENCE:
            diff = d - draws[REFERENCE]
            dlo, dhi = hdi(diff, prob)
            row.update(diff=diff.mean(), diff_lo=dlo, diff_hi=dhi, p_diff_pos=float((diff > 0).mean()))
        rows.append(row)
    return pd.DataFrame(rows)


def onsets_from_grid(grid_dir: Path, shares: dict[str, list[str]]) -> pd.DataFrame:
    """The in-distribution onsets of a grid's runs with their cell label and arm."""
    grid = load_grids([grid_dir], on_error="skip")
    for why in grid.skipped:
        print(f"warning: {why} (run skipped)", file=sys.stderr)
    metric = onset_metric(grid.metrics, "auto")  # ps_indist where logged (every run since issue 52)
    table = emergence_table(grid, metric=metric, head="max", method="bayes", on_error="skip")
    try:
        manifest = read_table(grid_dir / "manifest.parquet", "grid manifest", "run the grid with python -m ihtrain.grid")
    except UnreadableFile as e:
        raise SystemExit(f"error: --grid {e}") from None
    table = table.merge(manifest[["run_id", "cell"]], on="run_id", how="left")
    # the fits' one rule: a rise that was not certified (on logs without the general probe: did not
    # cross the run's level, e.g. the creep) is censored at last_step
    print(f"formed: {outcome_basis(table)}")
    table = table.assign(censored=~formed_column(table))
    return with_shares(table.assign(arm=table["cell"].map(arm_of)), shares)


def mechanism_table(grid_dir: Path, table: pd.DataFrame, seqs: int) -> pd.DataFrame:
    """Per arm and C: the copy statistics of one run's training sequences (its config.json)."""
    from ihtrain.config import from_dict  # the trainer's config and sources: only with --grid
    from ihtrain.copystats import source_table

    rows = []
    for (arm, C), g in table.groupby(["arm", "C"], sort=True):
        cfg = from_dict(read_json(grid_dir / g["run_id"].iloc[0] / "config.json", "run config")["config"])
        stats = source_table(cfg, [int(C)], n_seqs=seqs)[0]
        rows.append({"arm": arm, "C": int(C), "cell": g["cell"].iloc[0], **{k: stats[k] for k in (
            "copies_per_token", "copies_per_seq", "d_mean", "d_q50", "d_q90")},
            "gen_copy_distance": stats.get("gen_copy_distance", np.nan)})
    return pd.DataFrame(rows)


def parse_shares(items: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in items:
        arm, sep, cells = item.partition("=")
        if not sep or not arm or not cells:
            raise SystemExit(f"error: --share {item!r}: expected ARM=CELL[,CELL...], e.g. density=fixed-c64")
        out.setdefault(arm, []).extend(c for c in cells.split(",") if c)
    return out


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python analyses/law_mechanism.py", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[1:]))
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--grid", help="the law-mechanism grid directory (python -m ihtrain.grid --preset law-mechanism)")
    src.add_argument("--emergence", help="an onsets table instead: columns arm (or cell), C, seed, onset, onset_lo, "
                                         "onset_hi, censored, last_step (no mechanism table)")
    p.add_argument("--share", action="append", default=None, metavar="ARM=CELL[,CELL]",
                   help="a cell that enters another arm too (default: density=fixed-c32)")
    p.add_argument("--out", default=None, help="output directory (default results/law_mechanism/<input name>)")
    add_sampler_flags(p)
    p.add_argument("--hdi-prob", type=float, default=0.9, help="interval width (default 0.9)")
    p.add_argument("--likelihood", choices=("student_t", "normal"), default="student_t", help="noise (default student_t)")
    p.add_argument("--seqs", type=int, default=256, help="training sequences per cell for the copy statistics (default 256)")
    args = p.parse_args(argv)
    check_args(p, args, RANGES)
    src = args.grid or args.emergence
    args.out = out_folder(args.out, "law_mechanism", src, inputs=[src], parser=p)
    return apply_fast(args)


def _read_onsets(path: str, shares: dict[str, list[str]]) -> pd.DataFrame:
    try:
        t = read_table(Path(path), "onsets table")
    except UnreadableFile as e:
        raise SystemExit(f"error: --emergence {e}") from None
    if "arm" not in t.columns:
        if "cell" not in t.columns:
            raise SystemExit(f"error: --emergence {path}: needs an arm or a cell column")
        t = with_shares(t.assign(arm=t["cell"].map(arm_of)), shares)
    missing = {"arm", "C", "onset", "censored", "last_step"} - set(t.columns)
    if missing:
        raise SystemExit(f"error: --emergence {path}: missing columns {', '.join(sorted(missing))}")
    return t.assign(**{c: t.get(c, np.nan) for c in ("onset_lo", "onset_hi", "seed", "run_id")})


def main(argv=None) -> int:
    args = parse_args(argv)
    shares = parse_shares(args.share if args.share is not None else ["density=fixed-c32"])
    table = onsets_from_grid(Path(args.grid), shares) if args.grid else _read_onsets(args.emergence, shares)
    if table["arm"].isna().any():
        raise SystemExit("error: runs without a cell label in the grid's manifest: is this a law-mechanism grid?")
    out = Path(args.out)
    mech = mechanism_table(Path(args.grid), table, args.seqs) if args.grid else None
    draws, div = fit_arms(table, likelihood=args.likelihood, draws=args.draws, tune=args.tune,
                         chains=args.chains, seed=args.seed)
    bt = b_table(draws, args.hdi_prob)
    claim_folder(out)
    onsets = table.sort_values(["arm", "C", "seed"])[["arm", "C", "seed", "run_id", "onset", "onset_lo", "onset_hi",
                                                       "censored", "last_step"]]
    atomic_write_csv(out / "onsets.csv", onsets, index=False, float_format=CSV_FLOAT_FORMAT)
    atomic_write_csv(out / "b.csv", bt, index=False, float_format=CSV_FLOAT_FORMAT)
    if mech is not None:
        atomic_write_csv(out / "mechanism.csv", mech, index=False, float_format=CSV_FLOAT_FORMAT)
        print("mechanism (copy statistics of each cell's training sequences, from the tokens):")
        print(mech.round(3).to_string(index=False))
    wide = onsets.assign(o=np.where(onsets["censored"].astype(bool), np.nan, onsets["onset"]))
    print("\nonsets (updates; NaN: not formed by its last step):")
    print(wide.pivot_table(index=["arm", "C"], columns="seed", values="o", dropna=False).round(0).to_string())
    print(f"\nb per arm ({args.hdi_prob:.0%} HDI; diff: arm - {REFERENCE}; {args.likelihood}, "
          f"{args.chains} x {args.draws} draws):")
    print(bt.round(3).to_string(index=False))
    if div:
        print(f"warning: {div} divergent transitions: raise --tune or check the onsets", file=sys.stderr)
    print(f"wrote {out / 'onsets.csv'}, {out / 'b.csv'}" + (f", {out / 'mechanism.csv'}" if mech is not None else ""))
    return 0


if __name__ == "__main__":
    run_cli(main)
