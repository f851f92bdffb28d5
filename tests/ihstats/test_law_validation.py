"""Tests of ihstats.law.scoring / ihstats.law.validation: scores on hand-made predictives
(censored runs included), the baselines, and calibration on tables simulated from a known law with
cell and seed scatter (a predictive without the cell term must fail the same check)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ihstats.law.data import prepare
from ihstats.law.model import UPTLawModel
from ihstats.law.report import write_validation_figure
from ihstats.law.scoring import (LAW, OLS_BASELINE, Predictive, fixed_exponent_predictive, ols_predictive,
                                 score_runs)
from ihstats.law.spec import UPTLawError, UPTLawSpec
from ihstats.law.validation import NO_CELL, ValidationSpec, cross_validate, validate_holdout
from ihstats.simulate.law import simulate_emergence_table

warnings.filterwarnings("ignore", message=".*BLAS.*")
LAW_SPEC = UPTLawSpec(cell_effect=True)
TRUTH = dict(log_T=11.0, a=0.5, b=0.5, sigma=0.2, cell_sd=0.4, me_sd=(0.05, 0.1))


# ---- scores on hand-made predictives (no sampling) ---------------------------------------------

def test_censored_and_uncensored_runs_scored_as_stated():
    # one standard-normal component per run: every score has a closed form
    n = 4
    pred = Predictive(np.zeros((1, n)), np.ones((1, n)))
    y = np.array([0.5, 1.0, 1.0, 2.0])
    cens = np.array([False, False, True, True])
    s = score_runs(pred, y, cens, levels=(0.5, 0.9), seed=1)
    z90, z50 = stats.norm.ppf(0.95), stats.norm.ppf(0.75)
    np.testing.assert_allclose(s["hi_90"], z90, atol=1e-6)
    np.testing.assert_allclose(s["lo_50"], -z50, atol=1e-6)
    np.testing.assert_allclose(s["hi_lo_ratio_90"], np.exp(2 * z90), rtol=1e-5)
    # uncensored: density; censored: survival past the last step
    np.testing.assert_allclose(s["lpd"], [stats.norm.logpdf(0.5), stats.norm.logpdf(1.0),
                                          stats.norm.logsf(1.0), stats.norm.logsf(2.0)], rtol=1e-6)
    # a censored run is inside when the interval reaches past its last step (1.645 > 1, < 2)
    assert s["inside_90"].tolist() == [True, True, True, False]
    assert s["inside_50"].tolist() == [True, False, False, False]
    # its PIT lies in [F(last step), 1]; it has no median error
    np.testing.assert_allclose(s["pit"][:2], stats.norm.cdf([0.5, 1.0]))
    assert (s["pit"][2:] >= stats.norm.cdf([1.0, 2.0])).all() and (s["pit"][2:] <= 1).all()
    assert s["abs_err"][2:].isna().all() and s["abs_err"][0] == pytest.approx(0.5, abs=1e-6)


def test_mixture_quantiles_and_density():
    # a two-component t mixture: the quantile inverts the CDF, the density integrates to 1
    pred = Predictive(np.array([[-1.0], [1.0]]), np.array([[0.5], [0.5]]), np.array([[3.0], [3.0]]))
    q = pred.quantile(0.95)
    assert pred.cdf(q)[0] == pytest.approx(0.95, abs=1e-9)
    grid = np.linspace(-40, 40, 40001)
    dens = np.exp([pred.logpdf([g])[0] for g in grid[::100]])
    assert np.trapezoid(dens, grid[::100]) == pytest.approx(1.0, abs=0.02)
    assert pred.quantile(0.5)[0] == pytest.approx(0.0, abs=1e-9)


def test_baselines_on_an_exact_law():
    # no scatter beyond measurement error: OLS finds the line, fixed exponents find log T
    table, _ = simulate_emergence_table(log_T=10.0, a=0.37, b=0.62, sigma=0.05, censor_frac=0.0,
                                        me_sd=(0.01, 0.02), seed=4)
    data = prepare(table, UPTLawSpec())
    ols = ols_predictive(data, data)
    assert np.abs(ols.loc[0] - data.y).max() < 0.2
    assert ols.nu[0, 0] == len(data.y) - 3
    pub = fixed_exponent_predictive(data, data, 0.37, 0.62)
    r = data.y + 0.37 * data.logs["B"] + 0.62 * data.logs["C"]
    assert np.median(pub.loc[:, 0] + 0.37 * data.logs["B"][0] + 0.62 * data.logs["C"][0]) == \
        pytest.approx(r.mean(), abs=0.01)
    assert pub.scale[0, 0] == pytest.approx(r.std(), rel=0.05)


def test_censored_mle_moves_up_when_runs_are_censored():
    # the fixed-exponent baseline must read a censored run as "later than last_step"
    table, _ = simulate_emergence_table(sigma=0.3, censor_frac=0.3, seed=5)
    data = prepare(table, UPTLawSpec())
    kept = prepare(table[~table["censored"]], UPTLawSpec())
    with_c = fixed_exponent_predictive(data, data, 0.37, 0.62).loc.mean()
    without = fixed_exponent_predictive(kept, data, 0.37, 0.62).loc.mean()
    assert with_c > without + 0.05


def test_spec_errors():
    with pytest.raises(UPTLawError, match="levels"):
        ValidationSpec(levels=(0.9, 1.0))
    with pytest.raises(UPTLawError, match="n_pred_draws"):
        ValidationSpec(n_pred_draws=3)
    table, _ = simulate_emergence_table(B_values=(8, 16), C_values=(32,), seed=1)
    with pytest.raises(UPTLawError, match="train_table"):
        validate_holdout(table)


# ---- calibration on simulated laws -----------------------------------------------------------

def _sim(seed, B=(8, 16, 32, 64), C=(16, 32, 64, 128), n_seeds=2, **kw):
    return simulate_emergence_table(**{**TRUTH, **kw}, B_values=B, C_values=C, n_seeds=n_seeds,
                                    censor_frac=0.1, seed=seed)[0]


def test_new_cell_intervals_calibrated_and_cell_term_matters(tmp_path):
    """Fit on 16 cells x 2 seeds, predict 40 new cells x 2 seeds of the same law: the law's 90%
    intervals cover 80-97% of the new runs; without the new-cell term they cover < 80% (cell_sd
    0.4 is twice the seed scatter), so the check can fail."""
    train = _sim(0)
    test = _sim(1, B=(6, 12, 24, 48, 96), C=(12, 24, 48, 96, 192, 20, 40, 80), n_seeds=2)
    res = validate_holdout(test, ValidationSpec(law=LAW_SPEC), train_table=train,
                           fit_kw=dict(draws=300, tune=300, chains=2, seed=1))
    s = res.summary().set_index("model")
    assert 0.80 <= s.loc[LAW, "cover_90"] <= 0.97, s
    assert s.loc[NO_CELL, "cover_90"] < 0.80, s
    assert s.loc[LAW, "mean_lpd"] > s.loc[NO_CELL, "mean_lpd"]
    assert s.loc[LAW, "n_runs"] == len(test) and OLS_BASELINE in s.index
    # the wrong exponents (a = b = 0 when the truth is 0.5 / 0.5) score worse than the law
    assert s.loc["constant updates a = b = 0", "mean_lpd"] < s.loc[LAW, "mean_lpd"] - 0.2
    assert set(res.runs["region"]) == {"interpolation", "extrapolation"}
    paths = res.save(tmp_path / "v")
    assert write_validation_figure(res, tmp_path / "v").exists() and pd.read_csv(paths["summary"]).shape[0] == len(s)
    _check_saved_predictions(paths["idata"], test, s.loc[LAW, "cover_90"])


def _check_saved_predictions(path, test: pd.DataFrame, cover_90: float):
    """issue 56: the saved fit, opened with ArviZ, carries the prior, the posterior predictive and
    the held-out runs' predictions, drawn from the predictive that was scored."""
    from ihstats import _bayes

    idata = _bayes.from_netcdf(path)
    assert {"prior", "posterior_predictive", "predictions", "predictions_constant_data"} <= set(_bayes.groups(idata))
    pred = _bayes.group_dataset(idata, "predictions")["log_upt"]
    const = _bayes.group_dataset(idata, "predictions_constant_data")
    assert pred.dims == ("chain", "draw", "run") and pred.shape == (2, 300, len(test))
    assert list(pred["run"].values) == test["run_id"].astype(str).tolist()
    assert np.allclose(const["B"].values, test["B"]) and np.allclose(const["C"].values, test["C"])
    # the uncensored runs fall inside the draws' 5-95% range about as often as the scored 90% intervals hold
    y, ok = const["observed"].values, ~const["censored"].values.astype(bool)
    lo, hi = np.quantile(pred.values.reshape(-1, len(test)), [0.05, 0.95], axis=0)
    assert abs(((lo <= y) & (y <= hi))[ok].mean() - cover_90) < 0.1


def test_loco_scores_each_run_once_per_model():
    table = _sim(2, B=(8, 32, 128), C=(16, 64), n_seeds=2)
    res = cross_validate(table, ValidationSpec(law=LAW_SPEC, n_pred_draws=200),
                         fit_kw=dict(draws=80, tune=100, chains=1, seed=0), progress=False)
    law = res.runs[res.runs["model"] == LAW]
    assert sorted(law["run_id"]) == sorted(table["run_id"])
    assert (law.groupby("fold")["cell_id"].nunique() == 1).all()
    assert (law["fold"] == law["cell_id"]).all() and res.meta["n_folds"] == 6
    assert (law["region"] == "interpolation").all()


@pytest.mark.slow
def test_loco_coverage_over_repeated_simulations():
    """LOCO 90% coverage pooled over 4 simulated grids (12 cells x 2 seeds each) lies within
    80-97%; the predictive without the cell term falls below 80%."""
    runs = []
    for seed in range(4):
        table = _sim(10 + seed, B=(8, 16, 32, 64), C=(16, 48, 128))
        res = cross_validate(table, ValidationSpec(law=LAW_SPEC),
                             fit_kw=dict(draws=300, tune=300, chains=2, seed=seed), progress=False)
        runs.append(res.runs)
    cover = pd.concat(runs).groupby("model")["inside_90"].mean()
    assert 0.80 <= cover[LAW] <= 0.97, cover
    assert cover[NO_CELL] < 0.80, cover


# ---- ihstats.law.predict reports the validation of its posterior -----------------------------------

def test_predict_prints_the_validated_coverage_and_warns_outside_its_range(tmp_path, capsys):
    import json
    import shutil

    from ihstats.law.predict import REFERENCE_DIR, main as predict_main

    post = tmp_path / "upt_law_simulated.nc"
    shutil.copy(REFERENCE_DIR / "upt_law_simulated.nc", post)
    assert predict_main(["--batch-size", "16", "--context", "64", "--posterior", str(post)]) == 0
    assert "not validated out of sample" in capsys.readouterr().out
    record = {"mode": "loco", "source": "grid X", "range": {"B": [16.0, 64.0], "C": [16.0, 64.0]},
              "law": {"cover_90": 0.875, "cover_50": 0.5, "n_runs": 36, "median_width_90": 10.6}}
    (tmp_path / "upt_law_simulated.validation.json").write_text(json.dumps(record))
    assert predict_main(["--batch-size", "32", "--context", "64", "--posterior", str(post)]) == 0
    out = capsys.readouterr()
    assert "leave-one-cell-out, grid X): the 90% interval held for 88% of 36 runs" in out.out
    assert "hi/lo ratio 10.6x" in out.out  # a record written under the old name still reads
    assert "validated range" not in out.err
    assert predict_main(["--batch-size", "8", "--context", "64", "--posterior", str(post),
                         "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "held for 88%" in doc["validation"]
    assert any("B = 8 lies outside the validated range 16-64" in w for w in doc["warnings"])
    (tmp_path / "upt_law_simulated.validation.json").write_text("{not json")
    assert predict_main(["--batch-size", "32", "--context", "64", "--posterior", str(post)]) == 2
    assert "not a readable validation record" in capsys.readouterr().err


def test_sigma_by_predictive_uses_each_runs_level_and_a_new_level_for_an_unseen_one():
    """With ``sigma_by="C"`` each held-out run is scored with its C level's scatter (0.8 at C 16
    is far wider than 0.1 at C 256), and a C the fit never saw gets a scale drawn from the
    hierarchy: before, every run got the flattened (draws x levels) sigma, a silent wrong scale."""
    from ihstats.law.scoring import law_predictive
    table, _ = simulate_emergence_table(B_values=(4, 8, 16, 32), C_values=(16, 64, 256), n_seeds=3,
                                        sigma_C={16: 0.8, 64: 0.3, 256: 0.1}, censor_frac=0.0,
                                        cell_sd=0.0, seed=5)
    spec = UPTLawSpec(cell_effect=False, sigma_by="C")
    res = UPTLawModel.from_table(table, spec).fit(draws=150, tune=200, chains=1, seed=0)
    pred = law_predictive(res.idata, res.data, n_draws=100, seed=0)
    assert pred.scale.shape == (100, len(table))
    med = pd.Series(np.median(pred.scale, axis=0), index=table["C"].to_numpy()).groupby(level=0).mean()
    assert med[16] > 2 * med[64] > 2 * med[256] > 0

    new = pd.concat([table[table["C"] == 16], table[table["C"] == 64].assign(C=128.0)])  # 128: unseen
    pred_new = law_predictive(res.idata, prepare(new, spec), n_draws=100, seed=0)
    assert np.isfinite(pred_new.scale).all() and pred_new.scale.shape == (100, len(new))

    # held out: a test level with a single run (or none formed) is predicted, not refused (the
    # per-level check applies to the fitted table only)
    one = pd.concat([table[table["C"] == 16], table[table["C"] == 64].iloc[:1].assign(C=128.0)])
    out = validate_holdout(one, ValidationSpec(law=spec, baselines=False), idata=res.idata)
    assert (out.runs["model"] == LAW).sum() == len(one) and np.isfinite(out.runs["lpd"]).all()


def test_loco_with_sigma_by_predicts_a_level_it_empties_as_a_new_level():
    """Leaving out the only cell whose runs formed at one C leaves that level with no uncensored
    run: the fold drops the level's other (censored) runs, predicts the held-out cell with a new
    level's scatter and says so in meta, instead of failing the whole command."""
    table, _ = simulate_emergence_table(B_values=(4, 8), C_values=(16, 64), n_seeds=2,
                                        sigma_C={16: 0.5, 64: 0.1}, censor_frac=0.0, cell_sd=0.0, seed=2)
    table["cell_id"] = "B" + table["B"].astype(str) + "C" + table["C"].astype(str)
    extra = table[table["C"] == 64].copy()
    extra = extra.assign(C=256, cell_id=extra["cell_id"] + "x", run_id=extra["run_id"] + "x")
    lone = extra["B"] == 4                     # C 256: B 4 forms, B 8 is censored
    extra.loc[~lone, "censored"] = True
    extra.loc[~lone, ["onset", "onset_lo", "onset_hi"]] = np.nan
    spec = ValidationSpec(law=UPTLawSpec(cell_effect=False, sigma_by="C"), baselines=False)
    res = cross_validate(pd.concat([table, extra], ignore_index=True), spec,
                         fit_kw=dict(draws=80, tune=100, chains=1, seed=0), progress=False)
    lone_cell = str(extra.loc[lone, "cell_id"].iloc[0])
    assert res.meta["thin_levels"] == {lone_cell: [256]}
    scored = res.runs[(res.runs["fold"] == lone_cell) & (res.runs["model"] == LAW)]
    assert len(scored) == 2 and np.isfinite(scored["lpd"]).all()


def test_loco_skips_a_cell_whose_removal_leaves_one_C_and_says_so():
    """bxc-law's shape: several B at C 64 and one cell at C 128. Leaving that cell out leaves one
    C, so b cannot be refitted: that fold is listed as skipped, with why, and the others scored
    (before: the whole command failed on that fold)."""
    table, _ = simulate_emergence_table(B_values=(4, 8, 16), C_values=(64, 128), n_seeds=2,
                                        censor_frac=0.0, cell_sd=0.0, seed=4)
    table = table[(table["C"] == 64) | (table["B"] == 8)].copy()
    table["cell_id"] = "B" + table["B"].astype(str) + "C" + table["C"].astype(str)
    spec = ValidationSpec(law=UPTLawSpec(cell_effect=False), baselines=False)
    res = cross_validate(table, spec, fit_kw=dict(draws=60, tune=80, chains=1, seed=0), progress=False)
    assert list(res.meta["skipped_folds"]) == ["B8C128"] and "one C" in res.meta["skipped_folds"]["B8C128"]
    assert set(res.runs["fold"]) == {"B4C64", "B8C64", "B16C64"}
