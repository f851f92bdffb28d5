"""The measures that certify induction (issue 65; definitions in docs/DESIGN.md, "Metric definitions").

Registered in :data:`ihtrain.metrics.REGISTRY` like every metric: ``fn(model, probes, acts)`` with
``acts`` an :class:`ihtrain.metrics.Activations` (which computes the forward passes they share).

- in-distribution PS at the data's own copies (:func:`ps_indist`, issue 52), its loss gain
  (:func:`indist_gain`) and its chance (:func:`chance_indist`);
- the successor-controlled score (:func:`ps_indist_ctrl`) and the per-run successor ceilings
  (:func:`ihstats.base.chance.indist_ceilings`, logged as model-level constants);
- the general induction probe at three copy distances (:func:`ps_gen_near`, ``_mid``, ``_far``)
  and the fixed-offset ceiling (:func:`ceil_offset_gen`).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

from ihstats.base.chance import general_probe_chance, offset_general_ceiling
from ihstats.base.contract import GENERAL_PROBE_METRICS
from ihtrain.data.repeats import copy_labels
from ihtrain.model import GPT
from ihtrain.probes import ProbeSet

MetricFn = Callable[[GPT, ProbeSet, Any], "np.ndarray | float"]


def attn_score(attn: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> np.ndarray:
    """Mean over batch and listed queries of attn[..., q_i, k_i]; attn (L, B, H, T, T) -> (L, H)."""
    return attn[:, :, :, q, k].float().mean(dim=(1, 3)).cpu().numpy()  # (L, B, H, |q|) -> (L, H)


def indist_chunk(model: GPT, val: torch.Tensor, start: int, ctrl: torch.Tensor | None) -> dict[str, torch.Tensor | float]:
    """One chunk of :attr:`ihtrain.metrics.Activations.indist`: val (n, T + 1), ctrl (n, T + 1) bool or None -> its sums."""
    queries, keys = (torch.from_numpy(x).to(val.device) for x in copy_labels(val.cpu().numpy(), start))
    b, a = torch.nonzero(queries, as_tuple=True)  # (Q,) each; a <= T - 1: labels on T + 1 tokens
    T = val.shape[1] - 1
    logits, cache = model.run_with_cache(val[:, :-1], logits=True)
    logp = F.log_softmax(logits.float(), dim=-1).gather(-1, val[:, 1:, None]).squeeze(-1)  # (n, T)
    # every next token's loss, for val_loss on the same sequences (Activations.val_from_indist)
    nll = {"nll": float(-logp.double().sum()), "tokens": int(logp.numel())}
    if b.numel() == 0:
        zero = torch.zeros(model.cfg.n_layer, model.cfg.n_head, dtype=torch.float64)
        return {"mass": zero, "gain": 0.0, "count": 0, "chance": 0.0, "mass_ctrl": zero, "count_ctrl": 0, **nll}
    k = keys[b, a, :T]  # (Q, T): the positions after earlier occurrences of x[a]
    attn = cache.attn[:, b, :, a, :]  # (Q, L, H, T): advanced indices lead
    per_q = (attn.float() * k[:, None, None, :]).sum(-1).double()  # (Q, L, H)
    # the bigram's first occurrence j: the earliest key k = j + 1 holding the token that follows a
    j = (k & (val[b, :T] == val[b, a + 1][:, None])).float().argmax(dim=1) - 1
    c = ctrl[b, a] if ctrl is not None else torch.zeros_like(b, dtype=torch.bool)  # (Q,)
    return {"mass": per_q.sum(0).cpu(), "gain": float((logp[b, a] - logp[b, j]).double().sum()), "count": int(b.numel()),
            "chance": float((k.sum(1).double() / (a + 1)).sum()),
            "mass_ctrl": per_q[c].sum(0).cpu(), "count_ctrl": int(c.sum()), **nll}


def ps_indist(model: GPT, probes: ProbeSet, acts: Any) -> np.ndarray:
    """In-distribution PS: at each copy query of the held-out sequences (the data's own ``A B ... A``
    positions in its repeat region), the attention mass on the positions after the earlier
    occurrences of the query's token; mean over queries (NaN without any). Chance: the share of
    earlier positions that are such keys (mean over queries of ``|keys| / (a + 1)``)."""
    s = acts.indist
    return (s["mass"] / s["count"]).numpy() if s["count"] else np.full(tuple(s["mass"].shape), np.nan)


def ps_indist_ctrl(model: GPT, probes: ProbeSet, acts: Any) -> np.ndarray:
    """Successor-controlled in-distribution PS: :func:`ps_indist` over only the copy queries whose
    copied token ``x[a+1]`` is not a likely successor of ``x[a]`` under the source's statistics
    (:func:`ihstats.base.chance.likely_successor`); NaN without any."""
    acts.labelled  # noqa: B018  (raises without successor statistics)
    s = acts.indist
    return (s["mass_ctrl"] / s["count_ctrl"]).numpy() if s["count_ctrl"] else np.full(tuple(s["mass"].shape), np.nan)


def chance_indist(model: GPT, probes: ProbeSet, acts: Any) -> float:
    """ps_indist's chance level: uniform causal attention, mean over copy queries of ``|keys| / (a + 1)``."""
    s = acts.indist
    return s["chance"] / s["count"] if s["count"] else float("nan")


def constant(name: str) -> MetricFn:
    """A per-run constant of :func:`ihstats.base.chance.indist_ceilings` (computed once per run)."""
    def read(model: GPT, probes: ProbeSet, acts: Any) -> float:
        return float(acts.labelled["ceilings"][name])
    read.__name__ = read.__qualname__ = name
    read.__doc__ = f"``{name}`` of :func:`ihstats.base.chance.indist_ceilings` on the in-distribution probes' sequences."
    return read


def _general_score(i: int) -> MetricFn:
    def score(model: GPT, probes: ProbeSet, acts: Any) -> np.ndarray:
        lay = probes.general_layout
        d, C, rows = lay["distances"][i], probes.context, probes.general.shape[0] // 3
        q = torch.arange(lay["second"], C - 1, device=probes.general.device)
        return attn_score(acts.general.attn[:, i * rows:(i + 1) * rows], q, q - d + 1)
    name = GENERAL_PROBE_METRICS[i]
    score.__name__ = score.__qualname__ = name
    score.__doc__ = (f"General induction PS at the layout's {name[7:]} distance d: attention from s to "
                     f"s - d + 1, s in [C - k, C - 2], over that distance's rows. Chance: mean 1/(s + 1).")
    return score


ps_gen_near, ps_gen_mid, ps_gen_far = (_general_score(i) for i in range(3))


def ceil_offset_gen(model: GPT, probes: ProbeSet, acts: Any) -> float:
    """The general score a fixed-offset head can reach (:func:`ihstats.base.chance.offset_general_ceiling`)."""
    return offset_general_ceiling(probes.context, probes.repeat_start, probes.copy_band)


def chance_gen(probes: ProbeSet) -> float:
    """Each general-probe score's chance level (:func:`ihstats.base.chance.general_probe_chance`)."""
    return general_probe_chance(probes.context, probes.repeat_start, probes.copy_band)


def indist_gain(model: GPT, probes: ProbeSet, acts: Any) -> float:
    """In-distribution induction loss gain (nats): at each copy query ``a`` (the data's own
    ``A B ... A -> B``), the log-prob of ``B`` at the repeat minus at the bigram's first occurrence
    ``j`` (the same token predicting the same next token, without the earlier copy in context); mean
    over queries. A model that reads only the current token scores 0 whatever bigram statistics it
    has learnt; it rises when the model predicts copies from context. Probe-free: it reads only the
    model's loss on training-distribution sequences."""
    s = acts.indist
    return s["gain"] / s["count"] if s["count"] else float("nan")


__all__ = ["ceil_offset_gen", "chance_gen", "chance_indist", "constant", "indist_chunk", "indist_gain",
           "attn_score", "ps_gen_far", "ps_gen_mid", "ps_gen_near", "ps_indist", "ps_indist_ctrl"]
