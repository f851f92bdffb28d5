"""Fit the UPT law ``log UPT = log T - a log B - b log C (- c log N)`` and write a posterior report.

    python analyses/fit_upt_law.py                         # runs/bxc-main (the main job's grid)
    python analyses/fit_upt_law.py --runs runs/mygrid       # detect emergence first
    python analyses/fit_upt_law.py --emergence data/example_emergence.csv --fast
    python analyses/fit_upt_law.py --sigma-by C             # seed scatter per context length
    python analyses/fit_upt_law.py --form best              # the law form LOO prefers (loo_forms.csv)
    python analyses/fit_upt_law.py --runs runs/series/pythia-70m runs/series/pythia-160m   # scored series

Writes into --out: report.md, report.html, figures/*.png|pdf (+ the data behind them), the fit
(idata.nc, summary.csv, fit.json, ols.csv), emergence.csv (the table fitted) and,
when N varies, the LOO comparison with and without the size term (loo_compare.csv); with
--sigma-by C, the LOO comparison with one shared sigma (loo_sigma.csv).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from ihstats.base.cli_checks import (PROBABILITY_OPEN, Range, check_args, check_unused, claim_folder)
from ihstats.fit_protocol import SAMPLER_RANGES, add_sampler_flags, apply_fast
from ihstats.detectors import DETECTORS
from ihstats.emergence import emergence_table, onset_metric
from ihstats.base.io import load_grids
from ihstats.law.data import seeds_crossed
from ihstats.law.comparison import best_form, compare_forms, fit_forms, preference
from ihstats.law.model import UPTLawModel
from ihstats.law.report import write_upt_report
from ihstats.law.sensitivity import circuit_warning, compare_sigma_by, compare_size_term, sensitivity_table
from ihstats.law.spec import FORMS, UPTLawError, UPTLawSpec
from ihstats.base.fileio import UnreadableFile, atomic_write_csv, atomic_write_text, read_table
from ihstats.fit_protocol import save_and_warn
from ihstats.base.display import CSV_FLOAT_FORMAT, rounded_csv
from ihstats.tables import formed_counts, outcome_basis, outcome_word
from ihstats.base import progress
from ihstats.base.command import out_folder, run_cli

DEFAULT_RUNS = "runs/bxc-main"
RANGES = {**SAMPLER_RANGES, "target_accept": PROBABILITY_OPEN, "hdi_prob": PROBABILITY_OPEN, "threshold": Range(0, lo_open=True)}


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python analyses/fit_upt_law.py",
                                description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[1:]))
    src = p.add_mutually_exclusive_group()
    src.add_argument("--runs", nargs="+", default=None,
                     help=f"grid/run or scored-series directories (several are one table): detect emergence "
                          f"with ihstats.emergence first (default when no source is given: {DEFAULT_RUNS})")
    src.add_argument("--emergence", default=None,
                     help="emergence table CSV with the docs/DESIGN.md columns (skips detection)")
    p.add_argument("--out", default=None,
                   help="output directory (default: results/upt_law/<name of the grid or table>; "
                        "never the input's own folder)")
    add_sampler_flags(p, target_accept=True)
    p.add_argument("--hdi-prob", type=float, default=0.9, help="interval width (default 0.9)")
    p.add_argument("--onset", choices=("auto", "ps", "indist", "loss"), default="auto",
                   help="--runs: which onset to fit: ps (the repeat probe), indist (PS at the data's own copies), "
                        "loss (the probe-free in-distribution loss gain); auto (default): indist where logged, else ps")
    p.add_argument("--metric", default=None, help="emergence metric to fit (overrides --onset)")
    p.add_argument("--onset-method", choices=("bayes", "pelt", "threshold"), default="bayes",
                   help="--runs: the onset detector (default bayes); threshold with --threshold 0.3 reads the "
                        "crossing of the formed level, as the until-emergence budget does")
    p.add_argument("--threshold", type=float, default=None,
                   help="--onset-method threshold: the absolute level whose crossing is the onset (e.g. 0.3)")
    p.add_argument("--likelihood", choices=["student_t", "normal"], default="student_t",
                   help="noise model (default student_t)")
    p.add_argument("--form", choices=[*FORMS, "best"], default="power",
                   help="the law's form (ihstats.law.forms): power (default), critical_batch "
                        "(UPT = S_min (C/C_c)^-b (1 + B_noise/B)), tokens (log UPT = log T - g log(B C)); best: "
                        "fit all three, compare them by PSIS-LOO (loo_forms.csv) and keep the one ranked first; "
                        "the saved posterior records its form and predict answers from it")
    p.add_argument("--size-term", choices=["auto", "on", "off"], default="auto",
                   help="main model with '- c log N'? auto = off, but compare both by LOO when N "
                        "varies (default auto)")
    p.add_argument("--no-measurement-error", action="store_true",
                   help="ignore the onset intervals (onset_lo/onset_hi not needed)")
    p.add_argument("--compare", choices=["auto", "on", "off"], default="auto",
                   help="LOO comparison with/without the size term (a second fit); auto = on "
                        "when N varies, except with --fast (default auto)")
    p.add_argument("--cell-effect", choices=["auto", "on", "off"], default="auto",
                   help="a per-cell effect separating the law's residual (cell_sd) from seed-to-seed "
                        "scatter (sigma); auto = on when some cell_id has several seeds")
    p.add_argument("--seed-effect", choices=["auto", "on", "off"], default="off",
                   help="a crossed per-seed effect (seed_sd): the runs of one training seed share an offset "
                        "across cells (the seed lottery); auto = on when some seed was run in several cells "
                        "(default off)")
    p.add_argument("--seed-within", default=None, metavar="COLUMN",
                   help="with --seed-effect: one offset per seed and level of this column (in the shipped grids "
                        "model.context is 128 at every C, so a seed's initial weights are the same in every cell)")
    p.add_argument("--seed-kinds", action="store_true",
                   help="seeds by kind: crossed effects of the weight seed and the data seed (columns weight_seed, "
                        "data_seed; = seed in grids that do not set them, where the two are confounded); a new "
                        "run's prediction draws a new seed of each kind. Not with --seed-effect on")
    p.add_argument("--sigma-by", default=None, metavar="COLUMN",
                   help="a seed-level scatter per level of this emergence-table column (C for the "
                        "context, or any column), partially pooled; compared by LOO with one shared "
                        "sigma (a second fit, unless --compare off or --fast) and shown in the "
                        "sensitivity table (default: one shared sigma)")
    p.add_argument("--sensitivity", choices=["auto", "on", "off"], default="auto",
                   help="refit under the other likelihood and under priors centred on the published "
                        "exponents (two more fits at half the draws); auto = on, except with --fast")
    args = p.parse_args(argv)
    check_args(p, args, RANGES)
    given = "--emergence gives the onsets (detection is skipped)" if args.emergence else None
    takes = DETECTORS[args.onset_method].options()
    check_unused(p, args, {"onset": given or ("--metric chooses the metric" if args.metric else None),
                           "onset_method": given, **{f: given or (None if f in takes else
                                                                  f"--onset-method {args.onset_method} does not take it")
                                                     for f in ("threshold",)}})
    inputs = [args.emergence] if args.emergence else (args.runs or [DEFAULT_RUNS])
    args.out = out_folder(args.out, "upt_law", inputs[0], inputs=inputs, parser=p)
    return args


def load_table(args):
    """The emergence table and a description of its source."""
    if args.emergence:
        path = Path(args.emergence)
        if not path.is_file():
            raise SystemExit(f"error: --emergence: file not found: {path}")
        try:
            table = read_table(path, "emergence table", "write it with python -m ihstats.emergence")
        except UnreadableFile as e:
            raise SystemExit(f"error: --emergence {e}") from None
        held = sorted(map(str, table["metric"].dropna().unique())) if "metric" in table else []
        print(f"onsets from {path}: metric {args.metric or ', '.join(held) or 'not named (no metric column)'}"
              + (" (--metric)" if args.metric else ""))
        return table, str(path)
    runs = [Path(r) for r in (args.runs or [DEFAULT_RUNS])]
    for r in runs:
        if not r.is_dir():
            if args.runs:
                raise SystemExit(f"error: --runs: directory not found: {r}")
            raise SystemExit(f"error: no input: {DEFAULT_RUNS} does not exist; run "
                             f"`python -m ihtrain.grid` first or pass --emergence CSV")
    progress.step(f"reading {', '.join(map(str, runs))} and detecting each run's onset (ihstats.emergence)")
    grid = load_grids(runs, on_error="skip")
    for why in grid.skipped:  # one line per run left out, never a silent loss
        print(f"warning: {why} (run skipped)", file=sys.stderr)
    metric = args.metric or onset_metric(grid.metrics, args.onset)
    print(f"onsets from the {metric} curves (--onset {args.onset})")
    flags = {"threshold": args.threshold}  # each flag to the detector that takes it
    kw = {k: v for k, v in flags.items() if v is not None and k in DETECTORS[args.onset_method].options()}
    table = emergence_table(grid, metric=metric, head="max", method=args.onset_method, on_error="skip", **kw)
    for run in grid.runs[~grid.runs["run_id"].isin(table["run_id"])].itertuples():  # named, never dropped silently
        print(f"warning: run {run.run_id} ({run.path}): no {metric!r} onset (not logged, or its curve was "
              f"rejected); left out of the fit", file=sys.stderr)
    return table, f"{', '.join(map(str, runs))} (emergence detected by ihstats.emergence)"


def sigma_comparison(args, table, spec, res, fit_kw, out):
    """With --sigma-by: the LOO comparison with one shared sigma (written to loo_sigma.csv) and
    the shared fit, reused by the sensitivity table; (None, {}) otherwise."""
    if not spec.sigma_by or args.compare == "off" or (args.compare == "auto" and args.fast):
        return None, {}
    shared = UPTLawModel.from_table(table, replace(spec, sigma_by=None)).fit(**fit_kw)
    cmp = compare_sigma_by(table, spec, fits={f"sigma_by_{spec.sigma_by}": res, "shared_sigma": shared})
    atomic_write_csv(out / "loo_sigma.csv", cmp, float_format=CSV_FLOAT_FORMAT)
    return cmp, {"shared sigma": shared}


def choose_form(args, table, res, fit_kw):
    """The fit to keep and, with --form best, the PSIS-LOO table of every form (``res`` is the
    power form's fit; the form ranked first is kept); ``(res, None)`` otherwise."""
    if args.form != "best":
        return res, None
    fits = fit_forms(table, res.spec, fits={"power": res}, **fit_kw)
    forms = compare_forms(fits)
    return fits[best_form(forms)], forms


def size_comparison(args, table, res, has_n: bool, fit_kw: dict, out: Path):
    """The LOO comparison with and without the size term (written to loo_compare.csv) and the
    note the report shows when it is not run: ``(frame or None, note)``."""
    spec = res.spec
    if args.compare == "off" or (args.compare == "auto" and args.fast):
        return None, ("Skipped (--compare off)." if args.compare == "off" else
                      "Skipped in --fast (it needs a second fit): rerun without --fast or with --compare on.")
    if not has_n:
        return None, "Not identifiable: the table has a single model size N (or no N column)."
    if spec.form != "power":
        return None, f"Not defined: the {spec.form} form has no model-size term (the power form has)."
    key = "with_N" if spec.size_term else "without_N"
    compare = compare_size_term(table, spec, fits={key: res}, **fit_kw)
    atomic_write_csv(out / "loo_compare.csv", compare.rename_axis("model"), float_format=CSV_FLOAT_FORMAT)  # the index names the model
    return compare, ""


def main(argv=None) -> int:
    t0 = time.perf_counter()
    args = parse_args(argv)
    apply_fast(args)
    out = Path(args.out)
    table, source = load_table(args)

    spec_kw = dict(likelihood=args.likelihood, measurement_error=not args.no_measurement_error,
                   metric=args.metric, hdi_prob=args.hdi_prob, sigma_by=args.sigma_by)
    fit_kw = dict(draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed,
                  target_accept=args.target_accept)
    has_n = "N" in table.columns and table["N"].nunique() > 1
    replicated = "cell_id" in table.columns and table["cell_id"].duplicated().any()
    spec_kw["cell_effect"] = args.cell_effect == "on" or (args.cell_effect == "auto" and replicated)
    spec_kw["seed_effect"] = args.seed_effect == "on" or (args.seed_effect == "auto" and seeds_crossed(table))
    spec_kw["seed_within"] = args.seed_within  # without the seed effect, refused by the spec
    spec_kw["seed_kinds"] = args.seed_kinds
    try:
        spec = UPTLawSpec(size_term=args.size_term == "on", form="power" if args.form == "best" else args.form,
                          **spec_kw)
        res, forms = choose_form(args, table, UPTLawModel.from_table(table, spec).fit(**fit_kw), fit_kw)
    except UPTLawError as e:  # checked before any sampling: name the table it came from
        print(f"error: {source}: {e}", file=sys.stderr)
        return 2
    spec = res.spec
    claim_folder(out)  # made and marked as the package's before the first write
    atomic_write_text(out / "emergence.csv", rounded_csv(res.data.table))
    if forms is not None:
        atomic_write_csv(out / "loo_forms.csv", forms.rename_axis("model"), float_format=CSV_FLOAT_FORMAT)
        print("law forms, PSIS-LOO:\n" + forms[["rank", "elpd_loo", "p_loo", "elpd_diff", "se", "dse"]].round(2).to_string())
        print(preference(forms, "law forms") + f"; the {spec.form} form is kept")
    compare, note = size_comparison(args, table, res, has_n, fit_kw, out)

    sigma_cmp, shared = sigma_comparison(args, table, spec, res, fit_kw, out)
    sens, sens_note = None, ""
    if args.sensitivity == "on" or (args.sensitivity == "auto" and not args.fast):
        half = dict(fit_kw, draws=max(200, args.draws // 2), tune=max(200, args.tune // 2))
        sens = sensitivity_table(table, spec, base=res, fits=shared, **half)
        atomic_write_csv(out / "sensitivity.csv", sens, index=False, float_format=CSV_FLOAT_FORMAT)
    else:
        sens_note = "Skipped (--fast or --sensitivity off): rerun without --fast or with --sensitivity on."
    paths = save_and_warn(res, out)
    progress.step(f"writing the report into {out}: LOO, influence, figures")
    rep = write_upt_report(res, out, compare=compare, compare_note=note, source=source,
                           sensitivity=sens, sensitivity_note=sens_note,
                           sigma_compare=sigma_cmp)

    summ, ols = res.summary(), res.ols()
    t = res.data.table
    basis = outcome_basis(res.data.table)
    counts = formed_counts(~res.data.censored, t['censored'] if 'censored' in t else res.data.censored)
    word = outcome_word(basis)  # crossings are never called formed
    print(f"UPT law on {counts.replace('formed', word)}; the not-{word} runs enter as right-censored at their "
          f"last step; {word}: {basis}; from {source}")
    print(f"{'param':>6} {'posterior mean':>15} {f'{args.hdi_prob:.0%} HDI':>22} "
          f"{'OLS (uncensored)':>17} {'r_hat':>6} {'ess_bulk':>8}")
    scale = "T" if "T" in summ.index else "S_min"  # the critical-batch form has S_min, not T
    for p in [q for q in summ.index if q != scale]:  # sigma[level] rows with --sigma-by
        s = summ.loc[p]
        o = f"{ols.loc[p, 'estimate']:.3f}" if p in ols.index else ""
        print(f"{p:>6} {s['mean']:15.3f} {f'[{s.hdi_lo:.3f}, {s.hdi_hi:.3f}]':>22} {o:>17} "
              f"{s.r_hat:6.3f} {s.ess_bulk:8.0f}")
    # the mean of T is not exp(mean of log T): name it for what it is
    print(f"{scale} (posterior mean of exp(log {scale})) = {summ.loc[scale, 'mean']:.4g}; r(pred, obs log UPT) = "
          f"{res.r_obs_pred:.3f}")
    if compare is not None:
        print("LOO with/without size term:\n" + compare[["rank", "elpd_loo", "elpd_diff", "dse",
                                                         "weight"]].to_string())
    if sigma_cmp is not None:
        print(f"LOO, sigma by {spec.sigma_by} vs one shared sigma:\n"
              + sigma_cmp[["rank", "elpd_loo", "elpd_diff", "dse", "weight"]].to_string())
    if sens is not None:
        cols = ["variant", "a", "a_lo", "a_hi", "b", "b_lo", "b_hi", "sigma", "elpd_loo"]
        print("what the answer depends on:\n" + sens[cols].round(3).to_string(index=False))
    if mixed := circuit_warning(res.data.table):
        print(f"warning: {mixed}", file=sys.stderr)
    print(f"wrote {rep['markdown']}, {rep['html']}, {paths['idata']}, {paths['fit']} "
          f"and figures in {out / 'figures'}; the command took {time.perf_counter() - t0:.0f} s (the report gives "
          f"the sampler's share)")
    return 0


if __name__ == "__main__":
    run_cli(main)
