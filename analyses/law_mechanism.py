"""Why context length helps or hurts (issue 53): the C exponent b per arm of the law-mechanism grid.

    python analyses/law_mechanism.py --grid runs/law-mechanism         # after python -m ihtrain.grid --preset law-mechanism
    python analyses/law_mechanism.py --grid runs/law-mechanism --fast  # 2 chains x 300 draws, a first look
    python analyses/law_mechanism.py --emergence onsets.csv --fast     # a table with arm, C, onset columns

Arms are the grid's cell labels up to ``-c<C>`` (``fixed-c64`` -> ``fixed``); ``--share`` lets a
cell enter another arm as well (default ``density=fixed-c64``: the preset's density arm starts from
the fixed arm's C 64 cell, whose data are the same). Onsets: :mod:`ihstats.emergence` on the
in-distribution PS (``ps_indist``, the law's default onset), censored at the last step where a run
did not form. The fit, one model over all arms (the same form as :mod:`ihstats.law` with B fixed):

    log UPT_i = alpha_arm - b_arm (log C_i - log C_ref) + e_i,
    e_i ~ Student-t(nu, 0, sqrt(sigma^2 + me_i^2))   (or Normal, --likelihood normal)

with ``me_i`` the onset's own interval width (``(log hi - log lo) / 3.29``, a 90% interval),
priors ``b ~ N(0, 1)``, ``alpha ~ N(mean log UPT, 2)``, ``sigma ~ HalfNormal(1)``,
``nu ~ Gamma(2, 0.1)``; censored runs contribute their survival at ``log last_step``. Positive b:
fewer updates at longer C. Printed: the mechanism table (per arm and C: copies per token, copies
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

from ihstats.cli_checks import COUNT, NONNEG_INT, PROBABILITY_OPEN, check_args, check_out_dir, claim_folder, default_out
from ihstats.emergence import emergence_table, onset_metric
from ihstats.fileio import UnreadableFile, read_json, read_table
from ihstats.io import load_grids
from ihstats.law.model import student_t_logsf
from ihstats.progress import cli_warnings

REFERENCE = "fixed"
RANGES = {"draws": COUNT, "tune": NONNEG_INT, "chains": COUNT, "seed": NONNEG_INT, "hdi_prob": PROBABILITY_OPEN,
          "seqs": COUNT}
Z90 = 3.29  # width of a 90% normal interval in sds


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


def fit_arms(table: pd.DataFrame, *, likelihood: str = "student_t", draws: int = 1000, tune: int = 1000,
             chains: int = 4, seed: int = 0, target_accept: float = 0.9):
    """Posterior draws of ``b`` per arm (dict arm -> (n_draws,) array) and the sampler's divergences.

    ``table``: columns ``arm, C, onset, onset_lo, onset_hi, censored, last_step`` (one row per run
    and arm)."""
    import pymc as pm  # seconds to import: only the fit needs it
    import pytensor.tensor as pt

    arms = sorted(table["arm"].unique(), key=lambda a: (a != REFERENCE, a))
    idx = table["arm"].map({a: i for i, a in enumerate(arms)}).to_numpy()
    cens = table["censored"].astype(bool).to_numpy()
    y = np.log(np.where(cens, table["last_step"], table["onset"]).astype(float))
    lo, hi = (pd.to_numeric(table[c], errors="coerce").to_numpy(dtype=float) for c in ("onset_lo", "onset_hi"))
    with np.errstate(divide="ignore", invalid="ignore"):  # runs without an interval: no measurement error
        me = np.where(~cens & (lo > 0) & (hi > lo), (np.log(hi) - np.log(lo)) / Z90, 0.0)
    logC = np.log(table["C"].to_numpy(dtype=float))
    x = logC - np.log(np.exp(logC).mean())
    obs, cen = np.flatnonzero(~cens), np.flatnonzero(cens)
    with pm.Model(coords={"arm": arms}):
        alpha = pm.Normal("alpha", mu=float(y[obs].mean()), sigma=2.0, dims="arm")
        b = pm.Normal("b", mu=0.0, sigma=1.0, dims="arm")
        sigma = pm.HalfNormal("sigma", sigma=1.0)
        mu = alpha[idx] - b[idx] * x
        scale = pt.sqrt(sigma**2 + me**2)
        z_cen = (y[cen] - mu[cen]) / scale[cen]
        if likelihood == "student_t":
            nu = pm.Gamma("nu", alpha=2.0, beta=0.1)
            pm.StudentT("log_upt", nu=nu, mu=mu[obs], sigma=scale[obs], observed=y[obs])
            if cen.size:
                pm.Potential("log_upt_censored", student_t_logsf(z_cen, nu))
        else:
            pm.Normal("log_upt", mu=mu[obs], sigma=scale[obs], observed=y[obs])
            if cen.size:
                pm.Potential("log_upt_censored", pm.logccdf(pm.Normal.dist(), z_cen))
        idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed,
                          target_accept=target_accept, progressbar=False, compute_convergence_checks=False)
    post = idata.posterior["b"]
    div = int(idata.sample_stats["diverging"].sum()) if "diverging" in idata.sample_stats else 0
    return {a: post.sel(arm=a).to_numpy().ravel() for a in arms}, div


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
                   help="a cell that enters another arm too (default: density=fixed-c64)")
    p.add_argument("--out", default=None, help="output directory (default results/law_mechanism/<input name>)")
    p.add_argument("--fast", action="store_true", help="2 chains x 300 draws (300 tune)")
    p.add_argument("--draws", type=int, default=1000, help="draws per chain (default 1000)")
    p.add_argument("--tune", type=int, default=1000, help="tuning steps per chain (default 1000)")
    p.add_argument("--chains", type=int, default=4, help="chains (default 4)")
    p.add_argument("--seed", type=int, default=0, help="sampler seed (default 0)")
    p.add_argument("--hdi-prob", type=float, default=0.9, help="interval width (default 0.9)")
    p.add_argument("--likelihood", choices=("student_t", "normal"), default="student_t", help="noise (default student_t)")
    p.add_argument("--seqs", type=int, default=256, help="training sequences per cell for the copy statistics (default 256)")
    args = p.parse_args(argv)
    check_args(p, args, RANGES)
    src = args.grid or args.emergence
    args.out = check_out_dir(args.out or default_out("law_mechanism", src), inputs=[src], parser=p)
    if args.fast:
        args.draws, args.tune, args.chains = 300, 300, 2
    return args


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
    shares = parse_shares(args.share if args.share is not None else ["density=fixed-c64"])
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
    onsets.to_csv(out / "onsets.csv", index=False)
    bt.to_csv(out / "b.csv", index=False)
    if mech is not None:
        mech.to_csv(out / "mechanism.csv", index=False)
        print("mechanism (copy statistics of each cell's training sequences, from the tokens):")
        print(mech.round(3).to_string(index=False))
    wide = onsets.assign(o=np.where(onsets["censored"].astype(bool), np.nan, onsets["onset"]))
    print("\nonsets (updates, ps_indist; NaN: not formed by its last step):")
    print(wide.pivot_table(index=["arm", "C"], columns="seed", values="o", dropna=False).round(0).to_string())
    print(f"\nb per arm ({args.hdi_prob:.0%} HDI; diff: arm - {REFERENCE}; {args.likelihood}, "
          f"{args.chains} x {args.draws} draws):")
    print(bt.round(3).to_string(index=False))
    if div:
        print(f"warning: {div} divergent transitions: raise --tune or check the onsets", file=sys.stderr)
    print(f"wrote {out / 'onsets.csv'}, {out / 'b.csv'}" + (f", {out / 'mechanism.csv'}" if mech is not None else ""))
    return 0


if __name__ == "__main__":
    with cli_warnings():
        raise SystemExit(main())
