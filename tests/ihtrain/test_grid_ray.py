"""A 2-run grid through a real local Ray cluster (ray.init, not a mock)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

from ihtrain.executors import ray_task_options  # noqa: E402
from ihtrain.grid import build_parser, execute  # noqa: E402
from ihtrain.grid_spec import parse_spec  # noqa: E402
from ihtrain.schema import check_grid_dir  # noqa: E402

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
        code = execute(spec, runs, out, args)
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
