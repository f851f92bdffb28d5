"""Chance levels of the mechanism measures, and the rule that says a measure sits at its own.

A verdict is only as good as its measure: "Bi-Induct does not raise X" says nothing when neither
group's X is above what a model without the mechanism scores. Each measure has a **floor**, the
value it reads when the model has no such mechanism:

- an attention score (PS on a probe, duplicate-token, anti-induction): uniform attention over the
  causal keys, the mean over the scored queries ``q`` (0-based) of ``1 / (q + 1)``
  (:func:`uniform_attention`);
- a next-token log-prob: uniform guessing, ``-ln V`` (:func:`uniform_logprob`);
- HITS@1 of key -> value recall: ``1 / (pairs shown)``, what copying some earlier value scores
  (the permuted control's level; uniform guessing, ``1 / V``, is lower);
- a log-prob gain over a control, a late-minus-early loss, a top-minus-random ablation gap: 0;
- a head's share of positive logit attribution among ``n`` candidate tokens: ``1 / n``;
- the top share of a layer's PS: ``k / H`` (:func:`top_share_floor`), what equal PS on every
  head gives. With few heads a layer the share is ``1 / (heads carrying PS)``, a head count.

**At the floor** (:func:`at_floor`): a group of runs sits at a measure's floor when the group's
mean is less than ``factor`` (default 2) times the floor above it (on the side the mechanism
moves the measure): for a probability, an attention
mass or a share, ``mean < factor * floor``; for a log-prob, a log-prob gain or a logit, ``mean <
floor + ln(factor)`` (the target is less than ``factor`` times as likely as under the floor).
Below the floor counts as at it (a model that avoids the target is not using the mechanism
either). A claim's measure is *not testable by this design* when both groups compared sit at the
floor: the comparison then ranks two absences of the mechanism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ihstats.base.contract import general_probe_layout, probe_len_of

#: the default "at the floor" factor: within a factor of 2 of chance (ln 2 on a log scale)
CHANCE_FACTOR = 2.0
SCALES = ("ratio", "log")


@dataclass(frozen=True)
class Floor:
    """A measure's chance level: ``column`` of the run table holding it per run, ``what`` it is
    (how derived, for the verdict table), and its ``scale`` (``ratio``: a probability, attention
    mass or share; ``log``: log-prob or logit units)."""

    column: str
    what: str
    scale: str = "ratio"
    higher: bool = True  # the mechanism raises the measure (False: lowers it, e.g. a loss difference)

    def __post_init__(self):
        if self.scale not in SCALES:
            raise ValueError(f"Floor {self.column!r}: scale must be one of {SCALES}, got {self.scale!r}")


def band_edge(floor: float, scale: str, factor: float = CHANCE_FACTOR, higher: bool = True) -> float:
    """The far edge of the band "at" ``floor``, on the mechanism's side: ``factor * floor`` (ratio)
    or ``floor + ln factor`` (log); mirrored (``floor / factor``, ``floor - ln factor``) for a
    measure the mechanism lowers (``higher=False``)."""
    if factor <= 1:
        raise ValueError(f"factor: must be > 1, got {factor}")
    if scale == "ratio":
        if floor < 0:
            raise ValueError(f"floor: a ratio-scale floor must be >= 0, got {floor}")
        return factor * floor if higher else floor / factor
    if scale == "log":
        return floor + math.log(factor) if higher else floor - math.log(factor)
    raise ValueError(f"scale: must be one of {SCALES}, got {scale!r}")


def at_floor(values, floor: float, scale: str, factor: float = CHANCE_FACTOR, higher: bool = True) -> bool:
    """Whether a group of runs sits at ``floor``: its mean (NaN values dropped) has not passed
    :func:`band_edge` on the mechanism's side (below it; above it for ``higher=False``). Raises on
    an empty group or a non-finite floor."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not v.size:
        raise ValueError("values: no finite value to compare with the floor")
    if not np.isfinite(floor):
        raise ValueError(f"floor: must be finite, got {floor}")
    edge = band_edge(floor, scale, factor, higher)
    return bool(v.mean() < edge if higher else v.mean() > edge)


def uniform_attention(queries) -> float:
    """Mean attention a uniform causal head puts on one given key: mean over the (0-based) query
    positions of ``1 / (q + 1)``."""
    q = np.asarray(queries, dtype=float)
    if not q.size or (q < 0).any():
        raise ValueError(f"queries: need >= 1 position, all >= 0, got {q.tolist()[:5]}")
    return float(np.mean(1.0 / (q + 1.0)))


def uniform_logprob(vocab_size: int) -> float:
    """Log-prob of any one token under uniform guessing over ``vocab_size`` tokens."""
    if vocab_size < 2:
        raise ValueError(f"vocab_size: must be >= 2, got {vocab_size}")
    return -math.log(vocab_size)


def copy_probe_len(context: int, probe_len: int = 0) -> int:
    """``m = n_copy`` of the copy probes (``ihtrain.probes.make_probes``): ``min(n, (C - 1) // 2)``
    with ``n = contract.probe_len_of(probe_len, C)``."""
    n = probe_len_of(probe_len, context)
    return min(n, (context - 1) // 2)


def copy_probe_floors(context: int, probe_len: int, vocab_size: int) -> dict[str, float]:
    """Floors of the copy-probe measures of a run (docs/DESIGN.md, "Copy probes"; ``m = n_copy``):
    ``anti_induction`` (queries ``m+1 .. 2m-1``), ``dup_bwd`` (``m+1 .. 2m``) and ``copy_fwd``
    (``m+1 .. 2m-1``) under uniform attention; the copy log-probs under uniform guessing."""
    m = copy_probe_len(context, probe_len)
    return {"anti_induction": uniform_attention(np.arange(m + 1, 2 * m)),
            "dup_bwd": uniform_attention(np.arange(m + 1, 2 * m + 1)),
            "copy_fwd": uniform_attention(np.arange(m + 1, 2 * m)),
            "copy_fwd_logprob": uniform_logprob(vocab_size), "copy_bwd_logprob": uniform_logprob(vocab_size)}


def top_share_floor(n_heads: int, frac: float = 0.02) -> float:
    """The top share's floor in a layer of ``n_heads``: ``k / H`` with ``k = max(1,
    round_half_up(frac H))`` (``ihstats.concentration.layer_concentration``'s rule)."""
    if n_heads < 1:
        raise ValueError(f"n_heads: must be >= 1, got {n_heads}")
    return max(1, int(np.floor(frac * n_heads + 0.5))) / n_heads


def repeat_probe_floor(context: int, probe_len: int) -> float:
    """PS's floor on the repeat probe (queries ``n .. 2n-1``) under uniform attention."""
    n = probe_len_of(probe_len, context)
    return uniform_attention(np.arange(n, 2 * n))


# ------------------------------------------------------------------ issue 65: induction, controlled
def _pair_probs(P, prev: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """``P[prev_i, nxt_i]`` for a dense array or a scipy sparse matrix ``P`` (V, V): (n,) float."""
    prev, nxt = np.asarray(prev, dtype=np.int64), np.asarray(nxt, dtype=np.int64)
    if not prev.size:  # scipy cannot index with empty arrays
        return np.zeros(0)
    return np.asarray(P[prev, nxt], dtype=np.float64).ravel()


def likely_successor(P, marginal: np.ndarray, prev, nxt) -> np.ndarray:
    """Whether each ``nxt`` token is a **likely successor** of its ``prev`` token under the source's
    statistics: ``P(nxt | prev) > P(nxt)`` (positive pointwise mutual information), the one rule
    the successor-controlled score uses (docs/DESIGN.md, ``ps_indist_ctrl``).

    ``P`` (V, V) holds ``P(next | current)`` (dense, or scipy sparse: bigram counts normalised per
    row), ``marginal`` (V,) the tokens' probability. Why this rule: a successor-lookup head weights
    an earlier token by ``P(x_j | x_a)`` (or by its ratio to ``P(x_j)``), so it can only favour a
    copied token whose ratio exceeds that of the average token in the window, which is about 1; on
    copies with a ratio <= 1 it sits at or below uniform chance (measured on bxc-cross's chains:
    the oracles' controlled score 0.02-0.05 against chance 0.02-0.08), and 27-36% of copy queries
    remain. Returns a boolean array shaped like ``prev``."""
    prev, nxt = np.asarray(prev), np.asarray(nxt)
    m = np.asarray(marginal, dtype=np.float64)
    return (_pair_probs(P, prev.ravel(), nxt.ravel()) > m[nxt.ravel()]).reshape(prev.shape)


def _oracle_mass(W, tokens: np.ndarray, b: np.ndarray, a: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Attention mass on the keys of each copy query (b, a) of a head attending to every position
    ``j <= a`` in proportion to ``W[x[a], x[j]]`` (uniform where all weights are 0): (Q,)."""
    T = keys.shape[-1]
    w = _pair_probs(W, np.repeat(tokens[b, a], T), tokens[b, :T].ravel()).reshape(len(a), T)
    w = w * (np.arange(T)[None, :] <= a[:, None])  # (Q, T): causal
    empty = w.sum(1) == 0
    w[empty] = (np.arange(T)[None, :] <= a[empty, None]).astype(np.float64)
    return (w / w.sum(1, keepdims=True) * keys[b, a, :T]).sum(1)


def indist_ceilings(tokens: np.ndarray, queries: np.ndarray, keys: np.ndarray, P, marginal: np.ndarray) -> dict[str, float]:
    """Chance levels and successor-lookup ceilings of ``ps_indist`` and ``ps_indist_ctrl`` on the
    held-out sequences ``tokens`` (n, T + 1) with their copy labels (``queries`` (n, T + 1),
    ``keys`` (n, T + 1, T + 1), ``ihtrain.data.repeats.copy_labels``) under the source's
    statistics ``P`` (V, V) ``P(next | current)`` and ``marginal`` (V,).

    Returns the model-level constants a run logs (docs/DESIGN.md, "Metric definitions"):
    ``chance_indist``, ``chance_ctrl`` (uniform causal attention: mean ``|keys| / (a + 1)`` over all
    copy queries, and over those whose copied token is not a :func:`likely_successor`);
    ``ceil_succ_indist`` and ``ceil_succ_pmi_indist``, the ``ps_indist`` of the oracle successor
    head (weights ``P(x_j | x_a)``) and of its PMI-sharpened form (``P(x_j | x_a) / P(x_j)``);
    ``ceil_succ_ctrl``, the larger of the two oracles' controlled scores. NaN where there is no
    such query. Only the inputs ``[:, :T]`` are attended over, as the model sees them."""
    x = np.asarray(tokens)
    T = x.shape[1] - 1
    b, a = np.nonzero(np.asarray(queries)[:, :T])
    m = np.asarray(marginal, dtype=np.float64)
    ctrl = ~likely_successor(P, m, x[b, a], x[b, a + 1])
    inv = np.where(m > 0, 1.0 / np.where(m > 0, m, 1.0), 0.0)
    P_pmi = P.multiply(inv[None, :]).tocsr() if hasattr(P, "multiply") else np.asarray(P) * inv[None, :]
    chance = keys[b, a, :T].sum(1) / (a + 1.0)
    succ, pmi = _oracle_mass(P, x, b, a, keys), _oracle_mass(P_pmi, x, b, a, keys)
    mean = lambda v: float(v.mean()) if v.size else float("nan")  # noqa: E731
    return {"chance_indist": mean(chance), "chance_ctrl": mean(chance[ctrl]),
            "ceil_succ_indist": mean(succ), "ceil_succ_pmi_indist": mean(pmi),
            "ceil_succ_ctrl": max(mean(succ[ctrl]), mean(pmi[ctrl])) if ctrl.any() else float("nan")}


def general_probe_chance(context: int, repeat_start: int, band: tuple[int, int] | None = None) -> float:
    """Each general-probe score's chance level (uniform causal attention on the one target key):
    the queries sit at ``[C - k, C - 2]`` at every distance (:func:`ihstats.base.contract.general_probe_layout`)."""
    lay = general_probe_layout(context, repeat_start, band)
    return uniform_attention(np.arange(lay["second"], int(context) - 1))


def offset_general_ceiling(context: int, repeat_start: int, band: tuple[int, int] | None = None) -> float:
    """``ceil_offset_gen``: the general score (min over the probe's distances) of the best
    fixed-offset head, which attends only to ``s - o + 1`` for one offset ``o``: it reads 1 at the
    distance ``d = o`` and 0 at every other, so with distinct distances the ceiling is 0 (a head
    that splits its attention equally over the three probed offsets would reach 1/3)."""
    lay = general_probe_layout(context, repeat_start, band)
    ds = np.asarray(lay["distances"])
    return float(max((ds == o).astype(float).min() for o in range(1, int(context))))


def floor_note(floor: Floor, value: float, means: dict[str, float], factor: float = CHANCE_FACTOR) -> str:
    """One line for a verdict table: the floor, its band and each group's observed mean."""
    seen = ", ".join(f"{k} {v:.3g}" for k, v in means.items())
    side = "below" if floor.higher else "above"
    return (f"{floor.what} = {value:.3g} (at it: {side} {band_edge(value, floor.scale, factor, floor.higher):.3g}); "
            f"observed {seen}")


__all__ = ["CHANCE_FACTOR", "Floor", "at_floor", "band_edge", "copy_probe_floors", "copy_probe_len",
           "floor_note", "general_probe_chance", "indist_ceilings", "likely_successor", "offset_general_ceiling", "repeat_probe_floor", "top_share_floor", "uniform_attention", "uniform_logprob"]
