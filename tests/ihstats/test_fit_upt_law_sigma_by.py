"""analyses/fit_upt_law.py --sigma-by and the circuits in the law report (issue 39 items 2, 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ihstats.simulate.law import simulate_emergence_table

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "analyses" / "fit_upt_law.py"


def _run(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, env=env)  # this checkout's package, not an installed one


@pytest.fixture(scope="module")
def table_csv(tmp_path_factory):
    """Per-C scatter, replicated cells, and two circuits at C = 16 (as in bxc-markov)."""
    t, _ = simulate_emergence_table(B_values=(4, 8, 16, 32), C_values=(16, 64, 256), n_seeds=3,
                                    sigma_C={16: 0.8, 64: 0.3, 256: 0.1}, censor_frac=0.0, seed=5)
    t["cell_id"] = t["B"].astype(int).astype(str) + "x" + t["C"].astype(int).astype(str)
    t["circuit"] = "prev-token"
    t.loc[(t["C"] == 16) & (t.index % 3 == 0), "circuit"] = "no-prev-token"
    path = tmp_path_factory.mktemp("sigma_by") / "emergence.csv"
    t.to_csv(path, index=False)
    return path


def test_an_unknown_sigma_by_column_is_a_one_line_error_before_sampling(table_csv, tmp_path):
    p = _run("--emergence", table_csv, "--sigma-by", "context", "--out", tmp_path / "o")
    assert p.returncode == 2
    assert [ln for ln in p.stderr.splitlines() if ln.startswith("error:")] == [
        f"error: {table_csv}: sigma_by: no column 'context' in the emergence table; columns: "
        f"{sorted(pd.read_csv(table_csv).columns)}"]


@pytest.mark.slow  # two fits (~1-2 min on 2 shared cores)
def test_sigma_by_c_is_compared_with_one_shared_sigma_and_circuits_are_counted(table_csv, tmp_path):
    out = tmp_path / "o"
    p = _run("--emergence", table_csv, "--fast", "--sigma-by", "C", "--compare", "on", "--sensitivity", "off",
             "--out", out)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "sigma[16]" in p.stdout and "LOO, sigma by C vs one shared sigma" in p.stdout
    assert "warning: the fit mixes circuits: 32 runs crossed with a previous-token head, 4 without" in p.stderr
    cmp = pd.read_csv(out / "loo_sigma.csv", index_col=0)
    assert set(cmp.index) == {"sigma_by_C", "shared_sigma"} and cmp.index[0] == "sigma_by_C"
    report = (out / "report.md").read_text()
    for part in ("## Circuits per cell", "## Scatter by C (LOO comparison)", "sigma per level of C",
                 "| 4 | 16 | 2 | 1 | 0 |"):  # B, C, then runs per circuit
        assert part in report, part
