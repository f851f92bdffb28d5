"""Change-point detectors of one emergence curve, registered by name (the engine of :mod:`ihstats.emergence`).

Each detector is a :class:`~ihstats.detectors.base.Detector` in its own module: a dataclass whose
fields are its parameters, with ``fit(steps, values) -> EmergenceResult``. This module is the
registry: :data:`DETECTORS` maps a name (the emergence table's ``method`` column, the CLI's
``--method``) to its class; :func:`get_detector` builds one by name, :func:`detect` runs one on a
curve. Callers choose a detector by name here, never by an if/elif of their own.

``bayes`` (:mod:`~ihstats.detectors.bayes`, the default)
    three-segment change point in log step, exact posterior over the knees, credible interval.
``pelt`` (:mod:`~ihstats.detectors.pelt`), ``threshold`` (:mod:`~ihstats.detectors.threshold`)
    cross-checks whose interval brackets the onset by checkpoints.

Adding a detector: write its module (a ``Detector`` subclass with a ``name``) and its test, then
``register_detector(MyDetector)`` (a built-in one is registered at the end of this module);
``emergence_table(..., method=name)`` and ``python -m ihstats.emergence --method name`` then use it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ihstats.detectors.base import RESULT_COLUMNS, Detector, EmergenceResult, check_curve, robust_noise
from ihstats.detectors.bayes import BayesDetector
from ihstats.detectors.pelt import PeltDetector
from ihstats.detectors.threshold import ThresholdDetector

DETECTORS: dict[str, type[Detector]] = {}


def register_detector(cls: type[Detector]) -> type[Detector]:
    """Register a :class:`Detector` subclass under its ``name`` (usable as a class decorator).

    Raises ``ValueError`` when the name is taken by another class.
    """
    name = getattr(cls, "name", None)
    if not (isinstance(cls, type) and issubclass(cls, Detector)) or not isinstance(name, str) or not name:
        raise TypeError(f"register_detector: expected a Detector subclass with a name, got {cls!r}")
    if DETECTORS.get(name, cls) is not cls:
        raise ValueError(f"register_detector: {name!r} is already {DETECTORS[name].__qualname__}")
    DETECTORS[name] = cls
    return cls


def get_detector(method: str, **params: Any) -> Detector:
    """The detector registered as ``method``, built with ``params`` (its fields)."""
    if method not in DETECTORS:
        raise ValueError(f"method: must be one of {', '.join(DETECTORS)}; got {method!r}")
    return DETECTORS[method](**params)


def detect(steps: Any, values: Any, method: str = "bayes", level: float = 0.9, direction: str = "up",
           label: str = "curve", **params: Any) -> EmergenceResult:
    """Detect the onset of a transition in one curve.

    Parameters
    ----------
    steps, values : array-like, (n,)
        Checkpoint steps (sorted, unique; steps <= 0 are ignored) and metric values (finite).
    method : str
        A registered detector (:data:`DETECTORS`): ``bayes``, ``pelt``, ``threshold``.
    level : float
        Credible-interval level for ``bayes``, in (0, 1) (pelt and threshold bracket the onset
        by checkpoints and record NaN).
    direction : {"up", "down"}
        ``down`` for metrics that fall when the heads form (``val_loss``, ``ar_rank``).
    label : str
        Names the curve in error messages.
    **params
        The detector's parameters: ``min_rise`` (all); ``min_log_bf``, ``n_grid``, ``weights``,
        ``lift`` (bayes); ``min_rise_sd`` (pelt, threshold); ``pen_c``, ``min_size``, ``on_frac``
        (pelt); ``threshold``, ``fracs``, ``smooth`` (threshold).

    Returns
    -------
    EmergenceResult
    """
    detector = get_detector(method, level=level, **params)
    if direction not in ("up", "down"):
        raise ValueError(f"direction: must be 'up' or 'down', got {direction!r}")
    v = np.asarray(values, dtype=float)
    return detector.fit(steps, -v if direction == "down" else v, label)


for _cls in (BayesDetector, PeltDetector, ThresholdDetector):
    register_detector(_cls)

__all__ = ["DETECTORS", "RESULT_COLUMNS", "BayesDetector", "Detector", "EmergenceResult", "PeltDetector",
           "ThresholdDetector", "check_curve", "detect", "get_detector", "register_detector", "robust_noise"]
