"""The data-source registry: every source module registers what the rest of the package asks of it.

A :class:`DataSource` names the source (the ``data.source`` value), its config section (the
``DataConfig`` attribute and its dataclass), how to build it, the section fields that set its
vocabulary (the pack key), the natural stream it reads (cached on disk), its range checks and its
grid factors (:class:`ihstats.sources.SourceFactors`). ``config`` (validation, a new source's
section), ``data.build_source``, ``data.source.cached_stream_config`` and ``packed.pack_key``
consult the registry instead of naming sources, so a new source is one module (plus its test) that
calls :func:`register` when imported::

    register(DataSource("toy", build_toy, section="toy", config=ToyConfig))

The shipped sources (:data:`BUILTIN_MODULES`) register themselves when first asked for: this module
imports them by name on the first lookup, so importing it stays cheap and free of cycles (they
import ``ihtrain.config``, which imports this module).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from ihstats.sources import SourceFactors, register_factors

#: the modules of the shipped sources, imported on the first lookup (each registers itself)
BUILTIN_MODULES = ("ihtrain.data.natural", "ihtrain.data.seminatural", "ihtrain.data.markov")


def _no_stream(data_cfg: Any) -> None:
    return None


def _repeats_anywhere(data_cfg: Any, length: int) -> int:
    return 0


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
    """

    name: str
    build: Callable[..., Any]
    section: str = ""
    config: type | None = None
    vocab_fields: tuple[str, ...] = ()
    stream: Callable[[Any], Any] = _no_stream
    check: Callable[[Any, Any], None] | None = None
    factors: SourceFactors | None = None
    usage: str = ""
    repeat_start: Callable[[Any, int], int] = _repeats_anywhere


_SOURCES: dict[str, DataSource] = {}
_loaded = False


def register(source: DataSource) -> DataSource:
    """Add ``source`` (a later registration of the same name replaces it); returns it."""
    _SOURCES[source.name] = source
    if source.factors is not None:
        register_factors(source.name, source.factors)
    return source


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILTIN_MODULES:
            importlib.import_module(module)


def sources() -> list[DataSource]:
    """Every registered source: the shipped ones in :data:`BUILTIN_MODULES` order (whichever was
    imported first), then the others in registration order."""
    _load_builtins()
    rank = {m: i for i, m in enumerate(BUILTIN_MODULES)}
    return sorted(_SOURCES.values(), key=lambda s: rank.get(s.build.__module__, len(rank)))


def find(name: str) -> DataSource | None:
    """The source ``data.source = name`` selects (by name, or by a ``prefix:``), None if none."""
    _load_builtins()
    if name in _SOURCES:
        return _SOURCES[name]
    return next((s for s in _SOURCES.values() if s.name.endswith(":") and name.startswith(s.name)), None)


def registered_section(name: str) -> DataSource | None:
    """The already registered source whose config ``section`` is ``name`` (no import of the shipped
    ones: their sections are ``DataConfig`` fields), None if none."""
    return next((s for s in _SOURCES.values() if s.section == name and s.config is not None), None)


def usage() -> str:
    """``"builtin, text:PATH_OR_GLOB, ..."``: the names ``data.source`` accepts, for messages."""
    return ", ".join(s.usage or s.name for s in sources())


__all__ = ["BUILTIN_MODULES", "DataSource", "find", "register", "registered_section", "sources", "usage"]
