"""Statistics of neighbouring tokens measured from the tokens alone: mutual information and the
entropy rate (plug-in, Miller-Madow), the checks of what :mod:`ihtrain.data.markov` builds (its
``MarkovChain.stats`` computes them exactly for a chain).
"""

from __future__ import annotations

import numpy as np


def mutual_information(tokens: np.ndarray, V: int) -> float:
    """Plug-in mutual information (bits) between neighbouring tokens of ``tokens`` (n, T)."""
    a, b = tokens[:, :-1].ravel(), tokens[:, 1:].ravel()
    joint = np.bincount(a * V + b, minlength=V * V).reshape(V, V) / a.size
    pa, pb = joint.sum(1), joint.sum(0)
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log2(joint[nz] / np.outer(pa, pb)[nz])))


def empirical_entropy_rate(tokens: np.ndarray, V: int) -> float:
    """Conditional entropy ``H(x_t | x_{t-1})`` (bits) of neighbouring tokens of ``tokens`` (n, T),
    plug-in with the Miller-Madow correction (+ (cells seen - rows seen) / (2 N ln 2)): for a
    first-order chain sampled from its stationary distribution it estimates the entropy rate
    that :meth:`ihtrain.data.markov.MarkovChain.stats` computes exactly."""
    a, b = tokens[:, :-1].ravel(), tokens[:, 1:].ravel()
    joint = np.bincount(a * V + b, minlength=V * V).reshape(V, V).astype(np.float64)
    n = joint.sum()
    rows = joint.sum(1)
    nz = joint > 0
    plug_in = -np.sum(joint[nz] * np.log2((joint / np.where(rows > 0, rows, 1)[:, None])[nz])) / n
    return float(plug_in + (nz.sum() - (rows > 0).sum()) / (2 * n * np.log(2)))
