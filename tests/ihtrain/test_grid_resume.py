"""kill -9 a grid mid-way, rerun the same command: every run completes exactly once, with no
duplicated or missing metric rows, and the grid directory is complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ihstats.base.schema import check_grid_dir
from ihtrain.run.schedule import eval_schedule

ROOT = Path(__file__).resolve().parents[2]
STEPS, N_EVALS, LOG_EVERY = 60, 12, 5

SPEC = f"""
name = "killme"
description = "three smoke runs, one at a time, checkpointing every 5 updates"
[base]
preset = "cpu-smoke"
[base.train]
max_steps = {STEPS}
checkpoint_every = 5
log_every = {LOG_EVERY}
[base.metrics]
n_evals = {N_EVALS}
[axes]
seed = [0, 1, 2]
"""


def status(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not reaped) counts as dead
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def worker_pids(run_dir: Path) -> list[int]:
    log = run_dir / "worker.log"
    if not log.is_file():
        return []
    return [int(line.split("worker pid ")[1].split()[0]) for line in log.read_text().splitlines()
            if "worker pid " in line]


def start_grid(tmp_path: Path, smoke_cache: Path, sigint_ignored: bool = False
               ) -> tuple[list[str], dict, Path, subprocess.Popen]:
    """The SPEC grid, one run at a time, in the background: (command, env, grid dir, process).
    ``sigint_ignored``: start it as a shell starts ``cmd &`` in a script, with SIGINT ignored."""
    spec = tmp_path / "grid.toml"
    spec.write_text(SPEC)
    out = tmp_path / "grid"
    cmd = [sys.executable, "-m", "ihtrain.grid", "--spec", str(spec), "--out", str(out), "--workers", "1",
           "--threads-per-run", "1", "--no-pack", "--no-progress", "--no-figures"]
    env = {**os.environ, "IHLAW_CACHE": str(smoke_cache)}
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=ignore)
    return cmd, env, out, proc


def runs_in(out: Path, state: str) -> list[Path]:
    """Run directories that are ``done``, or ``part-way`` (running, checkpointed, not finished)."""
    runs = [d for d in out.iterdir() if d.is_dir()] if out.is_dir() else []
    if state == "done":
        return [d for d in runs if status(d).get("status") == "done"]
    return [d for d in runs if status(d).get("status") == "running" and 0 < status(d).get("step", 0) < STEPS]


def test_sigkill_then_rerun_completes_each_run_once(tmp_path, smoke_cache):
    cmd, env, out, proc = start_grid(tmp_path, smoke_cache)

    # wait until one run is done and another is part-way (a checkpoint, not finished), then kill -9
    deadline = time.time() + 240
    killed_in = None
    while time.time() < deadline and proc.poll() is None:
        done, part = runs_in(out, "done"), runs_in(out, "part-way")
        if done and part:
            proc.send_signal(signal.SIGKILL)
            killed_in = part[0]
            break
        time.sleep(0.05)
    log = proc.communicate(timeout=60)[0]
    assert killed_in is not None, f"never saw a run part-way before the grid ended:\n{log}"
    assert proc.returncode == -signal.SIGKILL

    # the orphaned worker dies with the grid, so it cannot write into the run a rerun resumes
    for pid in worker_pids(killed_in):
        for _ in range(100):
            if not alive(pid):
                break
            time.sleep(0.1)
        assert not alive(pid), f"worker {pid} outlived the killed grid"
    # what the kill left behind: every file under its final name is complete and readable
    for p in out.rglob("*"):
        if p.suffix == ".parquet":
            pd.read_parquet(p)
        elif p.suffix == ".json":
            json.loads(p.read_text())
    done_before = {d.name: (d / "metrics.parquet").stat().st_mtime_ns for d in out.iterdir()
                   if d.is_dir() and status(d).get("status") == "done"}
    step_at_kill = status(killed_in)["step"]

    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{len(done_before)} done" in again.stdout

    man = pd.read_parquet(out / "manifest.parquet")
    assert len(man) == 3 and sorted(man["seed"]) == [0, 1, 2]
    assert (man["status"] == "done").all() and (man["steps"] == STEPS).all()
    assert check_grid_dir(out) == []
    expected_steps = set(eval_schedule(STEPS, N_EVALS, 0.5).tolist())
    for rid in man["run_id"]:
        rd = out / rid
        m = pd.read_parquet(rd / "metrics.parquet")
        key = ["step", "metric", "layer", "head"]
        assert not m.duplicated(key).any(), f"{rid}: duplicated metric rows"
        assert set(m["step"]) == expected_steps, (
            f"{rid} ({'killed at step %d' % step_at_kill if rd == killed_in else 'not killed'}): metric steps "
            f"{sorted(set(m['step']))}, schedule {sorted(expected_steps)}")
        # every evaluation has the same rows (no metric/head missing at some step)
        assert m.groupby("step").size().nunique() == 1
        tr = pd.read_parquet(rd / "train.parquet")
        assert tr["step"].tolist() == list(range(LOG_EVERY, STEPS + 1, LOG_EVERY)), f"{rid}: train steps"
        assert np.isfinite(tr["loss"]).all()
        starts = len(worker_pids(rd))
        if rid in done_before:  # done before the kill: not touched by the rerun
            assert starts == 1 and (rd / "metrics.parquet").stat().st_mtime_ns == done_before[rid]
        elif rd == killed_in:  # resumed from its checkpoint, not restarted
            assert starts == 2 and step_at_kill > 0
        else:
            assert starts == 1


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_or_kill_stops_the_grid_resumably(tmp_path, smoke_cache, signum):
    """SIGINT (Ctrl-C, `timeout -s INT`; here to a grid started with SIGINT ignored, as `cmd &` in
    a script starts it) or SIGTERM (`kill`): the workers checkpoint, the grid exits 130 with a
    resume hint, and the same command finishes the interrupted run from its checkpoint."""
    cmd, env, out, proc = start_grid(tmp_path, smoke_cache, sigint_ignored=signum == signal.SIGINT)
    deadline = time.time() + 240
    part = []
    while time.time() < deadline and proc.poll() is None and not part:
        part = runs_in(out, "part-way")
        time.sleep(0.05)
    assert part, "never saw a run part-way before the grid ended"
    proc.send_signal(signum)
    log = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, log
    assert f"interrupted; rerun the same command to resume ({out})" in log
    stopped = status(part[0])
    assert stopped["stop_reason"] == "interrupted" and 0 < stopped["step"] < STEPS, stopped

    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    man = pd.read_parquet(out / "manifest.parquet")
    assert (man["status"] == "done").all() and (man["steps"] == STEPS).all()
    assert len(worker_pids(part[0])) == 2  # resumed, not restarted from scratch
    m = pd.read_parquet(part[0] / "metrics.parquet")
    assert not m.duplicated(["step", "metric", "layer", "head"]).any()
