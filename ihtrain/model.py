"""The whole GPT in one file (after nanoGPT), with named hook points that expose per-head activations.

Hook points (after TransformerLens) are identity modules at fixed places in the forward pass; a
hook attached to one reads or replaces that activation. They are the one way to reach
activations: the metric cache (:meth:`GPT.run_with_cache`), head ablation
(:func:`ihtrain.ablate.head_ablation.ablate_heads`) and user code (:meth:`GPT.hooks`,
:meth:`GPT.run_with_hooks`) all attach hooks by name. The names, ``blocks.{l}.<point>``, are
listed once, in :data:`BLOCK_HOOKS`, with their shapes.

Two ways through the blocks share the weights and the hook points:

- ``model(idx, targets)`` is the fast path used for training: fused
  ``F.scaled_dot_product_attention(is_causal=True)``. A hook point with nothing attached costs an
  attribute lookup and a check, so training pays ~nothing for them
  (``benchmarks/bench_hook_points.py`` measures it).
- attention is computed explicitly (softmax of masked scores) only in a block whose
  ``attn.hook_pattern`` has a hook: the fused kernel never forms the pattern.
  ``model.run_with_cache(idx)`` attaches caching hooks there and on ``attn.hook_z``, so it returns
  the patterns ``cache.attn`` (L, B, H, T, T) and the per-head outputs ``cache.head_out``
  (L, B, T, H, d_head), taken before ``W_O`` sums the heads. It gives the same logits as the fast
  path (tested to ~1e-5 in float32).

Weight accessors follow the row-vector convention ``x @ W``: ``W_E`` and ``W_U`` are (V, d) with one
row per token, ``W_V(l)`` is (H, d, d_head) and ``W_O(l)`` is (H, d_head, d), so head ``h`` of layer
``l`` writes ``head_out[l, :, :, h] @ W_O(l)[h]`` into the residual stream (plus the shared output
bias). The accessors are views of the fused qkv / projection weights, not copies.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.hooks import RemovableHandle

from ihtrain.config import ModelConfig, flops_per_token

#: The hook points of block ``l``, named ``blocks.{l}.<key>``, in forward order, with the shape of
#: the activation each one carries (B batch, T positions, d d_model, H heads). This is the one list
#: of names: ``GPT.hook_names`` expands it and a test holds it equal to the modules.
BLOCK_HOOKS: dict[str, str] = {
    "hook_resid_pre": "(B, T, d) residual stream into the block",
    "attn.hook_pattern": "(B, H, T_query, T_key) attention pattern, rows sum to 1; a hook here makes "
                         "the block compute attention explicitly instead of with the fused kernel",
    "attn.hook_z": "(B, T, H, d_head) per-head outputs o_h(s), before W_O sums the heads",
    "hook_attn_out": "(B, T, d) attention output written into the residual stream",
    "hook_resid_mid": "(B, T, d) residual stream between attention and MLP (not in attn_only models)",
    "hook_mlp_out": "(B, T, d) MLP output (not in attn_only models)",
    "hook_resid_post": "(B, T, d) residual stream out of the block",
}
_MLP_HOOKS = ("hook_resid_mid", "hook_mlp_out")

#: ``fn(activation, hook) -> replacement or None``, as in TransformerLens; ``hook.name`` says where.
HookFn = Callable[[torch.Tensor, "HookPoint"], "torch.Tensor | None"]


def hook_names(cfg: ModelConfig) -> list[str]:
    """Every hook point name of a GPT with ``cfg``, in forward order (:data:`BLOCK_HOOKS`)."""
    keys = [k for k in BLOCK_HOOKS if not (cfg.attn_only and k in _MLP_HOOKS)]
    return [f"blocks.{l}.{k}" for l in range(cfg.n_layer) for k in keys]


class HookPoint(nn.Module):
    """A named identity: where a hook reads or replaces one activation.

    Holds no parameters or buffers, so checkpoints are unchanged by it. ``name`` (the dotted path
    in the GPT, e.g. ``blocks.0.attn.hook_z``) is set by :class:`GPT`.
    """

    def __init__(self):
        super().__init__()
        self.name = ""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        # nn.Module.__call__ costs 1-2 us even with nothing to run, and a training step passes
        # ~6 hook points per layer: go through it only when a hook is attached (so module-global
        # hooks, torch.nn.modules.module.register_module_forward_hook, do not see hook points)
        if self._forward_hooks or self._forward_pre_hooks:
            return super().__call__(x)
        return x

    def add_hook(self, fn: HookFn) -> RemovableHandle:
        """Call ``fn(activation, self)`` on every forward; a tensor it returns replaces the activation
        for the rest of the pass (and for hooks attached after it)."""
        return self.register_forward_hook(lambda module, args, out: fn(out, module))

    @property
    def has_hooks(self) -> bool:
        return bool(self._forward_hooks or self._forward_pre_hooks)


def _direct_access(module: nn.Module) -> None:
    """Also put ``module``'s hook points in its instance ``__dict__``: ``self.hook_z`` then finds them
    by plain attribute lookup instead of through ``nn.Module.__getattr__`` (about 1 us a lookup,
    paid on every forward). They stay registered in ``_modules`` (names, ``named_modules``); a
    module later assigned to the name replaces both (``nn.Module.__setattr__`` drops the entry)."""
    for name, child in module._modules.items():
        if isinstance(child, HookPoint):
            module.__dict__[name] = child


@dataclass
class Cache:
    """Activations from :meth:`GPT.run_with_cache` (no grad), filled by hooks on the hook points."""

    attn: torch.Tensor  # (L, B, H, T, T) attention patterns, rows sum to 1 (attn.hook_pattern)
    head_out: torch.Tensor  # (L, B, T, H, d_head) per-head outputs o_h(s), before W_O (attn.hook_z)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_head, self.d_model = cfg.n_head, cfg.d_model
        self.d_head = cfg.d_model // cfg.n_head
        # q, k, v for all heads in one Linear (as nanoGPT): output columns are [q | k | v], and
        # within each block head h owns columns h*d_head:(h+1)*d_head.
        self.c_attn = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.d_model, cfg.d_model, bias=cfg.bias)
        self.attn_dropout_p = cfg.dropout
        self.resid_dropout = nn.Dropout(cfg.dropout)
        self.hook_pattern = HookPoint()  # (B, H, T, T)
        self.hook_z = HookPoint()  # (B, T, H, dh)
        _direct_access(self)

    def _qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(self.d_model, dim=2)  # 3 x (B, T, d)
        shape = (B, T, self.n_head, self.d_head)
        # (B, T, H, dh) -> (B, H, T, dh)
        return (q.view(shape).transpose(1, 2), k.view(shape).transpose(1, 2), v.view(shape).transpose(1, 2))

    def _explicit_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, p: float) -> torch.Tensor:
        """softmax(q k^T / sqrt(dh), causal) v through ``hook_pattern``: (B, H, T, dh)."""
        T = q.shape[-2]
        # scale q (B, H, T, dh) rather than the scores (B, H, T, T), and mask in place: fewer passes
        att = (q * (1.0 / math.sqrt(self.d_head))) @ k.transpose(-2, -1)  # (B, H, T, T)
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)  # True above the diagonal
        att = self.hook_pattern(att.masked_fill_(mask, float("-inf")).softmax(dim=-1))  # (B, H, T, T)
        if p > 0:  # dropout on the pattern, as the fused kernel applies it
            att = F.dropout(att, p)
        return att @ v  # (B, H, T, dh)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self._qkv(x)  # (B, H, T, dh)
        p = self.attn_dropout_p if self.training else 0.0
        if self.hook_pattern.has_hooks:  # someone wants the pattern: the fused kernel never forms it
            y = self._explicit_attention(q, k, v, p)
        else:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)  # (B, H, T, dh)
        z = self.hook_z(y.transpose(1, 2))  # (B, T, H, dh)
        y = z.contiguous().view(B, T, C)  # heads side by side, (B, T, d)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.c_fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model, bias=cfg.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))  # (B, T, d)


class Block(nn.Module):
    """Pre-norm block: x + attn(ln_1(x)), then x + mlp(ln_2(x)) unless attention-only."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        # hook points are registered in forward order, so named_modules lists them in that order
        self.hook_resid_pre = HookPoint()  # (B, T, d)
        self.ln_1 = nn.LayerNorm(cfg.d_model, bias=cfg.bias)
        self.attn = CausalSelfAttention(cfg)
        self.hook_attn_out = HookPoint()  # (B, T, d)
        self.attn_only = cfg.attn_only
        if not cfg.attn_only:
            self.hook_resid_mid = HookPoint()  # (B, T, d)
            self.ln_2 = nn.LayerNorm(cfg.d_model, bias=cfg.bias)
            self.mlp = MLP(cfg)
            self.hook_mlp_out = HookPoint()  # (B, T, d)
        self.hook_resid_post = HookPoint()  # (B, T, d)
        _direct_access(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.hook_resid_pre(x)
        x = x + self.hook_attn_out(self.attn(self.ln_1(x)))
        if not self.attn_only:
            x = self.hook_resid_mid(x)
            x = x + self.hook_mlp_out(self.mlp(self.ln_2(x)))
        return self.hook_resid_post(x)


class GPT(nn.Module):
    """GPT-2-style decoder configured by :class:`ihtrain.config.ModelConfig`.

    ``seed`` (optional) makes the initialisation a pure function of the seed, independent of the
    global torch RNG; without it the global RNG is used (so ``torch.manual_seed`` also fixes it).
    """

    def __init__(self, cfg: ModelConfig, seed: int | None = None):
        super().__init__()
        if cfg.vocab_size <= 0:
            raise ValueError(f"model.vocab_size: must be > 0 (resolve it from the data source), got {cfg.vocab_size}")
        if cfg.d_model % cfg.n_head:
            raise ValueError(f"model.d_model: must be divisible by model.n_head={cfg.n_head}, got {cfg.d_model}")
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.wpe = nn.Embedding(cfg.context, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.d_model, bias=cfg.bias)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.wte.weight  # one (V, d) tensor, used for both
        self._init_weights(seed)
        # name -> hook point; a plain dict (not a ModuleDict), so module and state_dict paths stay as they are
        self.hook_dict: dict[str, HookPoint] = {}
        for name, m in self.named_modules():
            if isinstance(m, HookPoint):
                m.name = name
                self.hook_dict[name] = m

    # ------------------------------------------------------------------------------ init
    @torch.no_grad()
    def _init_weights(self, seed: int | None) -> None:
        """GPT-2 init: N(0, 0.02), residual projections N(0, 0.02 / sqrt(2 L)), zero biases."""
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        resid_std = 0.02 / math.sqrt(2 * self.cfg.n_layer)
        for name, p in self.named_parameters():  # shared (tied) weights appear once
            if name.endswith("bias"):
                p.zero_()
            elif p.dim() == 1:  # LayerNorm gains
                p.fill_(1.0)
            else:
                std = resid_std if name.endswith("c_proj.weight") else 0.02
                # draw on the CPU so a seed gives the same weights on every device
                p.copy_(torch.randn(p.shape, generator=gen) * std)

    # ------------------------------------------------------------------------------ paths
    def _embed(self, idx: torch.Tensor) -> torch.Tensor:
        B, T = idx.shape
        if T > self.cfg.context:
            raise ValueError(f"sequence length {T} exceeds model.context={self.cfg.context}")
        pos = torch.arange(T, device=idx.device)  # (T,)
        return self.wte(idx) + self.wpe(pos)  # (B, T, d)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        """Fast path. idx (B, T) long; returns logits (B, T, V) and the mean cross-entropy or None.

        Target ``-1`` is ignored (masked positions).
        """
        x = self.drop(self._embed(idx))  # (B, T, d)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)
        return logits, loss

    # ------------------------------------------------------------------------------ hooks
    def hook_names(self) -> list[str]:
        """Every hook point name, in forward order (see :data:`BLOCK_HOOKS` for the shapes)."""
        return hook_names(self.cfg)

    @contextmanager
    def hooks(self, fwd_hooks: Sequence[tuple[str, HookFn]]) -> Iterator[GPT]:
        """Attach ``(name, fn)`` hooks for the duration of the block; every forward pass inside
        (either path) calls them. Hooks on one point run in the order given."""
        handles: list[RemovableHandle] = []
        try:
            for name, fn in fwd_hooks:
                if name not in self.hook_dict:
                    keys = ", ".join(n.split(".", 2)[2] for n in self.hook_names() if n.startswith("blocks.0."))
                    raise ValueError(f"hook point {name!r}: no such hook point; have "
                                     f"blocks.{{0..{self.cfg.n_layer - 1}}}.{{{keys}}}")
                handles.append(self.hook_dict[name].add_hook(fn))
            yield self
        finally:
            for h in handles:
                h.remove()

    def run_with_hooks(self, idx: torch.Tensor, fwd_hooks: Sequence[tuple[str, HookFn]],
                       targets: torch.Tensor | None = None):
        """``model(idx, targets)`` with ``fwd_hooks`` attached for this one call."""
        with self.hooks(fwd_hooks):
            return self(idx, targets)

    @torch.no_grad()
    def run_with_cache(self, idx: torch.Tensor, logits: bool = True,
                       logit_positions: slice | None = None) -> tuple[torch.Tensor | None, Cache]:
        """Metric path: hooks on every ``attn.hook_pattern`` and ``attn.hook_z`` collect the patterns
        and head outputs (the pattern hooks make attention explicit); eval mode (no dropout), no grad.

        Returns logits (B, T, V) and a :class:`Cache` with ``attn`` (L, B, H, T, T) and
        ``head_out`` (L, B, T, H, d_head). The cache holds what the model computed: a hook attached
        before (e.g. an ablation) shows in it. To save time when metrics need less:
        ``logits=False`` returns ``None`` for the logits and skips the final MLP, norm and
        unembedding (patterns and head outputs only); ``logit_positions`` (a slice of positions)
        unembeds only those positions, giving logits (B, len(slice), V).
        """
        atts: list[torch.Tensor] = []  # L x (B, H, T, T), in layer order: the hooks fire in that order
        outs: list[torch.Tensor] = []  # L x (B, T, H, dh)
        keep = [(f"blocks.{l}.attn.hook_pattern", lambda a, hook: atts.append(a)) for l in range(self.cfg.n_layer)]
        keep += [(f"blocks.{l}.attn.hook_z", lambda z, hook: outs.append(z)) for l in range(self.cfg.n_layer)]
        was_training = self.training
        self.eval()
        try:
            with self.hooks(keep):
                x = self._embed(idx)  # (B, T, d)
                for i, block in enumerate(self.blocks):
                    if not logits and i == len(self.blocks) - 1:
                        # the last block's MLP only feeds the logits: its attention is all we need
                        block.attn(block.ln_1(block.hook_resid_pre(x)))
                    else:
                        x = block(x)
                out = None
                if logits:
                    x = x if logit_positions is None else x[:, logit_positions]  # (B, T', d)
                    out = self.lm_head(self.ln_f(x))  # (B, T', V)
        finally:
            self.train(was_training)
        return out, Cache(attn=torch.stack(atts), head_out=torch.stack(outs))

    # ------------------------------------------------------------------------------ weights
    @property
    def W_E(self) -> torch.Tensor:
        return self.wte.weight  # (V, d)

    @property
    def W_U(self) -> torch.Tensor:
        return self.lm_head.weight  # (V, d); logits = ln_f(x) @ W_U.T

    def _qkv_weight(self, layer: int, which: int) -> torch.Tensor:
        attn = self.blocks[layer].attn
        d, H, dh = attn.d_model, attn.n_head, attn.d_head
        w = attn.c_attn.weight[which * d:(which + 1) * d]  # (d_out, d_in), nn.Linear stores out x in
        return w.T.view(d, H, dh).permute(1, 0, 2)  # (H, d_in, dh)

    def W_Q(self, layer: int) -> torch.Tensor:
        return self._qkv_weight(layer, 0)  # (H, d, dh)

    def W_K(self, layer: int) -> torch.Tensor:
        return self._qkv_weight(layer, 1)  # (H, d, dh)

    def W_V(self, layer: int) -> torch.Tensor:
        return self._qkv_weight(layer, 2)  # (H, d, dh)

    def W_O(self, layer: int) -> torch.Tensor:
        attn = self.blocks[layer].attn
        # c_proj.weight is (d_out, d_in) with d_in = heads side by side
        return attn.c_proj.weight.T.view(attn.n_head, attn.d_head, attn.d_model)  # (H, dh, d)

    def num_params(self, non_embedding: bool = True) -> int:
        """Parameter count; ``non_embedding`` excludes token and position embeddings (and the
        unembedding when it is not tied to the token embedding)."""
        n = sum(p.numel() for p in self.parameters())  # tied weights counted once
        if non_embedding:
            n -= self.wte.weight.numel() + self.wpe.weight.numel()
            if not self.cfg.tie_embeddings:
                n -= self.lm_head.weight.numel()
        return n

    # ------------------------------------------------------------------------------ training helpers
    def configure_optimizer(self, weight_decay: float, lr: float, betas: tuple[float, float],
                            device_type: str) -> torch.optim.AdamW:
        """AdamW with weight decay on 2-D weights (matmuls, embeddings) only.

        Fused kernels on CUDA and on CPU (torch >= 2.4): on CPU the fused step is an order of
        magnitude faster than the default per-parameter loop, which for a small model is a large
        share of the update (nanoGPT fuses on CUDA only).
        """
        params = [p for p in self.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        if device_type in ("cuda", "cpu"):
            try:
                return torch.optim.AdamW(groups, lr=lr, betas=betas, fused=True)
            except (RuntimeError, TypeError):  # an older torch without the fused CPU kernel
                pass
        return torch.optim.AdamW(groups, lr=lr, betas=betas)

    def estimate_flops_per_token(self, T: int | None = None) -> float:
        """Training FLOPs per token, ``6 N + 12 L H Q T`` (:func:`ihtrain.config.flops_per_token`).

        ``N`` counts the weights that do matmuls: all but the position embedding and, when untied,
        the token embedding (a lookup); the unembedding is counted.
        """
        c = self.cfg
        n = sum(p.numel() for p in self.parameters()) - self.wpe.weight.numel()
        if not c.tie_embeddings:
            n -= self.wte.weight.numel()
        T = T or c.context
        return flops_per_token(n, c.n_layer, c.n_head * (c.d_model // c.n_head), T)

    def estimate_mfu(self, tokens_per_s: float, peak_flops: float, T: int | None = None) -> float:
        """Model FLOPs utilisation: achieved training FLOP/s over ``peak_flops`` (e.g. 989e12 for
        an H100 in bf16)."""
        return self.estimate_flops_per_token(T) * tokens_per_s / peak_flops


__all__ = ["GPT", "Cache", "HookPoint", "HookFn", "BLOCK_HOOKS", "hook_names", "CausalSelfAttention",
           "MLP", "Block"]
