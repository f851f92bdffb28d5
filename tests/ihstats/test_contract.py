"""ihstats.base.contract: status.json reader/writer, the max-PS crossing, and no torch."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ihstats.base import contract, io
from ihstats.base.contract import (
    max_over_heads, ps_crossing, read_crossing, read_status, run_crossing, status_record, write_status,
)
from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_run
from ihstats.base.fileio import UnreadableFile

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "data" / "reference_runs"


def tidy(rows):
    """A metrics frame from (step, metric, layer, head, value) tuples."""
    return pd.DataFrame(rows, columns=["step", "metric", "layer", "head", "value"])


# A run with 2 heads evaluated at steps 0, 10, 20, 30. Max PS by hand: 0.10, 0.29, 0.30, 0.80;
# threshold 0.3 is first reached at step 20 (>= counts), by head 1 while head 0 is NaN there.
# prev_token and val_loss exceed 0.3 earlier and must not count.
HAND = tidy([
    (0, "ps", 0, 0, 0.05), (0, "ps", 0, 1, 0.10), (0, "prev_token", 0, 0, 0.9), (0, "val_loss", -1, -1, 5.0),
    (10, "ps", 0, 0, 0.29), (10, "ps", 0, 1, 0.20), (10, "prev_token", 0, 0, 0.9), (10, "val_loss", -1, -1, 4.0),
    (30, "ps", 0, 0, 0.80), (30, "ps", 0, 1, 0.40), (30, "prev_token", 0, 0, 0.9), (30, "val_loss", -1, -1, 2.0),
    (20, "ps", 0, 0, np.nan), (20, "ps", 0, 1, 0.30), (20, "prev_token", 0, 0, 0.9), (20, "val_loss", -1, -1, 3.0),
])


def test_max_over_heads_by_hand():
    curve = max_over_heads(HAND)
    assert curve.index.tolist() == [0, 10, 20, 30]  # sorted, although step 20's rows come last
    assert np.allclose(curve.to_numpy(), [0.10, 0.29, 0.30, 0.80])
    assert max_over_heads(HAND, "val_loss").tolist() == [5.0, 4.0, 3.0, 2.0]
    assert max_over_heads(HAND, "la").empty


@pytest.mark.parametrize("threshold, expected", [(0.3, 20), (0.29, 10), (0.05, 0), (0.8, 30), (0.81, None)])
def test_ps_crossing_by_hand(threshold, expected):
    assert ps_crossing(HAND, threshold) == expected


def test_ps_crossing_one_evaluation_at_a_time_as_the_trainer_applies_it():
    """Applied to each evaluation's rows in step order, the first hit is the whole log's crossing."""
    first = next(s for s in (0, 10, 20, 30) if ps_crossing(HAND[HAND["step"] == s], 0.3) is not None)
    assert first == ps_crossing(HAND, 0.3) == 20
    assert ps_crossing(tidy([]), 0.3) is None and ps_crossing(HAND[HAND["metric"] != "ps"], 0.0) is None


def test_status_json_round_trip_with_the_new_fields(tmp_path):
    written = write_status(tmp_path, "done", 40, "finished", "emerged", crossing=np.int64(20))
    on_disk = json.loads((tmp_path / "status.json").read_text())
    assert on_disk == written == read_status(tmp_path)
    assert on_disk["crossing"] == 20 and type(on_disk["crossing"]) is int
    assert (on_disk["status"], on_disk["step"], on_disk["stop_reason"], on_disk["reason"]) == \
        ("done", 40, "emerged", "finished")
    assert set(on_disk) == {"status", "reason", "step", "stop_reason", "crossing", "updated"}
    # not crossed yet: an explicit null; extra keys (io_error) kept as they are
    rec = write_status(tmp_path, "running", 7, "stopped", io_error="disk full")
    assert read_status(tmp_path) == rec and rec["crossing"] is None and rec["io_error"] == "disk full"
    assert status_record("failed", 3)["stop_reason"] == ""


def test_status_json_without_the_new_fields_still_reads(tmp_path):
    """A run directory written before the crossing was recorded: status.json reads as it is, and
    the crossing comes from the metric log."""
    old = {"status": "done", "reason": "finished", "step": 30, "stop_reason": "max_steps",
           "updated": "2026-01-01T00:00:00+00:00"}
    (tmp_path / "status.json").write_text(json.dumps(old))
    assert read_status(tmp_path) == old
    assert run_crossing(old, HAND, 0.3) == 20
    assert run_crossing(old, None, 0.3) is None  # nothing to compute from
    HAND.assign(tokens=0).to_parquet(tmp_path / "metrics.parquet")
    assert read_crossing(tmp_path, 0.3) == 20
    assert read_crossing(tmp_path / "new", 0.3) is None  # no status, no log: not reached


def test_a_recorded_crossing_is_preferred_and_a_null_falls_back(tmp_path):
    assert run_crossing({"crossing": 5}, HAND, 0.3) == 5  # the record, not the log's 20
    assert run_crossing({"crossing": None}, HAND, 0.3) == 20  # a null carried by an unknowing write
    assert run_crossing({"crossing": True}, HAND, 0.3) == 20  # not a step
    write_status(tmp_path, "done", 30, crossing=5)
    (tmp_path / "metrics.parquet").write_bytes(b"")  # never read when the record is there
    assert read_crossing(tmp_path, 0.3) == 5
    (tmp_path / "status.json").write_text("{")
    with pytest.raises(UnreadableFile, match="status.json: invalid JSON"):
        read_crossing(tmp_path, 0.3)


def test_load_run_gives_the_crossing_from_status_or_metrics(tmp_path):
    curve = simulate_curve("sigmoid", "mixed", n=60, seed=2)
    write_fake_run(tmp_path, curve, {"train.emergence_threshold": 0.4})
    expected = int(curve.steps[np.argmax(curve.values >= 0.4)])  # head (1, 0) carries the max exactly
    assert io.load_run(tmp_path).crossing == expected  # status.json without the key: from the log
    st = json.loads((tmp_path / "status.json").read_text())
    (tmp_path / "status.json").write_text(json.dumps({**st, "crossing": 3}))
    assert io.load_run(tmp_path).crossing == 3


@pytest.mark.parametrize("ref", sorted(p for p in REFERENCE.iterdir() if p.is_dir()), ids=lambda p: p.name)
def test_reference_runs_crossing_from_their_logs(ref):
    """Each shipped run's crossing, recorded in status.json (sets shipped since the record) or
    recomputed from metrics.parquet (older sets), equals a plain numpy reading of the same rule."""
    dirs = [ref] if (ref / "config.json").is_file() else \
        sorted(p for p in ref.iterdir() if (p / "config.json").is_file())
    for d in dirs:
        run = io.load_run(d)
        recorded = json.loads((d / "status.json").read_text()).get("crossing")
        assert recorded is None or recorded == run.crossing, d
        watched = contract.emergence_metric(run.meta)  # ps, ps_indist, or ps_gen (derived below)
        ps = run.metrics[run.metrics["metric"] == watched]
        if watched == contract.GENERAL_SCORE:  # each head's weakest general-probe distance
            gen = run.metrics[run.metrics["metric"].isin(contract.GENERAL_PROBE_METRICS)]
            ps = gen.pivot_table(index=["step", "layer", "head"], columns="metric", values="value").min(
                axis=1, skipna=False).rename("value").reset_index()
        steps = np.sort(ps["step"].unique())
        top = np.array([ps.loc[ps["step"] == s, "value"].max() for s in steps])
        hit = np.flatnonzero(top >= contract.formed_level(run.meta))
        assert run.crossing == (int(steps[hit[0]]) if hit.size else None), d


def test_config_factors_names_are_the_contracts(tmp_path):
    curve = simulate_curve("sigmoid", "mixed", n=20, seed=1)
    write_fake_run(tmp_path / "m", curve, {"data.source": "markov", "data.biinduct.mode": "backward"})
    write_fake_run(tmp_path / "s", curve, {"data.source": "seminatural"})
    for d in ("m", "s"):
        names = list(io.load_run(tmp_path / d).factors)
        assert set(names) <= set(contract.FACTORS) and names == [f for f in contract.FACTORS if f in names]


def test_contract_and_readers_import_no_torch():
    code = ("import sys; import ihstats.base.contract, ihstats.base.schema, ihstats.base.io, ihstats.emergence; "
            "bad = [m for m in ('torch', 'ihtrain.run.train', 'ihtrain.metrics', 'ihtrain.model') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stdout + r.stderr


def test_one_schema_error_and_one_status_reader():
    import ihstats.base.schema
    import ihstats.base.fileio

    assert io.SchemaError is contract.SchemaError is ihstats.base.schema.SchemaError
    assert not hasattr(ihstats.base.fileio, "read_status") and not hasattr(ihstats.base.fileio, "write_status")
    assert set(contract.PER_HEAD) | set(contract.MODEL_LEVEL) == set(contract.METRIC_NAMES)
    assert set(contract.METRICS_COLUMNS) >= set(contract.METRICS_KEY) and "value" in contract.METRICS_COLUMNS
