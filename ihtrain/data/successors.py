"""A source's successor statistics: ``P(next | current)`` and the marginal, in model token ids.

The successor-controlled in-distribution score (``ps_indist_ctrl``) and the successor-lookup
ceilings (docs/DESIGN.md, "Metric definitions") read them. Where they come from:

- Markov data: the generator's exact transition matrix and stationary marginal
  (:meth:`ihtrain.data.markov.MarkovSource.successor_stats`);
- semi-natural data: its bigram model, the generator's transitions
  (:meth:`ihtrain.data.seminatural.SeminaturalSource.successor_stats`);
- natural text and scored series: bigram counts of held-out text (:func:`bigram_successors`);
- any other source (a registered one without ``successor_stats``, a Bi-Induct wrapper): none, and
  the run logs neither the controlled score nor the ceilings.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ihstats.base.chance import indist_ceilings, likely_successor
from ihtrain.data.repeats import copy_labels


@dataclass
class Successors:
    """``probs`` (V, V) ``P(next | current)`` (dense, or scipy sparse CSR), ``marginal`` (V,), and
    ``what`` they are (``generator transitions`` or ``held-out bigram counts``). Constant per run:
    the ceilings and control queries of a held-out batch are computed once and remembered."""

    probs: Any
    marginal: np.ndarray
    what: str
    _memo: dict = field(default_factory=dict, repr=False)

    def _key(self, val: np.ndarray, start: int) -> tuple:
        return (hashlib.sha1(np.ascontiguousarray(val).tobytes()).hexdigest(), val.shape, int(start))

    def labelled(self, val: np.ndarray, start: int) -> dict[str, Any]:
        """For held-out sequences ``val`` (n, T + 1) and the repeat region's ``start``: ``ctrl`` (n,
        T + 1) bool, the copy queries whose copied token is not a likely successor, and ``ceilings``
        (:func:`ihstats.base.chance.indist_ceilings`)."""
        val = np.asarray(val, dtype=np.int64)
        key = self._key(val, start)
        if key not in self._memo:
            queries, keys = copy_labels(val, start)
            b, a = np.nonzero(queries)
            ctrl = np.zeros_like(queries)
            ctrl[b, a] = ~likely_successor(self.probs, self.marginal, val[b, a], val[b, a + 1])
            self._memo[key] = {"ctrl": ctrl, "ceilings": indist_ceilings(val, queries, keys, self.probs, self.marginal)}
        return self._memo[key]


def from_compact(P: np.ndarray, marginal: np.ndarray, offset: int, what: str) -> Successors:
    """Statistics over compact ids ``0 .. V-1`` shifted by ``offset`` reserved ids (the specials,
    which get no successors and probability 0)."""
    V = P.shape[0] + offset
    full = np.zeros((V, V))
    full[offset:, offset:] = P
    m = np.zeros(V)
    m[offset:] = marginal
    return Successors(full, m, what)


def bigram_successors(tokens: np.ndarray, vocab_size: int) -> Successors:
    """Successor statistics counted from held-out text ``tokens`` (any shape; rows are sequences, a
    1-D stream is one): ``P(b | a) = count(a b) / count(a .)`` (0 for a pair never seen) and the
    unigram marginal, sparse (a natural vocabulary's V x V would not fit)."""
    x = np.asarray(tokens, dtype=np.int64)
    x = x[None, :] if x.ndim == 1 else x
    a, b = x[:, :-1].ravel(), x[:, 1:].ravel()
    if not a.size or x.min() < 0 or x.max() >= vocab_size:
        raise ValueError(f"held-out tokens: need >= 2 per row, ids in [0, {vocab_size}), got shape {x.shape}")
    counts = sp.coo_matrix((np.ones(a.size), (a, b)), shape=(vocab_size, vocab_size)).tocsr()
    rows = np.asarray(counts.sum(axis=1)).ravel()
    P = sp.diags(np.where(rows > 0, 1.0 / np.where(rows > 0, rows, 1.0), 0.0)) @ counts
    return Successors(P.tocsr(), np.bincount(x.ravel(), minlength=vocab_size) / x.size, "held-out bigram counts")


def held_out_bigrams(source: Any, max_tokens: int = 5_000_000) -> Successors:
    """A natural-text source's ``successor_stats``: bigram counts of its held-out split (the first
    ``max_tokens``), measured where the model never trained (natural text has no generator)."""
    return bigram_successors(np.asarray(source.stream.val[:max_tokens], dtype=np.int64), source.vocab_size)


def source_successors(source: Any) -> Successors | None:
    """The source's successor statistics (its ``successor_stats()``), or None where it has none."""
    get = getattr(source, "successor_stats", None)
    return get() if callable(get) else None


__all__ = ["Successors", "bigram_successors", "from_compact", "held_out_bigrams", "source_successors"]
