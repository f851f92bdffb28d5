"""One formed level (issue 65): on a grid whose runs use a level other than the default, the summary
(summary.csv and --status read ``run_summary``), the --status crossing column, the emergence table
and the budget re-read all read each run at its own level and agree."""

from types import SimpleNamespace

import pandas as pd
import pytest

from ihstats.base import io
from ihstats.base.contract import FORMED_LEVEL, formed_level
from ihstats.emergence import emergence_table
from ihstats.frontier.budget import read_at_budget
from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_grid
from ihtrain.grid.status import crossings, run_summary

LEVEL = 0.5


@pytest.fixture
def grid(tmp_path):
    """Three runs at formed level 0.5, with the general probe: a head to 0.8 (certified), one whose
    plateau 0.4 clears the default level 0.3 but not its own, and none."""
    curves = [simulate_curve("sigmoid", "mixed", n=80, last_step=6000, onset=800, width=0.6, baseline=0.05,
                             rise=top, noise=0.005, seed=i) for i, top in enumerate((0.75, 0.35))]
    curves.append(simulate_curve("flat", "mixed", n=80, last_step=6000, baseline=0.05, noise=0.005, seed=7))
    over = [{"train.batch_size": b, "train.emergence_threshold": LEVEL, "train.max_steps": 6000} for b in (8, 16, 32)]
    ids = write_fake_grid(tmp_path / "g", list(zip(curves, over)), general=True)
    return tmp_path / "g", ids


def test_every_reader_uses_the_runs_own_level(grid):
    path, ids = grid
    data = io.load_grid(path)
    assert (data.runs["formed_level"] == LEVEL).all() and LEVEL != FORMED_LEVEL
    table = emergence_table(data).set_index("run_id")  # default onset: the certified one
    budget = read_at_budget(data, 6000).set_index("run_id")
    summary = {rid: run_summary(SimpleNamespace(run_id=rid), path, LEVEL) for rid in ids}
    planned = [SimpleNamespace(run_id=rid, config=SimpleNamespace(
        train=SimpleNamespace(emergence_threshold=LEVEL, emergence_metric="ps"))) for rid in ids]
    crossed_at = dict(zip(ids, crossings(planned, path)))
    expected = [True, False, False]  # the 0.4 plateau is not formed at 0.5
    assert [bool(table.at[r, "formed"]) for r in ids] == expected
    assert [bool(budget.at[r, "formed"]) for r in ids] == expected
    assert [bool(summary[r]["formed"]) for r in ids] == expected
    assert [bool(pd.notna(crossed_at[r])) for r in ids] == expected  # --status's crossing column
    assert (table["metric"] == "ps_gen").all() and (table.loc[ids, "onset_basis"] == "certified").all()
    assert abs(table.at[ids[0], "onset"] - summary[ids[0]]["onset"]) < 1
    assert abs(budget.at[ids[0], "onset"] - summary[ids[0]]["onset"]) < 1
    assert [table.at[r, "mechanism"] for r in ids][:1] == ["induction (previous-token)"]
    # the same 0.4 plateau at the default level is formed: the level, not the curve, decided
    at_default = emergence_table(data.metrics.assign(formed_level=FORMED_LEVEL)).set_index("run_id")
    assert bool(at_default.at[ids[1], "formed"])


def test_the_one_reader_validates_the_level():
    assert formed_level({"config": {"train": {}}}) == FORMED_LEVEL
    assert formed_level({"config": {"train": {"emergence_threshold": 0.5}}}) == 0.5
    for bad in (0, 1, 1.5, float("nan"), "0.5", True):
        with pytest.raises(ValueError, match="run r1: config.json train.emergence_threshold"):
            formed_level({"run_id": "r1", "config": {"train": {"emergence_threshold": bad}}})


def test_the_emergence_cli_reads_the_certified_onset_by_default(grid, tmp_path, capsys):
    from ihstats.emergence import main

    path, ids = grid
    assert main([str(path), "-o", str(tmp_path / "e" / "em.csv")]) == 0
    out, err = capsys.readouterr()
    assert "of the ps_gen onset" in out and "onset basis: certified" in out and "1 formed" in out
    assert "no 'ps_gen' evaluations" not in err  # derived from its three distances, never missing
    table = pd.read_csv(tmp_path / "e" / "em.csv").set_index("run_id")
    assert table.loc[ids, "formed"].tolist() == [True, False, False]
