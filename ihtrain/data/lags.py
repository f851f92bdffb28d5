"""Copy distances: the lag rule a generator plants repeats with, and the builtin text's lag pmf.

The *copy distance* of a repeated-bigram event is ``d = a - j``: the query ``a`` repeats the bigram
``(x[j], x[j+1]) = (x[a], x[a+1])`` of the nearest earlier occurrence ``j < a`` (an induction head
at ``a`` attends ``d - 1`` tokens back, to ``j + 1``). In a training window an event at ``a`` exists
exactly when the stream's nearest earlier occurrence lies within the window (``d <= a``), so the
window's distances at ``a`` are the stream's lag pmf conditioned on ``d <= a`` -- the rule
:func:`ihtrain.data.repeats.plant_repeats` applies with ``lag_weights`` (its plants draw ``d`` from the
weights on ``[2, p]``).

The builtin pmf (``builtin_lag_pmf.json`` beside this module, about 17 kB) is :func:`lag_pmf` of the
training split of the builtin corpus with the default tokenizer (BPE 512), ``d`` in ``[2, 1024]``
(``d = 1``, ``A A A``, cannot be planted: no consecutive duplicates; longer lags fall outside every
context we train). The file records the corpus and tokenizer it came from: the legacy ``builtin``
source, whose text here (sha256 ``5913a143...``) is the shipped ``builtin-v1``; regenerate it with
``python -m ihtrain.lag_pmf``, which reads ``builtin-v1`` (the same text on every machine).

Config: ``repeat_distance = "uniform"`` (the shipped rule: any earlier position, no weights) or
``"builtin-text"`` (the pmf), and ``max_distance`` (0: no cap) caps either, ``min_distance`` (0: none)
floors either; see :func:`lag_weights`.

The decoupled setting (issue 66): the shipped layout moves copy distance (about 0.3 C), the repeat
start (C / 2) and C together. A fixed ``repeat_start``, a distance band ``[min_distance,
max_distance]`` fixed in tokens and ``copies_per_token`` (the frequency set per C so the window holds
that many copies per predicted token, :func:`planted_frequency`) hold all three fixed across C
(measured per C with ``python -m ihtrain.copystats``; docs/DESIGN.md, "Data").
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ihtrain.data.repeats import frequency_at
from ihtrain.errors import need

BUILTIN_LAG_FILE = Path(__file__).with_name("builtin_lag_pmf.json")
MAX_LAG = 1024
DISTANCES = ("uniform", "builtin-text")


def bigram_lags(tokens: np.ndarray) -> np.ndarray:
    """Copy distance of every repeated bigram of a 1-D stream ``tokens``: for each position ``a`` whose
    bigram ``(x[a], x[a+1])`` occurred earlier, ``a - j`` for its nearest earlier occurrence ``j``."""
    x = np.asarray(tokens, dtype=np.int64).ravel()
    if x.size < 3:
        return np.zeros(0, dtype=np.int64)
    big = x[:-1] * (int(x.max()) + 1) + x[1:]  # one id per bigram, indexed by its first position
    order = np.lexsort((np.arange(big.size), big))  # by bigram, then position
    same = big[order][1:] == big[order][:-1]
    return (order[1:] - order[:-1])[same]


def lag_pmf(tokens: np.ndarray, max_lag: int = MAX_LAG) -> tuple[np.ndarray, int]:
    """``(pmf, n_events)``: the distribution of :func:`bigram_lags` on ``d in [2, max_lag]`` as an array
    indexed by ``d`` (``pmf[0] = pmf[1] = 0``), and how many events it counts."""
    if max_lag < 2:
        raise ValueError(f"max_lag: must be >= 2, got {max_lag}")
    d = bigram_lags(tokens)
    d = d[(d >= 2) & (d <= max_lag)]
    if d.size == 0:
        raise ValueError("tokens: no repeated bigram within the lags [2, max_lag]; a longer stream is needed")
    counts = np.bincount(d, minlength=max_lag + 1).astype(np.float64)
    return counts / counts.sum(), int(d.size)


@functools.lru_cache(maxsize=1)
def builtin_lag_pmf() -> np.ndarray:
    """The shipped builtin-text lag pmf (indexed by distance; see the module docstring)."""
    try:
        pmf = np.asarray(json.loads(BUILTIN_LAG_FILE.read_text())["pmf"], dtype=np.float64)
    except (OSError, ValueError, KeyError) as e:
        raise ValueError(f"{BUILTIN_LAG_FILE}: cannot read the builtin lag pmf ({e}); regenerate it with "
                         f"python -m ihtrain.lag_pmf") from None
    pmf.setflags(write=False)
    return pmf


def lag_weights(repeat_distance: str, max_distance: int, name: str = "data",
                min_distance: int = 0) -> np.ndarray | None:
    """Weights by copy distance for ``plant_repeats`` (``None``: the shipped uniform rule).

    ``repeat_distance``: ``"uniform"`` or ``"builtin-text"``; ``max_distance > 0`` zeroes every ``d`` above it,
    ``min_distance > 0`` every ``d`` below it. ``name`` prefixes the config field in error messages
    (``data.markov``)."""
    if repeat_distance not in DISTANCES:
        raise ValueError(f"{name}.repeat_distance: must be one of {', '.join(DISTANCES)}, got {repeat_distance!r}")
    if max_distance != 0 and max_distance < 2:
        raise ValueError(f"{name}.max_distance: must be 0 (no cap) or >= 2 (copies sit 2 or more apart), "
                         f"got {max_distance}")
    if min_distance != 0 and not 2 <= min_distance <= (max_distance or MAX_LAG):
        raise ValueError(f"{name}.min_distance: must be 0 (none) or in [2, max_distance] = [2, {max_distance or MAX_LAG}], "
                         f"got {min_distance}")
    if repeat_distance == "uniform":
        if not max_distance and not min_distance:
            return None
        w = np.ones((max_distance or MAX_LAG) + 1)
    else:
        w = builtin_lag_pmf().copy()
        if max_distance:
            w = w[: max_distance + 1]
    w[: max(2, min_distance)] = 0.0
    return w


def planted_frequency(sect: Any, context: int, start: int, name: str) -> float:
    """The frequency a repeat-planting section ``sect`` plants at context ``C`` (``context``) with its
    repeats from position ``start`` (the first decision point ``h``).

    ``copies_per_token >= 0``: the frequency that gives the window that many copies per predicted
    token, ``f = k C / (r (C - h'))`` with ``h' = max(h, min_distance)`` (copies need a context at
    ``p - 1``, which has probability ``f`` from ``h'`` on, where a plant first finds an earlier
    position within the band); so copies per token stay at ``k`` as C moves while the repeat start and
    the distance band stay fixed in tokens. Else ``f(C) = frequency (C / C0)^k``
    (:func:`ihtrain.data.repeats.frequency_at`). Raises ``ValueError`` naming the field when ``f > 1``."""
    k = getattr(sect, "copies_per_token", -1.0)
    if k < 0:
        return frequency_at(sect.frequency, getattr(sect, "frequency_exponent", 0.0),
                            getattr(sect, "frequency_ref_context", 64), context, f"{name}.frequency")
    h = max(start, getattr(sect, "min_distance", 0))
    room = sect.reliability * (context - h)
    f = k * context / room if room > 0 else float("inf")
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"{name}.copies_per_token: {k} copies per token at C = {context} need a frequency "
                         f"{k} x {context} / ({sect.reliability} x ({context} - {h})) = {f:.3f} > 1; lower it, "
                         f"the repeat start or min_distance, or raise the reliability")
    return f


@dataclass
class RepeatKnobs:
    """The repeat-layout fields the Markov and semi-natural sections share (one declaration; each
    source's config extends it). Defaults: the shipped generator."""

    repeat_start: int = 0  # first position that may repeat; 0: C // 2 (a repeat-free first half)
    pool_tokens: int = 2_000_000  # pre-generated token pool sampled from; 0: fresh sequences each call
    # the mechanism knobs (issue 53): copy distances and density vs C
    repeat_distance: Literal["uniform", "builtin-text"] = "uniform"  # builtin-text: the builtin corpus's lag pmf
    max_distance: int = 0  # cap on the copy distance a - j; 0: none
    frequency_exponent: float = 0.0  # k in f(C) = frequency x (C / frequency_ref_context)^k
    frequency_ref_context: int = 64  # C0: the context at which f(C) = frequency
    # the decoupled setting (issue 66): a distance band fixed in tokens, copies per token fixed in C
    min_distance: int = 0  # floor on the copy distance a - j; 0: none (2)
    copies_per_token: float = -1.0  # >= 0: frequency set per C for this many copies per token (planted_frequency)


def check_mechanism(sect: Any, context: int, name: str) -> None:
    """Config checks of the mechanism knobs of a repeat-planting source's section ``sect`` at
    ``train.context``; raises ``ConfigError`` naming the field (``name``: ``data.markov``)."""
    need(sect.max_distance == 0 or sect.max_distance >= 2, f"{name}.max_distance",
         f"must be 0 (no cap) or >= 2 (copies sit 2 or more apart), got {sect.max_distance}")
    need(sect.min_distance == 0 or 2 <= sect.min_distance <= (sect.max_distance or MAX_LAG), f"{name}.min_distance",
         f"must be 0 (none) or in [2, max_distance] = [2, {sect.max_distance or MAX_LAG}], got {sect.min_distance}")
    need(sect.copies_per_token < 0 or (sect.copies_per_token <= 1 and sect.frequency_exponent == 0
                                       and sect.reliability > 0), f"{name}.copies_per_token",
         f"must be < 0 (off) or in [0, 1] with frequency_exponent 0 and reliability > 0 (it sets the frequency "
         f"per C), got {sect.copies_per_token} (frequency_exponent {sect.frequency_exponent}, "
         f"reliability {sect.reliability})")
    need(sect.frequency_ref_context > 0, f"{name}.frequency_ref_context", f"must be > 0, got {sect.frequency_ref_context}")
    need(np.isfinite(sect.frequency_exponent), f"{name}.frequency_exponent",
         f"must be a finite number, got {sect.frequency_exponent}")
    try:
        planted_frequency(sect, context, sect.repeat_start or (context + 1) // 2, name)
    except ValueError as e:
        field = f"{name}.copies_per_token" if sect.copies_per_token >= 0 else f"{name}.frequency_exponent"
        need(False, field, str(e).removeprefix(f"{field}: "))
