"""analyses/design_law.py: the design table at bxc-cross's measured variances, and its refusals."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]


def _main():
    sys.path.insert(0, str(ROOT / "analyses"))
    try:
        sys.modules.pop("design_law", None)
        return importlib.import_module("design_law").main
    finally:
        sys.path.remove(str(ROOT / "analyses"))


def test_writes_the_table_and_the_ident_design_is_the_narrowest_five_seed_one(tmp_path, capsys):
    main = _main()
    assert main(["--sims", "10", "--out", str(tmp_path / "d")]) == 0
    t = pd.read_csv(tmp_path / "d" / "design_widths.csv").set_index("design")
    five = t[t["seeds"] == 5]
    assert five["width_b"].idxmin() == "factorial 5 x 5 (bxc-ident)"
    assert t.loc["bxc-cross (shipped)", "width_b"] > 2 * t.loc["factorial 5 x 5 (bxc-ident)", "width_b"]
    assert "sigma" in (tmp_path / "d" / "summary.md").read_text() and "bxc-cross" in capsys.readouterr().out
    assert main(["--summary", str(tmp_path / "none.csv"), "--out", str(tmp_path / "e")]) == 2
