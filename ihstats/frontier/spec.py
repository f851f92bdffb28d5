"""What a frontier fit is asked to do: the knobs, the claim level, the terms and priors.

The bottom of the frontier's group (:mod:`ihstats.frontier`): it imports nothing from the group.
The model is built from a table and a spec by :meth:`ihstats.frontier.model.FrontierModel.from_table`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ihstats.fit_protocol import FitError
from ihstats.knobs import CLAIM_PROBABILITY, KNOBS  # noqa: F401  (the frontier's knobs: shared with ihstats.onset)


class FrontierError(FitError):
    """Bad input to the frontier fit; the message names the field and what is allowed."""


@dataclass(frozen=True)
class FrontierSpec:
    """What to fit: terms and priors (on the standardised scale).

    Parameters
    ----------
    interaction : bool
        Add the ``zf * zr`` term.
    covariates : tuple of str
        Extra numeric factors (standardised, linear; logged first when ``log_covariates``).
    prior_sd : float
        Normal prior sd of each slope (2.5: weakly informative on the logit scale, Gelman 2008).
    intercept_sd : float
        Normal prior sd of the intercept.
    metric : str, optional
        Emergence-table metric to keep.
    """

    interaction: bool = False
    covariates: tuple = ()
    log_covariates: bool = True
    prior_sd: float = 2.5
    intercept_sd: float = 5.0
    metric: str | None = None
