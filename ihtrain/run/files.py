"""A run directory's files checked against each other before the run counts as done or is resumed
(issue 38): ``config.json`` is readable and its config hashes to its ``run_id`` (the directory's
name in a grid), and the logs a resume continues hold every row from the first update on.

Also the run directory's status as a run starts (:func:`start_run_dir`) and after an exception
(:func:`record_exception`), the same for a run trained alone and a member of a pack.

Also the run's recorded thread count: a CPU run's float sums depend on how many threads split
them, so a run resumes with the count it started with (docs/DESIGN.md, "Reproducibility").
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any

import pandas as pd

from ihstats.base.contract import read_status, write_status
from ihstats.base.fileio import UnreadableFile, atomic_write_text, describe_os_error, io_error_of, read_json
from ihstats.base.run_check import config_problem
from ihtrain.config import ConfigError, RunConfig


def read_config_record(run_dir: Path, remedy: str = "") -> dict[str, Any]:
    """``config.json`` as a dict whose ``config`` hashes to its ``run_id``; else :class:`UnreadableFile`
    (empty, not JSON, keys missing, or edited by hand after the run was made)."""
    path = run_dir / "config.json"
    rec = read_json(path, "run's config", remedy)
    why = config_problem(rec)  # the readers' own check (ihstats.base.run_check)
    if why:
        raise UnreadableFile(path, why, remedy)
    return rec


def done_run_problem(run_dir: Path) -> str | None:
    """Why a run whose status says done cannot count as done (None: it can): its config.json must
    be readable, self-consistent and name the run of its directory."""
    try:
        rec = read_config_record(run_dir, f"delete {run_dir} and rerun to train the run again")
    except UnreadableFile as e:
        return str(e)
    if rec["run_id"] != run_dir.name:
        return f"{run_dir}/config.json: holds run {rec['run_id']}, not {run_dir.name}"
    return None


def prepare_run_dir(cfg: RunConfig, run_dir: Path) -> None:
    """Create ``run_dir``, which must hold this run (by its config.json) or nothing."""
    if (run_dir / "config.json").is_file():
        old = read_config_record(run_dir, f"if {run_dir} holds this run, delete config.json and rerun the same "
                                 f"command (it is written anew and the run resumes); else choose another --out")
        if old["run_id"] != cfg.run_id():
            raise ConfigError(f"--out {run_dir}: holds a different run (run_id {old.get('run_id')}, this "
                              f"config is {cfg.run_id()}); choose another directory")
    run_dir.mkdir(parents=True, exist_ok=True)


def start_run_dir(cfg: RunConfig, run_dir: Path) -> bool:
    """Check and create the run directory (it must hold this run or nothing); False if the run is
    done already, else mark it running. A damaged config.json or status.json raises UnreadableFile
    here, before anything is written: the run's state is unknown, so it is neither marked failed nor
    trained over."""
    prepare_run_dir(cfg, run_dir)
    status = read_status(run_dir)
    if status and status["status"] == "done":
        return False
    write_status(run_dir, "running", status["step"] if status else 0, reason="starting",
                 crossing=(status or {}).get("crossing"))
    (run_dir / "error.txt").unlink(missing_ok=True)  # it holds the traceback of the latest attempt
    return True


def start_or_record(cfg: RunConfig, run_dir: Path) -> bool:
    """:func:`start_run_dir`, and a full disk or lost permission while starting recorded as such
    (resumable, with ``io_error``) before it propagates; a damaged file is still never written over."""
    try:
        return start_run_dir(cfg, run_dir)
    except OSError as e:
        if io_error_of(e) is not None:
            record_exception(run_dir, e)
        raise


def record_exception(run_dir: Path, e: BaseException, step_before: int = 0) -> None:
    """status.json after an exception: resumable when interrupted or stopped by an I/O error (a full
    disk, lost permissions: nothing is wrong with the run, so a plain rerun resumes it; the status
    carries ``io_error``), else failed at the step where it failed (a divergence names its own
    update; otherwise the last one recorded). ``error.txt`` gets the traceback in every case but an
    interrupt; a disk too full for it leaves the traceback on stderr only."""
    try:
        old = read_status(run_dir) or {}
    except (OSError, UnreadableFile):
        old = {}
    step = getattr(e, "step", None)
    if step is None:
        step = old.get("step", step_before)
    crossing = old.get("crossing")  # the last status write's: the run's own record of it
    if isinstance(e, KeyboardInterrupt):
        write_status(run_dir, "running", step, reason="interrupted", stop_reason="interrupted", crossing=crossing)
        return
    try:
        atomic_write_text(run_dir / "error.txt", "".join(traceback.format_exception(e)))
    except OSError as why:
        print(f"warning: could not write {run_dir / 'error.txt'} ({describe_os_error(why)})", file=sys.stderr)
    io = io_error_of(e)
    try:
        if io is not None:
            write_status(run_dir, "running", step, reason=f"stopped by an I/O error ({describe_os_error(io)}); "
                         f"fix it, then rerun the same command to resume", io_error=describe_os_error(io),
                         crossing=crossing)
        else:
            write_status(run_dir, "failed", step, reason=f"{type(e).__name__}: {e}", crossing=crossing)
    except OSError:  # the disk still refuses: status.json keeps its last state, "running" (resumable)
        pass


def recorded_threads(run_dir: Path) -> int | None:
    """The torch thread count the run's config.json recorded (None: none recorded, or no file)."""
    try:
        threads = read_json(run_dir / "config.json", "run's config").get("threads")
    except (UnreadableFile, AttributeError):
        return None
    return int(threads) if isinstance(threads, int) and threads > 0 else None


def resume_threads(cfg: RunConfig, run_dir: Path, current: int, resuming: bool) -> int:
    """The torch threads a run trains with: on resume the count its config.json recorded (a CPU
    run's float sums depend on it, so another count diverges within tens of updates), else
    ``train.threads`` (0: leave ``current``, the caller's setting, e.g. a grid worker's).
    ``resuming``: whether the run has a checkpoint to resume from."""
    recorded = recorded_threads(run_dir) if resuming else None
    if recorded and recorded != (cfg.train.threads or current):
        print(f"note: {run_dir} resumes with the {recorded} torch threads it started with, not "
              f"{cfg.train.threads or current}, so it computes what it would have", file=sys.stderr)
    return recorded or cfg.train.threads


def data_hashes(fingerprint: Any, prefix: str = "") -> dict[str, str]:
    """The content hashes inside a data fingerprint (every ``sha256`` and ``*_hash`` key, nested
    ones by dotted path): what must match for a resume to train on the same tokens. Statistics
    beside them (entropies, similarities) are left out: they may differ in the last float digits
    between machines for the same data."""
    out: dict[str, str] = {}
    for key, value in (fingerprint.items() if isinstance(fingerprint, dict) else ()):
        if isinstance(value, dict):
            out.update(data_hashes(value, f"{prefix}{key}."))
        elif key == "sha256" or key.endswith("_hash"):
            out[prefix + key] = str(value)
    return out


def check_resumed_data(run_dir: Path, fingerprint: dict[str, Any]) -> None:
    """A resumed run must train on the data it started on: the content hashes its config.json
    recorded must equal those of the data built now. The legacy ``builtin`` corpus is built from
    the installed packages' docstrings, so another machine or another package version builds other
    text (the H200 runs did); a shipped corpus (``builtin-v1``) is checked by its file's hash
    (``corpus_hash``). Continuing on other text would splice two corpora into one run silently.
    A config.json without a fingerprint (or no file) is not checked."""
    try:
        old = read_json(run_dir / "config.json", "run's config").get("data_fingerprint")
    except (UnreadableFile, AttributeError):
        return
    before, now = data_hashes(old), data_hashes(fingerprint)
    diff = [k for k in sorted(set(before) & set(now)) if before[k] != now[k]]
    if diff:
        k = diff[0]
        section = fingerprint  # the (nested) fingerprint holding the differing hash
        for part in k.split(".")[:-1]:
            section = section.get(part, {})
        # a shipped corpus names its file: the text in it is what changed
        what = (f"the corpus file {section['file']} changed" if "file" in section else
                "another corpus, tokenizer or package version")
        raise ConfigError(f"{run_dir / 'config.json'}: this run started on data with {k} {before[k][:12]}..., "
                          f"this machine builds {now[k][:12]}... ({what}); resume it where it started, "
                          f"or delete {run_dir} to train it anew here")


def check_resumed_log(path: Path, frame: pd.DataFrame | None, first_step: int, through: int) -> None:
    """A log a resume continues must hold its rows from ``first_step`` on (when the checkpoint at
    ``through`` lies past it): a deleted or cut log would otherwise be continued with a silent gap."""
    if through < first_step:
        return
    remedy = f"the run's early rows are lost: delete {path.parent} and train the run again"
    if frame is None:
        raise UnreadableFile(path, f"missing, but checkpoints/last.pt is at update {through}", remedy)
    start = int(frame["step"].min()) if len(frame) else None
    if start != first_step:
        raise UnreadableFile(path, f"starts at update {start}, not {first_step} (rows before it are missing)",
                             remedy)


def changed_settings(old: dict[str, Any], base_overrides: dict[str, Any], run_ids: list[str]) -> str | None:
    """Why a grid directory's ``grid.json`` (``old``) was made with other settings than this command's
    (None: the same runs): a rerun with another ``--set``/``--seeds`` would rewrite the grid's record
    and mix two configurations in one directory."""
    before = [r.get("run_id") for r in old.get("runs", [])]
    if sorted(before) == sorted(run_ids):
        return None
    was = (old.get("base") or {}).get("overrides") or {}
    diff = {k: (was.get(k), base_overrides.get(k)) for k in sorted(set(was) | set(base_overrides))
            if was.get(k) != base_overrides.get(k)}
    what = "; ".join(f"{k}: {a!r} then, {b!r} now" for k, (a, b) in diff.items()) or "the runs differ"
    return (f"was made with other settings ({what}; {len(before)} runs then, {len(run_ids)} now, "
            f"{len(set(run_ids) - set(before))} of them new); rerun with the settings it was made with, "
            f"or give another --out")
