"""Grid specs: TOML -> validated :class:`GridSpec` -> the list of resolved runs.

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

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ihtrain.config import (
    ConfigError, RunConfig, apply_overrides, field_names, flatten, get_field, get_preset, is_plain_name, load_toml,
    probe_len_of, set_field, validate,
)
from ihtrain.presets import GRID_SPEC_DIR, RUN_PRESETS, preset_names
from ihtrain.run_cost import budget_of

SPEC_KEYS = ("name", "description", "extends", "seeds", "include", "exclude", "base", "axes")
LABEL_KEY = "label"


@dataclass
class Axis:
    """One factor of the grid. ``levels[i]`` maps dotted fields to values; ``labels[i]`` names it."""

    name: str
    levels: list[dict[str, Any]]
    labels: list[Any]
    group: bool = False  # True: a group axis (several fields per level)

    @property
    def fields(self) -> list[str]:
        out: list[str] = []
        for lv in self.levels:
            out += [k for k in lv if k not in out]
        return out


@dataclass
class PlannedRun:
    """One resolved point of the grid: a run planned, with its config and where in the grid it lies."""

    run_id: str
    config: RunConfig
    factors: dict[str, Any]  # axis name -> label (group axes) or value; plus every axis field's value
    overrides: dict[str, Any]  # dotted field -> value applied on top of the base
    origin: str  # "product" or "include[i]"

    @property
    def cell_id(self) -> str:
        return self.config.cell_id()

    @property
    def seed(self) -> int:
        return self.config.seed

    def budget(self) -> dict[str, Any]:
        return budget_of(self.config)


@dataclass
class GridSpec:
    name: str
    description: str
    base_preset: str | None
    base_overrides: dict[str, Any]
    axes: list[Axis]
    include: list[dict[str, Any]] = field(default_factory=list)
    exclude: list[dict[str, Any]] = field(default_factory=list)
    source: str = ""
    raw: dict[str, Any] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=list)  # ``seeds``: replicate every cell at these seeds

    @property
    def sweep(self) -> list[Axis]:
        """The axes the grid crosses: ``[axes]``, then the ``seeds`` replicates (last, so the
        replicates of a cell are adjacent in the run list)."""
        if not self.seeds:
            return list(self.axes)
        return [*self.axes, Axis("seed", [{"seed": s} for s in self.seeds], list(self.seeds))]

    def set_seeds(self, seeds: Any, where: str = "seeds") -> None:
        """Replace the replicate seeds (``--seeds`` on the command line overrides the spec's)."""
        self.seeds = parse_seeds(seeds, where)
        _check_seed_conflict(self.axes, self.seeds, where)

    @property
    def columns(self) -> list[str]:
        """Manifest factor columns: group-axis names, then every axis field, in spec order."""
        cols: list[str] = []
        for ax in self.sweep:
            for c in ([ax.name] if ax.group else []) + ax.fields:
                if c not in cols:
                    cols.append(c)
        return cols

    def override_base(self, overrides: dict[str, Any], where: str = "--set") -> None:
        """Base fields set for every run from outside the spec (``--set`` on the command line),
        checked here so that errors name the override: an axis field cannot be set this way, and
        the base must stay valid. Kept as given (``grid.json`` records them as typed)."""
        swept = {f for ax in self.sweep for f in ax.fields}
        for k in overrides:
            if k in swept:
                raise ConfigError(f"{where} {k}: this field is an axis of the grid; edit the spec's axes instead")
        validate(apply_overrides(self.base_config(), overrides))
        self.base_overrides = {**self.base_overrides, **overrides}

    def base_config(self) -> RunConfig:
        cfg = get_preset(self.base_preset) if self.base_preset else RunConfig()
        cfg = _apply(cfg, self.base_overrides, "base")
        return set_field(cfg, "name", self.name)

    def expand(self) -> list[PlannedRun]:
        """Resolve every run (product - exclude + include); errors name the field or entry."""
        base = self.base_config()
        sweep = self.sweep
        group_axes = {ax.name: ax for ax in sweep if ax.group}
        points: list[tuple[dict[str, Any], dict[str, Any], str]] = []  # (overrides, labels, origin)
        for combo in itertools.product(*[range(len(ax.levels)) for ax in sweep]):
            over: dict[str, Any] = {}
            labels: dict[str, Any] = {}
            for ax, i in zip(sweep, combo):
                over.update(ax.levels[i])
                if ax.group:
                    labels[ax.name] = ax.labels[i]
            points.append((over, labels, "product"))

        runs: list[PlannedRun] = []
        matched = [0] * len(self.exclude)
        for over, labels, origin in points:
            cfg = _apply(base, over, "axes")
            hit = [_matches(cfg, labels, ex, group_axes, f"exclude[{j}]") for j, ex in enumerate(self.exclude)]
            for j, h in enumerate(hit):
                matched[j] += h
            if not any(hit):
                runs.append(self._run(cfg, over, labels, origin))
        for j, n in enumerate(matched):
            if n == 0:
                raise ConfigError(f"exclude[{j}]: {self.exclude[j]} matches no run of the grid")
        for i, inc in enumerate(self.include):
            # an include point is a cell too: ``seeds`` replicates it unless it sets its own seed
            for seed in self.seeds if self.seeds and "seed" not in inc else [None]:
                runs.append(self._include(base, group_axes, {**inc, **({} if seed is None else {"seed": seed})}, i))

        seen: dict[str, PlannedRun] = {}
        for r in runs:
            if r.run_id in seen:
                raise ConfigError(f"{r.origin}: duplicate run id {r.run_id} (same resolved config as "
                                  f"{seen[r.run_id].origin} {seen[r.run_id].factors}); remove the duplicate")
            seen[r.run_id] = r
        if not runs:  # every later step (manifest, summary, emergence) needs at least one run
            raise ConfigError(f"{self.source}: exclude removes every run of the grid; loosen [[exclude]] or add "
                              f"an [[include]]")
        return runs

    def _include(self, base: RunConfig, group_axes: dict[str, Axis], inc: dict[str, Any], i: int) -> PlannedRun:
        over, labels = {}, {}
        for k, v in inc.items():
            if k in group_axes:
                ax = group_axes[k]
                if v not in ax.labels:
                    raise ConfigError(f"include[{i}].{k}: unknown level {v!r}; levels: {ax.labels}")
                over.update(ax.levels[ax.labels.index(v)])
                labels[k] = v
        over.update({k: v for k, v in inc.items() if k not in group_axes})
        for name, ax in group_axes.items():  # an include that sets a group's fields by hand
            labels.setdefault(name, _label_of(ax, base, over))
        cfg = _apply(base, over, f"include[{i}]")
        return self._run(cfg, over, labels, f"include[{i}]")

    def _run(self, cfg: RunConfig, over: dict[str, Any], labels: dict[str, Any], origin: str) -> PlannedRun:
        factors = dict(labels)
        for col in self.columns:
            if col not in factors:
                factors[col] = get_field(cfg, col)
        return PlannedRun(cfg.run_id(), cfg, {c: factors[c] for c in self.columns}, dict(over), origin)


# ------------------------------------------------------------------------------ helpers
def _apply(cfg: RunConfig, over: dict[str, Any], where: str) -> RunConfig:
    try:
        return validate(apply_overrides(cfg, over))
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None


def _label_of(ax: Axis, base: RunConfig, over: dict[str, Any]) -> Any:
    cfg = apply_overrides(base, over)
    for lv, lab in zip(ax.levels, ax.labels):
        if all(get_field(cfg, k) == get_field(apply_overrides(base, {k: v}), k) for k, v in lv.items()):
            return lab
    return "custom"


def _matches(cfg: RunConfig, labels: dict[str, Any], entry: dict[str, Any], group_axes: dict[str, Axis],
             where: str) -> bool:
    for k, v in entry.items():
        if k in group_axes:
            if labels.get(k) != v:
                return False
            continue
        try:
            want = get_field(set_field(cfg, k, v), k)  # coerce the entry's value like the field
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
        if get_field(cfg, k) != want:
            return False
    return True


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


def parse_seeds(value: Any, where: str = "seeds") -> list[int]:
    """``seeds = N`` -> seeds 0..N-1; ``seeds = [list]`` -> those seeds (distinct, >= 0)."""
    def is_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if is_int(value) and value >= 1:
        return list(range(value))
    if isinstance(value, list) and value and all(is_int(v) and v >= 0 for v in value) \
            and len(set(value)) == len(value):
        return list(value)
    raise ConfigError(f"{where}: expected a number of replicate seeds >= 1 (seeds = 3: seeds 0, 1, 2) or a "
                      f"non-empty list of distinct integers >= 0 (seeds = [0, 7]), got {value!r}")


def _check_seed_conflict(axes: list[Axis], seeds: list[int], where: str) -> None:
    """``seeds`` and an axis that sets ``seed`` would both set the run seed: refuse, naming both."""
    for ax in axes:
        if seeds and "seed" in ax.fields:
            raise ConfigError(f"{where} and axes.{ax.name}: both set the run seed; keep one of them "
                              f"({where} replicates every cell, [axes] seed = [...] is an ordinary axis)")


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
    base = dict(data.get("base", {}))
    if not isinstance(data.get("base", {}), dict):
        raise ConfigError(f"{source}: base: expected a table")
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
    _check_seed_conflict(axes, seeds, "seeds")
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


def probe_geometry_warning(runs: list[PlannedRun]) -> str | None:
    """A warning when the grid's runs would measure PS on repeat probes of different lengths, or None.

    ``metrics.probe_len = 0`` gives ``min(50, C // 2)``, so a grid across C probes each cell with its
    own geometry (at C = 16 the repeat comes 8 tokens back, and a head attending a fixed offset
    scores like an induction head): PS, and the onsets read from it, are then not comparable across
    cells. The message names the lengths and their cells and how to set one length."""
    by_len: dict[int, list[PlannedRun]] = {}
    for r in runs:
        by_len.setdefault(probe_len_of(r.config.metrics.probe_len, r.config.train.context), []).append(r)
    if len(by_len) < 2:
        return None
    shortest = min(r.config.train.context for r in runs)
    parts = []
    for n, rs in sorted(by_len.items()):
        cells = sorted({factor_label(r) for r in rs})
        contexts = ", ".join(map(str, sorted({r.config.train.context for r in rs})))
        more = f"; and {len(cells) - 2} more" if len(cells) > 2 else ""
        parts.append(f"probe_len {n} in {len(cells)} cells at C {contexts} ({'; '.join(cells[:2])}{more})")
    return (f"the grid's runs measure PS on repeat probes of {len(by_len)} lengths ({'; '.join(parts)}), so "
            f"onsets are not measured the same way across cells; set one length for every run: "
            f"metrics.probe_len = N under [base] of the spec ([base.metrics] probe_len = N) or "
            f"--set metrics.probe_len=N, with 2 * N + 1 <= the shortest context ({shortest}): "
            f"N <= {(shortest - 1) // 2}")


def factor_label(run: PlannedRun) -> str:
    """The run's factors without the seed, ``k=v`` joined by commas (a cell's name in messages)."""
    return ",".join(f"{k.split('.')[-1]}={v}" for k, v in run.factors.items() if k != "seed")


# ------------------------------------------------------------------------------ presets
def grid_preset_paths() -> dict[str, Path]:
    return {p.stem: p for p in sorted(Path(GRID_SPEC_DIR).glob("*.toml"))}


def load_grid_preset(name: str) -> GridSpec:
    paths = grid_preset_paths()
    if name not in paths:
        raise ConfigError(f"--preset: unknown grid preset {name!r}; known: {', '.join(paths) or '(none)'}")
    return load_spec(paths[name])
