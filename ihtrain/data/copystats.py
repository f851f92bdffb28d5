"""Copies and their distances in token sequences, measured from the tokens alone.

A *copy* is a position ``a`` of a sequence whose bigram ``(x[a], x[a+1])`` occurred earlier in the
same sequence, at ``j < a`` (the ``A B ... A -> B`` event an induction head predicts); its
*distance* is ``a - j`` for the nearest such ``j``. The generators' own record of what they planted
(``copy_source``, :mod:`ihtrain.data.repeats`) is not used: these functions check it. The command
``python -m ihtrain.copystats`` prints them per source and context length.

The *successor payoff* (:func:`successor_payoff`) says how much the successor shortcut pays on these
copies: a successor-only predictor knows the source's transitions ``P(t | x[a])`` and the tokens
already in the window, and predicts ``P(t | x[a])`` renormalised over the distinct tokens of
``x[0 .. a]``. At a copy the next token is in the window, so against the source's own prediction
``P(x[a+1] | x[a])`` it gains ``-log sum_{t in x[0..a]} P(t | x[a])`` nats: much where the window holds
few distinct tokens (short windows, early positions), little where it holds many. An induction
head's gain is the rest of the copy's loss, so a large payoff is a strong pull towards the shortcut
before the jump.
"""

from __future__ import annotations

import numpy as np

QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def copy_distances(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every copy of ``tokens`` (n, T) and its distance: ``(rows, queries, distances)``, one entry per
    position ``a in [0, T-2]`` whose bigram ``(x[a], x[a+1])`` occurred at an earlier ``j`` of the same
    row, with ``a - j`` for the nearest such ``j``. Found from the tokens alone."""
    x = np.asarray(tokens, dtype=np.int64)
    if x.ndim != 2 or x.shape[1] < 2:
        raise ValueError(f"tokens: expected shape (n, T >= 2), got {x.shape}")
    n, T = x.shape
    base = int(x.max()) + 1 if x.size else 1
    big = (x[:, :-1] * base + x[:, 1:]).ravel()  # (n (T-1),) bigram id at query a
    row = np.repeat(np.arange(n), T - 1)
    pos = np.tile(np.arange(T - 1), n)
    order = np.lexsort((pos, big, row))  # by row, then bigram, then position
    same = (big[order][1:] == big[order][:-1]) & (row[order][1:] == row[order][:-1])
    later = order[1:][same]
    return row[later], pos[later], pos[later] - pos[order[:-1][same]]


def copy_table(tokens: np.ndarray) -> dict[str, float]:
    """Copies per token (per predicted position, ``T - 1`` per sequence), per sequence, and the
    distance's mean and :data:`QUANTILES` (``d_q50`` ...) of ``tokens`` (n, T)."""
    n, T = np.shape(tokens)
    _, _, d = copy_distances(tokens)
    out = {"n_seqs": n, "copies_per_token": d.size / (n * (T - 1)), "copies_per_seq": d.size / n,
           "d_mean": float(d.mean()) if d.size else float("nan")}
    qs = np.quantile(d, QUANTILES) if d.size else [float("nan")] * len(QUANTILES)
    out.update({f"d_q{round(q * 100)}": float(v) for q, v in zip(QUANTILES, qs)})
    return out


def successor_payoff(tokens: np.ndarray, transitions: np.ndarray) -> dict[str, float]:
    """The successor payoff (module docstring) of ``tokens`` (n, T), ids indexing ``transitions``
    (V, V), rows summing to 1: ``payoff_mean`` (nats, mean over the copies of
    :func:`copy_distances`) and ``payoff_q50`` (median); NaN without copies."""
    x = np.asarray(tokens, dtype=np.int64)
    P = np.asarray(transitions, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or x.size and not 0 <= x.min() <= x.max() < P.shape[0]:
        raise ValueError(f"transitions: expected a square (V, V) matrix covering the token ids, got {P.shape} "
                         f"for ids in [{x.min() if x.size else 0}, {x.max() if x.size else 0}]")
    rows, queries, _ = copy_distances(x)
    n, T = x.shape
    mass = np.empty((n, T))  # mass[i, a]: P(x[0..a] | x[a]), the window's share of the successors
    for i in range(n):
        seen = np.zeros((T, P.shape[0]), dtype=bool)
        seen[np.arange(T), x[i]] = True
        seen = np.logical_or.accumulate(seen, axis=0)
        mass[i] = (P[x[i]] * seen).sum(1)
    gain = -np.log(np.clip(mass[rows, queries], 1e-300, None))
    return {"payoff_mean": float(gain.mean()) if gain.size else float("nan"),
            "payoff_q50": float(np.median(gain)) if gain.size else float("nan")}
