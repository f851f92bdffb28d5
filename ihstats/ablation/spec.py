"""What an ablation test is asked: the tidy table's columns, the head-set design and its labels.

The bottom of the ablation group (:mod:`ihstats.ablation`): it imports nothing from the group.
A head-ablation experiment ablates the top-k heads of a run and, against them, random sets with the
same count per layer (:func:`choose_head_sets`); ``python -m ihtrain.ablate`` chooses its random
sets here, so the statistics and the trainer agree on the design and on the labels it writes.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ihstats.fit_protocol import FitError


class AblationError(FitError):
    """A bad ablation table; the message names the column or condition and what is wrong."""

COLUMNS = ("condition", "example", "ablation", "set_id", "value")
ABLATIONS = ("none", "top", "random")
# Random head sets drawn by default: the smallest attainable p is 1 / (R + 1) = 0.005, so a top set
# that beats every random set stays below 0.05 after Holm over up to 10 conditions.
DEFAULT_RANDOM_SETS = 199

#: ``ihtrain.ablate --prev-token-set`` labels the previous-token sets' rows ``"<condition>:prev_token"``
PREV_TOKEN_SUFFIX = ":prev_token"
#: ``ihtrain.ablate --condition MODE@sN`` labels a seed's rows: the seed-pooled tests read ``MODE``
SEED_SEP = "@"


@dataclass(frozen=True)
class AblationSpec:
    """What one test reads from a tidy ablation table.

    Parameters
    ----------
    condition : str
        The condition whose rows are tested (a label of the table's ``condition`` column).
    metric : str, optional
        Which metric, when the table has a ``metric`` column.
    higher_is_better : bool
        False when ``value`` is a loss (the drop is then ablated minus unablated).
    """

    condition: object  # a label of the table's condition column (a str in every shipped table)
    metric: str | None = None
    higher_is_better: bool = True

    def __post_init__(self):
        """Every field checked here, once (:mod:`ihstats.fit_protocol`)."""
        if self.condition is None or (isinstance(self.condition, str) and not self.condition):
            raise AblationError(f"condition: a condition label of the table, got {self.condition!r}")
        if self.metric is not None and not (isinstance(self.metric, str) and self.metric):
            raise AblationError(f"metric: a metric name or None, got {self.metric!r}")
        if not isinstance(self.higher_is_better, (bool, np.bool_)):
            raise AblationError(f"higher_is_better: True or False, got {self.higher_is_better!r}")


def count_head_sets(n_heads_per_layer, k_per_layer) -> int:
    """Number of head sets with ``k_per_layer[l]`` of the ``n_heads_per_layer[l]`` heads."""
    if len(n_heads_per_layer) != len(k_per_layer):
        raise ValueError("k_per_layer: one entry per layer needed")
    if any(not 0 <= k <= n for n, k in zip(n_heads_per_layer, k_per_layer)):
        raise ValueError(f"k_per_layer: each k must lie in [0, n_heads]; got {k_per_layer}")
    return math.prod(math.comb(n, k) for n, k in zip(n_heads_per_layer, k_per_layer))


def choose_head_sets(n_heads_per_layer, top_set, n_random: int, seed: int = 0, exclude=None):
    """Random head sets with the same count per layer as ``top_set``, excluding it.

    Parameters
    ----------
    n_heads_per_layer : sequence of int
    top_set : sequence of tuple of int
        Heads of the top-k set, one tuple per layer.
    n_random : int
        Wanted number of random sets ``R``.
    seed : int
    exclude : sequence of tuple of int, optional
        Heads no set may hold, one tuple per layer (e.g. a previous-token head that every circuit
        shares: a random set holding it would drop as much as any top set, whatever the top set is).
        The top set must avoid them too.

    Returns
    -------
    sets : list of tuple of tuple of int
        All other sets when there are at most ``n_random`` of them (``exact`` True), else
        ``n_random`` distinct sets sampled without replacement.
    exact : bool
    """
    top = tuple(tuple(sorted(h)) for h in top_set)
    ks = [len(h) for h in top]
    allowed = allowed_heads(n_heads_per_layer, exclude)
    if clash := [(l, h) for l, hs in enumerate(top) for h in hs if h not in allowed[l]]:
        raise ValueError(f"top_set: holds excluded head(s) {clash} (layer, head)")
    total = count_head_sets([len(a) for a in allowed], ks)
    if total - 1 <= n_random:
        per_layer = [list(itertools.combinations(a, k)) for a, k in zip(allowed, ks)]
        return [s for s in itertools.product(*per_layer) if s != top], True
    rng = np.random.default_rng(seed)
    seen, out = {top}, []
    while len(out) < n_random:                       # rejection: total >> n_random here
        s = tuple(tuple(sorted(rng.choice(a, size=k, replace=False).tolist())) for a, k in zip(allowed, ks))
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out, False


def allowed_heads(n_heads_per_layer, exclude=None) -> list[list[int]]:
    """Per layer, the heads a set may hold: all of them but ``exclude`` (one tuple per layer)."""
    excl = [()] * len(n_heads_per_layer) if exclude is None else [tuple(h) for h in exclude]
    if len(excl) != len(n_heads_per_layer):
        raise ValueError(f"exclude: one tuple per layer needed ({len(n_heads_per_layer)}), got {len(excl)}")
    return [[h for h in range(n) if h not in set(e)] for n, e in zip(n_heads_per_layer, excl)]
