"""The whole GPT in one file (after nanoGPT), with a metric path that exposes per-head activations.

Two forward paths share the same weights:

- ``model(idx, targets)`` is the fast path used for training: fused
  ``F.scaled_dot_product_attention(is_causal=True)``, no caching, no hooks.
- ``model.run_with_cache(idx)`` is the metric path: attention is computed explicitly (softmax of
  masked scores) so the patterns ``cache.attn`` (L, B, H, T, T) and the per-head outputs
  ``cache.head_out`` (L, B, T, H, d_head), taken before ``W_O`` sums the heads, can be returned.
  It gives the same logits as the fast path (tested to ~1e-5 in float32).

The metric path is a separate method, not a flag on the hot path, so training pays nothing for it.

Weight accessors follow the row-vector convention ``x @ W``: ``W_E`` and ``W_U`` are (V, d) with one
row per token, ``W_V(l)`` is (H, d, d_head) and ``W_O(l)`` is (H, d_head, d), so head ``h`` of layer
``l`` writes ``head_out[l, :, :, h] @ W_O(l)[h]`` into the residual stream (plus the shared output
bias). The accessors are views of the fused qkv / projection weights, not copies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ihtrain.config import ModelConfig, flops_per_token


@dataclass
class Cache:
    """Activations from :meth:`GPT.run_with_cache` (no grad)."""

    attn: torch.Tensor  # (L, B, H, T, T) attention patterns, rows sum to 1
    head_out: torch.Tensor  # (L, B, T, H, d_head) per-head outputs o_h(s), before W_O


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

    def _qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(self.d_model, dim=2)  # 3 x (B, T, d)
        shape = (B, T, self.n_head, self.d_head)
        # (B, T, H, dh) -> (B, H, T, dh)
        return (q.view(shape).transpose(1, 2), k.view(shape).transpose(1, 2), v.view(shape).transpose(1, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self._qkv(x)  # (B, H, T, dh)
        p = self.attn_dropout_p if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)  # (B, H, T, dh)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # heads side by side, (B, T, d)
        return self.resid_dropout(self.c_proj(y))

    def forward_with_cache(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Explicit attention (no dropout). Returns y (B, T, d), att (B, H, T, T), o (B, T, H, dh)."""
        B, T, C = x.shape
        q, k, v = self._qkv(x)  # (B, H, T, dh)
        # scale q (B, H, T, dh) rather than the scores (B, H, T, T), and mask in place: fewer passes
        att = (q * (1.0 / math.sqrt(self.d_head))) @ k.transpose(-2, -1)  # (B, H, T, T)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)  # True above the diagonal
        att = att.masked_fill_(mask, float("-inf")).softmax(dim=-1)  # (B, H, T, T)
        o = (att @ v).transpose(1, 2)  # (B, T, H, dh)
        y = self.c_proj(o.reshape(B, T, C))  # (B, T, d)
        return y, att, o


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
        self.ln_1 = nn.LayerNorm(cfg.d_model, bias=cfg.bias)
        self.attn = CausalSelfAttention(cfg)
        self.attn_only = cfg.attn_only
        if not cfg.attn_only:
            self.ln_2 = nn.LayerNorm(cfg.d_model, bias=cfg.bias)
            self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        if not self.attn_only:
            x = x + self.mlp(self.ln_2(x))
        return x

    def forward_with_cache(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y, att, o = self.attn.forward_with_cache(self.ln_1(x))
        x = x + y
        if not self.attn_only:
            x = x + self.mlp(self.ln_2(x))
        return x, att, o


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

    @torch.no_grad()
    def run_with_cache(self, idx: torch.Tensor, logits: bool = True,
                       logit_positions: slice | None = None) -> tuple[torch.Tensor | None, Cache]:
        """Metric path: explicit attention, no dropout, no grad.

        Returns logits (B, T, V) and a :class:`Cache` with ``attn`` (L, B, H, T, T) and
        ``head_out`` (L, B, T, H, d_head). To save time when metrics need less:
        ``logits=False`` returns ``None`` for the logits and skips the final MLP, norm and
        unembedding (patterns and head outputs only); ``logit_positions`` (a slice of positions)
        unembeds only those positions, giving logits (B, len(slice), V).
        """
        x = self._embed(idx)  # (B, T, d)
        atts, outs = [], []
        for i, block in enumerate(self.blocks):
            if not logits and i == len(self.blocks) - 1:
                # the last block's MLP only feeds the logits: its attention is all we need
                _, att, o = block.attn.forward_with_cache(block.ln_1(x))
            else:
                x, att, o = block.forward_with_cache(x)
            atts.append(att)
            outs.append(o)
        out = None
        if logits:
            x = x if logit_positions is None else x[:, logit_positions]  # (B, T', d)
            out = self.lm_head(self.ln_f(x))  # (B, T', V)
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


__all__ = ["GPT", "Cache", "CausalSelfAttention", "MLP", "Block"]
