"""analyses/probe_audit.py: the design check over finished grids, on the shipped logs."""

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("probe_audit", ROOT / "analyses" / "probe_audit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_audit_finds_the_blind_c128_cell_of_the_shipped_law_grid(tmp_path):
    mod = _script()
    assert mod.main([str(ROOT / "data/reference_runs/bxc-law"), str(ROOT / "data/reference_runs/bxc-markov"),
                     "--out", str(tmp_path)]) == 0
    t = pd.read_csv(tmp_path / "probe_audit.csv")
    law = t[t["grid"] == "bxc-law"].set_index("C")
    assert (law.loc[[128], "verdict"] == "off").all() and (law.loc[[128], "in_region"] == 0).all()
    assert (law.loc[[128], "queries"] == "31-61").all() and (law.loc[[128], "repeat_region"] == "64-127").all()
    assert (law.loc[64, "verdict"] == "in").all() and (law.loc[64, "in_region"] == 30).all()
    assert (t[t["grid"] == "bxc-markov"]["verdict"] == "in").all()  # probe_len 0: queries [C/2, C-1]
    assert t["runs"].sum() == 18 + 36


def test_each_audit_writes_its_own_file_named_by_its_inputs(tmp_path, monkeypatch):
    """issue 68: a second audit of other grids no longer replaces the first."""
    mod = _script()
    monkeypatch.chdir(tmp_path)
    for grid in ("bxc-law", "bxc-markov"):
        assert mod.main([str(ROOT / "data/reference_runs" / grid)]) == 0
    law = pd.read_csv(tmp_path / "results/probe_audit/bxc-law/probe_audit.csv")
    markov = pd.read_csv(tmp_path / "results/probe_audit/bxc-markov/probe_audit.csv")
    assert set(law["grid"]) == {"bxc-law"} and set(markov["grid"]) == {"bxc-markov"}
    assert mod.audit_name([Path("a/g1"), Path("b/g2")]) == "g1+g2" and mod.audit_name([]) == "shipped"
