"""The ``TokenSource`` protocol every data source implements, plus shared helpers.

A source hands the trainer integer token windows and describes its vocabulary::

    source.vocab_size          # int, specials included
    source.special_tokens      # {"eos": 0, "sep": 1} for our tokenizers; {} if none
    source.ordinary_range      # (lo, hi): probes draw tokens uniformly from range(lo, hi)
    source.fingerprint         # JSON-able dict written to config.json
    tokens, stats = source.sample(rng, n_seqs, length, progress)   # int64 (n_seqs, length), dict
    val = source.val_sample(n_seqs, length)                         # deterministic int64 array

The protocol is structural (``typing.Protocol``): sources need not inherit from it, and
``isinstance(obj, TokenSource)`` checks the attributes are there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ihtrain.errors import ConfigError
from ihtrain.data.registry import find

EOS, SEP = 0, 1  # special tokens take the lowest ids; ordinary tokens are 2 .. vocab_size - 1
SPECIAL_TOKENS = {"eos": EOS, "sep": SEP}


class DataError(ConfigError):
    """Data cannot be built from the configuration (message: one line naming the field or path)."""


@runtime_checkable
class TokenSource(Protocol):
    """What the trainer, the probes and Bi-Induct need from a data source."""

    @property
    def vocab_size(self) -> int: ...

    @property
    def special_tokens(self) -> dict[str, int]: ...

    @property
    def ordinary_range(self) -> tuple[int, int]: ...

    @property
    def fingerprint(self) -> dict[str, Any]: ...

    def sample(self, rng: np.random.Generator, n_seqs: int, length: int,
               progress: float = 0.0) -> tuple[np.ndarray, dict[str, float]]:
        """``n_seqs`` windows of ``length`` tokens, int64 ``(n_seqs, length)``, and per-step stats."""
        ...

    def val_sample(self, n_seqs: int, length: int) -> np.ndarray:
        """Fixed held-out windows, int64 ``(n_seqs, length)``; same answer on every call."""
        ...


def resolve_cache_dir(cache_dir: str | os.PathLike | None = "") -> Path:
    """``data.cache_dir`` if set, else ``$IHLAW_CACHE``, else ``~/.cache/ihlaw`` (created)."""
    root = str(cache_dir or "") or os.environ.get("IHLAW_CACHE", "") or str(Path.home() / ".cache" / "ihlaw")
    path = Path(root).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_sample_args(n_seqs: int, length: int) -> None:
    """Shared argument check for ``sample``/``val_sample``."""
    if int(n_seqs) <= 0:
        raise ValueError(f"n_seqs: must be a positive integer, got {n_seqs}")
    if int(length) <= 0:
        raise ValueError(f"length: must be a positive integer, got {length}")


def cached_stream_config(data_cfg: Any) -> Any | None:
    """The DataConfig of the natural token stream (corpus, tokenizer, token memmap, all cached on
    disk) that ``build_source(data_cfg)`` reads: the source's ``stream`` in the registry (a natural
    source itself, a semi-natural source's base corpus); None for a source built only in memory
    (markov). Bi-Induct wraps its base source, so the base decides."""
    src = find(data_cfg.source)
    return src.stream(data_cfg) if src is not None else None
