"""The sidecar of a scored checkpoint series (docs/DESIGN.md, "Scored series directory"), torch-free.

A series directory is written by ``python -m ihtrain.score``: a public model's training checkpoints
(or any directories of revisions) scored with the trainer's metrics. It holds ``metrics.parquet``
and ``status.json`` as a run directory does, and ``series.json`` in place of the trainer's
``config.json``: the model, its family, each revision's step and tokens, the B and C the tokens
count with, and the probe settings. :mod:`ihstats.base.io` reads it directly, so ``ihstats.emergence``
and the law fit take a series as a run (``B``, ``C``, ``N`` from here), never through a fake config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ihstats.base.contract import SchemaError
from ihstats.base.fileio import UnreadableFile, atomic_write_json, read_json
from ihstats.base.ids import config_hash

SERIES_FILE = "series.json"
#: every key of series.json (docs/DESIGN.md); IDENTITY_KEYS are what a resumed scoring must share
SERIES_KEYS = ("kind", "run_id", "model", "family", "B", "C", "revisions", "probe", "metrics", "dtype",
               "n_params", "n_params_non_embedding", "n_layer", "n_head", "d_model", "versions", "created")
IDENTITY_KEYS = ("model", "family", "B", "C", "probe", "metrics", "dtype")
REVISION_KEYS = ("revision", "step", "tokens", "source")
SERIES_KIND = "series"
REMEDY = "rescore into a new directory with python -m ihtrain.score"


def series_id(record: dict[str, Any]) -> str:
    """The series' ``run_id``: the run_id rule (:func:`ihstats.base.ids.config_hash`) on its identity
    (:data:`IDENTITY_KEYS`): the same model, B, C, probes, metrics and dtype give the same id,
    whatever revisions were scored."""
    return config_hash({k: record[k] for k in IDENTITY_KEYS})


def is_series_dir(path: str | Path) -> bool:
    return (Path(path) / SERIES_FILE).is_file()


def read_series(run_dir: str | Path) -> dict[str, Any]:
    """A series directory's ``series.json``, checked: every key of :data:`SERIES_KEYS`, revisions
    with :data:`REVISION_KEYS` and integer steps. Raises :class:`SchemaError` naming the file and key."""
    path = Path(run_dir) / SERIES_FILE
    try:
        rec = read_json(path, "series sidecar", REMEDY)
    except UnreadableFile as e:
        raise SchemaError(str(e)) from None
    missing = [k for k in SERIES_KEYS if k not in rec]
    if missing:
        raise SchemaError(f"{path}: missing key(s) {', '.join(missing)}; {REMEDY}")
    if rec["kind"] != SERIES_KIND:
        raise SchemaError(f"{path}: key 'kind' is {rec['kind']!r}, expected {SERIES_KIND!r}")
    for k in ("B", "C", *SHAPE_KEYS):
        if not _count(rec[k]):
            raise SchemaError(f"{path}: key {k!r} must be an integer >= 1, got {rec[k]!r}")
    _check_revisions(path, rec)
    if rec["n_params_non_embedding"] > rec["n_params"]:
        raise SchemaError(f"{path}: n_params_non_embedding {rec['n_params_non_embedding']} exceeds n_params "
                          f"{rec['n_params']}; {REMEDY}")
    if "shape_id" in rec and rec["shape_id"] != shape_id(rec):  # older series have none
        raise SchemaError(f"{path}: n_layer, n_head, d_model or the parameter counts differ from those scored "
                          f"(shape_id {rec['shape_id']} != {shape_id(rec)}: edited after scoring?); {REMEDY}")
    return rec


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _check_revisions(path: Path, rec: dict[str, Any]) -> None:
    """Each revision with its keys, an integer step >= 0 (once) and tokens = step x B x C."""
    steps = set()
    for i, r in enumerate(rec["revisions"]):
        if not isinstance(r, dict) or any(k not in r for k in REVISION_KEYS):
            raise SchemaError(f"{path}: revisions[{i}] needs the keys {', '.join(REVISION_KEYS)}")
        if not isinstance(r["step"], int) or isinstance(r["step"], bool) or r["step"] < 0 or r["step"] in steps:
            raise SchemaError(f"{path}: revisions[{i}] ({r['revision']!r}) step must be an integer >= 0, "
                              f"once; got {r['step']!r}")
        if r["tokens"] != r["step"] * rec["B"] * rec["C"]:
            raise SchemaError(f"{path}: revisions[{i}] ({r['revision']!r}) tokens {r['tokens']!r} is not step x B x C "
                              f"= {r['step'] * rec['B'] * rec['C']}; {REMEDY}")
        steps.add(r["step"])


#: the model's shape and size: outside the series' identity (a rescore of the same model has them),
#: so the scorer records their hash (``shape_id``) and a reader checks it
SHAPE_KEYS = ("n_layer", "n_head", "d_model", "n_params", "n_params_non_embedding")


def shape_id(record: dict[str, Any]) -> str:
    """The hash of the series' :data:`SHAPE_KEYS` and run_id (an edited N or width no longer matches)."""
    return config_hash({k: record[k] for k in ("run_id", *SHAPE_KEYS)})


def write_series(run_dir: str | Path, record: dict[str, Any]) -> Path:
    """Write ``series.json`` atomically; every key of :data:`SERIES_KEYS` must be there."""
    missing = [k for k in SERIES_KEYS if k not in record]
    if missing:
        raise ValueError(f"series record: missing key(s) {', '.join(missing)}")
    return atomic_write_json(Path(run_dir) / SERIES_FILE, record)


def series_factors(record: dict[str, Any]) -> dict[str, Any]:
    """The factors of a series, under the names :func:`ihstats.base.io.config_factors` gives a run:
    ``cell_id`` (the run_id: a series is its own cell), ``seed`` (None), ``B``, ``C``, ``n_layer``,
    ``n_head``, ``d_model``, ``lr`` (None), ``N`` (non-embedding parameters), ``n_params``,
    ``source`` (None), and the series' own ``model`` and ``family``."""
    return {"cell_id": record["run_id"], "seed": None, "B": record["B"], "C": record["C"],
            "n_layer": record["n_layer"], "n_head": record["n_head"], "d_model": record["d_model"], "lr": None,
            "N": record["n_params_non_embedding"], "n_params": record["n_params"], "source": None,
            "model": record["model"], "family": record["family"]}


__all__ = ["IDENTITY_KEYS", "REVISION_KEYS", "SERIES_FILE", "SHAPE_KEYS", "shape_id", "SERIES_KEYS", "SERIES_KIND", "is_series_dir",
           "read_series", "series_factors", "series_id", "write_series"]
