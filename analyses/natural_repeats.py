"""Repeated bigrams in natural text against context length: the signal an induction head learns from.

    python analyses/natural_repeats.py                    # builtin-v1 corpus, BPE 1024, 500 windows per C
    python analyses/natural_repeats.py --vocab 2048 --windows 4000   # bxc-text's tokenizer

A repeated-bigram event is a position t of a training window whose bigram (x[t-1], x[t]) already
occurred earlier in the same window: the token an induction head would predict there. For each
context length C the script draws random training windows of the shipped builtin-v1 corpus (the
stream ``ihtrain.data.natural.load_stream`` gives a run, cached under $IHLAW_CACHE; the text of the
CPU runs on ``builtin``, the H200 runs had another build) and reports events per
window E(C), their density E(C) / C, and the exponent k of E(C) ~ C^k (least squares in log-log).

What a "signal per token" account predicts. Suppose the head forms once the model has seen a fixed
number K of events. An update of B windows of length C carries B * E(C) ~ B * C^k events, so
UPT = K / (B E(C)) ~ B^-1 C^-k: a = 1, b = k. More generally, if B and C act only through the
events per update (UPT = f(B C^k) for any decreasing f), a power-law fit gives b = k * a. The
published law (a = 0.37, b = 0.62, b / a = 1.68) and k measured here are compared in the output.

Writes --out/natural_repeats.csv (one row per vocabulary and C).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ihstats.base.cli_checks import NONNEG_INT, Range, check_args, claim_folder
from ihtrain.config import DataConfig
from ihtrain.data.natural import load_stream
from ihstats.base.display import CSV_FLOAT_FORMAT
from ihstats.base.fileio import atomic_write_csv
from ihstats.base.command import out_folder, run_cli

CONTEXTS = (16, 32, 64, 128, 256, 512, 1024)
PUBLISHED = {"a": 0.37, "b": 0.62}


def repeated_bigram_events(windows: np.ndarray) -> np.ndarray:
    """Per window, the number of positions whose bigram already occurred earlier in the window.

    ``windows``: integer array (n_windows, C). A window with u distinct bigrams among its C - 1
    has C - 1 - u repeats (every occurrence after a bigram's first)."""
    w = np.asarray(windows, dtype=np.int64)
    if w.ndim != 2 or w.shape[1] < 2:
        raise ValueError(f"windows: expected shape (n_windows, C >= 2), got {w.shape}")
    if (w < 0).any():
        raise ValueError("windows: token ids must be >= 0")
    bigram = w[:, :-1] * (int(w.max()) + 1) + w[:, 1:]  # (n, C - 1), one id per bigram
    srt = np.sort(bigram, axis=1)
    distinct = 1 + (np.diff(srt, axis=1) != 0).sum(axis=1)
    return (w.shape[1] - 1) - distinct


def density_table(tokens: np.ndarray, contexts=CONTEXTS, n_windows: int = 500, seed: int = 0) -> pd.DataFrame:
    """Events per window and per token at each C, over ``n_windows`` uniform random windows of
    ``tokens`` (a 1-D stream); ``*_se``: standard errors over windows."""
    rng = np.random.default_rng(seed)
    rows = []
    for C in contexts:
        if C > len(tokens):
            raise ValueError(f"contexts: C = {C} is longer than the stream ({len(tokens)} tokens)")
        starts = rng.integers(0, len(tokens) - C + 1, size=n_windows)
        ev = repeated_bigram_events(np.asarray(tokens[starts[:, None] + np.arange(C)]))
        se = ev.std(ddof=1) / np.sqrt(n_windows)
        rows.append({"C": C, "n_windows": n_windows, "events": ev.mean(), "events_se": se,
                     "density": ev.mean() / C, "density_se": se / C})
    out = pd.DataFrame(rows)
    # the exponent between neighbouring contexts: E(C) is not one power law (density saturates)
    out["local_k"] = np.log(out["events"]).diff() / np.log(out["C"]).diff()
    return out


def events_exponent(table: pd.DataFrame, lo: float = 0, hi: float = np.inf) -> float:
    """k in E(C) ~ C^k: the least-squares slope of log events on log C over lo <= C <= hi."""
    t = table[(table["C"] >= lo) & (table["C"] <= hi)]
    if t["C"].nunique() < 2:
        raise ValueError(f"C range {lo}-{hi}: needs two or more context lengths, has {t['C'].tolist()}")
    return float(np.polyfit(np.log(t["C"]), np.log(t["events"]), 1)[0])


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python analyses/natural_repeats.py", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[1:]))
    p.add_argument("--vocab", type=int, nargs="+", default=[1024],
                   help="BPE vocabulary sizes (builtin-v1 corpus; 2048 is the natural-text presets'; "
                        "a new size trains its tokenizer once, into the cache) (default 1024)")
    p.add_argument("--contexts", type=int, nargs="+", default=list(CONTEXTS), help="context lengths C")
    p.add_argument("--windows", type=int, default=500, help="random training windows per C (default 500)")
    p.add_argument("--seed", type=int, default=0, help="window seed (default 0)")
    p.add_argument("--k-range", type=float, nargs=2, default=[128, 512], metavar=("LO", "HI"),
                   help="also fit k over LO <= C <= HI (default 128 512: the shipped bxc-cpu-h200 runs' C)")
    p.add_argument("--out", default=None, help="output directory (default results/natural_repeats)")
    args = p.parse_args(argv)
    check_args(p, args, {"windows": Range(2, integer=True), "seed": NONNEG_INT})
    args.out = out_folder(args.out, "natural_repeats", parser=p)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.windows < 2 or min(args.contexts) < 2:
        print("error: --windows and every --contexts value must be >= 2", file=sys.stderr)
        return 2
    frames = []
    for v in args.vocab:
        stream = load_stream(DataConfig(source="builtin-v1", vocab_size=v), progress=False)
        t = density_table(stream.train, args.contexts, args.windows, args.seed)
        frames.append(t.assign(vocab=v, n_train_tokens=len(stream.train)))
        print(f"builtin-v1 corpus, BPE {v} ({len(stream.train):,} training tokens), {args.windows} windows per C:")
        print(t[["C", "events", "events_se", "density", "density_se", "local_k"]].round(4).to_string(index=False))
        for lo, hi in ((0, np.inf), tuple(args.k_range)):
            k = events_exponent(t, lo, hi)
            print(f"C {max(lo, min(args.contexts)):g}-{min(hi, max(args.contexts)):g}: E(C) ~ C^{k:.3f}; a fixed "
                  f"count of events predicts a = 1, b = {k:.2f}; with UPT = f(B C^k), b = {k:.2f} a "
                  f"(published a = {PUBLISHED['a']} -> b = {k * PUBLISHED['a']:.2f}; published b = "
                  f"{PUBLISHED['b']}, b / a = {PUBLISHED['b'] / PUBLISHED['a']:.2f})")
        print()
    out = Path(args.out)
    claim_folder(out)  # made and marked as the package's before the first write
    atomic_write_csv(out / "natural_repeats.csv", pd.concat(frames), index=False, float_format=CSV_FLOAT_FORMAT)
    print(f"wrote {out / 'natural_repeats.csv'}")
    return 0


if __name__ == "__main__":
    run_cli(main)
