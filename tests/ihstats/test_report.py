"""Tests of ihstats.law.report: files, contents, and that sampler warnings are shown."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ihstats.law.model import UPTLawModel
from ihstats.law.report import write_upt_report
from ihstats.law.spec import UPTLawSpec
from ihstats.simulate.law import example_table

warnings.filterwarnings("ignore", message=".*BLAS.*")
FIGS = ["trace", "rank", "posterior_ab", "obs_vs_pred", "ppc"]


@pytest.fixture(scope="module")
def short_fit():
    # Deliberately too short (1 chain x 60 draws): the ESS check must fire and be reported.
    table, _ = example_table()
    return UPTLawModel.from_table(table, UPTLawSpec(hdi_prob=0.8)).fit(draws=60, tune=100, chains=1, seed=2)


def test_report_files_and_contents(short_fit, tmp_path):
    cmp = pd.DataFrame({"rank": [0, 1], "elpd_loo": [-1.0, -2.5]}, index=["without_N", "with_N"])
    paths = write_upt_report(short_fit, tmp_path, compare=cmp, source="unit test")
    for name in FIGS:
        for ext in ("png", "pdf"):
            f = tmp_path / "figures" / f"{name}.{ext}"
            assert f.is_file() and f.stat().st_size > 1000, f
    md = (tmp_path / "report.md").read_text()
    html = (tmp_path / "report.html").read_text()
    # the sampler warnings are in both reports, never silent
    diag = short_fit.diagnostics()
    assert any("bulk ESS" in w for w in diag)
    for w in diag:
        assert w in md
    assert "bulk ESS" in html and "class=\"warn\"" in html
    # summary at the requested width, published references, OLS, LOO, comparison, versions
    assert "Posterior summary (80% HDI)" in md
    for needle in ("| a |", "| b |", "| T |", "0.370", "0.620", "OLS", "elpd_loo", "with_N",
                   "pymc ", "arviz ", "unit test", "Normal(0.5, 0.5)"):
        assert needle in md, needle
    for k in FIGS:
        assert f"figures/{k}.png" in md and f"figures/{k}.png" in html
    assert paths["markdown"].endswith("report.md")
    # tidy data behind the observed-vs-predicted figure
    f = pd.read_csv(tmp_path / "figures" / "obs_vs_pred.csv")
    assert len(f) == 30 and f.censored.sum() == short_fit.data.censored.sum()
    cen = f[f.censored]
    np.testing.assert_allclose(cen.observed, short_fit.data.table.last_step[f.censored.values])
    assert (f.pred_lo <= f.predicted).all() and (f.predicted <= f.pred_hi).all()


def test_report_without_comparison_says_why(short_fit, tmp_path):
    write_upt_report(short_fit, tmp_path, compare_note="Not identifiable: single N.")
    assert "Not identifiable: single N." in (tmp_path / "report.md").read_text()


def test_report_counts_circuits_per_cell(tmp_path):
    """A table with a circuit column (every grid's summary has one) gets its circuits-per-cell
    table: (B, C) as two columns (the MultiIndex used to crash the report after sampling)."""
    table, _ = example_table()
    table["circuit"] = np.where(table["C"] == table["C"].min(), "no-prev-token", "prev-token")
    res = UPTLawModel.from_table(table, UPTLawSpec()).fit(draws=40, tune=60, chains=1, seed=0)
    write_upt_report(res, tmp_path, source="unit test")
    md = (tmp_path / "report.md").read_text()
    assert "## Circuits per cell" in md and "| B | C | N | prev-token | no-prev-token | none |" in md
