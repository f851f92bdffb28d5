"""Simulated ablation tables: per-example metric values with no ablation, the top-k set and random-k sets.

A pure function of its arguments and a seed that returns the effects it planted; tests of
:mod:`ihstats.ablation.permutation` use it and ``data/example_ablation.csv`` comes from it
(:mod:`ihstats.simulate.examples`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class AblationTruth:
    """What an ablation simulation planted, per condition: the extra mean drop of the top-k set."""

    effects: dict
    random_drop: float


def simulate_ablation(
    conditions=("natural", "biinduct"),
    effects=(0.3, 0.1),
    n_examples: int = 200,
    n_random: int = 99,
    random_drop: float = 0.2,
    set_sd: float = 0.05,
    noise_sd: float = 0.5,
    seed: int = 0,
) -> tuple[pd.DataFrame, AblationTruth]:
    """Per-example metric values for no ablation, the top-k ablation and random-k ablations.

    Each ablated head set ``s`` lowers example ``i``'s value by ``random_drop + u_s + e_si`` with
    ``u_s ~ N(0, set_sd)`` and ``e_si ~ N(0, noise_sd)``; the top-k set adds ``effect``. With
    ``effect = 0`` the top set is exchangeable with the random ones (the null).

    Parameters
    ----------
    conditions : sequence of str
        Condition names (for example models trained on different data).
    effects : sequence of float
        Extra mean drop of the top-k set, one per condition.
    n_examples, n_random : int
        Examples per condition (shared ids, so conditions are paired) and random sets ``R``.
    random_drop, set_sd, noise_sd : float
        Mean drop of a random set, spread between sets, per-example noise.
    seed : int
        Seed of the generator.

    Returns
    -------
    table : pandas.DataFrame
        Tidy ``condition, example, ablation (none|top|random), set_id, value``.
    truth : AblationTruth
    """
    if len(effects) != len(conditions):
        raise ValueError(f"effects: need one per condition ({len(conditions)}), got {len(effects)}")
    rng = np.random.default_rng(seed)
    frames = []
    for cond, effect in zip(conditions, effects):
        base = rng.normal(0.0, 1.0, n_examples)  # e.g. log-prob of the right answer
        # set-level drops: row 0 is the top set, rows 1..R random sets
        u = random_drop + rng.normal(0.0, set_sd, n_random + 1)
        u[0] += effect
        ablated = base[None, :] - u[:, None] - rng.normal(0.0, noise_sd, (n_random + 1, n_examples))
        ex = np.arange(n_examples)
        frames.append(pd.DataFrame({"condition": cond, "example": ex, "ablation": "none",
                                    "set_id": "none", "value": base}))
        frames.append(pd.DataFrame({"condition": cond, "example": ex, "ablation": "top",
                                    "set_id": "top", "value": ablated[0]}))
        for j in range(1, n_random + 1):
            frames.append(pd.DataFrame({"condition": cond, "example": ex, "ablation": "random",
                                        "set_id": f"r{j:04d}", "value": ablated[j]}))
    table = pd.concat(frames, ignore_index=True)
    return table, AblationTruth(dict(zip(conditions, effects)), random_drop)
