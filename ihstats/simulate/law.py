"""Simulated emergence tables from a known UPT law (updates to emergence ~ batch, context, size).

The law is ``log UPT = log T - a log B - b log C - c log N + noise``. Each simulated run gets a
measurement interval around its observed onset (as change-point detection would report) and a last
step set by a fixed token budget, so runs with large ``B * C`` are the ones that end before they
show emergence (right-censored), as they would in a real iso-token grid.

The returned table has the docs/DESIGN.md emergence-table columns and feeds ``ihstats.law``.

Command line (writes the shipped example table)::

    python -m ihstats.simulate.law --example data/example_emergence.csv

The simulated example posterior fitted to it is the law's to write
(:func:`ihstats.law.predict.fit_simulated_reference`): a simulator imports no fit.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from scipy import stats
from ihstats.base.fileio import atomic_write_csv
from ihstats.base.command import run_cli

#: Columns of the emergence table (docs/DESIGN.md), in order.
EMERGENCE_COLUMNS = [
    "run_id", "B", "C", "N", "metric", "onset", "onset_lo", "onset_hi", "level", "midpoint",
    "censored", "last_step", "method",
]


@dataclass(frozen=True)
class LawTruth:
    """Ground truth of a simulated table (the law's parameters and the design).

    Attributes
    ----------
    log_T, a, b, c, sigma : float
        Law parameters; ``c`` multiplies ``log N``.
    nu : float or None
        Student-t degrees of freedom of the run-to-run noise; None means Gaussian noise.
    """

    log_T: float = 13.26
    a: float = 0.37
    b: float = 0.62
    c: float = 0.0
    sigma: float = 0.15
    nu: float | None = None
    extra: dict = field(default_factory=dict)


def _design(B_values, C_values, N_values, n_seeds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The full-factorial (B, C, N) design, each cell ``n_seeds`` times, as float arrays."""
    design = [(B, C, N) for (B, C, N) in itertools.product(B_values, C_values, N_values)
              for _ in range(n_seeds)]
    return tuple(np.array([d[k] for d in design], dtype=float) for k in range(3))


def _observed_table(B, C, N, log_onset, sd, level: float, censor_frac: float, seed: int) -> pd.DataFrame:
    """What a detector would report for true log onsets measured with sd ``sd``, under one shared
    token budget set so that about ``censor_frac`` of the runs end before their onset."""
    z = stats.norm.ppf(0.5 + level / 2)
    log_tokens = log_onset + np.log(B * C)
    if censor_frac > 0:
        budget = np.exp(np.quantile(log_tokens, 1.0 - censor_frac))
    else:
        budget = np.exp(log_tokens.max()) * 2.0
    last_step = np.floor(budget / (B * C)).astype(int)
    onset = np.exp(log_onset)
    censored = onset > last_step
    return pd.DataFrame({
        "run_id": [f"sim{seed:03d}-{i:03d}" for i in range(len(B))],
        "B": B.astype(int),
        "C": C.astype(int),
        "N": N,
        "metric": "ps",
        "onset": np.where(censored, np.nan, onset),
        "onset_lo": np.where(censored, np.nan, np.exp(log_onset - z * sd)),
        "onset_hi": np.where(censored, np.nan, np.exp(log_onset + z * sd)),
        "level": level,
        "midpoint": np.where(censored, np.nan, onset * 1.3),
        "censored": censored,
        "last_step": last_step,
        "method": "simulated",
    })


def simulate_emergence_table(
    *,
    log_T: float = 13.26,
    a: float = 0.37,
    b: float = 0.62,
    c: float = 0.0,
    sigma: float = 0.15,
    nu: float | None = None,
    B_values=(4, 8, 16, 32, 64),
    C_values=(16, 32, 64, 128),
    N_values=(1.0e6,),
    n_seeds: int = 1,
    me_sd=(0.05, 0.15),
    level: float = 0.9,
    censor_frac: float = 0.15,
    seed: int = 0,
    sigma_C: dict | None = None,
    cell_sd: float = 0.0,
) -> tuple[pd.DataFrame, LawTruth]:
    """Simulate an emergence table from known law parameters.

    Parameters
    ----------
    log_T, a, b, c, sigma : float
        Law ``log UPT = log_T - a log B - b log C - c log N + eps``, ``eps ~ sigma * t(nu)``
        (Gaussian when ``nu`` is None).
    B_values, C_values, N_values : sequence of float
        Full-factorial design; each cell is run ``n_seeds`` times.
    me_sd : (float, float)
        Each run's measurement sd on the log scale is uniform in this range; the observed log onset
        is the true log UPT plus that error, and ``onset_lo/hi`` are the ``level`` interval.
    censor_frac : float
        Approximate fraction of right-censored runs, in ``[0, 1)``. All runs share one token
        budget (the ``1 - censor_frac`` quantile of observed tokens-to-emergence), so
        ``last_step = budget / (B * C)``; a run is censored when its onset is past its last step.
    seed : int
        Seed of the ``numpy.random.Generator``; equal seeds give equal tables.
    sigma_C : dict, optional
        ``{C: sigma}`` for every C value: scatter that depends on the context (replaces
        ``sigma``; what ``UPTLawSpec(sigma_by="C")`` estimates), recorded in ``truth.extra``.
    cell_sd : float
        Sd of a per-cell offset ``cell_sd * z_cell`` on log UPT shared by a cell's seeds (the
        law's own residual, the cell effect of ``UPTLawSpec(cell_effect=True)``); with
        ``cell_sd > 0`` the table gets a ``cell_id`` column. 0 (default) leaves the table and
        its random stream as without it.

    Returns
    -------
    table : pandas.DataFrame
        Emergence table with the columns in ``EMERGENCE_COLUMNS``; censored rows have NaN
        onset, onset_lo, onset_hi and midpoint.
    truth : LawTruth
        The parameters used.
    """
    if not 0.0 <= censor_frac < 1.0:
        raise ValueError(f"censor_frac: must be in [0, 1), got {censor_frac}")
    if sigma <= 0:
        raise ValueError(f"sigma: must be > 0, got {sigma}")
    rng = np.random.default_rng(seed)
    B, C, N = _design(B_values, C_values, N_values, n_seeds)
    n = len(B)
    noise = rng.standard_t(nu, size=n) if nu is not None else rng.standard_normal(n)
    if sigma_C is not None and (set(sigma_C) != set(C_values) or min(sigma_C.values()) <= 0):
        raise ValueError(f"sigma_C: needs a sigma > 0 for each C in {list(C_values)}, got {sigma_C}")
    scatter = np.array([sigma_C[c_] for c_ in C]) if sigma_C is not None else sigma
    log_upt = log_T - a * np.log(B) - b * np.log(C) - c * np.log(N) + scatter * noise
    sd = rng.uniform(me_sd[0], me_sd[1], size=n)
    log_onset = log_upt + sd * rng.standard_normal(n)
    cols = list(EMERGENCE_COLUMNS)
    if cell_sd > 0:  # drawn last, so cell_sd = 0 keeps every earlier table bit for bit
        cell = np.arange(n) // n_seeds          # _design puts a cell's seeds next to each other
        log_onset = log_onset + cell_sd * rng.standard_normal(cell.max() + 1)[cell]
        cols.insert(1, "cell_id")
    table = _observed_table(B, C, N, log_onset, sd, level, censor_frac, seed)
    if cell_sd > 0:
        table["cell_id"] = [f"cell{i:03d}" for i in cell]
    truth = LawTruth(log_T=log_T, a=a, b=b, c=c, sigma=sigma, nu=nu,
                     extra={"seed": seed, "censor_frac": censor_frac, "me_sd": list(me_sd),
                            "cell_sd": cell_sd, **({"sigma_C": dict(sigma_C)} if sigma_C is not None else {})})
    return table[cols], truth


#: Settings of the shipped example table (data/example_emergence.csv): 30 runs, 5 x 3 x 2.
EXAMPLE_SETTINGS = dict(
    log_T=13.26, a=0.37, b=0.62, c=0.0, sigma=0.15, nu=None,
    B_values=(4, 8, 16, 32, 64), C_values=(16, 64, 256), N_values=(1.0e6, 4.0e6),
    n_seeds=1, me_sd=(0.05, 0.15), level=0.9, censor_frac=0.15, seed=20251116,
)


def example_table() -> tuple[pd.DataFrame, LawTruth]:
    """The shipped example table, regenerated from ``EXAMPLE_SETTINGS`` (fixed seed)."""
    return simulate_emergence_table(**EXAMPLE_SETTINGS)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m ihstats.simulate.law",
        description="Write the simulated example emergence table (fixed seed; its posterior, "
                    "upt_law_simulated.nc, is refitted by ihstats.law.predict.fit_simulated_reference).")
    p.add_argument("--example", default="data/example_emergence.csv",
                   help="where to write the example table (default: %(default)s)")
    args = p.parse_args(argv)
    table, truth = example_table()
    atomic_write_csv(args.example, table, index=False)
    print(f"wrote {args.example} ({len(table)} rows, {int(table.censored.sum())} censored); "
          f"truth: {asdict(truth)}")
    return 0


if __name__ == "__main__":
    run_cli(main)
