"""Fit the frequency x reliability frontier of induction-head formation.

    python analyses/fit_frontier.py [--table CSV | --grid DIR [DIR ...]] [--metric ps] [--interaction]
        [--fast] [--out DIR]

``--table`` takes either one row per run (``frequency, reliability, formed``) or an emergence
table joined with the knobs (``censored``: formed = not censored). Without it the shipped simulated
example ``data/example_frontier.csv`` is used (and the output says so). Writes into ``--out``
(default ``results/frontier/<name of the grid or table>``):
``frontier.png/.pdf`` (heatmap of the formed fraction with the frontier and its band), the data
behind it (``frontier.csv``, ``cells.csv``), ``summary.csv``, ``sensitivity.csv``, ``glm.csv``,
``idata.nc``, ``fit.json``, ``knob.csv`` (which knob matters more on each scale; the verdict is the
per-unit-log-knob row) and ``summary.md``.

``--grid`` takes a grid directory of logs (``python -m ihtrain.grid --preset freqrel``): every run is
read at the cap and at cap / ``--budget-ratio`` (:mod:`ihstats.frontier.budget`), the logistic frontier is
fitted at the cap, and ``summary.md`` says whether the boundary moved between the budgets (a rate)
and with what shift (``budgets.csv``: formed per run at both). A table with ``onset`` and
``last_step`` (``--grid`` always) also gets the censored time-to-onset model
(:mod:`ihstats.onset`, in ``onset/``): both elasticities with intervals, which knob moves the
onset more at P >= 0.95, or "not resolved" and the seeds / levels / budget that a simulation from
the fitted posterior says would resolve it (``onset/designs.csv``), and beside it one elasticity
on the product f r (:mod:`ihstats.onset.product`: likelihood-ratio test and LOO against the two
knobs, the boundary at the cap and at cap / ``--budget-ratio``, local elasticities along each
transect; ``onset/product.csv``, ``boundary.csv``, ``local_elasticities.csv``, ``unformed_cells.csv``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from ihstats.base import io, progress
from ihstats.base.cli_checks import PROBABILITY_OPEN, check_args, check_unused, claim_folder
from ihstats.fit_protocol import SAMPLER_RANGES, add_sampler_flags, apply_fast
from ihstats.emergence import onset_metric
from ihstats.frontier.budget import per_run, two_budgets
from ihstats.frontier.model import FrontierModel
from ihstats.frontier.glm import SEPARATION_WORDS
from ihstats.frontier.report import budget_lines, knob_table, knob_text, write_frontier_report
from ihstats.frontier.spec import FrontierSpec
from ihstats.onset.design import resolving_designs
from ihstats.onset.model import OnsetModel
from ihstats.onset.product import (compare_lines, compare_models, fit_product, held_out_check, local_elasticities,
                                   transects)
from ihstats.onset.report import not_fitted_lines, onset_report_lines
from ihstats.onset.spec import OnsetSpec
from ihstats.base.fileio import UnreadableFile, atomic_write_csv
from ihstats.fit_protocol import save_and_warn
from ihstats.base.fileio import read_table as read_checked_table
from ihstats.base.display import CSV_FLOAT_FORMAT
from ihstats.tables import outcome_basis, outcome_word
from ihstats.base.command import out_folder, run_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_frontier.csv"
RANGES = {"hdi_prob": PROBABILITY_OPEN, **SAMPLER_RANGES}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--table", "--emergence", dest="table", type=Path, default=None,
                     help=f"run or emergence table (CSV or parquet); default: {EXAMPLE.name}")
    src.add_argument("--grid", type=Path, nargs="+", default=None,
                     help="grid directory of logs: read at the cap and at cap / --budget-ratio; several: "
                          "each read at its own cap (or --cap), their runs fitted together")
    ap.add_argument("--budget-ratio", type=float, default=3.0,
                    help="--grid: long budget over the short one (default 3: the cap and 1/3 of it)")
    ap.add_argument("--cap", type=float, default=None,
                    help="--grid: the long budget in updates (default: the runs' train.max_steps)")
    ap.add_argument("--design-sims", type=int, default=100,
                    help="simulated experiments per candidate design when the knob is not resolved")
    ap.add_argument("--onset", choices=("auto", "ps", "indist"), default="auto",
                    help="--grid: the PS the formed verdict reads: auto (default: the in-distribution PS at the "
                         "data's own copies where the logs hold it, else the repeat probe's), ps, indist")
    ap.add_argument("--metric", default=None,
                    help="emergence-table metric to use when the table holds several (e.g. ps)")
    ap.add_argument("--covariate", action="append", default=[],
                    help="extra numeric factor column (logged, standardised); repeatable")
    ap.add_argument("--interaction", action="store_true",
                    help="add the log-frequency x log-reliability interaction")
    ap.add_argument("--hdi-prob", type=float, default=0.9, help="width of the band (default 0.9)")
    add_sampler_flags(ap)
    ap.add_argument("--out", type=Path, default=None,
                    help="output folder (default results/frontier/<name of the grid or table>)")
    args = ap.parse_args(argv)
    check_args(ap, args, RANGES)
    table = None if args.grid else "a given table holds its verdicts (only --grid reads logs)"
    check_unused(ap, args, {"onset": table, "budget_ratio": table, "cap": table})
    inputs = args.grid or [args.table or EXAMPLE]
    args.out = out_folder(args.out, "frontier", inputs[0], inputs=inputs, parser=ap)  # before any work
    return args


def read_table(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise SystemExit(f"error: --table {path}: no such file")
    try:
        return read_checked_table(path, "frontier table", "write it with python -m ihstats.emergence")
    except UnreadableFile as e:
        raise SystemExit(f"error: --table {e}") from None


def left_out(data, table: pd.DataFrame, metric: str) -> None:
    """One warning line per run of ``data`` the fit will not see (no ``metric`` evaluations)."""
    for run in data.runs[~data.runs["run_id"].isin(table["run_id"])].itertuples():
        print(f"warning: run {run.run_id} ({run.path}): no {metric!r} evaluations; left out of the fit",
              file=sys.stderr)


def load_input(args):
    """``(table, source, comparisons, per-run budget table)`` from --grid, --table or the example;
    several grids are each read at their own cap (or --cap) and their runs stacked, a run of a
    shorter grid censored at its own cap."""
    if args.grid is not None:
        longs, cmps, runs, metrics = [], [], [], {}
        for grid in args.grid:
            try:
                data = io.load_grid(grid)
                metrics[grid] = onset_metric(data.metrics, args.onset)
                long, short, cmp = two_budgets(data, args.budget_ratio, args.cap, args.onset)
            except (ValueError, OSError) as e:
                raise SystemExit(f"error: --grid {grid}: {e}") from None
            print(f"{grid}: formed verdicts and onsets from the {metrics[grid]} curves (--onset {args.onset})")
            left_out(data, long, metrics[grid])
            longs.append(long), cmps.append(cmp), runs.append(per_run(long, short))
        if len(set(metrics.values())) > 1:  # one fit, one onset: never a mix of two measures
            raise SystemExit(f"error: --grid: the grids read different onsets ({', '.join(f'{g}: {m}' for g, m in metrics.items())}); "
                             f"pass --onset ps (or indist, where every grid logs it) to read the same one")
        source = "; ".join(f"{g} (logs read at {c.long:,.0f} updates)" for g, c in zip(args.grid, cmps))
        return pd.concat(longs, ignore_index=True), source, cmps, pd.concat(runs, ignore_index=True)
    if args.table is None:
        print(f"no --table given: using the shipped simulated example {EXAMPLE}")
        return (read_table(EXAMPLE), f"{EXAMPLE} (shipped simulated example; pass --table for real runs)",
                None, None)
    table = read_table(args.table)
    held = sorted(map(str, table["metric"].dropna().unique())) if "metric" in table else []
    print(f"{args.table}: metric {args.metric or ', '.join(held) or 'not named (no metric column)'}"
          + (" (--metric)" if args.metric else ""))  # the onset measure of every fit, said
    return table, str(args.table), None, None


def onset_lines(table, args, out: Path) -> tuple[list[str], object]:
    """Fit the time-to-onset model when the table has onsets: its summary.md section and its
    results (None when not fitted)."""
    if not {"onset", "last_step"} <= set(table.columns):
        return not_fitted_lines("the table has no `onset` / `last_step` columns "
                                "(pass --grid, or an emergence table joined with the knobs)"), None
    try:
        model = OnsetModel.from_table(table, OnsetSpec())
    except ValueError as e:
        return not_fitted_lines(str(e)), None
    res = model.fit(draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed)
    designs = None
    if "not resolved" in res.verdict():
        progress.step(f"simulating {args.design_sims} experiments per candidate design (onset model)")
        designs = resolving_designs(res, n_sims=args.design_sims, seed=args.seed)
    save_and_warn(res, out / "onset", label="the onset model",
                  tables={"designs": designs} if designs is not None else None)
    return onset_report_lines(res, designs, args.hdi_prob) + product_lines(model, res, args, out), res


def product_lines(model, res, args, out: Path) -> list[str]:
    """One elasticity on f r beside the separate knobs (likelihood ratio, LOO), the boundary at
    the cap and at cap / --budget-ratio, local elasticities along each transect
    (:mod:`ihstats.onset.product`); written to ``onset/product.csv``, ``onset/boundary.csv``,
    ``onset/local_elasticities.csv``, ``onset/unformed_cells.csv``."""
    prod = fit_product(model, draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed)
    table = compare_models(model, res, prod, n_boot=2 * args.design_sims - 1, seed=args.seed)
    cap = float(model.runs["time"].max())
    boundary = prod.boundary([cap, cap / args.budget_ratio], args.hdi_prob)
    local = local_elasticities(model.runs, args.hdi_prob)
    on_transects = pd.concat([sub for _, sub in transects(model.runs)])
    cells = on_transects.groupby(["frequency", "reliability"])["formed"].any()
    unformed_at = list(cells.index[~cells.to_numpy()])
    unformed = prod.median_onset(unformed_at, args.hdi_prob)
    if unformed_at:  # would one elasticity, fitted without the cell, have seen an onset there?
        unformed = unformed.merge(held_out_check(model, unformed_at, seed=args.seed), on=["frequency", "reliability"])
    for name, frame in (("product", table), ("boundary", boundary), ("local_elasticities", local),
                        ("unformed_cells", unformed)):
        atomic_write_csv(out / "onset" / f"{name}.csv", frame, index=False, float_format=CSV_FLOAT_FORMAT)
    return compare_lines(table, prod, boundary, local, args.hdi_prob, unformed)


def main(argv=None) -> int:
    args = parse_args(argv)
    table, source, cmp, budgets = load_input(args)
    if apply_fast(args).fast:
        args.design_sims = min(args.design_sims, 30)
    t0 = time.perf_counter()
    try:
        model = FrontierModel.from_table(table, FrontierSpec(
            interaction=args.interaction, covariates=tuple(args.covariate), metric=args.metric))
    except (ValueError, TypeError) as e:  # checked before sampling: name the table
        print(f"error: {source}: {e}", file=sys.stderr)
        return 2
    res = model.fit(draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed)
    out = args.out
    claim_folder(out)  # made and marked as the package's before the first write
    save_and_warn(res, out, label="the frontier")
    atomic_write_csv(out / "frontier.csv", res.frontier(args.hdi_prob), index=False, float_format=CSV_FLOAT_FORMAT)
    extra = [line for c in (cmp or []) for line in budget_lines(c)]
    if budgets is not None:
        atomic_write_csv(out / "budgets.csv", budgets, index=False, float_format=CSV_FLOAT_FORMAT)
    section, onset = onset_lines(table, args, out)
    extra += section
    knob = knob_table(res, onset, args.hdi_prob)
    atomic_write_csv(out / "knob.csv", knob, index=False, float_format=CSV_FLOAT_FORMAT)
    basis = outcome_basis(table)  # certified, or crossings on logs without the general probe
    write_frontier_report(res, out / "summary.md", source, args.hdi_prob, extra, knob=knob, basis=basis)
    print(f"runs: {int(res.model.cells['n_runs'].sum())}, {outcome_word(basis)}: "
          f"{int(res.model.cells['n_formed'].sum())} ({basis}); "
          f"separation: {SEPARATION_WORDS.get(res.separation, res.separation)}")
    print(knob_text(knob))
    note = res.boundary_note(args.hdi_prob)
    if note:
        print(f"boundary: {note}")
    for line in extra:
        if line.startswith("**") or line.startswith("not fitted"):
            print(line.replace("**", ""))
    print(f"wrote {out}/ (frontier.png, frontier.pdf, frontier.csv, cells.csv, knob.csv, summary.md, "
          f"summary.csv, sensitivity.csv, glm.csv, idata.nc, fit.json"
          f"{', onset/' if onset is not None else ''}) in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    run_cli(main)
