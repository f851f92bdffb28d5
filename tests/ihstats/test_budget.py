"""Two budgets: re-reading runs at a shorter budget, and the comparison that flags a boundary that
moves with the budget (a rate) and not one that holds."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ihstats.base import io
from ihstats.frontier.budget import compare_budgets, main, per_cell, read_at_budget, run_caps
from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_grid
from ihstats.simulate.onsets import read_onsets_at, simulate_onsets

sys.path.insert(0, str(Path(__file__).parent))
from helpers_frontier import write_onset_grid  # noqa: E402

CELLS = [(f, 0.9) for f in (0.6, 0.7, 0.8, 0.9)] + [(0.9, r) for r in (0.3, 0.5, 0.7)]
CAP = 4500.0


def test_a_rate_moves_the_boundary_and_is_flagged():
    """Onsets finite everywhere, slower at lower knobs: reading at 1/3 of the cap loses the slow
    cells, so the boundary moves up with the shorter budget."""
    long, _ = simulate_onsets(CELLS, n_seeds=3, log_t0=6.2, e_freq=-6.0, e_rel=-2.5, sigma=0.3,
                              cap=CAP, seed=0)
    short = read_onsets_at(long, CAP / 3)
    cmp = compare_budgets(short, long)
    assert cmp.late >= 5 and cmp.lost == 0 and cmp.moves
    assert cmp.formed[0] < cmp.formed[1]
    shift = cmp.shift()
    assert shift["frequency"] < 1 and shift["reliability"] < 1   # the longer budget reaches lower knobs
    assert cmp.verdict().startswith("the boundary moves with the budget: each budget draws its own line")
    assert list(cmp.table()["n_formed"]) == list(cmp.formed)


def test_a_boundary_that_holds_is_not_flagged():
    """Heads form early (before 1/3 of the cap) above a hard line and never below it."""
    long, _ = simulate_onsets(CELLS, n_seeds=3, log_t0=6.0, e_freq=-1.0, e_rel=-1.0, sigma=0.3,
                              cap=CAP, seed=1)
    never = long["frequency"] * long["reliability"] < 0.6
    long = long.assign(true_onset=np.where(never, np.inf, long["true_onset"]))
    long = long.assign(formed=~never, censored=never, onset=np.where(never, CAP, long["true_onset"]))
    assert long.loc[~never, "true_onset"].max() < CAP / 3
    short = read_onsets_at(long, CAP / 3)
    cmp = compare_budgets(short, long)
    assert cmp.late == 0 and not cmp.moves and cmp.p_value == 1.0
    assert cmp.shift()["frequency"] == pytest.approx(1.0)
    assert cmp.verdict().startswith("the boundary is not shown to move")


def test_a_few_late_formers_are_not_enough():
    """Two late formers against none is p = 0.25: not called a moving boundary."""
    long, _ = simulate_onsets(CELLS, n_seeds=3, log_t0=6.0, e_freq=-1.0, e_rel=-1.0, sigma=0.3,
                              cap=CAP, seed=1)
    late = long.index[:2]
    long.loc[late, "true_onset"] = 3000.0
    cmp = compare_budgets(read_onsets_at(long, CAP / 3), long)
    assert (cmp.late, cmp.lost) == (2, 0) and cmp.p_value == pytest.approx(0.25) and not cmp.moves


def test_compare_checks_its_inputs():
    long, _ = simulate_onsets(CELLS, cap=CAP, seed=0)
    short = read_onsets_at(long, CAP / 3)
    with pytest.raises(ValueError, match="not the same runs"):
        compare_budgets(short.iloc[1:], long)
    with pytest.raises(ValueError, match="must be below"):
        compare_budgets(long, short)
    with pytest.raises(ValueError, match="short: missing columns"):
        compare_budgets(short.drop(columns="budget"), long)


def test_read_at_budget_truncates_real_logs(tmp_path):
    """A fake grid: one head rising at update 3,000 (formed at the cap 9,000, not at 1/3 of it),
    one at 300 (formed at both), one flat (formed at neither)."""
    curves = [simulate_curve("sigmoid", "mixed", n=200, last_step=9000, onset=3000, width=0.5,
                             baseline=0.05, rise=0.6, noise=0.01, seed=1),
              simulate_curve("sigmoid", "mixed", n=200, last_step=9000, onset=300, width=0.5,
                             baseline=0.05, rise=0.6, noise=0.01, seed=2),
              simulate_curve("flat", "mixed", n=200, last_step=9000, baseline=0.05, noise=0.01, seed=3)]
    over = [{"data.source": "seminatural", "data.seminatural.frequency": f,
             "data.seminatural.reliability": r, "train.max_steps": 9000}
            for f, r in ((0.7, 0.9), (0.9, 0.9), (0.5, 0.7))]
    ids = write_fake_grid(tmp_path / "g", list(zip(curves, over)))
    data = io.load_grid(tmp_path / "g")
    assert set(run_caps(data).index) == set(ids) and (run_caps(data) == 9000).all()
    long, short = (read_at_budget(data, b).set_index("run_id") for b in (9000, 3000))
    assert list(long.loc[ids, "crossed"]) == [True, True, False]  # no general probe: the crossings
    assert list(short.loc[ids, "crossed"]) == [False, True, False]
    assert not long["formed"].any() and (long["onset_basis"] == "crossing").all()
    assert short["last_step"].max() <= 3000 and (short["budget"] == 3000).all()
    assert long.at[ids[0], "onset_lo"] <= 3000 <= long.at[ids[0], "onset_hi"]
    assert {"frequency", "reliability", "seed"} <= set(long.columns)
    cmp = compare_budgets(short.reset_index(), long.reset_index())
    assert (cmp.late, cmp.lost) == (1, 0)
    with pytest.raises(ValueError, match="budget: must be > 0"):
        read_at_budget(data, 0)


def test_cli_prints_both_budgets_and_the_verdict(tmp_path, capsys):
    """A rate law on two transects: onsets from 600 to ~3,900 updates; read at 9,000 and 3,000."""
    write_onset_grid(tmp_path / "g")
    assert main([str(tmp_path / "g"), "-o", str(tmp_path / "b.csv")]) == 0
    out = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "b.csv")
    assert {"formed_short", "formed_long", "onset_short", "onset_long", "frequency", "seed"} <= set(table)
    assert (table["formed_long"] >= table["formed_short"]).all()
    assert table["formed_long"].sum() > table["formed_short"].sum()
    assert "9000.0" in out and "3000.0" in out and "the boundary" in out
    cells = per_cell(table)  # seeds pooled: every run counted once, late = formed only by 9,000
    assert cells["n_runs"].sum() == len(table) and "seed" not in cells and "late" in out
    assert (cells["late"] == cells["formed_long"] - cells["formed_short"]).all()
    assert cells["late"].sum() == (table["formed_long"] & ~table["formed_short"]).sum() > 0
    assert main([str(tmp_path / "nowhere")]) == 2
    assert "error:" in capsys.readouterr().err


def test_a_run_still_training_is_left_out_where_its_verdict_is_not_known(tmp_path):
    """A grid read mid-run: a flat run at update 1,000 of 9,000, status running, is no evidence of
    "not formed" at 9,000 (left out, with a warning that names it) but is read at 600."""
    import json

    curves = [simulate_curve("sigmoid", "mixed", n=200, last_step=9000, onset=300, width=0.5,
                             baseline=0.05, rise=0.6, noise=0.01, seed=2),
              simulate_curve("flat", "mixed", n=40, last_step=1000, baseline=0.05, noise=0.01, seed=3)]
    over = [{"data.source": "seminatural", "data.seminatural.frequency": f,
             "data.seminatural.reliability": 0.9, "train.max_steps": 9000} for f in (0.9, 0.6)]
    ids = write_fake_grid(tmp_path / "g", list(zip(curves, over)))
    status = tmp_path / "g" / ids[1] / "status.json"
    status.write_text(json.dumps({**json.loads(status.read_text()), "status": "running"}))
    data = io.load_grid(tmp_path / "g")
    with pytest.warns(UserWarning, match=f"not finished and not formed by update 9000.*{ids[1]}"):
        long = read_at_budget(data, 9000)
    assert list(long["run_id"]) == [ids[0]]
    short = read_at_budget(data, 600)  # both were read past 600: both verdicts are known there
    assert set(short["run_id"]) == set(ids) and not short.set_index("run_id").at[ids[1], "formed"]


def test_the_shipped_extension_forms_only_after_the_freqrel_cap():
    data = io.load_grid(Path(__file__).resolve().parents[2] / "data" / "reference_runs" / "freqrel-extend")
    long, short = read_at_budget(data, 12600), read_at_budget(data, 4200)
    r06, f06 = long[long["reliability"] == 0.6], long[long["frequency"] == 0.6]
    r05 = long[long["reliability"] == 0.5]
    assert len(long) == 9 and len(r06) == len(f06) == len(r05) == 3
    # freqrel-extend's logs lack the general probe: never formed, read on their crossings
    assert not long["formed"].any() and (long["certificate"] == "uncertifiable (no general probe)").all()
    assert r06["crossed"].sum() == 2 and r06.loc[r06["crossed"], "onset"].between(4000, 5200).all()
    assert f06["crossed"].sum() == 2 and f06.loc[f06["crossed"], "onset"].between(6000, 10500).all()
    assert not r05["crossed"].any()  # r 0.5: no onset in 12,600 updates
    assert short["crossed"].sum() == 0  # freqrel's own cap would have read both points as "never crosses"
