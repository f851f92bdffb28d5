"""ihstats.base.schema: run and grid directory checks catch a broken directory and pass the shipped logs."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ihstats.base.schema import check_grid_dir, check_run_dir, main
from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_dir(tmp_path):
    rid = write_fake_run(tmp_path / "tmp", simulate_curve("sigmoid", "mixed", n=30, seed=3),
                         {"train.emergence_threshold": 0.4})
    (tmp_path / "tmp").rename(tmp_path / rid)  # check_run_dir wants the directory named by run id
    return tmp_path / rid


def _edit_json(path, **changes):
    d = json.loads(path.read_text())
    d.update(changes)
    path.write_text(json.dumps(d))


def test_a_well_formed_run_passes(run_dir):
    assert check_run_dir(run_dir, weights=False) == []
    assert check_run_dir(run_dir, weights=True) == [f"{run_dir}/checkpoints/final.pt: missing for a done run"]


def test_a_recorded_crossing_must_match_the_log(run_dir):
    m = pd.read_parquet(run_dir / "metrics.parquet")
    curve = m[m.metric == "ps"].groupby("step")["value"].max()
    first = int(curve.index[(curve >= 0.4).to_numpy()][0])
    _edit_json(run_dir / "status.json", crossing=first)
    assert check_run_dir(run_dir, weights=False) == []
    _edit_json(run_dir / "status.json", crossing=first + 1)
    assert any(f"status.json crossing {first + 1} != {first}" in p for p in check_run_dir(run_dir, weights=False))
    _edit_json(run_dir / "status.json", crossing="soon")
    assert any("crossing must be null or an update" in p for p in check_run_dir(run_dir, weights=False))


@pytest.mark.parametrize("breakage, message", [
    (lambda d: _edit_json(d / "status.json", status="emerged"), "status must be one of"),
    (lambda d: _edit_json(d / "status.json", step=1), "status.json says the run is done at update 1"),
    (lambda d: (d / "status.json").write_text("{"), "status.json: invalid JSON"),
    (lambda d: pd.read_parquet(d / "metrics.parquet").drop(columns=["layer"]).to_parquet(d / "metrics.parquet"),
     "missing columns ['layer']"),
    (lambda d: pd.concat([pd.read_parquet(d / "metrics.parquet")] * 2).to_parquet(d / "metrics.parquet"),
     "duplicated (step, metric, layer, head) rows"),
    (lambda d: pd.read_parquet(d / "train.parquet").drop(columns=["loss"]).to_parquet(d / "train.parquet"),
     "missing columns ['loss']"),
    (lambda d: _edit_json(d / "config.json", run_id="elsewhere"), "not its run_id elsewhere"),
    (lambda d: _edit_json(d / "config.json", config={**json.loads((d / "config.json").read_text())["config"],
                                                     "seed": 99}), "edited after the run was made"),
])
def test_a_broken_run_is_caught(run_dir, breakage, message):
    breakage(run_dir)
    problems = check_run_dir(run_dir, weights=False)
    assert any(message in p for p in problems), problems


def test_cli(run_dir, capsys):
    assert main([str(run_dir), "--logs-only"]) == 0 and capsys.readouterr().out.strip().endswith(": ok")
    _edit_json(run_dir / "status.json", status="emerged")
    r = subprocess.run([sys.executable, "-m", "ihstats.base.schema", "--logs-only", str(run_dir)], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 1 and "status must be one of" in r.stdout and "1 problem(s)" in r.stdout


@pytest.mark.parametrize("grid", ["markov", "bxc-markov", "biinduct", "bxc-cpu-h200-bf16"])
def test_shipped_grids_pass(grid):
    assert check_grid_dir(ROOT / "data" / "reference_runs" / grid, weights=False) == []
