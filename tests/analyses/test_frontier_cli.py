"""analyses/fit_frontier.py: help, the shipped example (--fast), bad input exits non-zero."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "analyses" / "fit_frontier.py"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def test_help():
    r = _run("--help")
    assert r.returncode == 0 and "--table" in r.stdout and "--fast" in r.stdout


def test_fast_on_shipped_example(tmp_path):
    r = _run("--fast", "--out", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "shipped simulated example" in r.stdout and f"wrote {tmp_path}" in r.stdout
    for name in ("frontier.png", "frontier.pdf", "frontier.csv", "cells.csv", "summary.md",
                 "idata.nc", "sensitivity.csv", "glm.csv"):
        assert (tmp_path / name).stat().st_size > 0, name
    fr = pd.read_csv(tmp_path / "frontier.csv")
    assert {"frequency", "reliability_median", "reliability_lo", "reliability_hi"} <= set(fr)
    md = (tmp_path / "summary.md").read_text()
    # one verdict, with the scale it is read on; the other scales as labelled rows (issue 56)
    assert md.count("**Which knob matters more:") == 1 and md.count("(the verdict)") == 1
    assert "per unit log knob scale" in md and "| frontier, per sd of the tested log levels |" in md
    from ihstats import _bayes
    groups = _bayes.groups(_bayes.from_netcdf(tmp_path / "idata.nc"))
    assert {"prior", "posterior_predictive", "observed_data"} <= set(groups)  # az.plot_ppc from the file
    knob = pd.read_csv(tmp_path / "knob.csv")
    assert knob["verdict"].sum() == 1 and knob.loc[knob["verdict"], "scale"].item() == "frontier, per unit log knob"


@pytest.mark.parametrize("edit, message", [
    (lambda t: t[t["frequency"] == 0.5], "frequency: needs at least 2 levels"),
    (lambda t: t.assign(reliability=t["reliability"] + 0.5), "reliability: values must lie in"),
    (lambda t: t.drop(columns="formed"), "missing columns"),
])
def test_bad_table_exits_with_reason(tmp_path, edit, message):
    t = pd.read_csv(ROOT / "data" / "example_frontier.csv")
    path = tmp_path / "bad.csv"
    edit(t).to_csv(path, index=False)
    r = _run("--table", path, "--fast", "--out", tmp_path / "o")
    assert r.returncode == 2 and message in r.stderr


@pytest.mark.slow
def test_grid_reads_two_budgets_and_fits_onsets(tmp_path):
    """--grid on fake logs (a rate law on two transects), its seeds in two grid directories: both
    budgets of each, the onset model, designs, the product model beside it."""
    sys.path.insert(0, str(ROOT / "tests" / "ihstats"))
    from helpers_frontier import write_onset_grid

    write_onset_grid(tmp_path / "g0", seeds=(0,))
    write_onset_grid(tmp_path / "g1", seeds=(1,))
    r = _run("--grid", tmp_path / "g0", tmp_path / "g1", "--fast", "--design-sims", 10, "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "o" / "summary.md").read_text()
    assert md.count("## Two budgets") == 2 and "| 3,000 |" in md and "| 9,000 |" in md
    assert "## Product f r or separate knobs" in md and "Likelihood ratio" in md
    prod = pd.read_csv(tmp_path / "o" / "onset" / "product.csv").set_index("model")
    assert prod.at["separate", "loglik"] >= prod.at["product", "loglik"] and prod.at["product", "e_freq"] < 0
    assert set(pd.read_csv(tmp_path / "o" / "onset" / "local_elasticities.csv")["knob"]) == {"frequency", "reliability"}
    assert len(pd.read_csv(tmp_path / "o" / "onset" / "boundary.csv")) == 2
    assert "## Time to onset" in md and "| e_freq |" in md and "Which knob moves the onset more" in md
    budgets = pd.read_csv(tmp_path / "o" / "budgets.csv")
    assert budgets["formed_long"].sum() > budgets["formed_short"].sum()
    el = pd.read_csv(tmp_path / "o" / "onset" / "elasticities.csv").set_index("term")
    assert el.at["e_freq", "median"] < 0 and el.at["e_rel", "median"] < 0
