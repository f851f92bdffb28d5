"""The id rules of a run (docs/DESIGN.md, "Data contracts"): ``run_id`` and ``cell_id`` as hashes of
a resolved config dict.

The trainer names run directories with them (``RunConfig.run_id`` / ``RunConfig.cell_id``) and the
statistics recompute them from a ``config.json`` (``ihstats.base.io.config_factors``), so both apply the
one rule here. The rule is fixed: a change renames every shipped run.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from ihstats.base.contract import LATE_FIELDS

# Fields that change how a run executes but not what it computes (left out of run_id). The
# divergence rule only decides whether a broken run fails, never what a healthy run computes.
EXECUTION_ONLY_FIELDS = ("device", "threads", "compile", "checkpoint_every", "checkpoint_seconds", "log_every",
                         "divergence_factor", "divergence_window")


def config_hash(d: dict[str, Any]) -> str:
    """The run_id rule on a ``RunConfig.to_dict()`` dict (also the ``config`` of a config.json):
    sha256 of its sorted JSON without ``name``, the :data:`EXECUTION_ONLY_FIELDS` and the
    :data:`LATE_FIELDS` at their defaults, cut to 12 hex digits."""
    d = copy.deepcopy(d)
    d.pop("name", None)
    for f in EXECUTION_ONLY_FIELDS:
        d.get("train", {}).pop(f, None)
    for (*path, leaf), default in LATE_FIELDS.items():
        sect = d
        for k in path:
            sect = sect.get(k, {}) if isinstance(sect, dict) else {}
        if isinstance(sect, dict) and sect.get(leaf, default) == default:
            sect.pop(leaf, None)
    blob = json.dumps(d, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


#: The seeds a cell's replicates differ by: the replicate seed and its kinds (weights, data).
SEED_FIELDS = ("seed", "weight_seed", "data_seed")


def cell_hash(d: dict[str, Any]) -> str:
    """``cell_id``: :func:`config_hash` of the config with the :data:`SEED_FIELDS` removed (shared
    by a grid cell's seed replicates, crossed seed kinds included)."""
    return config_hash({k: v for k, v in d.items() if k not in SEED_FIELDS})


def seed_kinds(d: dict[str, Any]) -> dict[str, Any]:
    """``{"weight_seed": ..., "data_seed": ...}`` of a config dict: each kind's own value, or the
    run's ``seed`` where it is -1 or absent (every shipped run)."""
    seed = d.get("seed")
    return {k: seed if d.get(k, -1) is None or d.get(k, -1) < 0 else d[k] for k in ("weight_seed", "data_seed")}


__all__ = ["EXECUTION_ONLY_FIELDS", "LATE_FIELDS", "SEED_FIELDS", "cell_hash", "config_hash", "seed_kinds"]
