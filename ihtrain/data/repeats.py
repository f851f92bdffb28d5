"""Planting ``A B ... A -> B`` repeats with a target frequency and reliability (shared machinery).

Used by the semi-natural (bigram) and the Markov generators: they supply the "fresh" token model
(``first`` and ``next`` samplers) and this module lays out each sequence and plants the repeats.

Definitions (what the knobs mean, and exactly how the realised values are measured)
-----------------------------------------------------------------------------------
A sequence ``x[0 .. T-1]`` has a first half ``x[0 .. h-1]``, ``h = T // 2``, of fresh tokens with
no repeats, and a second half ``x[h .. T-1]``. The *decision points* are the positions
``a in [h, T-2]`` of the second half that have a next token ``x[a+1]``. ``start`` sets ``h`` to any
position in ``[2, T-2]`` instead (``None``: ``T // 2``): a short repeat-free prefix puts contexts
at early positions too, where layer-0 attention is spread over few tokens (used by long contexts,
where a second half starting at ``T // 2`` leaves only far positions to learn from), and lets the
vocabulary be smaller than ``T``: only the prefix and the breaks draw fresh tokens, about
``start + (1 - f) (T - start)`` per sequence (a sequence that runs out of unseen tokens raises).

- ``a`` is an **induction context** (``A B ... A``) when ``x[a]`` occurred earlier, at some ``j < a``;
  the *recorded successors* of the context are ``S_a = {x[j+1] : j < a, x[j] = x[a]}``.
- **frequency** = (number of decision points that are contexts) / (number of decision points).
- **reliability** = (number of contexts ``a`` with ``x[a+1] in S_a``) / (number of contexts).

Both are counted over all decision points of all sequences (a ratio of sums), by
:func:`measure_repeats`, which is independent of the generator; the generator's own bookkeeping
(``truth``) equals it exactly (tested).

How the generator hits them (correcting for the contexts that copies create)
---------------------------------------------------------------------------
Column by column, ``p = h .. T-1``:

1. if ``x[p-1]`` is a context, with probability ``r`` copy: ``x[p] = x[j+1]`` for a uniformly chosen
   earlier occurrence ``j`` of ``x[p-1]``. A copy has occurred before, so ``x[p]`` is itself a
   context: copies are forced contexts. Otherwise ``x[p]`` *breaks* the pattern (never in ``S``).
2. every sequence that did not copy makes ``x[p]`` a context (a *plant*: the token of a uniformly
   chosen earlier position ``j <= p-2``, never ``x[p-1]``, never in ``S`` after a break) with
   probability ``q``, else draws a fresh token never seen in the sequence.

Copy distances (``lag_weights``): the *copy distance* of a copy query ``a`` is ``d = a - j`` for the
earlier occurrence ``j`` it copies (``d >= 2``: no consecutive duplicates). Plants set it: a plant at
``p`` from ``j`` makes the copy at ``p + 1`` (and the chain of copies after it) copy at ``d = p - j``.
By default (``lag_weights=None``) a plant's ``j`` is uniform over ``[0, p-2]`` and a copy's
occurrence uniform over the earlier ones (mean distance about 0.3 ``T``). With weights ``w[d]`` a
plant draws ``d`` from ``w`` restricted to ``[2, p]`` (renormalised) and a copy chooses among the
earlier occurrences with weights ``w[a - j]`` (nearest first when none has weight): a cap ``D``
is ``w = 1`` on ``[2, D]``, the builtin text's distances are its lag pmf
(:mod:`ihtrain.data.lags`). A copy then lies within the cap, as its occurrence does. A small cap
costs frequency: a plant after a break needs a position within reach whose token is neither
``x[p-1]`` nor a recorded successor, and where none is the position gets a fresh token (at
``f = r = 0.9``: cap 8 realises ``f`` 0.88-0.89, cap 16 0.895-0.90, cap 32 0.90; logged as always).

With ``P(context at p-1) = f`` the forced share is ``f r``, so ``q = f (1 - r) / (1 - f r)`` makes
``P(context at p) = f r + (1 - f r) q = f`` exactly at every column (``q = f`` at ``p = h``, whose
predecessor is a first-half token and never a context). Counts per column use stochastic rounding
of ``r * n_contexts`` and ``q * n_free`` (unbiased, less variance than independent coins).
Consecutive duplicates never occur, so ``S_a`` never contains ``x[a]`` via ``A A``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

FirstSampler = Callable[[np.random.Generator, int], np.ndarray]
NextSampler = Callable[[np.random.Generator, np.ndarray], np.ndarray]


def check_prob(value: float, name: str) -> float:
    if not (isinstance(value, (int, float)) and 0.0 <= float(value) <= 1.0):
        raise ValueError(f"{name}: must be a probability in [0, 1], got {value!r}")
    return float(value)


def as_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _stochastic_round(rng: np.random.Generator, x: float) -> int:
    lo = int(np.floor(x))
    return lo + int(rng.random() < x - lo)


def _choose(rng: np.random.Generator, rows: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask over ``rows``: exactly ``k`` of them, chosen uniformly."""
    mask = np.zeros(rows.size, dtype=bool)
    if k > 0:
        mask[rng.choice(rows.size, size=min(k, rows.size), replace=False)] = True
    return mask


def draw_fresh(rng: np.random.Generator, propose: Callable[[np.ndarray], np.ndarray],
               rows: np.ndarray, seen: np.ndarray, rounds: int = 16) -> np.ndarray:
    """Tokens for ``rows`` from ``propose(rows_left)``, rejecting tokens already ``seen`` by the row.

    After ``rounds`` rejections a row falls back to a uniform token among those it has not seen
    (rare: only when the model's mass sits on tokens the sequence has already used).
    """
    out = np.empty(rows.size, dtype=np.int64)
    left = np.arange(rows.size)
    for _ in range(rounds):
        if left.size == 0:
            return out
        tok = propose(left)
        ok = ~seen[rows[left], tok]
        out[left[ok]] = tok[ok]
        left = left[~ok]
    if left.size:
        # uniform over unseen tokens: argmax of noise masked by "unseen". With the shipped layout the
        # caller checks vocab >= length, so one is always left; with a short repeat-free prefix only
        # about start + (1 - f) (T - start) tokens are fresh, and a row that runs out is an error.
        if seen[rows[left]].all(1).any():
            raise ValueError(f"vocab: a sequence used all {seen.shape[1]} tokens before its end; "
                             f"raise the vocabulary or the repeat frequency")
        noise = rng.random((left.size, seen.shape[1]))
        noise[seen[rows[left]]] = -1.0
        out[left] = noise.argmax(1)
    return out


def plant_repeats(rng: np.random.Generator, n_seqs: int, length: int, n_vocab: int,
                  frequency: float, reliability: float,
                  first: FirstSampler, next_: NextSampler, start: int | None = None,
                  lag_weights: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """Generate ``(n_seqs, length)`` tokens in ``[0, n_vocab)`` with planted repeats.

    ``first(rng, n)`` draws first tokens; ``next_(rng, prev)`` one successor per entry of ``prev``
    from the fresh-token model (seen tokens are excluded here, by rejection). ``start``: first
    decision point ``h`` (``None``: ``length // 2``, the shipped layout). ``lag_weights``: weight
    ``w[d]`` of copy distance ``d`` (0 beyond its end; ``None``: uniform, the shipped rule). Returns
    ``(tokens, truth)``: per-sequence ``n_decisions``, ``n_contexts``, ``n_copies``, the realised
    ``frequency`` and ``reliability`` (ratios of sums), and ``copy_source`` (n, T) int32: at a copied
    position ``p`` the position ``j + 1`` it copied (its copy query is ``p - 1``), -1 elsewhere.
    """
    f, r = check_prob(frequency, "frequency"), check_prob(reliability, "reliability")
    w = None if lag_weights is None else _check_weights(lag_weights)
    if length < 4:
        raise ValueError(f"length: must be >= 4 for a first and a second half, got {length}")
    h = length // 2 if start is None else int(start)
    if not 2 <= h <= length - 2:
        raise ValueError(f"repeat_start: must be in [2, length - 2] = [2, {length - 2}] (the first "
                         f"decision point needs two earlier tokens and a next token), got {start}")
    # distinct tokens a sequence may need: all of them in the shipped layout (a repeat-free first
    # half, then fresh tokens at every break); with a short prefix, the prefix and a margin
    need = length if start is None else min(length, 2 * h)
    if n_vocab < need:
        raise ValueError(f"vocab: {n_vocab} tokens are fewer than the sequence needs "
                         f"(length {length}, repeats from {h}: up to {need} distinct tokens)")
    q = 1.0 if f * r >= 1.0 else f * (1.0 - r) / (1.0 - f * r)
    x = np.zeros((n_seqs, length), dtype=np.int64)
    seen = np.zeros((n_seqs, n_vocab), dtype=bool)
    all_rows = np.arange(n_seqs)
    n_ctx, n_copy = np.zeros(n_seqs, dtype=np.int64), np.zeros(n_seqs, dtype=np.int64)
    copy_source = np.full((n_seqs, length), -1, dtype=np.int32)  # copy at p: the position j+1 it copied

    x[:, 0] = first(rng, n_seqs)
    seen[all_rows, x[:, 0]] = True
    for p in range(1, h):  # first half: fresh, no repeats
        prev = x[:, p - 1]
        x[:, p] = draw_fresh(rng, lambda left: next_(rng, prev[left]), all_rows, seen)
        seen[all_rows, x[:, p]] = True

    ctx = np.zeros(n_seqs, dtype=bool)  # is x[:, p-1] a context?
    for p in range(h, length):
        prev = x[:, p - 1]
        col = np.empty(n_seqs, dtype=np.int64)
        # 1. reliability: copy the successor of an earlier occurrence
        crow = np.flatnonzero(ctx)
        copy = _choose(rng, crow, _stochastic_round(rng, r * crow.size))
        cp = crow[copy]
        broken = crow[~copy]
        if cp.size:
            j = _copied_occurrence(rng, x[cp, : p - 1] == prev[cp, None], w)
            col[cp] = x[cp, j + 1]
            copy_source[cp, p] = j + 1
            n_copy[cp] += 1
        # 2. frequency: plant a seen token among the sequences that did not copy
        free = np.setdiff1d(all_rows, cp, assume_unique=True)
        q_p = f if p == h else q
        k = 0 if p == length - 1 else _stochastic_round(rng, q_p * free.size)
        plant_mask = _choose(rng, free, k)
        if plant_mask.any():
            rows = free[plant_mask]
            tok, ok = _draw_plants(rng, x, rows, p, np.isin(rows, broken), w)
            col[rows[ok]] = tok[ok]
            plant_mask[np.flatnonzero(plant_mask)[~ok]] = False  # nothing to plant: a fresh token
        plant = free[plant_mask]
        fresh = free[~plant_mask]
        if fresh.size:
            col[fresh] = draw_fresh(rng, lambda left: next_(rng, prev[fresh[left]]), fresh, seen)
        x[:, p] = col
        seen[all_rows, col] = True
        ctx = np.zeros(n_seqs, dtype=bool)
        ctx[cp] = True
        ctx[plant] = True
        if p <= length - 2:
            n_ctx += ctx
    n_dec = np.full(n_seqs, length - 1 - h, dtype=np.int64)
    return x, {"n_decisions": n_dec, "n_contexts": n_ctx, "n_copies": n_copy, "copy_source": copy_source,
               **summarise(n_dec, n_ctx, n_copy), "frequency_target": f, "reliability_target": r, "plant_prob": q}


def _check_weights(lag_weights: np.ndarray) -> np.ndarray:
    w = np.asarray(lag_weights, dtype=np.float64)
    if w.ndim != 1 or not np.all(np.isfinite(w)) or (w < 0).any() or not w[2:].sum() > 0:
        raise ValueError("lag_weights: must be a 1-D array of finite weights >= 0 (index = copy distance) "
                         "with positive weight at some distance >= 2")
    return w


def _lag_weight(w: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``w[d]``, 0 beyond the end of ``w``."""
    return np.where(d < w.size, w[np.minimum(d, w.size - 1)], 0.0)


def _copied_occurrence(rng: np.random.Generator, occ: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    """The earlier occurrence ``j`` each copy copies: ``occ`` (n_cp, p-1) marks the occurrences
    ``j < p-1`` of its query; uniform among them (``w`` None, the shipped draws) or by lag weight."""
    if w is None:
        return np.argmax(occ * rng.random(occ.shape), axis=1)
    return _weighted_occurrence(rng, occ, w)


def _weighted_occurrence(rng: np.random.Generator, occ: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per row of ``occ`` (n, a) (earlier occurrences ``j`` of the query at ``a``), one ``j`` drawn with
    weight ``w[a - j]`` (an exponential race: the largest ``u^(1/w)``); the nearest when none weighs."""
    a = occ.shape[1]
    wd = _lag_weight(w, a - np.arange(a))  # (a,) weight of each earlier position
    live = occ & (wd > 0)[None, :]
    with np.errstate(divide="ignore"):
        key = np.where(live, np.log(rng.random(occ.shape)) / np.where(wd > 0, wd, 1.0)[None, :], -np.inf)
    nearest = np.argmax(occ * np.arange(1, a + 1)[None, :], axis=1)
    return np.where(live.any(1), np.argmax(key, axis=1), nearest)


def _draw_lags(rng: np.random.Generator, w: np.ndarray, p: int, n: int) -> np.ndarray | None:
    """``n`` earlier positions ``j = p - d``, ``d`` drawn from ``w`` on ``[2, p]``; None when it has no weight."""
    wd = _lag_weight(w, np.arange(2, p + 1))
    tot = wd.sum()
    if not tot > 0:
        return None
    cdf = np.cumsum(wd) / tot
    d = 2 + np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), wd.size - 1)
    return p - d


def _draw_plants(rng: np.random.Generator, x: np.ndarray, rows: np.ndarray, p: int,
                 after_break: np.ndarray, w: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Token of a random earlier position ``j <= p-2``: not ``x[p-1]``; not in ``S`` after a break.

    ``j`` is uniform (``w`` None) or at a distance ``p - j`` drawn from the lag weights ``w``.

    Returns ``(tokens, ok)``; ``ok`` is False for a row with no such position (possible only a few
    tokens after a short ``start``: e.g. ``a b a`` leaves nothing after a break), which the caller
    fills with a fresh token instead.
    """
    prev = x[rows, p - 1]
    out = np.empty(rows.size, dtype=np.int64)
    ok_all = np.ones(rows.size, dtype=bool)
    left = np.arange(rows.size)
    for _ in range(12):  # rejection: nearly every position qualifies
        if left.size == 0:
            return out, ok_all
        rr = rows[left]
        j = rng.integers(0, p - 1, size=left.size) if w is None else _draw_lags(rng, w, p, left.size)
        if j is None:  # no weight within reach: nothing to plant
            ok_all[left] = False
            return out, ok_all
        tok = x[rr, j]
        ok = tok != prev[left]
        brk = after_break[left]
        if brk.any():
            # tok in S = {x[k+1] : k < p-1, x[k] = prev}
            b = np.flatnonzero(brk)
            rb = rr[b]
            in_s = ((x[rb, : p - 1] == prev[left[b], None]) & (x[rb, 1:p] == tok[b, None])).any(1)
            ok[b] &= ~in_s
        out[left[ok]] = tok[ok]
        left = left[~ok]
    for i in left:  # exhaustive fallback (tiny sequences only)
        row, pv = rows[i], prev[i]
        cand = x[row, : p - 1]
        valid = cand != pv
        wj = np.ones(p - 1) if w is None else _lag_weight(w, p - np.arange(p - 1))
        valid &= wj > 0
        if after_break[i]:
            succ = x[row, 1:p][x[row, : p - 1] == pv]
            valid &= ~np.isin(cand, succ)
        if not valid.any():
            ok_all[i] = False
            continue
        out[i] = (rng.choice(cand[valid]) if w is None  # the shipped rule's draws, unchanged
                  else rng.choice(cand[valid], p=wj[valid] / wj[valid].sum()))
    return out, ok_all


def summarise(n_dec: np.ndarray, n_ctx: np.ndarray, n_copy: np.ndarray) -> dict[str, float]:
    d, c, k = float(np.sum(n_dec)), float(np.sum(n_ctx)), float(np.sum(n_copy))
    return {"frequency": c / d if d else float("nan"), "reliability": k / c if c else float("nan")}


def frequency_at(frequency: float, exponent: float, ref_context: int, context: int, name: str = "frequency") -> float:
    """The frequency a context length ``context`` gets: ``f(C) = f0 (C / C0)^k`` (``k = 0``: ``f0``).

    Raises ``ValueError`` naming ``name`` when ``f(C)`` leaves ``[0, 1]`` (lower ``f0`` or ``k``)."""
    if exponent == 0 or frequency < 0:
        return frequency
    if not (ref_context > 0 and context > 0):
        raise ValueError(f"{name}: the density scaling needs a reference context > 0 and C > 0, "
                         f"got C0 = {ref_context}, C = {context}")
    f = frequency * (context / ref_context) ** exponent
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"{name}: f(C) = {frequency} x ({context} / {ref_context})^{exponent} = {f:.4f} is not a "
                         f"probability at C = {context}; lower the frequency or its exponent")
    return f


def truth_stats(truth: dict) -> dict[str, float]:
    """What a batch's ground truth logs (``realised_*``): frequency and reliability (ratios of sums),
    copies per predicted token (copies / (n (T - 1))) and the mean copy distance (``a - j``, from the
    recorded ``copy_source``; 0 without copies). Empty for a batch without planted repeats."""
    if not truth:
        return {}
    d, c, k = (float(np.sum(truth[n])) for n in ("n_decisions", "n_contexts", "n_copies"))
    out = {"realised_frequency": c / d if d else 0.0, "realised_reliability": k / c if c else 0.0}
    src = truth.get("copy_source")
    if src is not None:
        pos = np.nonzero(src >= 0)
        out["realised_copies_per_token"] = pos[0].size / max(1, src.shape[0] * (src.shape[1] - 1))
        out["realised_copy_distance"] = float(np.mean(pos[1] - src[pos])) if pos[0].size else 0.0
    return out


def measure_repeats(tokens: np.ndarray, start: int | None = None, chunk: int = 512) -> dict:
    """Realised frequency and reliability of ``tokens`` (n, T), as defined in the module docstring.

    Decision points are ``a in [start, T-2]`` (default ``start = T // 2``); earlier occurrences are
    searched over the whole prefix ``x[0 .. a-1]``. Returns per-sequence counts and the ratios.
    """
    tokens = np.asarray(tokens)
    n, T = tokens.shape
    start = T // 2 if start is None else start
    a = np.arange(start, T - 1)
    n_ctx = np.zeros(n, dtype=np.int64)
    n_hit = np.zeros(n, dtype=np.int64)
    before = np.arange(T - 1)[None, :] < a[:, None]  # (A, T-1): j < a
    for s in range(0, n, chunk):
        x = tokens[s: s + chunk]
        same = (x[:, a, None] == x[:, None, : T - 1]) & before  # (n, A, T-1): x[j] == x[a], j < a
        succ = x[:, a + 1, None] == x[:, None, 1:T]  # x[j+1] == x[a+1]
        n_ctx[s: s + chunk] = same.any(2).sum(1)
        n_hit[s: s + chunk] = (same & succ).any(2).sum(1)
    n_dec = np.full(n, a.size, dtype=np.int64)
    out = {"n_decisions": n_dec, "n_contexts": n_ctx, "n_copies": n_hit}
    out.update(summarise(n_dec, n_ctx, n_hit))
    return out


class SequencePool:
    """A fixed, seeded corpus of generated sequences per length, drawn from at random.

    The paper trains on a fixed corpus (100M tokens) for many epochs; drawing rows of a pregenerated
    pool also makes ``sample`` as cheap as indexing. ``make(rng, n_seqs, length) -> (tokens, truth)``
    is called in chunks with child generators of ``seed``, so the pool is a pure function of
    (seed, length, pool_tokens).
    """

    def __init__(self, make: Callable[[np.random.Generator, int, int], tuple[np.ndarray, dict]],
                 seed: int, pool_tokens: int, chunk_seqs: int = 4096):
        self.make, self.seed, self.pool_tokens, self.chunk_seqs = make, seed, pool_tokens, chunk_seqs
        self._pools: dict[int, tuple[np.ndarray, dict[str, np.ndarray]]] = {}

    def get(self, length: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        if length not in self._pools:
            n_total = max(1, -(-self.pool_tokens // length))
            toks, truths = [], []
            for c, s in enumerate(range(0, n_total, self.chunk_seqs)):
                rng = np.random.default_rng([self.seed, 0x9001, length, c])
                t, tr = self.make(rng, min(self.chunk_seqs, n_total - s), length)
                toks.append(t)
                truths.append({k: v for k, v in tr.items() if isinstance(v, np.ndarray)})
            truth = {k: np.concatenate([tr[k] for tr in truths]) for k in truths[0]}
            self._pools[length] = (np.concatenate(toks), truth)
        return self._pools[length]

    def draw(self, rng: np.random.Generator, n_seqs: int, length: int) -> tuple[np.ndarray, dict]:
        pool, truth = self.get(length)
        idx = rng.integers(0, pool.shape[0], size=n_seqs)
        return pool[idx], {k: v[idx] for k, v in truth.items()}


def copy_labels(tokens: np.ndarray, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Where ``tokens`` (n, T) copy, found from the tokens alone: ``(queries, keys)``.

    ``queries[i, a]`` (bool, (n, T)): position ``a in [start, T-2]`` is a *copy query*: ``x[a]``
    occurred earlier at some ``j < a`` and the next token repeats that occurrence's successor,
    ``x[a+1] = x[j+1]`` (the ``A B ... A -> B`` event an induction head predicts).
    ``keys[i, a, k]`` (bool, (n, T, T)): for a copy query ``a``, the positions ``k = j + 1`` after
    every earlier occurrence ``j`` of ``x[a]`` (where an induction head attends; ``k <= a``).
    A generator's own record of its copies (``copy_source`` in :func:`plant_repeats`) agrees with
    these queries exactly (tested); natural text gets its repeats from here.
    """
    x = np.asarray(tokens)
    n, T = x.shape
    same = x[:, :, None] == x[:, None, :]  # (n, a, j): x[a] == x[j]
    same &= np.tril(np.ones((T, T), dtype=bool), -1)[None]  # j < a
    keys = np.zeros((n, T, T), dtype=bool)
    keys[:, :, 1:] = same[:, :, :-1]  # k = j + 1
    succ = np.zeros((n, T, T), dtype=bool)  # x[a+1] == x[k], for a <= T-2
    succ[:, :-1, :] = x[:, 1:, None] == x[:, None, :]
    queries = (keys & succ).any(axis=2)
    queries[:, :start] = False
    queries[:, T - 1] = False
    keys &= queries[:, :, None]
    return queries, keys
