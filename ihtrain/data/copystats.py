"""Copies and their distances in token sequences, measured from the tokens alone.

A *copy* is a position ``a`` of a sequence whose bigram ``(x[a], x[a+1])`` occurred earlier in the
same sequence, at ``j < a`` (the ``A B ... A -> B`` event an induction head predicts); its
*distance* is ``a - j`` for the nearest such ``j``. The generators' own record of what they planted
(``copy_source``, :mod:`ihtrain.data.repeats`) is not used: these functions check it. The command
``python -m ihtrain.copystats`` prints them per source and context length.
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
