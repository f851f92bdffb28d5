"""Training throughput: ihtrain's trainer vs a plain nanoGPT-style loop, same model, batch, context.

    python benchmarks/bench_throughput.py [--steps 60] [--threads 0]

The reference is the loop nanoGPT's train.py runs (get_batch by random offsets into a memory-mapped
token array, forward, backward, clip, AdamW step) around a nanoGPT-style model written out below.
ihtrain runs the real trainer (``train_run``) with metrics off on the same token stream (a
``text:`` corpus written from the same tokens is not needed: both read the builtin corpus).
Prints tokens/s of each and the ratio ihtrain / reference (>= 1 means we are at least as fast).
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F

from ihtrain.config import resolve
from ihtrain.data import build_source
from ihtrain.train import train_run


# --------------------------------------------------------------------- nanoGPT-style reference
class RefBlock(nn.Module):
    def __init__(self, d: int, h: int):
        super().__init__()
        self.h = h
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln_2(x))


class RefGPT(nn.Module):
    def __init__(self, vocab: int, ctx: int, d: int, h: int, n_layer: int):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(RefBlock(d, h) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # tied, as nanoGPT

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def reference_tokens_per_s(data: np.ndarray, cfg, steps: int) -> float:
    m, t = cfg.model, cfg.train
    torch.manual_seed(0)
    model = RefGPT(int(data.max()) + 1 if m.vocab_size == 0 else m.vocab_size, m.context, m.d_model, m.n_head, m.n_layer)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": t.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=t.lr, betas=(t.beta1, t.beta2))
    B, C = t.batch_size, t.context

    def get_batch():
        ix = torch.randint(len(data) - C - 1, (B,))
        x = torch.stack([torch.from_numpy(data[i:i + C].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + C].astype(np.int64)) for i in ix])
        return x, y

    for i in range(steps + 5):
        if i == 5:
            start = time.perf_counter()
        x, y = get_batch()
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()  # nanoGPT reads the loss for logging
    return steps * B * C / (time.perf_counter() - start)


def ihtrain_tokens_per_s(cfg, steps: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        train_run(cfg, d, progress=False, make_figures=False)
        tr = pd.read_parquet(f"{d}/train.parquet")
    tr = tr[tr["step"] > 10]  # skip warm-up rows, as for the reference
    return (tr["step"].iloc[-1] - tr["step"].iloc[0]) * cfg.tokens_per_step / (tr["wall_s"].iloc[-1] - tr["wall_s"].iloc[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cpu-tiny")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    overrides = dict(s.split("=", 1) for s in a.set)
    overrides.update({"metrics.enabled": "false", "train.max_steps": a.steps + 11, "train.log_every": 1,
                      "train.checkpoint_seconds": 1e9, "train.threads": a.threads})
    cfg = resolve(a.preset, overrides=overrides)
    source = build_source(cfg.data, seed=cfg.seed, progress=False)
    data = np.asarray(source.stream.train) if hasattr(source, "stream") else source.sample(
        np.random.default_rng(0), 2000, cfg.train.context + 1, 0.0)[0].ravel()
    cfg.model.vocab_size = 0
    rows = []
    for rep in range(2):  # alternate, so drift in machine load hits both sides
        ours = ihtrain_tokens_per_s(cfg, a.steps)
        cfg_ref = resolve(a.preset, overrides=overrides)
        cfg_ref.model.vocab_size = source.vocab_size
        ref = reference_tokens_per_s(data, cfg_ref, a.steps)
        rows.append((ours, ref))
        print(f"round {rep}: ihtrain {ours:,.0f} tok/s   nanoGPT-style loop {ref:,.0f} tok/s   ratio {ours / ref:.3f}")
    ours, ref = (float(np.median(c)) for c in zip(*rows))
    m = cfg.model
    print(f"model {m.n_layer}L {m.n_head}H d{m.d_model} V{source.vocab_size}, B={cfg.train.batch_size} "
          f"C={cfg.train.context}, threads={torch.get_num_threads()}")
    print(f"throughput ratio ihtrain / reference = {ours / ref:.3f} (median of 2 alternating rounds)")


if __name__ == "__main__":
    main()
