"""A run's budget and cost from its config alone, before anything is built: the cap in updates and
tokens, the training FLOPs per token, and both as people read them (``--dry-run``, the grid log,
``--list-presets``)."""

from __future__ import annotations

from typing import Any

from ihtrain.config import RunConfig, flops_per_token


def budget_of(cfg: RunConfig) -> dict[str, Any]:
    """Budget kind and its cap in updates and tokens (until-emergence: the cap is an upper bound)."""
    steps = cfg.cap_steps
    return {"budget": cfg.train.budget, "max_steps": steps, "max_tokens": steps * cfg.tokens_per_step}


def train_flops_per_token(cfg: RunConfig) -> float:
    """``GPT.estimate_flops_per_token`` from the config alone, without building the model: ``N``
    counts the blocks' matmul weights and, when the config fixes ``vocab_size``, the unembedding
    (a vocabulary taken from the data source is left out)."""
    m = cfg.model
    per_block = 4 * m.d_model**2 + (0 if m.attn_only else 2 * m.mlp_ratio * m.d_model**2)
    return flops_per_token(m.n_layer * per_block + m.vocab_size * m.d_model, m.n_layer, m.d_model, cfg.train.context)


def human(n: float) -> str:
    for unit, k in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= k:
            return f"{n / k:.3g}{unit}"
    return f"{n:.3g}"


def describe_budget(cfg: RunConfig) -> str:
    b = budget_of(cfg)
    cap = "<=" if b["budget"] == "until-emergence" else ""
    return f"{b['budget']} {cap}{b['max_steps']} upd / {cap}{human(b['max_tokens'])} tok"
