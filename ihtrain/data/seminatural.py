"""Semi-natural data: bigram-model sequences with planted ``A B ... A -> B`` repeats (Aoyama et al. 2025).

A bigram model is estimated from a natural token stream restricted to its ``top_v`` most frequent
tokens (compact ids ``0 .. V-1``, most frequent first). Sequences of length ``T`` have a first half
sampled from the bigram model without repeated tokens and a second half in which repeats are
planted with the two knobs ``frequency = P(A B ... A)`` and ``reliability = P(B | A B ... A)``;
tokens that are neither are drawn fresh from the bigram model (never seen earlier in the sequence).
The precise definitions, how the realised values are measured over the second half, and how the
generator corrects for the contexts that copies themselves create are in :mod:`ihtrain.data.repeats`.
The mechanism knobs, as for the Markov data: ``repeat_start`` (repeats from an earlier position
than ``T // 2``), the copy distances (``repeat_distance``, ``max_distance``: :mod:`ihtrain.data.lags`)
and ``f(C) = frequency (C / frequency_ref_context)^frequency_exponent`` at ``C = train.context``.

Pure generator: :func:`generate_seminatural` ``(bigram, n_seqs, length, frequency, reliability,
seed) -> (tokens, truth)``. :class:`SeminaturalSource` is the trainer's ``TokenSource``: it reserves
ids ``eos = 0`` and ``sep = 1`` and shifts the compact ids by 2, and by default draws sequences from
a fixed, seeded pool of ``pool_tokens`` tokens (the paper's fixed corpus; 0 = fresh every call).
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ihtrain.data.natural import load_stream
from ihtrain.data.lags import RepeatKnobs, check_mechanism, lag_weights, planted_frequency
from ihtrain.data.repeats import SequencePool, as_rng, check_prob, plant_repeats, truth_stats
from ihtrain.data.source import DataSource, resolve_cache_dir
from ihtrain.data.successors import Successors, from_compact
from ihtrain.errors import need


# ---------------------------------------------------------------------------- the config section (data.seminatural)
@dataclass
class SeminaturalConfig(RepeatKnobs):
    """Bigram-model sequences with planted ``A B ... A -> B`` repeats (Aoyama et al. 2025)."""

    frequency: float = 0.5  # P(A B ... A): previous token was seen earlier with a successor
    reliability: float = 0.5  # P(B | A B ... A)
    top_v: int = 1000  # restrict the natural corpus's bigram model to its top-V tokens
    # natural corpus the bigram statistics come from; presets name builtin-v1 (the same bytes on every
    # machine). The default stays "builtin": every config.json holds this field, markov runs' too, so
    # a new default would rename every run
    base_source: str = "builtin"

N_SPECIAL = 2  # eos = 0, sep = 1 are reserved; ordinary tokens are 2 .. V + 1


@dataclass
class BigramModel:
    """A sparse bigram model over compact ids ``0 .. V-1`` with vectorised sampling.

    ``row_ptr``/``cols``/``cdf`` are CSR rows of ``P(b | a)`` (rows with no observed successor
    fall back to the unigram). Sampling many rows at once uses one ``searchsorted`` over the
    concatenation ``a + cdf_a`` (strictly increasing across rows).
    """

    unigram: np.ndarray  # (V,) probabilities
    row_ptr: np.ndarray  # (V + 1,)
    cols: np.ndarray  # (nnz,)
    probs: np.ndarray  # (nnz,)
    vocab_ids: np.ndarray | None = None  # (V,) original token id of each compact id, if known

    def __post_init__(self) -> None:
        self.V = int(self.unigram.size)
        rows = np.repeat(np.arange(self.V), np.diff(self.row_ptr))
        cdf = np.cumsum(self.probs)
        starts = np.concatenate([[0.0], cdf])[self.row_ptr[:-1]]
        within = cdf - starts[rows]
        within[self.row_ptr[1:] - 1] = 1.0  # exact row ends despite rounding
        self._key = rows + within
        self._ucdf = np.cumsum(self.unigram)
        self._ucdf[-1] = 1.0

    @classmethod
    def from_counts(cls, counts: Any, vocab_ids: np.ndarray | None = None) -> BigramModel:
        """From a (V, V) count matrix (dense array or scipy sparse); unigram = row sums + col sums."""
        import scipy.sparse as sp

        c = sp.csr_matrix(counts, dtype=np.float64)
        if c.shape[0] != c.shape[1]:
            raise ValueError(f"counts: must be square (V, V), got shape {c.shape}")
        if (c.data < 0).any():
            raise ValueError("counts: must be non-negative")
        c.eliminate_zeros()
        V = c.shape[0]
        uni = np.asarray(c.sum(0)).ravel() + np.asarray(c.sum(1)).ravel()
        if uni.sum() <= 0:
            raise ValueError("counts: all zero")
        uni = uni / uni.sum()
        row_tot = np.asarray(c.sum(1)).ravel()
        empty = np.flatnonzero(row_tot == 0)
        if empty.size:  # no observed successor: use the unigram row
            fill = sp.csr_matrix((np.tile(uni, empty.size), (np.repeat(empty, V), np.tile(np.arange(V), empty.size))),
                                 shape=(V, V))
            c = (c + fill).tocsr()
            row_tot = np.asarray(c.sum(1)).ravel()
        c.sort_indices()
        probs = c.data / np.repeat(row_tot, np.diff(c.indptr))
        return cls(uni, c.indptr.astype(np.int64), c.indices.astype(np.int64), probs, vocab_ids)

    @classmethod
    def from_tokens(cls, tokens: np.ndarray, top_v: int, exclude: tuple[int, ...] = (0, 1)) -> BigramModel:
        """Bigram counts of adjacent pairs in ``tokens`` whose both tokens are among the ``top_v``
        most frequent (ids in ``exclude``, the specials, never count). Compact ids by frequency."""
        tokens = np.asarray(tokens).astype(np.int64, copy=False)
        if top_v < 2:
            raise ValueError(f"top_v: must be >= 2, got {top_v}")
        freq = np.bincount(tokens)
        freq[[e for e in exclude if e < freq.size]] = 0
        order = np.argsort(-freq, kind="stable")
        order = order[freq[order] > 0][:top_v]
        compact = np.full(freq.size, -1, dtype=np.int64)
        compact[order] = np.arange(order.size)
        a, b = compact[tokens[:-1]], compact[tokens[1:]]
        keep = (a >= 0) & (b >= 0)
        V = order.size
        codes, counts = np.unique(a[keep] * V + b[keep], return_counts=True)
        import scipy.sparse as sp

        mat = sp.csr_matrix((counts.astype(np.float64), (codes // V, codes % V)), shape=(V, V))
        return cls.from_counts(mat, vocab_ids=order)

    def sample_first(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.minimum(np.searchsorted(self._ucdf, rng.random(n), side="right"), self.V - 1)

    def sample_next(self, rng: np.random.Generator, prev: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self._key, prev + rng.random(prev.size), side="right")
        idx = np.minimum(idx, self.row_ptr[prev + 1] - 1)
        return self.cols[idx]

    def dense(self) -> np.ndarray:
        """The (V, V) transition matrix (small V only; for tests)."""
        P = np.zeros((self.V, self.V))
        rows = np.repeat(np.arange(self.V), np.diff(self.row_ptr))
        P[rows, self.cols] = self.probs
        return P

    def digest(self) -> str:
        h = hashlib.sha256()
        for arr in (self.row_ptr, self.cols, np.round(self.probs, 12)):
            h.update(np.ascontiguousarray(arr).tobytes())
        return h.hexdigest()[:16]


def generate_seminatural(bigram: BigramModel, n_seqs: int, length: int, frequency: float,
                         reliability: float, seed: int | np.random.Generator | None = 0,
                         repeat_start: int = 0, lag_weights: np.ndarray | None = None
                         ) -> tuple[np.ndarray, dict]:
    """Semi-natural sequences (compact ids ``0 .. V-1``) and their ground truth.

    Returns ``(tokens (n_seqs, length) int64, truth)``; ``truth`` holds the per-sequence counts
    ``n_decisions``, ``n_contexts``, ``n_copies`` and the realised ``frequency``/``reliability``
    (exactly what :func:`ihtrain.data.repeats.measure_repeats` measures), the targets and the
    plant probability ``q`` used. Same seed, same tokens. ``repeat_start`` (0: ``length // 2``) and
    ``lag_weights`` (None: uniform) as in :func:`ihtrain.data.repeats.plant_repeats`.
    """
    if n_seqs < 1:
        raise ValueError(f"n_seqs: must be >= 1, got {n_seqs}")
    return plant_repeats(as_rng(seed), n_seqs, length, bigram.V, frequency, reliability,
                         bigram.sample_first, bigram.sample_next, start=repeat_start or None,
                         lag_weights=lag_weights)


class SeminaturalSource:
    """``TokenSource`` for semi-natural data (see the module docstring).

    Parameters: ``cfg`` a :class:`SeminaturalConfig`; ``seed``; ``cache_dir`` for the
    natural corpus; ``data_cfg`` (optional DataConfig: tokenizer settings of the base corpus);
    ``bigram`` or ``tokens`` to skip loading the corpus (tests); ``pool_tokens`` size of the fixed
    pool per sequence length (0: generate fresh sequences in every ``sample`` call); ``context``
    (``train.context``) the ``C`` of a frequency that scales with it (else the length asked for less one).
    """

    def __init__(self, cfg: Any, seed: int = 0, cache_dir: str = "", data_cfg: Any = None,
                 bigram: BigramModel | None = None, tokens: np.ndarray | None = None,
                 pool_tokens: int | None = None, context: int | None = None):
        self.cfg, self.seed, self.context = cfg, int(seed), context
        check_prob(cfg.frequency, "data.seminatural.frequency")
        self.lag_weights = lag_weights(cfg.repeat_distance, cfg.max_distance, "data.seminatural", cfg.min_distance)
        check_prob(cfg.reliability, "data.seminatural.reliability")
        if cfg.top_v < 4:
            raise ValueError(f"data.seminatural.top_v: must be >= 4, got {cfg.top_v}")
        self.pool_tokens = int(getattr(cfg, "pool_tokens", 2_000_000) if pool_tokens is None else pool_tokens)
        if self.pool_tokens < 0:
            raise ValueError(f"data.seminatural.pool_tokens: must be >= 0, got {self.pool_tokens}")
        self._cache_dir, self._data_cfg, self._tokens = cache_dir, data_cfg, tokens
        self._bigram, self._base_fp = bigram, {}
        self._pool = SequencePool(self._make, self.seed, self.pool_tokens) if self.pool_tokens else None

    # ------------------------------------------------------------------ the bigram model (lazy)
    @property
    def bigram(self) -> BigramModel:
        if self._bigram is None:
            toks = self._tokens
            if toks is None:
                stream = self._load_stream()
                toks, self._base_fp = np.asarray(stream.train), dict(stream.fingerprint)
            self._bigram = BigramModel.from_tokens(toks, self.cfg.top_v)
        return self._bigram

    def _load_stream(self) -> Any:
        if self._data_cfg is None:
            raise ValueError("SeminaturalSource: reading the natural corpus needs data_cfg (the run's DataConfig: "
                             "its tokenizer settings); or pass bigram= or tokens=")
        base = dataclasses.replace(self._data_cfg, source="seminatural",
                                   cache_dir=self._cache_dir or self._data_cfg.cache_dir)
        base.sections = {**base.sections, "seminatural": self.cfg}  # this source's own section, not the caller's
        return load_stream(_base_stream(base))  # the stream the grid prepares for this source (a natural one: itself)

    # ------------------------------------------------------------------ TokenSource protocol
    @property
    def vocab_size(self) -> int:
        return self.bigram.V + N_SPECIAL

    @property
    def special_tokens(self) -> dict[str, int]:
        return {"eos": 0, "sep": 1}

    @property
    def ordinary_range(self) -> tuple[int, int]:
        return (N_SPECIAL, self.vocab_size)

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"kind": "seminatural", "frequency": self.cfg.frequency, "reliability": self.cfg.reliability,
                "top_v": self.cfg.top_v, "top_v_effective": self.bigram.V, "base_source": self.cfg.base_source,
                "bigram_hash": self.bigram.digest(), "pool_tokens": self.pool_tokens, "seed": self.seed,
                "base": self._base_fp,
                **({"frequency_at_context": self.frequency(0)}
                   if (self.cfg.frequency_exponent or self.cfg.copies_per_token >= 0) and self.context else {})}

    def frequency(self, length: int) -> float:
        """The frequency planted in sequences of ``length`` tokens (``f(C)``, or the one that holds
        ``copies_per_token``: :func:`ihtrain.data.lags.planted_frequency`)."""
        C = self.context or length - 1
        return planted_frequency(self.cfg, C, self.cfg.repeat_start or (C + 1) // 2, "data.seminatural")

    def _make(self, rng: np.random.Generator, n_seqs: int, length: int) -> tuple[np.ndarray, dict]:
        return generate_seminatural(self.bigram, n_seqs, length, self.frequency(length), self.cfg.reliability, rng,
                                    repeat_start=self.cfg.repeat_start, lag_weights=self.lag_weights)

    def sample(self, rng: np.random.Generator, n_seqs: int, length: int, progress: float = 0.0
               ) -> tuple[np.ndarray, dict[str, float]]:
        if self._pool is not None:
            toks, truth = self._pool.draw(rng, n_seqs, length)
        else:
            toks, truth = self._make(rng, n_seqs, length)
        return toks + N_SPECIAL, truth_stats(truth)

    def val_sample(self, n_seqs: int, length: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, 0x7A1, length])  # disjoint from the pool's streams
        return self._make(rng, n_seqs, length)[0] + N_SPECIAL

    def successor_stats(self) -> Successors:
        """The bigram model's transitions (the generator's fresh-token model) and its unigram, in model ids."""
        return from_compact(self.bigram.dense(), self.bigram.unigram, N_SPECIAL, "generator transitions")


# ---------------------------------------------------------------------------- the registry's entry
def _build_source(data_cfg: Any, seed: int = 0, progress: bool = True, context: int | None = None) -> SeminaturalSource:
    cache_dir = str(resolve_cache_dir(data_cfg.cache_dir))
    return SeminaturalSource(data_cfg.seminatural, seed=seed, cache_dir=cache_dir, data_cfg=data_cfg, context=context)


def _base_stream(data_cfg: Any) -> Any:
    """Its bigram statistics come from this corpus (SeminaturalSource reads it here)."""
    return dataclasses.replace(data_cfg, source=data_cfg.seminatural.base_source)


def _check_section(sn: SeminaturalConfig, cfg: Any) -> None:
    for name in ("frequency", "reliability"):
        v = getattr(sn, name)
        need(0.0 <= v <= 1.0, f"data.seminatural.{name}", f"must be a probability in [0, 1], got {v}")
    need(sn.top_v >= 1, "data.seminatural.top_v", f"must be >= 1, got {sn.top_v}")
    need(sn.pool_tokens >= 0, "data.seminatural.pool_tokens", "must be >= 0")
    C = cfg.train.context
    need(sn.repeat_start == 0 or 2 <= sn.repeat_start <= C - 2, "data.seminatural.repeat_start",
         f"must be 0 (C // 2) or in [2, train.context - 2] = [2, {C - 2}], got {sn.repeat_start}")
    check_mechanism(sn, C, "data.seminatural")


SOURCES = (DataSource("seminatural", _build_source, section="seminatural", config=SeminaturalConfig, vocab_fields=("top_v",),
                    stream=_base_stream, check=_check_section,
                    repeat_start=lambda data_cfg, length: data_cfg.seminatural.repeat_start or length // 2,
                    recorded=True),)
