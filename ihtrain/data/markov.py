"""Markov data: i.i.d. or first-order chains with a target marginal, categoriality and entropy rate.

Construction (every property exact by design, then measured)
-------------------------------------------------------------
Tokens are compact ids ``0 .. V-1`` (the source adds 2 for the reserved ``eos``/``sep``), ranked
by the target marginal ``pi``: ``uniform``; ``zipf`` ``pi_k ~ (k+1)^-alpha``; ``gaussian``
``pi_k ~ exp(-((k - (V-1)/2) / (V/6))^2 / 2)``. i.i.d. data draws every token from ``pi``.
A chain's transition row of token ``i`` (group ``g(i)``) is the mixture::

    P_i = l0 * pi + l1 * G_g(i) + l2 * R_i          (l0 + l1 + l2 = 1)

- ``G_g = pi`` restricted to group ``g`` and renormalised (groups: a seeded balanced random
  partition into ``K`` groups). ``sum_g Pi_g G_g = pi``, so it preserves ``pi``; it makes rows of
  one group alike (categoriality).
- ``R_i``: lay the tokens on the unit circle as arcs of length ``pi_j`` twice, in two independent
  random orders A and B; draw ``x`` uniformly on token ``i``'s arc in A, move it by a uniform
  offset in ``[-eps/2, eps/2]``, and emit the token whose arc in B contains it. The move preserves
  Lebesgue measure, so ``sum_i pi_i R_i = pi`` exactly; ``eps`` sets the row's spread (entropy).
  ``R_ij`` has a closed form (integral of a trapezoid) and is computed exactly, sparse. Order A is
  random or, when the targets need rows alike within groups, grouped (a group's arcs contiguous).

Hence ``pi P = pi`` for every ``(l0, l1, eps)``. The exact row statistics are computed in
``O(nnz(R) + K V)`` without forming ``P``: mean cosine similarity of rows within and across groups
(mean over ordered pairs of distinct tokens), and the entropy rate ``H = sum_i pi_i H(P_i)`` in
bits. Knobs are solved for the targets (``scipy.optimize.least_squares``, restarts):

Tolerances (checked after every build; failure raises ``ValueError`` naming the field):
``|within - target| <= 0.02``, ``|across - target| <= 0.02``, ``|H - target| <= 0.05`` bits; the
stationary distribution matches ``pi`` to total variation ``<= 1e-9`` (verified by ``pi P``).
Without groups, ``l1 = 0`` and ``l0 = 0.1`` (0, 0.3, 0.6 or 0.9 when the entropy target needs it);
without an entropy target, ``eps = min(1, 16 / V)``. i.i.d. data ignores the similarity and
entropy targets (all rows are ``pi``: similarity 1, entropy rate ``H(pi)``) and reports them.

Frequency/reliability imposed on top (``frequency >= 0``): sequences are laid out as for the
semi-natural data (:mod:`ihtrain.data.repeats`) with fresh tokens drawn from the chain (or ``pi``).
The mechanism knobs act there too: ``repeat_start`` (repeats from early positions), the copy
distances (``repeat_distance``, ``max_distance``: :mod:`ihtrain.data.lags`) and a frequency that
scales with the context, ``f(C) = frequency (C / frequency_ref_context)^frequency_exponent``
(:func:`ihtrain.data.repeats.frequency_at`; ``C`` is ``train.context``), or the decoupled setting:
a distance floor ``min_distance`` and ``copies_per_token`` fixed across C
(:func:`ihtrain.data.lags.planted_frequency`).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ihtrain.data.lags import RepeatKnobs, check_mechanism, lag_weights, planted_frequency
from ihtrain.data.repeats import SequencePool, as_rng, check_prob, plant_repeats, truth_stats
from ihtrain.data.source import DataSource
from ihtrain.data.successors import Successors, from_compact
from ihtrain.errors import need


# ---------------------------------------------------------------------------- the config section (data.markov)
@dataclass
class MarkovConfig(RepeatKnobs):
    """Synthetic i.i.d. or first-order Markov tokens with controlled statistics."""

    vocab: int = 1000
    dependency: Literal["iid", "markov"] = "markov"
    marginal: Literal["uniform", "zipf", "gaussian"] = "zipf"
    zipf_alpha: float = 1.0
    n_groups: int = 0  # 0: no categorial structure
    within_similarity: float = 0.4  # mean cosine similarity of transition rows within a group
    across_similarity: float = 0.1
    entropy_rate: float = 0.0  # bits per token; 0: whatever the construction gives
    frequency: float = -1.0  # < 0: do not impose; else P(A B ... A) as for semi-natural data
    reliability: float = -1.0

N_SPECIAL = 2
TOL_SIM, TOL_H, TOL_TV = 0.02, 0.05, 1e-9
MARGINALS = ("uniform", "zipf", "gaussian")


def marginal(shape: str, V: int, alpha: float = 1.0) -> np.ndarray:
    """Target marginal over ``V`` tokens (ranked: token 0 is the mode for zipf)."""
    k = np.arange(V, dtype=np.float64)
    if shape == "uniform":
        w = np.ones(V)
    elif shape == "zipf":
        if not alpha > 0:
            raise ValueError(f"data.markov.zipf_alpha: must be > 0, got {alpha}")
        w = (k + 1.0) ** -alpha
    elif shape == "gaussian":
        w = np.exp(-0.5 * ((k - (V - 1) / 2) / (V / 6)) ** 2)
    else:
        raise ValueError(f"data.markov.marginal: must be one of {', '.join(MARGINALS)}; got {shape!r}")
    return w / w.sum()


def _K(d: np.ndarray, eps: float) -> np.ndarray:
    """Antiderivative of h(w) = clip(w + eps/2, 0, eps)."""
    h = eps / 2
    return np.where(d <= -h, 0.0, np.where(d <= h, (d + h) ** 2 / 2, eps * eps / 2 + eps * (d - h)))


@dataclass
class MarkovChain:
    """The transition structure (see module docstring) with exact sampling and exact statistics."""

    pi: np.ndarray  # (V,)
    group: np.ndarray  # (V,) group id per token (all 0 when K = 0)
    n_groups: int
    l0: float
    l1: float
    eps: float
    perm_a: np.ndarray  # (V,) token at each rank of order A
    perm_b: np.ndarray
    iid: bool = False
    _R: tuple | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        V = self.V = self.pi.size
        self.start_a = np.empty(V)
        self.start_a[self.perm_a] = np.concatenate([[0.0], np.cumsum(self.pi[self.perm_a])[:-1]])
        self.bounds_b = np.concatenate([[0.0], np.cumsum(self.pi[self.perm_b])])
        self.bounds_b[-1] = 1.0
        self._pcdf = np.cumsum(self.pi)
        self._pcdf[-1] = 1.0
        K = max(self.n_groups, 1)
        self.mass = np.bincount(self.group, weights=self.pi, minlength=K)  # Pi_g
        self.by_group = np.argsort(self.group, kind="stable")
        gs = self.group[self.by_group]
        within = np.cumsum(self.pi[self.by_group])
        within -= np.concatenate([[0.0], np.cumsum(self.mass)])[gs]
        self._gkey = gs + within / self.mass[gs]
        ends = np.cumsum(np.bincount(self.group, minlength=K)) - 1
        self._gkey[ends] = np.arange(K) + 1.0

    @property
    def l2(self) -> float:
        return 1.0 - self.l0 - self.l1

    # -------------------------------------------------------------------------- sampling
    def sample_first(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.minimum(np.searchsorted(self._pcdf, rng.random(n), side="right"), self.V - 1)

    def sample_next(self, rng: np.random.Generator, prev: np.ndarray) -> np.ndarray:
        if self.iid:
            return self.sample_first(rng, prev.size)
        n = prev.size
        u = rng.random((3, n))
        out = self.sample_first(rng, n)  # component 0: pi
        c1 = (u[0] >= self.l0) & (u[0] < self.l0 + self.l1)
        if c1.any():  # component 1: pi within the group of prev
            g = self.group[prev[c1]]
            idx = np.searchsorted(self._gkey, g + u[1, c1], side="right")
            out[c1] = self.by_group[np.minimum(idx, self.V - 1)]
        c2 = u[0] >= self.l0 + self.l1
        if c2.any():  # component 2: move along the circle from prev's arc in A to an arc in B
            p = prev[c2]
            x = self.start_a[p] + self.pi[p] * u[2, c2] + self.eps * (rng.random(p.size) - 0.5)
            pos = np.searchsorted(self.bounds_b, np.mod(x, 1.0), side="right") - 1
            out[c2] = self.perm_b[np.clip(pos, 0, self.V - 1)]
        return out

    def sample(self, rng: np.random.Generator, n_seqs: int, length: int) -> np.ndarray:
        """Plain sequences started from the stationary distribution."""
        if self.iid:
            return self.sample_first(rng, n_seqs * length).reshape(n_seqs, length)
        x = np.empty((n_seqs, length), dtype=np.int64)
        x[:, 0] = self.sample_first(rng, n_seqs)
        for t in range(1, length):
            x[:, t] = self.sample_next(rng, x[:, t - 1])
        return x

    # -------------------------------------------------------------------- exact structure
    def R(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sparse ``R`` as (rows, cols, values), exact (closed form); cached."""
        if self._R is None:
            V, eps = self.V, self.eps
            s, a = self.start_a, self.pi
            rows, cols, vals = [], [], []
            for m in (-1.0, 0.0, 1.0):  # target arcs shifted by m (wrap-around)
                lo, hi = s - eps / 2 - m, s + a + eps / 2 - m
                i0 = np.maximum(np.searchsorted(self.bounds_b, lo, side="right") - 1, 0)
                i1 = np.minimum(np.searchsorted(self.bounds_b, hi, side="left"), V)
                cnt = np.maximum(i1 - i0, 0)
                r = np.repeat(np.arange(V), cnt)
                pos = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(i0, cnt)
                t0, t1 = self.bounds_b[pos] + m, self.bounds_b[pos + 1] + m
                C = lambda t: _K(t - s[r], eps) - _K(t - s[r] - a[r], eps)  # noqa: E731
                v = (C(t1) - C(t0)) / (a[r] * eps)
                keep = v > 0
                rows.append(r[keep]), cols.append(self.perm_b[pos[keep]]), vals.append(v[keep])
            r, c, v = (np.concatenate(z) for z in (rows, cols, vals))
            code, inv = np.unique(r * V + c, return_inverse=True)  # merge duplicates across m
            self._R = (code // V, code % V, np.bincount(inv, weights=v))
        return self._R

    def dense(self) -> np.ndarray:
        """The (V, V) transition matrix (small V; tests)."""
        if self.iid:
            return np.tile(self.pi, (self.V, 1))
        r, c, v = self.R()
        P = self.l0 * np.tile(self.pi, (self.V, 1))
        if self.l1:
            same = self.group[:, None] == self.group[None, :]
            P += self.l1 * same * self.pi[None, :] / self.mass[self.group][:, None]
        np.add.at(P, (r, c), self.l2 * v)
        return P

    def stats(self) -> dict[str, float]:
        """Exact entropy rate (bits), mean within/across-group cosine similarity, stationarity error."""
        pi, V, K = self.pi, self.V, max(self.n_groups, 1)
        if self.iid:
            H = float(-np.sum(pi * np.log2(pi)))
            return {"entropy_rate": H, "within_similarity": 1.0, "across_similarity": 1.0,
                    "mean_similarity": 1.0, "stationary_tv": 0.0, "marginal_entropy": H}
        l0, l1, l2 = self.l0, self.l1 if self.n_groups else 0.0, self.l2 if self.n_groups else 1.0 - self.l0
        g, M = self.group, self.mass
        r, c, v = self.R()
        gi = g[r]
        s2 = float(pi @ pi)
        sq_g = np.bincount(g, weights=pi * pi, minlength=K)
        pg, gg = sq_g / M, sq_g / M ** 2
        pR = np.bincount(r, weights=v * pi[c], minlength=V)
        in_g = g[c] == gi
        gR = np.bincount(r, weights=np.where(in_g, v * pi[c] / M[gi], 0.0), minlength=V)
        RR = np.bincount(r, weights=v * v, minlength=V)
        norm2 = (l0 * l0 * s2 + l1 * l1 * gg[g] + l2 * l2 * RR + 2 * l0 * l1 * pg[g]
                 + 2 * l0 * l2 * pR + 2 * l1 * l2 * gR)
        inv_n = 1.0 / np.sqrt(norm2)
        w = np.bincount(g, weights=inv_n, minlength=K)
        u = np.zeros((K, V))  # u_g = sum_{i in g} P_i / |P_i|
        u += l0 * w[:, None] * pi[None, :]
        u[g, np.arange(V)] += l1 * w[g] * pi / M[g]
        u += np.bincount(gi * V + c, weights=l2 * v * inv_n[r], minlength=K * V).reshape(K, V)
        size = np.bincount(g, minlength=K).astype(np.float64)
        uu = np.einsum("kv,kv->k", u, u)
        U = u.sum(0)
        within_pairs = float(np.sum(size * (size - 1)))
        across_pairs = float(V * V - np.sum(size * size))
        within = float(np.sum(uu - size) / within_pairs) if within_pairs else float("nan")
        across = float((U @ U - uu.sum()) / across_pairs) if across_pairs else float("nan")
        mean_sim = float((U @ U - V) / (V * (V - 1)))
        # entropy of each row: base part (l0 pi + l1 G) in closed form, corrected on supp(R_i)
        xlx = lambda z: np.where(z > 0, z * np.log(np.where(z > 0, z, 1.0)), 0.0)  # noqa: E731
        T = float(np.sum(pi * np.log(pi)))
        A = np.bincount(g, weights=pi * np.log(pi), minlength=K)
        cg = l0 + l1 / M  # coefficient of pi inside the row's own group
        lg = lambda z: np.log(np.where(z > 0, z, 1.0))  # noqa: E731  (0 log 0 = 0)
        base = -(l0 * lg(l0) * (1 - M) + l0 * (T - A)) - (cg * lg(cg) * M + cg * A)
        b_ij = np.where(in_g, cg[gi], l0) * pi[c]
        corr = np.bincount(r, weights=xlx(b_ij) - xlx(b_ij + l2 * v), minlength=V)
        H_rows = (base[g] + corr) / np.log(2)
        col = np.bincount(c, weights=pi[r] * v, minlength=V)  # (pi R)_j
        piP = l0 * pi + l1 * pi + l2 * col
        return {"entropy_rate": float(pi @ H_rows), "within_similarity": within,
                "across_similarity": across, "mean_similarity": mean_sim,
                "stationary_tv": float(0.5 * np.abs(piP - pi).sum()),
                "marginal_entropy": float(-np.sum(pi * np.log2(pi)))}

    def digest(self) -> str:
        h = hashlib.sha256(np.array([self.l0, self.l1, self.eps]).tobytes())
        for arr in (self.pi, self.group, self.perm_a, self.perm_b):
            h.update(np.ascontiguousarray(arr).tobytes())
        return h.hexdigest()[:16]


# ------------------------------------------------------------------------------- building
def _chain(pi, group, K, l0, l1, eps, pa, pb) -> MarkovChain:
    return MarkovChain(pi, group, K, float(l0), float(l1), float(eps), pa, pb)


def build_chain(vocab: int, dependency: str = "markov", marginal_shape: str = "zipf",
                zipf_alpha: float = 1.0, n_groups: int = 0, within_similarity: float = 0.4,
                across_similarity: float = 0.1, entropy_rate: float = 0.0,
                seed: int | np.random.Generator | None = 0) -> tuple[MarkovChain, dict]:
    """Build the chain for the targets; returns ``(chain, truth)`` with the exact measured stats,
    the targets and the solved knobs. Raises ``ValueError`` naming the field when a target is
    out of range or not met within the tolerances of the module docstring."""
    rng = as_rng(seed)
    if vocab < 2:
        raise ValueError(f"data.markov.vocab: must be >= 2, got {vocab}")
    if dependency not in ("iid", "markov"):
        raise ValueError(f"data.markov.dependency: must be iid or markov, got {dependency!r}")
    pi = marginal(marginal_shape, vocab, zipf_alpha)
    if not 0 <= n_groups <= vocab // 2:
        raise ValueError(f"data.markov.n_groups: must be in [0, vocab/2 = {vocab // 2}], got {n_groups}")
    for name, val in (("within_similarity", within_similarity), ("across_similarity", across_similarity)):
        check_prob(val, f"data.markov.{name}")
    if entropy_rate < 0:
        raise ValueError(f"data.markov.entropy_rate: must be >= 0 (0: not targeted), got {entropy_rate}")
    K = int(n_groups)
    group = (rng.permutation(vocab) % K) if K else np.zeros(vocab, dtype=np.int64)
    pa, pb = rng.permutation(vocab), rng.permutation(vocab)
    target = {"within_similarity": within_similarity if K else None,
              "across_similarity": across_similarity if K else None,
              "entropy_rate": entropy_rate or None}
    if dependency == "iid":
        ch = _chain(pi, group, K, 1.0, 0.0, 1.0, pa, pb)
        ch.iid = True
        st = ch.stats()
        return ch, {**st, "targets": {k: None for k in target}, "ignored_targets": target, **_knobs(ch)}
    # eps beyond ~160 tokens' width only costs memory (nnz(R) ~ eps V^2): cap it
    eps_min, eps_max = min(1.0, 0.25 / vocab), min(1.0, 160.0 / vocab)
    eps_default = min(1.0, 16.0 / vocab)
    if not K:
        ch = _solve_no_groups(pi, group, pa, pb, entropy_rate, eps_min, eps_max, eps_default)
    else:
        # layout of order A: random, or grouped (a group's arcs contiguous, so its R rows are
        # neighbouring windows: alike within the group); the first that meets the targets wins
        pa_grouped = np.lexsort((rng.random(vocab), group))
        for layout in (pa, pa_grouped):
            ch = _solve_groups(pi, group, K, layout, pb, within_similarity, across_similarity, entropy_rate,
                               eps_min, eps_max, eps_default)
            try:
                _check(ch.stats(), target)
                break
            except ValueError:
                continue
    st = ch.stats()
    _check(st, target)
    return ch, {**st, "targets": target, **_knobs(ch)}


def _knobs(ch: MarkovChain) -> dict[str, float]:
    return {"l0": ch.l0, "l1": ch.l1, "eps": ch.eps}


def _check(st: dict, target: dict) -> None:
    tol = {"within_similarity": TOL_SIM, "across_similarity": TOL_SIM, "entropy_rate": TOL_H}
    for k, t in target.items():
        if t is not None and not abs(st[k] - t) <= tol[k]:
            raise ValueError(f"data.markov.{k}: target {t} not reachable with the other targets "
                             f"(best {st[k]:.4f}, tolerance {tol[k]}; marginal entropy "
                             f"{st['marginal_entropy']:.3f} bits bounds the entropy rate)")
    if not st["stationary_tv"] <= TOL_TV:
        raise ValueError(f"data.markov: stationary distribution off by TV {st['stationary_tv']:.2e}")


def _solve_no_groups(pi, group, pa, pb, H_target, eps_min, eps_max, eps_default) -> MarkovChain:
    if not H_target:
        return _chain(pi, group, 0, 0.1, 0.0, eps_default, pa, pb)
    for l0 in (0.1, 0.0, 0.3, 0.6, 0.9):  # H rises with eps and l0; l0 = 0 reaches lower rates
        lo, hi = np.log(eps_min), np.log(eps_max)
        H = lambda le: _chain(pi, group, 0, l0, 0.0, np.exp(le), pa, pb).stats()["entropy_rate"]  # noqa: E731
        if H(lo) <= H_target:
            if H(hi) < H_target:
                continue  # too low even at the widest eps: try a larger l0
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if H(mid) < H_target else (lo, mid)
                if hi - lo < 1e-4:
                    break
            return _chain(pi, group, 0, l0, 0.0, np.exp(0.5 * (lo + hi)), pa, pb)
    return _chain(pi, group, 0, 0.1, 0.0, eps_default, pa, pb)  # _check reports the miss


def _solve_groups(pi, group, K, pa, pb, s_w, s_a, H_target, eps_min, eps_max, eps_default) -> MarkovChain:
    """Coarse grid over (eps, l0, t) with l1 = (1 - l0) t, then bounded least squares from the best."""
    from scipy.optimize import least_squares

    V = pi.size
    le_lo, le_hi = np.log(eps_min), np.log(eps_max)
    cache: dict[float, tuple] = {}

    def make(z) -> MarkovChain:
        l0, t, le = float(z[0]), float(z[1]), float(np.clip(z[2], le_lo, le_hi))
        ch = _chain(pi, group, K, l0, (1 - l0) * t, np.exp(le), pa, pb)
        if le in cache:  # R depends on eps only: reuse it across l0/t changes and Jacobian probes
            ch._R = cache[le]
        else:
            if len(cache) >= 4:
                cache.pop(next(iter(cache)))
            cache[le] = ch.R()
        return ch

    def resid(z):
        st = make(z).stats()
        out = [(st["within_similarity"] - s_w) / TOL_SIM, (st["across_similarity"] - s_a) / TOL_SIM]
        # no entropy target: a weak pull of eps towards its default keeps the answer unique
        out.append((st["entropy_rate"] - H_target) / TOL_H if H_target else 0.1 * (z[2] - np.log(eps_default)))
        return np.array(out)

    grid = [(l0, t, le) for le in np.log(np.clip(np.array([0.5, 2, 8, 32, 128]) / V, eps_min, eps_max))
            for l0 in (0.0, 0.05, 0.15, 0.3) for t in (0.1, 0.3, 0.5, 0.7, 0.9)]
    scored = sorted(grid, key=lambda z: float(np.sum(resid(z) ** 2)))
    best = None
    for z0 in scored[:2]:
        sol = least_squares(resid, np.array(z0), bounds=([0.0, 0.0, le_lo], [0.999, 0.999, le_hi]),
                            diff_step=1e-3, max_nfev=25)
        if best is None or sol.cost < best.cost:
            best = sol
        if np.max(np.abs(sol.fun[:2 if not H_target else 3])) <= 0.5:  # within half the tolerances
            break
    return make(best.x)


def generate_markov(chain: MarkovChain, n_seqs: int, length: int, frequency: float = -1.0,
                    reliability: float = -1.0, seed: int | np.random.Generator | None = 0,
                    repeat_start: int = 0, lag_weights: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """Sequences from ``chain`` (compact ids), with repeats planted when ``frequency >= 0``.

    ``repeat_start``: first position that may be a repeat (0: ``length // 2``, the shipped layout);
    ``lag_weights``: weights by copy distance (None: uniform); see
    :func:`ihtrain.data.repeats.plant_repeats`."""
    rng = as_rng(seed)
    if frequency is not None and frequency >= 0:
        check_prob(frequency, "data.markov.frequency")
        check_prob(reliability, "data.markov.reliability")
        return plant_repeats(rng, n_seqs, length, chain.V, frequency, reliability,
                             chain.sample_first, chain.sample_next, start=repeat_start or None,
                             lag_weights=lag_weights)
    return chain.sample(rng, n_seqs, length), {}


class MarkovSource:
    """``TokenSource`` over a built chain: ids shifted by 2 (``eos = 0``, ``sep = 1`` reserved).

    The chain is built from ``(cfg, seed)`` at construction; ``truth`` holds its exact statistics.
    With ``pool_tokens > 0`` (default 2M) ``sample`` draws rows of a fixed seeded pool. ``context``
    (``train.context``) is the ``C`` of a frequency that scales with ``C``; without it, the length
    asked for less one."""

    def __init__(self, cfg: Any, seed: int = 0, pool_tokens: int | None = None, context: int | None = None,
                 **_: Any):
        self.cfg, self.seed, self.context = cfg, int(seed), context
        self.lag_weights = lag_weights(getattr(cfg, "repeat_distance", "uniform"), getattr(cfg, "max_distance", 0),
                                       "data.markov", getattr(cfg, "min_distance", 0))
        imposed = cfg.frequency >= 0
        if imposed:
            check_prob(cfg.frequency, "data.markov.frequency")
            check_prob(cfg.reliability, "data.markov.reliability")
        self.chain, self.truth = build_chain(cfg.vocab, cfg.dependency, cfg.marginal, cfg.zipf_alpha,
                                             cfg.n_groups, cfg.within_similarity, cfg.across_similarity,
                                             cfg.entropy_rate, seed=np.random.default_rng([self.seed, 0xC4A1]))
        self.pool_tokens = int(getattr(cfg, "pool_tokens", 2_000_000) if pool_tokens is None else pool_tokens)
        self._pool = SequencePool(self._make, self.seed, self.pool_tokens) if self.pool_tokens else None

    vocab_size = property(lambda self: self.cfg.vocab + N_SPECIAL)
    special_tokens = property(lambda self: {"eos": 0, "sep": 1})
    ordinary_range = property(lambda self: (N_SPECIAL, self.cfg.vocab + N_SPECIAL))

    @property
    def fingerprint(self) -> dict[str, Any]:
        t = {k: v for k, v in self.truth.items() if k != "ignored_targets"}
        if (getattr(self.cfg, "frequency_exponent", 0.0) or getattr(self.cfg, "copies_per_token", -1.0) >= 0) \
                and self.context:  # only where it is set: old runs'
            t["frequency_at_context"] = self.frequency(0)  # fingerprints stay as they were
        return {"kind": "markov", "chain_hash": self.chain.digest(), "seed": self.seed,
                "pool_tokens": self.pool_tokens, **t}

    def frequency(self, length: int) -> float:
        """The frequency planted in sequences of ``length`` tokens (``f(C)``, or the one that holds
        ``copies_per_token``: :func:`ihtrain.data.lags.planted_frequency`)."""
        C = self.context or length - 1
        return planted_frequency(self.cfg, C, getattr(self.cfg, "repeat_start", 0) or (C + 1) // 2, "data.markov")

    def _make(self, rng: np.random.Generator, n_seqs: int, length: int) -> tuple[np.ndarray, dict]:
        return generate_markov(self.chain, n_seqs, length, self.frequency(length), self.cfg.reliability, rng,
                               repeat_start=getattr(self.cfg, "repeat_start", 0), lag_weights=self.lag_weights)

    def sample(self, rng: np.random.Generator, n_seqs: int, length: int, progress: float = 0.0):
        toks, truth = (self._pool.draw(rng, n_seqs, length) if self._pool is not None
                       else self._make(rng, n_seqs, length))
        return toks + N_SPECIAL, truth_stats(truth)

    def val_sample(self, n_seqs: int, length: int) -> np.ndarray:
        return self._make(np.random.default_rng([self.seed, 0x7A1, length]), n_seqs, length)[0] + N_SPECIAL

    def successor_stats(self) -> Successors:
        """The chain's exact transitions and stationary marginal, in model ids (specials: none)."""
        return from_compact(self.chain.dense(), self.chain.pi, N_SPECIAL, "generator transitions")


# ---------------------------------------------------------------------------- the registry's entry
def _build_source(data_cfg: Any, seed: int = 0, progress: bool = True, context: int | None = None) -> MarkovSource:
    return MarkovSource(data_cfg.markov, seed=seed, context=context)


def _check_section(mk: MarkovConfig, cfg: Any) -> None:
    for name in ("within_similarity", "across_similarity"):
        v = getattr(mk, name)
        need(0.0 <= v <= 1.0, f"data.markov.{name}", f"must be a probability in [0, 1], got {v}")
    for name in ("frequency", "reliability"):
        v = getattr(mk, name)
        need(v < 0 or v <= 1.0, f"data.markov.{name}",
             f"must be a probability in [0, 1] (or < 0: not imposed), got {v}")
    need(mk.vocab >= 4, "data.markov.vocab", f"must be >= 4, got {mk.vocab}")
    C = cfg.train.context
    need(mk.repeat_start == 0 or 2 <= mk.repeat_start <= C - 2, "data.markov.repeat_start",
         f"must be 0 (C // 2) or in [2, train.context - 2] = [2, {C - 2}], got {mk.repeat_start}")
    need(0 < mk.zipf_alpha < math.inf, "data.markov.zipf_alpha", f"must be a finite number > 0, got {mk.zipf_alpha}")
    need(mk.n_groups >= 0, "data.markov.n_groups", f"must be >= 0 (0: no groups), got {mk.n_groups}")
    need(0 <= mk.entropy_rate < math.inf, "data.markov.entropy_rate", f"must be >= 0 (0: as built), got {mk.entropy_rate}")
    need(mk.pool_tokens >= 0, "data.markov.pool_tokens", "must be >= 0")
    check_mechanism(mk, C, "data.markov")


def _repeat_start(data_cfg: Any, length: int) -> int:
    return data_cfg.markov.repeat_start or length // 2  # plant_repeats' layout


SOURCES = (DataSource("markov", _build_source, section="markov", config=MarkovConfig, vocab_fields=("vocab",),
                    check=_check_section, repeat_start=_repeat_start, recorded=True),)
