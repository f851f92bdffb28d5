"""Seeded simulators for the frontier and ablation statistics, with the ground truth they plant.

Both are pure functions of their arguments and a seed (docs/STYLE.md, rule 4); tests reuse them as
fixtures and the shipped examples in ``data/`` come from them::

    python -m ihstats.simulate_frontier --write-examples data/

writes ``data/example_frontier.csv`` and ``data/example_ablation.csv`` with the defaults below.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ihstats.cli_checks import NONNEG_INT, check_args, check_out_dir

DEFAULT_LEVELS = (0.1, 0.3, 0.5, 0.7, 0.9)  # Aoyama et al.'s {0.1, ..., 0.9}^2 grid


@dataclass(frozen=True)
class FrontierTruth:
    """The boundary a frontier simulation planted: ``logit p = a + bf log f + br log r``.

    Attributes
    ----------
    intercept, b_freq, b_rel : float
        Coefficients on the natural-log scale of the knobs.
    """

    intercept: float
    b_freq: float
    b_rel: float

    def p_formed(self, frequency, reliability) -> np.ndarray:
        """Probability that a head forms at the given knob values."""
        eta = self.intercept + self.b_freq * np.log(frequency) + self.b_rel * np.log(reliability)
        return 1.0 / (1.0 + np.exp(-eta))

    def contour(self, frequency) -> np.ndarray:
        """Reliability on the ``p = 0.5`` contour at each frequency (may exceed 1)."""
        log_r = -(self.intercept + self.b_freq * np.log(frequency)) / self.b_rel
        return np.exp(log_r)


def simulate_frontier(
    frequencies=DEFAULT_LEVELS,
    reliabilities=DEFAULT_LEVELS,
    n_seeds: int = 8,
    intercept: float = 4.0,
    b_freq: float = 1.5,
    b_rel: float = 2.5,
    seed: int = 0,
) -> tuple[pd.DataFrame, FrontierTruth]:
    """Formed / not-formed outcomes on a frequency x reliability grid from a known boundary.

    Parameters
    ----------
    frequencies, reliabilities : sequence of float
        Levels of each knob, in (0, 1].
    n_seeds : int
        Runs (seeds) per grid cell.
    intercept, b_freq, b_rel : float
        True coefficients of ``logit p = intercept + b_freq log f + b_rel log r``.
    seed : int
        Seed of the generator.

    Returns
    -------
    table : pandas.DataFrame
        One row per run: ``run_id, frequency, reliability, seed, formed``.
    truth : FrontierTruth
        The planted boundary.
    """
    truth = FrontierTruth(intercept, b_freq, b_rel)
    rng = np.random.default_rng(seed)
    f, r, s = np.meshgrid(frequencies, reliabilities, np.arange(n_seeds), indexing="ij")
    f, r, s = f.ravel(), r.ravel(), s.ravel()
    formed = rng.random(f.size) < truth.p_formed(f, r)
    table = pd.DataFrame({
        "run_id": [f"sim{i:05d}" for i in range(f.size)],
        "frequency": f, "reliability": r, "seed": s, "formed": formed,
    })
    return table, truth


@dataclass(frozen=True)
class OnsetTruth:
    """A time-to-onset simulation's law: ``log onset = log_t0 + e_freq log f + e_rel log r + sigma e``.

    Attributes
    ----------
    log_t0, e_freq, e_rel, sigma : float
        Log onset (updates) at f = r = 1, the two elasticities, the seed-to-seed scatter (sd of
        log onset).
    """

    log_t0: float
    e_freq: float
    e_rel: float
    sigma: float

    def median_onset(self, frequency, reliability) -> np.ndarray:
        """Median onset (updates) at the given knob values."""
        return np.exp(self.log_t0 + self.e_freq * np.log(frequency) + self.e_rel * np.log(reliability))


def simulate_onsets(
    cells,
    n_seeds: int = 3,
    log_t0: float = 6.5,
    e_freq: float = -5.0,
    e_rel: float = -2.0,
    sigma: float = 0.3,
    cap: float = 4500.0,
    seed: int = 0,
) -> tuple[pd.DataFrame, OnsetTruth]:
    """Runs whose heads form at log-normal onsets from a known law, right-censored at ``cap``.

    Parameters
    ----------
    cells : sequence of (float, float)
        ``(frequency, reliability)`` of each cell, in (0, 1].
    n_seeds : int
        Runs (seeds) per cell.
    log_t0, e_freq, e_rel, sigma : float
        The law (:class:`OnsetTruth`).
    cap : float
        Budget in updates: a run whose onset falls beyond it did not form.
    seed : int
        Seed of the generator.

    Returns
    -------
    table : pandas.DataFrame
        One row per run: ``run_id, frequency, reliability, seed, true_onset, onset, formed,
        censored, last_step, budget`` (``onset = last_step = cap`` for runs that did not form,
        as an emergence table holds them).
    truth : OnsetTruth
    """
    truth = OnsetTruth(log_t0, e_freq, e_rel, sigma)
    cells = np.asarray(cells, dtype=float).reshape(-1, 2)
    rng = np.random.default_rng(seed)
    f, r = np.repeat(cells[:, 0], n_seeds), np.repeat(cells[:, 1], n_seeds)
    true = truth.median_onset(f, r) * np.exp(sigma * rng.standard_normal(f.size))
    formed = true <= cap
    table = pd.DataFrame({
        "run_id": [f"sim{i:05d}" for i in range(f.size)], "frequency": f, "reliability": r,
        "seed": np.tile(np.arange(n_seeds), len(cells)), "true_onset": true,
        "onset": np.where(formed, true, cap), "formed": formed, "censored": ~formed,
        "last_step": np.where(formed, np.minimum(1.3 * true, cap), cap), "budget": float(cap),
    })
    return table, truth


def read_onsets_at(table: pd.DataFrame, budget: float) -> pd.DataFrame:
    """A :func:`simulate_onsets` table as it reads at a shorter ``budget`` (what
    :func:`ihstats.frontier.budget.read_at_budget` does to real logs)."""
    formed = table["true_onset"] <= budget
    return table.assign(formed=formed, censored=~formed, budget=float(budget),
                        onset=np.where(formed, table["true_onset"], budget),
                        last_step=np.minimum(table["last_step"], budget))


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


def main(argv=None) -> None:
    """Write the shipped example tables (``--write-examples DIR``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-examples", metavar="DIR", required=True,
                    help="folder to write example_frontier.csv and example_ablation.csv into")
    ap.add_argument("--seed", type=int, default=0, help="seed of both simulations (default 0)")
    args = ap.parse_args(argv)
    check_args(ap, args, {"seed": NONNEG_INT})
    out = check_out_dir(args.write_examples, flag="--write-examples", parser=ap)
    out.mkdir(parents=True, exist_ok=True)
    frontier, _ = simulate_frontier(seed=args.seed)
    frontier.to_csv(out / "example_frontier.csv", index=False)
    ablation, _ = simulate_ablation(n_examples=100, n_random=49, seed=args.seed)
    ablation.round(6).to_csv(out / "example_ablation.csv", index=False)
    print(f"wrote {out / 'example_frontier.csv'} and {out / 'example_ablation.csv'}")


if __name__ == "__main__":
    main()
