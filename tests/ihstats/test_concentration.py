"""Per-layer concentration of a per-head score over training (issue 42)."""

import numpy as np
import pandas as pd
import pytest

from ihstats.concentration import concentration, concentration_at_level, layer_concentration


def rows(step, layer_scores):
    out = [{"step": step, "metric": "ps", "layer": l, "head": h, "value": v}
           for l, hs in enumerate(layer_scores) for h, v in enumerate(hs)]
    return pd.DataFrame(out)


def test_layer_concentration_exact():
    m = pd.concat([rows(0, [[0.1, 0.1, 0.1, 0.1], [0.0, 0.0, 0.0, 0.0]]),
                   rows(10, [[0.1, 0.1, 0.1, 0.1], [0.8, 0.0, -0.1, 0.0]]),
                   rows(20, [[0.1, 0.1, 0.1, 0.1], [0.6, 0.2, 0.2, 0.0]])])
    c = layer_concentration(m).set_index(["step", "layer"])
    assert c.loc[(0, 0), "n_eff"] == pytest.approx(4.0) and c.loc[(0, 0), "top_share"] == pytest.approx(0.25)
    assert c.loc[(0, 1), "n_eff"] == 0.0  # no positive score
    assert c.loc[(10, 1), "n_eff"] == pytest.approx(1.0) and c.loc[(10, 1), "top_share"] == pytest.approx(1.0)
    assert c.loc[(20, 1), "n_eff"] == pytest.approx(1.0 / (0.36 + 0.04 + 0.04))
    assert (c["k"] == 1).all()
    at = concentration_at_level(m, 0.5)
    assert at["step"].unique().tolist() == [10] and at["level"].eq(0.5).all()
    assert concentration_at_level(m, 0.9).empty
    assert layer_concentration(m, frac=0.5)["k"].eq(2).all()
    with pytest.raises(ValueError, match="no per-head rows"):
        layer_concentration(m, "la")


def test_concentration_exact():
    s = np.array([[0.5, 0.3], [0.2, -0.1]])
    top1, neff = concentration(s, 1)
    assert top1 == pytest.approx(0.5)
    assert neff == pytest.approx(1.0 / (0.25 + 0.09 + 0.04))
    assert concentration(s, 2)[0] == pytest.approx(0.8)
    assert concentration(s, 10)[0] == pytest.approx(1.0)
    assert concentration(np.ones((3, 4)), 3) == (pytest.approx(0.25), pytest.approx(12.0))
    assert concentration(np.array([-1.0, 0.0]), 1) == (0.0, 0.0)
    with pytest.raises(ValueError, match="k"):
        concentration(s, 0)


def test_cli_on_the_shipped_biinduct_grid(tmp_path, capsys):
    """Every run of the shipped 2 x 4 grid (5 conditions x 3 seeds), per layer at max PS >= 0.2; a
    bad path exits 2."""
    from pathlib import Path

    from ihstats.concentration import main

    grid = Path(__file__).resolve().parents[2] / "data" / "reference_runs" / "biinduct"
    assert main([str(grid), "--level", "0.2", "--out", str(tmp_path)]) == 0
    at = pd.read_csv(tmp_path / "concentration_at_level.csv")
    over = pd.read_csv(tmp_path / "concentration.csv")
    assert sorted(at["biinduct"].unique()) == ["backward", "balanced", "forward", "none", "random"]
    assert len(at) == 15 * 2 and at["n_eff"].between(1, 4).all() and at["top_share"].between(0.25, 1).all()
    assert set(over["layer"]) == {0, 1} and over.groupby("run_id")["step"].nunique().min() > 10
    assert main([str(tmp_path / "nope"), "--out", str(tmp_path / "out")]) == 2  # a missing grid: one line
    with pytest.raises(SystemExit):  # an --out that holds the grid it reads is refused before reading
        main([str(tmp_path / "nope"), "--out", str(tmp_path)])
    assert "error" in capsys.readouterr().err
