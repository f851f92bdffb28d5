"""What every fit offers: :class:`FitResults` (its results object) and :class:`FitError` (its bad input), defined once.

A fit group of ihstats (the law, :mod:`ihstats.law`; the frontier, :mod:`ihstats.frontier`; the
onset model, :mod:`ihstats.onset`; the ablation tests, :mod:`ihstats.ablation`) keeps four habits,
declared here once:

- its spec (a frozen dataclass in the group's ``spec`` module) checks every field in its
  ``__post_init__``, the one place, and raises the group's :class:`FitError` subclass naming the
  field;
- its ``data.prepare(table, spec)`` checks the input table and returns a :class:`FitData` (the
  group's subclass: the checked rows as ``table``, plus the arrays its model needs);
- its sampler, when it has one, takes the settings of :data:`SAMPLER` (``chains``, ``draws``,
  ``tune``, ``target_accept``, ``seed``) unless the caller names others;
- a Bayesian fit returns a results object that holds numbers and answers three calls the same way:

- ``summary()``: a tidy :class:`pandas.DataFrame` of the posterior (mean, sd, HDI, r_hat, ESS);
- ``diagnostics()``: the sampler's warnings as a list of lines, empty when every check passes;
- ``save(out_dir)``: the fit's folder in the layout every fit shares
  (:func:`ihstats._bayes.save_fit`), returning ``{name: path}``.

Each may take more, optional, arguments (an ``hdi_prob``, thresholds, extra tables). Figures are
drawn from a results object by the figure home (:mod:`ihstats.figures`, a module per group),
reports by the fit's own ``report`` module; a results object imports neither.

Bad input to a fit raises its group's error, declared in the group's ``spec`` as a subclass of
:class:`FitError` (``UPTLawError``, ``FrontierError``, ``OnsetError``, ``AblationError``): a
``ValueError`` whose message names the field, so one ``except FitError`` catches every fit's.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import pandas as pd

from ihstats.base.cli_checks import COUNT, NONNEG_INT


class FitError(ValueError):
    """Bad input to a fit (the message names the field and what is allowed); each group subclasses it."""


@dataclass
class FitData:
    """What every group's ``data.prepare(table, spec)`` returns: the input checked.

    ``table`` holds the checked rows the fit uses (the law's and the onset model's: one per run;
    the frontier's: one per grid cell; the ablation tests': one condition's rows); each group's
    subclass (``LawData``, ``FrontierData``, ``OnsetData``, ``AblationData``) adds the arrays its
    model or test reads.
    """

    table: pd.DataFrame

    @property
    def n_rows(self) -> int:
        """Rows of the checked table."""
        return len(self.table)


@dataclass(frozen=True)
class SamplerSettings:
    """NUTS settings of every fit (:func:`ihstats._bayes.sample`): ``chains`` run one after another,
    each ``tune`` tuning steps then ``draws`` kept draws, at ``target_accept``, from ``seed``."""

    chains: int = 4
    draws: int = 1000
    tune: int = 1000
    target_accept: float = 0.9
    seed: int = 0


#: The one default sampler setting: every fit's ``fit()`` and every script's sampler flags
#: (:func:`ihstats.fit_protocol.add_sampler_flags`) start from it. 4 chains: r_hat compares chains,
#: and with 2 it misses a stuck chain that 4 show (Vehtari et al. 2021 recommend at least 4).
SAMPLER = SamplerSettings()


@runtime_checkable
class FitResults(Protocol):
    """A fitted model's results (see the module docstring)."""

    def summary(self) -> pd.DataFrame:
        """Tidy posterior summary."""

    def diagnostics(self) -> list[str]:
        """Sampler warnings; empty when every check passes."""

    def save(self, out_dir) -> dict[str, Path]:
        """Write the fit's folder; returns name -> path."""


def save_and_warn(res: FitResults, out_dir, *, label: str = "", **save_kw) -> dict[str, Path]:
    """What every script does with a fit's results, through the protocol only: ``res.save(out_dir,
    **save_kw)``, then each line of ``res.diagnostics()`` on stderr (``warning: <label>: ...``);
    returns the paths ``save`` wrote."""
    if not isinstance(res, FitResults):
        raise TypeError(f"res: a fit's results (summary, diagnostics, save), got {type(res).__name__}")
    paths = res.save(out_dir, **save_kw)
    for line in res.diagnostics():
        print(f"warning: {label + ': ' if label else ''}{line}", file=sys.stderr)
    return paths


# The sampler flags every fitting script takes, declared once (issue 51) beside the settings they
# default to (issue 67: the base knows no sampler): the same names, defaults
# and help in fit_upt_law, fit_frontier, validate_law and law_mechanism.
SAMPLER_RANGES = {"draws": COUNT, "tune": NONNEG_INT, "chains": COUNT, "seed": NONNEG_INT}
FAST = {"draws": 300, "tune": 300, "chains": 2}  # --fast: a first look, not for reporting


def add_sampler_flags(parser: argparse.ArgumentParser, *, chains: int = SAMPLER.chains, seed_help: str = "sampler seed",
                      target_accept: bool = False) -> None:
    """``--fast``, ``--draws``, ``--tune``, ``--chains``, ``--seed`` (and ``--target-accept``) in a
    "sampler" group; check them with :data:`SAMPLER_RANGES` and apply ``--fast`` with :func:`apply_fast`."""
    g = parser.add_argument_group("sampler")
    g.add_argument("--fast", action="store_true",
                   help=f"{FAST['chains']} chains x {FAST['draws']} draws ({FAST['tune']} tune): a first look")
    g.add_argument("--draws", type=int, default=SAMPLER.draws, help=f"draws per chain (default {SAMPLER.draws})")
    g.add_argument("--tune", type=int, default=SAMPLER.tune, help=f"tuning steps per chain (default {SAMPLER.tune})")
    g.add_argument("--chains", type=int, default=chains, help=f"chains, run one after another (default {chains})")
    g.add_argument("--seed", type=int, default=SAMPLER.seed, help=f"{seed_help} (default {SAMPLER.seed})")
    if target_accept:
        g.add_argument("--target-accept", type=float, default=SAMPLER.target_accept,
                       help=f"NUTS target acceptance (default {SAMPLER.target_accept})")


def apply_fast(args: argparse.Namespace) -> argparse.Namespace:
    """With ``--fast``, the :data:`FAST` draws, tuning steps and chains replace the given ones."""
    if getattr(args, "fast", False):
        for name, value in FAST.items():
            setattr(args, name, value)
    return args
