"""Onset kinds (issue 52): which curve an onset reads (``--onset``), the onsets beside a PS onset,
and a crossing of the formed level as the onset (``--method threshold --threshold 0.3``)."""

import numpy as np
import pandas as pd
import pytest

from ihstats.emergence import emergence_table, main, onset_metric
from ihstats.simulate.curves import simulate_curve


def _tidy(run_id: str, ps_onset: float, indist_onset: float, seed: int) -> pd.DataFrame:
    """One run's tidy rows: a probe PS rising at ``ps_onset``, an in-distribution PS and a loss gain
    rising at ``indist_onset`` (two heads each for the per-head metrics)."""
    rows = []
    for metric, onset, rise, heads in (("ps", ps_onset, 0.6, 2), ("ps_indist", indist_onset, 0.7, 2),
                                       ("indist_gain", indist_onset, 2.0, 1)):
        c = simulate_curve("ramp", "linear", n=80, last_step=6000, onset=onset, baseline=0.02, rise=rise,
                           noise=0.01, seed=seed)
        for h in range(heads):
            level = 1 if heads == 2 else -1
            scale = 1.0 if h == 0 else 0.3
            rows.append(pd.DataFrame({"step": c.steps.astype(int), "metric": metric, "layer": level,
                                      "head": h if heads == 2 else -1, "value": c.values * scale, "run_id": run_id}))
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def logs():
    return pd.concat([_tidy("a", 4000.0, 1500.0, 0), _tidy("b", 4500.0, 2500.0, 1)], ignore_index=True)


def test_auto_reads_the_in_distribution_ps_where_logged(logs):
    assert onset_metric(logs) == "ps_indist"
    assert onset_metric(logs[logs["metric"] == "ps"]) == "ps"
    assert [onset_metric(logs, k) for k in ("ps", "indist", "loss")] == ["ps", "ps_indist", "indist_gain"]
    with pytest.raises(ValueError, match="onset: must be auto or one of"):
        onset_metric(logs, "val")


def test_the_other_onsets_stand_beside_the_in_distribution_one(logs):
    t = emergence_table(logs, "ps_indist").set_index("run_id")
    for rid, ps_on, in_on in (("a", 4000, 1500), ("b", 4500, 2500)):
        assert t.loc[rid, "onset"] == pytest.approx(in_on, rel=0.2)
        assert t.loc[rid, "onset_ps"] == pytest.approx(ps_on, rel=0.2)  # the repeat probe, later here
        assert t.loc[rid, "onset_gain"] == pytest.approx(in_on, rel=0.2)
        assert t.loc[rid, "gain_ratio"] == pytest.approx(1.0, rel=0.3)
        assert bool(t.loc[rid, "formed"])
    assert "onset_gain" not in emergence_table(logs[logs["metric"] == "ps"], "ps").columns  # old logs: as before


def test_the_crossing_of_the_formed_level_as_the_onset(logs):
    t = emergence_table(logs, "ps_indist", method="threshold", threshold=0.3).set_index("run_id")
    # a ramp from 0.02 rising 0.7 over [onset, ~2 onset] in log step crosses 0.3 about 40% up the ramp
    for rid, in_on in (("a", 1500), ("b", 2500)):
        assert in_on < t.loc[rid, "onset"] < 2 * in_on
        assert t.loc[rid, "onset_lo"] <= t.loc[rid, "onset"] <= t.loc[rid, "onset_hi"]


def test_the_cli_reads_the_kind_and_the_threshold(tmp_path, capsys):
    from ihstats.simulate.run_dirs import write_fake_grid

    grid = tmp_path / "g"
    write_fake_grid(grid, [(simulate_curve("ramp", n=40, seed=i), {"train.batch_size": b})
                           for i, b in enumerate([8, 16])])
    out = tmp_path / "o" / "e.csv"
    assert main([str(grid), "-o", str(out), "--onset", "ps", "--method", "threshold", "--threshold", "0.3"]) == 0
    assert "of the ps onset" in capsys.readouterr().out
    assert (pd.read_csv(out)["method"] == "threshold").all()
    with pytest.raises(SystemExit):
        main([str(grid), "-o", str(out), "--threshold", "-1"])


def test_the_shipped_re_measure_warns_of_the_creep_and_its_crossings_match_the_budget():
    """bxc-law-indist (issue 52): at C 128 the in-distribution PS creeps before the jump; the first
    knee is said to read it, and the crossing of the formed level is the budget's own crossing."""
    import json
    from pathlib import Path

    grid = Path(__file__).resolve().parents[2] / "data" / "reference_runs" / "bxc-law-indist"
    with pytest.warns(UserWarning, match="rise twice in ps_indist"):
        bayes = emergence_table(grid, "ps_indist").set_index("run_id")
    cross = emergence_table(grid, "ps_indist", method="threshold", threshold=0.3).set_index("run_id")
    for rid in cross.index:
        recorded = json.loads((grid / rid / "status.json").read_text())["crossing"]
        assert cross.loc[rid, "onset_lo"] <= recorded <= cross.loc[rid, "onset_hi"] + 1
    c128 = bayes[bayes["C"] == 128]
    assert (c128["onset"] < 0.6 * cross.loc[c128.index, "onset"]).all()  # the first knee: the creep
    assert (abs(np.log(c128["onset_alt"] / cross.loc[c128.index, "onset"])) < 0.15).all()  # the jump
