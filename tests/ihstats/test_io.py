"""ihstats.base.io against run and grid directories written by the simulator in the docs/DESIGN.md layout."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ihstats.base import contract, io
from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_grid, write_fake_run


@pytest.fixture
def curve():
    return simulate_curve("sigmoid", "mixed", n=60, seed=2)


def test_load_run_maps_factors_and_keeps_the_curve(tmp_path, curve):
    rid = write_fake_run(tmp_path / "r", curve, {"train.batch_size": 32, "train.context": 64, "seed": 7,
                                                  "data.source": "seminatural",
                                                  "data.seminatural.frequency": 0.3})
    r = io.load_run(tmp_path / "r")
    assert r.run_id == rid and r.status == "done" and r.problems == []
    f = r.factors
    assert (f["B"], f["C"], f["seed"], f["N"], f["frequency"], f["reliability"]) == (32, 64, 7, 400_000, 0.3, 0.5)
    assert f["n_layer"] == 2 and f["n_head"] == 4 and f["lr"] == 3e-3
    ps = r.metrics[r.metrics.metric == "ps"].groupby("step")["value"].max()
    assert np.allclose(ps.to_numpy(), curve.values)
    assert set(r.metrics.columns) >= {"step", "tokens", "metric", "layer", "head", "value", "run_id"}
    assert r.train is not None and len(r.train) == len(curve.steps)


def test_markov_and_biinduct_knobs_by_leaf_name(tmp_path, curve):
    write_fake_run(tmp_path / "m", curve, {"data.source": "markov", "data.markov.marginal": "uniform",
                                           "data.biinduct.mode": "backward"})
    f = io.load_run(tmp_path / "m").factors
    assert f["marginal"] == "uniform" and f["biinduct"] == "backward" and f["span_len"] == 20
    assert f["frequency"] is None  # markov frequency < 0: not imposed


def test_config_fields_used_by_io_exist_in_runconfig():
    config = pytest.importorskip("ihtrain.config")
    names = set(config.field_names())
    used = set(io.FACTOR_FIELDS.values()) | {f"data.markov.{k}" for k in contract.MARKOV_KNOBS} | \
        {f"data.{w}.{k}" for w, rule in contract.SHIPPED_WRAPPER_FACTORS.items() for k in (rule["mode"], *rule["knobs"])} | \
        {"data.seminatural.frequency", "data.source"}
    assert used <= names, used - names


def _rewrite(path, fn):
    df = pd.read_parquet(path)
    fn(df).to_parquet(path, index=False)


def test_schema_errors_name_file_column_problem(tmp_path, curve):
    write_fake_run(tmp_path / "r", curve)
    m = tmp_path / "r" / "metrics.parquet"
    _rewrite(m, lambda d: d.drop(columns=["layer"]))
    with pytest.raises(io.SchemaError, match=r"metrics.parquet: missing column\(s\) layer"):
        io.load_run(tmp_path / "r")
    write_fake_run(tmp_path / "r", curve)
    _rewrite(m, lambda d: d.assign(step=d.step.astype(str)))
    with pytest.raises(io.SchemaError, match="column 'step' has dtype .*expected integer"):
        io.load_run(tmp_path / "r")


def test_nonfinite_values_raise_or_are_dropped_and_reported(tmp_path, curve):
    write_fake_run(tmp_path / "r", curve)
    _rewrite(tmp_path / "r" / "metrics.parquet", lambda d: d.assign(value=np.where(d.index == 5, np.nan, d.value)))
    with pytest.raises(io.SchemaError, match="column 'value' has 1 NaN/infinite"):
        io.load_run(tmp_path / "r")
    r = io.load_run(tmp_path / "r", nonfinite="drop")
    assert any("dropped" in p for p in r.problems) and r.metrics.value.notna().all()


def test_unknown_metric_is_kept_and_reported(tmp_path, curve):
    write_fake_run(tmp_path / "r", curve)
    _rewrite(tmp_path / "r" / "metrics.parquet", lambda d: pd.concat([d, d.head(3).assign(metric="new_score")]))
    r = io.load_run(tmp_path / "r")
    assert "new_score" in set(r.metrics.metric) and any("new_score" in p for p in r.problems)


def test_missing_config_json_is_an_error(tmp_path, curve):
    write_fake_run(tmp_path / "r", curve)
    (tmp_path / "r" / "config.json").unlink()
    with pytest.raises(io.SchemaError, match="config.json"):
        io.load_run(tmp_path / "r")


@pytest.mark.parametrize("with_grid_json", [True, False])
def test_load_grid_flags_unfinished_runs(tmp_path, with_grid_json):
    runs = [(simulate_curve("ramp", n=40, seed=i), {"train.batch_size": b}) for i, b in enumerate([8, 16, 32])]
    ids = write_fake_grid(tmp_path, runs, with_grid_json=with_grid_json, statuses=["done", "running", "failed"])
    g = io.load_grid(tmp_path)
    assert sorted(g.runs.run_id) == sorted(ids) and set(g.metrics.run_id) == set(ids)
    st = dict(zip(g.runs.run_id, g.runs.status))
    assert [st[i] for i in ids] == ["done", "running", "failed"]
    assert sorted(g.runs.B) == [8, 16, 32]
    assert (g.spec is not None) == with_grid_json
    assert sum("not 'done'" in p for p in g.problems) == 2


def test_load_grid_skips_broken_runs_on_request(tmp_path):
    runs = [(simulate_curve("ramp", n=40, seed=i), {"seed": i}) for i in range(2)]
    ids = write_fake_grid(tmp_path, runs)
    (tmp_path / ids[0] / "config.json").write_text("{not json")
    with pytest.raises(io.SchemaError, match="invalid JSON"):
        io.load_grid(tmp_path)
    g = io.load_grid(tmp_path, on_error="skip")
    assert list(g.runs.run_id) == [ids[1]] and any("skipped" in p for p in g.problems)


def test_empty_directory_is_an_error(tmp_path):
    with pytest.raises(io.SchemaError, match="no run directories"):
        io.load_grid(tmp_path)
    meta = json.loads("{}")
    assert io.config_factors(meta)["B"] is None


# ------------------------------------------------------------------ shipped reference logs
REFERENCE_RUNS = sorted(p for p in (Path(__file__).resolve().parents[2] / "data" / "reference_runs").iterdir()
                        if p.is_dir())
PER_HEAD = set(contract.PER_HEAD)  # dup_bwd (issue 42) and ps_nat are per head too


@pytest.mark.parametrize("ref", REFERENCE_RUNS, ids=lambda p: p.name)
def test_reference_runs_load_into_well_formed_tables(ref):
    """Every committed log set (a grid or one run, no weights) reads with today's readers into
    tables that keep the data contract of docs/DESIGN.md, and gives an emergence table."""
    from ihstats.emergence import emergence_table

    data = io.load_grid(ref)
    runs, m = data.runs, data.metrics
    assert len(runs) >= 1 and runs["run_id"].is_unique
    assert set(runs["status"]) <= set(io.STATUSES)
    assert runs[["B", "C", "N", "seed", "cell_id"]].notna().all().all()
    assert (runs["cell_id"].str.len() == 12).all()
    kinds = {"integer": np.int64, "float": np.float64}
    assert all(m[c].dtype == kinds[k] for c, k in io.METRICS_COLUMNS.items() if k in kinds)
    assert set(m["metric"]) <= set(io.KNOWN_METRICS) and "ps" in set(m["metric"])
    per_head = m["metric"].isin(PER_HEAD)
    assert (m.loc[per_head, ["layer", "head"]] >= 0).all().all()
    assert (m.loc[~per_head, ["layer", "head"]] == -1).all().all()
    assert not m.duplicated(["run_id", "step", "metric", "layer", "head"]).any()
    assert set(m["run_id"]) == set(runs["run_id"]) == set(data.train["run_id"])
    assert set(io.TRAIN_COLUMNS) <= set(data.train.columns)
    assert (data.train.groupby("run_id")["step"].apply(lambda s: s.is_monotonic_increasing)).all()
    if (ref / "manifest.parquet").is_file():
        assert set(pd.read_parquet(ref / "manifest.parquet")["run_id"]) == set(runs["run_id"])
    table = emergence_table(data)
    assert len(table) == len(runs) and table["run_id"].is_unique
    assert {"onset", "onset_lo", "onset_hi", "censored", "last_step", "formed", "crossed", "certificate", "mechanism",
            "onset_basis", "B", "C", "N"} <= set(table.columns)
    done = table[~table["censored"]]
    assert (done["onset_lo"] <= done["onset"]).all() and (done["onset"] <= done["onset_hi"]).all()


def test_reference_numbers_quoted_in_the_docs():
    """The onset the README and data/reference_runs/README.md quote for cpu-tiny (2,418
    [2,326, 2,499]) and the bf16 grid's 17 crossings of 18 come out of today's readers; none of
    them is formed (certified): their logs lack the general probe (issue 65)."""
    from ihstats.emergence import emergence_table

    root = REFERENCE_RUNS[0].parent
    tiny = emergence_table(root / "cpu-tiny").iloc[0]
    assert (round(tiny["onset"]), round(tiny["onset_lo"]), round(tiny["onset_hi"])) == (2418, 2326, 2499)
    # cpu-tiny's own level is 0.5 (its config) and its PS ends at 0.487: read at its own level (no
    # longer at 0.3 on ps) it has an onset but did not cross, and it is not formed (no general probe)
    assert not tiny["censored"] and tiny["final"] == pytest.approx(0.487, abs=0.001)
    assert not tiny["crossed"] and not tiny["formed"] and tiny["onset_basis"] == "crossing"
    grid = emergence_table(root / "bxc-cpu-h200-bf16")
    assert (len(grid), int(grid["crossed"].sum()), int(grid["censored"].sum())) == (18, 17, 1)
    assert not grid["formed"].any() and (grid["certificate"] == "uncertifiable (no general probe)").all()


def test_grid_outcomes_quoted_in_results_come_out_of_todays_readers():
    """docs/RESULTS.md's counts: bxc-markov 34 of 36 crossed, markov 21 of 72, freqrel 16 of 21,
    freqrel-markov 6 of 25 at the six (frequency, reliability) cells it names; formed (certified):
    none, as no shipped log holds the general probe (issue 65)."""
    from ihstats.emergence import emergence_table

    root = REFERENCE_RUNS[0].parent
    counts = {}
    for name in ("bxc-markov", "markov", "freqrel", "freqrel-markov"):
        t = emergence_table(root / name)
        counts[name] = (len(t), int(t["crossed"].sum()))
        assert not t["formed"].any() and (t["onset_basis"] == "crossing").all()
    assert counts == {"bxc-markov": (36, 34), "markov": (72, 21), "freqrel": (21, 16), "freqrel-markov": (25, 6)}
    crossed = t[t["crossed"]]
    assert sorted(zip(crossed["frequency"], crossed["reliability"])) == [
        (0.8, 0.7), (0.8, 0.8), (0.8, 0.9), (0.9, 0.6), (0.9, 0.8), (0.9, 0.9)]
