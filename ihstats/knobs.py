"""The frequency x reliability knobs and the one rule for claiming which of them matters more.

Shared by the two fits that answer that question, the frontier (:mod:`ihstats.frontier`) and the
time-to-onset model (:mod:`ihstats.onset`), so neither reaches into the other's modules.
"""

from __future__ import annotations

import numpy as np

#: The two knobs, in the order of every design matrix and table.
KNOBS = ("frequency", "reliability")
CLAIM_PROBABILITY = 0.95  # a knob "matters more" only past this posterior probability


def knob_verdict(p_freq_larger: float, level: float = CLAIM_PROBABILITY,
                 quantity: str = "P(|b_freq| > |b_rel|)") -> str:
    """The answer to "which knob matters more", given the posterior probability ``quantity`` that
    frequency does (the frontier's ``P(|b_freq| > |b_rel|)``, the onset model's elasticities): a
    claim only when the posterior probability of it is at least ``level``; otherwise "not
    resolved", because a probability of 0.6 or 0.8 is a lean, not a finding."""
    if not np.isfinite(p_freq_larger):
        return "not resolved (the posterior probability is not finite)"
    for p, knob in ((p_freq_larger, "frequency"), (1.0 - p_freq_larger, "reliability")):
        if p >= level:
            return f"more sensitive to {knob} (posterior probability {p:.3f} >= {level})"
    lean = "frequency" if p_freq_larger > 0.5 else "reliability"
    return (f"not resolved: {quantity} = {p_freq_larger:.3f}, a lean toward {lean} "
            f"below the {level} needed to claim it")
