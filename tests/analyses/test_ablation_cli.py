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


def test_prev_token_sets_are_their_own_holm_family(tmp_path):
    """Rows labelled '<condition>:prev_token' (ihtrain.ablate --prev-token-set) are corrected apart:
    the top-set family's Holm p are those of the table without them."""
    t = pd.read_csv(ROOT / "data" / "example_ablation.csv")
    prev = t[t["condition"] == "natural"].assign(condition="natural:prev_token")
    both = tmp_path / "both.csv"
    pd.concat([t, prev]).to_csv(both, index=False)
    r = _run("--table", both, "--fast", "--out", tmp_path / "b")
    assert r.returncode == 0, r.stderr
    r0 = _run("--table", ROOT / "data" / "example_ablation.csv", "--fast", "--out", tmp_path / "a")
    assert r0.returncode == 0, r0.stderr
    tb, ta = pd.read_csv(tmp_path / "b" / "tests.csv"), pd.read_csv(tmp_path / "a" / "tests.csv")
    assert set(tb["family"]) == {"top", "prev_token"}
    top = tb[tb["family"] == "top"].set_index("condition")["p_random_holm"].sort_index()
    pd.testing.assert_series_equal(top, ta.set_index("condition")["p_random_holm"].sort_index())
    one = tb[tb["family"] == "prev_token"]
    assert len(one) == 1 and one["p_random_holm"].iloc[0] == one["p_random"].iloc[0]  # a family of one


def test_seed_labels_are_pooled_per_condition(tmp_path):
    """Conditions 'MODE@sN' (one per seed) give pooled.csv: one row per MODE, the seeds combined, and
    a floor far below any single run's 1 / (R + 1)."""
    t = pd.read_csv(ROOT / "data" / "example_ablation.csv")
    seeds = pd.concat([t.assign(condition=t["condition"] + f"@s{s}") for s in range(3)])
    path = tmp_path / "seeds.csv"
    seeds.to_csv(path, index=False)
    r = _run("--table", path, "--fast", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    pooled = pd.read_csv(tmp_path / "o" / "pooled.csv").set_index("condition")
    assert set(pooled.index) == {"natural", "biinduct"} and (pooled["n_seeds"] == 3).all()
    single = pd.read_csv(tmp_path / "o" / "tests.csv")["p_random_min"].min()
    assert (pooled["p_floor"] < single ** 2).all()
    assert "Seeds as the unit" in (tmp_path / "o" / "summary.md").read_text()
