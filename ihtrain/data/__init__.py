"""Token sources for training: natural text, semi-natural and Markov generators, Bi-Induct.

``build_source(data_cfg, seed)`` turns a :class:`~ihtrain.config.DataConfig` into a
:class:`~ihtrain.data.source.TokenSource`. Generator modules are imported only when asked for, so
the natural sources work on their own.
"""

from __future__ import annotations

from typing import Any

from ihtrain.data.source import SPECIAL_TOKENS, DataError, TokenSource, cached_stream_config, resolve_cache_dir


def build_source(data_cfg: Any, seed: int = 0, progress: bool = True, context: int | None = None) -> TokenSource:
    """``data.source`` -> a ready ``TokenSource`` (wrapped by Bi-Induct when ``data.biinduct.mode != "none"``)."""
    src = data_cfg.source  # each source module is imported only when chosen: importing ihtrain.data stays cheap
    if src == "seminatural":
        from ihtrain.data.seminatural import SeminaturalSource

        cache_dir = str(resolve_cache_dir(data_cfg.cache_dir))
        base: Any = SeminaturalSource(data_cfg.seminatural, seed=seed, cache_dir=cache_dir, data_cfg=data_cfg)
    elif src == "markov":
        from ihtrain.data.markov import MarkovSource

        base = MarkovSource(data_cfg.markov, seed=seed)
    elif src == "builtin" or src.startswith(("text:", "hf:")):
        from ihtrain.data.natural import NaturalSource, load_stream

        base = NaturalSource(load_stream(data_cfg, progress=progress))
    else:
        raise DataError(f"data.source: must be one of builtin, text:PATH_OR_GLOB, hf:NAME[:CONFIG][:SPLIT], "
                        f"seminatural, markov; got {src!r}")
    if data_cfg.biinduct.mode != "none":
        from ihtrain.data.biinduct import BiInductSource

        return BiInductSource(base, data_cfg.biinduct, seed=seed, context=context)
    return base


def __getattr__(name: str) -> Any:  # lazy re-exports: importing ihtrain.data stays cheap
    if name in ("NaturalSource", "TokenStream", "load_stream", "build_corpus"):
        from ihtrain.data import natural

        return getattr(natural, name)
    if name in ("Tokenizer", "train_bpe", "load_pretrained"):
        from ihtrain.data import tokenizer

        return getattr(tokenizer, name)
    raise AttributeError(f"module 'ihtrain.data' has no attribute {name!r}")


__all__ = ["DataError", "SPECIAL_TOKENS", "TokenSource", "build_source", "cached_stream_config", "resolve_cache_dir",
           "NaturalSource", "TokenStream", "load_stream", "build_corpus", "Tokenizer", "train_bpe",
           "load_pretrained"]
