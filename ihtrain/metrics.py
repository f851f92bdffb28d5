"""Per-head mechanism metrics and model-level scores, exactly as defined in docs/DESIGN.md.

Every metric is a function ``fn(model, probes, acts)`` registered under its fixed name; it returns
an ``(L, H)`` numpy array (per head) or a float (model level). ``acts`` is an :class:`Activations`
that runs ``model.run_with_cache`` (hooks on the hook points ``blocks.{l}.attn.hook_pattern`` and
``blocks.{l}.attn.hook_z``) once per probe, on first use, and shares the result across metrics.

Index conventions (positions are 0-based, ``n = probes.n``, ``m = probes.n_copy``):

- repeat probe ``x_0..x_{n-1} x_0..x_{n-1}``: position ``s`` in the second copy holds ``x_{s-n}``.
  PS reads attention ``s -> s - n + 1`` and the previous-token score ``s -> s - 1``, both for
  ``s in [n, 2n-1]``. LA and AR use ``s in [n, 2n-2]`` whose next token ``x_{s-n+1}`` is the
  ``(s-n+1)``-th of the sequence's ``n`` tokens.
- see :func:`copy_fwd` and :func:`anti_induction` for the copy probes, :func:`anti_copy` for the
  copy half of the anti-induction score, :func:`dup_bwd` and :func:`copy_bwd_logprob` for the
  backward-copy measures that need no positional route. Each measure's chance level (what a
  uniform head or uniform guessing scores) is :mod:`ihstats.base.chance`'s.
- in-distribution probes from held-out text (``val_tokens``, (n, T+1)): the natural repeat probe
  :func:`ihtrain.probes.natural_repeat` (:func:`ps_nat`, :func:`repeat_nat_logprob`) and the
  token-index ICL score :func:`icl_token_index`; like ``val_loss`` they need ``val_tokens``.
- general probe (issue 65, :func:`ihtrain.probes.general_probe`): rows ``[i R, (i + 1) R)`` repeat a
  span of ``k`` tokens at distance ``d_i``, the second occurrence at ``[C - k, C - 1]``; PS at
  distance ``d`` reads attention ``s -> s - d + 1`` for ``s in [C - k, C - 2]`` (:func:`ps_gen_near`).
- successor control (issue 65): :func:`ps_indist_ctrl` and the per-run constants (chance levels,
  successor-lookup ceilings) need the source's successor statistics
  (:class:`ihtrain.data.successors.Successors`, ``successors=``) as well as ``val_tokens``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ihstats.base.contract import METRIC_NAMES, METRICS, OPT_IN_METRICS
from ihtrain.data.repeats import copy_labels
from ihtrain.data.successors import Successors
from ihtrain.induction_metrics import (attn_score, ceil_offset_gen, chance_gen, chance_indist, constant, indist_chunk,
                                       indist_gain, ps_gen_far, ps_gen_mid, ps_gen_near, ps_indist, ps_indist_ctrl)
from ihtrain.model import GPT, Cache
from ihtrain.probes import ProbeSet, natural_repeat


class Activations:
    """Lazily computed activations (:meth:`GPT.run_with_cache`), shared by all metrics of one evaluation.

    Hooks attached to the model while it evaluates (an ablation) show in them."""

    def __init__(self, model: GPT, probes: ProbeSet, val_tokens: torch.Tensor | np.ndarray | None = None,
                 repeat_logits: bool = True, copy_start: int = 0, successors: Successors | None = None):
        self.model, self.probes, self.val_tokens = model, probes, val_tokens
        self.repeat_logits, self.copy_start, self.successors = repeat_logits, copy_start, successors
        # val_loss reads the in-distribution pass's losses when that pass runs on the same sequences
        self.val_from_indist = False
        self.memo: dict[str, object] = {}  # intermediate results shared by metrics (e.g. AR)

    @cached_property
    def repeat(self) -> tuple[torch.Tensor | None, Cache]:
        """(logits or None, cache) on the repeat probe; logits (N, n-1, V) at positions [n, 2n-2]
        only, the positions AR scores (unembedding the rest would be wasted work)."""
        n = self.probes.n
        return self.model.run_with_cache(self.probes.repeat, logits=self.repeat_logits,
                                         logit_positions=slice(n, 2 * n - 1))

    @cached_property
    def copy(self) -> Cache:
        """Cache on ``cat(copy_fwd, copy_bwd)``: batch rows ``[:N]`` forward, ``[N:]`` backward
        (``N = probes.n_copy_seqs``)."""
        both = torch.cat([self.probes.copy_fwd, self.probes.copy_bwd])  # (2N, 2m + 1)
        return self.model.run_with_cache(both, logits=False)[1]  # patterns only: skip the unembedding

    @cached_property
    def repeat_nat(self) -> tuple[torch.Tensor, Cache, torch.Tensor]:
        """(logits at [n, 2n-2], cache, probe) on the natural repeat probe built from ``val_tokens``."""
        if self.val_tokens is None:
            raise ValueError("natural repeat probe: needs val_tokens (n_seqs, T + 1); none were given")
        n = self.probes.n
        probe = natural_repeat(self.val_tokens, n).to(self.probes.repeat.device)  # (N_val, 2n)
        logits, cache = self.model.run_with_cache(probe, logits=True, logit_positions=slice(n, 2 * n - 1))
        return logits, cache, probe

    @cached_property
    def indist(self) -> dict[str, torch.Tensor | float]:
        """Sums over the copy queries of the held-out sequences ``val_tokens[:INDIST_SEQS]`` (inputs
        ``[:, :T]``), labelled by :func:`ihtrain.data.repeats.copy_labels` from position
        ``copy_start`` (the data's repeat region): ``mass`` (L, H) each head's attention on their
        keys, ``gain`` the loss gains, ``count`` the queries, ``chance`` their uniform-attention
        mass; ``mass_ctrl`` and ``count_ctrl`` over the controlled queries (:attr:`ctrl_queries`;
        0 without successor statistics). See :func:`ps_indist`, :func:`ps_indist_ctrl`,
        :func:`indist_gain`. In chunks of sequences, so a large model's patterns and logits never
        sit in memory at once."""
        val = self.indist_val.to(self.probes.repeat.device)
        N, T = val.shape[0], val.shape[1] - 1
        cfg = self.model.cfg
        per_seq = max(cfg.n_layer * cfg.n_head * T * T, T * self.probes.vocab_size)
        chunk = max(1, min(N, INDIST_CHUNK_ELEMENTS // per_seq))
        ctrl = self.ctrl_queries
        total: dict[str, torch.Tensor | float] = {}
        for i in range(0, N, chunk):
            part = indist_chunk(self.model, val[i:i + chunk], self.copy_start,
                                 None if ctrl is None else ctrl[i:i + chunk].to(val.device))
            total = {k: total.get(k, 0) + v for k, v in part.items()}
        return total

    @cached_property
    def indist_val(self) -> torch.Tensor:
        """The held-out sequences the in-distribution probes read: ``val_tokens[:INDIST_SEQS]`` (n, T + 1)."""
        if self.val_tokens is None:
            raise ValueError("in-distribution probes: need val_tokens (n_seqs, T + 1); none were given")
        return torch.as_tensor(self.val_tokens, dtype=torch.long)[:INDIST_SEQS]

    @cached_property
    def ctrl_queries(self) -> torch.Tensor | None:
        """(n, T + 1) bool: copy queries whose copied token is not a likely successor (None without
        successor statistics); computed once per run (:meth:`Successors.labelled` remembers it)."""
        if self.successors is None:
            return None
        return torch.from_numpy(self.labelled["ctrl"])

    @cached_property
    def labelled(self) -> dict:
        """:meth:`Successors.labelled` of the in-distribution sequences: ``ctrl`` and ``ceilings``."""
        if self.successors is None:
            raise ValueError("successor control: needs the source's successor statistics (successors=); none were given")
        return self.successors.labelled(self.indist_val.cpu().numpy(), self.copy_start)

    @cached_property
    def general(self) -> Cache:
        """Cache on the general probe (patterns only): rows split across the layout's distances."""
        if self.probes.general is None:
            raise ValueError("general probe: this ProbeSet has none (build it with ihtrain.probes.make_probes)")
        return self.model.run_with_cache(self.probes.general, logits=False)[1]

    @cached_property
    def copy_logprobs(self) -> torch.Tensor:
        """Log-prob of each next token on ``cat(copy_fwd, copy_bwd)``: (2N, 2m) (position s predicts s + 1)."""
        both = torch.cat([self.probes.copy_fwd, self.probes.copy_bwd])  # (2N, 2m + 1)
        return _next_logprobs(self.model, both)


def _next_logprobs(model: GPT, tokens: torch.Tensor) -> torch.Tensor:
    """tokens (B, T) -> log-prob the model gives each actual next token, (B, T - 1)."""
    logits = model(tokens[:, :-1])[0].float()  # (B, T-1, V)
    return F.log_softmax(logits, dim=-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)


# ------------------------------------------------------------------------------ attention scores
def ps(model: GPT, probes: ProbeSet, acts: Activations) -> np.ndarray:
    """Prefix matching: attention from s to s - n + 1, s in [n, 2n-1]."""
    n = probes.n
    q = torch.arange(n, 2 * n, device=probes.repeat.device)
    return attn_score(acts.repeat[1].attn, q, q - n + 1)


def prev_token(model: GPT, probes: ProbeSet, acts: Activations) -> np.ndarray:
    """Previous-token score: attention from s to s - 1, s in [n, 2n-1] (same queries as PS)."""
    n = probes.n
    q = torch.arange(n, 2 * n, device=probes.repeat.device)
    return attn_score(acts.repeat[1].attn, q, q - 1)


def copy_fwd(model: GPT, probes: ProbeSet, acts: Activations) -> np.ndarray:
    """Forward copy score on ``S SEP S``.

    Layout: positions ``0..m-1`` hold ``x_0..x_{m-1}``, ``m`` holds SEP, ``m+1+j`` holds ``x_j``.
    The query holding ``x_j`` is ``q = m+1+j``; its earlier occurrence is at ``j`` and the position
    just after, ``j + 1 = q - m``, holds the next token of the copy ``x_{j+1}``. Queries with
    ``j in [0, m-2]``, i.e. ``q in [m+1, 2m-1]`` (for ``j = m-1`` the next position is SEP).
    """
    m, N = probes.n_copy, probes.n_copy_seqs
    q = torch.arange(m + 1, 2 * m, device=probes.copy_fwd.device)
    return attn_score(acts.copy.attn[:, :N], q, q - m)


def anti_induction(model: GPT, probes: ProbeSet, acts: Activations) -> np.ndarray:
    """Anti-induction score on ``S SEP reverse(S)``.

    Position ``m+1+i`` holds ``x_{m-1-i}``, so the query holding ``x_j`` is ``q = 2m - j``. Its
    earlier occurrence is at ``j``; the position just before, ``j - 1 = 2m - 1 - q``, holds
    ``x_{j-1}``, the token that comes next in the reversed copy (at ``q + 1``). Queries with
    ``j in [1, m-1]``, i.e. ``q in [m+1, 2m-1]`` (``x_0`` at ``q = 2m`` has no position before).
    """
    m, N = probes.n_copy, probes.n_copy_seqs
    q = torch.arange(m + 1, 2 * m, device=probes.copy_bwd.device)
    return attn_score(acts.copy.attn[:, N:], q, 2 * m - 1 - q)


def dup_bwd(model: GPT, probes: ProbeSet, acts: Activations) -> np.ndarray:
    """Duplicate-token attention on ``S SEP reverse(S)``: the query holding ``x_j`` (``q = 2m - j``)
    to ``x_j``'s earlier occurrence ``j = 2m - q``, for ``q in [m+1, 2m]``. Unlike
    :func:`anti_induction` (whose key at ``j - 1`` cannot carry ``x_j`` under causal masking) a
    head can score 1 here: the first step of a backward copy (find the token, then read its
    predecessor)."""
    m, N = probes.n_copy, probes.n_copy_seqs
    q = torch.arange(m + 1, 2 * m + 1, device=probes.copy_bwd.device)
    return attn_score(acts.copy.attn[:, N:], q, 2 * m - q)


def ps_nat(model: GPT, probes: ProbeSet, acts: Activations) -> np.ndarray:
    """PS on the natural repeat probe (held-out spans of ``n`` tokens, repeated): attention from s to
    s - n + 1, s in [n, 2n-1]; in distribution for every condition (tokens may recur in a span)."""
    n = probes.n
    q = torch.arange(n, 2 * n, device=probes.repeat.device)
    return attn_score(acts.repeat_nat[1].attn, q, q - n + 1)


# ------------------------------------------------------------------------------ log-prob scores
def repeat_nat_logprob(model: GPT, probes: ProbeSet, acts: Activations) -> float:
    """Mean log-prob of the next token over the natural repeat probe's second copy, s in [n, 2n-2]."""
    logits, _, probe = acts.repeat_nat
    n = probes.n
    logp = F.log_softmax(logits.float(), dim=-1)  # (N, n-1, V)
    return float(logp.gather(-1, probe[:, n + 1:2 * n, None]).mean())


def copy_fwd_logprob(model: GPT, probes: ProbeSet, acts: Activations) -> float:
    """Mean log-prob of the copy's next token on ``S SEP S`` at q in [m+1, 2m-1] (targets x_{j+1})."""
    m, N = probes.n_copy, probes.n_copy_seqs
    return float(acts.copy_logprobs[:N, m + 1:2 * m].mean())


def copy_bwd_logprob(model: GPT, probes: ProbeSet, acts: Activations) -> float:
    """Backward-copy log-prob: the model's own mean log-prob of the reversed continuation on
    ``S SEP reverse(S)`` at q in [m+1, 2m-1] (the query holds x_j, the target is x_{j-1}); near 0
    for a model that copies backward, near -log(V) or below for one that does not."""
    m, N = probes.n_copy, probes.n_copy_seqs
    return float(acts.copy_logprobs[N:, m + 1:2 * m].mean())


#: token-index ICL windows (fractions of the held-out sequence length T): early and late positions
ICL_EARLY, ICL_LATE = (0.05, 0.15), (0.85, 1.0)


@torch.inference_mode()
def icl_token_index(model: GPT, probes: ProbeSet, acts: Activations) -> float:
    """Token-index ICL score (Olsson et al. 2022, scaled to the context): mean next-token loss at
    late positions (the last 15% of ``val_tokens``' T predictions) minus early ones (5%-15%);
    negative when later tokens are predicted better from the longer context."""
    val = acts.val_tokens
    if val is None:
        raise ValueError("icl_token_index: needs val_tokens (n_seqs, T + 1); none were given")
    val = torch.as_tensor(val, dtype=torch.long).to(next(model.parameters()).device)
    T = val.shape[1] - 1
    if T < 10:
        raise ValueError(f"val_tokens: icl_token_index needs T >= 10 predictions per sequence, got {T}")
    nll = -torch.cat([_next_logprobs(model, val[i:i + 64]) for i in range(0, val.shape[0], 64)])  # (n, T)
    (e0, e1), (l0, l1) = [(int(a * T), max(int(a * T) + 1, int(b * T))) for a, b in (ICL_EARLY, ICL_LATE)]
    return float(nll[:, l0:l1].mean() - nll[:, e0:e1].mean())


# ------------------------------------------------------------------------------ logit attribution
def _attribution_share(model: GPT, o: torch.Tensor, candidates: torch.Tensor, correct: torch.Tensor) -> np.ndarray:
    """Each head's share of positive logit attribution on the correct token, mean over batch and
    positions: o (L, B, S, H, dh) per-head outputs, candidates (B, n) the tokens competing (the
    probe row's own), correct (S,) the index into them of each position's correct next token.
    By symmetry a head with no preference among the candidates scores 1 / n on average."""
    L = model.cfg.n_layer
    W_O = torch.stack([model.W_O(l) for l in range(L)]).float()  # (L, H, dh, d)
    U = model.W_U.float()[candidates]  # (B, n, d): unembedding rows of each row's candidate tokens
    # compose W_O with the n candidate rows first: cheaper than forming z = o W_O (dh < d)
    OU = torch.einsum("lhed,bnd->lbhen", W_O, U)  # (L, B, H, dh, n)
    proj = torch.einsum("lbshe,lbhen->lbshn", o, OU)  # (L, B, S, H, n): z . W_U[x_i]
    pos = torch.relu(proj - proj.mean(dim=-1, keepdim=True))
    total = pos.sum(dim=-1)  # (L, B, S, H)
    right = pos[:, :, torch.arange(o.shape[2], device=o.device), :, correct]  # (S, L, B, H): advanced dims lead
    # no positive attribution at all scores 0; a NaN total (a non-finite model) stays NaN
    share = torch.where(total == 0, 0.0, right.permute(1, 2, 0, 3) / total.clamp_min(1e-30))
    return share.mean(dim=(1, 2)).cpu().numpy()  # (L, H)


@torch.inference_mode()
def la(model: GPT, probes: ProbeSet, acts: Activations) -> np.ndarray:
    """Logit attribution of each head's own output to the correct next token, s in [n, 2n-2]."""
    n = probes.n
    o = acts.repeat[1].head_out[:, :, n:2 * n - 1].float()  # (L, B, S=n-1, H, dh)
    # the correct token at s = n + i is x_{i+1}
    return _attribution_share(model, o, probes.repeat[:, :n], torch.arange(1, n, device=o.device))


@torch.inference_mode()
def anti_copy(model: GPT, probes: ProbeSet, acts: Activations) -> np.ndarray:
    """Anti-induction copy score on ``S SEP reverse(S)`` (the copy half of Sabry and Belz's
    anti-induction score): each head's share of positive logit attribution, among the ``m`` tokens
    of ``S``, on the reversed continuation ``x_{j-1}`` at the query holding ``x_j`` (``q = 2m - j``,
    ``q in [m+1, 2m-1]``, as :func:`anti_induction`). Chance (no preference): ``1 / m``; a head that
    copies backward scores near 1."""
    m, N = probes.n_copy, probes.n_copy_seqs
    o = acts.copy.head_out[:, N:, m + 1:2 * m].float()  # (L, N, S=m-1, H, dh)
    # q = m + 1 + i holds x_{m-1-i}; its reversed continuation is x_{m-2-i}
    return _attribution_share(model, o, probes.copy_bwd[:, :m], torch.arange(m - 2, -1, -1, device=o.device))


# ------------------------------------------------------------------------------ model level
def ar_from_logits(logits: torch.Tensor, targets: torch.Tensor) -> tuple[float, float]:
    """Top-1 accuracy and mean rank (number of logits strictly greater than the target's).

    logits (..., V), targets (...) long. Positions with a non-finite logit score NaN: NaN compares
    false, so a NaN model would otherwise rank every target first (rank 0, perfect recall).
    """
    tgt = logits.gather(-1, targets.unsqueeze(-1))  # (..., 1)
    rank = (logits > tgt).sum(dim=-1).float()  # (...)
    acc = (logits.argmax(dim=-1) == targets).float()
    finite = torch.isfinite(logits).all(dim=-1)
    nan = torch.tensor(float("nan"), device=logits.device)
    return float(torch.where(finite, acc, nan).mean()), float(torch.where(finite, rank, nan).mean())


def _ar(probes: ProbeSet, acts: Activations) -> tuple[float, float]:
    if "ar" not in acts.memo:
        logits = acts.repeat[0]
        if logits is None:
            raise ValueError("Activations(repeat_logits=False) has no logits; AR needs them")
        n = probes.n
        # logits are at s in [n, 2n-2] (see Activations.repeat); s predicts the token at s + 1
        acts.memo["ar"] = ar_from_logits(logits.float(), probes.repeat[:, n + 1:2 * n])
    return acts.memo["ar"]  # type: ignore[return-value]


def ar_acc(model: GPT, probes: ProbeSet, acts: Activations) -> float:
    return _ar(probes, acts)[0]


def ar_rank(model: GPT, probes: ProbeSet, acts: Activations) -> float:
    return _ar(probes, acts)[1]


@torch.inference_mode()
def val_loss(model: GPT, probes: ProbeSet, acts: Activations, chunk: int = 64) -> float:
    """Mean next-token cross-entropy over held-out tokens ``acts.val_tokens`` (n, T+1)."""
    if acts.val_from_indist:  # the in-distribution pass computed every next token's loss already
        s = acts.indist
        return s["nll"] / s["tokens"]
    val = acts.val_tokens
    if val is None:
        raise ValueError("val_loss: needs val_tokens (n_seqs, T + 1); none were given")
    device = next(model.parameters()).device
    val = torch.as_tensor(val, dtype=torch.long).to(device)
    if val.dim() != 2 or val.shape[1] < 2:
        raise ValueError(f"val_tokens: expected shape (n_seqs, T + 1) with T >= 1, got {tuple(val.shape)}")
    total, count = 0.0, 0
    for i in range(0, val.shape[0], chunk):
        x, y = val[i:i + chunk, :-1], val[i:i + chunk, 1:]
        logits, _ = model(x)  # (b, T, V)
        total += float(F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), reduction="sum"))
        count += y.numel()
    return total / count


# ------------------------------------------------------------------------------ weights only
@torch.inference_mode()
def ov_eigenvalues(model: GPT) -> torch.Tensor:
    """Nonzero-spectrum eigenvalues of each head's ``W_E W_V W_O W_U^T``: (L, H, d_head) complex.

    The (V, V) matrix ``A B`` with ``A = W_E W_V[h]`` (V, dh) and ``B = W_O[h] W_U^T`` (dh, V) has
    the same nonzero eigenvalues as ``B A = W_O[h] (W_U^T W_E) W_V[h]`` (dh, dh), so we never form
    a V x V matrix. (This is Elhage et al.'s ``W_U W_OV W_E`` in our row-vector convention.)
    """
    G = model.W_U.double().T @ model.W_E.double()  # (d, d)
    W_V = torch.stack([model.W_V(l) for l in range(model.cfg.n_layer)]).double()  # (L, H, d, dh)
    W_O = torch.stack([model.W_O(l) for l in range(model.cfg.n_layer)]).double()  # (L, H, dh, d)
    small = (W_O @ G @ W_V).cpu()  # (L, H, dh, dh)
    # a non-finite head gets NaN eigenvalues; LAPACK is not given it (it would fail, printing errors)
    finite = torch.isfinite(small).all(dim=(-2, -1))
    eig = torch.full(small.shape[:-1], complex(math.nan, math.nan), dtype=torch.complex128)
    if finite.any():
        eig[finite] = torch.linalg.eigvals(small[finite])
    return eig


def ov_copy_from_eigenvalues(eig: torch.Tensor) -> np.ndarray:
    """sum(eig) / sum(|eig|) over the last axis (0 where all eigenvalues are 0, NaN where any is NaN)."""
    num = eig.sum(dim=-1).real.numpy()  # the trace: real
    den = eig.abs().sum(dim=-1).numpy()
    return np.where(den == 0, 0.0, num / np.where(den == 0, 1.0, den))


def ov_copy(model: GPT, probes: ProbeSet, acts: Activations) -> np.ndarray:
    """OV copying score per head from weights alone: sum(eig) / sum(|eig|) (Elhage et al. 2021)."""
    return ov_copy_from_eigenvalues(ov_eigenvalues(model))


# ------------------------------------------------------------------------------ registry
MetricFn = Callable[[GPT, ProbeSet, Activations], "np.ndarray | float"]


@dataclass(frozen=True)
class Metric:
    fn: MetricFn
    per_head: bool  # (L, H) array; else a model-level float (layer = head = -1 in tidy rows)


# the torch function behind each of the contract's metric names (ihstats.base.contract.METRICS: names,
# order and per-head flags are fixed there, for the statistics side to read without torch)
_FUNCTIONS: dict[str, MetricFn] = {
    "ps": ps, "prev_token": prev_token, "la": la, "copy_fwd": copy_fwd, "anti_induction": anti_induction,
    "ov_copy": ov_copy, "ar_acc": ar_acc, "ar_rank": ar_rank, "val_loss": val_loss,
    "dup_bwd": dup_bwd, "ps_nat": ps_nat, "repeat_nat_logprob": repeat_nat_logprob,
    "copy_fwd_logprob": copy_fwd_logprob, "copy_bwd_logprob": copy_bwd_logprob, "icl_token_index": icl_token_index,
    "ps_indist": ps_indist, "indist_gain": indist_gain, "anti_copy": anti_copy,
    "ps_gen_near": ps_gen_near, "ps_gen_mid": ps_gen_mid, "ps_gen_far": ps_gen_far, "ps_indist_ctrl": ps_indist_ctrl,
    "chance_indist": chance_indist, "ceil_offset_gen": ceil_offset_gen,
    **{name: constant(name) for name in ("chance_ctrl", "ceil_succ_indist", "ceil_succ_pmi_indist", "ceil_succ_ctrl")},
}
# metrics read from held-out text: computed only when val_tokens are given
NEEDS_VAL = ("val_loss", "ps_nat", "repeat_nat_logprob", "icl_token_index", "ps_indist", "indist_gain", "chance_indist")
# ... and the source's successor statistics (ihtrain.data.successors): computed only when both are given
NEEDS_SUCCESSORS = ("ps_indist_ctrl", "chance_ctrl", "ceil_succ_indist", "ceil_succ_pmi_indist", "ceil_succ_ctrl")
# undefined for a run whose held-out copies all have likely successors: then left out (_undefined)
CTRL_METRICS = ("ps_indist_ctrl", "chance_ctrl", "ceil_succ_ctrl")
INDIST_SEQS = 32  # held-out sequences the in-distribution probes read (the first of val_tokens)
INDIST_CHUNK_ELEMENTS = 40_000_000  # attention-pattern or logit entries per chunk of those sequences
REGISTRY: dict[str, Metric] = {name: Metric(_FUNCTIONS[name], per_head) for name, per_head in METRICS.items()}


def metric_names(include: list[str] | tuple[str, ...] | None, has_val: bool, has_successors: bool = False) -> list[str]:
    """The metrics :func:`evaluate` computes, in registry order: those in ``include``, or by default
    all but ``OPT_IN_METRICS`` (those in ``NEEDS_VAL`` only when held-out tokens are given, those in
    ``NEEDS_SUCCESSORS`` only when the source's successor statistics are given too)."""
    usable = has_val and has_successors
    if include:
        unknown = [m for m in include if m not in REGISTRY]
        if unknown:
            raise ValueError(f"include: unknown metric(s) {unknown}; allowed: {', '.join(REGISTRY)}")
        if not has_val and set(NEEDS_VAL + NEEDS_SUCCESSORS) & set(include):
            raise ValueError(f"include: {sorted(set(NEEDS_VAL + NEEDS_SUCCESSORS) & set(include))} need val_tokens")
        if not usable and set(NEEDS_SUCCESSORS) & set(include):
            raise ValueError(f"include: {sorted(set(NEEDS_SUCCESSORS) & set(include))} need the source's successor "
                             f"statistics (a Markov, semi-natural or natural-text source)")
        return [m for m in REGISTRY if m in include]
    return [m for m in REGISTRY if m not in OPT_IN_METRICS and (m not in NEEDS_VAL or has_val)
            and (m not in NEEDS_SUCCESSORS or usable)]


def evaluate(model: GPT, probes: ProbeSet, val_tokens: torch.Tensor | np.ndarray | None = None,
             include: list[str] | tuple[str, ...] | None = None, copy_start: int = 0,
             successors: Successors | None = None) -> dict[str, np.ndarray | float]:
    """Compute the metrics in ``include`` (default: all but ``OPT_IN_METRICS``; those in ``NEEDS_VAL``
    only when ``val_tokens`` is given, those in ``NEEDS_SUCCESSORS`` only with ``successors`` too;
    ``copy_start``: the first position of the data's repeat region, :func:`ihtrain.data.repeat_start_of`,
    for the in-distribution probes) in eval mode under ``torch.inference_mode``; the model's
    train/eval mode is restored after.

    Returns ``{name: (L, H) float64 array or float}`` in registry order.
    """
    names = metric_names(include, has_val=val_tokens is not None, has_successors=successors is not None)
    device = next(model.parameters()).device
    acts = Activations(model, probes.to(device), val_tokens, repeat_logits=bool({"ar_acc", "ar_rank"} & set(names)),
                       copy_start=copy_start, successors=successors)
    names = [m for m in names if m not in _undefined(acts, names)]
    # one forward pass on the held-out sequences serves both when they are the same sequences
    acts.val_from_indist = (val_tokens is not None and len(val_tokens) <= INDIST_SEQS
                            and bool(set(names) & {"ps_indist", "indist_gain", "ps_indist_ctrl", "chance_indist"}))
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            out: dict[str, np.ndarray | float] = {}
            for name in names:
                v = REGISTRY[name].fn(model, acts.probes, acts)
                out[name] = np.asarray(v, dtype=np.float64) if REGISTRY[name].per_head else float(v)
    finally:
        model.train(was_training)
    return out


def _undefined(acts: Activations, names: list[str]) -> set[str]:
    """The constants and controlled score undefined for this run (its held-out sequences hold no
    copy, or none whose successor is unlikely): not logged, as where the source gives no statistics
    (a NaN row would stop every reader). Constant per run: the held-out sequences are fixed."""
    if acts.val_tokens is None or not set(names) & {"chance_indist", *NEEDS_SUCCESSORS}:
        return set()
    if not copy_labels(acts.indist_val.cpu().numpy(), acts.copy_start)[0].any():
        return {"chance_indist", *NEEDS_SUCCESSORS}
    return set(CTRL_METRICS) if acts.successors is not None and not acts.labelled["ctrl"].any() else set()


def to_rows(results: dict[str, np.ndarray | float], step: int, tokens: int) -> pd.DataFrame:
    """Tidy rows for metrics.parquet: step, tokens, metric, layer, head, value.

    Per-head arrays give one row per (layer, head); floats give one row with layer = head = -1.
    """
    metric, layer, head, value = [], [], [], []
    for name, v in results.items():
        a = np.asarray(v, dtype=np.float64)
        if a.ndim == 0:
            a, li, hi = a.reshape(1), np.array([-1]), np.array([-1])
        elif a.ndim == 2:
            L, H = a.shape
            li, hi = np.repeat(np.arange(L), H), np.tile(np.arange(H), L)  # row-major (layer, head)
        else:
            raise ValueError(f"results[{name!r}]: expected a float or an (L, H) array, got shape {a.shape}")
        metric += [name] * a.size
        layer.append(li)
        head.append(hi)
        value.append(a.reshape(-1))
    k = len(metric)
    cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dtype=dt)  # noqa: E731
    return pd.DataFrame({
        "step": np.full(k, step, dtype=np.int64),
        "tokens": np.full(k, tokens, dtype=np.int64),
        "metric": pd.Series(metric, dtype=object),
        "layer": cat(layer, np.int64),
        "head": cat(head, np.int64),
        "value": cat(value, np.float64),
    })


__all__ = ["Activations", "Metric", "REGISTRY", "METRIC_NAMES", "evaluate", "metric_names", "to_rows", "concentration",
           "ar_from_logits", "ov_eigenvalues", "ov_copy_from_eigenvalues", "ps", "prev_token", "la",
           "copy_fwd", "anti_induction", "anti_copy", "ov_copy", "ar_acc", "ar_rank", "val_loss", "dup_bwd", "ps_nat",
           "repeat_nat_logprob", "copy_fwd_logprob", "copy_bwd_logprob", "icl_token_index", "ps_indist", "indist_gain",
           "NEEDS_VAL", "NEEDS_SUCCESSORS", "ps_gen_near", "ps_gen_mid", "ps_gen_far", "ps_indist_ctrl", "chance_indist",
           "ceil_offset_gen", "chance_gen"]
