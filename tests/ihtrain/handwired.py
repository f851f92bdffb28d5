"""Hand-wired GPTs whose metric values are known in advance (test fixtures).

Residual-stream layout (d_model wide, V tokens, P positions). Every feature is written as a
``+1/-1`` pair so each residual vector has mean zero: LayerNorm (gain 1, bias 0) then only rescales
it, by the same factor at every position because every position carries the same number of pairs.

    [0, V)            token +       [V, 2V)            token -
    [2V, 2V+P)        position +    [2V+P, 2V+2P)      position -
    [2V+2P, 3V+2P)    previous token + (written by layer 0 of the induction model)
    [3V+2P, 4V+2P)    previous token -

With tied embeddings ``W_U = W_E``, so the logit of token t reads ``x[t] - x[V+t]``.
Attention is made near one-hot by large query scales (scores of about 30 between the matching key
and the rest), so patterns are exact to about 1e-10 per key.
"""

from __future__ import annotations

import math

import torch

from ihtrain.config import ModelConfig
from ihtrain.model import GPT
from ihtrain.probes import make_probes

LN_EPS = 1e-5


def _blank(V: int, P: int, d: int, n_layer: int, n_head: int) -> GPT:
    """Attention-only GPT with all weights zero, LayerNorm gains one and pair embeddings."""
    model = GPT(ModelConfig(n_layer=n_layer, n_head=n_head, d_model=d, vocab_size=V, context=P,
                            attn_only=True, tie_embeddings=True), seed=0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.fill_(1.0 if name.endswith("weight") and p.dim() == 1 else 0.0)
        for t in range(V):
            model.wte.weight[t, t], model.wte.weight[t, V + t] = 1.0, -1.0
        for p in range(P):
            model.wpe.weight[p, 2 * V + p], model.wpe.weight[p, 2 * V + P + p] = 1.0, -1.0
    return model


def _ln_scale(n_pairs: int, d: int) -> float:
    """LayerNorm's factor on a mean-zero vector made of n_pairs (+1, -1) pairs."""
    return 1.0 / math.sqrt(2 * n_pairs / d + LN_EPS)


def _pos_attention(model: GPT, layer: int, head: int, V: int, P: int, key_index: dict[int, int],
                   lam: float) -> None:
    """Query at position q looks for head dimension q; key at position p' offers dimension
    key_index[p']: the query attends to the key p' with key_index[p'] == q."""
    Q, K = model.W_Q(layer)[head], model.W_K(layer)[head]  # (d, dh) views into c_attn
    for p in range(P):
        Q[2 * V + p, p] = lam
    for p, j in key_index.items():
        K[2 * V + p, j] = 1.0


def _copy_ov(model: GPT, layer: int, head: int, V: int, scale: float) -> None:
    """Value reads token +; output writes scale * (token + minus token -): W_E W_V W_O W_U^T = 2 scale I."""
    Vw, O = model.W_V(layer)[head], model.W_O(layer)[head]  # (d, dh), (dh, d)
    for t in range(V):
        Vw[t, t] = 1.0
        O[t, t], O[t, V + t] = scale, -scale


def induction_model(V: int = 20, P: int = 16, d: int = 128, alpha: float = 3.0) -> GPT:
    """Two attention-only layers, one head each, tied embeddings.

    Layer 0: previous-token head (positional): the query at p attends to p - 1 (position 0 to
    itself) and copies that token into the previous-token subspace.
    Layer 1: induction head by K-composition: the query's current token matches keys whose
    previous token equals it; the key at position 0 is suppressed (its "previous token" is its own
    token); OV copies the attended token into the logits with weight 2 alpha (> 2, the current
    token's own direct-path logit), so the model predicts the induction target.

    On the repeat probe: PS(1, 0) ~ 1, prev_token(0, 0) ~ 1, LA(1, 0) ~ 1, LA(0, 0) = 0,
    AR accuracy ~ 1 and rank 0; ov_copy = (0, 1); copy_fwd(1, 0) ~ 1, anti_induction(1, 0) ~ 0.
    """
    if d < 4 * V + 2 * P:
        raise ValueError(f"d={d} too small for the layout, need >= 4V + 2P = {4 * V + 2 * P}")
    model = _blank(V, P, d, n_layer=2, n_head=1)
    c0, c1 = _ln_scale(2, d), _ln_scale(3, d)  # layer 0 sees token+position, layer 1 also prev
    prev = 2 * V + 2 * P
    with torch.no_grad():
        # layer 0: previous-token head; score c0^2 lam / sqrt(dh) ~ 28 on the match
        _pos_attention(model, 0, 0, V, P, {p: p + 1 for p in range(P - 1)}, lam=10.0)
        Vw, O = model.W_V(0)[0], model.W_O(0)[0]
        for t in range(V):
            Vw[t, t] = 1.0
            O[t, prev + t], O[t, prev + V + t] = 1.0 / c0, -1.0 / c0  # unit +-1 pair after the LN scale
        # layer 1: induction head; query = current token (dims 0..V-1) plus a constant (dim V,
        # every position has one position+ entry); key = previous token, minus M at position 0
        lam, M = 15.0, 2.0
        Q, K = model.W_Q(1)[0], model.W_K(1)[0]
        for t in range(V):
            Q[t, t] = lam
            K[prev + t, t] = 1.0
        for p in range(P):
            Q[2 * V + p, V] = lam
        K[2 * V + 0, V] = -M
        _copy_ov(model, 1, 0, V, alpha / c1)
    return model.eval()


def positional_heads_model(V: int = 20, P: int = 16, m: int = 7, d: int = 256) -> GPT:
    """One attention-only layer, 8 heads of d_head = 32, attention set by positions only.

    head 0: uniform (zero Q, K), OV copies (+)   -> ov_copy 1, LA 0
    head 1: previous token (p -> p - 1), OV anti-copies (-) -> ov_copy -1, LA ~ 1/(n-1)
    head 2: forward copy for an ``S SEP S`` probe with |S| = m: q -> q - m
    head 3: anti-induction for ``S SEP reverse(S)``: q -> 2m - 1 - q
    head 4: uniform, OV anti-copies -> LA = H_{n-1} / (n - 1) exactly (see the tests)
    heads 5-7: zero (uniform attention, no output)
    """
    model = _blank(V, P, d, n_layer=1, n_head=8)
    lam = 3.0  # c^2 lam / sqrt(32) ~ 34 with c^2 = d / 4
    scale = 1.0
    with torch.no_grad():
        _copy_ov(model, 0, 0, V, scale)
        _pos_attention(model, 0, 1, V, P, {p: p + 1 for p in range(P - 1)}, lam)
        _copy_ov(model, 0, 1, V, -scale)
        _pos_attention(model, 0, 2, V, P, {p: p + m for p in range(P - m)}, lam)
        _pos_attention(model, 0, 3, V, P, {p: 2 * m - 1 - p for p in range(2 * m)}, lam)
        _copy_ov(model, 0, 4, V, -scale)
    return model.eval()


def backward_heads_model(V: int = 20, P: int = 16, m: int = 7, d: int = 256, alpha: float = 12.0) -> GPT:
    """One attention-only layer, 2 heads of d_head = 128, attention set by positions for an
    ``S SEP reverse(S)`` probe with |S| = m (positions q in [m+1, 2m] hold x_{2m-q}).

    head 0: duplicate-token head: q -> 2m - q (the earlier occurrence of the query's own token),
            no output  -> dup_bwd 1, anti_induction 0
    head 1: anti-induction head: q -> 2m - 1 - q (the token before that occurrence, x_{j-1}), OV
            copies with weight ``alpha`` -> anti_induction 1 and the model predicts the reversed
            continuation: copy_bwd_logprob near 0.
    """
    model = _blank(V, P, d, n_layer=1, n_head=2)
    with torch.no_grad():
        _pos_attention(model, 0, 0, V, P, {p: 2 * m - p for p in range(m)}, lam=3.0)
        _pos_attention(model, 0, 1, V, P, {p: 2 * m - 1 - p for p in range(m - 1)}, lam=3.0)
        _copy_ov(model, 0, 1, V, alpha)
    return model.eval()


def small_probes(V: int = 20, C: int = 16):
    """The probe set the hand-wired metric tests read: V tokens (0 the separator), context C,
    30 sequences; at V 20, C 16 the repeat half is n = 8 and the copy span m = 7."""
    p = make_probes(vocab_size=V, context=C, seed=0, ordinary_range=(1, V), sep_token=0, n_seqs=30)
    assert (V, C) != (20, 16) or (p.n, p.n_copy) == (8, 7)
    return p


# ------------------------------------------------------------------ issue 65: heads that are not induction
def lookup_model(W: "np.ndarray", P: int = 16, d: int = 96) -> GPT:
    """One attention-only layer, one head (d_head = d), V = W.shape[0] tokens: the query holding
    token a attends to every position j <= a with weight exactly ``W[a, x_j]`` (normalised): the
    score is ``log W[a, x_j]`` (``W`` > 0). ``W = P(next | current)`` of a Markov generator is the
    oracle successor-lookup head of ``ihstats.base.chance.indist_ceilings`` (``W / marginal``: its PMI
    form). No output (OV zero): an attention-only fixture."""
    import numpy as np

    V = W.shape[0]
    model = _blank(V, P, d, n_layer=1, n_head=1)
    lam = math.sqrt(d) / _ln_scale(2, d) ** 2  # q . k / sqrt(dh) = log W exactly
    logW = torch.from_numpy(np.log(np.maximum(W, 1e-30))).float()
    with torch.no_grad():
        Q, K = model.W_Q(0)[0], model.W_K(0)[0]
        for t in range(V):
            Q[t, t] = lam
        K[:V, :V] = logW.T  # K[token j, dim t] = log W[t, j]
    return model.eval()


def offset_model(V: int = 20, P: int = 16, offset: int = 8, d: int = 128) -> GPT:
    """One attention-only layer, one head: the fixed-offset copier. The query at s attends to
    ``s - offset + 1`` (where that exists; earlier positions attend uniformly over the first key),
    OV copies: on ``[span | span]`` data at distance ``offset`` it predicts every copy, on the
    general probe it scores 1 at the distance ``offset`` and 0 at the others."""
    model = _blank(V, P, d, n_layer=1, n_head=1)
    with torch.no_grad():
        _pos_attention(model, 0, 0, V, P, {p: p + offset - 1 for p in range(P - offset + 1)}, lam=10.0)
        _copy_ov(model, 0, 0, V, 3.0)
    return model.eval()


def position_lookup_model(table: dict[int, int], V: int = 20, P: int = 16, d: int = 128) -> GPT:
    """One attention-only layer, one head: a lookup keyed by position. The query at ``a`` attends to
    the key ``table[a]`` (a table fitted to held-out data's copies, e.g. the modal copy target at
    each position; positions without an entry attend uniformly), OV copies."""
    model = _blank(V, P, d, n_layer=1, n_head=1)
    key_index: dict[int, list[int]] = {}
    for a, k in table.items():
        key_index.setdefault(k, []).append(a)
    with torch.no_grad():
        Q, K = model.W_Q(0)[0], model.W_K(0)[0]
        for p in range(P):
            Q[2 * V + p, p] = 10.0
        for k, queries in key_index.items():
            for a in queries:
                K[2 * V + k, a] = 1.0
        _copy_ov(model, 0, 0, V, 3.0)
    return model.eval()


def dup_induction_model(V: int = 20, P: int = 16, d: int = 192, alpha: float = 3.0) -> GPT:
    """Induction through another circuit (no previous-token head): two attention-only layers.

    Layer 0, a duplicate-token head: the query holding token t attends to the earlier positions j
    holding t (its own position penalised) and writes j's position into a "source position"
    subspace (V-composition of the positional embedding). Layer 1 reads that position on the query
    side (Q-composition) and attends to the key at ``j + 1``, the token after the earlier
    occurrence; OV copies it. Layer 0's previous-token score is at chance, its PS 0.
    """
    if d < 2 * V + 4 * P:
        raise ValueError(f"d={d} too small for the layout, need >= 2V + 4P = {2 * V + 4 * P}")
    model = _blank(V, P, d, n_layer=2, n_head=1)
    c0, c1 = _ln_scale(2, d), _ln_scale(3, d)
    src = 2 * V + 2 * P  # source-position pairs [src, src + P) and [src + P, src + 2P)
    with torch.no_grad():
        Q, K = model.W_Q(0)[0], model.W_K(0)[0]
        lam = 12.0
        for t in range(V):
            Q[t, t] = lam  # token match
            K[t, t] = 1.0
        for p in range(P):
            Q[2 * V + p, V + p] = lam  # own position: penalised
            K[2 * V + p, V + p] = -2.0
        Vw, O = model.W_V(0)[0], model.W_O(0)[0]
        for p in range(P):
            Vw[2 * V + p, p] = 1.0
            O[p, src + p], O[p, src + P + p] = 1.0 / c0, -1.0 / c0
        # layer 1: the query holding source position j matches the key at position j + 1
        _pos_attention_from(model, 1, 0, src, 2 * V, {p + 1: p for p in range(P - 1)}, P, lam=15.0)
        _copy_ov(model, 1, 0, V, alpha / c1)
    return model.eval()


def _pos_attention_from(model: GPT, layer: int, head: int, q_base: int, k_base: int, key_index: dict[int, int],
                        P: int, lam: float) -> None:
    """Query dims ``q_base + p`` (p < P) look for head dimension p; key dims ``k_base + p'`` offer
    ``key_index[p']``: the query carrying p attends to the key p' with ``key_index[p'] == p``."""
    Q, K = model.W_Q(layer)[head], model.W_K(layer)[head]
    for p in range(P):
        Q[q_base + p, p] = lam
    for p, j in key_index.items():
        K[k_base + p, j] = 1.0
