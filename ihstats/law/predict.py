"""Predicted updates-to-emergence for a planned run, from a fitted UPT-law posterior.

    python -m ihstats.law.predict --batch-size 512 --context 2048 [--model-size N] [--posterior FILE]
    python -m ihstats.law.predict --batch-size 512 --context 2048 --law published

By default the shipped reference posterior answers: the law fitted to real runs, the natural-text
grid ``data/reference_runs/bxc-cpu-h200-bf16`` (18 small GPTs on one H200; 4 chains x 1000 draws,
remade by :func:`fit_reference_posterior`). ``--posterior`` takes your own fit: the folder
``analyses/fit_upt_law.py`` (or ``UPTLawResults.save``) wrote, or its ``idata.nc`` (``upt_law.nc``
in folders written before the fits shared one layout); ``--law published`` uses the published
point estimate ``ln UPT = 13.26 - 0.37 ln B - 0.62 ln C`` (Aoyama et al., no interval published).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ihstats import _bayes
from ihstats.base.cli_checks import PROBABILITY_OPEN, Range, check_args
from ihstats.emergence import emergence_table, onset_metric
from ihstats.base.io import load_grid
from ihstats.law.data import seed_key
from ihstats.law.forms import FORM_TEXT, posterior_form
from ihstats.law.mixture import is_mixture, predict_mixture
from ihstats.law.model import UPTLawModel
from ihstats.law.results import extrapolation_warnings, predict_from_posterior
from ihstats.law.spec import UPTLawError, UPTLawSpec
from ihstats.simulate.law import EXAMPLE_SETTINGS, example_table
from ihstats.base.fileio import atomic_write_text
from ihstats.base.command import run_cli

#: The shipped posteriors: package data of ihstats (pyproject.toml), beside this group
REFERENCE_DIR = Path(__file__).resolve().parents[1] / "reference_posterior"
REFERENCE_FILE = REFERENCE_DIR / "upt_law_reference.nc"
REFERENCE_RUNS = "data/reference_runs/bxc-cpu-h200-bf16"
# Aoyama et al. (arXiv 2511.16893): ln UPT = 13.26 - 0.37 ln B - 0.62 ln C, point estimates only
PUBLISHED_LAW = {"log_T": 13.26, "a": 0.37, "b": 0.62}
# what B, C and N mean: at least one sequence per update, a context of two tokens, one parameter
RANGES = {"batch_size": Range(1), "context": Range(2), "model_size": Range(1), "hdi_prob": PROBABILITY_OPEN}


def write_reference_posterior(res, out_dir, *, source: str, n_draws: int = 1000,
                              simulated: bool = True, name: str = "upt_law_reference") -> str:
    """Write a thinned posterior (``n_draws`` draws, posterior group only, < 1 MB) and a JSON
    note saying what it was fitted to; returns the netCDF path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    small = _bayes.thin_posterior(res.idata, n_draws, seed=0)
    small.posterior.attrs["source"] = source
    small.posterior.attrs["simulated"] = int(simulated)
    path = _bayes.to_netcdf(small, out / f"{name}.nc")
    note = {"source": source, "simulated": simulated, "n_draws": n_draws,
            "summary": res.summary().reset_index().to_dict(orient="records"),
            "diagnostics": res.diagnostics(), "versions": _bayes.versions()}
    atomic_write_text(out / f"{name}.json", json.dumps(note, indent=2, default=float))
    return path


def fit_reference_posterior(runs=None, out_dir=REFERENCE_DIR) -> str:
    """Refit the shipped default: the UPT law on a real grid's logs, 4 chains x 1000 draws, seed 0
    (the defaults of ``analyses/fit_upt_law.py``, without its size-term comparison)."""
    path = Path(runs) if runs else Path(__file__).resolve().parents[2] / REFERENCE_RUNS
    runs = runs or REFERENCE_RUNS
    grid = load_grid(path, on_error="skip")
    table = emergence_table(grid, metric=onset_metric(grid.metrics), head="max", on_error="skip")
    res = UPTLawModel.from_table(table, UPTLawSpec()).fit(draws=1000, tune=1000, chains=4, seed=0)
    return write_reference_posterior(res, out_dir, simulated=False, source=(
        f"real runs {runs} (emergence by ihstats.emergence, bayes; "
        f"ihstats.law.predict.fit_reference_posterior, 4 chains x 1000 draws, seed 0)"))


def fit_simulated_reference(out_dir=REFERENCE_DIR) -> str:
    """Refit the shipped simulated example posterior (``upt_law_simulated.nc``): the UPT law on the
    example table of :func:`ihstats.simulate.law.example_table`, 4 chains x 1000 draws, seed 1."""
    res = UPTLawModel.from_table(example_table()[0], UPTLawSpec()).fit(draws=1000, tune=1000, chains=4, seed=1)
    for w in res.diagnostics():
        print(f"warning: {w}")
    return write_reference_posterior(res, out_dir, name="upt_law_simulated", source=(
        f"simulated example table data/example_emergence.csv (python -m ihstats.simulate.law, "
        f"seed {EXAMPLE_SETTINGS['seed']})"))


def predict_published(B: float, C: float) -> dict:
    """The published law's point prediction (no interval was published)."""
    upt = float(np.exp(PUBLISHED_LAW["log_T"] - PUBLISHED_LAW["a"] * np.log(B)
                       - PUBLISHED_LAW["b"] * np.log(C)))
    return {"B": B, "C": C, "N": None, "upt": upt, "tokens": upt * B * C, "upt_lo": None,
            "upt_hi": None, "pred_lo": None, "pred_hi": None}


def load_posterior(path=None):
    """Read a saved UPT-law posterior: a fit's folder or its netCDF file (old or new file names,
    :func:`ihstats._bayes.fit_file`); ``None`` gives the shipped reference posterior."""
    p = _bayes.fit_file(path, "idata") if path else REFERENCE_FILE
    if not p.exists():
        raise UPTLawError(f"--posterior: file not found: {p}" if path else
                          f"reference posterior missing at {p}: reinstall the package or pass "
                          f"--posterior")
    try:
        idata = _bayes.from_netcdf(p)
    except Exception as e:  # noqa: BLE001 - netCDF4/h5py/xarray raise OSError, ValueError, KeyError, ...
        first = str(e).splitlines()[0] if str(e) else ""
        raise UPTLawError(f"--posterior: {p} is not a readable netCDF posterior ({type(e).__name__}: "
                          f"{first}); pass the folder (or its idata.nc) written by "
                          f"analyses/fit_upt_law.py") from None
    if "center_logB" not in idata.posterior.attrs:
        raise UPTLawError(f"--posterior: {p} is not a UPT-law posterior (no center_logB "
                          f"attribute); use the folder (or its idata.nc) written by "
                          f"analyses/fit_upt_law.py")
    return idata


def validation_record(path=None) -> dict | None:
    """The out-of-sample validation ``analyses/validate_law.py`` measured for a posterior, if one
    was stored beside it: ``validation.json`` in the fit folder (or beside its netCDF), or
    ``<name>.validation.json`` beside the netCDF (the shipped reference's); ``None`` when none."""
    p = Path(path) if path else REFERENCE_FILE
    folder = p if p.is_dir() else p.parent
    for cand in ([] if p.is_dir() else [p.with_suffix(".validation.json")]) + [folder / "validation.json"]:
        if cand.is_file():
            try:
                rec = json.loads(cand.read_text())
            except (OSError, ValueError) as e:
                raise UPTLawError(f"{cand}: not a readable validation record ({e}); rerun "
                                  f"analyses/validate_law.py or delete it") from None
            return {**rec, "file": str(cand)}
    return None


def _hi_lo_ratio(law: dict) -> float:
    # records written before issue 56 named the ratio median_width_90; both keep loading
    for key in ("median_hi_lo_ratio_90", "median_width_90"):
        if key in law:
            return float(law[key])
    raise UPTLawError("validation record: no median_hi_lo_ratio_90 in its 'law' entry; rerun "
                      "analyses/validate_law.py to write a new validation.json")


def validation_lines(rec: dict | None, **values) -> tuple[str, list[str]]:
    """What validation says about this posterior's intervals (one line) and a warning per factor
    (``B=..., C=...``) outside the range the validation covered."""
    if not rec or "law" not in rec:
        return ("coverage: not validated out of sample (run analyses/validate_law.py and keep its "
                "validation.json beside the posterior)"), []
    law, mode = rec["law"], {"loco": "leave-one-cell-out", "holdout": "held-out runs"}.get(
        rec.get("mode"), rec.get("mode"))
    line = (f"coverage measured out of sample ({mode}, {rec.get('source', '?')}): the 90% interval "
            f"held for {law['cover_90']:.0%} of {int(law['n_runs'])} runs, the 50% for "
            f"{law['cover_50']:.0%}; median 90% interval hi/lo ratio {_hi_lo_ratio(law):.1f}x")
    warns = [f"{k} = {v:g} lies outside the validated range {lo:g}-{hi:g}: the coverage above was "
             f"measured inside it" for k, (lo, hi) in rec.get("range", {}).items()
             if (v := values.get(k)) is not None and not lo <= v <= hi]
    return line, warns


def _check_usable(row) -> None:
    """Finite, valid inputs can still predict nonsense far outside the fit (B = 1e30 gives
    "0 updates"): refuse a prediction under one update or one that overflows."""
    vals = row[["upt", "upt_lo", "upt_hi", "pred_lo", "pred_hi", "tokens"]].to_numpy(dtype=float)
    if not (np.all(np.isfinite(vals)) and row["upt"] >= 1):
        raise UPTLawError(f"B = {row['B']:g}, C = {row['C']:g}: the law predicts {row['upt']:.3g} "
                          f"updates, not a usable prediction; choose B and C near the fitted "
                          f"range")


def _published_main(args) -> int:
    if args.model_size is not None:
        print("error: --model-size: the published law has no size term (ln UPT depends on B and C "
              "only); drop --model-size", file=sys.stderr)
        return 2
    row = predict_published(args.batch_size, args.context)
    if not 1 <= row["upt"] < np.inf:  # the same check as a fitted law's prediction
        print(f"error: B = {args.batch_size:g}, C = {args.context:g}: the published law predicts "
              f"{row['upt']:.3g} updates, not a usable prediction; choose B and C near the published "
              f"range", file=sys.stderr)
        return 2
    src = ("published law ln UPT = 13.26 - 0.37 ln B - 0.62 ln C (Aoyama et al., arXiv "
           "2511.16893; point estimate, no interval published)")
    if args.json:
        print(json.dumps({**row, "posterior": src, "warnings": []}, allow_nan=False))
        return 0
    print(f"B = {args.batch_size:g}, C = {args.context:g}")
    print(f"predicted UPT (published law): {row['upt']:,.0f} updates ({row['tokens']:,.3g} tokens)")
    print(f"using the {src}")
    return 0


def _source_line(args, idata) -> str:
    if args.posterior:
        return f"posterior {args.posterior}"
    what = idata.posterior.attrs.get("source", "see upt_law_reference.json")
    kind = "SIMULATED data: " if int(idata.posterior.attrs.get("simulated", 1)) else ""
    return (f"shipped reference posterior {REFERENCE_FILE.name} (fitted to {kind}{what}); pass "
            f"--posterior results/upt_law/<grid> (a fit_upt_law.py output) for your own fit, --law published "
            f"for the paper's")


def law_name(idata) -> str:
    """Which law answers: the two-circuit mixture, or a single law and its form."""
    if is_mixture(idata):
        return "two-circuit mixture (ihstats.law.mixture)"
    form = posterior_form(idata)
    return f"{form} form: {FORM_TEXT[form]}"


def _seed_note(idata, run_seed, design: dict) -> str:
    """What the new-run interval holds of the seed effect, when the posterior has one."""
    if "weight_seed_sd" in idata.posterior or "data_seed_sd" in idata.posterior:  # seeds by kind: always new
        return " and a new weight seed's and data seed's offsets"
    if "seed_sd" not in idata.posterior:
        return ""
    within = idata.posterior.attrs.get("seed_within") or None
    key = seed_key(run_seed, within, design.get(within)) if run_seed is not None else None
    if key is not None and key in [str(v) for v in idata.posterior["seed"].values]:
        return f" and seed {key}'s fitted offset"
    return " and a new seed's offset" + ("" if run_seed is None else f" (seed {run_seed} was not in the fit)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ihstats.law.predict", description=__doc__.split("\n")[1])
    p.add_argument("--batch-size", type=float, required=True,
                   help="B: sequences per optimizer update (effective batch size)")
    p.add_argument("--context", type=float, required=True, help="C: context length in tokens")
    p.add_argument("--model-size", type=float, default=None,
                   help="N: non-embedding parameters (needed only for a posterior with size term)")
    p.add_argument("--law", choices=("fit", "published"), default="fit",
                   help="fit: a fitted posterior (default: the shipped fit to real runs); "
                        "published: ln UPT = 13.26 - 0.37 ln B - 0.62 ln C")
    p.add_argument("--posterior", default=None,
                   help="the output folder of analyses/fit_upt_law.py, or its idata.nc (default: "
                        "shipped reference, fitted to data/reference_runs/bxc-cpu-h200-bf16)")
    p.add_argument("--hdi-prob", type=float, default=0.9, help="interval width (default 0.9)")
    p.add_argument("--run-seed", default=None,
                   help="the planned run's training seed, for a posterior fitted with --seed-effect on: a seed "
                        "the fit saw uses its fitted offset, another a new seed's (default: a new seed)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = p.parse_args(argv)
    check_args(p, args, RANGES)  # the same checks for the fitted and the published law
    if args.law == "published":
        if args.posterior:
            print("error: --law published takes no --posterior (it is a fixed point estimate)",
                  file=sys.stderr)
            return 2
        return _published_main(args)
    try:
        idata = load_posterior(args.posterior)
        if args.model_size is not None and "c" not in idata.posterior:
            raise UPTLawError("--model-size: this posterior has no size term (fitted without "
                              "'- c log N'), so N would be ignored; drop --model-size or pass a fit "
                              "made with --size-term on")
        if args.run_seed is not None and "seed_sd" not in idata.posterior:
            raise UPTLawError("--run-seed: this posterior has no seed effect, so the seed would be ignored; "
                              "drop --run-seed or pass a fit made with --seed-effect on")
        row = (predict_mixture(idata, args.batch_size, args.context, hdi_prob=args.hdi_prob) if is_mixture(idata)
               else predict_from_posterior(idata, args.batch_size, args.context, args.model_size,
                                           hdi_prob=args.hdi_prob, run_seed=args.run_seed)).iloc[0]
        _check_usable(row)
    except (UPTLawError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    warns = extrapolation_warnings(idata, B=args.batch_size, C=args.context, N=args.model_size)
    try:
        checked, more = validation_lines(validation_record(args.posterior), B=args.batch_size,
                                         C=args.context)
    except UPTLawError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    warns += more
    for w in warns:
        print(f"warning: {w}", file=sys.stderr)
    src = _source_line(args, idata)
    if args.json:
        # null, not NaN: NaN is not JSON (N is NaN when the posterior has no size term).
        vals = {k: float(v) if np.isfinite(v) else None for k, v in row.items()}
        print(json.dumps({**vals, "posterior": src, "validation": checked, "warnings": warns},
                         allow_nan=False))
        return 0
    q, design = f"{args.hdi_prob:.0%}", {"B": args.batch_size, "C": args.context, "N": args.model_size}
    print(f"B = {args.batch_size:g}, C = {args.context:g}"
          + (f", N = {args.model_size:g}" if args.model_size else ""))
    print(f"predicted UPT (law line, posterior median): {row.upt:,.0f} updates "
          f"({row.tokens:,.3g} tokens); {law_name(idata)}")
    if "p_no_prev_token" in row:
        print(f"  P(the run forms without a previous-token head, the slow circuit) = {row.p_no_prev_token:.2f}; "
              f"the intervals below draw the circuit")
    print(f"  {q} HDI of the law line:    [{row.upt_lo:,.0f}, {row.upt_hi:,.0f}] updates")
    print(f"  {q} HDI for a new cell:     [{row.cell_lo:,.0f}, {row.cell_hi:,.0f}] updates "
          f"(adds the cell-to-cell residual, when fitted)")
    print(f"  {q} HDI for a new run:      [{row.pred_lo:,.0f}, {row.pred_hi:,.0f}] updates "
          f"(adds run-to-run scatter{_seed_note(idata, args.run_seed, design)})")
    print(f"  {checked}")
    print(f"using {src}")
    return 0


if __name__ == "__main__":
    run_cli(main)
