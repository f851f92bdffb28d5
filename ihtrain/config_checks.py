"""Validation of a :class:`ihtrain.config.RunConfig`: ranges and cross-field constraints, checked
once at the edge; every error is a :class:`ConfigError` naming the dotted field and what is allowed.

Kept apart from the dataclasses (``config.py``) because the two change for different reasons: a
new field is declared there and its range is stated here.
"""

from __future__ import annotations

import math
from typing import Any

from ihstats.base.contract import WATCHED_METRICS, general_probe_layout
from ihtrain.data import copy_band_of, repeat_start_of
from ihtrain.data.registry import find, sources, usage
from ihtrain.errors import ConfigError, need

# The functions take the dataclasses of ihtrain.config (RunConfig and its sections); config.py imports
# this module, so they are annotated Any rather than importing the classes back.


def validate(cfg: Any) -> Any:
    """Check a ``RunConfig``'s ranges and cross-field constraints; raise ConfigError naming the field."""
    need(is_plain_name(cfg.name), "name", f"must be a plain name (no '/', '\\', '.' or '..'), got {cfg.name!r}")
    need(cfg.seed >= 0, "seed", f"must be an integer >= 0, got {cfg.seed}")
    for kind in ("weight_seed", "data_seed"):
        need(getattr(cfg, kind) >= -1, kind, f"must be an integer >= 0 (or -1: the run's seed), got {getattr(cfg, kind)}")
    _validate_model(cfg.model)
    _validate_train(cfg.train, cfg.model)
    need(cfg.metrics.n_evals >= 2, "metrics.n_evals", f"must be >= 2, got {cfg.metrics.n_evals}")
    need(0 <= cfg.metrics.log_fraction <= 1, "metrics.log_fraction", "must be in [0, 1]")
    need(cfg.metrics.probe_seqs > 0, "metrics.probe_seqs", "must be > 0")
    need(cfg.metrics.probe_len >= 0, "metrics.probe_len", "must be >= 0")
    need(cfg.metrics.val_seqs >= 1, "metrics.val_seqs", f"must be >= 1, got {cfg.metrics.val_seqs}")
    if cfg.metrics.probe_len:
        need(2 * cfg.metrics.probe_len + 1 <= cfg.train.context, "metrics.probe_len",
             f"2 * probe_len + 1 must fit in train.context={cfg.train.context}")
    _validate_data(cfg.data, cfg)
    return cfg


def is_plain_name(name: str) -> bool:
    """A run or grid name is a folder name, never a path (``../x`` would write outside runs/)."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and name.isprintable()


def _validate_model(m: Any) -> None:
    for name in ("n_layer", "n_head", "d_model", "context", "mlp_ratio"):
        need(getattr(m, name) > 0, f"model.{name}", f"must be a positive integer, got {getattr(m, name)}")
    need(m.d_model % m.n_head == 0, "model.d_model", f"must be divisible by model.n_head={m.n_head}, got {m.d_model}")
    need(m.vocab_size >= 0, "model.vocab_size", "must be >= 0 (0: from the data source)")
    need(0.0 <= m.dropout < 1.0, "model.dropout", f"must be in [0, 1), got {m.dropout}")


def _validate_train(t: Any, m: Any) -> None:
    need(t.batch_size > 0, "train.batch_size", f"must be a positive integer, got {t.batch_size}")
    need(t.micro_batch_size >= 0, "train.micro_batch_size", f"must be >= 0, got {t.micro_batch_size}")
    if t.micro_batch_size:
        need(t.batch_size % t.micro_batch_size == 0, "train.micro_batch_size",
             f"must divide train.batch_size={t.batch_size}, got {t.micro_batch_size}")
    need(t.context > 1, "train.context", f"must be > 1, got {t.context}")
    need(t.context <= m.context, "train.context",
         f"{t.context} is longer than the model's context model.context={m.context}")
    if t.budget == "tokens":
        need(t.max_tokens > 0, "train.max_tokens", "must be > 0 when train.budget='tokens'")
    else:
        need(t.max_steps > 0, "train.max_steps", f"must be > 0 when train.budget='{t.budget}'")
        need(t.max_tokens >= 0, "train.max_tokens", f"must be >= 0 (0: no token cap), got {t.max_tokens}")
    need(0 < t.lr < math.inf, "train.lr", f"must be a finite number > 0, got {t.lr}")
    for name in ("beta1", "beta2"):
        need(0 <= getattr(t, name) < 1, f"train.{name}", f"must be in [0, 1), got {getattr(t, name)}")
    need(0 <= t.weight_decay < math.inf, "train.weight_decay", f"must be a finite number >= 0, got {t.weight_decay}")
    need(t.warmup_steps >= 0, "train.warmup_steps", f"must be >= 0 (0: use train.warmup_frac), got {t.warmup_steps}")
    # PS is a fraction: a level outside (0, 1) is crossed at once or never (1.0 only by a perfect head)
    need(0 < t.emergence_threshold < 1, "train.emergence_threshold",
         f"must be in (0, 1) (the formed level, contract.formed_level), got {t.emergence_threshold}")
    need(t.emergence_metric in WATCHED_METRICS, "train.emergence_metric",
         f"must be ps (the repeat probe), ps_indist (the data's own copies) or ps_gen (the general probe's "
         f"weakest distance, the certificate's score), got {t.emergence_metric!r}")
    need(t.threads >= 0, "train.threads", f"must be >= 0 (0: torch's default), got {t.threads}")
    need(0 < t.checkpoint_seconds < math.inf, "train.checkpoint_seconds", f"must be a number > 0, got {t.checkpoint_seconds}")
    need(all(k >= 0 for k in t.keep_checkpoints), "train.keep_checkpoints", "must be steps >= 0")
    need(0 <= t.emergence_margin < math.inf, "train.emergence_margin",
         f"must be a finite number >= 0, got {t.emergence_margin}")
    need(t.checkpoint_every >= 0, "train.checkpoint_every",
         f"must be >= 0 (0: by train.checkpoint_seconds), got {t.checkpoint_every}")
    need(t.log_every >= 1, "train.log_every", f"must be >= 1 (log every N updates), got {t.log_every}")
    need(t.divergence_factor == 0 or 1 < t.divergence_factor < math.inf, "train.divergence_factor",
         f"must be 0 (off) or a finite number > 1, got {t.divergence_factor}")
    need(t.divergence_window >= 1, "train.divergence_window", f"must be >= 1, got {t.divergence_window}")
    need(0 <= t.warmup_frac < 1, "train.warmup_frac", f"must be in [0, 1), got {t.warmup_frac}")
    need(0 <= t.min_lr_frac <= 1, "train.min_lr_frac", f"must be in [0, 1], got {t.min_lr_frac}")
    need(0 < t.decay_frac <= 1, "train.decay_frac", f"must be in (0, 1], got {t.decay_frac}")
    need(t.grad_clip >= 0, "train.grad_clip", "must be >= 0")
    need(t.device == "auto" or t.device == "cpu" or t.device.startswith("cuda") or t.device == "mps",
         "train.device", f"must be auto, cpu, cuda or cuda:N, got {t.device!r}")


def _validate_data(d: Any, cfg: Any) -> None:
    need(d.vocab_size >= 8, "data.vocab_size", f"must be >= 8, got {d.vocab_size}")
    need(0 < d.val_fraction < 0.5, "data.val_fraction", "must be in (0, 0.5)")
    need(find(d.source) is not None, "data.source", f"must be one of {usage()}; got {d.source!r}")
    selected = find(d.source)
    for src in sources():  # every section the config holds, selected or not (a shipped config has them all)
        present = src.section in d.sections or src is selected or src.wraps
        if src.check is not None and src.section and present:
            src.check(getattr(d, src.section), cfg)
    _validate_general_probe(d, cfg)
    need(d.max_corpus_chars >= 0, "data.max_corpus_chars", f"must be >= 0 (0: whole corpus), got {d.max_corpus_chars}")
    need(d.tokenizer == "bpe" or d.tokenizer.startswith("pretrained:"), "data.tokenizer",
         f"must be 'bpe' or 'pretrained:NAME_OR_PATH', got {d.tokenizer!r}")


def _validate_general_probe(d: Any, cfg: Any) -> None:
    """The general probe must fit the run (contract.general_probe_layout): checked here, not
    minutes later when the trainer builds its probes after the data."""
    if not cfg.metrics.enabled:
        return
    band = copy_band_of(d)
    try:
        general_probe_layout(cfg.train.context, repeat_start_of(d, cfg.train.context + 1), band)
    except ValueError as e:
        field = f"data.{find(d.source).section}.max_distance" if band else "train.context"
        raise ConfigError(f"{field}: {e}") from None

