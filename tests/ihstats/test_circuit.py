"""The circuit of a run (issue 39 item 2): previous-token head or not, at the PS crossing and the end."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ihstats.base.contract import CIRCUIT_COLUMNS, CIRCUIT_PREV_TOKEN_MIN
from ihstats.emergence import circuit, emergence_table, formation
from ihtrain.grid.status import run_summary

BXC = Path(__file__).resolve().parents[2] / "data" / "reference_runs" / "bxc-markov"
# C = 16, B = 16, d32: seed 0 forms without a previous-token head (layer-0 score 0.08 at the end),
# seed 1 builds one (0.66) and forms 3x later (the mixed circuits)
NO_PT_RUN, PT_RUN = "8dba2f71ba5d", "f2ee88ec7417"


def tidy_run(prev_token_end: float, ih_layer: int = 1, rise_at: int = 1000, run_id: str = "r") -> pd.DataFrame:
    """A 2-layer, 2-head run: head ``ih_layer``.0 rises from PS 0.05 to 0.8 around ``rise_at``; the
    layer-0 head 0.1's previous-token score climbs from 0.05 to ``prev_token_end`` alongside."""
    steps = np.unique(np.geomspace(10, 4 * rise_at, 60).astype(int))
    ramp = 1 / (1 + np.exp(-(np.log(steps) - np.log(rise_at)) * 8))
    rows = []
    for layer in (0, 1):
        for head in (0, 1):
            ps = 0.05 + 0.75 * ramp if (layer, head) == (ih_layer, 0) else np.full(len(steps), 0.05)
            pt = 0.05 + (prev_token_end - 0.05) * ramp if (layer, head) == (0, 1) else np.full(len(steps), 0.03)
            for metric, v in (("ps", ps), ("prev_token", pt)):
                rows += [{"step": s, "tokens": 64 * s, "metric": metric, "layer": layer, "head": head,
                          "value": float(x), "run_id": run_id} for s, x in zip(steps, v)]
    return pd.DataFrame(rows)


def test_a_head_on_a_previous_token_head_and_one_without():
    with_pt, without = circuit(tidy_run(0.7)), circuit(tidy_run(0.1))
    assert with_pt["circuit"] == "prev-token" and with_pt["ih_head_crossing"] == "L1H0"
    assert with_pt["prev_token_l0_end"] == pytest.approx(0.7, abs=0.01)
    assert 0.05 < with_pt["prev_token_l0_crossing"] < with_pt["prev_token_l0_end"]  # still climbing at the crossing
    assert without["circuit"] == "no-prev-token" and without["prev_token_l0_end"] < CIRCUIT_PREV_TOKEN_MIN
    # a layer-0 "induction" head has nothing below it to read a previous-token head from
    assert circuit(tidy_run(0.7, ih_layer=0))["circuit"] == "no-prev-token"


def test_no_crossing_or_no_previous_token_log_has_no_circuit():
    flat = tidy_run(0.7)
    flat.loc[flat["metric"] == "ps", "value"] = 0.1
    out = circuit(flat)
    assert out["circuit"] == "" and out["ih_head_crossing"] == ""
    assert out["prev_token_l0_end"] == pytest.approx(0.7, abs=0.01)  # still reported
    assert circuit(tidy_run(0.7).query("metric == 'ps'"))["circuit"] == ""


def test_emergence_table_and_formation_carry_the_circuit():
    tidy = pd.concat([tidy_run(0.7, run_id="a"), tidy_run(0.1, run_id="b")])
    t = emergence_table(tidy).set_index("run_id")
    assert set(CIRCUIT_COLUMNS) <= set(t.columns)
    assert t.loc["a", "circuit"] == "prev-token" and t.loc["b", "circuit"] == "no-prev-token"
    assert formation(tidy_run(0.1))["circuit"] == "no-prev-token"


@pytest.mark.skipif(not BXC.is_dir(), reason="data/reference_runs/bxc-markov is not shipped")
def test_shipped_runs_with_and_without_a_previous_token_head():
    rows = {rid: run_summary(SimpleNamespace(run_id=rid), BXC, 0.3) for rid in (NO_PT_RUN, PT_RUN)}
    assert rows[NO_PT_RUN]["circuit"] == "no-prev-token" and rows[NO_PT_RUN]["prev_token_l0_end"] < 0.13
    assert rows[PT_RUN]["circuit"] == "prev-token" and rows[PT_RUN]["prev_token_l0_end"] > 0.6
    assert rows[NO_PT_RUN]["crossed"] and rows[PT_RUN]["crossed"]
    assert not rows[NO_PT_RUN]["formed"] and not rows[PT_RUN]["formed"]  # bxc-markov lacks the general probe


def test_law_report_counts_circuits_per_cell_and_flags_a_mixed_fit():
    from ihstats.law.sensitivity import circuit_table, circuit_warning

    t = pd.DataFrame({"B": [16, 16, 16, 32, 32, 32], "C": [16, 16, 16, 64, 64, 64],
                      "circuit": ["prev-token", "no-prev-token", "", "prev-token", "prev-token", "prev-token"]})
    counts = circuit_table(t).set_index(["B", "C"])
    assert counts.loc[(16, 16)].tolist() == [1, 1, 1] and counts.loc[(32, 64)].tolist() == [3, 0, 0]
    msg = circuit_warning(t)
    assert msg.startswith("the fit mixes circuits: 4 runs crossed with a previous-token head, 1 without")
    assert "1 of 2 cells hold both (B 16, C 16)" in msg
    assert circuit_warning(t[t["C"] == 64]) is None  # one circuit: nothing to flag
    assert circuit_table(t.drop(columns="circuit")) is None and circuit_warning(t.drop(columns="circuit")) is None


def test_a_run_that_crossed_and_fell_back_has_no_circuit_label():
    """issue 56: PS crossed 0.3 then fell back below it, so the run never crossed for good; its status and
    summary rows must not call it "prev-token" (its crossing measurements stay)."""
    run = tidy_run(0.7, run_id="fell")
    ps = run["metric"] == "ps"
    last = run["step"] == run["step"].max()
    run.loc[ps & (run["layer"] == 1) & (run["head"] == 0) & last, "value"] = 0.1  # ends below 0.3
    assert circuit(run)["circuit"] == "prev-token"  # the crossing itself is still measured
    f = formation(run)
    assert not f["crossed"] and f["circuit"] == "" and f["ih_head_crossing"] == "L1H0"
    t = emergence_table(run).set_index("run_id")
    assert not t.loc["fell", "crossed"] and t.loc["fell", "circuit"] == ""
