"""Token sources for training: natural text, semi-natural and Markov generators, the Bi-Induct wrapper.

``build_source(data_cfg, seed)`` turns a :class:`~ihtrain.config.DataConfig` into a
:class:`~ihtrain.data.source.TokenSource` through the source registry (:mod:`ihtrain.data.registry`),
where each source module declares itself.
"""

from __future__ import annotations

from typing import Any

from ihstats.base.contract import probe_len_of
from ihtrain.data.registry import cached_stream_config, find, usage, wrappers
from ihtrain.data.source import SPECIAL_TOKENS, DataError, TokenSource, resolve_cache_dir


def build_source(data_cfg: Any, seed: int = 0, progress: bool = True, context: int | None = None) -> TokenSource:
    """``data.source`` -> a ready ``TokenSource``, through every registered wrapper (Bi-Induct wraps
    it when its section turns it on)."""
    src = find(data_cfg.source)  # each source module is imported when first asked for (ihtrain.data.registry)
    if src is None:
        raise DataError(f"data.source: must be one of {usage()}; got {data_cfg.source!r}")
    out = src.build(data_cfg, seed=seed, progress=progress, context=context)
    for wrapper in wrappers():
        out = wrapper.build(out, data_cfg, seed=seed, context=context)
    return out


def repeat_start_of(data_cfg: Any, length: int) -> int:
    """The first position at which the training sequences of ``length`` tokens may hold a copy
    (the source's declared ``repeat_start``; 0 when a wrapper's copies land anywhere, as forward
    Bi-Induct snippets do)."""
    src = find(data_cfg.source)
    if src is None:
        raise DataError(f"data.source: must be one of {usage()}; got {data_cfg.source!r}")
    copies_anywhere = any(w.copies_anywhere(data_cfg) for w in wrappers())
    return 0 if copies_anywhere else src.repeat_start(data_cfg, length)


def copy_band_of(data_cfg: Any) -> tuple[int, int] | None:
    """``(min, max)`` tokens between a copy and its source where the data fixes both ends (the
    decoupled setting: ``data.<source>.min_distance`` and ``max_distance`` both set), else None.
    The general probe then asks about distances across the band (contract.general_probe_layout):
    a head trained only on copies 8-12 apart is not asked about 32."""
    src = find(data_cfg.source)
    if src is None:
        raise DataError(f"data.source: must be one of {usage()}; got {data_cfg.source!r}")
    section = getattr(data_cfg, src.section, None) if src.section else None
    lo, hi = int(getattr(section, "min_distance", 0) or 0), int(getattr(section, "max_distance", 0) or 0)
    copies_anywhere = any(w.copies_anywhere(data_cfg) for w in wrappers())
    return (lo, hi) if lo > 0 and hi > 0 and not copies_anywhere else None


def probe_in_region(cfg: Any) -> tuple[int, int, int]:
    """(n, queries in the repeat region, region start) of one run (torch-free, beside
    :func:`repeat_start_of`: the grid and ``analyses/probe_audit.py`` read it without the probes): the repeat probe's ``n`` PS
    queries sit at positions ``[n, 2n - 1]``; the training data holds copies only in
    ``[start, C - 1]`` (the source's declared ``repeat_start``, :func:`ihtrain.data.repeat_start_of`)."""
    C = cfg.train.context
    n = probe_len_of(cfg.metrics.probe_len, C)
    start = repeat_start_of(cfg.data, C)
    return n, max(0, min(2 * n - 1, C - 1) - max(n, start) + 1), start


def __getattr__(name: str) -> Any:  # lazy re-exports: importing ihtrain.data stays cheap
    if name in ("NaturalSource", "TokenStream", "load_stream", "build_corpus"):
        from ihtrain.data import natural

        return getattr(natural, name)
    if name in ("Tokenizer", "train_bpe", "load_pretrained"):
        from ihtrain.data import tokenizer

        return getattr(tokenizer, name)
    raise AttributeError(f"module 'ihtrain.data' has no attribute {name!r}")


__all__ = ["DataError", "SPECIAL_TOKENS", "TokenSource", "build_source", "copy_band_of", "repeat_start_of", "cached_stream_config", "resolve_cache_dir",
           "NaturalSource", "TokenStream", "load_stream", "build_corpus", "Tokenizer", "train_bpe",
           "load_pretrained"]
