"""Updates per second of ihtrain's trainer against a nanoGPT-style eager loop, side by side, one thread.

    python benchmarks/bench_vs_nanogpt.py                 # the five shapes, a few seconds each
    python benchmarks/bench_vs_nanogpt.py --block-s 1 --rounds 8     # longer, less noisy

Shapes: width 32 B 16 C 16 and width 48 B 64 C 64 (bxc-markov's 2-layer 4-head GPT on V 256 Markov
tokens), width 128 B 16 C 128 (cpu-tiny's 2-layer 4-head GPT on the builtin corpus, BPE 1024: the
tokenizer in the shared cache; bxc-text's 2048 would be trained first), and the default grid's,
bxc-cross (2-layer 4-head width-64 GPT on V 512 Markov tokens): its base cell B 32 C 64 and its
longest context, B 32 C 128 (the metric probes grow with C).

What is timed, so that a sceptic can check it:

- **ours**: the trainer's own loop body as ``ihtrain.run.train._train`` runs it, on a real ``Trainer``
  (built from the preset, in a temporary run directory): ``next_batch()`` (learning rate, the
  batch drawn from the data source), ``solo_update`` (forward, backward, clipping, AdamW),
  ``after_update()`` (counting, the loss read off every ``train.log_every`` updates, the
  divergence watch, the checkpoint-due check; checkpoints are pushed out of the window). The
  metric evaluations (``go_on``) are timed apart, per evaluation on the same ``Trainer``, and
  charged per update at the preset's default count (``metrics.n_evals`` over its schedule up to
  the cap): ``t_update + n_evals * t_eval / cap`` is "ours with default metric logging". The
  evaluations are timed again without issue 65's probes (the general induction probe, the
  successor control and its constants, ``NEW_PROBES``): their share of that time is "new probes %".
- **ref**: an independent nanoGPT-style eager loop written out below (its model, tied weights,
  SDPA, torch.optim.AdamW with nanoGPT's decay groups, ``clip_grad_norm_``, ``loss.item()``
  every update, no logging), fed the very batches ours drew (prepared before the window, so the
  reference pays no batch assembly at all: a bias in its favour, reported as ``batch ms``).
- Both sides are warmed up first (``--warmup`` untimed updates each: first-call allocations,
  lazy init, the fused AdamW's state). Then ``--rounds`` rounds alternate a block of ours
  (``--block-s`` CPU seconds of updates, at least 2) with the reference on the same batches, so
  drift in the machine's load falls on both; the batches are fresh in every block.
- Each block is timed by wall clock and by process CPU time (one thread: CPU time is the
  update's own work, which a machine shared with other jobs stretches far less than wall time).
  Ratios are of the summed times over all rounds; on a loaded machine the wall ratios are noisy,
  the CPU ratios less so.

Also printed: GFLOP/s achieved per shape (the model's training FLOPs per token, ``6 N + 12 L H Q
T`` as ``GPT.estimate_flops_per_token``, times tokens per second of CPU time) against this CPU's
one-thread peak, measured here as the GFLOP/s of a 1024 x 1024 float32 matmul.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F

from ihstats.base.contract import GENERAL_PROBE_METRICS
from ihtrain.config import apply_overrides, resolve, validate
from ihtrain.grid.spec import load_grid_preset
from ihtrain.metrics import NEEDS_SUCCESSORS, metric_names
from ihtrain.presets import preset_names
from ihtrain.run.train import solo_update
from ihtrain.run.trainer import Trainer

#: what issue 65 added to every evaluation: the general probe, the successor control, the constants
NEW_PROBES = (*GENERAL_PROBE_METRICS, *NEEDS_SUCCESSORS, "chance_indist", "ceil_offset_gen")
SHAPES = [("bxc-markov", 32, 16, 16), ("bxc-markov", 48, 64, 64), ("cpu-tiny", 128, 16, 128),
          ("bxc-cross", 64, 32, 64), ("bxc-cross", 64, 32, 128)]


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


class Reference:
    """nanoGPT's train.py loop body around RefGPT: forward, backward, clip, AdamW step, loss.item()."""

    def __init__(self, run: Trainer):
        m, t = run.model_cfg, run.cfg.train
        torch.manual_seed(0)
        self.model = RefGPT(m.vocab_size, m.context, m.d_model, m.n_head, m.n_layer)
        decay = [p for p in self.model.parameters() if p.dim() >= 2]
        no_decay = [p for p in self.model.parameters() if p.dim() < 2]
        self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": t.weight_decay},
                                      {"params": no_decay, "weight_decay": 0.0}], lr=t.lr, betas=(t.beta1, t.beta2))
        self.clip = t.grad_clip

    def update(self, batch: torch.Tensor) -> float:
        x, y = batch[:, :-1].contiguous(), batch[:, 1:].contiguous()  # as nanoGPT's get_batch returns them
        loss = self.model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss.item()  # nanoGPT reads the loss every iteration


# --------------------------------------------------------------------- timing
@dataclass
class Clock:
    wall: float = 0.0
    cpu: float = 0.0
    n: int = 0

    def time(self, fn, *args) -> None:
        w, c = time.perf_counter(), time.process_time()
        fn(*args)
        self.wall += time.perf_counter() - w
        self.cpu += time.process_time() - c
        self.n += 1

    def ms(self, kind: str = "cpu") -> float:
        return getattr(self, kind) / max(self.n, 1) * 1e3


def shape_config(preset: str, d: int, batch: int, context: int):
    """The preset's run config (a grid preset: its base) at this width, batch and context, one thread."""
    over = {"model.d_model": d, "train.batch_size": batch, "train.context": context, "train.threads": 1,
            "train.checkpoint_seconds": 1e9, "train.checkpoint_every": 0}
    if preset in preset_names():
        return resolve(preset, overrides=over)
    return validate(apply_overrides(load_grid_preset(preset).base_config(), over))  # a grid preset's base


def ours_step(run: Trainer, drawn: list[torch.Tensor]) -> None:
    """``_train``'s loop body without ``go_on`` (evaluations are timed apart); keeps the batch."""
    batch = run.next_batch()
    drawn.append(batch)
    run.after_update(*solo_update(run, run.model, batch))


def measure_shape(preset: str, d: int, batch: int, context: int, args) -> dict:
    """Alternating blocks of ours and the reference on the same batches; then batch assembly and
    evaluations alone. Returns the clocks and what the report needs."""
    cfg = shape_config(preset, d, batch, context)
    ours, ref, draw, evals, evals_old = Clock(), Clock(), Clock(), Clock(), Clock()
    with tempfile.TemporaryDirectory() as tmp:
        run = Trainer(cfg, Path(tmp), progress=False)
        reference, drawn = Reference(run), []
        for _ in range(args.warmup):
            ours_step(run, drawn)
        for b in drawn:
            reference.update(b)
        for _ in range(args.rounds):
            drawn, start = [], ours.cpu
            while len(drawn) < 2 or ours.cpu - start < args.block_s:
                ours.time(ours_step, run, drawn)
            for b in drawn:
                ref.time(reference.update, b)
        for _ in range(20):  # the batch assembly alone: ours pays it, the reference does not
            draw.time(run.next_batch)
        run._evaluate()  # the first evaluation builds what later ones reuse
        for _ in range(args.evals):
            evals.time(run._evaluate)
        # the same evaluations without issue 65's probes: what they add
        run.include = [m for m in metric_names(run.include, True, run.successors is not None) if m not in NEW_PROBES]
        for _ in range(args.evals):
            evals_old.time(run._evaluate)
        run.bar.close()
        flops = run.model.estimate_flops_per_token(context) * batch * context
    return {"cfg": cfg, "ours": ours, "ref": ref, "draw": draw, "evals": evals, "evals_old": evals_old,
            "n_evals": len(run.schedule),
            "cap": run.total, "flops": flops}


def matmul_peak_gflops(n: int = 1024, reps: int = 5) -> float:
    """One thread's float32 GFLOP/s on an n x n matmul (best of ``reps``, CPU time)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(reps):
        c = time.process_time()
        a @ b
        best = min(best, time.process_time() - c)
    return 2 * n ** 3 / best / 1e9


def report_row(shape: tuple, r: dict, peak: float) -> dict:
    """The printed numbers of one shape; ratios > 1: ours is faster."""
    _, d, batch, context = shape
    ours, ref, ev = r["ours"], r["ref"], r["evals"]
    per_update_eval = r["n_evals"] * ev.ms() / r["cap"]  # default metric logging, charged per update
    ours_logged = ours.ms() + per_update_eval
    gflops = r["flops"] / (ours.ms() / 1e3) / 1e9
    return {"shape": f"d{d} B{batch} C{context}", "ours ms": ours.ms(), "ref ms": ref.ms(),
            "batch ms": r["draw"].ms(), "eval ms": ev.ms(), "evals/cap": f"{r['n_evals']}/{r['cap']}",
            "ratio cpu": ref.ms() / ours.ms(), "ratio wall": ref.ms("wall") / ours.ms("wall"),
            "ratio cpu, metrics on": ref.ms() / ours_logged, "metric overhead %": 100 * per_update_eval / ours_logged,
            "new probes %": 100 * r["n_evals"] * (ev.ms() - r["evals_old"].ms()) / r["cap"] / ours_logged,
            "GFLOP/s": gflops, "of peak %": 100 * gflops / peak}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--block-s", type=float, default=0.4, help="CPU seconds of ours per timed block, at least 2 "
                   "updates; the reference then runs the same batches (default: 0.4)")
    p.add_argument("--rounds", type=int, default=4, help="alternating rounds of ours then ref (default: 4)")
    p.add_argument("--warmup", type=int, default=5, help="untimed updates of each side first (default: 5)")
    p.add_argument("--evals", type=int, default=3, help="timed metric evaluations per shape (default: 3)")
    p.add_argument("--shapes", default=",".join(map(str, range(len(SHAPES)))),
                   help="which of the shapes, by index (default: all)")
    args = p.parse_args()
    torch.set_num_threads(1)
    peak = matmul_peak_gflops()
    rows = []
    for i in (int(s) for s in args.shapes.split(",")):
        row = report_row(SHAPES[i], measure_shape(*SHAPES[i], args), peak)
        rows.append(row)
        print("  ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    print(f"\none thread; peak = {peak:.1f} GFLOP/s (1024^3 float32 matmul); ms are CPU ms per update "
          f"(eval ms: per evaluation); ratio = ref time / ours (> 1: ours faster)")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3g}"))


if __name__ == "__main__":
    main()
