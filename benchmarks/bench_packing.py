"""Packed training vs one process per run: updates per second per run, same total threads.

    python benchmarks/bench_packing.py            # K = 1, 4, 8, 16 at two sizes; K = 8 at every bxc-markov cell
    python benchmarks/bench_packing.py --full     # every K at every size

K runs of one shape (the bxc-markov grid's 2-layer 4-head GPT on V = 256 tokens at widths 32 and
48 and its B x C cells; and width 128 with a BPE-2048 vocabulary) train either

- unpacked: one process per run, ``--threads`` processes at a time with one thread each (the grid's
  placement on a CPU), or
- packed, as the grid runs them: the K runs split into ``--threads`` packs of one thread each.

K = 1 runs one process of one thread either way (the ratio is then the packed forward's own cost).
One process of two threads is not measured: on the shared 2-core machine it made 5.7 updates/s per
run against 31.7 unpacked (K = 4, width 32, B 16 x C 16), which is why the grid splits a group of
runs into one-thread packs, one per worker.

Each process does what the trainer does per update (``ihtrain.run.train.solo_update`` or
``ihtrain.run.packed.Pack.update``: forward, backward, clipping, AdamW) on fresh random batches, with
``--warmup`` untimed updates first; drawing the data and the metrics, the same work packed or not,
are left out. Packed and unpacked are measured one after the other for each cell, so a shared
machine's load falls on both alike. Prints updates/s per run and packed / unpacked.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from contextlib import nullcontext
from types import SimpleNamespace

import pandas as pd

DEFAULT_GRID = [(d, 256, b, c) for d in (32, 48) for b in (16, 32, 64) for c in (16, 32, 64)]
WIDE = (128, 2048, 16, 64)  # width 128, BPE-2048 vocabulary


def _members(k: int, d: int, vocab: int, batch: int, context: int) -> list[SimpleNamespace]:
    """k runs of one shape as the trainer builds them (GPT, AdamW as configured), seeds 0..k-1."""
    import torch

    from ihtrain.config import resolve
    from ihtrain.model import GPT

    cfg = resolve("cpu-tiny", overrides={"model.d_model": d, "model.vocab_size": vocab, "model.context": context,
                                         "train.batch_size": batch, "train.context": context, "train.lr": 1e-2})
    out = []
    for seed in range(k):
        torch.manual_seed(seed)
        model = GPT(cfg.model)
        t = cfg.train
        opt = model.configure_optimizer(t.weight_decay, t.lr, (t.beta1, t.beta2), "cpu")
        out.append(SimpleNamespace(cfg=cfg, model_cfg=cfg.model, model=model, optimizer=opt, autocast=nullcontext()))
    return out


def _worker(threads: int, k: int, packed: bool, shape: tuple, warmup: int, updates: int, start, result) -> None:
    """Train k runs (packed, or one after another each update) and put the timed updates' seconds."""
    import torch

    from ihtrain.run.packed import Pack
    from ihtrain.run.train import solo_update

    torch.set_num_threads(threads)
    d, vocab, batch, context = shape
    members = _members(k, d, vocab, batch, context)
    gen = torch.Generator().manual_seed(0)
    draw = lambda: torch.randint(0, vocab, (batch, context + 1), generator=gen)  # noqa: E731
    pack = Pack(members) if packed else None

    def one_update() -> None:
        if pack is not None:
            pack.update([draw() for _ in members])
        else:
            for m in members:  # each run's update in turn: one process per run, serialised
                solo_update(m, m.model, draw())

    for _ in range(warmup):
        one_update()
    start.wait()
    t0 = time.perf_counter()
    for _ in range(updates):
        one_update()
    result.put(time.perf_counter() - t0)


def measure(shape: tuple, k: int, mode: str, threads: int, warmup: int, updates: int) -> float:
    """Updates per second per run of k runs, ``unpacked`` or ``packed``: `threads` processes of one
    thread, the runs dealt out between them."""
    ctx = mp.get_context("spawn")
    procs = [(1, n, mode == "packed") for n in _split(k, threads)]
    start, result = ctx.Barrier(len(procs)), ctx.Queue()
    ps = [ctx.Process(target=_worker, args=(t, n, packed, shape, warmup, updates, start, result))
          for t, n, packed in procs]
    for p in ps:
        p.start()
    seconds = max(result.get() for _ in ps)  # all started together; the last to finish sets the pace
    for p in ps:
        p.join()
    return updates / seconds  # every run made `updates` updates in that time


def _split(k: int, parts: int) -> list[int]:
    parts = min(parts, k)
    return [k // parts + (i < k % parts) for i in range(parts)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2, help="total threads, packed or not (default: 2)")
    p.add_argument("--updates", type=int, default=20, help="timed updates per run (default: 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed updates first (default: 3)")
    p.add_argument("--full", action="store_true", help="K = 1, 4, 8, 16 at every cell (default: at the smallest "
                   "bxc-markov cell and the width-128 one; K = 8 elsewhere)")
    args = p.parse_args()
    cells = [(s, k) for s in DEFAULT_GRID + [WIDE] for k in (1, 4, 8, 16)
             if args.full or k == 8 or s in (DEFAULT_GRID[0], WIDE)]
    rows = []
    for shape, k in cells:
        d, vocab, batch, context = shape
        row = {"width": d, "vocab": vocab, "B": batch, "C": context, "K": k}
        for mode in ("unpacked", "packed"):
            row[f"{mode} upd/s/run"] = measure(shape, k, mode, args.threads, args.warmup, args.updates)
        row["ratio"] = row["packed upd/s/run"] / row["unpacked upd/s/run"]
        rows.append(row)
        print(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    frame = pd.DataFrame(rows)
    print()
    print(frame.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    target = frame[(frame["width"] == 32) & (frame["B"] == 16) & (frame["C"] == 16) & (frame["K"] == 8)]
    if len(target):
        print(f"\nK = 8, width 32, B 16 x C 16: packed / unpacked = {target['ratio'].iloc[0]:.2f} (target >= 3)")


if __name__ == "__main__":
    main()
