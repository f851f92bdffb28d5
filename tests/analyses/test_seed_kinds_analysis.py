"""analyses/seed_kinds.py: a fake 3 x 3 crossed grid read end to end, a block that is not testable,
and the refusals of a table that is not one cell's block."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ihstats.law.seed_block import variance_components
from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_grid

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("seed_kinds", ROOT / "analyses" / "seed_kinds.py")
sk = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sk)

#: planted log-onset offsets: weight seeds far apart, data seeds close, a small residual
W, D = np.array([-0.5, 0.0, 0.5]), np.array([-0.05, 0.0, 0.05])


def _grid(path: Path, flat: tuple[int, int] | None = None) -> Path:
    """Nine runs at B 32, C 64, weight seed x data seed 0-2, with the general probe (certified);
    onset 900 exp(w_i + d_j); ``flat``: that pair's run never rises (not formed)."""
    runs = []
    for i in range(3):
        for j in range(3):
            seed = 10 * i + j
            if (i, j) == flat:
                c = simulate_curve("flat", "mixed", n=80, last_step=8000, baseline=0.05, noise=0.005, seed=seed)
            else:
                c = simulate_curve("sigmoid", "mixed", n=80, last_step=8000, onset=900 * np.exp(W[i] + D[j]),
                                   width=0.5, baseline=0.05, rise=0.75, noise=0.005, seed=seed)
            runs.append((c, {"weight_seed": i, "data_seed": j, "train.batch_size": 32, "train.context": 64,
                             "train.max_steps": 8000}))
    write_fake_grid(path, runs, general=True)
    return path


def test_a_crossed_grid_gives_the_block_and_each_kinds_variance(tmp_path, capsys):
    out = tmp_path / "res"
    assert sk.main([str(_grid(tmp_path / "g")), "--out", str(out)]) == 0
    block = pd.read_csv(out / "block.csv").set_index("weight_seed")
    assert list(block.columns) == ["data_seed=0", "data_seed=1", "data_seed=2"] and list(block.index) == [0, 1, 2]
    y = block.to_numpy()
    planted = np.log(900) + W[:, None] + D[None, :]
    assert np.abs(y - planted).max() < 0.15, y - planted  # the detector reads each planted onset
    comps = pd.read_csv(out / "components.csv")
    assert list(comps.columns) == sk.COLUMNS and list(comps["kind"]) == ["weight_seed", "data_seed", "residual"]
    again = variance_components(y)  # from block.csv's rounded digits: F, with its tiny residual, moves most
    assert comps[["sd", "F", "p"]].to_numpy()[:2] == pytest.approx(again[["sd", "F", "p"]].to_numpy()[:2], rel=1e-3)
    w, d = comps.set_index("kind").loc["weight_seed"], comps.set_index("kind").loc["data_seed"]
    assert w["sd"] > 0.3 and w["p"] < 0.05 and d["sd"] < w["sd"]  # the weight seed dominates, as planted
    text = (out / "summary.md").read_text()
    assert "certified" in text and "| weight_seed |" in text and "interaction" in text
    printed = capsys.readouterr().out
    assert "variance components" in printed and str(out) in printed


def test_a_run_that_did_not_form_leaves_the_block_not_testable(tmp_path, capsys):
    out = tmp_path / "res"
    assert sk.main([str(_grid(tmp_path / "g", flat=(2, 1))), "--out", str(out)]) == 1
    assert (out / "block.csv").is_file() and not (out / "components.csv").exists()
    assert pd.read_csv(out / "block.csv").isna().to_numpy().sum() == 1
    assert "8 of 9 pairs formed" in (out / "summary.md").read_text()
    err = capsys.readouterr().err
    assert "not testable on certified onsets" in err and "weight 2 x data 1" in err


def _table(**over) -> pd.DataFrame:
    rows = [{"run_id": f"r{i}{j}", "cell_id": "c1", "B": 32, "C": 64, "weight_seed": i, "data_seed": j,
             "onset": 1000.0 * (1 + i + 0.1 * j + 0.03 * (i * j % 2)), "censored": False, "formed": True}
            for i in range(3) for j in range(3)]
    return pd.DataFrame(rows).assign(**over)


def test_an_emergence_table_and_its_refusals(tmp_path, capsys):
    good = tmp_path / "one.csv"
    _table().to_csv(good, index=False)
    assert sk.main(["--emergence", str(good), "--out", str(tmp_path / "a")]) == 0
    assert (tmp_path / "a" / "components.csv").is_file()
    two = tmp_path / "two.csv"
    pd.concat([_table(), _table(cell_id="c2", run_id=[f"s{k}" for k in range(9)])]).to_csv(two, index=False)
    assert sk.main(["--emergence", str(two), "--out", str(tmp_path / "b")]) == 2
    assert "2 cells in the table" in capsys.readouterr().err and not (tmp_path / "b" / "block.csv").exists()
    assert sk.main(["--emergence", str(two), "--cell", "c2", "--out", str(tmp_path / "c")]) == 0
    assert sk.main(["--emergence", str(two), "--cell", "c9", "--out", str(tmp_path / "d")]) == 2
    assert "the table's cells: c1, c2" in capsys.readouterr().err
    no_kinds = tmp_path / "plain.csv"
    _table().drop(columns=["data_seed"]).to_csv(no_kinds, index=False)
    assert sk.main(["--emergence", str(no_kinds), "--out", str(tmp_path / "e")]) == 2
    assert "data_seed: missing" in capsys.readouterr().err


def test_the_default_grid_must_exist(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        sk.main([])
    assert e.value.code == 2 and "runs/bxc-seed-kinds: not a directory" in capsys.readouterr().err
