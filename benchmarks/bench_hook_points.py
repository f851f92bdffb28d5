"""Cost of the hook points on the training fast path: one model with and without them, side by side.

    python benchmarks/bench_hook_points.py [--preset cpu-smoke] [--steps 400] [--threads 1]

One GPT instance trains in two modes that alternate step by step (in alternating order):

- ``hooked``: the model as it is, every hook point on the path with nothing attached;
- ``bypass``: the same instance as it was before hook points: the block and attention forwards
  of ``ihtrain/model.py`` at git ref ``--before`` (default: the commit before hook points), and
  the hook points taken out of the module tree (so ``model.parameters()``, which gradient
  clipping walks every step, walks the old tree).

Same weights, optimizer and batch, so the two modes differ only in the hook points (the script
checks first that they give bitwise-equal losses). A step is forward, backward, gradient clipping
and a fused AdamW step on a fixed batch (data loading is the same for both and left out), timed in
CPU time of this process (on a shared machine wall time mostly measures the other jobs). Printed:
median forward and step time of each mode and the ratios hooked / bypass (1.000: no cost), and the
time of one idle hook-point call. The smallest preset is the worst case: there the step is mostly
fixed Python cost, which the hook points add to.

``ihtrain/run/packed.py``'s packed forward is functional (no modules, so no hook points): unchanged.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
import types
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import torch

from ihtrain.config import resolve
from ihtrain.model import GPT, HookPoint

BEFORE_HOOK_POINTS = "d6905ce"  # main just before ihtrain/model.py had hook points
ROOT = Path(__file__).resolve().parents[1]


def model_module_at(ref: str) -> types.ModuleType:
    """``ihtrain/model.py`` at git ``ref`` as a module (its imports resolve to today's package)."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:ihtrain/model.py"], check=True,
                         capture_output=True, text=True).stdout
    mod = types.ModuleType(f"model_at_{ref}")
    exec(compile(src, f"{ref}:ihtrain/model.py", "exec"), mod.__dict__)
    return mod


@contextmanager
def bypassed(model: GPT, old: types.ModuleType) -> Iterator[GPT]:
    """``model`` with the forwards of ``old`` (a model module without hook points) and its hook
    points out of the module tree; restored on exit."""
    taken: list[tuple[torch.nn.Module, str, HookPoint]] = []
    for m in model.modules():
        for name, child in list(m._modules.items()):
            if isinstance(child, HookPoint):
                taken.append((m, name, m._modules.pop(name)))
    for blk in model.blocks:  # an instance attribute wins over the class's forward
        blk.forward = types.MethodType(old.Block.forward, blk)
        blk.attn.forward = types.MethodType(old.CausalSelfAttention.forward, blk.attn)
    try:
        yield model
    finally:
        for blk in model.blocks:
            del blk.forward, blk.attn.forward
        for m, name, child in taken:
            m._modules[name] = child


def timed_step(model: GPT, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """CPU seconds of (forward, whole training step)."""
    start = time.process_time()
    _, loss = model(x, y)
    fwd = time.process_time()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return fwd - start, time.process_time() - start


def idle_hook_point_seconds(model: GPT, x: torch.Tensor, calls: int = 20000) -> float:
    """CPU seconds per call of a hook point with no hook attached."""
    point = model.hook_dict[model.hook_names()[0]]
    start = time.process_time()
    for _ in range(calls):
        point(x)
    return (time.process_time() - start) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="cpu-smoke", help="model shape, batch size and context (default cpu-smoke)")
    ap.add_argument("--vocab", type=int, default=512, help="vocabulary size (a preset's comes from its data)")
    ap.add_argument("--steps", type=int, default=400, help="timed training steps per mode")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    ap.add_argument("--before", default=BEFORE_HOOK_POINTS, help="git ref of ihtrain/model.py without hook points")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    cfg = resolve(a.preset)
    mcfg = cfg.model
    mcfg.vocab_size = mcfg.vocab_size or a.vocab
    B, C = cfg.train.batch_size, cfg.train.context
    model, old = GPT(mcfg, seed=0), model_module_at(a.before)
    tokens = torch.randint(0, mcfg.vocab_size, (B, C + 1), generator=torch.Generator().manual_seed(0))
    x, y = tokens[:, :-1], tokens[:, 1:]
    with torch.no_grad():
        hooked_loss = model(x, y)[1]
        with bypassed(model, old):
            if not torch.equal(model(x, y)[1], hooked_loss):
                raise SystemExit("the two modes give different losses: not the same computation")
    opt = model.configure_optimizer(0.1, 1e-4, (0.9, 0.95), "cpu")
    times: dict[str, list[tuple[float, float]]] = {"hooked": [], "bypass": []}
    for i in range(a.steps + 10):  # the first 10 steps of each mode warm up (allocator, optimizer state)
        for mode in (("hooked", "bypass") if i % 2 == 0 else ("bypass", "hooked")):
            if mode == "bypass":
                with bypassed(model, old):
                    t = timed_step(model, opt, x, y)
            else:
                t = timed_step(model, opt, x, y)
            if i >= 10:
                times[mode].append(t)
    med = {m: [statistics.median(t[j] for t in v) for j in (0, 1)] for m, v in times.items()}
    per_call = idle_hook_point_seconds(model, x)
    n_calls = len(model.hook_names()) - mcfg.n_layer  # hook_pattern is only checked, not called
    print(f"model {mcfg.n_layer}L {mcfg.n_head}H d{mcfg.d_model} V{mcfg.vocab_size}, B={B} C={C}, "
          f"threads={torch.get_num_threads()}, {len(model.hook_names())} hook points; bypass = {a.before}'s forwards")
    for j, what in enumerate(("forward", "training step")):
        print(f"median {what:13s}: hooked {med['hooked'][j] * 1e3:7.3f} ms   bypass {med['bypass'][j] * 1e3:7.3f} ms"
              f"   ratio hooked / bypass = {med['hooked'][j] / med['bypass'][j]:.3f}")
    print(f"idle hook point: {per_call * 1e6:.2f} us per call x {n_calls} per forward = {n_calls * per_call * 1e6:.1f} us "
          f"= {100 * n_calls * per_call / med['hooked'][1]:.2f}% of a step ({a.steps} steps per mode, CPU time)")


if __name__ == "__main__":
    main()
