"""analyses/law_mechanism.py: arms from cell labels, b per arm recovered from simulated onsets."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "analyses" / "law_mechanism.py"
spec = importlib.util.spec_from_file_location("law_mechanism", SCRIPT)
lm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lm)

TRUE_B = {"fixed": -0.7, "density": 1.0, "capped": -0.1}


def _simulated(seed: int = 0) -> pd.DataFrame:
    """Onsets from log UPT = log 1500 - b_arm log(C / 64) + N(0, 0.12), 3 seeds per cell: the arms
    meet at C 64, where the density arm has no cell of its own (the preset's design: it shares the
    fixed arm's, the same data); one run is censored before its onset."""
    rng = np.random.default_rng(seed)
    rows = []
    for arm, b in TRUE_B.items():
        for C in (64, 128, 256):
            if arm == "density" and C == 64:
                continue
            for s in range(3):
                o = float(np.exp(np.log(1500) - b * np.log(C / 64) + rng.normal(0, 0.12)))
                rows.append({"cell": f"{arm}-c{C}", "C": C, "seed": s, "run_id": f"{arm}{C}{s}", "onset": o,
                             "onset_lo": 0.85 * o, "onset_hi": 1.15 * o, "censored": False, "last_step": 1.3 * o})
    t = pd.DataFrame(rows)
    slow = (t["cell"] == "fixed-c256") & (t["seed"] == 2)  # true onset near 3,900: not formed by 3,000
    t.loc[slow, ["censored", "last_step", "onset", "onset_lo", "onset_hi"]] = [True, 3000.0, np.nan, np.nan, np.nan]
    return t


def test_arms_and_shares():
    assert lm.arm_of("fixed-c64") == "fixed" and lm.arm_of("density-c256") == "density" and lm.arm_of("x") == "x"
    t = pd.DataFrame({"cell": ["fixed-c64", "density-c128"], "arm": ["fixed", "density"]})
    both = lm.with_shares(t, {"density": ["fixed-c64"]})
    assert sorted(zip(both["cell"], both["arm"])) == [("density-c128", "density"), ("fixed-c64", "density"),
                                                      ("fixed-c64", "fixed")]
    lo, hi = lm.hdi(np.arange(1000.0), 0.9)
    assert hi - lo == pytest.approx(899, abs=1)
    with pytest.raises(SystemExit, match="--share"):
        lm.parse_shares(["density"])


@pytest.mark.slow  # a PyMC fit (compile and sampling): about a minute on a shared 2-core machine
def test_b_per_arm_recovered_from_simulated_onsets(tmp_path, capsys):
    table = tmp_path / "onsets.csv"
    _simulated().to_csv(table, index=False)
    out = tmp_path / "res"
    rc = lm.main(["--emergence", str(table), "--out", str(out), "--likelihood", "normal",
                  "--draws", "400", "--tune", "400", "--chains", "2"])  # default --share density=fixed-c64
    assert rc == 0
    b = pd.read_csv(out / "b.csv").set_index("arm")
    for arm, truth in TRUE_B.items():  # the estimate's sd is about 0.05 here: 0.2 is 4 sd
        assert abs(b.loc[arm, "b"] - truth) < 0.2, (arm, b.loc[arm].to_dict())
        assert b.loc[arm, "b_lo"] < b.loc[arm, "b"] < b.loc[arm, "b_hi"] < b.loc[arm, "b_lo"] + 0.5
    assert b.loc["density", "diff_lo"] > 1.0 and b.loc["density", "p_diff_pos"] > 0.99
    printed = capsys.readouterr().out
    assert "b per arm" in printed and "density" in printed and (out / "onsets.csv").is_file()


def test_grid_onsets_and_mechanism_table(tmp_path):
    """A fake law-mechanism grid (planted onsets, real generator configs): arms from the manifest's
    cell labels, the shared cell in both arms, and the copy statistics measured per arm and C."""
    from ihstats.simulate.curves import simulate_curve
    from ihstats.simulate.run_dirs import write_fake_grid

    markov = {"data.source": "markov", "data.markov.vocab": 300, "data.markov.frequency": 0.9,
              "data.markov.reliability": 0.9, "data.markov.pool_tokens": 0, "train.batch_size": 32,
              "model.context": 128, "model.d_model": 32}
    cells = {"fixed-c64": {"train.context": 64}, "fixed-c128": {"train.context": 128},
             "capped-c128": {"train.context": 128, "data.markov.max_distance": 16}}
    runs, labels = [], []
    for i, (cell, over) in enumerate(cells.items()):
        for s in range(2):
            curve = simulate_curve("sigmoid", "mixed", n=120, last_step=4000, onset=1000.0 + 300 * i, seed=10 * i + s)
            runs.append((curve, {**markov, **over, "seed": s}))
            labels.append(cell)
    grid = tmp_path / "law-mechanism"
    write_fake_grid(grid, runs, name="law-mechanism")
    man = pd.read_parquet(grid / "manifest.parquet")
    man.assign(cell=labels).to_parquet(grid / "manifest.parquet", index=False)

    table = lm.onsets_from_grid(grid, {"capped": ["fixed-c64"]})
    assert len(table) == 8 and set(table["arm"]) == {"fixed", "capped"}
    assert set(table.loc[table["arm"] == "capped", "cell"]) == {"fixed-c64", "capped-c128"}
    assert table["onset"].between(500, 2500).all() and not table["censored"].any()
    mech = lm.mechanism_table(grid, table, seqs=32).set_index(["arm", "C"])
    assert mech.loc[("capped", 128), "d_q90"] <= 16 < mech.loc[("fixed", 128), "d_q90"]
    assert mech.loc[("fixed", 64), "copies_per_token"] == pytest.approx(0.4, abs=0.05)


def test_the_shipped_grid_reads_as_results_says():
    """data/reference_runs/law-mechanism: the C 128 cells of the density and capped arms never form
    (held on the creep), every other cell forms at least once; the fixed arm is bxc-cross's runs."""
    grid = ROOT / "data" / "reference_runs" / "law-mechanism"
    table = lm.onsets_from_grid(grid, lm.parse_shares([]))
    runs = table.drop_duplicates("run_id")
    assert len(runs) == 16 and int((~runs["censored"]).sum()) == 10
    by_cell = runs.groupby("cell")["censored"].sum()
    assert by_cell["density-c128"] == 2 and by_cell["capped-c128"] == 2
    assert by_cell[["fixed-c64", "fixed-c128", "capped-c32", "capped-c64"]].sum() == 0
    cross = {p.name for p in (ROOT / "data" / "reference_runs" / "bxc-cross").iterdir() if p.is_dir()}
    assert set(runs.loc[runs["arm"] == "fixed", "run_id"]) <= cross
