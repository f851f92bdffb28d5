"""The induction certificate (docs/DESIGN.md, "Emergence", "Certificate"): from one run's logs, is
its head an induction head, and if not, what copies instead. Torch-free.

*Formed* means certified: at an evaluation some head reaches the run's formed level
(:func:`ihstats.base.contract.formed_level`), and at least :data:`GENERAL_LEVEL` (0.383: above the 1/3 a
head spreading its attention over the three offsets reads), on the general induction probe at every
probed distance
(``ps_gen_near``, ``ps_gen_mid``, ``ps_gen_far``: random tokens repeated at three copy distances
inside the source's repeat region), and, where the source gives a successor control
(``ps_indist_ctrl`` with its ceiling ``ceil_succ_ctrl``), the best head's controlled score clears
that ceiling by :data:`CERT_MARGIN`. A fixed-offset copier passes one distance, a successor lookup
and an in-distribution lookup pass none: none of them is certified. The certified onset is the
Bayesian detector's onset on the *general* curve, max over heads of the min over distances
(:func:`general_curve`, the ``ps_gen`` onset metric).

Every run also gets a mechanism class (:data:`MECHANISM_CLASSES`) by the explicit rules of
:func:`classify`; logs without the general probe (every grid shipped before issue 65) are
``uncertifiable (no general probe)``, never formed, with a provisional class read from what they
hold (:func:`provisional_class`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ihstats.base.contract import (CIRCUIT_PREV_TOKEN_MIN, FORMED_LEVEL, GENERAL_PROBE_METRICS, GENERAL_SCORE,
                                   emergence_metric, formed_level, general_rows, max_over_heads, ps_crossing)
from ihstats.detectors import DETECTORS, get_detector

#: the general probe's three distances, nearest first (ihstats.base.contract.general_probe_layout's slots)
GENERAL_SLOTS = GENERAL_PROBE_METRICS
#: the derived per-head general score, min over the three distances; its max over heads is the
#: curve the certified onset reads (``--onset general``)
GENERAL_METRIC = GENERAL_SCORE
CTRL_METRIC, CTRL_CEILING = "ps_indist_ctrl", "ceil_succ_ctrl"
PMI_CEILING = "ceil_succ_pmi_indist"  # ps_indist of the sharpened oracle successor head
#: how far the best head's successor-controlled in-distribution PS must clear the oracle successor
#: heads' controlled score (``ceil_succ_ctrl``): a PS difference of 0.1 is about 3 noise sd of a
#: plateau on the shipped logs, and half the gap between the successor ceilings at C 32 and C 64
CERT_MARGIN = 0.1
#: the least level each probed distance must reach: above 1/3, what a head that spreads its
#: attention evenly over the three probed offsets reads at each distance, by half the margin (0.383).
#: A run's own formed level applies where higher (:func:`general_level`)
GENERAL_LEVEL = max(FORMED_LEVEL, 1 / len(GENERAL_SLOTS) + CERT_MARGIN / 2)


def general_level(level: float) -> float:
    """The level each distance of the general probe must reach for a run at formed ``level``."""
    return max(level, GENERAL_LEVEL)
ONSET_METHOD = "bayes"  # the detector whose onset on the general curve is the certified onset

MECHANISM_CLASSES = ("induction (previous-token)", "induction (other circuit)", "fixed-offset copy",
                     "successor lookup", "in-distribution lookup", "none", "uncertifiable (no general probe)")
INDUCTION_PT, INDUCTION_OTHER, FIXED_OFFSET, SUCCESSOR, INDIST_LOOKUP, NO_HEAD, UNCERTIFIABLE = MECHANISM_CLASSES
#: the ``certificate`` column's values
CERTIFICATES = ("certified", "not certified", UNCERTIFIABLE)
#: the ``onset_basis`` column's values: the onset read on the certified general curve, or a crossing
#: of a PS that does not certify (legacy logs; or a table asked for another onset)
ONSET_BASES = ("certified", "crossing")
#: what every fit on legacy logs says about its outcome (console line, report text, a column)
LEGACY_BASIS = "crossing, not certified: logs lack the general probe"


@dataclass(frozen=True)
class Certificate:
    """One run's certificate (:func:`certify_run`).

    ``certified``: the rule holds at the last evaluation. ``cls``: its class
    (:data:`MECHANISM_CLASSES`). ``certificate``: one of :data:`CERTIFICATES`. ``certified_step``:
    the first evaluated step from which the rule holds to the end (None unless certified).
    ``crossing_step``: the first step at which max PS of the run's emergence metric reached its level.
    ``onset``, ``onset_lo``, ``onset_hi``: the certified onset on the general curve (NaN unless
    certified). ``general_end``: max over heads of each distance's score at the last evaluation.
    ``provisional``: for logs without the general probe, the class read from what they hold
    (:func:`provisional_class`); "" otherwise. ``reason``: one line saying why.
    """
    certified: bool
    cls: str
    certificate: str
    level: float
    certified_step: int | None = None
    crossing_step: int | None = None
    onset: float = float("nan")
    onset_lo: float = float("nan")
    onset_hi: float = float("nan")
    general_end: dict[str, float] = field(default_factory=dict)
    provisional: str = ""
    reason: str = ""

    def row(self) -> dict[str, Any]:
        """The certificate's columns in the emergence table and ``summary.csv``."""
        return {"certificate": self.certificate, "mechanism": self.cls, "mechanism_provisional": self.provisional,
                "certified_step": self.certified_step, "certificate_reason": self.reason,
                **{f"{slot}_end": self.general_end.get(slot, float("nan")) for slot in GENERAL_SLOTS}}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: the certificate's columns (Certificate.row), in order
CERTIFICATE_COLUMNS = ("certificate", "mechanism", "mechanism_provisional", "certified_step", "certificate_reason",
                       *(f"{slot}_end" for slot in GENERAL_SLOTS))


def has_general_probe(metrics: pd.DataFrame) -> bool:
    """Whether a run's tidy metrics hold all three distances of the general probe."""
    return set(GENERAL_SLOTS) <= set(metrics["metric"].unique())


def general_curve(metrics: pd.DataFrame) -> pd.Series:
    """The general curve of one run: max over heads of each head's min over distances, by step."""
    return max_over_heads(general_rows(metrics), GENERAL_METRIC)


def certify_run(metrics: pd.DataFrame, meta: dict[str, Any]) -> Certificate:
    """One run's certificate from its tidy metrics and its ``config.json`` dict (its own formed
    level, :func:`ihstats.base.contract.formed_level`; its emergence metric for the crossing).

    Parameters
    ----------
    metrics : DataFrame
        Tidy rows of one run (``step, metric, layer, head, value``).
    meta : dict
        The run's ``config.json`` (or a scored series' ``series.json``: the default level).

    Returns
    -------
    Certificate
    """
    return certify(metrics, formed_level(meta), emergence_metric(meta))


def certify(metrics: pd.DataFrame, level: float = FORMED_LEVEL, watched: str = "ps") -> Certificate:
    """:func:`certify_run` at an explicit ``level``, with the crossing read on ``watched``."""
    crossing = ps_crossing(metrics, level, watched) if len(metrics) else None
    if not has_general_probe(metrics):
        cls, why = provisional_class(metrics, level, watched)
        return Certificate(False, UNCERTIFIABLE, UNCERTIFIABLE, level, crossing_step=crossing, provisional=cls,
                           reason=f"no general probe in the logs; provisional: {why}")
    holds = _rule_by_step(metrics, general_level(level))
    certified = bool(len(holds)) and bool(holds.iloc[-1])
    last = metrics["step"].max()
    end = metrics[metrics["step"] == last]
    general_end = {s: _max_at(end, s) for s in GENERAL_SLOTS}
    cls, why = classify(end, level, certified)
    out = Certificate(certified, cls, "certified" if certified else "not certified", level,
                      crossing_step=crossing, general_end=general_end, reason=why)
    if not certified:
        return out
    failed = holds.index[~holds.to_numpy()]
    since = int(holds.index[holds.index > failed[-1]][0]) if len(failed) else int(holds.index[0])
    onset = _general_onset(metrics, level)
    return Certificate(**{**out.as_dict(), "certified_step": since, **onset})


def _max_at(rows: pd.DataFrame, metric: str) -> float:
    v = rows.loc[rows["metric"] == metric, "value"]
    return float(v.max()) if v.notna().any() else float("nan")


def _rule_by_step(metrics: pd.DataFrame, level: float) -> pd.Series:
    """Whether the certificate's rule holds at each evaluated step (bool by step, ascending)."""
    gen = general_rows(metrics)
    passes = (gen["value"] >= level).groupby(gen["step"]).any().sort_index()
    ctrl = max_over_heads(metrics, CTRL_METRIC)
    ceil = max_over_heads(metrics, CTRL_CEILING)
    if len(ctrl) and len(ceil):  # the successor control, where the source gives it (finite: some query held)
        ceil = ceil.reindex(ctrl.index)
        given = np.isfinite(ctrl.to_numpy()) & np.isfinite(ceil.to_numpy())
        clear = pd.Series(~given | (ctrl.to_numpy() >= ceil.to_numpy() + CERT_MARGIN), index=ctrl.index)
        passes = passes & clear.reindex(passes.index, fill_value=True)
    return passes


def _ctrl_state(end: pd.DataFrame) -> str:
    """``above`` (controlled score clears the successor ceiling by the margin), ``within``, or
    ``n/a`` (the source gives no control or ceiling)."""
    ctrl, ceil = _max_at(end, CTRL_METRIC), _max_at(end, CTRL_CEILING)
    if not (np.isfinite(ctrl) and np.isfinite(ceil)):
        return "n/a"
    return "above" if ctrl >= ceil + CERT_MARGIN else "within"


def classify(end: pd.DataFrame, level: float, certified: bool) -> tuple[str, str]:
    """The mechanism class of a run whose logs hold the general probe, from its last evaluation's
    rows ``end``, with one line saying why. Rules, in order (docs/DESIGN.md, "Certificate"):

    1. certified: ``induction (previous-token)`` when the best general head sits above layer 0 and
       the best layer-0 ``prev_token`` is at least ``contract.CIRCUIT_PREV_TOKEN_MIN``, else
       ``induction (other circuit)`` (the previous-token head is a label, not a requirement);
    2. some head passes every distance but the successor control stays within the margin of its
       ceiling: ``successor lookup``;
    3. some head passes one or two distances, none all: ``fixed-offset copy``;
    4. no head passes a distance, ``ps_indist`` reaches the level: ``successor lookup`` when the
       control stays within the margin of its ceiling (without a control: ``ps_indist`` within the
       margin of the sharpened successor ceiling ``ceil_succ_pmi_indist``), else
       ``in-distribution lookup``;
    5. else ``none``.
    """
    gen = end[end["metric"].isin(GENERAL_SLOTS)].pivot_table(index=["layer", "head"], columns="metric", values="value")
    gen = gen.reindex(columns=list(GENERAL_SLOTS))
    n_pass = (gen >= general_level(level)).sum(axis=1)
    scores = ", ".join(f"{s[3:]} {gen[s].max():.2f}" for s in GENERAL_SLOTS)
    ctrl = _ctrl_state(end)
    if certified:
        layer, head = gen.min(axis=1).idxmax()
        pt0 = end.loc[(end["metric"] == "prev_token") & (end["layer"] == 0), "value"].max()
        label = INDUCTION_PT if layer > 0 and pt0 >= CIRCUIT_PREV_TOKEN_MIN else INDUCTION_OTHER
        return label, f"head {layer}.{head} passes every distance ({scores}) at level {general_level(level):.3g}; layer-0 " \
                      f"previous-token {pt0:.2f}"
    if (n_pass == len(GENERAL_SLOTS)).any():
        return SUCCESSOR, f"a head passes every distance ({scores}) but the successor-controlled score stays " \
                          f"within {CERT_MARGIN:g} of its ceiling"
    if (n_pass > 0).any():
        return FIXED_OFFSET, f"a head passes {int(n_pass.max())} of {len(GENERAL_SLOTS)} distances, none all " \
                             f"({scores}, level {general_level(level):.3g})"
    indist = _max_at(end, "ps_indist")
    if np.isfinite(indist) and indist >= level:
        return _lookup_kind(end, indist, ctrl, f"no head passes a distance ({scores}); ps_indist {indist:.2f}")
    return NO_HEAD, f"no head passes a distance ({scores}) and ps_indist {indist:.2f} < {level:g}"


def _lookup_kind(end: pd.DataFrame, indist: float, ctrl: str, said: str) -> tuple[str, str]:
    """Successor or in-distribution lookup for a run whose in-distribution PS crossed without the
    general probe passing: the successor control decides, else the sharpened successor ceiling."""
    if ctrl == "within":
        return SUCCESSOR, f"{said}, successor-controlled score within {CERT_MARGIN:g} of its ceiling"
    if ctrl == "above":
        return INDIST_LOOKUP, f"{said}, successor-controlled score above its ceiling"
    pmi = _max_at(end, PMI_CEILING)
    if np.isfinite(pmi) and indist <= pmi + CERT_MARGIN:
        return SUCCESSOR, f"{said} within {CERT_MARGIN:g} of the sharpened successor ceiling {pmi:.2f}"
    tail = f"above the sharpened successor ceiling {pmi:.2f}" if np.isfinite(pmi) else "successor ceiling not computed"
    return INDIST_LOOKUP, f"{said} ({tail})"


def provisional_class(metrics: pd.DataFrame, level: float, watched: str = "ps") -> tuple[str, str]:
    """The class of a run whose logs lack the general probe, read from what they hold (its last
    evaluation), with one line saying why. Provisional: a single probe distance cannot tell a
    fixed-offset copier from an induction head. Rules, in order:

    1. the random-token repeat probe (``ps``) reaches its level: the run's own where the run watches
       ``ps`` (``watched``), else :data:`ihstats.base.contract.FORMED_LEVEL` (random tokens have no
       successor structure to creep on, so a level raised to lift ``ps_indist`` over its successor
       creep does not apply to them): ``induction
       (previous-token)`` with a previous-token head (layer-0 ``prev_token`` >=
       ``CIRCUIT_PREV_TOKEN_MIN`` under a top head above layer 0); else ``induction (other circuit)``
       when ``ps_indist`` also reaches the run's level (copying at a second placement); else
       ``fixed-offset copy`` (one distance, no previous-token head);
    2. ``ps_indist`` reaches the run's level with ``ps`` below: ``induction (previous-token)`` when
       its top head sits above layer 0 over a previous-token head (the random-token probe may sit
       off the data's repeat region: ``analyses/probe_audit.py``); else ``successor lookup`` when
       within :data:`CERT_MARGIN` of the sharpened successor ceiling (where logged), else
       ``in-distribution lookup``;
    3. else ``none``.
    """
    if metrics.empty:
        return NO_HEAD, "no evaluations"
    end = metrics[metrics["step"] == metrics["step"].max()]
    ps, indist = _max_at(end, "ps"), _max_at(end, "ps_indist")
    pt0 = _max_at(end[end["layer"] == 0], "prev_token")
    said = f"random-token PS {ps:.2f}, ps_indist {indist:.2f}, layer-0 previous-token {pt0:.2f}"
    if np.isfinite(ps) and ps >= (level if watched == "ps" else FORMED_LEVEL):
        rows = end[end["metric"] == "ps"]
        top_layer = int(rows.loc[rows["value"].idxmax(), "layer"])
        if top_layer > 0 and pt0 >= CIRCUIT_PREV_TOKEN_MIN:
            return INDUCTION_PT, said
        if np.isfinite(indist) and indist >= level:
            return INDUCTION_OTHER, f"{said}: copies random tokens and the data's copies without a previous-token head"
        return FIXED_OFFSET, f"{said}: one probe distance passed without a previous-token head"
    if np.isfinite(indist) and indist >= level:
        rows = end[end["metric"] == "ps_indist"]
        if int(rows.loc[rows["value"].idxmax(), "layer"]) > 0 and pt0 >= CIRCUIT_PREV_TOKEN_MIN:
            return INDUCTION_PT, f"{said}: the data's copies over a previous-token head"
        return _lookup_kind(end, indist, "n/a", f"{said}: the data's copies only")
    return NO_HEAD, said


def _general_onset(metrics: pd.DataFrame, level: float) -> dict[str, float]:
    """The Bayesian onset of the general curve (the certified onset) and its interval; NaN when the
    curve is too short or the detector finds no rise (a head certified from the first evaluation).
    Read as the rise that reaches the run's formed ``level`` (the detector's ``reach``): on decoupled
    data the curve creeps to 0.1-0.2 (layer-0 heads reading the copy band's offsets) hundreds or
    thousands of updates before the certified head's jump, and the first knee would date the creep."""
    curve = general_curve(metrics)
    curve = curve[np.isfinite(curve.to_numpy()) & (curve.index > 0)]
    nan = {"onset": float("nan"), "onset_lo": float("nan"), "onset_hi": float("nan")}
    if len(curve) < DETECTORS[ONSET_METHOD].min_points:
        return nan
    r = get_detector(ONSET_METHOD, reach=max(FORMED_LEVEL, level)).fit(curve.index.to_numpy(), curve.to_numpy())
    return nan if r.censored else {"onset": r.onset, "onset_lo": r.onset_lo, "onset_hi": r.onset_hi}


def fit_basis(bases: pd.Series | np.ndarray, certificates: pd.Series | np.ndarray | None = None) -> str:
    """What a fit's outcome rests on, in the words every fit output uses: ``certified``, or
    :data:`LEGACY_BASIS` (crossings on logs without the general probe), or
    ``crossing, not certified: ...`` for another crossing onset; mixed tables say both counts."""
    b = pd.Series(np.asarray(bases, dtype=object)).fillna("")
    crossing = int((b == "crossing").sum())
    if crossing == 0:
        return "certified"
    legacy = certificates is not None and bool((pd.Series(np.asarray(certificates, dtype=object)) == UNCERTIFIABLE).all())
    text = LEGACY_BASIS if legacy else "crossing, not certified: the table reads a crossing onset, not the general curve"
    return text if crossing == len(b) else f"mixed: {len(b) - crossing} certified, {crossing} {text}"


__all__ = ["CERTIFICATES", "CERTIFICATE_COLUMNS", "CERT_MARGIN", "CTRL_CEILING", "CTRL_METRIC", "Certificate",
           "GENERAL_LEVEL", "GENERAL_METRIC", "GENERAL_SLOTS", "LEGACY_BASIS", "MECHANISM_CLASSES", "ONSET_BASES", "PMI_CEILING",
           "certify", "certify_run", "classify", "fit_basis", "general_curve", "general_level", "general_rows", "has_general_probe",
           "provisional_class"]
