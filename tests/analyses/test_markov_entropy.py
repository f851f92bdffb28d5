"""analyses/markov_entropy.py on the shipped markov grid: the entropy table and which verdicts have
entropy-matched cells."""

import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]


def test_matched_contrasts_on_the_shipped_grid(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "analyses" / "markov_entropy.py"),
                        str(ROOT / "data/reference_runs/markov"), "--out", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    cells = pd.read_csv(tmp_path / "cells.csv")
    assert len(cells) == 24 and cells["n_runs"].sum() == 72
    H = cells[cells["regime"] == "f 0.9 r 0.9"].set_index(["dependency", "categoriality", "marginal"])["entropy_rate"]
    assert abs(H[("markov", "none", "uniform")] - 4.87) < 0.01 and abs(H[("markov", "low", "zipf")] - 2.55) < 0.01
    assert abs(H[("iid", "none", "uniform")] - 8.0) < 1e-9  # i.i.d.: the marginal entropy
    c = pd.read_csv(tmp_path / "contrasts.csv").set_index(["contrast", "regime"])
    high = c.loc[("high categoriality vs none or low", "f 0.9 r 0.9")]
    assert (high["formed_tested"], high["runs_tested"], high["formed_other"], high["runs_other"]) == (1, 6, 6, 6)
    assert abs(high["p_value"] - 0.02) < 1e-9  # P = 4/20 * 1/20 each tail, two-sided
    # the marginal and low-categoriality verdicts have no entropy-matched cells here
    for name in ("Zipf vs the other marginals", "low categoriality vs none"):
        assert c.loc[(name, "f 0.8 r 0.7"), "n_strata"] == 0
        assert "confounded with entropy" in c.loc[(name, "f 0.8 r 0.7"), "pairs"]
    assert (tmp_path / "summary.md").read_text().count("| markov | f ") == 24
    # the shipped logs lack the general probe: the counts are crossings, and every output says so
    basis = "formed: crossing, not certified: logs lack the general probe"
    assert basis in (tmp_path / "summary.md").read_text() and basis in r.stdout
    # a summary written before the entropy column is refused with what to do
    old = tmp_path / "old"
    (old / "g").mkdir(parents=True)
    pd.read_csv(ROOT / "data/reference_runs/markov/summary.csv").drop(columns="data_entropy_rate").to_csv(
        old / "g" / "summary.csv", index=False)
    r = subprocess.run([sys.executable, str(ROOT / "analyses" / "markov_entropy.py"), str(old / "g"),
                        "--out", str(old / "out")], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2 and "data_entropy_rate" in r.stderr and "rerun the grid command" in r.stderr


def test_marginals_at_matched_entropy_in_the_high_regime_compare_onsets(tmp_path):
    # the companion at 4.50 bits, f = r = 0.9: every marginal forms, so formed counts cannot compare
    # them; the rank test of onsets (not formed = after every onset) can, within the companion grid
    r = subprocess.run([sys.executable, str(ROOT / "analyses" / "markov_entropy.py"),
                        str(ROOT / "data/reference_runs/markov"), str(ROOT / "data/reference_runs/markov-entropy-high"),
                        "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    c = pd.read_csv(tmp_path / "contrasts.csv").set_index(["contrast", "regime"])
    gauss = c.loc[("Gaussian vs the other marginals", "f 0.9 r 0.9")]
    assert "gaussian 3/3 (4.50 bits)" in gauss["pairs"]  # matched inside the companion, not across grids
    assert gauss["p_value"] == 1.0 and gauss["onset_p"] > 0.5  # Gaussian is not the slow one here
    zipf = c.loc[("Zipf vs the other marginals", "f 0.9 r 0.9")]
    assert zipf["rank_shift"] > 2 and abs(zipf["onset_p"] - 4 / 84) < 1e-9  # 2 of 84 relabellings as far, x2 sides
