"""Grid specs: their grammar, and TOML -> a checked :class:`~ihtrain.grid.expand.GridSpec` (which
expands to the list of resolved runs: :mod:`ihtrain.grid.expand`).

A spec names a base run config and axes to sweep; the grid is the product of the axes, minus the
``exclude`` entries, plus the ``include`` points::

    name = "bxc-text"
    description = "one line"
    # top-level keys (seeds, include/exclude) must come before the first [table]: TOML puts any
    # key written after a table header inside that table.
    seeds = 3                    # replicates: every cell at seeds 0, 1, 2 (or a list: [0, 7])
    include = [{ "train.batch_size" = 4, "train.context" = 64 }]   # extra points
    exclude = [{ "train.batch_size" = 32, "train.context" = 256 }] # matches on the given keys

    [base]
    preset = "cpu-tiny"          # a named run preset (optional)
    [base.train]                 # nested config fields on top of the preset
    max_steps = 3000

    [axes]                       # dotted field -> list of values
    "train.batch_size" = [8, 16, 32]
    "train.context" = [64, 128, 256]
    # a group axis sets several fields per level; its key names the factor in the manifest.
    # Values are tables of dotted fields, or of leaf names when the key is a config section:
    size = [{ label = "small", "model.d_model" = 64 }, { label = "large", "model.d_model" = 128 }]
    # model = [{ n_layer = 2, d_model = 64 }, { n_layer = 2, d_model = 128 }]   (section key)

A spec can start from another: ``extends = "bxc-text"`` (a grid preset, or a spec file path,
relative to this spec) takes that spec's base, axes, include and exclude; this spec's ``[base]``
fields go on top of the parent's, each of its axes replaces the parent's axis of the same key (or
is added after them), and its include/exclude, when given, replace the parent's. ``name`` is this
spec's own. The grid directory's ``grid.json`` records the resolved spec, so a later change to the
parent does not hide what ran::

    name = "bxc-cpu-seeds"
    extends = "bxc-text"
    seeds = 3                      # the parent grid, three seeds per cell

``seeds`` replicates every cell, include points too (unless an include sets ``seed``): a seed axis
like ``seed = [0, 1, 2]`` under ``[axes]`` (which leaves include points at the base seed), placed
last so a cell's replicates are adjacent in the run list. A spec gives one of the two forms (both:
an error); a child spec's form replaces its parent's, and ``python -m ihtrain.grid --seeds N``
replaces the spec's (seeds 0..N-1). Every run carries ``seed`` and ``cell_id``
(:meth:`RunConfig.cell_id`: the ``run_id`` hash without the seed, shared by the replicates of a
cell) in the manifest, summary and ``--status``/``--dry-run`` tables.

Exclude entries are applied to the product only; include points are added after excluding
(as in CI matrix specs). Include/exclude keys are dotted fields or group-axis names (matched
against the level's label). Every run's config ``name`` is the grid name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ihtrain.config import ConfigError, RunConfig, field_names, flatten, is_plain_name, load_toml, set_field
from ihtrain.grid.expand import Axis, GridSpec, check_seed_conflict, parse_seeds
from ihtrain.presets import GRID_SPEC_DIR, RUN_PRESETS, preset_names

SPEC_KEYS = ("name", "description", "extends", "seeds", "include", "exclude", "base", "axes")
LABEL_KEY = "label"


def _check_field(dotted: str, where: str) -> None:
    if dotted not in _FIELDS:
        close = [f for f in _FIELDS if f.split(".")[-1] == dotted.split(".")[-1]]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConfigError(f"{where}: unknown config field {dotted!r}{hint}")


_FIELDS = set(field_names())
_SECTIONS = {f.rsplit(".", 1)[0] for f in _FIELDS if "." in f}


def _parse_axis(key: str, values: Any) -> Axis:
    where = f"axes.{key}"
    if key in ("include", "exclude"):
        raise ConfigError(f"{where}: include/exclude are top-level keys and must appear before the first "
                          f"[table] of the spec (TOML puts keys after [axes] inside axes)")
    if not isinstance(values, list):
        raise ConfigError(f"{where}: expected a list of values, got {values!r}")
    if not values:
        raise ConfigError(f"{where}: empty axis; give at least one value")
    if all(isinstance(v, dict) for v in values):  # a group axis
        levels, labels = [], []
        for i, v in enumerate(values):
            v = dict(v)
            label = v.pop(LABEL_KEY, None)
            flat = flatten(v)
            if key in _SECTIONS:
                flat = {f"{key}.{k}": x for k, x in flat.items()}
            if not flat:
                raise ConfigError(f"{where}[{i}]: a level must set at least one field")
            for k in flat:
                _check_field(k, f"{where}[{i}]")
            levels.append(flat)
            labels.append(label if label is not None else ",".join(f"{k.split('.')[-1]}={x}" for k, x in flat.items()))
        if len(set(map(str, labels))) != len(labels):
            raise ConfigError(f"{where}: duplicate level labels {labels}")
        _check_types(levels, where)
        return Axis(key, levels, labels, group=True)
    if any(isinstance(v, dict) for v in values):
        raise ConfigError(f"{where}: mix of tables and plain values; a group axis needs a table per level")
    _check_field(key, where)
    levels = [{key: v} for v in values]
    _check_types(levels, where)
    if len({repr(v) for v in values}) != len(values):
        raise ConfigError(f"{where}: duplicate values in {values}")
    return Axis(key, levels, list(values))


def _check_types(levels: list[dict[str, Any]], where: str) -> None:
    """Type-check an axis's values when the spec is read, so an error names the level
    (``axes.train.batch_size[2]``). The values are kept as written (``grid.json`` records them);
    :meth:`GridSpec.expand` resolves and validates each run's config once, and that
    :class:`RunConfig` is what the worker trains (``executors.Task.config``)."""
    cfg = RunConfig()
    for i, lv in enumerate(levels):
        for k, v in lv.items():
            try:
                set_field(cfg, k, v)
            except ConfigError as e:
                raise ConfigError(f"{where}[{i}]: {e}") from None


def _check_top_level(data: dict[str, Any], source: str) -> None:
    unknown = [k for k in data if k not in SPEC_KEYS]
    if unknown:
        raise ConfigError(f"{source}: unknown top-level key {unknown[0]!r}; allowed: {', '.join(SPEC_KEYS)} "
                          f"(config fields go under [base])")
    for table in ("axes", "base"):  # a top-level key written after a [table] header lands in that table
        sub = data.get(table) if isinstance(data.get(table), dict) else {}
        late = [k for k in sub if k in SPEC_KEYS and k not in ("include", "exclude")  # those: _parse_axis
                and (table, k) != ("base", "name")]
        if late:
            raise ConfigError(f"{source}: {table}.{late[0]}: {late[0]!r} is a top-level key but follows the [{table}] "
                              f"header, so TOML puts it in [{table}]; move it above the first [section]")


def resolve_extends(data: dict[str, Any], source: str = "<spec>", seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """A spec dict with ``extends`` -> the merged spec dict (rules in the module docstring)."""
    ref = data.get("extends")
    if ref is None:
        return data
    if not isinstance(ref, str) or not ref:
        raise ConfigError(f"{source}: extends: expected a grid preset name or a spec file path, got {ref!r}")
    presets = grid_preset_paths()
    path = presets.get(ref) or Path(ref)
    if ref not in presets and not path.is_absolute() and Path(source).is_file():
        path = Path(source).parent / path  # relative to the spec that extends
    if not path.is_file():
        raise ConfigError(f"{source}: extends: {ref!r} is neither a grid preset ({', '.join(presets)}) "
                          f"nor a spec file")
    if str(path.resolve()) in seen:
        raise ConfigError(f"{source}: extends: {ref!r} extends this spec again (a cycle)")
    parent = load_toml(path)
    _check_top_level(parent, str(path))
    parent = resolve_extends(parent, str(path), (*seen, str(path.resolve())))
    merged = {k: v for k, v in parent.items() if k in ("include", "exclude")}
    for key in ("base", "axes"):
        for part in (parent, data):
            if not isinstance(part.get(key, {}), dict):
                raise ConfigError(f"{source if part is data else path}: {key}: expected a table")
    merged["base"] = {**flatten(parent.get("base", {})), **flatten(data.get("base", {}))}
    merged["axes"] = {**parent.get("axes", {}), **data.get("axes", {})}
    # ``seeds`` and ``[axes] seed`` are two forms of the seed axis: the child's form replaces the
    # parent's (giving both in one spec is an error, raised by parse_spec)
    child_axes = data.get("axes", {})
    if "seeds" in data and "seed" not in child_axes:
        merged["axes"].pop("seed", None)
    elif "seeds" in parent and "seeds" not in data and "seed" not in child_axes:
        merged["seeds"] = parent["seeds"]
    merged.update({k: v for k, v in data.items() if k not in ("base", "axes")})
    merged.setdefault("description", f"{ref}, extended: {parent.get('description', '')}")
    return merged


def parse_spec(data: dict[str, Any], source: str = "<spec>") -> GridSpec:
    """Validate a spec dict (from TOML); raise ConfigError naming the bad field."""
    _check_top_level(data, source)
    data = resolve_extends(data, source)
    name = data.get("name")
    if not isinstance(name, str) or not is_plain_name(name):
        raise ConfigError(f"{source}: name: a non-empty string that is a plain name is required (it names the "
                          f"grid's folder: no '/', '.' or '..'), got {name!r}")
    desc = data.get("description", "")
    if not isinstance(desc, str):
        raise ConfigError(f"{source}: description: expected a string, got {desc!r}")
    if not isinstance(data.get("base", {}), dict):  # checked before dict(): dict("x") would raise its own error
        raise ConfigError(f"{source}: base: expected a table, got {data.get('base')!r}")
    base = dict(data.get("base", {}))
    preset = base.pop("preset", None)
    if preset is not None:
        if preset not in RUN_PRESETS:
            raise ConfigError(f"base.preset: unknown preset {preset!r}; known presets: {', '.join(preset_names())}")
    base_over = flatten(base)
    for k in base_over:
        _check_field(k, "base")
    axes_raw = data.get("axes", {})
    if not isinstance(axes_raw, dict):
        raise ConfigError(f"{source}: axes: expected a table of field -> list of values")
    axes = [_parse_axis(k, v) for k, v in axes_raw.items()]
    seeds = parse_seeds(data["seeds"]) if "seeds" in data else []
    check_seed_conflict(axes, seeds, "seeds")
    owner: dict[str, str] = {}
    for ax in axes:
        for f in ax.fields:
            if f in owner:
                raise ConfigError(f"axes.{ax.name}: field {f} is also swept by axes.{owner[f]}")
            owner[f] = ax.name
    entries = {}
    for kind in ("include", "exclude"):
        lst = data.get(kind, [])
        if not isinstance(lst, list) or not all(isinstance(e, dict) for e in lst):
            raise ConfigError(f"{kind}: expected a list of tables like [{{ \"train.batch_size\" = 4 }}]")
        groups = {ax.name for ax in axes if ax.group}
        out = []
        for i, e in enumerate(lst):
            flat = {k: v for k, v in e.items() if k in groups}
            flat.update(flatten({k: v for k, v in e.items() if k not in groups}))
            if not flat:
                raise ConfigError(f"{kind}[{i}]: empty entry")
            for k in flat:
                if k not in groups:
                    _check_field(k, f"{kind}[{i}]")
            out.append(flat)
        entries[kind] = out
    return GridSpec(name, desc, preset, base_over, axes, entries["include"], entries["exclude"], source, data, seeds)


def load_spec(path: str | Path) -> GridSpec:
    return parse_spec(load_toml(path), source=str(path))


# ------------------------------------------------------------------------------ presets
def grid_preset_paths() -> dict[str, Path]:
    return {p.stem: p for p in sorted(Path(GRID_SPEC_DIR).glob("*.toml"))}


def load_grid_preset(name: str) -> GridSpec:
    paths = grid_preset_paths()
    if name not in paths:
        raise ConfigError(f"--preset: unknown grid preset {name!r}; known: {', '.join(paths) or '(none)'}")
    return load_spec(paths[name])
