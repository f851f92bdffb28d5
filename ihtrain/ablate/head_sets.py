"""Head sets: which heads an ablation knocks out, and the top-k rule that chooses them.

**Head sets** are one tuple of head indices per layer, ``((h, ...), (h, ...))``, as
:func:`ihstats.ablation.spec.choose_head_sets` returns them; random sets come from that function, so
they have the top set's count per layer. Top-k rule (:func:`top_heads`), by a per-head score at the
run's last logged step (default ``ps`` from ``metrics.parquet``), ties to the lower (layer, head):

- ``--top-k K``: the K highest-scoring heads over the whole model;
- ``--top-k K --per-layer``: the K highest in every layer;
- ``--top-frac F``: ``max(1, round_half_up(F * L * H))`` heads over the whole model;
- ``--top-frac F --per-layer``: ``max(1, round_half_up(F * H))`` per layer: at least one per layer
  (so Sabry and Belz's "top 2% per layer" with 12-24 heads per layer is one head per layer).

``--exclude-prev-token`` (:func:`prev_token_head`) leaves the model's top previous-token head out
of the top set and of every random set: a circuit's shared first step, it would otherwise make
any set holding it drop as much as the top set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

from ihstats.base.fileio import read_parquet

HeadSet = tuple[tuple[int, ...], ...]  # one tuple of head indices per layer


def as_head_set(heads, n_layer: int, n_head: int) -> HeadSet:
    """Normalise ``heads`` to one sorted tuple per layer.

    Accepts a per-layer sequence of head-index sequences (``[[0], [1, 3]]``) or a dict
    ``{layer: [heads]}`` (``(layer, head)`` pairs: :func:`pairs_to_head_set`). Raises ValueError
    naming the bad layer/head.
    """
    if isinstance(heads, dict):
        per = [tuple(heads.get(l, ())) for l in range(n_layer)]
        extra = set(heads) - set(range(n_layer))
        if extra:
            raise ValueError(f"heads: layers {sorted(extra)} out of range [0, {n_layer})")
    else:
        per = [tuple(h) for h in heads]
        if len(per) != n_layer:
            raise ValueError(f"heads: need one entry per layer ({n_layer}), got {len(per)}")
    for l, hs in enumerate(per):
        bad = [h for h in hs if not 0 <= int(h) < n_head]
        if bad:
            raise ValueError(f"heads: layer {l} heads {bad} out of range [0, {n_head})")
    return tuple(tuple(sorted({int(h) for h in hs})) for hs in per)


def pairs_to_head_set(pairs: Iterable[tuple[int, int]], n_layer: int, n_head: int) -> HeadSet:
    """``[(layer, head), ...]`` -> head set."""
    d: dict[int, list[int]] = {}
    for l, h in pairs:
        d.setdefault(int(l), []).append(int(h))
    return as_head_set(d, n_layer, n_head)


def format_head_set(heads: HeadSet) -> str:
    """``((0,), (1, 3))`` -> ``"L0H0 L1H1 L1H3"`` (the ``heads`` column of the table)."""
    return " ".join(f"L{l}H{h}" for l, hs in enumerate(heads) for h in hs) or "-"


def top_heads(scores: np.ndarray, k: int | None = None, frac: float | None = None,
              per_layer: bool = False, exclude: HeadSet | None = None) -> HeadSet:
    """Highest-scoring heads of an (L, H) score array; rounding rules in the module docstring.
    ``exclude``: heads never chosen (one tuple per layer); the rounding still counts every head."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"scores: expected an (n_layers, n_heads) array, got shape {s.shape}")
    L, H = s.shape
    excluded = as_head_set(exclude if exclude is not None else [()] * L, L, H)
    if exclude is not None:
        s = s.copy()
        for l, hs in enumerate(excluded):
            s[l, list(hs)] = -np.inf  # ranked last; the limit below keeps k within the others
    n_free = [H - len(hs) for hs in excluded]
    if (k is None) == (frac is None):
        raise ValueError("top_heads: give exactly one of k (--top-k) or frac (--top-frac)")
    if frac is not None:
        if not 0 < frac <= 1:
            raise ValueError(f"--top-frac: must lie in (0, 1], got {frac}")
        k = max(1, int(np.floor(frac * (H if per_layer else L * H) + 0.5)))
    assert k is not None
    limit = min(n_free) if per_layer else sum(n_free)
    if not 1 <= k <= limit:
        where = (f"the {H} heads per layer" if per_layer else f"the {L * H} heads ({L} layers x {H})") + (
            f" less {L * H - sum(n_free)} excluded" if sum(n_free) < L * H else "")
        raise ValueError(f"--top-k: must be in [1, {limit}] ({where}), got {k}")
    if per_layer:
        # stable sort of -score: ties go to the lower head index
        return tuple(tuple(sorted(np.argsort(-s[l], kind="stable")[:k].tolist())) for l in range(L))
    flat = np.argsort(-s.ravel(), kind="stable")[:k]
    return pairs_to_head_set([divmod(int(i), H) for i in flat], L, H)


def prev_token_head(prev_scores: np.ndarray) -> HeadSet:
    """The model's single highest previous-token head, as a head set (ties to the lower (layer, head))."""
    return top_heads(prev_scores, k=1)


def run_head_scores(run_dir: str | Path, score: str = "ps", step: int | None = None) -> np.ndarray:
    """(L, H) per-head ``score`` at ``step`` (default: the last logged step) from metrics.parquet."""
    path = Path(run_dir) / "metrics.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (is {run_dir} a run directory?)")
    m = read_parquet(path, what="metric log", remedy=f"the run's logs are damaged: train {run_dir} again")
    per_head = sorted(m.loc[m["head"] >= 0, "metric"].unique())
    if score not in per_head:
        why = ("is a whole-model metric (no per-head values), so it cannot rank heads"
               if score in set(m["metric"]) else f"is not in {path}")
        raise ValueError(f"--score {score!r} {why}; per-head metrics there: {', '.join(per_head)}")
    m = m[(m["metric"] == score) & (m["head"] >= 0)]
    step = int(m["step"].max()) if step is None else int(step)
    m = m[m["step"] == step]
    if m.empty:
        raise ValueError(f"--step: {score!r} was not logged at step {step}")
    L, H = int(m["layer"].max()) + 1, int(m["head"].max()) + 1
    out = np.full((L, H), np.nan)
    out[m["layer"].to_numpy(), m["head"].to_numpy()] = m["value"].to_numpy()
    return out
