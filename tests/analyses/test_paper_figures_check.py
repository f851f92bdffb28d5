"""make.py --check (issue 44): sampler tables are compared within a Monte Carlo tolerance from
the recorded MCSE, deterministic columns exactly, diagnostics against thresholds. A resampled
posterior (another seed) passes; a changed input table or a changed model fails."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ihstats.law.spec import UPTLawSpec
from paper_figures import builders, check, versions

warnings.filterwarnings("ignore", message=".*BLAS.*")
EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example_emergence.csv"
TINY = dict(draws=200, tune=200, chains=2, n_resamples=99, n_boot=50)
LIMITS = dict(rhat_max=1.05, ess_min=100)  # thresholds for a tiny fit


def law_figure(folder: Path, table: Path, seed: int, monkeypatch, **spec) -> Path:
    """The upt_law figure's CSVs (the builder make.py runs, tiny sampling) in ``folder``."""
    monkeypatch.setitem(builders.BUDGET, False, TINY)
    monkeypatch.setattr(builders, "UPTLawSpec", functools.partial(UPTLawSpec, **spec))
    data = builders.analysis_upt_law(builders.Inputs(emergence=table, seed=seed))
    folder.mkdir(parents=True)
    for name, frame in {"upt_law": data.frame, **{f"upt_law_{k}": v for k, v in data.extra.items()}}.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
    return folder


def differences(new: Path, old: Path) -> list[str]:
    return [d for p in sorted(old.glob("*.csv"))
            for d in check.csv_differences(new / p.name, p, **LIMITS)]


@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    try:
        yield law_figure(tmp_path_factory.mktemp("law") / "seed0", EXAMPLE, 0, mp)
    finally:
        mp.undo()


def test_resampled_posterior_with_another_seed_passes(committed, tmp_path, monkeypatch):
    new = law_figure(tmp_path / "seed1", EXAMPLE, 1, monkeypatch)
    a, b = (pd.read_csv(d / "upt_law_params.csv") for d in (new, committed))
    assert not np.allclose(a["mean"], b["mean"])  # really another posterior sample
    assert differences(new, committed) == []


def test_changed_input_table_fails(committed, tmp_path, monkeypatch):
    t = pd.read_csv(EXAMPLE)
    big = t["B"] >= t["B"].median()  # the law's slope in B steepens
    for col in ("onset", "onset_lo", "onset_hi"):
        t.loc[big, col] = t.loc[big, col] / 3
    t.to_csv(tmp_path / "changed.csv", index=False)
    diff = differences(law_figure(tmp_path / "changed", tmp_path / "changed.csv", 0, monkeypatch),
                       committed)
    assert any(d.startswith("upt_law.csv: column 'observed'") for d in diff), diff
    assert any(d.startswith("upt_law_params.csv: column 'mean' differs beyond Monte Carlo")
               for d in diff), diff


def test_changed_model_fails(committed, tmp_path, monkeypatch):
    normal = law_figure(tmp_path / "normal", EXAMPLE, 0, monkeypatch, likelihood="normal")
    assert any(d.startswith("upt_law_params.csv: shape") for d in differences(normal, committed))
    # the same parameters, but a prior that pins the B slope near 0: the posterior moves
    pinned = law_figure(tmp_path / "prior", EXAMPLE, 0, monkeypatch, priors={"a": (0.0, 0.02)})
    diff = differences(pinned, committed)
    assert any("column 'mean' differs beyond Monte Carlo tolerance" in d for d in diff), diff
    assert any(d.startswith("upt_law_law.csv: column 'upt") for d in diff), diff


def params(mean=(0.5, 2.0), mcse=(0.01, 0.02), r_hat=(1.0, 1.0), ess=(800.0, 900.0)):
    lo, hi = np.array(mean) - 1, np.array(mean) + 1
    return pd.DataFrame({"param": ["a", "b"], "mean": mean, "sd": [0.6, 0.6], "hdi_lo": lo,
                         "hdi_hi": hi, "r_hat": r_hat, "ess_bulk": ess, "ess_tail": ess,
                         "mcse_mean": mcse})


def compare(new: pd.DataFrame, old: pd.DataFrame, tmp_path: Path, name="upt_law_params.csv"):
    for sub, frame in (("new", new), ("old", old)):
        (tmp_path / sub).mkdir(exist_ok=True)
        frame.to_csv(tmp_path / sub / name, index=False)
    return check.csv_differences(tmp_path / "new" / name, tmp_path / "old" / name, **LIMITS)


def test_tolerance_follows_the_recorded_mcse(tmp_path):
    old = params()
    # 4 MCSE of the difference: 4 * hypot(0.01, 0.01) = 0.057 (+ 0.1% of 0.5) for a
    assert compare(params(mean=(0.55, 2.0)), old, tmp_path) == []
    bad = compare(params(mean=(0.57, 2.0)), old, tmp_path)
    assert len(bad) == 1 and "column 'mean'" in bad[0] and "first: a" in bad[0]
    # a larger recorded MCSE widens the tolerance
    assert compare(params(mean=(0.57, 2.0), mcse=(0.02, 0.02)), params(mcse=(0.02, 0.02)),
                   tmp_path) == []


def test_diagnostics_against_thresholds_not_values(tmp_path):
    assert compare(params(ess=(150.0, 5000.0)), params(), tmp_path) == []  # other values, above
    bad = compare(params(r_hat=(1.2, 1.0), ess=(50.0, 900.0)), params(), tmp_path)
    assert sorted(b.split(" of ")[0] for b in bad) == ["upt_law_params.csv: ess_bulk",
                                                      "upt_law_params.csv: ess_tail",
                                                      "upt_law_params.csv: r_hat"]
    assert all("of a is" in b for b in bad)


def test_deterministic_tables_exact_and_nan_at_a_level(tmp_path):
    old = pd.DataFrame({"run_id": ["x", "y"], "onset": [100.0, 200.0]})
    assert compare(old.assign(onset=[100.0, 200.0 * (1 + 1e-12)]), old, tmp_path, "e.csv") == []
    assert compare(old.assign(onset=[100.0, 200.1]), old, tmp_path, "e.csv") == [
        "e.csv: column 'onset' differs in 1 row(s)"]
    # frontier: a median defined on one side only passes where a fraction sits near 0.5
    (tmp_path / "old").mkdir(exist_ok=True)
    (tmp_path / "new").mkdir(exist_ok=True)
    for d in ("old", "new"):
        params().to_csv(tmp_path / d / "frontier_params.csv", index=False)
    f = pd.DataFrame({"frequency": [0.1, 0.2], "log_reliability_median": [-1.0, -0.5],
                      "log_reliability_lo": [-1.5, -1.0], "log_reliability_hi": [-0.5, 0.0],
                      "frac_no_crossing": [0.1, 0.49], "hdi_prob": 0.9})
    flip = f.assign(log_reliability_median=[-1.0, np.nan])
    assert compare(flip, f, tmp_path, "frontier.csv") == []
    far = f.assign(log_reliability_median=[np.nan, -0.5])
    assert "frontier.csv: column 'log_reliability_median'" in compare(far, f, tmp_path,
                                                                      "frontier.csv")[0]


def test_constraints_record_and_version_note(tmp_path):
    path = versions.write_constraints(tmp_path)
    pins = versions.read_constraints(path)
    assert pins == {k.lower(): v for k, v in versions.running().items()}
    assert versions.version_note(tmp_path) is None
    now = versions.running()
    versions.write_constraints(tmp_path, {**now, "pymc": "0.0.1"})
    note = versions.version_note(tmp_path)
    assert note and f"pymc 0.0.1 -> {now['pymc']}" in note
    assert "missing" in versions.version_note(tmp_path / "nowhere")


def test_bootstrap_interval_ends_within_their_monte_carlo_error(tmp_path):
    """ablation_tests.csv: percentile-bootstrap interval ends move with the last bits of the
    bootstrap means (an ill-conditioned ratio: 25.0 -> 22.6 from numpy 2.4 to 2.5); the point
    estimates stay exact."""
    old = pd.DataFrame({"condition": ["a"], "ratio": [-3.0], "ratio_lo": [-18.75],
                        "ratio_hi": [25.0]})
    # 4 * sqrt(2) * 43.75 / sqrt(2000) = 5.5: the bootstrap's own Monte Carlo error
    assert compare(old.assign(ratio_hi=22.56), old, tmp_path, "ablation_tests.csv") == []
    assert compare(old.assign(ratio_hi=15.0), old, tmp_path, "ablation_tests.csv")
    assert compare(old.assign(ratio=-2.9), old, tmp_path, "ablation_tests.csv") == [
        "ablation_tests.csv: column 'ratio' differs in 1 row(s)"]
