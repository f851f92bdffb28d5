"""The data-source registry: what the rest of the package asks of each data source.

A :class:`~ihtrain.data.source.DataSource` names the source (the ``data.source`` value), its config
section (the ``DataConfig`` attribute and its dataclass), how to build it, the section fields that
set its vocabulary (the pack key), the natural stream it reads (cached on disk), its range checks
and its grid factors (:class:`ihstats.base.sources.SourceFactors`). ``config`` (validation, the
sections), ``data.build_source``, :func:`cached_stream_config` and ``packed.pack_key`` consult the
registry instead of naming sources, so a new source is one module (plus its test).

The shipped sources (:data:`BUILTIN_MODULES`) each declare theirs in a module constant,
``SOURCES = (DataSource(...), ...)``, next to their config section's dataclass; this module
imports them by name on the first lookup (importing it stays cheap) and registers what they
declare. They import neither this module nor ``ihtrain.config``, so there is no cycle, static or at
run time (``tests/test_house_rooms.py`` follows these loads). Their sections are ``recorded``: in
every run's ``config.json`` whichever source it used, as every shipped run's id hashes them. A
source of your own calls :func:`register` when its module is imported::

    register(DataSource("toy", build_toy, section="toy", config=ToyConfig))

A **wrapper** (``wraps=True``; Bi-Induct) is declared the same way but is no ``data.source``
value: ``build(base, data_cfg, seed, context)`` wraps whichever source was built (it returns
``base`` itself when its section turns it off), and ``copies_anywhere(data_cfg)`` says when its
copies land at any position of a sequence.
"""

from __future__ import annotations

import importlib
from typing import Any

from ihstats.base.sources import register_factors
from ihtrain.data.source import DataSource

#: the modules of the shipped sources, imported on the first lookup (each declares ``SOURCES``)
BUILTIN_MODULES = ("ihtrain.data.natural", "ihtrain.data.seminatural", "ihtrain.data.markov",
                   "ihtrain.data.biinduct")


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
            for source in importlib.import_module(module).SOURCES:
                register(source)


def sources() -> list[DataSource]:
    """Every registered source: the shipped ones in :data:`BUILTIN_MODULES` order (whichever was
    imported first), then the others in registration order."""
    _load_builtins()
    rank = {m: i for i, m in enumerate(BUILTIN_MODULES)}
    return sorted(_SOURCES.values(), key=lambda s: rank.get(s.build.__module__, len(rank)))


def find(name: str) -> DataSource | None:
    """The source ``data.source = name`` selects (by name, or by a ``prefix:``), None if none (a
    wrapper is never selected)."""
    _load_builtins()
    src = _SOURCES.get(name) or next((s for s in _SOURCES.values() if s.name.endswith(":") and name.startswith(s.name)), None)
    return None if src is None or src.wraps else src


def wrappers() -> list[DataSource]:
    """The registered wrappers, in :func:`sources` order (each wraps the source built before it)."""
    return [s for s in sources() if s.wraps]


def registered_section(name: str) -> DataSource | None:
    """The registered source (or wrapper) whose config ``section`` is ``name``, None if none."""
    _load_builtins()
    return next((s for s in _SOURCES.values() if s.section == name and s.config is not None), None)


def default_source() -> str:
    """The ``data.source`` of a config that names none: the source declared ``default``."""
    return next(s.name for s in sources() if s.default)


def recorded_sections() -> dict[str, Any]:
    """``{section: its dataclass at the defaults}`` for every recorded section, in :func:`sources`
    order: the sections a fresh ``DataConfig`` holds."""
    return {s.section: s.config() for s in sources() if s.recorded and s.section and s.config is not None}


def cached_stream_config(data_cfg: Any) -> Any | None:
    """The DataConfig of the natural token stream (corpus, tokenizer, token memmap, all cached on
    disk) that ``build_source(data_cfg)`` reads: the source's declared ``stream`` (a natural
    source itself, a semi-natural source's base corpus); None for a source built only in memory
    (the generators). A wrapper wraps its base source, so the base decides."""
    src = find(data_cfg.source)
    return src.stream(data_cfg) if src is not None else None


def usage() -> str:
    """``"builtin, text:PATH_OR_GLOB, ..."``: the names ``data.source`` accepts, for messages."""
    return ", ".join(s.usage or s.name for s in sources() if not s.wraps)


__all__ = ["BUILTIN_MODULES", "DataSource", "cached_stream_config", "default_source", "find", "recorded_sections", "register", "registered_section", "sources",
           "usage", "wrappers"]
