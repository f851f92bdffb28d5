"""The law's crossed seed effect (issue 53): ``UPTLawSpec(seed_effect=True)`` separates the seed
lottery (one offset per training seed, shared by every cell) from the scatter within a cell, and
predictions use a seed's offset where the fit saw that seed."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ihstats.law.data import prepare, seed_key, seed_keys, seed_label, seeds_crossed
from ihstats.law.mixture import CircuitMixtureModel
from ihstats.law.model import UPTLawModel
from ihstats.law.results import predict_from_posterior
from ihstats.law.scoring import law_predictive, score_runs
from ihstats.law.spec import UPTLawError, UPTLawSpec

SEED_SD, CELL_SD, SIGMA = 0.6, 0.25, 0.2
#: The seeds' standard-normal draws, fixed and typical (their sd is 0.92, a draw of 4 from N(0, 1)
#: varies as much), so the test reads recovery, not one lucky or unlucky draw of four.
SEED_Z = np.array([-1.3, 1.2, -0.3, 0.4])
SPEC = UPTLawSpec(cell_effect=True, seed_effect=True, likelihood="normal", measurement_error=False)


def crossed_table(n_seeds: int = 4, seed: int = 3):
    """Runs whose truth is a critical-batch curve (not the power law fitted to it), with a cell
    offset, a crossed seed offset ``SEED_SD * SEED_Z`` and Student-t (nu 5) scatter; returns the
    table and the offsets."""
    rng = np.random.default_rng(seed)
    offsets = SEED_SD * SEED_Z[:n_seeds]
    rows = []
    for B in (8, 16, 32, 64, 128):
        for C in (32, 128):
            cell = CELL_SD * rng.standard_normal()
            for s in range(n_seeds):
                log_upt = (np.log(300) + np.log1p(40 / B) - 0.3 * np.log(C / 64) + cell + offsets[s]
                           + SIGMA * rng.standard_t(5))
                rows.append({"run_id": f"B{B}-C{C}-s{s}", "cell_id": f"B{B}-C{C}", "seed": s, "B": B, "C": C,
                             "onset": np.exp(log_upt), "censored": False, "last_step": 1e7})
    return pd.DataFrame(rows), offsets


@pytest.fixture(scope="module")
def fitted():
    table, offsets = crossed_table()
    res = UPTLawModel.from_table(table, SPEC).fit(draws=300, tune=300, chains=2, seed=1)
    return res, table, offsets


def test_the_fit_recovers_the_seed_scale_and_each_seeds_offset(fitted):
    res, _, offsets = fitted
    s = res.summary()
    assert s.at["seed_sd", "hdi_lo"] < SEED_SD < s.at["seed_sd", "hdi_hi"]
    fitted_offsets = res.idata.posterior["seed_offset"].mean(("chain", "draw")).to_numpy()
    assert np.corrcoef(fitted_offsets, offsets)[0, 1] > 0.95
    # the seed lottery no longer inflates the scatter left within a cell (0.63 [0.51, 0.75] without the term)
    assert s.at["sigma", "hdi_hi"] < 0.4


def test_a_known_seed_is_predicted_narrower_and_shifted_by_its_offset(fitted):
    res, _, offsets = fitted
    slow, fast = str(int(np.argmax(offsets))), str(int(np.argmin(offsets)))
    new = res.predict(32, 64)
    at_slow, at_fast = res.predict(32, 64, run_seed=slow), res.predict(32, 64, run_seed=int(fast))
    width = (new.pred_hi / new.pred_lo).item()
    assert (at_slow.pred_hi / at_slow.pred_lo).item() < 0.75 * width
    assert (at_fast.pred_hi / at_fast.pred_lo).item() < 0.75 * width
    assert at_slow.pred_lo.item() > at_fast.pred_hi.item()  # the slow seed's interval sits above
    unseen = res.predict(32, 64, run_seed=99)  # a seed the fit never saw: a new offset, as None
    assert unseen.pred_hi.item() == pytest.approx(new.pred_hi.item(), rel=1e-9)
    with pytest.raises(UPTLawError, match="run_seed"):
        res.predict([32, 64], 64, run_seed=[0, 1, 2])


def test_held_out_scores_use_the_test_runs_seed(fitted):
    """Runs of the fitted table scored as if held out: with their seeds known the log score is
    higher than with every seed new (the scoring path reads the test table's seed column)."""
    res, table, _ = fitted
    test = prepare(table, UPTLawSpec(measurement_error=False))
    kw = dict(n_draws=400, seed=0)
    known, new = law_predictive(res.idata, test, **kw), law_predictive(res.idata, test, known_seeds=False, **kw)
    lpd_known = score_runs(known, test.y, test.censored)["lpd"]
    lpd_new = score_runs(new, test.y, test.censored)["lpd"]
    assert lpd_known.mean() > lpd_new.mean() + 0.2
    # a test table without a seed column: every seed is new, draw for draw
    blind = law_predictive(res.idata, prepare(table.drop(columns="seed"), UPTLawSpec(measurement_error=False)), **kw)
    assert np.allclose(blind.loc, new.loc)


def test_without_a_seed_effect_there_is_no_seed_to_ask_for(fitted):
    """seed_effect off: no seed index, the model has no seed parameters, and a run_seed for such a
    posterior is refused rather than ignored."""
    res, table, _ = fitted
    off = UPTLawSpec(cell_effect=True, measurement_error=False)
    data = prepare(table, off)
    assert data.seed_idx is None and data.seeds is None
    assert "seed_sd" not in UPTLawModel.from_table(table, off).pymc_model().named_vars
    post = res.idata.posterior
    post = post.to_dataset() if hasattr(post, "to_dataset") else post  # ArviZ 1: a DataTree node
    plain = SimpleNamespace(posterior=post.drop_vars(["seed_sd", "seed_z", "seed_offset"]))
    with pytest.raises(UPTLawError, match="no seed effect"):
        predict_from_posterior(plain, 32, 64, run_seed=0)


def test_seed_errors_name_the_column():
    table, _ = crossed_table(n_seeds=2)
    with pytest.raises(UPTLawError, match="seed: the seed effect needs a seed column"):
        prepare(table.drop(columns="seed"), SPEC)
    with pytest.raises(UPTLawError, match="seed: one seed"):
        prepare(table.assign(seed=7), SPEC)
    blank = table.astype({"seed": object})
    blank.loc[1, "seed"] = None
    with pytest.raises(UPTLawError, match=r"seed: blank in 1 row\(s\) \(run_id \['B8-C32-s1'\]"):
        prepare(blank, SPEC)
    with pytest.raises(UPTLawError, match="no seed_effect"):
        CircuitMixtureModel.from_table(table, SPEC)


def test_seed_labels_and_crossing():
    assert seed_label(2) == seed_label(2.0) == seed_label("2") == seed_label(np.int64(2)) == "2"
    assert seed_label("a") == "a"
    table, _ = crossed_table(n_seeds=3)
    data = prepare(table.assign(seed=table["seed"].map({0: 10, 1: 2, 2: 0}).astype(float)), SPEC)
    assert data.seeds == ["0", "2", "10"]  # numeric order, not text order
    assert seeds_crossed(table)
    assert not seeds_crossed(table.drop(columns="seed"))
    assert not seeds_crossed(table.assign(seed=0))
    # each cell its own seeds (seed = the run's index): nothing shared across cells
    assert not seeds_crossed(table.assign(seed=np.arange(len(table))))


def test_seed_within_a_column_gives_each_seed_one_offset_per_level():
    """``seed_within="C"``: a seed's runs share an offset only at one C (a GPT's initial weights
    change with C through its position embedding); keys name both, and a planned run finds its
    offset only at a C the fit saw."""
    table, _ = crossed_table(n_seeds=2)
    data = prepare(table, UPTLawSpec(seed_effect=True, seed_within="C", measurement_error=False))
    assert data.seeds == ["0|C=128", "0|C=32", "1|C=128", "1|C=32"]
    assert seed_key(1.0, "C", 32.0) == "1|C=32" and seed_key(np.nan, "C", 32) is None
    assert seed_keys(table.drop(columns="C").head(2), "C") == [None, None]
    with pytest.raises(UPTLawError, match="seed_within: a column name"):
        UPTLawSpec(seed_within="C")  # without the seed effect it would be ignored
    with pytest.raises(UPTLawError, match="N: the seed effect within N needs a N column"):
        prepare(table, UPTLawSpec(seed_effect=True, seed_within="N", measurement_error=False))


def test_the_clis_take_the_seed_flags(fitted, tmp_path, capsys):
    """--seed-effect / --seed-within reach the spec of validate_law.py; predict's --run-seed reads a
    saved fit's seed offsets and names the seed it used."""
    import importlib.util
    from pathlib import Path

    from ihstats.law.predict import main as predict_main

    path = Path(__file__).resolve().parents[2] / "analyses" / "validate_law.py"
    spec = importlib.util.spec_from_file_location("validate_law_cli", path)
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    res, table, offsets = fitted
    base = ["--fit", "a.csv", "--test", "b.csv"]
    assert not cli._spec(cli.parse_args(base), table).law.seed_effect  # off by default
    assert cli._spec(cli.parse_args(base + ["--seed-effect", "auto"]), table).law.seed_effect
    on = cli._spec(cli.parse_args(base + ["--seed-effect", "on", "--seed-within", "C"]), table).law
    assert on.seed_effect and on.seed_within == "C"
    res.save(tmp_path / "fit")
    slow = str(int(np.argmax(offsets)))
    assert predict_main(["--batch-size", "32", "--context", "64", "--posterior", str(tmp_path / "fit"),
                         "--run-seed", slow]) == 0
    assert f"seed {slow}'s fitted offset" in capsys.readouterr().out
    assert predict_main(["--batch-size", "32", "--context", "64", "--posterior", str(tmp_path / "fit"),
                         "--run-seed", "99"]) == 0
    assert "a new seed's offset (seed 99 was not in the fit)" in capsys.readouterr().out


def test_holdout_validation_scores_known_seeds_and_every_seed_new(fitted):
    """validate_holdout from a saved seed-effect posterior: the held-out runs (new cells, seen
    seeds) are scored with their seeds' offsets and again with every seed new, which scores worse."""
    from ihstats.law.validation import NEW_SEED, ValidationSpec, validate_holdout
    from ihstats.law.scoring import LAW

    res, _, _ = fitted
    test, _ = crossed_table(seed=11)  # the same seeds' offsets, new cells
    test["run_id"] = "new-" + test["run_id"]
    law = UPTLawSpec(cell_effect=True, seed_effect=True, seed_within="C", measurement_error=False)
    val = validate_holdout(test, ValidationSpec(law=law, baselines=False, n_pred_draws=200), idata=res.idata)
    s = val.summary().set_index("model")
    # 0.24-0.35 nats per run on the two CI stacks; without the offsets the two rows would tie
    assert s.at[LAW, "mean_lpd"] > s.at[NEW_SEED, "mean_lpd"] + 0.1
    assert s.at[LAW, "median_hi_lo_ratio_90"] < s.at[NEW_SEED, "median_hi_lo_ratio_90"]
