"""Token sources for training: natural text, semi-natural and Markov generators, Bi-Induct.

``build_source(data_cfg, seed)`` turns a :class:`~ihtrain.config.DataConfig` into a
:class:`~ihtrain.data.source.TokenSource` through the source registry (:mod:`ihtrain.data.registry`),
where each source module registers itself.
"""

from __future__ import annotations

from typing import Any

from ihtrain.data.registry import find, usage
from ihtrain.data.source import SPECIAL_TOKENS, DataError, TokenSource, cached_stream_config, resolve_cache_dir


def build_source(data_cfg: Any, seed: int = 0, progress: bool = True, context: int | None = None) -> TokenSource:
    """``data.source`` -> a ready ``TokenSource`` (wrapped by Bi-Induct when ``data.biinduct.mode != "none"``)."""
    src = find(data_cfg.source)  # each source module is imported when first asked for (ihtrain.data.registry)
    if src is None:
        raise DataError(f"data.source: must be one of {usage()}; got {data_cfg.source!r}")
    base = src.build(data_cfg, seed=seed, progress=progress, context=context)
    if data_cfg.biinduct.mode != "none":
        from ihtrain.data.biinduct import BiInductSource

        return BiInductSource(base, data_cfg.biinduct, seed=seed, context=context)
    return base


def repeat_start_of(data_cfg: Any, length: int) -> int:
    """The first position at which the training sequences of ``length`` tokens may hold a copy
    (the source's declared ``repeat_start``; 0 for forward Bi-Induct snippets, which land anywhere)."""
    src = find(data_cfg.source)
    if src is None:
        raise DataError(f"data.source: must be one of {usage()}; got {data_cfg.source!r}")
    copies_anywhere = data_cfg.biinduct.mode in ("forward", "balanced")
    return 0 if copies_anywhere else src.repeat_start(data_cfg, length)


def __getattr__(name: str) -> Any:  # lazy re-exports: importing ihtrain.data stays cheap
    if name in ("NaturalSource", "TokenStream", "load_stream", "build_corpus"):
        from ihtrain.data import natural

        return getattr(natural, name)
    if name in ("Tokenizer", "train_bpe", "load_pretrained"):
        from ihtrain.data import tokenizer

        return getattr(tokenizer, name)
    raise AttributeError(f"module 'ihtrain.data' has no attribute {name!r}")


__all__ = ["DataError", "SPECIAL_TOKENS", "TokenSource", "build_source", "repeat_start_of", "cached_stream_config", "resolve_cache_dir",
           "NaturalSource", "TokenStream", "load_stream", "build_corpus", "Tokenizer", "train_bpe",
           "load_pretrained"]
