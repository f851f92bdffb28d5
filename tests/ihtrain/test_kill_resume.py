"""A solo run killed with SIGKILL mid-training and resumed ends bit-identical to a straight run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from ihtrain.config import parse_set_args, resolve
from ihtrain.run.train import train_run

ROOT = Path(__file__).resolve().parents[2]
STEPS = 240
SETTINGS = [f"{k}={v}" for k, v in {
    "data.source": "markov", "data.markov.vocab": 64, "data.markov.pool_tokens": 20000,
    "model.n_layer": 2, "model.n_head": 2, "model.d_model": 32, "model.context": 32,
    "train.batch_size": 8, "train.context": 16, "train.max_steps": STEPS, "train.lr": 3e-3,
    "train.warmup_steps": 5, "train.checkpoint_every": 7, "train.log_every": 1, "train.dtype": "float32",
    "train.device": "cpu", "train.threads": 1, "metrics.n_evals": 12, "metrics.probe_seqs": 8,
    "metrics.val_seqs": 4}.items()]
TIMING = ["wall_s", "tokens_per_s"]


def _step(run_dir: Path) -> int:
    try:
        return json.loads((run_dir / "status.json").read_text()).get("step", 0)
    except (OSError, ValueError):  # not written yet, or being replaced
        return 0


def _kill_part_way(run_dir: Path, env: dict) -> int:
    """Train in a subprocess, SIGKILL it once a third of the run is checkpointed; the step it reached."""
    cmd = [sys.executable, "-m", "ihtrain.train", "--preset", "cpu-smoke", "--out", str(run_dir), "--no-progress",
           *[a for s in SETTINGS for a in ("--set", s)]]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and _step(run_dir) < STEPS // 3:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.01)
        assert proc.poll() is None, f"the run ended before the kill: {proc.stderr.read()}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return _step(run_dir)


def test_sigkill_then_resume_equals_the_straight_run(tmp_path, smoke_cache):
    env = {**os.environ, "IHLAW_CACHE": str(smoke_cache), "OMP_NUM_THREADS": "1"}
    cfg = resolve("cpu-smoke", overrides=parse_set_args(SETTINGS))  # what the CLI resolves: the same run_id
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    train_run(cfg, straight, progress=False, make_figures=False)
    at = _kill_part_way(killed, env)
    assert 0 < at < STEPS
    assert train_run(cfg, killed, progress=False, make_figures=False)["status"] == "done"
    a, b = (pd.read_parquet(d / "train.parquet").drop(columns=TIMING) for d in (straight, killed))
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    a, b = (pd.read_parquet(d / "metrics.parquet") for d in (straight, killed))
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    wa, wb = (torch.load(d / "checkpoints" / "final.pt", weights_only=True)["model"] for d in (straight, killed))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
