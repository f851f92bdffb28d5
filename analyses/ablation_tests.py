"""Permutation tests of head-ablation drops: top-k heads against random head sets.

    python analyses/ablation_tests.py [--table CSV] [--compare A,B] [--fast] [--out DIR]
    python analyses/ablation_tests.py --kv RUN/icl_kv_prompts.csv [--out DIR]

The table is tidy, one row per (condition, example, ablated set): columns
``condition, example, ablation (none|top|random), set_id, value`` and optionally ``metric``
(see ``ihstats.ablation``). Without ``--table`` the shipped simulated example
``data/example_ablation.csv`` is used (and the output says so). Writes into ``--out``
(default ``results/ablation/<name of the table>``):
``tests.csv`` (one row per condition x metric, Holm and BH adjusted within a family: the top
sets, and the previous-token sets of ``ihtrain.ablate --prev-token-set``, conditions
``"<condition>:prev_token"``; column ``family``), ``comparisons.csv``,
``drops.png/.pdf`` (random-set drops with the top-k drop marked) with the data behind it
(``drops.csv``) and ``summary.md``. Conditions labelled ``MODE@sN`` (``ihtrain.ablate --condition``,
one label per seed) are also tested with seeds as the unit: ``pooled.csv`` (one row per MODE x
metric and family; Fisher's combination of the seeds' random-set tests with its exact null,
``ihstats.ablation.pooled``; Holm within a family). With ``--kv`` (the key -> value recall's
per-prompt log-probs of ``ihtrain.ablate --icl``) it writes ``kv_tests.csv`` instead: per control,
the paired sign-flip p that the true pairs score above it (``ihstats.ablation.results.kv_true_above``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from ihstats.ablation.data import ablation_families, prepare as ablation_data
from ihstats.ablation.permutation import sign_flip_power
from ihstats.ablation.pooled import pooled_ablation_tests
from ihstats.ablation.report import write_ablation_report
from ihstats.ablation.results import AblationResults, kv_true_above, run_ablation_tests
from ihstats.ablation.spec import PREV_TOKEN_SUFFIX, SEED_SEP, AblationSpec
from ihstats.base.cli_checks import (COUNT, NONNEG_INT, PROBABILITY_OPEN, Range, check_args, claim_folder)
from ihstats.base.fileio import UnreadableFile, atomic_write_csv, read_table
from ihstats.fit_protocol import save_and_warn
from ihstats.base.command import out_folder, run_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "data" / "example_ablation.csv"
RANGES = {"n_resamples": COUNT, "n_boot": COUNT, "n_possible": COUNT, "alpha": PROBABILITY_OPEN,
          "power_effect": Range(0, lo_open=True), "seed": NONNEG_INT}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--table", type=Path, default=None,
                    help=f"tidy ablation table (CSV or parquet); default: {EXAMPLE.name}")
    ap.add_argument("--kv", type=Path, default=None, metavar="CSV",
                    help="key -> value prompts (icl_kv_prompts.csv of ihtrain.ablate --icl): test the controls")
    ap.add_argument("--compare", action="append", default=[], metavar="A,B",
                    help="compare the top-vs-random gap of conditions A and B; repeatable "
                         "(default: every pair when there are 2-4 conditions)")
    ap.add_argument("--loss", action="store_true",
                    help="value is a loss (higher is worse): drops are ablated minus unablated")
    ap.add_argument("--n-resamples", type=int, default=9999, help="sign-flip resamples")
    ap.add_argument("--n-boot", type=int, default=2000, help="bootstrap draws for intervals")
    ap.add_argument("--n-possible", type=int, default=None,
                    help="number of possible same-count head sets (flags exact tests)")
    ap.add_argument("--alpha", type=float, default=0.05, help="level of the corrections")
    ap.add_argument("--power-effect", type=float, default=0.2,
                    help="d_z for which the sign-flip test's power is reported (default 0.2)")
    ap.add_argument("--seed", type=int, default=0, help="seed of resampling")
    ap.add_argument("--fast", action="store_true", help="999 resamples, 500 bootstrap draws")
    ap.add_argument("--out", type=Path, default=None,
                    help="output folder (default results/ablation/<name of the table>)")
    args = ap.parse_args(argv)
    check_args(ap, args, RANGES)
    source = args.kv or args.table or EXAMPLE
    args.out = out_folder(args.out, "ablation", source, inputs=[source], parser=ap)  # before any work
    return args


def _run_families(table: pd.DataFrame, args, pairs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """run_ablation_tests per Holm family: the top-score sets, and the previous-token sets that
    ``ihtrain.ablate --prev-token-set`` labels ``"<condition>:prev_token"`` (column ``family``)."""
    tests, comps = [], []
    for family, sub in ablation_families(table):
        conds = set(sub["condition"])
        t, c = run_ablation_tests(sub, args.n_resamples, args.n_boot, args.alpha, args.seed, not args.loss,
                                  args.n_possible, [p for p in pairs if set(p) <= conds])
        tests.append(t.assign(family=family))
        comps.append(c.assign(family=family))
    return pd.concat(tests, ignore_index=True), pd.concat(comps, ignore_index=True)


def _pooled_families(table: pd.DataFrame, args) -> pd.DataFrame:
    """pooled_ablation_tests per family (as :func:`_run_families`); empty without seed labels."""
    if not table["condition"].astype(str).str.contains(SEED_SEP).any():
        return pd.DataFrame()
    out = []
    for family, sub in ablation_families(table):
        sub = sub.assign(condition=sub["condition"].astype(str).str.removesuffix(PREV_TOKEN_SUFFIX))
        out.append(pooled_ablation_tests(sub, args.alpha, not args.loss).assign(family=family))
    return pd.concat(out, ignore_index=True)


def _kv_tests(args) -> int:
    """``--kv``: the key -> value controls' paired tests, ``kv_tests.csv``."""
    try:
        prompts = read_table(args.kv, "key-value prompts table", "write it with python -m ihtrain.ablate RUN_DIR --icl")
        tests = kv_true_above(prompts, 999 if args.fast else args.n_resamples, args.seed)
    except (UnreadableFile, ValueError) as e:
        print(f"error: --kv {e}", file=sys.stderr)
        return 2
    claim_folder(args.out)
    atomic_write_csv(args.out / "kv_tests.csv", tests, index=False)
    print(tests.to_string(index=False))
    print(f"wrote {args.out}/kv_tests.csv")
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.kv is not None:
        return _kv_tests(args)
    if args.table is None:
        source = f"{EXAMPLE} (shipped simulated example; pass --table for real data)"
        print(f"no --table given: using the shipped simulated example {EXAMPLE}")
        path = EXAMPLE
    else:
        source, path = str(args.table), args.table
    if not path.exists():
        print(f"error: --table {path}: no such file", file=sys.stderr)
        return 2
    try:
        table = read_table(path, "ablation table", "write it with python -m ihtrain.ablate RUN_DIR")
    except UnreadableFile as e:
        print(f"error: --table {e}", file=sys.stderr)
        return 2
    if args.fast:
        args.n_resamples, args.n_boot = 999, 500
    pairs = [tuple(c.split(",")) for c in args.compare]
    if any(len(p) != 2 for p in pairs):
        print("error: --compare: expected A,B (two condition names)", file=sys.stderr)
        return 2
    if not pairs and "condition" in table and 2 <= table["condition"].nunique() <= 4:
        conds = sorted(table["condition"].unique())
        pairs = [(a, b) for i, a in enumerate(conds) for b in conds[i + 1:]]
    t0 = time.perf_counter()
    try:
        tests, comps = _run_families(table, args, pairs)
        pooled = _pooled_families(table, args)
    except (ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # data behind the figure: the mean drop of every set
    rows = []
    metrics = tests["metric"] if "metric" in tests else [None] * len(tests)
    for cond, metric in zip(tests["condition"], metrics):
        d = ablation_data(table, AblationSpec(cond, metric, not args.loss))
        rows += [{"condition": cond, "metric": metric, "ablation": "top", "set_id": "top",
                  "drop": d.top.mean()}]
        rows += [{"condition": cond, "metric": metric, "ablation": "random", "set_id": s,
                  "drop": v} for s, v in zip(d.set_ids, d.random.mean(1))]
    drops = pd.DataFrame(rows)
    out = args.out
    claim_folder(out)  # made and marked as the package's before the first write
    save_and_warn(AblationResults(tests, comps, pooled), out, label="ablation")
    atomic_write_csv(out / "drops.csv", drops, index=False)
    n_min = int(tests["n_examples"].min())
    power = sign_flip_power(args.power_effect, n_min, args.alpha, n_sim=200,
                            n_resamples=999, seed=args.seed)
    write_ablation_report(out / "summary.md", tests, comps, source=source, loss=args.loss,
                          n_resamples=args.n_resamples, n_boot=args.n_boot, alpha=args.alpha,
                          power_effect=args.power_effect, n_min=n_min, power=power, pooled=pooled,
                          drops=drops)
    if len(pooled):
        print("seeds as the unit (pooled.csv):")
        print(pooled[[c for c in ("family", "condition", "metric", "n_seeds", "top_drop", "random_drop",
                                  "p_pooled", "p_pooled_holm", "p_floor_holm") if c in pooled]].to_string(index=False))
    cols = ["condition", "metric", "top_drop", "random_drop", "p_random", "p_random_holm"]
    print(tests[[c for c in cols if c in tests]].to_string(index=False))  # metric: which drop each row tests
    print(f"wrote {out}/ (tests.csv, comparisons.csv, drops.csv, drops.png, drops.pdf, "
          f"summary.md) in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    run_cli(main)
