"""Copy statistics of a data source per context length, measured from the tokens alone.

    python -m ihtrain.copystats --source markov --context 64 128 256 \\
        --set data.markov.vocab=512 --set data.markov.frequency=0.9 --set data.markov.reliability=0.9
    python -m ihtrain.copystats --source builtin --context 64 128 256
    python -m ihtrain.copystats --preset cpu-tiny --source markov --context 64 \\
        --set data.markov.frequency=0.9 --set data.markov.reliability=0.9 --set data.markov.max_distance=32

A *copy* is a position ``a`` of a training sequence whose bigram ``(x[a], x[a+1])`` occurred earlier in
the same sequence, at ``j < a`` (the ``A B ... A -> B`` event an induction head predicts); its
*distance* is ``a - j`` for the nearest such ``j`` (:func:`ihtrain.data.copystats.copy_distances`).
For each ``C`` the command draws ``--seqs`` training sequences of ``C + 1`` tokens the way the trainer does (``source.sample``:
the generator's pool, or random windows of a natural stream) and prints copies per token (per
predicted position, ``C`` per sequence), copies per sequence and the distance distribution (mean and
quantiles), and where the source has a transition matrix (Markov, V <= 4096) the successor payoff in nats
(``payoff_mean``, ``payoff_q50``: :func:`ihtrain.data.copystats.successor_payoff`). Where the source
records the repeats it planted, the generator's own values (``realised_*``) are printed beside, as a
check: they are not used for the measurement.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

import numpy as np
import pandas as pd

from ihtrain.config import parse_set_args, resolve, validate
from ihtrain.data import build_source, repeat_start_of
from ihtrain.data.copystats import copy_table, successor_payoff
from ihtrain.errors import ConfigError
from ihstats.base.command import run_cli


#: the successor payoff needs the dense (V, V) transition matrix: measured up to this vocabulary
MAX_PAYOFF_VOCAB = 4096


def source_table(cfg: Any, contexts: list[int], n_seqs: int = 512, seed: int = 0) -> list[dict[str, Any]]:
    """:func:`copy_table` of ``n_seqs`` training sequences per context of ``cfg``'s source (a
    RunConfig; ``train.context`` set to each ``C`` in turn), with the generator's own ``realised_*``
    values beside where it records them (prefixed ``gen_``)."""
    rows = []
    for C in contexts:
        c = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, context=C),
                                model=dataclasses.replace(cfg.model, context=max(cfg.model.context, C)))
        validate(c)
        src = build_source(c.data, seed=c.stream_seed, progress=False, context=C)
        toks, stats = src.sample(np.random.default_rng([seed, C]), n_seqs, C + 1)
        row = {"C": C, "repeat_start": repeat_start_of(c.data, C + 1), **copy_table(np.asarray(toks))}
        chain = getattr(src, "chain", None)  # a Markov source: its transitions, ids shifted by its specials
        if chain is not None and chain.V <= MAX_PAYOFF_VOCAB:
            lo = src.ordinary_range[0]
            row.update(successor_payoff(np.asarray(toks) - lo, chain.dense()))
        row.update({f"gen_{k.removeprefix('realised_')}": v for k, v in stats.items() if k.startswith("realised_")})
        rows.append(row)
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    return pd.DataFrame(rows).round(4).to_string(index=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ihtrain.copystats", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[1:]))
    p.add_argument("--source", default=None, help="data.source (markov, seminatural, builtin, text:PATH, ...; "
                                                   "default: the preset's or config's)")
    p.add_argument("--context", type=int, nargs="+", default=[64, 128, 256], help="context lengths C (default 64 128 256)")
    p.add_argument("--preset", default=None, help="run preset to start from (python -m ihtrain.train --list-presets)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="config override, repeatable")
    p.add_argument("--seqs", type=int, default=512, help="training sequences per C (default 512)")
    p.add_argument("--seed", type=int, default=0, help="which sequences are drawn (default 0)")
    args = p.parse_args(argv)
    if args.seqs < 1 or min(args.context) < 2:
        p.error("--seqs must be >= 1 and every --context >= 2")
    try:
        over = parse_set_args(args.set)
        if args.source:
            over = {"data.source": args.source, **over}
        cfg = resolve(args.preset, overrides=over)
        rows = source_table(cfg, sorted(set(args.context)), args.seqs, args.seed)
    except (ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"copy statistics of data.source = {cfg.data.source} ({args.seqs} training sequences per C; copies "
          f"found from the tokens; gen_*: the generator's own record)")
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    run_cli(main)
