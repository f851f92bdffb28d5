"""Named run presets (``--preset NAME``) and the folder of grid spec TOML files beside this file.

A run preset is a description plus a dict of dotted-field overrides on top of ``RunConfig()``
defaults; :func:`ihtrain.config.get_preset` returns the resolved config. Grid specs (``*.toml`` in
this folder) are read by :mod:`ihtrain.grid_spec`. This module is data only and imports nothing
from ``ihtrain``, so ``ihtrain.config`` can read it without an import cycle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

GRID_SPEC_DIR = Path(__file__).parent

# name -> (one-line description, dotted overrides)
RUN_PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "cpu-tiny": (
        "2-layer 4-head width-128 GPT (with MLPs) on the shipped builtin-v1 corpus, BPE 1024, B=16, "
        "C=256, AdamW 2e-2, warmup-stable-decay; the fastest setting found that grows an induction "
        "head to max PS > 0.5 on a 2-core CPU (~27 min)",
        {
            "name": "cpu-tiny",
            "model.n_layer": 2, "model.n_head": 4, "model.d_model": 128, "model.context": 256,
            "data.source": "builtin-v1", "data.vocab_size": 1024,
            "train.batch_size": 16, "train.context": 256, "train.lr": 2e-2,
            # constant rate until update 4500 (the head forms at ~2,500), then a linear anneal to
            # 2e-3: at a constant 2e-2 max PS hovers at 0.42-0.49, the anneal lifts it past 0.5
            "train.schedule": "wsd", "train.decay_frac": 0.25, "train.min_lr_frac": 0.1,
            "train.warmup_steps": 100, "train.budget": "steps", "train.max_steps": 6000,
            "metrics.val_seqs": 8,  # held-out loss on 8 x 257 tokens keeps evaluation cheap
        },
    ),
    "cpu-smoke": (
        "seconds-long smoke run: 2-layer 2-head width-32 GPT, 40 updates (tests, CI)",
        {
            "name": "cpu-smoke",
            "model.n_layer": 2, "model.n_head": 2, "model.d_model": 32, "model.context": 64,
            "data.source": "builtin-v1", "data.vocab_size": 300, "data.max_corpus_chars": 400_000,
            "train.batch_size": 4, "train.context": 32, "train.max_steps": 40, "train.lr": 3e-3,
            "metrics.n_evals": 10, "metrics.probe_seqs": 20, "metrics.val_seqs": 4,
        },
    ),
    "paper-2l8h": (
        "Aoyama et al. 2025 setting: GPT-2 2-layer 8-head width 768, AdamW 2.5e-4 fixed for every "
        "B, cosine, 1% warmup, 1B tokens (GPU)",
        {
            "name": "paper-2l8h",
            "model.n_layer": 2, "model.n_head": 8, "model.d_model": 768, "model.context": 4096,
            "data.source": "builtin-v1", "data.vocab_size": 8192,
            "train.batch_size": 32, "train.context": 1024, "train.lr": 2.5e-4,
            "train.schedule": "cosine", "train.warmup_frac": 0.01, "train.min_lr_frac": 0.0,
            "train.budget": "tokens", "train.max_tokens": 1_000_000_000,
        },
    ),
    "biinduct-small": (
        "Sabry and Belz 2025 recipe scaled down: AdamW (0.9, 0.999, wd 0.1), peak 1e-3, 3% warmup "
        "then cosine, untied embeddings, context 1024 (GPU); RoPE/SwiGLU/GQA not implemented",
        {
            "name": "biinduct-small",
            "model.n_layer": 12, "model.n_head": 12, "model.d_model": 768, "model.context": 1024,
            "model.tie_embeddings": False,
            "data.source": "builtin-v1", "data.vocab_size": 8192, "data.biinduct.mode": "balanced",
            "train.batch_size": 64, "train.context": 1024, "train.lr": 1e-3, "train.beta2": 0.999,
            "train.weight_decay": 0.1, "train.warmup_frac": 0.03, "train.schedule": "cosine",
            "train.budget": "tokens", "train.max_tokens": 2_000_000_000,
        },
    ),
}


def preset_names() -> list[str]:
    return sorted(RUN_PRESETS)


def describe_presets() -> str:
    width = max(map(len, RUN_PRESETS))
    return "\n".join(f"{n:<{width}}  {RUN_PRESETS[n][0]}" for n in preset_names())
