"""Head ablation: chosen heads' outputs set to zero or to their mean, through the model's hook points.

:func:`ablate_heads` is a context manager that replaces chosen heads' outputs
``o_h(s)`` by zero (``mode="zero"``) or by their mean over reference tokens (``mode="mean"``)
*before* ``W_O`` sums the heads: a hook on the model's hook point ``blocks.{l}.attn.hook_z``
(B, T, H, d_head), the same mechanism the metric cache and user code use
(:func:`ablation_hooks` gives the ``(name, fn)`` pairs). Both forward paths go through
``hook_z``, so ``model(idx)`` and ``run_with_cache`` see the ablation (the cache's ``head_out``
shows the ablated heads). With no heads chosen no hook is attached: bit-identical.
The ablation experiment (per-example scores, random head sets, the CLI) is :mod:`ihtrain.ablate`.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch

from ihtrain.ablate.head_sets import HeadSet, as_head_set
from ihtrain.model import GPT, HookFn

MODES = ("zero", "mean")


@torch.no_grad()
def head_means(model: GPT, tokens: torch.Tensor) -> torch.Tensor:
    """Mean of each head's output over batch and positions of ``tokens``: (L, H, d_head)."""
    _, cache = model.run_with_cache(tokens, logits=False)
    return cache.head_out.float().mean(dim=(1, 2))  # (L, B, T, H, dh) -> (L, H, dh)


def ablation_hooks(model: GPT, heads: HeadSet, mode: str = "zero",
                   means: torch.Tensor | None = None) -> list[tuple[str, HookFn]]:
    """``(name, fn)`` hooks on ``blocks.{l}.attn.hook_z`` that set the heads in ``heads`` to zero
    (or to ``means[l, h]``): one hook per layer with heads chosen, none elsewhere. For
    :meth:`GPT.hooks` / :meth:`GPT.run_with_hooks`, or use :func:`ablate_heads`.

    ``means`` (L, H, d_head) is required for ``mode="mean"`` (see :func:`head_means`).
    """
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} not in {MODES}")
    L, H = model.cfg.n_layer, model.cfg.n_head
    heads = as_head_set(heads, L, H)
    if mode == "mean" and (means is None or tuple(means.shape[:2]) != (L, H)):
        raise ValueError(f"means: mode='mean' needs an (L={L}, H={H}, d_head) tensor from head_means()")

    def make_hook(layer: int, idx: list[int]) -> HookFn:
        def hook(z: torch.Tensor, point) -> torch.Tensor:  # z (B, T, H, dh)
            z = z.clone()  # never edit the model's tensor in place (autograd, and a cache may hold it)
            if mode == "zero":
                z[:, :, idx] = 0.0
            else:
                z[:, :, idx] = means[layer, idx].to(z.dtype)  # (k, dh) broadcast over B, T
            return z
        return hook

    # nothing to ablate in a layer: no hook, so its output stays bit-identical
    return [(f"blocks.{l}.attn.hook_z", make_hook(l, list(hs))) for l, hs in enumerate(heads) if hs]


@contextmanager
def ablate_heads(model: GPT, heads: HeadSet, mode: str = "zero", means: torch.Tensor | None = None) -> Iterator[GPT]:
    """Within the block, the heads in ``heads`` write zero (or their mean) through ``W_O``
    (the hooks of :func:`ablation_hooks`, removed on exit)."""
    with model.hooks(ablation_hooks(model, heads, mode, means)):
        yield model
