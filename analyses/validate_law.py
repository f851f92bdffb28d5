"""Score the UPT law out of sample: leave-one-cell-out on a grid, or a grid it never saw.

    python analyses/validate_law.py --runs data/reference_runs/bxc-markov --cv cell
    python analyses/validate_law.py --fit data/reference_runs/bxc-markov \\
        --test data/reference_runs/bxc-markov-holdout
    python analyses/validate_law.py --posterior results/fit/idata.nc --test runs/new --no-baselines
    python analyses/validate_law.py --fit data/reference_runs/bxc-markov \\
        --test data/reference_runs/bxc-markov-holdout --compare-forms --circuits

Each grid is a grid directory (emergence is detected first) or an emergence table CSV. Scores
(coverage of the 50% / 90% predictive intervals, mean log predictive density, median |error| of
the predicted log UPT, median hi/lo ratio of the intervals in UPT) for the law and the baselines (published exponents,
tokens form, constant tokens per head, constant updates, OLS ignoring censoring), overall and split
into interpolation / extrapolation, go to --out (default results/validate_law/<grid>/loco or .../<test grid>/holdout):
summary.csv, summary_by_region.csv, runs.csv, validation.json, figures/validation.png|pdf; with
--test also idata.nc, the law's fit (prior and posterior predictive when fitted here) with its
predictions of the held-out runs as ArviZ's `predictions` group (log UPT per draw and run) and
`predictions_constant_data` (B, C, the observed log onset, censored).
--compare-forms and --circuits add the law-form and the mixture-vs-single comparison tables (PSIS-LOO
on the fitted grid, held-out log score on --test), printed and saved as loo_forms.csv,
heldout_forms.csv, loo_circuits.csv, heldout_circuits.csv.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from ihstats.tables import outcome_basis
from ihstats.base.cli_checks import check_args, claim_folder
from ihstats.fit_protocol import SAMPLER_RANGES, add_sampler_flags, apply_fast
from ihstats.emergence import emergence_table, onset_metric
from ihstats.base.io import load_grid
from ihstats.law.comparison import COLUMNS, preference
from ihstats.law.data import seeds_crossed
from ihstats.law.predict import load_posterior
from ihstats.law.report import write_validation_figure
from ihstats.law.spec import FORMS, UPTLawError, UPTLawSpec
from ihstats.law.validation import ValidationSpec, cross_validate, validate_holdout
from ihstats.base.fileio import UnreadableFile, read_table
from ihstats.base.command import out_folder, run_cli


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python analyses/validate_law.py",
                                description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[1:]))
    p.add_argument("--runs", help="grid directory or emergence CSV to cross-validate (with --cv)")
    p.add_argument("--cv", choices=["cell"], default=None,
                   help="cell: leave one cell (all its seeds) out, refit, predict it")
    p.add_argument("--fit", help="grid directory or emergence CSV to fit the law on (held-out mode)")
    p.add_argument("--posterior", help="a saved law posterior (fit folder or idata.nc) instead of "
                                       "fitting --fit; baselines need --fit as well")
    p.add_argument("--test", help="held-out grid directory or emergence CSV to predict")
    p.add_argument("--out", default=None, help="output folder (default results/validate_law/<grid>/loco with --cv, results/validate_law/<test grid>/holdout with --test)")
    add_sampler_flags(p, chains=2, seed_help="sampler and scoring seed")  # 2 chains: one fit per fold
    p.add_argument("--likelihood", choices=["student_t", "normal"], default="student_t",
                   help="the law's noise model (default student_t, as analyses/fit_upt_law.py)")
    p.add_argument("--cell-effect", choices=["auto", "on", "off"], default="auto",
                   help="the law's cell effect; auto = on when some cell has several seeds")
    p.add_argument("--seed-effect", choices=["auto", "on", "off"], default="off",
                   help="the law's crossed seed effect (seed_sd; a held-out run at a seed the fit saw takes that "
                        "seed's offset); auto = on when some seed was run in several cells (default off)")
    p.add_argument("--seed-within", default=None, metavar="COLUMN",
                   help="with --seed-effect: one offset per seed and level of this column (in the shipped grids "
                        "model.context is 128 at every C, so a seed's initial weights are the same in every cell)")
    p.add_argument("--seed-kinds", action="store_true",
                   help="the law's seed terms by kind (weight_seed_sd, data_seed_sd; as analyses/fit_upt_law.py "
                        "--seed-kinds): every held-out run draws a new seed of each kind")
    p.add_argument("--sigma-by", default=None, metavar="COLUMN",
                   help="one seed-level sigma per level of this emergence-table column (e.g. C), "
                        "as analyses/fit_upt_law.py --sigma-by (default: one shared sigma)")
    p.add_argument("--form", choices=FORMS, default="power",
                   help="the law's form (ihstats.law.forms; default power)")
    p.add_argument("--compare-forms", action="store_true",
                   help="also fit every law form and print their comparison: PSIS-LOO on the fitted "
                        "grid and, with --test, the held-out log score (elpd difference and its SE)")
    p.add_argument("--circuits", action="store_true",
                   help="also fit the two-circuit mixture (ihstats.law.mixture) and compare it with the "
                        "single-circuit law, the same two ways")
    p.add_argument("--no-baselines", action="store_true", help="score the law only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar over refits")
    args = p.parse_args(argv)
    check_args(p, args, SAMPLER_RANGES)
    if args.cv and not args.runs:
        p.error("--cv cell needs --runs GRID")
    if args.runs and not args.cv:
        p.error("--runs needs --cv cell (or use --fit GRID_A --test GRID_B)")
    if not args.runs and not (args.test and (args.fit or args.posterior)):
        p.error("give --runs GRID --cv cell, or --test GRID_B with --fit GRID_A or --posterior FILE")
    if args.runs and (args.fit or args.test or args.posterior):
        p.error("--runs/--cv and --fit/--test/--posterior are two different modes: pick one")
    if (args.compare_forms or args.circuits) and args.posterior and not args.fit:
        p.error("--compare-forms / --circuits fit the alternatives: they need --fit GRID (or --runs), not only --posterior")
    # never over what it reads (a grid's summary.csv, a posterior); by default beside the grid it scores
    args.out = out_folder(args.out, "validate_law", args.runs if args.cv else args.test,
                          sub="loco" if args.cv else "holdout",
                          inputs=[x for x in (args.runs, args.fit, args.test, args.posterior) if x], parser=p)
    return args


def load_table(where: str, flag: str) -> pd.DataFrame:
    """An emergence table from a grid directory (detected here) or an emergence CSV; says on stdout
    what its formed runs rest on (certified, or crossings where the logs lack the general probe)."""
    table = _load_table(where, flag)
    print(f"{flag} {where}: formed: {outcome_basis(table)}")
    return table


def _load_table(where: str, flag: str) -> pd.DataFrame:
    path = Path(where)
    if path.is_file():
        try:
            return read_table(path, "emergence table", "write it with python -m ihstats.emergence")
        except UnreadableFile as e:
            raise SystemExit(f"error: {flag} {e}") from None
    if not path.is_dir():
        raise SystemExit(f"error: {flag}: not found: {path} (a grid directory or emergence CSV)")
    grid = load_grid(path, on_error="skip")
    for why in grid.skipped:  # one line per run left out, never a silent loss
        print(f"warning: {why} (run skipped)", file=sys.stderr)
    # the in-distribution PS where the logs hold it (issue 52), as fit_upt_law reads by default
    table = emergence_table(grid, metric=onset_metric(grid.metrics), head="max", on_error="skip")
    if "status" in table.columns:  # a run still training is not censored: it has not ended yet
        live = table["status"].astype(str).isin(["running", "pending", "interrupted"])
        for rid in table.loc[live, "run_id"]:
            print(f"warning: {where}: run {rid} has not finished (left out)", file=sys.stderr)
        table = table[~live]
    return table


def _spec(args, table: pd.DataFrame) -> ValidationSpec:
    replicated = "cell_id" in table.columns and table["cell_id"].duplicated().any()
    cell = args.cell_effect == "on" or (args.cell_effect == "auto" and replicated)
    seed = args.seed_effect == "on" or (args.seed_effect == "auto" and seeds_crossed(table))
    law = UPTLawSpec(likelihood=args.likelihood, cell_effect=cell, sigma_by=args.sigma_by, form=args.form,
                     seed_effect=seed and not args.seed_kinds, seed_within=args.seed_within, seed_kinds=args.seed_kinds)
    return ValidationSpec(law=law, baselines=not args.no_baselines, seed=args.seed,
                          forms=FORMS if args.compare_forms else (), circuits=args.circuits)


def run(args):
    fit_kw = dict(draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed)
    if args.cv:
        table = load_table(args.runs, "--runs")
        return cross_validate(table, _spec(args, table), fit_kw=fit_kw, source=args.runs,
                              progress=not args.no_progress)
    test = load_table(args.test, "--test")
    train = load_table(args.fit, "--fit") if args.fit else None
    idata = load_posterior(args.posterior) if args.posterior else None
    src = f"{args.posterior or args.fit} -> {args.test}"
    return validate_holdout(test, _spec(args, train if train is not None else test),
                            train_table=train, idata=idata, fit_kw=fit_kw, source=src)


def print_new_seed(meta: dict) -> None:
    """The headline first: coverage and width of the new-run interval at seeds the fit never saw."""
    h = meta.get("new_seed")
    if not h:
        return
    print(f"new seeds ({h['basis']}; {h['model']}): {h['n_runs']} runs, {h['level']:.0%} interval covers "
          f"{h['cover']:.0%}, median width {h['median_hi_lo_ratio']:.1f}x (hi / lo in UPT); "
          f"PIT histogram (10 bins) {h['pit_hist']}")


def print_tables(res) -> None:
    print_new_seed(res.meta)
    cols = ["model", "n_runs", "n_censored", "cover_50", "cover_90", "mean_lpd", "median_abs_err",
            "median_hi_lo_ratio_90", "pit_ks_p"]
    print(res.summary()[cols].round(3).to_string(index=False))
    by = res.summary(by=("model", "region"))
    if by["region"].nunique() > 1:
        print("by region:\n" + by[["model", "region"] + cols[1:]].round(3).to_string(index=False))
    print_comparisons(res.meta)
    for fold, why in res.meta.get("skipped_folds", {}).items():
        print(f"note: fold {fold} not scored: {why} (the law cannot be refitted to predict it)")
    for fold, levels in res.meta.get("thin_levels", {}).items():
        print(f"note: fold {fold}: {res.meta['law_spec']['sigma_by']} level(s) {levels} kept fewer than two "
              f"uncensored runs without it; their training runs were left out of that fold and its runs "
              f"predicted with a new level's scatter")


def print_comparisons(meta: dict) -> None:
    """The law-form and circuit comparison tables a validation holds, each with its verdict line."""
    heads = {"loo_forms": ("law forms, PSIS-LOO on the fitted grid", "elpd_loo"),
             "heldout_forms": ("law forms, held-out log score", "elpd"),
             "loo_circuits": ("two-circuit mixture vs single-circuit law, PSIS-LOO on the fitted grid", "elpd_loo"),
             "heldout_circuits": ("two-circuit mixture vs single-circuit law, held-out log score", "elpd")}
    for key, (head, elpd) in heads.items():
        if key in meta:
            frame = pd.DataFrame(meta[key]).set_index("model")
            cols = [c for c in (*COLUMNS, "n_runs", "elpd") if c in frame.columns]
            print(f"{head}:\n" + frame[list(dict.fromkeys(cols))].round(2).to_string())
            print(preference(frame, head, elpd=elpd))


def main(argv=None) -> int:
    t0 = time.perf_counter()
    args = parse_args(argv)
    apply_fast(args)
    try:
        res = run(args)
    except UPTLawError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = args.out
    claim_folder(out)  # made and marked as the package's before the first write
    paths = res.save(out)
    paths["figure"] = write_validation_figure(res, out)
    print_tables(res)
    fit = f", {paths['idata']} (the fit with its predictions)" if "idata" in paths else ""
    print(f"wrote {paths['summary']}, {paths['runs']}, {paths['record']}, {paths['figure']}{fit} "
          f"({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    run_cli(main)
