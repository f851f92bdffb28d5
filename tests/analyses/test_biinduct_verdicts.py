"""analyses/biinduct_verdicts.py on a fake biinduct grid: the per-run table reads onsets, final
signatures, concentration and key -> value recall; each claim gets its pooled test and verdict."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ihstats.ablation.biinduct import curves_frame
from ihstats.base.io import load_grid
from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_grid

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "analyses" / "biinduct_verdicts.py"
MODES = {"none": 1500, "forward": 600, "backward": 700, "balanced": 650, "random": 1500}  # onsets


def _grid(tmp_path):
    runs, meta = [], []
    for i, (mode, onset) in enumerate((m, o) for m, o in MODES.items() for _ in range(3)):
        seed = i % 3
        curve = simulate_curve("sigmoid", "mixed", onset=onset * (1 + 0.02 * seed), width=0.3, rise=0.6,
                               n=80, last_step=3200, baseline=0.02, noise=0.005, seed=i)
        runs.append((curve, {"data.biinduct.mode": mode, "seed": seed, "train.max_steps": 3200}))
        meta.append((mode, seed, onset * (1 + 0.02 * seed)))
    ids = write_fake_grid(tmp_path / "g", runs)
    pd.DataFrame({"run_id": ids, "formed": True, "onset": [m[2] for m in meta], "steps": 3200}).to_csv(
        tmp_path / "g" / "summary.csv", index=False)
    kv = [{"run_id": rid, "control": c, "hits1": h, "mean_logprob": -1.0 if c == "true" else -4.0, "shots_mean": 20.0}
          for rid in ids for c, h in (("true", 0.6), ("permuted", 0.0), ("absent", 0.0))]
    pd.DataFrame(kv).to_csv(tmp_path / "g" / "icl_kv.csv", index=False)
    return tmp_path / "g"


def test_claims_on_a_fake_grid(tmp_path):
    grid = _grid(tmp_path)
    r = subprocess.run([sys.executable, str(SCRIPT), str(grid), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    runs = pd.read_csv(tmp_path / "o" / "runs.csv")
    assert len(runs) == 15 and set(runs["mode"]) == set(MODES)
    assert list(runs["kv_gain"]) == pytest.approx([3.0] * 15) and runs["top_share"].notna().all()
    claims = pd.read_csv(tmp_path / "o" / "claims.csv")
    vs_control = claims[claims["baseline"] == "random"].iloc[0]  # the curricula against the random-span control
    assert vs_control["column"] == "onset_or_cap" and vs_control["verdict"] == "agrees"
    claims = claims[claims["baseline"] == "none"].set_index("column")
    # curricula form earlier than natural-only in every seed: the pooled test reaches its floor
    assert claims.at["onset_or_cap", "p_less"] == pytest.approx(1 / 220)
    assert claims.at["onset_or_cap", "p_for_holm"] == pytest.approx(2 / 220)  # Holm over the claim's 2 measures
    assert claims.at["onset_or_cap", "verdict"] == "agrees"
    assert claims.at["kv_gain", "verdict"] == "agrees (no increase detected)"
    # recall far above its chance level (1 / 20 pairs) in every run: testable, with the chance named
    assert claims.at["kv_hits1", "chance"] == pytest.approx(0.05) and not claims.at["kv_hits1", "at_chance"]
    contr = pd.read_csv(tmp_path / "o" / "contrasts.csv")
    onset = contr[contr["value"] == "onset_or_cap"].set_index("condition")
    assert onset.at["forward", "p_floor"] == pytest.approx(0.1)  # 3 vs 3, two-sided: descriptive
    assert "## Claims" in (tmp_path / "o" / "summary.md").read_text()
    assert "formed (the earlier-emergence claim's onset or cap): crossing, not certified" in \
        (tmp_path / "o" / "summary.md").read_text()
    assert all((tmp_path / "o" / f"curves.{suf}").stat().st_size > 1000 for suf in ("png", "pdf"))


def test_curves_frame_takes_the_best_head_and_names_the_mode(tmp_path):
    grid = load_grid(_grid(tmp_path))
    frame = curves_frame(grid, {"ps": "PS"})
    ps = grid.metrics[grid.metrics["metric"] == "ps"]
    best = ps.groupby(["run_id", "step"])["value"].max()
    assert len(frame) == len(best) and set(frame["metric"]) == {"ps"}
    assert frame.set_index(["run_id", "step"])["value"].sort_index().to_numpy() == pytest.approx(best.to_numpy())
    modes = grid.runs.set_index("run_id")["biinduct"]
    assert (frame["mode"] == frame["run_id"].map(modes)).all() and set(frame["mode"]) == set(MODES)


def test_missing_summary_is_a_clear_error(tmp_path):
    grid = _grid(tmp_path)
    (grid / "summary.csv").unlink()
    r = subprocess.run([sys.executable, str(SCRIPT), str(grid), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2 and "summary.csv" in r.stderr


def test_a_run_missing_from_the_summary_is_named(tmp_path):
    grid = _grid(tmp_path)
    summary = pd.read_csv(grid / "summary.csv")
    summary.iloc[1:].to_csv(grid / "summary.csv", index=False)
    r = subprocess.run([sys.executable, str(SCRIPT), str(grid), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2 and "no row for runs" in r.stderr and summary["run_id"].iloc[0] in r.stderr
