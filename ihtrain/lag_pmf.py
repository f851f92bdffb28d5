"""Regenerate the builtin text's copy-distance pmf (``builtin_lag_pmf.json``, :mod:`ihtrain.data.lags`).

    python -m ihtrain.lag_pmf [--out FILE] [--max-lag 1024]

A command beside ``python -m ihtrain.copystats``, apart from :mod:`ihtrain.data.lags`: it reads the
corpus through a run's ``DataConfig``, and the generators that import ``lags`` must not import the
config (the registry loads them, and the config loads the registry: ``tests/test_house_rooms.py``),
nor does any module of ``ihtrain/data/``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from ihstats.base.cli_checks import check_out_file, record_written
from ihstats.base.fileio import atomic_write_json
from ihtrain.config import DataConfig
from ihtrain.data.lags import BUILTIN_LAG_FILE, MAX_LAG, lag_pmf
from ihtrain.data.natural import load_stream
from ihstats.base.command import run_cli


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ihtrain.lag_pmf", description=__doc__.split("\n")[0])
    p.add_argument("--out", default=str(BUILTIN_LAG_FILE), help=f"where to write it (default {BUILTIN_LAG_FILE})")
    p.add_argument("--max-lag", type=int, default=MAX_LAG, help=f"longest lag kept (default {MAX_LAG})")
    args = p.parse_args(argv)
    shipped = Path(args.out).resolve() == Path(BUILTIN_LAG_FILE).resolve()  # the package's own file, by name
    if not shipped:
        check_out_file(args.out, parser=p)  # the output guard, before the corpus loads
    cfg = DataConfig(source="builtin-v1")
    stream = load_stream(cfg, progress=False)
    pmf, n = lag_pmf(np.asarray(stream.train), args.max_lag)
    fp: dict[str, Any] = stream.fingerprint
    atomic_write_json(args.out, {
        "what": "copy-distance pmf of repeated bigrams in the builtin corpus (ihtrain.data.lags.lag_pmf), "
                "index = distance d, 0 for d < 2",
        "source": cfg.source, "tokenizer": cfg.tokenizer, "vocab_size": cfg.vocab_size,
        "corpus_sha256": fp.get("sha256"), "n_train_tokens": int(len(stream.train)), "n_events": n,
        "max_lag": args.max_lag, "mean": float(np.arange(pmf.size) @ pmf),
        "pmf": [float(f"{v:.6g}") for v in pmf]})
    if not shipped:
        record_written(args.out)
    print(f"{args.out}: {n:,} repeated bigrams within lag {args.max_lag} of {len(stream.train):,} tokens; "
          f"mean lag {np.arange(pmf.size) @ pmf:.1f}")
    return 0


if __name__ == "__main__":
    run_cli(main)
