"""What a UPT-law fit is asked to do: the spec, its priors, and the law's fixed names.

The bottom of the law's group (:mod:`ihstats.law`): it imports nothing from the group, and every
other module of it imports this one. :class:`UPTLawSpec` is data only; the model is built from a
table and a spec by :meth:`ihstats.law.model.UPTLawModel.from_table`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ihstats.fit_protocol import FitError

#: Design factor -> its exponent in ``log UPT = log T - a log B - b log C - c log N``.
COEF = {"B": "a", "C": "b", "N": "c"}
#: Published exponents (Aoyama et al. 2025): reference lines in reports.
PUBLISHED = {"a": 0.37, "b": 0.62, "log_T": 13.26}
#: Name of the observed log UPT in the model and in the InferenceData groups.
OBS = "log_upt"
#: The seed kinds of ``seed_kinds=True``: table columns, each with its own crossed effect.
SEED_KINDS = ("weight_seed", "data_seed")
#: The law's forms (:mod:`ihstats.law.forms`): the default power law and the two compared with it.
FORMS = ("power", "critical_batch", "tokens")


class UPTLawError(FitError):
    """Bad input to the UPT law fit; the message names the field and what is allowed."""


DEFAULT_PRIORS = {
    "a": (0.5, 0.5),          # Normal(mu, sd)
    "b": (0.5, 0.5),          # Normal(mu, sd)
    "c": (0.0, 0.5),          # Normal(mu, sd)
    "alpha_sd": 2.0,          # Normal(mean observed log onset, alpha_sd)
    "sigma": 1.0,             # HalfNormal(sd)
    "nu": (2.0, 0.1),         # Gamma(alpha, beta)
    "cell_sd": 0.5,           # HalfNormal(sd) of the cell effect (cell_effect=True)
    "seed_sd": 0.5,           # HalfNormal(sd) of the crossed seed effect (seed_effect=True)
    "weight_seed_sd": 0.5,    # HalfNormal(sd) of the weight seed's effect (seed_kinds=True)
    "data_seed_sd": 0.5,      # HalfNormal(sd) of the data seed's effect (seed_kinds=True)
    "log_sigma_mu": (-1.0, 1.0),  # Normal(mu, sd) of the levels' mean log sigma (sigma_by)
    "log_sigma_sd": 1.0,      # HalfNormal(sd) of the levels' spread in log sigma (sigma_by)
    "g": (0.5, 0.5),          # Normal(mu, sd): the tokens form's exponent on B C (form="tokens")
    "log_B_noise_sd": 2.0,    # Normal(mean log B, sd) of log B_noise (form="critical_batch")
}


@dataclass(frozen=True)
class UPTLawSpec:
    """What to fit.

    Parameters
    ----------
    size_term : bool
        Add ``- c log N`` (needs an ``N`` column with two or more distinct values).
    priors : dict
        Overrides of ``DEFAULT_PRIORS`` (keys ``a, b, c, alpha_sd, sigma, nu``).
    likelihood : {"student_t", "normal"}
        Robust Student-t (default) or Gaussian noise.
    measurement_error : bool
        Use the onset intervals (columns ``onset_lo``, ``onset_hi``, ``level``).
    metric : str or None
        Keep rows of this ``metric``; None takes the only metric present (or ``ps``).
    interval_level : float
        Level of the onset intervals when the table has no ``level`` column.
    hdi_prob : float
        Default interval width of summaries and predictions.
    cell_effect : bool
        With replicates (several seeds per ``cell_id``): a per-cell effect
        ``cell_sd * z_cell`` on log UPT, so ``cell_sd`` is the law's own residual (how far cells
        sit from the line) and ``sigma`` the seed-to-seed scatter within a cell.
    sigma_by : str or None
        A column of the table (``"C"``, or any named column) whose levels each get their own
        scatter ``sigma[level]``, partially pooled (module docstring); None: one shared sigma.
    seed_effect : bool
        A crossed seed effect ``seed_sd * z_seed`` on log UPT, shared by every run of one training
        seed (column ``seed``) across cells: the "seed lottery" of a grid whose seed s starts every
        cell from the same initial weights and data order. ``sigma`` is then the scatter left after
        it; a prediction at a seed the fit saw uses that seed's offset, at a new seed draws one.
    seed_within : str or None
        With ``seed_effect``: one offset per seed *and* level of this column. None: one offset per
        seed across the whole table (right for the shipped grids: every bxc-cross run has
        ``model.context`` 128, so the position table has 128 rows at every C and seed s starts from
        bit-identical weights in every cell).
    seed_kinds : bool
        Seeds by kind (issue 66): two crossed effects, ``weight_seed_sd * z[weight seed]`` and
        ``data_seed_sd * z[data seed]`` (columns ``weight_seed`` and ``data_seed``; a table without
        them takes ``seed`` for both, where the two are confounded). A prediction for a new run draws
        a new offset of each kind. Not with ``seed_effect``.
    form : {"power", "critical_batch", "tokens"}
        The law's line (:mod:`ihstats.law.forms`); the rest of the model is the same in each.
    """

    size_term: bool = False
    priors: dict = field(default_factory=dict)
    likelihood: Literal["student_t", "normal"] = "student_t"
    measurement_error: bool = True
    metric: str | None = None
    interval_level: float = 0.9
    hdi_prob: float = 0.9
    cell_effect: bool = False
    sigma_by: str | None = None
    form: str = "power"
    seed_effect: bool = False
    seed_within: str | None = None
    seed_kinds: bool = False

    def __post_init__(self):
        if self.form not in FORMS:
            raise UPTLawError(f"form: must be one of {list(FORMS)}, got {self.form!r}")
        if self.size_term and self.form != "power":
            raise UPTLawError(f"size_term: the {self.form} form has no model-size term; fit it with the power form")
        if self.sigma_by is not None and not (isinstance(self.sigma_by, str) and self.sigma_by):
            raise UPTLawError(f"sigma_by: a column name of the table (like 'C') or None, got {self.sigma_by!r}")
        if self.seed_within is not None and not (self.seed_effect and isinstance(self.seed_within, str)
                                                  and self.seed_within):
            raise UPTLawError(f"seed_within: a column name (like 'C') with seed_effect=True, got "
                              f"{self.seed_within!r} with seed_effect={self.seed_effect}")
        if self.seed_kinds and self.seed_effect:
            raise UPTLawError("seed_kinds: the seed effect by kind replaces the plain seed effect; set one of "
                              "seed_kinds and seed_effect")
        if self.likelihood not in ("student_t", "normal"):
            raise UPTLawError(f"likelihood: must be 'student_t' or 'normal', got {self.likelihood!r}")
        unknown = set(self.priors) - set(DEFAULT_PRIORS)
        if unknown:
            raise UPTLawError(f"priors: unknown key(s) {sorted(unknown)}; allowed: "
                              f"{sorted(DEFAULT_PRIORS)}")
        for name in ("interval_level", "hdi_prob"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise UPTLawError(f"{name}: must be in (0, 1), got {getattr(self, name)}")

    @property
    def resolved_priors(self) -> dict:
        return {**DEFAULT_PRIORS, **self.priors}
