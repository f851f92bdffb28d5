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
from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from ihtrain.errors import ConfigError

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


# ---------------------------------------------------------------------------- a source's declaration
def _no_stream(data_cfg: Any) -> None:
    return None


def _repeats_anywhere(data_cfg: Any, length: int) -> int:
    return 0


def _never(data_cfg: Any) -> bool:
    return False


@dataclass(frozen=True)
class DataSource:
    """One data source, as the trainer sees it.

    ``name``: the ``data.source`` value, or a prefix ending in ``:`` (``text:`` matches
    ``text:PATH``). ``build(data_cfg, seed, progress, context)`` returns a ``TokenSource``.
    ``section``: the ``DataConfig`` attribute holding its knobs ("" none) and ``config`` that
    section's dataclass (a new source's own; the shipped sections are ``ihtrain.config``'s, in
    every shipped config.json). ``vocab_fields``: the section fields that set the vocabulary when
    ``model.vocab_size`` is 0 (runs that differ in them cannot train packed). ``stream(data_cfg)``:
    the DataConfig of the cached natural stream it reads, None when built in memory. ``check(section,
    run_cfg)``: range checks raising ``ConfigError`` naming the dotted field. ``factors``: how the
    statistics read its grid factors (None: every scalar field of its section). ``usage``: the name
    as error messages write it. ``repeat_start(data_cfg, length)``: the first position at which a
    sequence of ``length`` tokens may hold a copy (the repeat region is ``[start, length - 1]``; 0:
    anywhere, as in natural text); the design check and the in-distribution probes read it.
    ``default``: the ``data.source`` of a config that names none. ``recorded``: its section is in every run's config (the shipped sections; a registered one is
    there only when set or selected). ``wraps``/``copies_anywhere``: a wrapper (module docstring).
    """

    name: str
    build: Callable[..., Any]
    section: str = ""
    config: type | None = None
    vocab_fields: tuple[str, ...] = ()
    stream: Callable[[Any], Any] = _no_stream
    check: Callable[[Any, Any], None] | None = None
    factors: Any = None  # an ihstats.base.sources.SourceFactors
    usage: str = ""
    repeat_start: Callable[[Any, int], int] = _repeats_anywhere
    recorded: bool = False
    default: bool = False
    wraps: bool = False
    copies_anywhere: Callable[[Any], bool] = _never
