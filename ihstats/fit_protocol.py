"""What every fit offers: :class:`FitResults` (its results object) and :class:`FitError` (its bad input), defined once.

A fit of ihstats (the law, :mod:`ihstats.law`; the frontier, :mod:`ihstats.frontier`; the onset
model, :mod:`ihstats.onset`) is built from a table and a spec, sampled, and returns a results
object that holds numbers and answers three calls the same way:

- ``summary()``: a tidy :class:`pandas.DataFrame` of the posterior (mean, sd, HDI, r_hat, ESS);
- ``diagnostics()``: the sampler's warnings as a list of lines, empty when every check passes;
- ``save(out_dir)``: the fit's folder in the layout every fit shares
  (:func:`ihstats._bayes.save_fit`), returning ``{name: path}``.

Each may take more, optional, arguments (an ``hdi_prob``, thresholds, extra tables). Figures are
drawn from a results object by the figure home (:mod:`ihstats.plots`, :mod:`ihstats.plots_paper`),
reports by the fit's own ``report`` module; a results object imports neither.

Bad input to a fit raises its group's error, declared in the group's ``spec`` as a subclass of
:class:`FitError` (``UPTLawError``, ``FrontierError``, ``OnsetError``, ``AblationError``): a
``ValueError`` whose message names the field, so one ``except FitError`` catches every fit's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

import pandas as pd


class FitError(ValueError):
    """Bad input to a fit (the message names the field and what is allowed); each group subclasses it."""


@runtime_checkable
class FitResults(Protocol):
    """A fitted model's results (see the module docstring)."""

    def summary(self) -> pd.DataFrame:
        """Tidy posterior summary."""

    def diagnostics(self) -> list[str]:
        """Sampler warnings; empty when every check passes."""

    def save(self, out_dir) -> dict[str, Path]:
        """Write the fit's folder; returns name -> path."""
