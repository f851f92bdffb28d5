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

    def __post_init__(self):
        """Every field checked here, once (:mod:`ihstats.fit_protocol`)."""
        if not isinstance(self.covariates, (tuple, list)) or not all(isinstance(c, str) and c for c in self.covariates):
            raise FrontierError(f"covariates: a tuple of column names, got {self.covariates!r}")
        object.__setattr__(self, "covariates", tuple(self.covariates))  # hashable, as a frozen spec's fields
        if clash := set(self.covariates) & set(KNOBS):
            raise FrontierError(f"covariates: {sorted(clash)} are the frontier's knobs, not covariates")
        for name in ("prior_sd", "intercept_sd"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value > 0):
                raise FrontierError(f"{name}: must be a number > 0, got {value!r}")
        if self.metric is not None and not (isinstance(self.metric, str) and self.metric):
            raise FrontierError(f"metric: a metric name or None, got {self.metric!r}")
