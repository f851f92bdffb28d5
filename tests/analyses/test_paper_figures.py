"""paper_figures/make.py: the original figures in fast mode on the shipped simulated examples
(--simulated) and a fake grid; the default reads only shipped real logs; --check."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_grid

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "paper_figures" / "make.py"
EXAMPLE = ROOT / "data" / "example_emergence.csv"

spec = importlib.util.spec_from_file_location("paper_figures_make", SCRIPT)
make = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = make  # dataclasses look their module up while the file executes
spec.loader.exec_module(make)

COLUMNS = {
    "emergence_curves": {"run_id", "step", "max_ps", "B", "C", "onset", "onset_lo", "onset_hi",
                         "censored", "last_step"},
    "upt_law": {"run_id", "B", "C", "observed", "predicted", "pred_lo", "pred_hi", "censored",
                "log_observed", "log_predicted"},
    "frontier": {"frequency", "reliability_median", "reliability_lo", "reliability_hi",
                 "glm_reliability"},
    "ablation": {"condition", "ablation", "set_id", "drop", "p_random", "p_random_holm"},
}


ORIGINAL = list(COLUMNS)  # the figures that can run on the simulated examples and a fake grid


def fake_grid(path: Path) -> dict[tuple[int, int], float]:
    """Six emerging runs (planted onsets) over B x C and one flat (censored) run."""
    truth, runs = {}, []
    for i, (C, B) in enumerate([(c, b) for c in (64, 128) for b in (8, 16, 32)]):
        onset = 2000 * (16 / B) ** 0.4 * (128 / C) ** 0.6
        truth[(B, C)] = onset
        curve = simulate_curve("sigmoid", "mixed", n=60, last_step=10_000, onset=onset, width=0.8,
                               seed=i)
        runs.append((curve, {"train.batch_size": B, "train.context": C}))
    flat = simulate_curve("flat", "mixed", n=60, last_step=10_000, seed=99)
    runs.append((flat, {"train.batch_size": 64, "train.context": 128}))
    write_fake_grid(path, runs)
    return truth


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paper")
    truth = fake_grid(tmp / "grid")
    out = tmp / "out"
    rc = make.main(["--only", *ORIGINAL, "--runs", str(tmp / "grid"), "--emergence", str(EXAMPLE),
                    "--simulated", "--fast", "--out", str(out)])
    return rc, out, truth


def test_help_and_list():
    r = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "--full" in r.stdout and "--only" in r.stdout
    r = subprocess.run([sys.executable, str(SCRIPT), "--list"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0
    assert [line.split()[0] for line in r.stdout.splitlines()] == list(make.REGISTRY)


def test_every_figure_written_with_its_data(made):
    rc, out, _ = made
    assert rc == 0
    for name, cols in COLUMNS.items():
        for ext in ("png", "pdf", "csv"):
            assert (out / f"{name}.{ext}").stat().st_size > 0, f"{name}.{ext}"
        df = pd.read_csv(out / f"{name}.csv")
        assert cols <= set(df.columns), (name, cols - set(df.columns))
        assert len(df) > 0
    assert {"param", "mean", "hdi_lo", "hdi_hi"} <= set(pd.read_csv(out / "upt_law_params.csv"))
    assert {"B", "C", "upt"} <= set(pd.read_csv(out / "upt_law_law.csv"))
    assert {"n_runs", "n_formed"} <= set(pd.read_csv(out / "frontier_cells.csv"))


def test_index_names_sources_and_commands(made):
    _, out, _ = made
    index = (out / "INDEX.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in index.splitlines()
            if line.startswith("| ") and line.split("|")[1].strip() in make.REGISTRY}
    assert set(rows) == set(ORIGINAL)
    assert all("| ok |" in r for r in rows.values())
    assert "real:" in rows["emergence_curves"]
    for name in ("upt_law", "frontier", "ablation"):  # fell back to / given the shipped examples
        assert "SIMULATED" in rows[name], name
    assert "--only upt_law --runs" in rows["upt_law"] and "--emergence" in rows["upt_law"]
    assert "--emergence" not in rows["frontier"]


def test_known_answers(made):
    _, out, truth = made
    em = pd.read_csv(out / "emergence_curves.csv").groupby("run_id").first()
    flat = em[em["B"] == 64]
    assert flat["censored"].all()
    for r in em[em["B"] != 64].itertuples():  # planted onsets recovered within ~25%
        assert not r.censored
        assert abs(np.log(r.onset / truth[(r.B, r.C)])) < 0.25, (r.B, r.C, r.onset)
    # example_emergence.csv was simulated with a = 0.37, b = 0.62
    p = pd.read_csv(out / "upt_law_params.csv").set_index("param")
    assert p.at["a", "hdi_lo"] < 0.37 < p.at["a", "hdi_hi"]
    assert p.at["b", "hdi_lo"] < 0.62 < p.at["b", "hdi_hi"]
    # the frontier falls with frequency (rarer patterns need more reliable ones)
    fr = pd.read_csv(out / "frontier.csv")
    assert fr["reliability_median"].iloc[0] > fr["reliability_median"].iloc[-1]
    ab = pd.read_csv(out / "ablation.csv")
    for _, g in ab.groupby("condition"):
        top = g.loc[g["ablation"] == "top", "drop"].iloc[0]
        assert top > g.loc[g["ablation"] == "random", "drop"].mean()
        assert g["p_random"].iloc[0] < 0.05


def test_failure_is_reported_and_others_still_run(made, tmp_path):
    grid = made[1].parent / "grid"
    bad = tmp_path / "bad.csv"
    pd.read_csv(ROOT / "data" / "example_ablation.csv").drop(columns="value").head(50).to_csv(bad)
    out = tmp_path / "out"
    rc = make.main(["--only", "ablation", "emergence_curves", "--ablation-table", str(bad),
                    "--runs", str(grid), "--fast", "--out", str(out)])
    assert rc == 1
    assert (out / "emergence_curves.png").is_file() and not (out / "ablation.png").exists()
    index = (out / "INDEX.md").read_text()
    assert "| ablation | FAILED |" in index and "| emergence_curves | ok |" in index


def test_missing_shipped_set_is_skipped_never_simulated(tmp_path):
    """Without --simulated a figure whose shipped set is missing is skipped with the reason."""
    empty = tmp_path / "reference"
    empty.mkdir()
    only = [n for n in make.REGISTRY if n != "scored_series"]  # every figure of a shipped set
    out = tmp_path / "figs"  # beside the input, not holding it (the output guard)
    rc = make.main(["--only", *only, "--reference", str(empty), "--fast", "--out", str(out)])
    assert rc == 0
    index = (out / "INDEX.md").read_text()
    for name in only:
        assert f"| {name} | skipped |" in index, name
    assert "SIMULATED" not in index and "missing" in index
    assert not list(out.glob("*.csv"))
    assert make.main(["--runs", str(tmp_path / "nope"), "--out", str(out)]) == 2


def test_default_reads_only_shipped_real_logs(tmp_path):
    """No flag: the fast-regime curves come from data/reference_runs, INDEX says real."""
    assert make.main(["--only", "emergence_curves_default", "--out", str(tmp_path)]) == 0
    index = (tmp_path / "INDEX.md").read_text()
    assert "| emergence_curves_default | ok | real: data/reference_runs/bxc-cross" in index
    assert "SIMULATED" not in index
    committed = ROOT / "paper_figures" / "figures" / "INDEX.md"
    assert "SIMULATED" not in committed.read_text()


def test_check_flags_a_changed_csv(tmp_path):
    figs = tmp_path / "figs"
    assert make.main(["--only", "emergence_curves_default", "--out", str(figs)]) == 0
    assert make.main(["--only", "emergence_curves_default", "--out", str(figs), "--check"]) == 0
    csv = figs / "emergence_curves_default.csv"
    df = pd.read_csv(csv)
    df.loc[0, "max_ps"] += 1e-3
    df.to_csv(csv, index=False)
    assert make.main(["--only", "emergence_curves_default", "--out", str(figs), "--check"]) == 1
    assert make.csv_differences(csv, csv) == []


@pytest.mark.slow
def test_committed_figures_pass_check():
    """Every committed figure's CSV is what make.py regenerates (about 30 s)."""
    assert make.main(["--check"]) == 0


def test_figures_without_a_sampler_from_their_shipped_sets(tmp_path):
    """Bi-Induct on text (verdicts as analyses/biinduct_verdicts.py gives them), the entropy-matched
    Markov contrasts (as analyses/markov_entropy.py) and the planted series (onsets where planted);
    INDEX.md names every figure's grid and claim."""
    only = ["biinduct_text", "markov_entropy", "scored_series"]
    assert make.main(["--only", *only, "--out", str(tmp_path)]) == 0
    claims = pd.read_csv(tmp_path / "biinduct_text_claims.csv").set_index("column")
    assert claims.at["ps", "verdict"] == "agrees" and claims.at["ps", "p_for_holm"] == pytest.approx(1 / 110)
    assert claims.at["ps", "floor_holm"] == pytest.approx(1 / 110)  # 9 vs 3 runs: 1 / C(12, 3), Holm over 2
    assert claims.at["kv_hits1", "verdict"].startswith("not testable")
    c = pd.read_csv(tmp_path / "markov_entropy_contrasts.csv").set_index(["contrast", "regime"])
    high = c.loc[("high categoriality vs none or low", "f 0.9 r 0.9")]
    assert (high["formed_tested"], high["runs_tested"], high["formed_other"], high["runs_other"]) == (1, 6, 6, 6)
    assert high["p_value"] == pytest.approx(0.0216, abs=2e-3)
    runs = pd.read_csv(tmp_path / "markov_entropy.csv")
    assert not runs.loc[runs["dependency"] == "iid", "formed"].any()
    s = pd.read_csv(tmp_path / "scored_series.csv").groupby("B")["onset"].first()
    assert 2.0 < s[8] / s[32] < 4.5  # planted 4 ** 0.8 = 3.0 on the midpoints
    assert (s.to_numpy() < 20000 * s.index.to_numpy(float) ** -0.8).all()  # the knee precedes the midpoint
    index = (tmp_path / "INDEX.md").read_text()
    for name in only:
        line = next(x for x in index.splitlines() if x.startswith(f"- **{name}** ("))
        assert len(line) > 40 and "data/" in line
    assert "PLANTED" in index


def test_check_compares_missing_text_and_infinities_exactly(tmp_path):
    """A missing text cell and an infinite median (a side where most runs did not cross) compare
    equal to themselves; a changed finite value still differs."""
    a = pd.DataFrame({"what": ["x", None, "y"], "median": [np.inf, 3961.1, np.nan]})
    a.to_csv(tmp_path / "a.csv", index=False)
    a.to_csv(tmp_path / "b.csv", index=False)
    assert make.csv_differences(tmp_path / "a.csv", tmp_path / "b.csv") == []
    a.assign(median=[np.inf, 3962.1, np.nan]).to_csv(tmp_path / "b.csv", index=False)
    assert make.csv_differences(tmp_path / "a.csv", tmp_path / "b.csv") == ["b.csv: column 'median' differs in 1 row(s)"]
