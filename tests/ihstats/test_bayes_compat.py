"""Issue 44: one Bayesian layer on two stacks (PyMC 5 / ArviZ 0.2x on Python 3.11, PyMC 6 /
ArviZ 1 on >= 3.12). Posterior files written by either stack load in the other; the wrappers
give the same shapes and names on both. Run on both stacks (.ci/run), each file below is read by
its own stack and by the other one."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from ihstats import _bayes
from ihstats.base import _bayes_compat
from ihstats.law.predict import REFERENCE_FILE, load_posterior, main
from ihstats.law.results import predict_from_posterior
from ihstats.law.spec import UPTLawError

warnings.filterwarnings("ignore", message=".*BLAS.*")
HERE = Path(__file__).parent
#: written by ArviZ 0.23 (the shipped reference) and by ArviZ 1.3 / PyMC 6.4 (a tiny thinned fit
#: of data/example_emergence.csv, tests/ihstats/data/upt_law_arviz1.nc)
WRITTEN_BY = {"arviz 0.23": REFERENCE_FILE, "arviz 1.3": HERE / "data" / "upt_law_arviz1.nc"}


def test_stack_follows_the_interpreter():
    import sys

    import arviz
    import pymc

    major = 6 if sys.version_info >= (3, 12) else 5
    assert int(pymc.__version__.split(".")[0]) == major
    assert _bayes_compat.ARVIZ_1 == (int(arviz.__version__.split(".")[0]) >= 1) == (major == 6)
    assert _bayes.versions()["pymc"] == pymc.__version__


@pytest.mark.parametrize("writer", list(WRITTEN_BY))
def test_posterior_files_load_on_either_stack(writer, tmp_path):
    idata = load_posterior(WRITTEN_BY[writer])
    assert "posterior" in _bayes.groups(idata)
    draws = _bayes.posterior_draws(idata, "a")
    assert draws.size >= 40 and np.isfinite(draws).all()
    p = predict_from_posterior(idata, [64.0], [256.0])
    assert p["upt_lo"].item() < p["upt"].item() < p["upt_hi"].item()
    # written again by this stack, read back: the same draws and attributes
    back = _bayes.from_netcdf(_bayes.to_netcdf(idata, tmp_path / "again.nc"))
    np.testing.assert_array_equal(_bayes.posterior_draws(back, "a"), draws)
    assert back.posterior.attrs["center_logB"] == idata.posterior.attrs["center_logB"]


def test_predict_cli_reads_either_file(capsys):
    for path in WRITTEN_BY.values():
        assert main(["--batch-size", "64", "--context", "256", "--posterior", str(path),
                     "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["upt_lo"] < out["upt"] < out["upt_hi"]


def test_file_without_a_posterior_is_a_clear_error(tmp_path):
    bad = tmp_path / "plain.nc"
    xr.Dataset({"x": ("i", np.arange(3.0))}).to_netcdf(bad)
    with pytest.raises(_bayes_compat.PosteriorFileError, match="plain.nc: no 'posterior' group"):
        _bayes.from_netcdf(bad)
    with pytest.raises(UPTLawError, match="not a readable netCDF posterior"):
        load_posterior(bad)


def posterior(seed=0, chains=2, draws=200):
    rng = np.random.default_rng(seed)
    ds = xr.Dataset({"a": (("chain", "draw"), rng.normal(1.0, 0.5, (chains, draws)))},
                    coords={"chain": np.arange(chains), "draw": np.arange(draws)})
    ds.attrs["center_logB"] = 3.0
    return _bayes_compat.new_idata(posterior=ds)


def test_wrappers_same_names_on_both_stacks():
    idata = posterior()
    s = _bayes.summary(idata, ["a"], hdi_prob=0.9)
    assert list(s.columns) == _bayes_compat.SUMMARY_COLUMNS and list(s.index) == ["a"]
    x = _bayes.posterior_draws(idata, "a")
    lo, hi = _bayes.hdi(x, hdi_prob=0.9)
    assert s.at["a", "hdi_lo"] == pytest.approx(lo) and s.at["a", "hdi_hi"] == pytest.approx(hi)
    assert np.mean((x >= lo) & (x <= hi)) == pytest.approx(0.9, abs=0.01)
    assert s.at["a", "mean"] == pytest.approx(x.mean())
    # a group added from outside PyMC replaces one of the same name
    _bayes.add_group(idata, "log_likelihood", {"y": (("chain", "draw", "obs"), np.zeros((2, 200, 3)))},
                     coords={"obs": np.arange(3)})
    _bayes.add_group(idata, "log_likelihood", {"y": (("chain", "draw", "obs"), np.ones((2, 200, 3)))},
                     coords={"obs": np.arange(3)})
    assert set(_bayes.groups(idata)) == {"posterior", "log_likelihood"}
    assert float(idata.log_likelihood["y"].values.mean()) == 1.0
    thin = _bayes.thin_posterior(idata, 50)
    assert dict(thin.posterior.sizes) == {"chain": 1, "draw": 50}
    assert thin.posterior.attrs["center_logB"] == 3.0 and _bayes.groups(thin) == ["posterior"]


def test_loo_and_compare_columns():
    fits = {}
    for name, shift in (("good", 0.0), ("bad", 2.0)):
        idata = posterior(seed=1)
        rng = np.random.default_rng(2)
        ll = -0.5 * (rng.normal(0, 1, (2, 200, 20)) + shift) ** 2
        _bayes.add_group(idata, "log_likelihood", {"y": (("chain", "draw", "obs"), ll)},
                         coords={"obs": np.arange(20)})
        _bayes.add_group(idata, "observed_data", {"y": ("obs", np.zeros(20))},
                         coords={"obs": np.arange(20)}, sample_dims=False)
        fits[name] = idata
    t = _bayes.loo_table(_bayes.loo(fits["good"], var_name="y"))
    assert list(t.columns) == ["elpd_loo", "se", "p_loo", "n_obs", "pareto_k_gt_0.7"]
    assert t["n_obs"].item() == 20 and np.isfinite(t["elpd_loo"].item())
    cmp = _bayes.compare(fits, var_name="y")
    assert {"rank", "elpd_loo", "p_loo", "elpd_diff", "weight", "se", "dse"} <= set(cmp.columns)
    assert list(cmp.index) == ["good", "bad"] and isinstance(cmp, pd.DataFrame)


def test_diagnostic_plots_return_one_figure():
    from ihstats.figures.posterior import plot_posterior, plot_rank, plot_trace

    idata = posterior()
    assert plot_rank(posterior(chains=1), ["a"]).axes  # ArviZ 1's default needs 2 chains
    for fig in (plot_trace(idata, ["a"]), plot_rank(idata, ["a"]),
                plot_posterior(idata, ["a"], hdi_prob=0.9, ref_val={"a": 1.0}, extra_ref=(0.5, "x"))):
        assert len(fig.axes) >= 1 and fig.axes[0].has_data()
