"""Grids through a real local Ray cluster (ray.init, not a mock): a 2-run grid, and a graceful stop
with per-run progress and a resume."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")

from ihtrain.grid.executors import STOP_FILE, Task, _ray_entry, ray_task_options  # noqa: E402
from ihtrain.grid.cli import build_parser, execute  # noqa: E402
from ihtrain.grid.plan import GridOptions  # noqa: E402
from ihtrain.grid.spec import parse_spec  # noqa: E402
from ihstats.base.schema import check_grid_dir  # noqa: E402
from test_grid_resume import ROOT, status  # noqa: E402

SPEC = {
    "name": "raygrid", "description": "two smoke runs as Ray tasks",
    "base": {"preset": "cpu-smoke", "train": {"max_steps": 8}, "metrics": {"n_evals": 3}},
    "axes": {"train.batch_size": [2, 4]},
}


def test_ray_task_options_pack_gpus():
    assert ray_task_options(2, 0.0) == {"num_cpus": 2, "max_retries": 0}
    assert ray_task_options(1, 0.25)["num_gpus"] == 0.25


def test_two_run_grid_on_a_local_ray_cluster(tmp_path, monkeypatch):
    cache = os.environ.get("IHLAW_CACHE") or str(tmp_path / "cache")
    monkeypatch.setenv("IHLAW_CACHE", cache)  # Ray workers inherit the driver's environment
    spec = parse_spec(SPEC)
    runs = spec.expand()
    out = tmp_path / "grid"
    out.mkdir()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"IHLAW_CACHE": cache, "OMP_NUM_THREADS": "1"}})
    try:
        # the CLI's own parser: every option the grid reads gets its default
        args = build_parser().parse_args(["--executor", "ray", "--threads-per-run", "1", "--no-progress",
                                          "--no-figures"])
        code = execute(spec, runs, out, GridOptions.from_args(args))
        # the grid reused our cluster: it is still up (a grid only shuts down a cluster it started)
        assert ray.is_initialized()
    finally:
        ray.shutdown()
    assert code == 0
    man = pd.read_parquet(out / "manifest.parquet")
    assert sorted(man["train.batch_size"]) == [2, 4]
    assert (man["status"] == "done").all() and (man["steps"] == 8).all()
    assert check_grid_dir(out) == []
    for r in runs:
        m = pd.read_parquet(out / r.run_id / "metrics.parquet")
        assert m["step"].max() == 8 and not m.duplicated(["step", "metric", "layer", "head"]).any()


def test_a_ray_task_started_after_a_stop_leaves_its_run_untouched(tmp_path):
    """A task still queued when the grid stops returns at once: no status, no checkpoint."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / STOP_FILE).touch()
    task = Task("r0", parse_spec(SPEC).expand()[0].config, str(run_dir), total_steps=8)
    assert _ray_entry(task) is None
    assert sorted(p.name for p in run_dir.iterdir()) == [STOP_FILE]


def test_sigterm_stops_ray_runs_gracefully_and_the_rerun_resumes(tmp_path):
    """SIGTERM to a grid on its own local Ray cluster: the run checkpoints where it stands and
    records stop_reason interrupted (a forced cancel would leave neither), the grid exits 130 and
    cleans up its stop files, and the same command finishes the run from that checkpoint. On the
    way, the grid's bar shows the run's updates as the task posts them."""
    steps, every = 3000, 100  # periodic checkpoints only every 100 updates
    spec = tmp_path / "grid.toml"
    spec.write_text(f"""
name = "raystop"
description = "one smoke run as a Ray task"
[base]
preset = "cpu-smoke"
[base.train]
max_steps = {steps}
checkpoint_every = {every}
[base.metrics]
n_evals = 6
""")
    out = tmp_path / "grid"
    cmd = [sys.executable, "-m", "ihtrain.grid", "--spec", str(spec), "--out", str(out), "--executor", "ray",
           "--threads-per-run", "1", "--no-figures"]
    # the bar writes a line to a log file every IHLAW_PROGRESS_INTERVAL s (10 by default: the run may end first)
    env = {**os.environ, "IHLAW_CACHE": os.environ.get("IHLAW_CACHE") or str(tmp_path / "cache"),
           "IHLAW_PROGRESS_INTERVAL": "0.2"}
    log_path = tmp_path / "grid.log"
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT, text=True)

    def shown(run_dir: Path) -> list[int]:  # the run's updates as the grid's bar showed them
        return [int(n) for n in re.findall(rf"{run_dir.name[:6]}:(\d+)/{steps}", log_path.read_text())]

    # stop once the run is part-way (a checkpoint, not finished) and the bar has shown its updates
    run_dir = None
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None and run_dir is None:
        run_dir = next((d for d in out.glob("*/") if 0 < status(d).get("step", 0) < steps and any(shown(d))), None)
        time.sleep(0.05)
    assert run_dir is not None, "never saw the run part-way, with its progress, before the grid ended:\n" + \
        log_path.read_text()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=180)
    log = log_path.read_text()
    assert proc.returncode == 130, log
    progress = shown(run_dir)
    assert 0 < max(progress) < steps and progress == sorted(progress), progress
    stopped = status(run_dir)
    assert stopped["stop_reason"] == "interrupted" and 0 < stopped["step"] < steps, stopped
    ckpt = torch.load(run_dir / "checkpoints" / "last.pt", weights_only=True)
    assert ckpt["step"] == stopped["step"]  # the rerun resumes where the status says the run stopped
    assert not list(out.rglob(STOP_FILE))

    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert status(run_dir)["status"] == "done" and status(run_dir)["step"] == steps
    assert check_grid_dir(out) == []
    m = pd.read_parquet(run_dir / "metrics.parquet")
    assert not m.duplicated(["step", "metric", "layer", "head"]).any()
    tr = pd.read_parquet(run_dir / "train.parquet")
    assert tr["step"].is_unique and tr["step"].max() == steps
