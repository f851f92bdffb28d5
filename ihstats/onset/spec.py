"""What an onset fit is asked to do: the priors (:class:`OnsetSpec`) and the quantity it claims.

The bottom of the onset group (:mod:`ihstats.onset`): it imports nothing from the group. The
model is built from a table and a spec by :meth:`ihstats.onset.model.OnsetModel.from_table`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ihstats.fit_protocol import FitError


class OnsetError(FitError):
    """Bad input to the onset model; the message names the field and what is allowed."""

P_QUANTITY = "P(|e_freq| > |e_rel|)"


@dataclass(frozen=True)
class OnsetSpec:
    """Priors of the onset model.

    Parameters
    ----------
    elasticity_sd : float
        Normal(0, sd) prior of each elasticity (5: a 10% change of a knob moving the onset by up
        to ~60% is well inside it).
    sigma_sd : float
        Half-normal prior scale of the seed scatter (log onset).
    intercept_sd : float
        Normal prior sd of the intercept around the mean log time.
    """

    elasticity_sd: float = 5.0
    sigma_sd: float = 1.5
    intercept_sd: float = 3.0

    def __post_init__(self):
        """Every field checked here, once (:mod:`ihstats.fit_protocol`)."""
        for name in ("elasticity_sd", "sigma_sd", "intercept_sd"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value > 0):
                raise OnsetError(f"{name}: must be a number > 0, got {value!r}")
