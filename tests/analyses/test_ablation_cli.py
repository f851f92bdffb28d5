"""analyses/ablation_tests.py: help, the shipped example, bad input exits non-zero."""

import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "analyses" / "ablation_tests.py"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def test_help():
    r = _run("--help")
    assert r.returncode == 0 and "--table" in r.stdout and "set_id" in r.stdout


def test_fast_on_shipped_example(tmp_path):
    r = _run("--fast", "--out", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "shipped simulated example" in r.stdout and f"wrote {tmp_path}" in r.stdout
    tests = pd.read_csv(tmp_path / "tests.csv")
    assert set(tests["condition"]) == {"natural", "biinduct"}
    assert {"p_random", "p_random_holm", "p_random_fdr_bh", "gap_lo", "gap_hi"} <= set(tests)
    # the example plants a top-k effect of 0.3 (natural) and 0.1 (biinduct)
    t = tests.set_index("condition")
    assert t.at["natural", "gap"] > t.at["biinduct", "gap"]
    assert len(pd.read_csv(tmp_path / "comparisons.csv")) == 1
    for name in ("drops.png", "drops.pdf", "drops.csv", "summary.md"):
        assert (tmp_path / name).stat().st_size > 0, name


def test_mismatched_examples_exit_with_reason(tmp_path):
    t = pd.read_csv(ROOT / "data" / "example_ablation.csv")
    t = t[~((t["condition"] == "biinduct") & (t["example"] >= 90))]
    path = tmp_path / "bad.csv"
    t.to_csv(path, index=False)
    r = _run("--table", path, "--fast", "--compare", "natural,biinduct", "--out", tmp_path / "o")
    assert r.returncode == 2 and "mismatched example counts between conditions" in r.stderr
