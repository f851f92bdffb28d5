"""Markov factor verdicts at matched entropy rate: categoriality and marginal contrasts on cells whose
chains carry the same bits per token.

    python analyses/markov_entropy.py [GRID ...] [--tolerance 0.25] [--out DIR]

Default grids: ``data/reference_runs/markov`` and, where it exists, ``runs/markov-entropy`` (the
entropy-matched companion: ``python -m ihtrain.grid --preset markov-entropy``). Each run's factors
come from its ``config.json`` (marginal, dependency, groups, frequency / reliability), its verdict
and the chain's exact entropy rate from the grid's ``summary.csv`` (``formed``,
``data_entropy_rate``: regenerate an older summary by rerunning the grid command, which trains
nothing when every run is done).

Cells: one per (regime, dependency, categoriality, marginal) with the mean entropy rate over its
seeds' chains. Contrasts, per regime, on Markov cells only: high categoriality against none and
low, low against none (same marginal); Zipf against the other marginals and Gaussian against the
others (same categoriality). A contrast pairs each cell of the tested level with the cells of the
other levels whose entropy rate lies within ``--tolerance`` bits (each used once); its test is the
exact stratified test of formed counts (:func:`ihstats.ablation.permutation.stratified_exact_test`,
two-sided; one stratum = Fisher's exact test), and the speed test is the exact stratified rank test
of onsets (:func:`~ihstats.ablation.permutation.stratified_rank_test`; a run that did not form
ranks after every onset, so the grids must share one budget). A contrast with no matched pair says so: it is
confounded with entropy in these grids. Writes ``cells.csv``, ``contrasts.csv`` and ``summary.md``
into ``--out`` (default ``results/markov_entropy/<first grid's name>``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ihstats.base.cli_checks import Range, check_args, claim_folder
from ihstats.base.fileio import UnreadableFile, atomic_write_csv, atomic_write_text, read_json, read_table
from ihstats.base.io import config_factors
from ihstats.ablation.permutation import stratified_exact_test, stratified_rank_test
from ihstats.tables import summary_formed
from ihstats.base.command import out_folder, run_cli

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GRIDS = (ROOT / "data" / "reference_runs" / "markov", ROOT / "runs" / "markov-entropy")
CELL = ["regime", "dependency", "categoriality", "marginal"]
# (name, factor, tested level, other levels: None = every other level, held equal)
CONTRASTS = (("high categoriality vs none or low", "categoriality", "high", ("none", "low"), "marginal"),
             ("high categoriality vs none", "categoriality", "high", ("none",), "marginal"),
             ("high categoriality vs low", "categoriality", "high", ("low",), "marginal"),
             ("low categoriality vs none", "categoriality", "low", ("none",), "marginal"),
             ("Zipf vs the other marginals", "marginal", "zipf", None, "categoriality"),
             ("Gaussian vs the other marginals", "marginal", "gaussian", None, "categoriality"))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("grids", type=Path, nargs="*", help="grid directories (default: the shipped markov grid "
                                                           "and runs/markov-entropy where it exists)")
    ap.add_argument("--tolerance", type=float, default=0.25,
                    help="entropy rates within this many bits count as matched (default 0.25: the spread "
                         "of one cell's seeds' chains reaches 0.24 bits)")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default results/markov_entropy/<grid>)")
    args = ap.parse_args(argv)
    args.grids = args.grids or [g for g in DEFAULT_GRIDS if g.is_dir()]
    check_args(ap, args, {"tolerance": Range(0)})
    args.out = out_folder(args.out, "markov_entropy", args.grids[0], inputs=args.grids, parser=ap)
    return args


def _categoriality(row) -> str:
    if not row.get("n_groups"):
        return "none"
    return {0.1: "low", 0.4: "high"}.get(round(float(row["within_similarity"]), 3),
                                         f"within {row['within_similarity']:g}")


def read_runs(grid: Path) -> pd.DataFrame:
    """One row per run of ``grid``: its factors (from config.json), formed, onset, entropy rate."""
    summary = read_table(grid / "summary.csv", "grid summary", "rerun the grid command that made it")
    if "data_entropy_rate" not in summary:
        raise ValueError(f"{grid / 'summary.csv'}: no data_entropy_rate column (written before issue 54); "
                         "rerun the grid command (it trains nothing when every run is done) to rewrite it")
    formed, basis = summary_formed(summary)  # certified, or on logs without the general probe the crossing
    rows = []
    for r, formed_r in zip(summary.itertuples(), formed):
        f = config_factors(read_json(grid / r.run_id / "config.json", "run's config"))
        rows.append({"grid": grid.name, "run_id": r.run_id, "seed": f["seed"], "marginal": f.get("marginal"),
                     "dependency": f.get("dependency"), "categoriality": _categoriality(f),
                     "regime": f"f {f['frequency']:g} r {f['reliability']:g}", "formed": bool(formed_r), "basis": basis,
                     "onset": r.onset, "entropy_rate": r.data_entropy_rate})
    return pd.DataFrame(rows)


def cell_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: runs, formed, entropy rate (mean, min, max over the seeds' chains), onsets."""
    g = runs.groupby(["grid", *CELL], sort=True)
    out = g.agg(n_runs=("formed", "size"), n_formed=("formed", "sum"), entropy_rate=("entropy_rate", "mean"),
                entropy_min=("entropy_rate", "min"), entropy_max=("entropy_rate", "max")).reset_index()
    onsets = g["onset"].apply(lambda s: ", ".join(f"{v:,.0f}" for v in sorted(s.dropna())) or "-")
    times = g.apply(lambda d: tuple(np.where(d["formed"], d["onset"], np.inf)), include_groups=False)
    return out.assign(onsets=onsets.to_numpy(), times=times.to_numpy())


def matched_strata(cells: pd.DataFrame, factor: str, level: str, others, held: str, tol: float) -> list:
    """Per tested cell, the cells of the other levels (same regime, dependency and ``held``
    factor) within ``tol`` bits, each used once: ``[(tested row, [other rows]), ...]``. Cells of the
    same grid are matched first (one design, one set of seeds' chains), then across grids."""
    mk = cells[cells["dependency"] == "markov"]
    used, strata = set(), {}
    for same_grid in (True, False):
        for i, a in mk[mk[factor] == level].iterrows():
            if i in strata:
                continue
            pool = mk[(mk["regime"] == a["regime"]) & (mk[held] == a[held]) & (mk[factor] != level)
                      & (mk[factor].isin(others) if others else True)
                      & ((mk["entropy_rate"] - a["entropy_rate"]).abs() <= tol) & ~mk.index.isin(used)
                      & ((mk["grid"] == a["grid"]) if same_grid else True)]
            if len(pool):
                used.update(pool.index)
                strata[i] = (a, [b for _, b in pool.iterrows()])
    return [strata[i] for i in sorted(strata)]


def contrasts(cells: pd.DataFrame, tol: float) -> pd.DataFrame:
    rows = []
    for name, factor, level, others, held in CONTRASTS:
        for regime in sorted(cells["regime"].unique()):
            strata = matched_strata(cells[cells["regime"] == regime], factor, level, others, held, tol)
            counts = [(int(a.n_formed), int(a.n_runs), sum(int(b.n_formed) for b in bs), sum(int(b.n_runs) for b in bs))
                      for a, bs in strata]
            pairs = "; ".join(f"{a[held]}: {a[factor]} {a.n_formed}/{a.n_runs} ({a.entropy_rate:.2f} bits) vs "
                              + ", ".join(f"{b[factor]} {b.n_formed}/{b.n_runs} ({b.entropy_rate:.2f})" for b in bs)
                              for a, bs in strata)
            rows.append({"contrast": name, "regime": regime, "n_strata": len(strata),
                         "formed_tested": sum(c[0] for c in counts), "runs_tested": sum(c[1] for c in counts),
                         "formed_other": sum(c[2] for c in counts), "runs_other": sum(c[3] for c in counts),
                         "p_value": stratified_exact_test(counts) if counts else np.nan,
                         **_onset_test(strata),
                         "pairs": pairs or "no entropy-matched pair: confounded with entropy here"})
    return pd.DataFrame(rows)


def _onset_test(strata) -> dict:
    """The rank test of onsets over the matched strata (not formed = later than every onset), and
    the median onsets of both sides (inf where half or more did not form)."""
    if not strata:
        return {"onset_p": np.nan, "rank_shift": np.nan, "median_tested": np.nan, "median_other": np.nan}
    pairs = [(a.times, [t for b in bs for t in b.times]) for a, bs in strata]
    p, shift = stratified_rank_test(pairs)
    return {"onset_p": p, "rank_shift": shift, "median_tested": float(np.median([t for a, _ in pairs for t in a])),
            "median_other": float(np.median([t for _, b in pairs for t in b]))}


def write_summary(path: Path, cells: pd.DataFrame, contr: pd.DataFrame, grids, tol: float, basis: str) -> None:
    md = ["# Markov factors at matched entropy rate", "",
          f"- grids: {', '.join(map(str, grids))}; entropy rates matched within {tol:g} bits/token",
          f"- formed: {basis}",
          "- test: exact stratified test of formed counts over matched pairs, two-sided "
          "(one stratum: Fisher's exact test); onsets: exact stratified rank test (not formed = after "
          "every onset), two-sided; rank shift < 0: the tested level is earlier", "", "## Cells", "",
          "| grid | regime | dependency | categoriality | marginal | formed | entropy rate (bits) | onsets |",
          "|---|---|---|---|---|---|---|---|"]
    md += [f"| {r.grid} | {r.regime} | {r.dependency} | {r.categoriality} | {r.marginal} | {r.n_formed}/{r.n_runs} | "
           f"{r.entropy_rate:.2f} ({r.entropy_min:.2f}-{r.entropy_max:.2f}) | {r.onsets} |" for r in cells.itertuples()]
    md += ["", "## Contrasts", "", "| contrast | regime | tested formed | others formed | p (formed) | "
           "median onset tested / others | rank shift | p (onsets) | matched cells |", "|---|---|---|---|---|---|---|---|---|"]
    md += [f"| {r.contrast} | {r.regime} | {r.formed_tested}/{r.runs_tested} | {r.formed_other}/{r.runs_other} | "
           f"{_num(r.p_value, '.3g')} | {_num(r.median_tested, ',.0f')} / {_num(r.median_other, ',.0f')} | "
           f"{_num(r.rank_shift, '+.2f')} | {_num(r.onset_p, '.3g')} | {r.pairs} |" for r in contr.itertuples()]
    atomic_write_text(path, "\n".join(md) + "\n")


def _num(v: float, fmt: str) -> str:
    return "-" if np.isnan(v) else ("not formed" if np.isinf(v) else format(v, fmt))


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        runs = pd.concat([read_runs(g) for g in args.grids], ignore_index=True)
    except (UnreadableFile, ValueError, OSError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    cells = cell_table(runs)
    contr = contrasts(cells, args.tolerance)
    claim_folder(args.out)  # made and marked as the package's before the first write
    atomic_write_csv(args.out / "cells.csv", cells.drop(columns="times"), index=False)
    atomic_write_csv(args.out / "contrasts.csv", contr, index=False)
    basis = "; ".join(sorted(set(runs["basis"])))
    write_summary(args.out / "summary.md", cells, contr, args.grids, args.tolerance, basis)
    print(f"formed: {basis}")
    print(contr[["contrast", "regime", "formed_tested", "runs_tested", "formed_other", "runs_other",
                 "p_value", "rank_shift", "onset_p"]].to_string(index=False))
    print(f"wrote {args.out}/ (cells.csv, contrasts.csv, summary.md)")
    return 0


if __name__ == "__main__":
    run_cli(main)
