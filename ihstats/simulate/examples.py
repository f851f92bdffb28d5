"""The shipped example tables of the frontier and the ablation tests, regenerated from their simulators::

    python -m ihstats.simulate.examples --write-examples data/

writes ``data/example_frontier.csv`` (:func:`ihstats.simulate.frontier.simulate_frontier`) and
``data/example_ablation.csv`` (:func:`ihstats.simulate.ablation.simulate_ablation`) with the defaults
below. The law's example table: ``python -m ihstats.simulate.law``.
"""

from __future__ import annotations

import argparse

from ihstats.base.cli_checks import NONNEG_INT, check_args, check_out_dir
from ihstats.simulate.ablation import simulate_ablation
from ihstats.simulate.frontier import simulate_frontier
from ihstats.base.fileio import atomic_write_csv
from ihstats.base.command import run_cli


def main(argv=None) -> None:
    """Write the shipped example tables (``--write-examples DIR``)."""
    ap = argparse.ArgumentParser(prog="python -m ihstats.simulate.examples",
                                 description="Write the shipped example tables of the frontier and the ablation "
                                             "tests (example_frontier.csv, example_ablation.csv).")
    ap.add_argument("--write-examples", metavar="DIR", required=True,
                    help="folder to write example_frontier.csv and example_ablation.csv into")
    ap.add_argument("--seed", type=int, default=0, help="seed of both simulations (default 0)")
    args = ap.parse_args(argv)
    check_args(ap, args, {"seed": NONNEG_INT})
    out = check_out_dir(args.write_examples, flag="--write-examples", parser=ap, kind="shipped")
    out.mkdir(parents=True, exist_ok=True)
    frontier, _ = simulate_frontier(seed=args.seed)
    atomic_write_csv(out / "example_frontier.csv", frontier, index=False)
    ablation, _ = simulate_ablation(n_examples=100, n_random=49, seed=args.seed)
    atomic_write_csv(out / "example_ablation.csv", ablation.round(6), index=False)
    print(f"wrote {out / 'example_frontier.csv'} and {out / 'example_ablation.csv'}")


if __name__ == "__main__":
    run_cli(main)
