"""What the statistics read from a data source's config section: its grid factors, by source name.

A run's ``config.json`` names its source (``data.source``) and holds the source's knobs in a
section under ``data``. :func:`source_factors` turns them into factor columns (``ihstats.base.io``'s
``config_factors``, the grid summary). A source with no rule here gives every scalar field of the
section named like it (``data.<source>``) as a factor, so a new source needs no entry here; the
trainer's data-source registry (``ihtrain.data.registry``) adds a rule when a source registers
one. The shipped sources' rules are part of the data contract
(:data:`ihstats.base.contract.SHIPPED_SOURCE_FACTORS`; ``contract.FACTORS``, the summary.csv of shipped
grids): they leave out the knobs that are not grid factors (vocabulary, pool and layout fields).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ihstats.base.contract import SHIPPED_SOURCE_FACTORS, SHIPPED_WRAPPER_FACTORS


@dataclass(frozen=True)
class SourceFactors:
    """The factors a source contributes, read from ``config["data"][section]``.

    ``imposed``: fields reported only when >= 0 (a negative value means "not imposed": missing);
    ``knobs``: fields reported as they are. ``knobs = None``: every scalar field of the section.
    """

    section: str
    knobs: tuple[str, ...] | None = None
    imposed: tuple[str, ...] = ()

    def read(self, data: dict[str, Any]) -> dict[str, Any]:
        """``{factor: value}`` from the ``data`` part of a config dict (a missing field: None)."""
        sect = data.get(self.section)
        sect = sect if isinstance(sect, dict) else {}
        out = {k: (v if v is not None and v >= 0 else None) for k in self.imposed for v in [sect.get(k)]}
        scalars = [k for k, v in sect.items() if not isinstance(v, (dict, list))]
        knobs = self.knobs if self.knobs is not None else scalars
        out.update({k: sect.get(k) for k in knobs})
        return out


_RULES: dict[str, SourceFactors] = {name: SourceFactors(name, **rule) for name, rule in SHIPPED_SOURCE_FACTORS.items()}


def register_factors(name: str, rule: SourceFactors) -> None:
    """Read source ``name``'s factors with ``rule`` (called by ``ihtrain.data.registry.register``)."""
    _RULES[name] = rule


def source_factors(data: dict[str, Any]) -> dict[str, Any]:
    """The factors of the source a run's ``config["data"]`` names: its rule's, else every scalar
    field of ``data[<source>]`` (none when there is no such section, as for the natural sources)."""
    name = data.get("source") if isinstance(data, dict) else None
    if not isinstance(name, str):
        return {}
    return _RULES.get(name, SourceFactors(name)).read(data)


def wrapper_factors(data: dict[str, Any]) -> dict[str, Any]:
    """The factors of the wrappers a run's ``config["data"]`` may wear
    (:data:`ihstats.base.contract.SHIPPED_WRAPPER_FACTORS`): each wrapper's mode under its section's
    name (its ``off`` value when the section is missing) and, when it is on, its knobs."""
    data = data if isinstance(data, dict) else {}
    out: dict[str, Any] = {}
    for name, rule in SHIPPED_WRAPPER_FACTORS.items():
        sect = data.get(name)
        sect = sect if isinstance(sect, dict) else {}
        mode = sect.get(rule["mode"], rule["off"])
        out[name] = mode
        if mode != rule["off"]:
            out.update({k: sect.get(k) for k in rule["knobs"]})
    return out


__all__ = ["SourceFactors", "register_factors", "source_factors", "wrapper_factors"]
