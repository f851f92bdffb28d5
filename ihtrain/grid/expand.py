"""A grid spec as data, and the runs it expands to: :class:`GridSpec` -> [:class:`PlannedRun`].

The spec's grammar, and how its TOML is read and checked, are :mod:`ihtrain.grid.spec`. Here:
the axes (plain and group axes, the ``seeds`` replicates, placed last), the product of the axes
minus ``exclude`` plus ``include``, each point resolved and validated once into the
:class:`RunConfig` a worker trains, its ``run_id`` and ``cell_id``, and the factors that name it in
the manifest; and, over the planned runs, the warning when they would measure PS on repeat probes of
different lengths.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ihstats.base.contract import probe_len_of
from ihtrain.config import (
    ConfigError, RunConfig, apply_overrides, get_field, get_preset, set_field, validate,
)
from ihtrain.grid.run_cost import budget_of
from ihtrain.data import probe_in_region


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
        check_seed_conflict(self.axes, self.seeds, where)

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


# ------------------------------------------------------------------------------ seeds
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


def check_seed_conflict(axes: list[Axis], seeds: list[int], where: str) -> None:
    """``seeds`` and an axis that sets ``seed`` would both set the run seed: refuse, naming both."""
    for ax in axes:
        if seeds and "seed" in ax.fields:
            raise ConfigError(f"{where} and axes.{ax.name}: both set the run seed; keep one of them "
                              f"({where} replicates every cell, [axes] seed = [...] is an ordinary axis)")


# ------------------------------------------------------------------------------ checks over the runs
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


def probe_region_check(runs: list[PlannedRun]) -> tuple[list[str], bool]:
    """The design check before any run: one line per cell whose repeat-probe PS queries fall mostly
    (more than half) outside the positions where its training data holds repeats, so the PS-probe
    onset would be measured off the training distribution; and whether that blocks the grid (an
    until-emergence budget that watches that PS, ``train.emergence_metric = "ps"``)."""
    lines, blocking, seen = [], False, set()
    for r in runs:
        cfg, label = r.config, factor_label(r)
        if label in seen:
            continue
        seen.add(label)
        n, inside, start = probe_in_region(cfg)
        if 2 * inside >= n:
            continue
        watched = cfg.train.budget == "until-emergence" and cfg.train.emergence_metric == "ps"
        blocking |= watched
        lines.append(f"{label} (C {cfg.train.context}): repeat-probe queries at positions {n}-{2 * n - 1}, training "
                     f"repeats at {start}-{cfg.train.context - 1}: {inside} of {n} queries where the data "
                     f"teaches" + ("; its until-emergence budget watches this PS" if watched else ""))
    return lines, blocking


def design_check_message(lines: list[str], blocking: bool) -> str:
    head = ("the repeat probe misses the training repeats in " + f"{len(lines)} cell(s), so its PS onsets are "
            "measured off the training distribution:\n  " + "\n  ".join(lines))
    fix = ("\nset train.emergence_metric = \"ps_indist\" (the budget, the formed verdict and the default onset "
           "then read PS at the data's own copies), or a metrics.probe_len whose queries [n, 2n - 1] fall in "
           "the repeat region")
    return head + (fix if blocking else "\nthe onset read by default is the in-distribution one (ps_indist)")


def factor_label(run: PlannedRun) -> str:
    """The run's factors without the seed, ``k=v`` joined by commas (a cell's name in messages)."""
    return ",".join(f"{k.split('.')[-1]}={v}" for k, v in run.factors.items() if k != "seed")
