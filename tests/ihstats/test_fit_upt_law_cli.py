"""End-to-end tests of analyses/fit_upt_law.py and python -m ihstats.law.predict."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "analyses" / "fit_upt_law.py"
EXAMPLE = ROOT / "data" / "example_emergence.csv"


def run(args, cwd=ROOT, timeout=300):
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def fast_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("upt")
    t0 = time.perf_counter()
    p = run([SCRIPT, "--emergence", EXAMPLE, "--fast", "--out", out])
    return out, p, time.perf_counter() - t0


def test_fast_run_writes_report_netcdf_figures(fast_out):
    out, p, wall = fast_out
    assert p.returncode == 0, p.stderr[-2000:]
    print(f"fit_upt_law.py --fast wall time: {wall:.1f} s")
    for f in ("report.md", "report.html", "idata.nc", "summary.csv", "fit.json", "ols.csv",
              "emergence.csv"):
        assert (out / f).is_file(), f
    for name in ("trace", "rank", "posterior_ab", "obs_vs_pred", "ppc", "ppc_runs"):
        assert (out / "figures" / f"{name}.png").is_file()
        assert (out / "figures" / f"{name}.pdf").is_file()
    doc = json.loads((out / "fit.json").read_text())
    summ = pd.read_csv(out / "summary.csv").set_index("param").to_dict(orient="index")
    assert doc["sampler"] == {"draws": 300, "tune": 300, "chains": 2, "seed": 0,
                              "target_accept": 0.9}
    # the example was simulated with a = 0.37, b = 0.62: the 90% HDIs cover them
    assert summ["a"]["hdi_lo"] < 0.37 < summ["a"]["hdi_hi"]
    assert summ["b"]["hdi_lo"] < 0.62 < summ["b"]["hdi_hi"]
    assert doc["r_obs_pred"] > 0.9 and doc["n_censored"] == 5
    assert set(pd.read_csv(out / "ols.csv")["param"]) >= {"a", "b", "log_T"}
    assert "OLS (uncensored)" in p.stdout and "wrote" in p.stdout
    assert "Skipped in --fast" in (out / "report.md").read_text()


def test_predict_cli_with_saved_and_reference_posterior(fast_out):
    out = fast_out[0]
    p = run(["-m", "ihstats.law.predict", "--batch-size", 64, "--context", 256, "--posterior",
             out, "--json"])  # the fit's folder: predict finds idata.nc in it
    assert p.returncode == 0, p.stderr[-2000:]
    row = json.loads(p.stdout)
    truth = np.exp(13.26 - 0.37 * np.log(64) - 0.62 * np.log(256))  # ~3.95e3 updates
    assert 0.8 < row["upt"] / truth < 1.25
    assert row["upt_lo"] < row["upt"] < row["upt_hi"]
    p = run(["-m", "ihstats.law.predict", "--batch-size", 64, "--context", 256])
    assert p.returncode == 0, p.stderr[-2000:]
    assert "SIMULATED" not in p.stdout and "bxc-cpu-h200-bf16" in p.stdout


def test_predict_default_is_the_fit_to_real_runs(capsys):
    """The shipped default is the H200 natural-text fit (a ~ 0.63), not the simulated 0.37."""
    from ihstats.law.predict import REFERENCE_FILE, load_posterior, main as predict_main

    post = load_posterior().posterior
    assert int(post.attrs["simulated"]) == 0 and "bxc-cpu-h200-bf16" in post.attrs["source"]
    assert 0.5 < float(post["a"].mean()) < 0.8 and 0.1 < float(post["b"].mean()) < 0.4
    assert predict_main(["--batch-size", "32", "--context", "256", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    law = np.exp(post["log_T"] - post["a"] * np.log(32) - post["b"] * np.log(256))
    assert row["upt_lo"] < float(np.median(law)) < row["upt_hi"]  # within the fit's own range
    assert REFERENCE_FILE.name in row["posterior"]


def test_predict_published_law(capsys):
    from ihstats.law.predict import main as predict_main

    assert predict_main(["--batch-size", "64", "--context", "256", "--law", "published",
                         "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["upt"] == pytest.approx(np.exp(13.26 - 0.37 * np.log(64) - 0.62 * np.log(256)))
    assert row["upt_lo"] is None and "13.26" in row["posterior"]
    assert predict_main(["--batch-size", "64", "--context", "256", "--law", "published",
                         "--posterior", "x.nc"]) == 2
    with pytest.raises(SystemExit) as e:  # the fitted law's range checks, before either law is used
        predict_main(["--batch-size", "0", "--context", "256", "--law", "published"])
    assert e.value.code == 2 and "--batch-size: must be a finite number >= 1" in capsys.readouterr().err


@pytest.mark.parametrize("args, msg", [
    (["--emergence", "/nonexistent.csv"], "--emergence: file not found"),
    (["--runs", "/nonexistent_dir"], "--runs: directory not found"),
    ([], "run `python -m ihtrain.grid` first or pass --emergence"),
])
def test_missing_inputs_one_line_errors(tmp_path, args, msg):
    p = run([SCRIPT, *args], cwd=tmp_path)  # cwd without runs/bxc-text
    assert p.returncode != 0
    assert msg in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_bad_table_one_line_error(tmp_path):
    t = pd.read_csv(EXAMPLE).assign(C=64)
    t.to_csv(tmp_path / "bad.csv", index=False)
    p = run([SCRIPT, "--emergence", tmp_path / "bad.csv", "--out", tmp_path / "o"])
    assert p.returncode == 2
    last = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert last == [f"error: {tmp_path / 'bad.csv'}: C: only one distinct value (64); "
                    "the exponent b is not identifiable: "
                    "the table needs runs at two or more values of C"]


def test_help():
    p = run([SCRIPT, "--help"])
    assert p.returncode == 0 and "--emergence" in p.stdout and "--fast" in p.stdout


def test_report_shows_what_the_answer_depends_on(fast_out, tmp_path):
    """Issue 27 item 3: the --fast report warns of few draws and names the influential runs; with
    --sensitivity on, the other likelihood and the centred prior come as rows with a and b."""
    out, p, _ = fast_out
    report = (out / "report.md").read_text()
    assert "Intervals come from few draws" in report
    influence = pd.read_csv(out / "influence.csv")
    assert len(influence) == 30 and influence["pareto_k"].is_monotonic_decreasing
    assert influence["std_residual"].isna().sum() == 5  # the censored runs
    assert "P(a in 0.37 +- 0.05) [aoyama]" in report and "P(b in 0.5 +- 0.05) [tokens]" in report

    sens_out = tmp_path / "sens"
    q = run([SCRIPT, "--emergence", EXAMPLE, "--fast", "--sensitivity", "on", "--draws", "200",
             "--tune", "200", "--out", sens_out])
    assert q.returncode == 0, q.stderr[-2000:]
    sens = pd.read_csv(sens_out / "sensitivity.csv").set_index("variant")
    assert list(sens.index) == ["base", "normal likelihood", "prior centred on published"]
    assert sens.at["normal likelihood", "likelihood"] == "normal"
    # the simulated example follows the published law: every variant covers a = 0.37
    assert ((sens["a_lo"] < 0.37) & (0.37 < sens["a_hi"])).all()
    assert "What the answer depends on" in (sens_out / "report.md").read_text()
    assert "what the answer depends on" in q.stdout


def test_idata_nc_carries_prior_and_both_predictive_groups(fast_out):
    """issue 56: az.plot_ppc and prior-predictive checks run from the saved file alone."""
    from ihstats import _bayes
    from ihstats.figures.posterior import plot_ppc

    out, _, _ = fast_out
    idata = _bayes.from_netcdf(out / "idata.nc")
    assert {"prior", "prior_predictive", "posterior_predictive", "observed_data"} <= set(_bayes.groups(idata))
    pp = _bayes.group_dataset(idata, "posterior_predictive")["log_upt"]
    prior = _bayes.group_dataset(idata, "prior")
    assert pp.shape == (2, 300, 30) and {"a", "b", "alpha"} <= set(prior.data_vars)
    # censored runs are replicated as the likelihood sees them: never past their last step
    obs = _bayes.group_dataset(idata, "observed_data")["log_upt"].values
    cens = pd.read_csv(out / "emergence.csv")["censored"].to_numpy(bool)
    assert (pp.values[..., cens] <= obs[cens] + 1e-9).all()
    # the prior is wider than the posterior: the data moved it
    assert prior["a"].std() > 2 * _bayes.group_dataset(idata, "posterior")["a"].std()
    assert plot_ppc(idata, "log_upt", num_samples=20).axes  # ArviZ's own PPC draws from the file


def test_idata_nc_constant_data_splits_censored_from_observed_runs(fast_out):
    """issue 68: the saved fit carries each run's raw B, C, onset, last step, censored flag and id,
    so a user of idata.nc alone can tell the censored runs from the observed ones."""
    from ihstats import _bayes
    from ihstats.figures.posterior import plot_ppc

    out, _, _ = fast_out
    idata = _bayes.from_netcdf(out / "idata.nc")
    const = _bayes.group_dataset(idata, "constant_data")
    table = pd.read_csv(out / "emergence.csv")
    assert list(const["run_id"].values) == table["run_id"].astype(str).tolist()
    assert (const["censored"].values == table["censored"].to_numpy(bool)).all() and const["censored"].values.any()
    for col in ("B", "C", "last_step", "onset"):  # the CSV holds 6 significant digits (ihstats.base.display)
        np.testing.assert_allclose(const[col].values, table[col], rtol=1e-5)
    assert {"x_B", "x_C"} <= set(const.data_vars)  # PyMC's centred predictors are kept beside them
    obs = _bayes.group_dataset(idata, "observed_data")["log_upt"].values
    cens = const["censored"].values
    np.testing.assert_allclose(obs[cens], np.log(const["last_step"].values[cens]))  # censored: at their last step
    np.testing.assert_allclose(obs[~cens], np.log(const["onset"].values[~cens]))
    # the PPC figure marks both kinds and keeps its x axis at the data's range
    ax = plot_ppc(idata, "log_upt", num_samples=20).axes[0]
    labels = [l.get_label() for l in ax.get_lines()]
    assert "formed: onset" in labels and "not formed: its last step (censored)" in labels
    lo, hi = ax.get_xlim()
    assert lo >= obs.min() - 0.25 * np.ptp(obs) - 0.5 - 1e-9 and hi <= obs.max() + 0.25 * np.ptp(obs) + 0.5 + 1e-9


def test_ppc_runs_are_labelled_by_their_factors(fast_out):
    out, _, _ = fast_out
    labels = pd.read_csv(out / "figures" / "ppc_runs.csv")["label"]
    assert labels.str.match(r"^B \d+ x C \d+").all()


def test_ppc_figure_is_clipped_to_the_data(fast_out):
    """The PPC draws quantile bands per run; heavy-tailed predictive draws cannot stretch its axis."""
    from ihstats.figures.law import plot_ppc_bands

    out, _, _ = fast_out
    ppc = pd.read_csv(out / "figures" / "ppc_runs.csv")
    assert len(ppc) == 30 and (ppc["q_lo"] <= ppc["q50"]).all() and (ppc["q50"] <= ppc["q_hi"]).all()
    wild = ppc.assign(q_lo=ppc["q_lo"] - 1e6, q_hi=ppc["q_hi"] + 1e6)  # a Student-t with nu near 1
    lo, hi = wild["observed"].min(), wild["observed"].max()
    ylo, yhi = plot_ppc_bands(wild).axes[0].get_ylim()
    assert lo - 0.5 * (hi - lo) - 1 <= ylo < lo and hi < yhi <= hi + 0.5 * (hi - lo) + 1
