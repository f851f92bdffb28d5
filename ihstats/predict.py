"""Predicted updates-to-emergence for a planned run, from a fitted UPT-law posterior.

    python -m ihstats.predict --batch-size 512 --context 2048 [--model-size N] [--posterior FILE]

``--posterior`` takes the ``upt_law.nc`` written by ``analyses/fit_upt_law.py`` (or
``UPTLawResults.save``). Without it the shipped reference posterior is used, which was fitted to
a table the package simulated itself (``python -m ihstats.simulate_law --reference ...``): it
illustrates the tool, it is not a measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ihstats import _bayes
from ihstats.upt_law import UPTLawError, extrapolation_warnings, predict_from_posterior

REFERENCE_DIR = Path(__file__).parent / "reference_posterior"
REFERENCE_FILE = REFERENCE_DIR / "upt_law_reference.nc"


def write_reference_posterior(res, out_dir, *, source: str, n_draws: int = 1000) -> str:
    """Write a thinned posterior (``n_draws`` draws, posterior group only, < 1 MB) and a JSON
    note saying what it was fitted to; returns the netCDF path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    small = _bayes.thin_posterior(res.idata, n_draws, seed=0)
    small.posterior.attrs["source"] = source
    path = _bayes.to_netcdf(small, out / "upt_law_reference.nc")
    note = {"source": source, "simulated": True, "n_draws": n_draws,
            "summary": res.summary().reset_index().to_dict(orient="records"),
            "diagnostics": res.diagnostics(), "versions": _bayes.versions()}
    (out / "upt_law_reference.json").write_text(json.dumps(note, indent=2, default=float))
    return path


def load_posterior(path=None):
    """Read a saved UPT-law posterior; ``None`` gives the shipped reference posterior."""
    p = Path(path) if path else REFERENCE_FILE
    if not p.exists():
        raise UPTLawError(f"--posterior: file not found: {p}" if path else
                          f"reference posterior missing at {p}: reinstall the package or pass "
                          f"--posterior")
    try:
        idata = _bayes.from_netcdf(p)
    except Exception as e:  # noqa: BLE001 - netCDF4/h5py/xarray raise OSError, ValueError, KeyError, ...
        raise UPTLawError(f"--posterior: {p} is not a readable netCDF posterior ({type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''}); pass the upt_law.nc written by "
                          f"analyses/fit_upt_law.py") from None
    if "center_logB" not in idata.posterior.attrs:
        raise UPTLawError(f"--posterior: {p} is not a UPT-law posterior (no center_logB "
                          f"attribute); use the upt_law.nc written by analyses/fit_upt_law.py")
    return idata


def _check_usable(row) -> None:
    """Finite, valid inputs can still predict nonsense far outside the fit (B = 1e30 gives
    "0 updates"): refuse a prediction under one update or one that overflows."""
    vals = row[["upt", "upt_lo", "upt_hi", "pred_lo", "pred_hi", "tokens"]].to_numpy(dtype=float)
    if not (np.all(np.isfinite(vals)) and row["upt"] >= 1):
        raise UPTLawError(f"B = {row['B']:g}, C = {row['C']:g}: the law predicts {row['upt']:.3g} "
                          f"updates, not a usable prediction; choose B and C near the fitted "
                          f"range")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ihstats.predict", description=__doc__.split("\n")[1])
    p.add_argument("--batch-size", type=float, required=True,
                   help="B: sequences per optimizer update (effective batch size)")
    p.add_argument("--context", type=float, required=True, help="C: context length in tokens")
    p.add_argument("--model-size", type=float, default=None,
                   help="N: non-embedding parameters (needed only for a posterior with size term)")
    p.add_argument("--posterior", default=None,
                   help="upt_law.nc from analyses/fit_upt_law.py (default: shipped reference)")
    p.add_argument("--hdi-prob", type=float, default=0.9, help="interval width (default 0.9)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = p.parse_args(argv)
    try:
        if not 0 < args.hdi_prob < 1:
            raise UPTLawError(f"--hdi-prob: must be in (0, 1), got {args.hdi_prob}")
        idata = load_posterior(args.posterior)
        row = predict_from_posterior(idata, args.batch_size, args.context, args.model_size,
                                     hdi_prob=args.hdi_prob).iloc[0]
        _check_usable(row)
    except (UPTLawError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    warns = extrapolation_warnings(idata, B=args.batch_size, C=args.context, N=args.model_size)
    for w in warns:
        print(f"warning: {w}", file=sys.stderr)
    src = (f"posterior {args.posterior}" if args.posterior else
           f"shipped reference posterior {REFERENCE_FILE} (fitted to SIMULATED data: "
           f"{idata.posterior.attrs.get('source', 'see upt_law_reference.json')}); pass "
           f"--posterior runs/.../upt_law.nc for your own fit")
    if args.json:
        # null, not NaN: NaN is not JSON (N is NaN when the posterior has no size term).
        vals = {k: float(v) if np.isfinite(v) else None for k, v in row.items()}
        print(json.dumps({**vals, "posterior": src, "warnings": warns}, allow_nan=False))
        return 0
    q = f"{args.hdi_prob:.0%}"
    print(f"B = {args.batch_size:g}, C = {args.context:g}"
          + (f", N = {args.model_size:g}" if args.model_size else ""))
    print(f"predicted UPT (law line, posterior median): {row.upt:,.0f} updates "
          f"({row.tokens:,.3g} tokens)")
    print(f"  {q} HDI of the law line:    [{row.upt_lo:,.0f}, {row.upt_hi:,.0f}] updates")
    print(f"  {q} HDI for a new run:      [{row.pred_lo:,.0f}, {row.pred_hi:,.0f}] updates "
          f"(adds run-to-run scatter)")
    print(f"using {src}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
