"""A scored checkpoint series (series.json, no config.json) is read by ihstats as a run, without torch."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ihstats.base import io
from ihstats.base.contract import SchemaError, write_status
from ihstats.base.schema import check_run_dir
from ihstats.base.series import SERIES_FILE, read_series, series_factors, series_id, write_series


def _record(B=4, C=16, steps=(0, 10, 100)) -> dict:
    rec = {"kind": "series", "run_id": "", "model": "org/tiny", "family": "gpt_neox", "B": B, "C": C,
           "revisions": [{"revision": f"step{s}", "step": s, "tokens": s * B * C, "source": f"d/step{s}"}
                         for s in steps],
           "probe": {"seed": 0, "n_seqs": 10}, "metrics": ["ps"], "dtype": "float32", "n_params": 1000,
           "n_params_non_embedding": 600, "n_layer": 2, "n_head": 2, "d_model": 8, "versions": {}, "created": "now"}
    rec["run_id"] = series_id(rec)
    return rec


def _series_dir(path, rec) -> None:
    path.mkdir()
    write_series(path, rec)
    rows = [{"step": r["step"], "tokens": r["tokens"], "metric": "ps", "layer": l, "head": h,
             "value": 0.1 * (l + h) + 1e-4 * r["step"]} for r in rec["revisions"] for l in range(2) for h in range(2)]
    pd.DataFrame(rows).to_parquet(path / "metrics.parquet", index=False)
    write_status(path, "done", rec["revisions"][-1]["step"])


def test_a_series_directory_loads_as_a_run_with_its_factors(tmp_path):
    rec = _record()
    _series_dir(tmp_path / "s", rec)
    run = io.load_run(tmp_path / "s")
    assert run.run_id == rec["run_id"] and run.status == "done"
    assert {k: run.factors[k] for k in ("B", "C", "N", "model", "family")} == \
        {"B": 4, "C": 16, "N": 600, "model": "org/tiny", "family": "gpt_neox"}
    assert run.metrics["step"].max() == 100
    assert check_run_dir(tmp_path / "s") == []


def test_the_identity_not_the_revisions_makes_the_id():
    assert series_id(_record(steps=(1, 2))) == series_id(_record(steps=(1, 2, 3)))
    assert series_id(_record(B=4)) != series_id(_record(B=8))


def test_several_series_are_one_grid(tmp_path):
    a, b = _record(B=4), _record(B=8)
    _series_dir(tmp_path / "a", a)
    _series_dir(tmp_path / "b", b)
    grid = io.load_grids([tmp_path / "a", tmp_path / "b"])
    assert sorted(grid.runs["B"]) == [4, 8] and grid.metrics["run_id"].nunique() == 2
    assert len(io.load_grid(tmp_path).runs) == 2  # a folder of series is a grid too
    with pytest.raises(SchemaError, match="in more than one directory"):
        io.load_grids([tmp_path / "a", tmp_path / "a"])


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.pop("B"), "missing key.*B"),
    (lambda r: r["revisions"][1].update(step=-1), r"revisions\[1\] \('step10'\) step must be an integer >= 0"),
    (lambda r: r.update(C="64"), "'C' must be an integer >= 1"),
])
def test_a_broken_sidecar_is_named(tmp_path, edit, message):
    rec = _record()
    edit(rec)
    tmp_path.joinpath(SERIES_FILE).write_text(json.dumps(rec))
    with pytest.raises(SchemaError, match=message):
        read_series(tmp_path)


def test_schema_finds_a_step_that_is_no_revision(tmp_path):
    rec = _record()
    _series_dir(tmp_path / "s", rec)
    rec["revisions"] = rec["revisions"][:2]
    write_series(tmp_path / "s", rec)
    assert any("step(s) [100] are no revision" in p for p in check_run_dir(tmp_path / "s"))
    assert np.isclose(series_factors(rec)["N"], 600)
