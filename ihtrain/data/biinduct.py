"""Bi-Induct: synthetic copy snippets woven into a natural token stream (Sabry and Belz 2025).

A snippet is ``S SEP S`` (forward), ``S SEP reverse(S)`` (backward), or either with probability 1/2
(balanced); ``|S| = L`` (``span_len``), so a snippet holds ``2 L + 1`` tokens. The control
``random`` writes ``S SEP S'`` with ``S'`` ``L`` tokens drawn uniformly from the ordinary range,
independent of ``S`` (for either ``span_source``): the same injection schedule, SEP and token
budget with nothing to copy, so a difference between forward/backward and ``random`` is the copy
structure, not the snippets' presence (position-wise match rate of ``S'`` to ``S`` and to
``reverse(S)`` is chance, ``1 / (hi - lo)``). ``S`` is ``L``
tokens drawn uniformly (with replacement) from the base's ordinary range (``span_source =
"random"``), or the natural tokens already at the snippet's first ``L`` positions (``"natural"``:
a span of the natural stream, then SEP and its copy overwrite the next ``L + 1`` tokens). SEP is
``sep_token``, or the base's ``special_tokens["sep"]`` when ``sep_token = -1``.

Iso-token: snippets overwrite natural tokens inside the same ``(n_seqs, length)`` batch; nothing
is added. The target injection ratio (share of tokens that belong to snippets) is
``m(progress) = m0 * (1 - progress)``. A batch gets ``k`` snippets with ``k`` the stochastic
rounding of ``m * n_seqs * length / (2 L + 1)`` (so the ratio is unbiased and within one snippet of
the target), capped by the capacity ``n_seqs * floor(length / (2 L + 1))``; snippets go to uniformly
chosen free slots and, within a sequence, to uniformly random non-overlapping offsets.
``stats = {"inject_ratio": realised, "inject_target": m}`` per batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ihtrain.data.repeats import as_rng, check_prob
from ihtrain.data.source import DataSource
from ihtrain.errors import need

MODES = ("none", "forward", "backward", "balanced", "random")


# ---------------------------------------------------------------------------- the config section (data.biinduct)
@dataclass
class BiInductConfig:
    """Synthetic copy snippets woven into a natural stream (Sabry and Belz 2025)."""

    mode: Literal["none", "forward", "backward", "balanced", "random"] = "none"  # random: S SEP S' control
    span_len: int = 20  # L
    mix_start: float = 0.5  # m0, annealed linearly to 0 over the run's budget
    span_source: Literal["random", "natural"] = "random"
    sep_token: int = -1  # -1: the tokenizer's separator (a reserved special token)


def inject_snippets(tokens: np.ndarray, ratio: float, span_len: int, sep: int, mode: str = "balanced",
                    span_source: str = "random", ordinary_range: tuple[int, int] = (2, 512),
                    seed: int | np.random.Generator | None = 0) -> tuple[np.ndarray, dict]:
    """Return a copy of ``tokens`` (n, T) with snippets woven in, and the truth of where they are.

    ``truth``: ``seq``, ``start`` (snippet start positions), ``backward`` (bool per snippet; all
    False for ``random``), ``inject_ratio`` (realised) and ``inject_target`` (``ratio``).
    """
    rng = as_rng(seed)
    if mode not in MODES:
        raise ValueError(f"data.biinduct.mode: must be one of {', '.join(MODES)}; got {mode!r}")
    if span_source not in ("random", "natural"):
        raise ValueError(f"data.biinduct.span_source: must be random or natural; got {span_source!r}")
    check_prob(ratio, "data.biinduct.mix_start")
    x = np.array(tokens, dtype=np.int64, copy=True)
    n, T = x.shape
    L = int(span_len)
    if L < 1:
        raise ValueError(f"data.biinduct.span_len: must be >= 1, got {span_len}")
    w = 2 * L + 1
    if mode != "none" and w > T:
        raise ValueError(f"data.biinduct.span_len: a snippet of 2 * {L} + 1 = {w} tokens does not fit "
                         f"in a sequence of length {T} (need span_len <= {(T - 1) // 2})")
    empty = {"seq": np.zeros(0, np.int64), "start": np.zeros(0, np.int64),
             "backward": np.zeros(0, bool), "inject_ratio": 0.0, "inject_target": float(ratio)}
    if mode == "none" or ratio <= 0:
        return x, empty
    cap = T // w
    want = ratio * n * T / w
    k = min(int(np.floor(want)) + int(rng.random() < want - np.floor(want)), n * cap)
    if k == 0:
        return x, empty
    seq = np.sort(rng.choice(n * cap, size=k, replace=False) // cap)  # uniformly chosen free slots
    per = np.bincount(seq, minlength=n)
    # non-overlapping offsets: k_s sorted gaps in [0, T - k_s w] (stars and bars), then shift by rank
    gap = rng.integers(0, T - per[seq] * w + 1)
    order = np.lexsort((gap, seq))
    seq, gap = seq[order], gap[order]
    rank = np.arange(k) - np.repeat(np.cumsum(per) - per, per)[: k]
    start = gap + rank * w
    backward = np.full(k, mode == "backward") if mode != "balanced" else rng.random(k) < 0.5
    lo, hi = ordinary_range
    pos = start[:, None] + np.arange(L)[None, :]  # (k, L) positions of S
    if span_source == "random":
        S = rng.integers(lo, hi, size=(k, L))
        x[seq[:, None], pos] = S
    else:
        S = x[seq[:, None], pos]
    x[seq, start + L] = sep
    if mode == "random":  # the control: S' independent of S, drawn after S so S is unchanged
        x[seq[:, None], pos + L + 1] = rng.integers(lo, hi, size=(k, L))
    else:
        x[seq[:, None], pos + L + 1] = np.where(backward[:, None], S[:, ::-1], S)
    return x, {"seq": seq, "start": start, "backward": backward,
               "inject_ratio": k * w / (n * T), "inject_target": float(ratio)}


class BiInductSource:
    """``TokenSource`` wrapper: the base source's tokens with Bi-Induct snippets woven in."""

    def __init__(self, base: Any, cfg: Any, seed: int = 0, context: int | None = None, **_: Any):
        self.base, self.cfg, self.seed = base, cfg, int(seed)
        if cfg.mode not in MODES:
            raise ValueError(f"data.biinduct.mode: must be one of {', '.join(MODES)}; got {cfg.mode!r}")
        check_prob(cfg.mix_start, "data.biinduct.mix_start")
        if cfg.span_len < 1:
            raise ValueError(f"data.biinduct.span_len: must be >= 1, got {cfg.span_len}")
        if cfg.span_source not in ("random", "natural"):
            raise ValueError(f"data.biinduct.span_source: must be random or natural; got {cfg.span_source!r}")
        if context is not None and cfg.mode != "none" and 2 * cfg.span_len + 1 > context + 1:
            raise ValueError(f"data.biinduct.span_len: 2 * {cfg.span_len} + 1 tokens exceed the context "
                             f"train.context={context}")
        if cfg.sep_token == -1:
            if "sep" not in base.special_tokens:
                raise ValueError("data.biinduct.sep_token: the base source has no 'sep' special token; "
                                 "set sep_token to a token id")
            self.sep = int(base.special_tokens["sep"])
        elif 0 <= cfg.sep_token < base.vocab_size:
            self.sep = int(cfg.sep_token)
        else:
            raise ValueError(f"data.biinduct.sep_token: must be -1 or in [0, {base.vocab_size}), "
                             f"got {cfg.sep_token}")

    vocab_size = property(lambda self: self.base.vocab_size)
    special_tokens = property(lambda self: self.base.special_tokens)
    ordinary_range = property(lambda self: self.base.ordinary_range)

    @property
    def fingerprint(self) -> dict[str, Any]:
        c = self.cfg
        return {"kind": "biinduct", "mode": c.mode, "span_len": c.span_len, "mix_start": c.mix_start,
                "span_source": c.span_source, "sep": self.sep, "base": self.base.fingerprint}

    def target(self, progress: float) -> float:
        return self.cfg.mix_start * (1.0 - min(max(float(progress), 0.0), 1.0))

    def sample(self, rng: np.random.Generator, n_seqs: int, length: int, progress: float = 0.0
               ) -> tuple[np.ndarray, dict[str, float]]:
        toks, stats = self.base.sample(rng, n_seqs, length, progress)
        c = self.cfg
        toks, truth = inject_snippets(toks, self.target(progress), c.span_len, self.sep, c.mode,
                                      c.span_source, self.ordinary_range, rng)
        return toks, {**stats, "inject_ratio": truth["inject_ratio"], "inject_target": truth["inject_target"]}

    def val_sample(self, n_seqs: int, length: int) -> np.ndarray:
        return self.base.val_sample(n_seqs, length)  # held-out perplexity on natural text only


# ---------------------------------------------------------------------------- the registry's entry
def _wrap(base: Any, data_cfg: Any, seed: int = 0, context: int | None = None) -> Any:
    """``base`` with snippets woven in, or ``base`` itself when ``data.biinduct.mode = "none"``."""
    bi = data_cfg.biinduct
    return base if bi.mode == "none" else BiInductSource(base, bi, seed=seed, context=context)


def _check_section(bi: BiInductConfig, cfg: Any) -> None:
    need(0.0 <= bi.mix_start <= 1.0, "data.biinduct.mix_start", f"must be a probability in [0, 1], got {bi.mix_start}")
    if bi.mode != "none":
        t = cfg.train
        need(bi.span_len >= 1, "data.biinduct.span_len", f"must be >= 1, got {bi.span_len}")
        need(2 * bi.span_len + 1 <= t.context + 1, "data.biinduct.span_len",
             f"a snippet S SEP S has 2 * span_len + 1 = {2 * bi.span_len + 1} tokens, longer than "
             f"train.context + 1 = {t.context + 1}")


def _copies_anywhere(data_cfg: Any) -> bool:
    return data_cfg.biinduct.mode in ("forward", "balanced")  # a forward copy lands at any offset


SOURCES = (DataSource("biinduct", _wrap, section="biinduct", config=BiInductConfig, check=_check_section,
                    recorded=True, wraps=True, copies_anywhere=_copies_anywhere),)
