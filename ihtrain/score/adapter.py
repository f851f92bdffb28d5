"""A Hugging Face causal LM seen through the interface :mod:`ihtrain.metrics` reads from our GPT.

The metrics need, from a model: the attention patterns ``(L, B, H, T, T)`` and the per-head outputs
before the output projection ``(L, B, T, H, d_head)`` (:meth:`HFModel.run_with_cache`, as
:meth:`ihtrain.model.GPT.run_with_cache`), the logits (``model(idx)[0]``), and the weights in our
row-vector convention: ``W_E``, ``W_U`` (V, d), ``W_V(l)`` (H, d, d_head), ``W_O(l)`` (H, d_head, d).
:class:`HFModel` gives exactly these, so the metric code is the trainer's, not a copy.

Per-head access goes through ``transformers``' own modules, not a hand-written forward pass:

- patterns: the model's eager attention with ``output_attentions=True`` (the fused kernels never
  form the pattern; loading with ``attn_implementation="eager"`` selects the explicit softmax);
- head outputs: a forward pre-hook on the attention output projection (GPT-2 ``attn.c_proj``,
  GPT-NeoX ``attention.dense``, Llama ``self_attn.o_proj``), whose input is the heads side by side;
- logits: the base model's last hidden state (final norm applied) through the output embedding, at
  the positions the metrics read only.

A family is the table entry that says where those modules are and how its fused weights split
into heads (:data:`FAMILIES`, keyed by ``config.model_type``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn

from ihtrain.model import Cache


# ------------------------------------------------------------------------------ weight layouts
def _conv1d_w_v(attn: nn.Module, H: int, dh: int) -> torch.Tensor:
    """GPT-2: ``c_attn`` is a Conv1D (weight (d_in, d_out), x @ W), output columns [q | k | v]."""
    w = attn.c_attn.weight  # (d, 3 H dh)
    d = w.shape[0]
    return w[:, 2 * H * dh:].reshape(d, H, dh).permute(1, 0, 2)  # (H, d, dh)


def _conv1d_w_o(proj: nn.Module, H: int, dh: int) -> torch.Tensor:
    return proj.weight.reshape(H, dh, -1)  # Conv1D (H dh, d) -> (H, dh, d)


def _neox_w_v(attn: nn.Module, H: int, dh: int) -> torch.Tensor:
    """GPT-NeoX: ``query_key_value`` (nn.Linear, weight (d_out, d_in)) lays its outputs per head
    as ``(H, [q | k | v], dh)`` (the attention views them as ``(..., H, 3 dh)`` and chunks)."""
    w = attn.query_key_value.weight  # (H * 3 * dh, d)
    return w.reshape(H, 3, dh, -1)[:, 2].transpose(1, 2)  # (H, d, dh)


def _linear_w_o(attn_out: nn.Linear, H: int, dh: int) -> torch.Tensor:
    return attn_out.weight.T.reshape(H, dh, -1)  # nn.Linear (d, H dh) -> (H, dh, d)


def _llama_w_v(attn: nn.Module, H: int, dh: int) -> torch.Tensor:
    """Llama: ``v_proj`` (nn.Linear) has ``n_kv`` heads; query head h reads kv head ``h // (H / n_kv)``
    (grouped-query attention repeats each kv head for consecutive query heads)."""
    w = attn.v_proj.weight  # (n_kv * dh, d)
    n_kv = w.shape[0] // dh
    return w.reshape(n_kv, dh, -1).transpose(1, 2).repeat_interleave(H // n_kv, dim=0)  # (H, d, dh)


@dataclass(frozen=True)
class Family:
    """Where a family keeps its blocks and attention, and how its weights split into heads."""

    layers: str  # dotted path from the CausalLM to its ModuleList of blocks
    attn: str  # a block's attention module
    out_proj: str  # the attention's output projection: its input is the heads side by side (B, T, H dh)
    w_v: Callable[[nn.Module, int, int], torch.Tensor]  # (attention, H, dh) -> (H, d, dh)
    w_o: Callable[[nn.Module, int, int], torch.Tensor]  # (out_proj, H, dh) -> (H, dh, d)


FAMILIES: dict[str, Family] = {
    "gpt2": Family("transformer.h", "attn", "c_proj", _conv1d_w_v, _conv1d_w_o),
    "gpt_neox": Family("gpt_neox.layers", "attention", "dense", _neox_w_v, _linear_w_o),
    "llama": Family("model.layers", "self_attn", "o_proj", _llama_w_v, _linear_w_o),
}


def family_of(hf_model: nn.Module) -> Family:
    """The :class:`Family` of a loaded model, from its ``config.model_type``; a clear error otherwise."""
    kind = getattr(hf_model.config, "model_type", "?")
    if kind not in FAMILIES:
        raise ValueError(f"model_type {kind!r}: not a supported family; supported: {', '.join(FAMILIES)} "
                         f"(add its entry to ihtrain.score.adapter.FAMILIES)")
    return FAMILIES[kind]


@dataclass(frozen=True)
class Shape:
    """What the metrics read from ``model.cfg``."""

    n_layer: int
    n_head: int
    d_head: int


class HFModel(nn.Module):
    """A ``transformers`` causal LM (loaded with eager attention) behind our GPT's metric interface."""

    def __init__(self, hf_model: nn.Module):
        super().__init__()
        self.hf = hf_model
        self.family = family_of(hf_model)
        self.layers = self.hf.get_submodule(self.family.layers)
        c = hf_model.config
        H = c.num_attention_heads if hasattr(c, "num_attention_heads") else c.n_head
        d = hf_model.get_input_embeddings().weight.shape[1]
        dh = getattr(c, "head_dim", None) or d // H
        self.cfg = Shape(n_layer=len(self.layers), n_head=H, d_head=dh)

    def _attn(self, layer: int) -> nn.Module:
        return getattr(self.layers[layer], self.family.attn)

    def _out_proj(self, layer: int) -> nn.Module:
        return getattr(self._attn(layer), self.family.out_proj)

    # ------------------------------------------------------------------------------ paths
    def forward(self, idx: torch.Tensor, targets: None = None) -> tuple[torch.Tensor, None]:
        """idx (B, T) long -> logits (B, T, V) and None (the shape of ``GPT.forward``'s answer)."""
        return self.hf(input_ids=idx, use_cache=False).logits, None

    @torch.no_grad()
    def run_with_cache(self, idx: torch.Tensor, logits: bool = True,
                       logit_positions: slice | None = None) -> tuple[torch.Tensor | None, Cache]:
        """As :meth:`ihtrain.model.GPT.run_with_cache`: logits (B, T', V) or None, and a Cache with
        ``attn`` (L, B, H, T, T) and ``head_out`` (L, B, T, H, d_head)."""
        outs: list[torch.Tensor] = []  # L x (B, T, H dh), in layer order: the hooks fire in that order

        def keep(module, args, kwargs):
            x = args[0] if args else next(iter(kwargs.values()))
            outs.append(x.detach())

        handles = [self._out_proj(l).register_forward_pre_hook(keep, with_kwargs=True)
                   for l in range(self.cfg.n_layer)]
        try:
            h = self.hf.base_model(input_ids=idx, output_attentions=True, use_cache=False)
        finally:
            for hd in handles:
                hd.remove()
        if h.attentions is None or any(a is None for a in h.attentions):
            raise RuntimeError("the model returned no attention patterns: load it with attn_implementation='eager'")
        B, T = idx.shape
        head_out = torch.stack(outs).view(self.cfg.n_layer, B, T, self.cfg.n_head, self.cfg.d_head)
        out = None
        if logits:
            x = h.last_hidden_state  # (B, T, d), the final norm applied
            x = x if logit_positions is None else x[:, logit_positions]
            out = self.hf.get_output_embeddings()(x)  # (B, T', V)
        return out, Cache(attn=torch.stack(h.attentions), head_out=head_out)

    # ------------------------------------------------------------------------------ weights
    @property
    def W_E(self) -> torch.Tensor:
        return self.hf.get_input_embeddings().weight  # (V, d)

    @property
    def W_U(self) -> torch.Tensor:
        return self.hf.get_output_embeddings().weight  # (V, d); logits = norm(x) @ W_U.T

    def W_V(self, layer: int) -> torch.Tensor:
        return self.family.w_v(self._attn(layer), self.cfg.n_head, self.cfg.d_head)  # (H, d, dh)

    def W_O(self, layer: int) -> torch.Tensor:
        return self.family.w_o(self._out_proj(layer), self.cfg.n_head, self.cfg.d_head)  # (H, dh, d)


__all__ = ["FAMILIES", "Family", "HFModel", "Shape", "family_of"]
