"""Validation of a :class:`ihtrain.config.RunConfig`: ranges and cross-field constraints, checked
once at the edge; every error is a :class:`ConfigError` naming the dotted field and what is allowed.

Kept apart from the dataclasses (``config.py``) because the two change for different reasons: a
new field is declared there and its range is stated here.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: config.py imports this module, never the other way at run time
    from ihtrain.config import DataConfig, ModelConfig, RunConfig, TrainConfig


class ConfigError(ValueError):
    """A configuration value is missing, unknown or out of range (message names the field)."""


def validate(cfg: RunConfig) -> RunConfig:
    """Check ranges and cross-field constraints; raise ConfigError naming the field."""
    _need(is_plain_name(cfg.name), "name", f"must be a plain name (no '/', '\\', '.' or '..'), got {cfg.name!r}")
    _need(cfg.seed >= 0, "seed", f"must be an integer >= 0, got {cfg.seed}")
    _validate_model(cfg.model)
    _validate_train(cfg.train, cfg.model)
    _need(cfg.metrics.n_evals >= 2, "metrics.n_evals", f"must be >= 2, got {cfg.metrics.n_evals}")
    _need(0 <= cfg.metrics.log_fraction <= 1, "metrics.log_fraction", "must be in [0, 1]")
    _need(cfg.metrics.probe_seqs > 0, "metrics.probe_seqs", "must be > 0")
    _need(cfg.metrics.probe_len >= 0, "metrics.probe_len", "must be >= 0")
    _need(cfg.metrics.val_seqs >= 1, "metrics.val_seqs", f"must be >= 1, got {cfg.metrics.val_seqs}")
    if cfg.metrics.probe_len:
        _need(2 * cfg.metrics.probe_len + 1 <= cfg.train.context, "metrics.probe_len",
              f"2 * probe_len + 1 must fit in train.context={cfg.train.context}")
    _validate_data(cfg.data, cfg.train)
    return cfg


def is_plain_name(name: str) -> bool:
    """A run or grid name is a folder name, never a path (``../x`` would write outside runs/)."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and name.isprintable()


def _need(ok: bool, name: str, msg: str) -> None:
    if not ok:
        raise ConfigError(f"{name}: {msg}")


def _validate_model(m: ModelConfig) -> None:
    for name in ("n_layer", "n_head", "d_model", "context", "mlp_ratio"):
        _need(getattr(m, name) > 0, f"model.{name}", f"must be a positive integer, got {getattr(m, name)}")
    _need(m.d_model % m.n_head == 0, "model.d_model", f"must be divisible by model.n_head={m.n_head}, got {m.d_model}")
    _need(m.vocab_size >= 0, "model.vocab_size", "must be >= 0 (0: from the data source)")
    _need(0.0 <= m.dropout < 1.0, "model.dropout", f"must be in [0, 1), got {m.dropout}")


def _validate_train(t: TrainConfig, m: ModelConfig) -> None:
    _need(t.batch_size > 0, "train.batch_size", f"must be a positive integer, got {t.batch_size}")
    _need(t.micro_batch_size >= 0, "train.micro_batch_size", f"must be >= 0, got {t.micro_batch_size}")
    if t.micro_batch_size:
        _need(t.batch_size % t.micro_batch_size == 0, "train.micro_batch_size",
              f"must divide train.batch_size={t.batch_size}, got {t.micro_batch_size}")
    _need(t.context > 1, "train.context", f"must be > 1, got {t.context}")
    _need(t.context <= m.context, "train.context",
          f"{t.context} is longer than the model's context model.context={m.context}")
    if t.budget == "tokens":
        _need(t.max_tokens > 0, "train.max_tokens", "must be > 0 when train.budget='tokens'")
    else:
        _need(t.max_steps > 0, "train.max_steps", f"must be > 0 when train.budget='{t.budget}'")
        _need(t.max_tokens >= 0, "train.max_tokens", f"must be >= 0 (0: no token cap), got {t.max_tokens}")
    _need(0 < t.lr < math.inf, "train.lr", f"must be a finite number > 0, got {t.lr}")
    for name in ("beta1", "beta2"):
        _need(0 <= getattr(t, name) < 1, f"train.{name}", f"must be in [0, 1), got {getattr(t, name)}")
    _need(0 <= t.weight_decay < math.inf, "train.weight_decay", f"must be a finite number >= 0, got {t.weight_decay}")
    _need(t.warmup_steps >= 0, "train.warmup_steps", f"must be >= 0 (0: use train.warmup_frac), got {t.warmup_steps}")
    # PS is a fraction: a threshold outside (0, 1] is crossed at once or never
    _need(0 < t.emergence_threshold <= 1, "train.emergence_threshold", f"must be in (0, 1], got {t.emergence_threshold}")
    _need(t.threads >= 0, "train.threads", f"must be >= 0 (0: torch's default), got {t.threads}")
    _need(0 < t.checkpoint_seconds < math.inf, "train.checkpoint_seconds", f"must be a number > 0, got {t.checkpoint_seconds}")
    _need(all(k >= 0 for k in t.keep_checkpoints), "train.keep_checkpoints", "must be steps >= 0")
    _need(0 <= t.emergence_margin < math.inf, "train.emergence_margin",
          f"must be a finite number >= 0, got {t.emergence_margin}")
    _need(t.checkpoint_every >= 0, "train.checkpoint_every",
          f"must be >= 0 (0: by train.checkpoint_seconds), got {t.checkpoint_every}")
    _need(t.log_every >= 1, "train.log_every", f"must be >= 1 (log every N updates), got {t.log_every}")
    _need(t.divergence_factor == 0 or 1 < t.divergence_factor < math.inf, "train.divergence_factor",
          f"must be 0 (off) or a finite number > 1, got {t.divergence_factor}")
    _need(t.divergence_window >= 1, "train.divergence_window", f"must be >= 1, got {t.divergence_window}")
    _need(0 <= t.warmup_frac < 1, "train.warmup_frac", f"must be in [0, 1), got {t.warmup_frac}")
    _need(0 <= t.min_lr_frac <= 1, "train.min_lr_frac", f"must be in [0, 1], got {t.min_lr_frac}")
    _need(0 < t.decay_frac <= 1, "train.decay_frac", f"must be in (0, 1], got {t.decay_frac}")
    _need(t.grad_clip >= 0, "train.grad_clip", "must be >= 0")
    _need(t.device == "auto" or t.device == "cpu" or t.device.startswith("cuda") or t.device == "mps",
          "train.device", f"must be auto, cpu, cuda or cuda:N, got {t.device!r}")


def _validate_data(d: DataConfig, t: TrainConfig) -> None:
    _need(d.vocab_size >= 8, "data.vocab_size", f"must be >= 8, got {d.vocab_size}")
    _need(0 < d.val_fraction < 0.5, "data.val_fraction", "must be in (0, 0.5)")
    kinds = ("builtin", "seminatural", "markov")
    _need(d.source in kinds or d.source.startswith(("text:", "hf:")), "data.source",
          f"must be one of builtin, text:PATH, hf:NAME[:CONFIG][:SPLIT], seminatural, markov; got {d.source!r}")
    sn, mk, bi = d.seminatural, d.markov, d.biinduct
    for name, v in (("data.seminatural.frequency", sn.frequency), ("data.seminatural.reliability", sn.reliability),
                    ("data.biinduct.mix_start", bi.mix_start), ("data.markov.within_similarity", mk.within_similarity),
                    ("data.markov.across_similarity", mk.across_similarity)):
        _need(0.0 <= v <= 1.0, name, f"must be a probability in [0, 1], got {v}")
    for name, v in (("data.markov.frequency", mk.frequency), ("data.markov.reliability", mk.reliability)):
        _need(v < 0 or v <= 1.0, name, f"must be a probability in [0, 1] (or < 0: not imposed), got {v}")
    _need(mk.vocab >= 4, "data.markov.vocab", f"must be >= 4, got {mk.vocab}")
    _need(mk.repeat_start == 0 or 2 <= mk.repeat_start <= t.context - 2, "data.markov.repeat_start",
          f"must be 0 (C // 2) or in [2, train.context - 2] = [2, {t.context - 2}], got {mk.repeat_start}")
    _need(d.max_corpus_chars >= 0, "data.max_corpus_chars", f"must be >= 0 (0: whole corpus), got {d.max_corpus_chars}")
    _need(sn.top_v >= 1, "data.seminatural.top_v", f"must be >= 1, got {sn.top_v}")
    _need(0 < mk.zipf_alpha < math.inf, "data.markov.zipf_alpha", f"must be a finite number > 0, got {mk.zipf_alpha}")
    _need(mk.n_groups >= 0, "data.markov.n_groups", f"must be >= 0 (0: no groups), got {mk.n_groups}")
    _need(0 <= mk.entropy_rate < math.inf, "data.markov.entropy_rate", f"must be >= 0 (0: as built), got {mk.entropy_rate}")
    _need(sn.pool_tokens >= 0 and mk.pool_tokens >= 0, "data.*.pool_tokens", "must be >= 0")
    if bi.mode != "none":
        _need(bi.span_len >= 1, "data.biinduct.span_len", f"must be >= 1, got {bi.span_len}")
        _need(2 * bi.span_len + 1 <= t.context + 1, "data.biinduct.span_len",
              f"a snippet S SEP S has 2 * span_len + 1 = {2 * bi.span_len + 1} tokens, longer than "
              f"train.context + 1 = {t.context + 1}")
    _need(d.tokenizer == "bpe" or d.tokenizer.startswith("pretrained:"), "data.tokenizer",
          f"must be 'bpe' or 'pretrained:NAME_OR_PATH', got {d.tokenizer!r}")
