"""analyses/mechanism_factorial.py: a fake factorial grid read end to end, a hand-built table, refusals."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_grid

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("mechanism_factorial", ROOT / "analyses" / "mechanism_factorial.py")
mf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mf)

pytestmark = pytest.mark.filterwarnings("ignore:formed = False with an uncensored onset")

#: cell -> (dotted overrides of the centre, planted onset factor); sparse never rises (not certified)
CELLS = {"centre": ({}, 1.0), "c32": ({"train.context": 32}, 1.3), "c128": ({"train.context": 128}, 0.8),
         "near": ({"data.markov.min_distance": 4, "data.markov.max_distance": 6}, 0.9),
         "far": ({"data.markov.min_distance": 20, "data.markov.max_distance": 28}, 1.5),
         "sparse": ({"data.markov.copies_per_token": 0.2}, None), "dense": ({"data.markov.copies_per_token": 0.6}, 0.7)}
CENTRE = {"data.source": "markov", "data.markov.min_distance": 8, "data.markov.max_distance": 12,
          "data.markov.copies_per_token": 0.4, "train.batch_size": 32, "train.context": 64}


def _grid(path: Path, cells=CELLS, labels: bool = True, seeds: int = 2) -> Path:
    """A fake factorial grid (general probe logged, so the certificate reads it): planted onsets
    near 700 updates times each cell's factor, last step 4,000; the manifest's cell labels."""
    runs, names = [], []
    for i, (cell, (over, factor)) in enumerate(cells.items()):
        for s in range(seeds):
            onset = None if factor is None else 700.0 * factor * (1 + 0.1 * s)
            curve = simulate_curve("flat" if factor is None else "sigmoid", "mixed", n=80, last_step=4000, onset=onset,
                                   baseline=0.05, rise=0.6, noise=0.01, seed=10 * i + s)
            runs.append((curve, {**CENTRE, **over, "seed": s}))
            names.append(cell)
    write_fake_grid(path, runs, name="mechanism-factorial", general=True)
    if labels:
        man = pd.read_parquet(path / "manifest.parquet")
        man.assign(cell=names).to_parquet(path / "manifest.parquet", index=False)
    return path


def test_a_fake_grid_end_to_end(tmp_path, capsys):
    grid, out = _grid(tmp_path / "mechanism-factorial"), tmp_path / "res"
    assert mf.main([str(grid), "--out", str(out)]) == 0
    arms = pd.read_csv(out / "arms.csv").set_index("arm")
    assert arms["n"].eq(2).all() and arms.at["sparse", "certified"] == 0 and arms.at["centre", "certified"] == 2
    assert arms.at["near", "copy_band"] == "4-6" and arms.at["near", "copy_distance"] == 5
    c = pd.read_csv(out / "contrasts.csv").set_index("contrast")
    assert list(c.columns[:4]) == ["factor", "high", "low", "n_high"]
    assert not c.at["dense - sparse", "testable"] and "sparse: 0 of 2 runs certified" in c.at["dense - sparse", "why"]
    assert np.isnan(c.at["dense - sparse", "estimate"]) and c.at["dense - sparse", "p_floor"] == pytest.approx(1 / 3)
    r = c.loc["c128 - c32"]  # planted log(0.8 / 1.3) = -0.49
    assert r["testable"] and r["lo"] < -0.49 < r["hi"] and r["factor_ratio"] == 4
    assert r["rank_p"] == pytest.approx(1 / 3)  # 2 runs against 2: the floor, however large the effect
    assert c.loc["far - near", "factor_ratio"] == pytest.approx(24 / 5)
    md = (out / "summary.md").read_text()
    assert "onsets: certified" in md and "| dense - sparse |" in md and "not testable" in md
    printed = capsys.readouterr().out
    assert "contrasts (log onset" in printed and "c128 - c32" in printed


def test_a_hand_built_emergence_table(tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"cell": cell, "C": {"c32": 32, "c128": 128}.get(cell, 64), "onset": 1000 * f * np.exp(rng.normal(0, 0.1)),
             "last_step": 6000, "formed": True, "run_id": f"{cell}{s}"}
            for cell, (_, f) in CELLS.items() if f for s in range(3)]
    rows += [{"cell": "sparse", "C": 64, "onset": np.nan, "last_step": 900 + 100 * s, "formed": False,
              "run_id": f"sparse{s}", "stop_reason": "emerged"} for s in range(3)]
    table = tmp_path / "emergence.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    assert mf.main(["--emergence", str(table), "--out", str(tmp_path / "res")]) == 0
    c = pd.read_csv(tmp_path / "res" / "contrasts.csv").set_index("contrast")
    assert c.at["c128 - c32", "testable"] and np.isnan(c.at["far - near", "elasticity"])  # no distance column
    assert c.at["c128 - c32", "p_floor"] == pytest.approx(0.1)  # 2 / C(6, 3)
    assert not c.at["sparse - centre", "testable"]
    md = (tmp_path / "res" / "summary.md").read_text()
    assert "onsets: the table's formed column" in md  # no onset_basis column: said so
    assert "stopped before a certificate: sparse 3 (last steps 900, 1000, 1100)" in md


def test_refuses_a_grid_without_the_factorials_arms(tmp_path, capsys):
    unlabelled = _grid(tmp_path / "plain", labels=False, seeds=1,
                       cells={"centre": ({}, 1.0), "c32": ({"train.context": 32}, 1.3)})
    assert mf.main([str(unlabelled), "--out", str(tmp_path / "a")]) == 2
    assert "manifest has no cell labels" in capsys.readouterr().err
    other = _grid(tmp_path / "other", seeds=1, cells={"centre": ({}, 1.0), "c32": ({"train.context": 32}, 1.3)})
    assert mf.main([str(other), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "not the mechanism factorial: no arm c128, near, far, sparse, dense" in err and "--preset mechanism-factorial" in err
    assert not (tmp_path / "b" / "contrasts.csv").exists()
