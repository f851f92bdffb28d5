"""A grid directory read back: each run's state, and the tables made from them: ``manifest.parquet``
(one row per run: factors, status, updates), the summary (``summary.csv`` and the closing table:
the *formed* verdict, onset, max PS, circuit, wall time per run) and the ``--status`` report.

Reading never trains or rewrites a run: a damaged ``status.json`` or log reads as ``unreadable``,
with what to do about it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ihstats.base.display import compact_runs, count, head_label, varying
from ihstats.base.contract import CIRCUIT_COLUMNS, MANIFEST_KEY_COLUMNS, read_crossing, read_status
from ihstats.certificate import CERTIFICATE_COLUMNS
from ihstats.emergence import circuit, formation, onset_metric, onsets_beside
from ihstats.base.fileio import UnreadableFile, atomic_write_parquet, read_json, read_parquet
from ihtrain.grid.expand import GridSpec, PlannedRun
from ihtrain.run.locks import GridLock
from ihtrain.run.files import done_run_problem


def checked_status(run_dir: Path) -> dict[str, Any] | None:
    """A run's status.json; a damaged one reads as ``{"status": "unreadable", "reason": why}``: its
    run is reported, never trained over or rewritten (the run may well be done)."""
    try:
        st = read_status(run_dir)
    except UnreadableFile as e:
        return {"status": "unreadable", "reason": str(e), "step": 0, "stop_reason": ""}
    why = done_run_problem(run_dir) if st and st["status"] == "done" else None  # done only with its config
    return {"status": "unreadable", "reason": why, "step": st["step"], "stop_reason": ""} if why else st


def run_state(run: PlannedRun, grid_dir: Path) -> tuple[str, dict[str, Any] | None]:
    """new | done | failed | unreadable | interrupted (a ``running`` status left by a killed grid,
    or by a run an I/O error stopped, counts as this)."""
    st = checked_status(grid_dir / run.run_id)
    if st is None:
        return "new", None
    return {"done": "done", "failed": "failed", "unreadable": "unreadable"}.get(st["status"], "interrupted"), st


def to_execute(state: str, retry_failed: bool) -> bool:
    return state in ("new", "interrupted") or (state == "failed" and retry_failed)


KEY_COLUMNS = MANIFEST_KEY_COLUMNS  # cell_id, seed: in every manifest and table, with or without seeds


def run_keys(run: PlannedRun) -> dict[str, Any]:
    """``cell_id`` (the config without its seed: shared by a cell's replicates) and the run's seed."""
    return {"cell_id": run.cell_id, "seed": run.seed}


def manifest_frame(spec: GridSpec, runs: list[PlannedRun], grid_dir: Path, live: bool = False) -> pd.DataFrame:
    """One row per run. A ``running`` status reads as ``interrupted`` unless ``live`` (a grid holds
    the lock, so its unfinished runs are running or queued to resume, not abandoned)."""
    unfinished = "running" if live else "interrupted"
    rows = []
    for r in runs:
        st = checked_status(grid_dir / r.run_id) or {}
        status = st.get("status", "pending")
        rows.append({"run_id": r.run_id, **run_keys(r), **r.factors, "budget": r.config.train.budget,
                     "status": unfinished if status == "running" else status,
                     "stop_reason": st.get("stop_reason", ""), "steps": int(st.get("step", 0)),
                     "tokens": int(st.get("step", 0)) * r.config.tokens_per_step, "reason": st.get("reason", "")})
    cols = ["run_id", *KEY_COLUMNS, *[c for c in spec.columns if c not in KEY_COLUMNS], "budget", "status",
            "stop_reason", "steps", "tokens", "reason"]
    return pd.DataFrame(rows, columns=cols)


def write_manifest(spec: GridSpec, runs: list[PlannedRun], grid_dir: Path) -> pd.DataFrame:
    frame = manifest_frame(spec, runs, grid_dir)
    atomic_write_parquet(grid_dir / "manifest.parquet", frame)
    return frame


def _no_results() -> dict[str, Any]:
    return {"formed": pd.NA, "crossed": pd.NA, "onset_basis": "", **{c: "" for c in CERTIFICATE_COLUMNS[:3]},
            "onset": float("nan"), "onset_lo": float("nan"), "onset_hi": float("nan"),
            "max_ps": float("nan"), "n_ih_heads": pd.NA, "ih_head": "", "prev_token": float("nan"),
            **circuit(pd.DataFrame(columns=["step", "metric", "layer", "head", "value"])), "wall_s": float("nan"),
            **other_onsets(pd.DataFrame(columns=["step", "metric", "layer", "head", "value"]), "ps", float("nan")),
            "data_entropy_rate": float("nan")}


def run_summary(run: PlannedRun, grid_dir: Path, threshold: float) -> dict[str, Any]:
    """Per-run results for the closing table: the *formed* verdict (certified, with an uncensored
    onset), ``crossed`` (the old rule: uncensored Bayesian onset and final max PS >= ``threshold``,
    the run's formed level), ``onset_basis``, the certificate and the mechanism class
    (:func:`ihstats.emergence.formation`, :mod:`ihstats.certificate`) with the onset and its 90%
    interval, final max PS, how many heads share the work, the top head, the best previous-token
    score below it, the run's circuit (:func:`ihstats.emergence.circuit`), the training wall time and
    ``data_entropy_rate``: the generator's exact entropy rate (bits/token, without planted repeats)
    where its source states one in config.json's data fingerprint (Markov tokens; else NaN)."""
    out = _no_results()
    rdir = grid_dir / run.run_id
    remedy = f"delete {rdir} and rerun the same command to train the run again"
    if (rdir / "metrics.parquet").is_file():
        m = read_parquet(rdir / "metrics.parquet", ["step", "metric", "layer", "head", "value"], "metric log", remedy)
        metric = onset_metric(m)  # the in-distribution PS where logged (issue 52), else the repeat probe's
        f = formation(m, formed_level=threshold, metric=metric)
        out.update({k: f[k] for k in ("formed", "crossed", "onset_basis", *CERTIFICATE_COLUMNS[:3], "onset", "onset_lo",
                                      "onset_hi", "n_ih_heads", "ih_head", "prev_token", *CIRCUIT_COLUMNS)},
                   max_ps=f["final_max_ps"])
        if f["censored"]:
            out.update(onset=float("nan"), onset_lo=float("nan"))
        out.update(other_onsets(m, metric, out["onset"]))
    if (rdir / "config.json").is_file():
        fingerprint = read_json(rdir / "config.json", "run's config", remedy).get("data_fingerprint") or {}
        out["data_entropy_rate"] = float(fingerprint.get("entropy_rate", float("nan")))
    if (rdir / "train.parquet").is_file():
        tr = read_parquet(rdir / "train.parquet", ["wall_s"], "training log", remedy)
        out["wall_s"] = float(tr["wall_s"].max()) if len(tr) else float("nan")
    return out


def other_onsets(m: pd.DataFrame, metric: str, onset: float) -> dict[str, Any]:
    """Beside the summary's onset (on ``metric``): which PS it reads, the repeat probe's PS onset,
    the probe-free loss-gain onset, and ``gain_ratio`` = loss-gain onset / onset (about 1 when the
    two measures agree). Uncensored Bayesian onsets; NaN when censored or not logged."""
    if m.empty:
        ps_onset = gain = float("nan")
    else:  # the emergence table's own rule for the onsets beside, one detector call per curve
        beside = onsets_beside(m.assign(run_id="run"), metric).iloc[0]
        ps_onset = onset if metric == "ps" else float(beside["onset_ps"])
        gain = float(beside["onset_gain"])
    return {"onset_metric": metric, "onset_ps": ps_onset, "onset_gain": gain, "gain_ratio": gain / onset}


def checked_summary(run: PlannedRun, grid_dir: Path, threshold: float) -> dict[str, Any]:
    """:func:`run_summary`, with a damaged log named in ``unreadable`` (a run is not *done* when its
    results cannot be read, however its status.json reads)."""
    try:
        return {**run_summary(run, grid_dir, threshold), "unreadable": ""}
    except UnreadableFile as e:
        return {**_no_results(), "unreadable": str(e)}


def summary_frame(spec: GridSpec, runs: list[PlannedRun], grid_dir: Path, live: bool = False) -> pd.DataFrame:
    man = manifest_frame(spec, runs, grid_dir, live)
    extra = pd.DataFrame([checked_summary(r, grid_dir, r.config.train.emergence_threshold) for r in runs])
    unreadable = extra.pop("unreadable")
    man.loc[unreadable != "", "status"] = "unreadable"
    man.loc[unreadable != "", "reason"] = unreadable[unreadable != ""]
    return pd.concat([man.drop(columns=["reason"]), extra, man[["reason"]]], axis=1)


def summary_display(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as printed: without budget and reason, factor columns by their last name part."""
    return summary.drop(columns=["budget", "reason"]).rename(columns=lambda c: c.split(".")[-1])


def round_results(show: pd.DataFrame) -> pd.DataFrame:
    """Onsets to whole updates, scores to 3 decimals, for printing."""
    show = show.copy()
    for c in ("onset", "onset_lo", "onset_hi", "onset_ps", "onset_gain"):
        show[c] = show[c].round(0).astype("Int64")
    for c in ("max_ps", "prev_token", "prev_token_l0_crossing", "prev_token_l0_end", "gain_ratio"):
        show[c] = show[c].round(3)
    return show


def crossings(runs: list[PlannedRun], grid_dir: Path) -> pd.Series:
    """Each run's threshold crossing (status.json's record, else its metric log's,
    :func:`ihstats.base.contract.read_crossing`); <NA> when not reached or not readable."""
    def one(r: PlannedRun) -> int | None:
        try:
            return read_crossing(grid_dir / r.run_id, r.config.train.emergence_threshold,
                                 r.config.train.emergence_metric)
        except (UnreadableFile, OSError):  # the summary reports the file as unreadable
            return None

    return pd.Series([one(r) for r in runs], dtype="Int64")


def status_report(spec: GridSpec, runs: list[PlannedRun], grid_dir: Path, wide: bool = False) -> str:
    """The grid's state for ``--status``: counts and wall time so far, then one line per run: by
    default narrow (id, the factors that vary, status, updates, onset [interval], formed, class,
    head, max PS, wall minutes); ``wide``: every summary column."""
    holder = GridLock(grid_dir).holder()
    summary = summary_frame(spec, runs, grid_dir, live=holder is not None)
    show = summary_display(summary)
    show.insert(show.columns.get_loc("max_ps") + 1, "crossing", crossings(runs, grid_dir))
    show["wall_min"] = (show.pop("wall_s") / 60).round(1)
    counts = summary["status"].value_counts().to_dict()
    wall = summary["wall_s"].sum(skipna=True)
    head = (f"grid {spec.name} in {grid_dir}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            + f"; {wall / 3600:.2f} run-hours of training so far"
            + (f"; a grid is running on it ({holder})" if holder else ""))
    if wide:
        return head + "\n" + format_table(round_results(show).assign(ih_head=lambda d: d["ih_head"].map(head_label)))
    return head + "\n" + narrow_table(show) + "\n(--wide: every column)"


def narrow_table(show: pd.DataFrame) -> str:
    """The narrow ``--status`` view (:func:`ihstats.base.display.compact_runs` plus the run's state)."""
    show = show.rename(columns={"batch_size": "B", "context": "C"})  # the factor names of the emergence table
    if "wall_min" not in show:
        show = show.assign(wall_min=(show["wall_s"] / 60).round(1))
    compact = compact_runs(show.assign(censored=show["onset"].isna()))
    sorted_show = show.sort_values(varying(show), kind="stable").reset_index(drop=True) if varying(show) else show
    compact.insert(compact.columns.get_loc("onset [90%]"), "status", sorted_show["status"].to_numpy())
    compact.insert(compact.columns.get_loc("onset [90%]"), "updates", sorted_show["steps"].map(count).to_numpy())
    compact["max_ps"] = sorted_show["max_ps"].round(2).to_numpy()
    compact["wall_min"] = sorted_show["wall_min"].to_numpy()
    started = sorted_show["status"].isin(["done", "failed", "running", "interrupted"]).to_numpy()
    compact.loc[~started, "onset [90%]"] = "-"
    return compact.to_string(index=False, na_rep="-")


def format_table(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False, na_rep="-", float_format=lambda x: f"{x:.3g}")

