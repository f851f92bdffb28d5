"""A packed grid: kill -9 mid-way, rerun, every member completes exactly once; a member that stops
early or fails leaves its pack and the others go on."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from ihstats.base.schema import check_grid_dir
from ihtrain.run.schedule import eval_schedule

sys.path.insert(0, str(Path(__file__).parent))
from test_grid_resume import alive, status  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
STEPS, SHORT, N_EVALS, LOG_EVERY = 60, 20, 12, 5

# six runs of one shape, so one pack: two seeds x (full length, stopping early, diverging at once)
SPEC = f"""
name = "packkill"
description = "six same-shape smoke runs packed into one process"
[base]
preset = "cpu-smoke"
[base.data]
source = "markov"
[base.data.markov]
vocab = 64
pool_tokens = 20000
[base.train]
max_steps = {STEPS}
checkpoint_every = 5
log_every = {LOG_EVERY}
[base.metrics]
n_evals = {N_EVALS}
[axes]
seed = [0, 1]
kind = [
  {{ label = "full", "train.max_steps" = {STEPS} }},
  {{ label = "short", "train.max_steps" = {SHORT} }},
  {{ label = "diverge", "train.lr" = 1e6 }},
]
"""


def pack_starts(out: Path) -> list[tuple[int, list[str]]]:
    """(worker pid, member run ids) of every pack started in the grid directory."""
    starts = []
    for log in out.glob("*/worker.log"):
        for line in log.read_text().splitlines():
            if "packed: " in line:
                starts.append((int(line.split("worker pid ")[1].split()[0]), line.split("packed: ")[1].split()))
    return starts


def kinds(out: Path) -> dict[str, str]:
    grid = json.loads((out / "grid.json").read_text())
    return {r["run_id"]: r["factors"]["kind"] for r in grid["runs"]}


def test_packed_grid_sigkill_then_rerun_completes_each_member_once(tmp_path):
    spec = tmp_path / "grid.toml"
    spec.write_text(SPEC)
    out = tmp_path / "grid"
    cmd = [sys.executable, "-m", "ihtrain.grid", "--spec", str(spec), "--out", str(out), "--workers", "1",
           "--threads-per-run", "1", "--pack", "--no-progress", "--no-figures"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    # wait until a short member has finished (left the pack) and a full one is part-way, then kill -9
    deadline, killed = time.time() + 240, False
    while time.time() < deadline and proc.poll() is None:
        if (out / "grid.json").is_file():
            kind = kinds(out)
            st = {rid: status(out / rid) for rid in kind}
            done_short = [r for r in kind if kind[r] == "short" and st[r].get("status") == "done"]
            part_full = [r for r in kind if kind[r] == "full" and st[r].get("status") == "running"
                         and SHORT < st[r].get("step", 0) < STEPS]
            if done_short and part_full:
                proc.send_signal(signal.SIGKILL)
                killed = True
                break
        time.sleep(0.05)
    log = proc.communicate(timeout=60)[0]
    assert killed, f"never saw a short member done and a full one part-way:\n{log}"
    first = pack_starts(out)
    assert len(first) == 1 and len(first[0][1]) == 6, first  # all six in one pack
    for _ in range(100):  # the pack's worker dies with the grid
        if not alive(first[0][0]):
            break
        time.sleep(0.1)
    assert not alive(first[0][0])
    kind = kinds(out)
    assert all(status(out / r)["status"] == "failed" for r in kind if kind[r] == "diverge")
    done_before = {r: (out / r / "metrics.parquet").stat().st_mtime_ns for r in kind
                   if status(out / r).get("status") == "done"}
    assert done_before and all(kind[r] == "short" for r in done_before)

    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1, again.stdout + again.stderr  # the diverged members stay failed
    man = pd.read_parquet(out / "manifest.parquet").set_index("run_id")
    for rid, k in kind.items():
        row = man.loc[rid]
        if k == "diverge":
            assert row["status"] == "failed" and ("non-finite" in row["reason"] or "diverged" in row["reason"])
            continue
        steps = STEPS if k == "full" else SHORT
        assert row["status"] == "done" and row["steps"] == steps, row
        m = pd.read_parquet(out / rid / "metrics.parquet")
        assert not m.duplicated(["step", "metric", "layer", "head"]).any(), f"{rid}: duplicated metric rows"
        assert set(m["step"]) == set(eval_schedule(steps, N_EVALS, 0.5).tolist()), f"{rid}: metric steps"
        assert m.groupby("step").size().nunique() == 1
        tr = pd.read_parquet(out / rid / "train.parquet")
        assert tr["step"].tolist() == list(range(LOG_EVERY, steps + 1, LOG_EVERY)), f"{rid}: train steps"
    # the rerun packed only the unfinished full members; the done ones were not touched again
    starts = [sorted(members) for _, members in pack_starts(out)]
    full = sorted(r for r in kind if kind[r] == "full")
    assert sorted(starts) == sorted([sorted(kind), full]), starts
    for rid, mtime in done_before.items():
        assert (out / rid / "metrics.parquet").stat().st_mtime_ns == mtime
    assert check_grid_dir(out) == []


def test_pack_groups_by_shape_split_over_workers_and_auto_only_small():
    from ihtrain.grid.plan import pack_groups
    from ihtrain.grid.spec import load_grid_preset

    spec = load_grid_preset("bxc-markov")
    spec.set_seeds(4, "test")
    runs = spec.expand()  # 18 cells x 4 seeds
    groups = pack_groups(runs, pack_size=8, spread=2, auto=False)
    assert sorted(len(g) for g in groups) == [2] * 36  # each cell's 4 seeds, in two one-thread packs
    assert all(len({r.cell_id for r in g}) == 1 for g in groups)
    assert sorted(r.run_id for g in groups for r in g) == sorted(r.run_id for r in runs)
    auto = pack_groups(runs, pack_size=8, spread=1, auto=True)  # only B x C <= 512 packs by default
    packed = [g for g in auto if len(g) > 1]
    assert {(g[0].config.train.batch_size, g[0].config.train.context) for g in packed} == {(16, 16), (16, 32),
                                                                                         (32, 16)}
    assert all(len(g) == 4 for g in packed) and len(auto) == len(packed) + (18 - 6) * 4
    assert all(len(g) == 1 for g in pack_groups(runs, pack_size=1, spread=1, auto=False))
