"""Probe batches for the mechanism metrics (definitions in docs/DESIGN.md).

- **repeat** (PS, previous-token, LA, AR; after Aoyama et al. 2025): ``n_seqs`` sequences, each
  ``n = min(50, C // 2)`` distinct tokens drawn uniformly from ``range(*ordinary_range)`` and
  repeated twice: length ``2n``, no BOS. Positions ``0..2n-1``; the second copy is ``[n, 2n-1]``.
- **copy_fwd** ``S SEP S`` and **copy_bwd** ``S SEP reverse(S)`` (forward copy and
  anti-induction scores; after Sabry and Belz 2025): ``S`` is ``n_copy`` distinct tokens. The
  probe has length ``2 n_copy + 1`` and must fit in the context, hence
  ``n_copy = min(n, (C - 1) // 2)``; with the default ``n = min(50, C // 2)`` this is ``n`` whenever
  ``C`` is odd or ``C >= 101``, one less otherwise. The copy probes have ``n_copy_seqs`` rows,
  by default ``max(1, n_seqs // 4)``: their scores average attention over ``n_copy_seqs (n_copy - 1)``
  queries (1225 for the defaults), plenty for a per-head mean, and a quarter of the rows keeps
  evaluation cheap (the metric forward passes dominate its cost).

SEP rule: ``sep_token`` if given (e.g. the tokenizer's ``sep`` special token); if ``None``, the
first ordinary token ``ordinary_range[0]``. Either way ``S`` is drawn from the ordinary range with
SEP removed, so SEP never occurs inside ``S`` and every token of ``S`` occurs exactly once per copy.

**natural repeat** (:func:`natural_repeat`): the first ``n`` tokens of each held-out sequence,
repeated: ``(N_val, 2n)``. The same layout as ``repeat`` but in the training distribution of every
condition (the random-token probe is the injected snippets' distribution: natural-only models
score it below uniform). A span may hold a token twice; PS stays positional (s -> s - n + 1).

**general** (issue 65; :func:`general_probe`): the general induction probe. Rows of ``C`` tokens:
in-distribution filler (a held-out sequence of the source, ``filler``; uniform random ordinary
tokens where none is given), overwritten by a span of ``k`` distinct random ordinary tokens (absent
from the row's filler where the vocabulary allows) at ``[C - k - d, C - d)`` and again at the end,
``[C - k, C)``, inside the source's repeat region. The three copy distances ``d`` of
:func:`ihstats.base.contract.general_probe_layout` share one batch: rows ``[i R, (i + 1) R)`` hold
distance ``i`` (near, mid, far), ``R = max(2, n_seqs // 8)`` rows each (12 by default: 84 queries
a distance at k 8).

Probes are a pure function of the arguments: one ``numpy.random.Generator`` seeded from ``seed``
(the general probe: a child stream, so adding it left the other probes' tokens unchanged).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ihstats.base.contract import MAX_PROBE_LEN, general_probe_layout, probe_len_of


@dataclass
class ProbeSet:
    """Probe token batches (torch LongTensors, CPU unless moved with :meth:`to`)."""

    repeat: torch.Tensor  # (N, 2n): n distinct tokens, repeated twice
    copy_fwd: torch.Tensor  # (N_copy, 2 n_copy + 1): S SEP S
    copy_bwd: torch.Tensor  # (N_copy, 2 n_copy + 1): S SEP reverse(S); same S rows as copy_fwd
    n: int
    n_copy: int
    sep_token: int
    vocab_size: int
    context: int
    seed: int
    ordinary_range: tuple[int, int]
    general: torch.Tensor | None = None  # (3 R, C): rows [i R, (i + 1) R) repeat a span at distances[i]
    general_layout: dict | None = None  # ihstats.base.contract.general_probe_layout of (C, repeat_start, copy_band)
    general_filler: str = ""  # "held-out" (the source's own sequences) or "random" (uniform tokens)
    repeat_start: int = 0  # the source's repeat region starts here (the general probe's layout reads it)
    copy_band: tuple[int, int] | None = None  # the data's copy distances (min, max), where it fixes them

    @property
    def n_seqs(self) -> int:
        return int(self.repeat.shape[0])

    @property
    def n_copy_seqs(self) -> int:
        return int(self.copy_fwd.shape[0])

    def to(self, device: torch.device | str) -> ProbeSet:
        """A copy with the token tensors on ``device``."""
        return dataclasses.replace(self, repeat=self.repeat.to(device), copy_fwd=self.copy_fwd.to(device),
                                   copy_bwd=self.copy_bwd.to(device),
                                   general=None if self.general is None else self.general.to(device))


def _distinct_rows(rng: np.random.Generator, pool: np.ndarray, n_rows: int, k: int) -> np.ndarray:
    """(n_rows, k) rows of k distinct values drawn uniformly from ``pool`` without replacement."""
    # argsort of uniform keys gives a uniform random permutation per row; take the first k.
    keys = rng.random((n_rows, pool.size))
    return pool[np.argsort(keys, axis=1)[:, :k]]


def make_probes(vocab_size: int, context: int, seed: int, ordinary_range: tuple[int, int],
                sep_token: int | None, n_seqs: int = 100, n: int = 0, n_copy_seqs: int = 0,
                repeat_start: int = 0, filler: np.ndarray | torch.Tensor | None = None,
                copy_band: tuple[int, int] | None = None) -> ProbeSet:
    """Build the repeat, copy and general probes.

    Parameters
    ----------
    vocab_size : the model's vocabulary size (tokens must be < vocab_size).
    context : the training context C; probes never exceed it.
    seed : seeds the numpy Generator; same arguments give the same probes.
    ordinary_range : (lo, hi); probe tokens come from ``range(lo, hi)``.
    sep_token : separator for the copy probes; ``None`` uses ``lo`` (see module docstring).
    n_seqs : N, sequences per probe.
    n : half-length of the repeat probe; 0 gives ``min(50, context // 2)``.
    n_copy_seqs : rows of each copy probe; 0 gives ``max(1, n_seqs // 4)``.
    repeat_start : first position of the source's repeat region (the general probe's second span
        lies in it; 0: anywhere, as in natural text and scored series).
    filler : held-out sequences (N, >= C) of the source for the general probe's filler; None:
        uniform random ordinary tokens.
    copy_band : (min, max) copy distance where the data fixes it (:func:`ihtrain.data.copy_band_of`):
        the general probe asks about distances across it; None: across a quarter to all of C.
    """
    lo, hi = (int(v) for v in ordinary_range)
    if not (0 <= lo < hi <= vocab_size):
        raise ValueError(f"ordinary_range: must satisfy 0 <= lo < hi <= vocab_size={vocab_size}, got {ordinary_range}")
    if n_seqs < 1:
        raise ValueError(f"n_seqs: must be >= 1, got {n_seqs}")
    if n_copy_seqs < 0:
        raise ValueError(f"n_copy_seqs: must be >= 0 (0: n_seqs // 4), got {n_copy_seqs}")
    n_copy_seqs = n_copy_seqs or max(1, n_seqs // 4)
    if context < 5:
        raise ValueError(f"context: must be >= 5 (a repeat probe of 2 x 2 tokens and a copy probe "
                         f"S SEP S with |S| >= 2), got {context}")
    if n < 0:
        raise ValueError(f"n: must be >= 0 (0: min({MAX_PROBE_LEN}, context // 2)), got {n}")
    n = probe_len_of(n, context)
    if n < 2 or 2 * n > context:
        raise ValueError(f"n: the repeat probe needs 2 <= n and 2 * n <= context={context}, got n={n}")
    n_copy = min(n, (context - 1) // 2)  # 2 n_copy + 1 <= C: S, SEP and the copy fit the context
    if hi - lo < n:
        raise ValueError(f"ordinary_range: {ordinary_range} holds {hi - lo} tokens, fewer than the "
                         f"n={n} distinct tokens a probe sequence needs")
    sep = lo if sep_token is None else int(sep_token)
    if not 0 <= sep < vocab_size:
        raise ValueError(f"sep_token: must be in [0, vocab_size={vocab_size}), got {sep_token}")
    pool = np.arange(lo, hi, dtype=np.int64)  # general_probe relies on it being the whole range
    copy_pool = pool[pool != sep]
    if copy_pool.size < n_copy:
        raise ValueError(f"ordinary_range: {ordinary_range} without sep_token={sep} holds {copy_pool.size} "
                         f"tokens, fewer than the n_copy={n_copy} the copy probes need")

    rng = np.random.default_rng(seed)
    first = _distinct_rows(rng, pool, n_seqs, n)  # (N, n)
    repeat = np.concatenate([first, first], axis=1)  # (N, 2n)
    s = _distinct_rows(rng, copy_pool, n_copy_seqs, n_copy)  # (N_copy, m)
    sep_col = np.full((n_copy_seqs, 1), sep, dtype=np.int64)
    fwd = np.concatenate([s, sep_col, s], axis=1)  # (N_copy, 2m + 1)
    bwd = np.concatenate([s, sep_col, s[:, ::-1]], axis=1)  # (N_copy, 2m + 1)
    as_t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).long()  # noqa: E731
    layout = general_probe_layout(context, repeat_start, copy_band)
    general = general_probe(np.random.default_rng([seed, GENERAL_STREAM]), pool, context, layout,
                            max(2, n_seqs // 8), filler)
    return ProbeSet(as_t(repeat), as_t(fwd), as_t(bwd), n=n, n_copy=n_copy, sep_token=sep,
                    vocab_size=vocab_size, context=context, seed=seed, ordinary_range=(lo, hi),
                    general=as_t(general), general_layout=layout,
                    general_filler="random" if filler is None else "held-out", repeat_start=int(repeat_start),
                    copy_band=None if copy_band is None else (int(copy_band[0]), int(copy_band[1])))


GENERAL_STREAM = 0x65  # the general probe's child seed stream (issue 65)


def general_probe(rng: np.random.Generator, pool: np.ndarray, context: int, layout: dict, rows: int,
                  filler: np.ndarray | torch.Tensor | None = None) -> np.ndarray:
    """The general probe's tokens (module docstring): (3 rows, C) int64, distance i in rows
    ``[i rows, (i + 1) rows)``. ``filler`` rows are reused in turn (row r takes filler row r mod N)."""
    C, k, second = int(context), layout["span"], layout["second"]
    R = 3 * rows
    if filler is None:
        x = pool[rng.integers(0, pool.size, size=(R, C))]
    else:
        f = np.asarray(filler, dtype=np.int64)
        if f.ndim != 2 or f.shape[0] < 1 or f.shape[1] < C:
            raise ValueError(f"filler: the general probe needs held-out sequences (N, >= C={C}), got shape {f.shape}")
        x = f[np.arange(R) % f.shape[0], :C].copy()
    # span tokens absent from the row's filler sort last: drawn only where the pool runs short
    keys = rng.random((R, pool.size))
    lo = int(pool[0])  # pool is range(lo, hi)
    inside = (x >= lo) & (x < lo + pool.size)
    keys[np.nonzero(inside)[0], x[inside] - lo] += 1.0
    span = pool[np.argsort(keys, axis=1)[:, :k]]  # (R, k) distinct per row
    for i, d in enumerate(layout["distances"]):
        r = slice(i * rows, (i + 1) * rows)
        x[r, second - d:second - d + k] = span[r]
        x[r, second:] = span[r]
    return x


def natural_repeat(val_tokens: torch.Tensor | np.ndarray, n: int) -> torch.Tensor:
    """``cat(x[:, :n], x[:, :n])`` of held-out sequences ``val_tokens`` (N, T): (N, 2n) long."""
    x = torch.as_tensor(val_tokens, dtype=torch.long)
    if x.dim() != 2 or x.shape[1] < n or n < 2:
        raise ValueError(f"val_tokens: the natural repeat probe needs (N, T) with T >= n={n} >= 2, "
                         f"got shape {tuple(x.shape)}; raise train.context or lower metrics.probe_len")
    return torch.cat([x[:, :n], x[:, :n]], dim=1)


__all__ = ["GENERAL_STREAM", "ProbeSet", "general_probe", "make_probes", "natural_repeat", "MAX_PROBE_LEN"]
