"""Fit the frequency x reliability frontier of induction-head formation.

    python analyses/fit_frontier.py [--table CSV | --grid DIR] [--metric ps] [--interaction] [--fast] [--out DIR]

``--table`` takes either one row per run (``frequency, reliability, formed``) or an emergence
table joined with the knobs (``censored``: formed = not censored). Without it the shipped simulated
example ``data/example_frontier.csv`` is used (and the output says so). Writes into ``--out``:
``frontier.png/.pdf`` (heatmap of the formed fraction with the frontier and its band), the data
behind it (``frontier.csv``, ``cells.csv``), ``summary.csv``, ``sensitivity.csv``, ``glm.csv``,
``idata.nc``, ``fit.json`` and ``summary.md``.

``--grid`` takes a grid directory of logs (``python -m ihtrain.grid --preset freqrel``): every run is
read at the cap and at cap / ``--budget-ratio`` (:mod:`ihstats.budget`), the logistic frontier is
fitted at the cap, and ``summary.md`` says whether the boundary moved between the budgets (a rate)
and with what shift (``budgets.csv``: formed per run at both). A table with ``onset`` and
``last_step`` (``--grid`` always) also gets the censored time-to-onset model
(:mod:`ihstats.onset_model`, in ``onset/``): both elasticities with intervals, which knob moves the
onset more at P >= 0.95, or "not resolved" and the seeds / levels / budget that a simulation from
the fitted posterior says would resolve it (``onset/designs.csv``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ihstats import io
from ihstats.budget import per_run, two_budgets
from ihstats.cli_checks import COUNT, NONNEG_INT, PROBABILITY_OPEN, check_args, check_out_dir
from ihstats.frontier import FrontierSpec, knob_verdict
from ihstats.onset_design import resolving_designs
from ihstats.onset_model import OnsetSpec
from ihstats.plots import plot_frontier
from ihstats.fileio import UnreadableFile
from ihstats.fileio import read_table as read_checked_table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_frontier.csv"
RANGES = {"hdi_prob": PROBABILITY_OPEN, "draws": COUNT, "tune": NONNEG_INT, "chains": COUNT, "seed": NONNEG_INT}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--table", "--emergence", dest="table", type=Path, default=None,
                     help=f"run or emergence table (CSV or parquet); default: {EXAMPLE.name}")
    src.add_argument("--grid", type=Path, default=None,
                     help="grid directory of logs: read at the cap and at cap / --budget-ratio")
    ap.add_argument("--budget-ratio", type=float, default=3.0,
                    help="--grid: long budget over the short one (default 3: the cap and 1/3 of it)")
    ap.add_argument("--cap", type=float, default=None,
                    help="--grid: the long budget in updates (default: the runs' train.max_steps)")
    ap.add_argument("--design-sims", type=int, default=100,
                    help="simulated experiments per candidate design when the knob is not resolved")
    ap.add_argument("--metric", default=None,
                    help="emergence-table metric to use when the table holds several (e.g. ps)")
    ap.add_argument("--covariate", action="append", default=[],
                    help="extra numeric factor column (logged, standardised); repeatable")
    ap.add_argument("--interaction", action="store_true",
                    help="add the log-frequency x log-reliability interaction")
    ap.add_argument("--hdi-prob", type=float, default=0.9, help="width of the band (default 0.9)")
    ap.add_argument("--draws", type=int, default=1000, help="posterior draws per chain")
    ap.add_argument("--tune", type=int, default=1000, help="tuning steps per chain")
    ap.add_argument("--chains", type=int, default=4, help="chains (run one after another)")
    ap.add_argument("--seed", type=int, default=0, help="sampler seed")
    ap.add_argument("--fast", action="store_true",
                    help="quick look: 2 chains x 300 draws (300 tuning)")
    ap.add_argument("--out", type=Path, default=Path("results/frontier"),
                    help="output folder (default results/frontier)")
    args = ap.parse_args(argv)
    check_args(ap, args, RANGES)
    check_out_dir(args.out, inputs=[args.table or EXAMPLE], parser=ap)  # before any work
    return args


def read_table(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise SystemExit(f"error: --table {path}: no such file")
    try:
        return read_checked_table(path, "frontier table", "write it with python -m ihstats.emergence")
    except UnreadableFile as e:
        raise SystemExit(f"error: --table {e}") from None


def write_markdown(res, path: Path, source: str, hdi_prob: float, extra=()) -> None:
    s = res.summary(hdi_prob)
    sens = res.sensitivity(hdi_prob).set_index("quantity")
    cmp = res.compare_glm(hdi_prob)
    cells = res.model.cells
    note = res.boundary_note(hdi_prob)
    fmt = lambda x: f"{x:.3g}"  # noqa: E731
    lines = [
        "# Frontier fit", "",
        f"- input: {source}",
        f"- runs: {int(cells['n_runs'].sum())} in {len(cells)} cells; formed: "
        f"{int(cells['n_formed'].sum())}",
        f"- model: logit p(formed) = b0 + b_freq z(log f) + b_rel z(log r)"
        f"{' + b_int z z' if res.model.spec.interaction else ''}; Normal(0, "
        f"{res.model.spec.prior_sd}) slopes on the standardised scale",
        f"- separation in the data: **{res.separation}**"
        + (" (the MLE does not exist; the posterior is held finite by the prior, the GLM "
           "cross-check uses Firth's penalty)" if res.separation != "none" else ""),
        f"- boundary: **{note or 'inside the grid'}**",
        f"- max r_hat {s['r_hat'].max():.3f}, min bulk ESS {s['ess_bulk'].min():.0f}",
        "", f"| term | mean | sd | {int(hdi_prob * 100)}% HDI |", "|---|---|---|---|"]
    lines += [f"| {r.term} | {fmt(r.mean)} | {fmt(r.sd)} | [{fmt(r.hdi_lo)}, {fmt(r.hdi_hi)}] |"
              for r in s.itertuples()]
    p = sens.at["P(|b_freq| > |b_rel|)", "value"]
    lines += ["", "## Which knob matters more",
              f"P(|b_freq| > |b_rel|) = {p:.3f} (standardised log knobs): **{knob_verdict(p)}**; "
              f"|b_freq| / |b_rel| = {fmt(sens.at['|b_freq| / |b_rel|', 'value'])} "
              f"[{fmt(sens.at['|b_freq| / |b_rel|', 'lo'])}, "
              f"{fmt(sens.at['|b_freq| / |b_rel|', 'hi'])}].",
              "", "## GLM cross-check",
              f"statsmodels GLM ({res.glm.method}); its contour lies inside the band at "
              f"{cmp['glm_in_band'].mean():.0%} of {len(cmp)} grid points; max |difference| "
              f"{cmp['diff_log'].abs().max():.3f} in log reliability." if len(cmp) else
              f"statsmodels GLM ({res.glm.method}); no contour inside (0, 1] to compare.",
              "", "Figure: `frontier.png` / `frontier.pdf`; data behind it: `frontier.csv`, "
              "`cells.csv`.", *extra]
    path.write_text("\n".join(lines) + "\n")


def load_input(args):
    """``(table, source, comparison, per-run budget table)`` from --grid, --table or the example."""
    if args.grid is not None:
        try:
            long, short, cmp = two_budgets(io.load_grid(args.grid), args.budget_ratio, args.cap)
        except (ValueError, OSError) as e:
            raise SystemExit(f"error: --grid {args.grid}: {e}") from None
        return long, f"{args.grid} (logs read at {cmp.long:,.0f} updates)", cmp, per_run(long, short)
    if args.table is None:
        print(f"no --table given: using the shipped simulated example {EXAMPLE}")
        return (read_table(EXAMPLE), f"{EXAMPLE} (shipped simulated example; pass --table for real runs)",
                None, None)
    return read_table(args.table), str(args.table), None, None


def budget_lines(cmp) -> list[str]:
    tab = cmp.table()
    return ["", "## Two budgets", f"**{cmp.verdict()}**.", "",
            "| budget (updates) | runs formed | frequency boundary at max r | reliability boundary at max f |",
            "|---|---|---|---|"] + [
        f"| {r.budget:,.0f} | {r.n_formed} of {r.n_runs} | {r.frequency:.3g} | {r.reliability:.3g} |"
        for r in tab.itertuples()] + ["", "Per run and seed at both budgets: `budgets.csv`."]


def onset_lines(table, args, out: Path) -> list[str]:
    """Fit the time-to-onset model when the table has onsets; its summary.md section."""
    if not {"onset", "last_step"} <= set(table.columns):
        return ["", "## Time to onset", "not fitted: the table has no `onset` / `last_step` columns "
                "(pass --grid, or an emergence table joined with the knobs)."]
    try:
        model = OnsetSpec().build(table)
    except ValueError as e:
        return ["", "## Time to onset", f"not fitted: {e}."]
    res = model.fit(draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed)
    el = res.elasticities(args.hdi_prob)
    designs = None
    if "not resolved" in res.verdict():
        designs = resolving_designs(res, n_sims=args.design_sims, seed=args.seed)
    res.save(out / "onset", {"designs": designs} if designs is not None else None)
    lines = ["", "## Time to onset",
             f"log onset = a + e_f log f + e_r log r + seed scatter, right-censored at each run's last "
             f"step ({int(res.model.censored.sum())} of {len(res.model.runs)} runs censored).", "",
             f"| elasticity | median | {int(args.hdi_prob * 100)}% HDI | MLE (se) |", "|---|---|---|---|"]
    lines += [f"| {r.term} | {r.median:.3g} | [{r.lo:.3g}, {r.hi:.3g}] | {r.mle:.3g} ({r.mle_se:.2g}) |"
              for r in el.itertuples()]
    diag = res.diagnostics()
    runs = res.model.runs
    cap, f_top = float(runs["time"].max()), float(runs["frequency"].max())
    r_iso = res.iso_onset(cap, [f_top])["reliability"].iloc[0]
    lines += ["", f"Median onset reaches the longest run ({cap:,.0f} updates) at f = {f_top:g}, "
              f"r = {r_iso:.3g}: where the logistic frontier lies near it, that frontier is a line of "
              "equal onset at the budget." if np.isfinite(r_iso) else
              f"Median onset does not reach {cap:,.0f} updates inside (0, 1] at f = {f_top:g}.",
              "", f"Sampler: {'; '.join(diag) if diag else 'no warnings'}.",
              "", f"Which knob moves the onset more: **{res.verdict()}**."]
    if designs is not None:
        ok = designs[designs["enough"]]
        lines.append(
            "A simulation from the fitted posterior resolves it (P >= 0.95 either way in "
            f"{ok.iloc[0].resolution_rate:.0%} of experiments) with {ok.iloc[0].n_seeds} seeds per cell, "
            f"{ok.iloc[0].levels}, cap {ok.iloc[0].cap:,.0f} updates ({ok.iloc[0].n_runs} runs)."
            if len(ok) else
            f"No design tried (up to {designs['n_seeds'].max()} seeds per cell, one level lower, 3 x the "
            f"cap) resolves it in 80% of simulated experiments; best "
            f"{designs['resolution_rate'].max():.0%}.")
        lines.append("Designs tried: `onset/designs.csv`.")
    return lines


def main(argv=None) -> int:
    args = parse_args(argv)
    table, source, cmp, budgets = load_input(args)
    if args.fast:
        args.draws, args.tune, args.chains, args.design_sims = 300, 300, 2, min(args.design_sims, 30)
    t0 = time.perf_counter()
    try:
        model = FrontierSpec(interaction=args.interaction, covariates=tuple(args.covariate),
                             metric=args.metric).build(table)
    except (ValueError, TypeError) as e:  # checked before sampling: name the table
        print(f"error: {source}: {e}", file=sys.stderr)
        return 2
    res = model.fit(draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed)
    out = args.out
    res.save(out)
    res.frontier(args.hdi_prob).to_csv(out / "frontier.csv", index=False)
    plot_frontier(res, out / "frontier", hdi_prob=args.hdi_prob)
    extra = budget_lines(cmp) if cmp is not None else []
    if budgets is not None:
        budgets.to_csv(out / "budgets.csv", index=False)
    extra += onset_lines(table, args, out)
    write_markdown(res, out / "summary.md", source, args.hdi_prob, extra)
    sens = res.sensitivity(args.hdi_prob).set_index("quantity")
    print(f"separation: {res.separation}; GLM: {res.glm.method}; "
          f"P(|b_freq| > |b_rel|) = {sens.at['P(|b_freq| > |b_rel|)', 'value']:.3f}: "
          f"{knob_verdict(sens.at['P(|b_freq| > |b_rel|)', 'value'])}")
    note = res.boundary_note(args.hdi_prob)
    if note:
        print(f"boundary: {note}")
    for line in extra:
        if line.startswith("**") or line.startswith("Which knob") or line.startswith("not fitted"):
            print(line.replace("**", ""))
    print(f"wrote {out}/ (frontier.png, frontier.pdf, frontier.csv, cells.csv, summary.md, "
          f"summary.csv, sensitivity.csv, glm.csv, idata.nc, fit.json) "
          f"in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
