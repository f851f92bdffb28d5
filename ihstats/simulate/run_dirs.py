"""Fake run and grid directories whose max-PS curve is a simulated one (the layout of docs/DESIGN.md).

Tests read them with :mod:`ihstats.base.io` as they read real runs: head
(1, 0) carries the curve (:class:`ihstats.simulate.curves.SimCurve`), the other heads stay below it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ihstats.certificate import GENERAL_SLOTS
from ihstats.base.ids import config_hash
from ihstats.simulate.curves import SimCurve


def default_config() -> dict[str, Any]:
    """The subset of the trainer's nested resolved config that ``ihstats.base.io`` reads."""
    return {
        "name": "sim", "seed": 0,
        "model": {"n_layer": 2, "n_head": 4, "d_model": 128, "vocab_size": 512, "context": 128},
        "data": {"source": "builtin", "vocab_size": 512,
                 "seminatural": {"frequency": 0.5, "reliability": 0.5, "top_v": 1000},
                 "markov": {"vocab": 1000, "dependency": "markov", "marginal": "zipf", "zipf_alpha": 1.0,
                            "n_groups": 0, "within_similarity": 0.4, "across_similarity": 0.1,
                            "entropy_rate": 0.0, "frequency": -1.0, "reliability": -1.0},
                 "biinduct": {"mode": "none", "span_len": 20, "mix_start": 0.5, "span_source": "random"}},
        "train": {"batch_size": 16, "context": 128, "lr": 3e-3, "max_steps": 10_000},
        "metrics": {"n_evals": 200, "probe_len": 0},
    }


def _set_dotted(d: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for p in parents:
        d = d.setdefault(p, {})
    d[leaf] = value


def write_fake_run(run_dir: str | Path, curve: SimCurve, config: dict[str, Any] | None = None, *,
                   status: str = "done", n_params_non_embedding: int = 400_000, general: bool = False) -> str:
    """Write a run directory (docs/DESIGN.md layout) whose max-PS-over-heads series is ``curve``.

    ``config`` maps dotted config fields to values (``{"train.batch_size": 32}``). Head (1, 0)
    carries the curve, the other heads stay strictly below it, so the max over heads is exact.
    ``val_loss`` falls as the curve rises. ``general``: also the general probe's three distances
    (``ps_gen_near/mid/far``, each head's equal to its PS, so the general curve is ``curve``: a run
    the certificate reads, ihstats.certificate). Returns the run id (hash of the config).
    """
    cfg = default_config()
    for k, v in (config or {}).items():
        _set_dotted(cfg, k, v)
    run_id = config_hash(cfg)  # the trainer's rule, so the readers' run check accepts the run
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    B, C = cfg["train"]["batch_size"], cfg["train"]["context"]
    L, H = cfg["model"]["n_layer"], cfg["model"]["n_head"]
    meta = {"run_id": run_id, "config": cfg, "seed": cfg["seed"], "versions": {"ihlaw": "sim"},
            "git_commit": None, "data_fingerprint": {"hash": "sim"}, "n_params": n_params_non_embedding + 65_536,
            "n_params_non_embedding": n_params_non_embedding, "vocab_size": 512, "created": "2025-01-01T00:00:00"}
    (run_dir / "config.json").write_text(json.dumps(meta, indent=2))
    rows = []
    for step, v in zip(curve.steps.tolist(), curve.values.tolist()):
        tok = step * B * C
        for layer in range(L):
            for head in range(H):
                on = (layer, head) == (min(1, L - 1), 0)
                score = v if on else v - 0.05 - 0.01 * (layer * H + head)
                rows += [(step, tok, name, layer, head, score) for name in ("ps", *(GENERAL_SLOTS if general else ()))]
                rows.append((step, tok, "prev_token", layer, head, 0.3 if layer == 0 else 0.05))
        rows.append((step, tok, "val_loss", -1, -1, 4.0 - 2.0 * v))
    metrics = pd.DataFrame(rows, columns=["step", "tokens", "metric", "layer", "head", "value"])
    metrics = metrics.astype({"step": "int64", "tokens": "int64", "layer": "int64", "head": "int64", "value": "float64"})
    metrics.to_parquet(run_dir / "metrics.parquet", index=False)
    st = curve.steps.astype(np.int64)
    pd.DataFrame({"step": st, "tokens": st * B * C, "loss": 4.0 - 2.0 * curve.values, "lr": 3e-3,
                  "grad_norm": 1.0, "tokens_per_s": 1e4, "wall_s": st / 10.0}).to_parquet(run_dir / "train.parquet", index=False)
    (run_dir / "status.json").write_text(json.dumps({
        "status": status, "reason": "" if status == "done" else "simulated", "step": int(st[-1]),
        "stop_reason": "max_steps", "updated": "2025-01-01T00:00:00"}))
    return run_id


def write_fake_grid(grid_dir: str | Path, runs: list[tuple[SimCurve, dict[str, Any]]], *,
                    name: str = "simgrid", with_grid_json: bool = True,
                    statuses: list[str] | None = None, general: bool = False) -> list[str]:
    """Write a grid directory: one run per ``(curve, dotted overrides)``, plus ``grid.json`` and
    ``manifest.parquet`` (axis columns named by dotted field) unless ``with_grid_json=False``;
    ``general`` as :func:`write_fake_run`."""
    grid_dir = Path(grid_dir)
    grid_dir.mkdir(parents=True, exist_ok=True)
    statuses = statuses or ["done"] * len(runs)
    ids, manifest = [], []
    axes: dict[str, list[Any]] = {}
    for (curve, over), status in zip(runs, statuses):
        tmp = grid_dir / f".tmp{len(ids)}"
        rid = write_fake_run(tmp, curve, over, status=status, general=general)
        tmp.rename(grid_dir / rid)
        ids.append(rid)
        manifest.append({"run_id": rid, **over, "status": status, "stop_reason": "max_steps" if status == "done" else "",
                         "steps": int(curve.steps[-1])})
        for k, v in over.items():
            axes.setdefault(k, [])
            if v not in axes[k]:
                axes[k].append(v)
    if with_grid_json:
        (grid_dir / "grid.json").write_text(json.dumps({"name": name, "axes": axes, "runs": [{"run_id": i} for i in ids]},
                                                       indent=2))
        pd.DataFrame(manifest).to_parquet(grid_dir / "manifest.parquet", index=False)
    return ids


__all__ = ["default_config", "write_fake_grid", "write_fake_run"]
