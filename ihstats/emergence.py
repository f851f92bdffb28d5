"""Emergence as change-point detection: metric curves -> the docs/DESIGN.md emergence table.

All detectors work on one model-level curve per run (default: max PS over heads per step), in
``x = ln(step)`` (checkpoints at step <= 0 are left out), on any schedule, dense or log-spaced.

Onset, midpoint, end (shared with :mod:`ihstats.simulate.curves`): the knees ``a < b`` of a
*flat -> linear rise -> plateau* curve in log step; onset ``exp(a)``, end ``exp(b)``, midpoint
``exp((a + b) / 2)``, in updates. What that means for smooth, max-over-heads, two-stage and late
rises (the estimands the interval coverage is measured against):
:mod:`ihstats.simulate.coverage_curves`.

The detectors (``bayes``, the default; ``pelt`` and ``threshold``, cross-checks with bracketing
intervals) and their calibration are in :mod:`ihstats.detectors`, chosen by name through its
registry. This module turns run logs into curves (:func:`curve_series`), curves into the emergence
table (:func:`emergence_table`), a run's max PS into the formed verdict (:func:`formation`), and is
the ``python -m ihstats.emergence`` command line.

Censored rows hold ``onset = onset_lo = last_step`` (the censoring point), ``onset_hi`` NaN.
"""

from __future__ import annotations

import argparse
import errno
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ihstats.base import io
from ihstats.base.cli_checks import (PROBABILITY_OPEN, OutputPathError, Range, check_args, check_out_file, check_unused,
                                record_written)
from ihstats.certificate import (GENERAL_METRIC, certify, fit_basis, general_rows, has_general_probe)
from ihstats.base.contract import (CIRCUIT_COLUMNS, CIRCUIT_PREV_TOKEN_MIN, FORMED_LEVEL, ONSET_METRICS, formed_level,
                              max_over_heads, ps_crossing)
from ihstats.base.display import format_compact, head_label, parse_head, rounded_csv
from ihstats.detectors import DETECTORS, RESULT_COLUMNS, detect, get_detector
from ihstats.base.fileio import atomic_write_text, describe_os_error
from ihstats.tables import formed_counts
from ihstats.base.command import default_out, run_cli

DECREASING = ("val_loss", "ar_rank")  # metrics that fall when induction heads form
TIDY = ("step", "tokens", "metric", "layer", "head", "value", "run_id")
FORMED_METHOD = "bayes"  # the detector whose uncensored onset the crossing needs (formation)
#: the prefix-matching scores a verdict can be read on: the general score (certified onset), the repeat
#: probe's PS and the in-distribution PS (crossing onsets)
PS_METRICS = (GENERAL_METRIC, "ps", "ps_indist")
# On planted repeats the in-distribution PS creeps before the induction jump: a layer-0 head attends
# to the current token's likely successors (a successor lookup, ihstats.certificate) while no
# previous-token head exists yet; the loss gain creeps with it (docs/RESULTS.md, section 2, and
# "What 'formed' certifies"). Their onset is the rise that reaches the level below (PS: the formed level; the gain: 0.5
# nats), read by a detector that takes ``reach`` (the Bayesian one reads the curve floored at half the
# level, and of two stages the one that reaches it; a creep's knee goes to onset_alt). The general score
# creeps too on decoupled data (layer-0 heads reading the copy band's offsets reach 0.1-0.2 hundreds of
# updates before the certified head's jump), so a certified onset is also the rise that reaches the level.
CREEP_REACH: dict[str, float] = {GENERAL_METRIC: FORMED_LEVEL, "ps_indist": FORMED_LEVEL, "indist_gain": 0.5}


def with_general(metrics: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``metrics`` with the per-head general score rows (``ps_gen``, :func:`ihstats.certificate.general_rows`)
    appended when ``metric`` asks for it and the logs hold the general probe; else ``metrics`` as given."""
    if metric != GENERAL_METRIC or (metrics["metric"] == GENERAL_METRIC).any() or not has_general_probe(metrics):
        return metrics
    return pd.concat([metrics, general_rows(metrics)], ignore_index=True)


def curve_series(metrics: pd.DataFrame, metric: str = "ps", head: str = "max") -> pd.DataFrame:
    """Model-level curves from tidy metrics: columns run_id, layer, head, step, value.

    ``head``: ``"max"`` (max over heads per step; model-level metrics pass through), ``"L.H"``
    (one head, ``"L1H0"``; ``"1.0"`` is read too), or ``"each"`` (every head separately).
    """
    missing = [c for c in ("step", "metric", "layer", "head", "value") if c not in metrics.columns]
    if missing:
        raise ValueError(f"metrics frame: missing column(s) {', '.join(missing)}")
    m = with_general(metrics if "run_id" in metrics.columns else metrics.assign(run_id="run"), metric)
    names = sorted(m["metric"].unique())
    if metric not in names:
        raise ValueError(f"metric: {metric!r} is not in the logs; available: {', '.join(names) or 'none'}")
    m = m.loc[m["metric"] == metric, ["run_id", "layer", "head", "step", "value"]]
    if head == "each":
        return m.sort_values(["run_id", "layer", "head", "step"]).reset_index(drop=True)
    if head == "max":
        out = m.groupby(["run_id", "step"], as_index=False)["value"].max()
        return out.assign(layer=-1, head=-1)[["run_id", "layer", "head", "step", "value"]]
    try:
        lh = parse_head(head)
    except ValueError:
        raise ValueError(f"head: must be 'max', 'each' or a head like L1H0 (or 1.0); got {head!r}") from None
    out = m.loc[(m["layer"] == lh[0]) & (m["head"] == lh[1])]
    if out.empty:
        raise ValueError(f"head: {head!r} not found for metric {metric!r}")
    return out.sort_values(["run_id", "step"]).reset_index(drop=True)


def emergence_table(data: Any, metric: str = "auto", head: str = "max", method: str = "bayes",
                    level: float = 0.9, on_error: str = "raise", nonfinite: str = "error",
                    **kwargs: Any) -> pd.DataFrame:
    """The docs/DESIGN.md emergence table, one row per (run, metric[, head]).

    Parameters
    ----------
    data : path, ``ihstats.base.io.GridData``/``RunData`` or tidy metrics DataFrame
        A path is loaded with :func:`ihstats.base.io.load_grid` (run or grid directory). Columns of a
        plain frame other than the tidy ones are carried as run factors.
    metric : a metric name, or ``auto`` (default): :func:`onset_metric`'s choice, the general score (the
        certified onset) where the logs hold the general probe, else ``ps_indist``, else ``ps``.
    head, method, level : see :func:`curve_series` and :func:`ihstats.detectors.detect`;
        ``method`` names a registered detector (:data:`ihstats.detectors.DETECTORS`).
    on_error : {"raise", "skip"}
        A curve a detector rejects (too few checkpoints, ...), or a path's run that cannot be read
        (a damaged file), raises or is skipped with a warning.
    nonfinite : {"error", "drop"}
        A path's NaN or infinite metric values (a run that diverged) raise or are dropped; see
        :func:`ihstats.base.io.load_run`.
    **kwargs : the detector's parameters (see :func:`ihstats.detectors.detect`).

    Returns
    -------
    DataFrame
        run_id, factors (cell_id, seed, B, C, N, n_params, ...; a path or GridData/RunData always
        carries cell_id and seed, see :func:`ihstats.base.io.config_factors`), status, metric, head, onset, onset_lo,
        onset_hi, level, midpoint, end, censored, last_step, method, rise, log_bf, noise, final
        (the curve's value at its last step); for max PS (general, ``ps`` or ``ps_indist``) the
        certificate's columns (:func:`ihstats.certificate.certify` at each run's own formed level:
        ``formed`` = certified with an uncensored onset here, ``certificate``, ``mechanism``,
        ``mechanism_provisional``, ...), ``onset_basis`` (``certified`` on the general curve, else
        ``crossing``), with the Bayesian detector ``crossed`` (the old rule: uncensored onset and
        final >= the run's level), and the circuit columns of :func:`circuit` (crossing at the run's level).
    """
    if isinstance(data, (str, Path)):
        data = io.load_grid(data, nonfinite=nonfinite, on_error=on_error)
        for why in data.skipped:
            warnings.warn(f"{why} (run skipped)", stacklevel=2)
    if isinstance(data, io.RunData):
        runs = pd.DataFrame([{"run_id": data.run_id, "status": data.status, **data.factors,
                              "formed_level": formed_level(data.meta)}])
        metrics = data.metrics
    elif isinstance(data, io.GridData):
        runs, metrics = data.runs.drop(columns=["path"], errors="ignore"), data.metrics
    elif isinstance(data, pd.DataFrame):
        metrics = data if "run_id" in data.columns else data.assign(run_id="run")
        extra = [c for c in metrics.columns if c not in TIDY]
        runs = metrics.groupby("run_id", as_index=False)[extra].first() if extra else \
            pd.DataFrame({"run_id": metrics["run_id"].unique()})
    else:
        raise TypeError(f"data: expected a path, GridData, RunData or DataFrame, got {type(data).__name__}")
    metric = onset_metric(metrics) if metric == "auto" else metric
    series = curve_series(metrics, metric, head)
    direction = "down" if metric in DECREASING else "up"
    formed_at = _formed_levels(runs)
    rows = []
    for (rid, layer, hd), c in series.groupby(["run_id", "layer", "head"], sort=False):
        c = c.sort_values("step")
        label = head if head == "max" else head_label((layer, hd) if head == "each" else head)
        own = _with_reach(metric, method, kwargs, formed_at.get(rid, FORMED_LEVEL))
        try:
            r = detect(c["step"].to_numpy(), c["value"].to_numpy(), method, level, direction,
                       label=f"run {rid} {metric}[{label}]", **own)
        except ValueError as e:
            if on_error == "raise":
                raise
            warnings.warn(f"{e} (skipped)", stacklevel=2)
            continue
        rows.append({"run_id": rid, "metric": metric, "head": label, **r.row(), "final": float(c["value"].iloc[-1])})
    table = pd.DataFrame(rows, columns=["run_id", "metric", "head", *RESULT_COLUMNS, "final"])
    is_ps = metric in PS_METRICS and head == "max"
    _warn_if_two_rises(table, metric, method)
    if is_ps and (metrics["metric"] == "indist_gain").any():  # the other onsets beside (logs since issue 52)
        table = table.merge(onsets_beside(metrics, metric, method, level, **kwargs), on="run_id", how="left")
        table["gain_ratio"] = table["onset_gain"] / table["onset"].where(~table["censored"].astype(bool))
    if is_ps:
        table = _formed_and_circuit(table, metrics, metric, method, formed_at)
    return runs.merge(table, on="run_id", how="right")


def _formed_and_circuit(table: pd.DataFrame, metrics: pd.DataFrame, metric: str, method: str,
                        formed_at: dict[str, float]) -> pd.DataFrame:
    """A max-PS table with the certificate's columns, ``onset_basis``, ``formed`` (certified with an
    uncensored onset here) and ``crossed`` (both with the formed rule's detector only) and the circuit columns,
    each run at its own formed level (``train.emergence_threshold``, FORMED_LEVEL where none is recorded)."""
    own_level = table["run_id"].map(lambda rid: formed_at.get(rid, FORMED_LEVEL))
    if method == FORMED_METHOD:  # the old formed rule, kept as the crossing (formation)
        table["crossed"] = ~table["censored"].astype(bool) & (table["final"] >= own_level)
    certs = [{"run_id": rid, "certified": (c := certify(m, formed_at.get(rid, FORMED_LEVEL), metric)).certified,
              **c.row(), **circuit(with_general(m, metric), formed_at.get(rid, FORMED_LEVEL), metric)}
             for rid, m in metrics.groupby("run_id", sort=False)]
    table = table.merge(pd.DataFrame(certs), on="run_id", how="left")
    certified = table.pop("certified").fillna(False).astype(bool)
    if method == FORMED_METHOD:  # the verdicts need the Bayesian onset (another detector's table has none)
        table["formed"] = certified & ~table["censored"].astype(bool)
    table["onset_basis"] = "certified" if metric == GENERAL_METRIC else "crossing"
    held = table["crossed"] if "crossed" in table else ~table["censored"].astype(bool)
    table.loc[~held.astype(bool), "circuit"] = ""  # a circuit describes a head that crossed
    return table


def onsets_beside(metrics: pd.DataFrame, metric: str, method: str = "bayes", level: float = 0.9,
                  **kwargs: Any) -> pd.DataFrame:
    """Per run, the onsets of the other measures beside ``metric``'s: ``onset_ps`` (the repeat probe's
    PS, when ``metric`` is ``ps_indist``) and ``onset_gain`` (the probe-free ``indist_gain``);
    uncensored onsets by the same detector, NaN when censored, rejected or not logged."""
    others = {"onset_gain": "indist_gain", **({"onset_ps": "ps"} if metric != "ps" else {})}
    rows = []
    for rid, m in metrics.groupby("run_id", sort=False):
        row: dict[str, Any] = {"run_id": rid}
        for col, name in others.items():
            c = max_over_heads(m, name).dropna()
            c = c[c.index > 0]
            row[col] = np.nan
            if len(c) >= DETECTORS[method].min_points:
                try:
                    r = detect(c.index.to_numpy(), c.to_numpy(), method, level, "up", label=f"run {rid} {name}",
                               **_with_reach(name, method, kwargs))
                    row[col] = np.nan if r.censored else r.onset
                except ValueError:
                    pass  # a curve the detector rejects has no onset here
        rows.append(row)
    return pd.DataFrame(rows, columns=["run_id", *others])


def _with_reach(metric: str, method: str, kwargs: dict[str, Any], level: float = FORMED_LEVEL) -> dict[str, Any]:
    """The detector parameters for ``metric``: ``kwargs`` plus its :data:`CREEP_REACH` level where the
    detector takes ``reach`` and none was given. A run whose own formed level (``train.emergence_threshold``)
    is higher is read at that level on PS: where the creep itself reaches 0.3 (short, dense copies),
    such a run's stopping rule and onset both wait for the rise to its level."""
    if metric in CREEP_REACH and "reach" in DETECTORS[method].options():
        reach = max(CREEP_REACH[metric], level) if metric in PS_METRICS else CREEP_REACH[metric]
        return {"reach": reach, **kwargs}
    return dict(kwargs)


def _formed_levels(runs: pd.DataFrame) -> dict[str, float]:
    """Each run's formed level (its ``train.emergence_threshold``) where the runs table records one."""
    if "formed_level" not in runs:
        return {}
    levels = pd.to_numeric(runs["formed_level"], errors="coerce")
    return {rid: float(v) for rid, v in zip(runs["run_id"], levels) if np.isfinite(v)}


def _warn_if_two_rises(table: pd.DataFrame, metric: str, method: str) -> None:
    """Say how in-distribution PS curves that rise twice were read (the creep before the jump)."""
    twice = table["multimodal"].fillna(False).astype(bool) if "multimodal" in table else pd.Series(dtype=bool)
    if metric not in CREEP_REACH or not twice.any():
        return
    reach = "the run's formed level" if metric in PS_METRICS else f"{CREEP_REACH[metric]}"
    how = (f"the onset is the rise that reaches {reach}, the creep's knee is in onset_alt"
           if "reach" in DETECTORS[method].options() else
           f"the {method} detector cannot tell the creep from the jump; the onset may read the creep")
    warnings.warn(f"{int(twice.sum())} run(s) rise twice in {metric} (multimodal): on planted repeats the "
                  f"in-distribution PS can creep up before the induction jump; {how} (docs/RESULTS.md, section 2)",
                  stacklevel=3)


# ------------------------------------------------------------------------------ formed


def formation(metrics: pd.DataFrame, formed_level: float = FORMED_LEVEL, level: float = 0.9,
              metric: str = "ps") -> dict[str, Any]:
    """Whether one run formed an induction head, whether its PS crossed, and what the head looks like.

    *Formed* (the one meaning used by grid summaries, ``--status``, the budget reader and preset
    checks) is *certified* (:func:`ihstats.certificate.certify` at ``formed_level``, the run's own
    level) with an uncensored onset on ``metric``. *Crossed* (the old rule, which the
    until-emergence budget stops on): the Bayesian detector finds an uncensored onset in the max-PS
    curve of ``metric`` and max PS at the last evaluation is at least ``formed_level``. Beside the
    verdicts: ``onset_basis`` (``certified`` when ``metric`` is the general score, else
    ``crossing``), the certificate's columns (``certificate``, ``mechanism``, ...), ``n_ih_heads``
    (heads at the last evaluation whose PS is at least half the top head's, and at least
    ``formed_level / 2``: heads sharing the work), ``ih_head`` (``L1H2``: the top head),
    ``prev_token`` (the best previous-token score of a head in a layer below the top head's; NaN in
    layer 0) and the circuit columns of :func:`circuit` (crossing at ``formed_level``; blank when
    the run did not cross).

    ``metrics``: tidy rows of one run (``step, metric, layer, head, value``). ``metric``: the PS the
    onset reads (``ps_gen``, the general score, where logged: the certified onset; ``ps``, the
    repeat probe; ``ps_indist``, the data's own copies).
    """
    metrics = with_general(metrics, metric)
    cert = certify(metrics, formed_level, metric)
    ps = metrics.loc[metrics["metric"] == metric, ["step", "layer", "head", "value"]]
    out: dict[str, Any] = {"formed": False, "crossed": False, "onset": np.nan, "onset_lo": np.nan, "onset_hi": np.nan,
                           "censored": True, "final_max_ps": np.nan, "n_ih_heads": 0, "ih_head": "",
                           "prev_token": np.nan, **circuit(metrics, formed_level, metric), **cert.row(),
                           "onset_basis": "certified" if metric == GENERAL_METRIC else "crossing"}
    if ps.empty:
        return out
    curve = max_over_heads(metrics, metric)
    curve = curve[np.isfinite(curve.to_numpy()) & (curve.index > 0)]
    last = ps[ps["step"] == ps["step"].max()]
    top = last.loc[last["value"].idxmax()] if last["value"].notna().any() else None
    if top is None:
        return out
    out["final_max_ps"] = float(top["value"])
    out["ih_head"] = head_label((top["layer"], top["head"]))
    out["n_ih_heads"] = int((last["value"] >= max(0.5 * top["value"], 0.5 * formed_level)).sum())
    pt = metrics[(metrics["metric"] == "prev_token") & (metrics["step"] == ps["step"].max())
                 & (metrics["layer"] < top["layer"])]["value"]
    out["prev_token"] = float(pt.max()) if len(pt) else np.nan
    if len(curve) >= DETECTORS[FORMED_METHOD].min_points:
        params = _with_reach(metric, FORMED_METHOD, {}, formed_level)  # the onset the emergence table reads
        r = get_detector(FORMED_METHOD, level=level, **params).fit(curve.index.to_numpy(), curve.to_numpy())
        out.update(onset=r.onset, onset_lo=r.onset_lo, onset_hi=r.onset_hi, censored=r.censored)
    out["crossed"] = bool(not out["censored"] and out["final_max_ps"] >= formed_level)
    out["formed"] = bool(cert.certified and not out["censored"])
    if not out["crossed"]:  # PS may have crossed and fallen back: no head, so no circuit label
        out["circuit"] = ""
    return out


def circuit(metrics: pd.DataFrame, threshold: float = FORMED_LEVEL, metric: str = "ps") -> dict[str, Any]:
    """Which circuit one run's induction head is built on, read from its tidy metrics.

    At the PS crossing (the first evaluation with max PS >= ``threshold``,
    :func:`ihstats.base.contract.ps_crossing`): the top PS head, ``ih_head_crossing`` (``L1H2``), and the
    best layer-0 previous-token score, ``prev_token_l0_crossing``; at the last evaluation,
    ``prev_token_l0_end``. ``circuit`` is ``"prev-token"`` when the head sits above layer 0 and the
    better of the two scores is at least ``ihstats.base.contract.CIRCUIT_PREV_TOKEN_MIN``, else
    ``"no-prev-token"`` (a head that attends a fixed offset back can pass a short repeat probe
    without one); ``""`` when max PS never crossed or no previous-token score was logged. A run
    that did not cross (:func:`formation`'s ``crossed``) gets ``""`` from :func:`formation` and from
    the emergence table: a circuit is a property of a head that crossed. The certificate's class
    (``mechanism``) is the verdict on what the head does; this column says only what it sits on.

    Parameters
    ----------
    metrics : DataFrame
        Tidy rows of one run (``step, metric, layer, head, value``).
    threshold : float
        Max PS that counts as the crossing (a run's ``train.emergence_threshold``).

    Returns
    -------
    dict
        The :data:`ihstats.base.contract.CIRCUIT_COLUMNS`.
    """
    out: dict[str, Any] = {"ih_head_crossing": "", "prev_token_l0_crossing": np.nan,
                           "prev_token_l0_end": np.nan, "circuit": ""}
    pt0 = metrics.loc[(metrics["metric"] == "prev_token") & (metrics["layer"] == 0)]
    pt0 = pt0.groupby("step")["value"].max().sort_index()
    step = ps_crossing(metrics, threshold, metric)
    if pt0.empty or step is None:
        out["prev_token_l0_end"] = float(pt0.iloc[-1]) if len(pt0) else np.nan
        return out
    ps = metrics.loc[(metrics["metric"] == metric) & (metrics["step"] == step)]
    top = ps.loc[ps["value"].idxmax()]
    best = pt0.reindex([step, pt0.index[-1]]).to_numpy(dtype=float)
    built = int(top["layer"]) > 0 and bool(np.any(best >= CIRCUIT_PREV_TOKEN_MIN))
    out.update(ih_head_crossing=head_label((top["layer"], top["head"])), prev_token_l0_crossing=best[0],
               prev_token_l0_end=best[1], circuit="prev-token" if built else "no-prev-token")
    return out


def onset_metric(metrics: pd.DataFrame, onset: str = "auto") -> str:
    """The metric an onset kind reads (:data:`ihstats.base.contract.ONSET_METRICS`); ``auto``: the general
    score (the certified onset, :data:`ihstats.certificate.GENERAL_METRIC`) where the logs hold the
    general probe (issue 65), else the in-distribution PS where they hold it (issue 52), else the
    repeat probe's: the last two are crossing onsets, never certified."""
    if onset == "auto":
        if has_general_probe(metrics):
            return GENERAL_METRIC
        return "ps_indist" if (metrics["metric"] == "ps_indist").any() else "ps"
    if onset not in ONSET_METRICS:
        raise ValueError(f"onset: must be auto or one of {', '.join(ONSET_METRICS)}, got {onset!r}")
    return ONSET_METRICS[onset]


# ----------------------------------------------------------------------------------- CLI
# a rise must be a rise, an interval a probability, a Bayes factor evidence for the rise
CLI_RANGES = {"level": PROBABILITY_OPEN, "min_rise": Range(0, lo_open=True), "min_rise_sd": Range(0, lo_open=True),
              "min_log_bf": Range(0), "threshold": Range(0, lo_open=True)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ihstats.emergence",
                                description="Emergence table (onset, interval, midpoint, end, censoring) "
                                            "from a run or grid directory.")
    p.add_argument("runs_dir", nargs="+", help="run directory, grid directory, directory of run directories, "
                   "or scored series directory (python -m ihtrain.score); several are read as one table")
    p.add_argument("-o", "--out", default=None,
                   help="output CSV (default: results/emergence/<name of the (first) runs_dir>/emergence.csv)")
    p.add_argument("--onset", choices=("auto", *ONSET_METRICS), default="auto",
                   help="which onset: ps (the repeat probe's PS), indist (PS at the data's own copies), loss "
                        "(the in-distribution loss gain, probe-free); auto (default): indist where the logs hold "
                        "it, else ps. Sets --metric")
    p.add_argument("--metric", default=None, help="any metric name in metrics.parquet (overrides --onset)")
    p.add_argument("--head", default="max", help="max (over heads, default), each, or one head like L1H0")
    p.add_argument("--method", default="bayes", choices=list(DETECTORS), help="detector (default: bayes)")
    p.add_argument("--level", type=float, default=0.9, help="credible-interval level (default: 0.9)")
    p.add_argument("--min-rise", type=float, default=0.1, help="smallest rise that counts (metric units)")
    p.add_argument("--min-rise-sd", type=float, default=None,
                   help="pelt/threshold: smallest rise in noise sd (default: 7 pelt, 6 threshold)")
    p.add_argument("--min-log-bf", type=float, default=3.0, help="bayes: log Bayes factor needed (default 3)")
    p.add_argument("--threshold", type=float, default=None,
                   help="threshold: an absolute level whose crossing is the onset, e.g. 0.3 (the formed level, "
                        "as the until-emergence budget reads it); default: 10%% of the curve's rise")
    p.add_argument("--skip-bad", action="store_true", help="skip runs that cannot be read and curves a detector "
                   "rejects (one warning line each) instead of failing")
    p.add_argument("--nonfinite", choices=("error", "drop"), default="error",
                   help="NaN/infinite metric values (a diverged run): fail naming the file (default), or drop them")
    a = p.parse_args(argv)
    check_args(p, a, CLI_RANGES)
    takes = DETECTORS[a.method].options()
    check_unused(p, a, {**{f: None if f in takes else f"--method {a.method} does not take it"
                           for f in ("min_rise", "min_rise_sd", "min_log_bf", "threshold")},
                        "onset": "--metric chooses the metric" if a.metric else None})
    out = Path(a.out) if a.out else default_out("emergence", a.runs_dir[0]) / "emergence.csv"
    try:  # before any work: never a run's or grid's own file, nor one the package did not write
        check_out_file(out, a.runs_dir, "-o")
    except OutputPathError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # each flag goes to the detectors that take it (the others ignore it); min_rise_sd only when given
    flags = {"min_rise": a.min_rise, "min_log_bf": a.min_log_bf, "min_rise_sd": a.min_rise_sd,
             "threshold": a.threshold}
    kw = {k: v for k, v in flags.items() if v is not None and k in DETECTORS[a.method].options()}

    on_error = "skip" if a.skip_bad else "raise"
    try:
        data = io.load_grids(a.runs_dir, nonfinite=a.nonfinite, on_error=on_error)
        for why in data.skipped:
            print(f"warning: {why} (run skipped)", file=sys.stderr)
        with warnings.catch_warnings(record=True) as caught:  # skipped curves: one line each, as the runs
            warnings.simplefilter("always")
            metric = a.metric or onset_metric(data.metrics, a.onset)
            table = emergence_table(data, metric, a.head, a.method, a.level, on_error=on_error, **kw)
        for w in caught:
            print(f"warning: {w.message}", file=sys.stderr)
        shown = with_general(data.metrics, metric)  # the general score is derived from its three distances
        logged = set(shown.loc[shown["metric"] == metric, "run_id"])
        for run in data.runs[~data.runs["run_id"].isin(logged)].itertuples():  # said, never dropped silently
            print(f"warning: run {run.run_id} ({run.status}): no {metric!r} evaluations yet; not in the table",
                  file=sys.stderr)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        if out.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(out))
        atomic_write_text(out, rounded_csv(table))
        record_written(out)
    except OSError as e:
        print(f"error: -o {out}: cannot write the table ({describe_os_error(e)}); choose a writable file path",
              file=sys.stderr)
        return 2
    formed = table["formed"] if "formed" in table else None
    print(f"{metric} onset (updates), {a.method}, {a.level:.0%} interval:")
    print(format_compact(table))
    print(f"wrote {formed_counts(formed, table['censored'], 'runs' if a.head == 'max' else 'rows')} of the "
          f"{metric} onset to {out}{_basis_note(table)}")
    return 0


def _basis_note(table: pd.DataFrame) -> str:
    """What the table's onsets rest on, and how many runs crossed without the certificate."""
    if "onset_basis" not in table:
        return ""
    crossed = f", {int(table['crossed'].astype(bool).sum())} crossed" if "crossed" in table else ""
    return f"; onset basis: {fit_basis(table['onset_basis'], table['certificate'])}{crossed}"


if __name__ == "__main__":
    run_cli(main)
