"""One Bayesian API (issue 29 item 6): the UPT law and the frontier are specified, built, fitted,
summarised, checked and saved the same way, and a saved fit loads under old and new file names."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

from ihstats import _bayes
from ihstats.frontier.model import FrontierModel
from ihstats.frontier.results import FrontierResults
from ihstats.frontier.spec import FrontierSpec
from ihstats.law.model import UPTLawModel
from ihstats.law.predict import load_posterior
from ihstats.law.results import UPTLawResults
from ihstats.law.spec import UPTLawSpec

warnings.filterwarnings("ignore", message=".*BLAS.*")
DATA = Path(__file__).resolve().parents[2] / "data"
TINY = dict(draws=60, tune=60, chains=1, seed=0)  # the API, not the posterior, is under test


@pytest.fixture(scope="module")
def fits():
    law = UPTLawModel.from_table(pd.read_csv(DATA / "example_emergence.csv"), UPTLawSpec())
    frontier = FrontierModel.from_table(pd.read_csv(DATA / "example_frontier.csv"), FrontierSpec())
    assert isinstance(law, UPTLawModel) and isinstance(frontier, FrontierModel)
    return {"law": law.fit(**TINY), "frontier": frontier.fit(**TINY)}


def test_both_fits_follow_spec_build_fit_results(fits):
    assert isinstance(fits["law"], UPTLawResults) and isinstance(fits["frontier"], FrontierResults)
    for res in fits.values():
        assert isinstance(res.summary(), pd.DataFrame) and len(res.summary()) > 0
        diag = res.diagnostics()
        assert isinstance(diag, list) and all(isinstance(w, str) for w in diag)
        assert any("bulk ESS" in w for w in res.diagnostics(ess_min=1e9))  # the checks really run
        assert res.sampler == {"draws": 60, "tune": 60, "chains": 1, "seed": 0,
                               "target_accept": 0.9}


def test_both_save_the_same_layout(fits, tmp_path):
    saved = {name: res.save(tmp_path / name) for name, res in fits.items()}
    for name, paths in saved.items():
        assert all(isinstance(p, Path) and p.is_file() for p in paths.values()), name
        assert {k: p.name for k, p in paths.items() if k in _bayes.FIT_FILES} == _bayes.FIT_FILES
        record = json.loads(paths["fit"].read_text())
        assert {"model", "spec", "sampler", "timings_s", "diagnostics", "versions"} <= set(record)
        idata, back = _bayes.load_fit(tmp_path / name)
        assert back == record and set(idata.posterior.data_vars) >= {"alpha" if name == "law"
                                                                     else "intercept"}
    assert set(saved["law"]) == {*_bayes.FIT_FILES, "ols"}
    assert set(saved["frontier"]) == {*_bayes.FIT_FILES, "frontier", "sensitivity", "cells", "glm"}


@pytest.mark.parametrize("name, old", [("law", {"idata.nc": "upt_law.nc",
                                                 "fit.json": "upt_law_summary.json"}),
                                        ("frontier", {"fit.json": "spec.json"})])
def test_folders_written_under_the_old_names_still_load(fits, tmp_path, name, old):
    new = fits[name].save(tmp_path / "new")
    folder = tmp_path / "old"
    folder.mkdir()
    for p in new.values():
        shutil.copy(p, folder / old.get(p.name, p.name))
    idata, record = _bayes.load_fit(folder)
    assert record == json.loads(new["fit"].read_text())
    assert (idata.posterior == fits[name].idata.posterior).all()
    if name == "law":  # predict reads a fit's folder, old names included
        assert load_posterior(folder).posterior.attrs["center_logB"] == pytest.approx(
            fits["law"].data.centres["B"])
