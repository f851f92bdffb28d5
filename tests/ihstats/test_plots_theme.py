"""Figures: a seaborn theme stays with its figure, frontier lines only where runs were (issue 56)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from ihstats.figures.law import plot_obs_vs_pred


def test_obs_vs_pred_leaves_matplotlib_settings_as_it_found_them():
    frame = pd.DataFrame({"observed": [100.0, 200.0, 400.0], "obs_lo": [90.0, 180.0, 400.0],
                          "obs_hi": [110.0, 220.0, float("nan")], "predicted": [120.0, 190.0, 300.0],
                          "pred_lo": [100.0, 150.0, 250.0], "pred_hi": [140.0, 230.0, 350.0],
                          "censored": [False, False, True]})
    before = dict(plt.rcParams)
    fig = plot_obs_vs_pred(frame, r=0.9, hdi_prob=0.9)
    after = dict(plt.rcParams)
    plt.close(fig)
    changed = {k for k in before if before[k] != after[k] and k != "backend"}
    assert changed == set()
    assert fig.axes[0].get_xscale() == "log"  # the figure itself was drawn


def test_frontier_lines_stop_at_cells_without_runs_and_every_tick_is_labelled():
    import numpy as np

    from ihstats.figures.frontier import plot_frontier_map

    # a transect: f = 0.9 at every r, r = 0.9 at every f; the other cells hold no runs
    cells = pd.DataFrame([(f, 0.9) for f in (0.7, 0.8, 0.9)] + [(0.9, r) for r in (0.5, 0.7)],
                         columns=["frequency", "reliability"]).assign(n_runs=3, n_formed=[2, 3, 3, 0, 2])
    f = np.linspace(0.7, 0.9, 30)
    r = np.linspace(0.85, 0.65, 30)  # crosses the empty (0.7-0.8, 0.5-0.7) block, ends in the f = 0.9 column
    frontier = pd.DataFrame({"frequency": f, "reliability_median": r, "reliability_lo": r - 0.05,
                             "reliability_hi": r + 0.05, "glm_reliability": r})
    fig = plot_frontier_map(cells, frontier)
    ax = fig.axes[0]
    median = next(l for l in ax.get_lines() if l.get_label().startswith("frontier"))
    y = np.asarray(median.get_ydata(), dtype=float)
    # cells split at geometric midpoints: r > sqrt(0.7 * 0.9) is the r = 0.9 row (runs at every f),
    # below it only the f = 0.9 column (f > sqrt(0.8 * 0.9)) holds runs
    has_runs = (r > np.sqrt(0.63)) | (f > np.sqrt(0.72))
    assert (~has_runs).sum() >= 5 and (np.isfinite(y) == has_runs).all()  # drawn only where runs were
    for axis in (ax.xaxis, ax.yaxis):
        assert len(axis.get_minor_locator().tick_values(0.4, 1.0)) == 0  # no tick without a label
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0.5", "0.7", "0.9"]
    plt.close(fig)


def test_obs_vs_pred_labels_a_short_log_axis_sparsely():
    # onsets 300-6,000 updates: under two decades matplotlib labelled every minor tick (3-6 x 10^2 collided)
    obs = [300.0, 420.0, 650.0, 1300.0, 3800.0, 6000.0]
    frame = pd.DataFrame({"observed": obs, "obs_lo": obs, "obs_hi": obs, "predicted": obs,
                          "pred_lo": obs, "pred_hi": obs, "censored": [False] * 6})
    fig = plot_obs_vs_pred(frame, r=1.0, hdi_prob=0.9)
    fig.canvas.draw()
    for axis in (fig.axes[0].xaxis, fig.axes[0].yaxis):
        labels = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
        assert set(labels) <= {"100", "200", "500", "1000", "2000", "5000", "10000"} and len(labels) >= 3
        assert not any(t.get_text() for t in axis.get_ticklabels(minor=True))
    plt.close(fig)


def test_a_transect_frontier_draws_its_cells_not_a_grey_block():
    """issue 68: the transect design drew mostly a grey "no runs" block with the legend over it."""
    import numpy as np

    from ihstats.figures.frontier import plot_frontier_map

    cells = pd.DataFrame([(f, 0.9) for f in (0.7, 0.8, 0.9)] + [(0.9, r) for r in (0.5, 0.7)],
                         columns=["frequency", "reliability"]).assign(n_runs=3, n_formed=[2, 3, 3, 0, 2])
    f = np.linspace(0.7, 0.9, 30)
    r = np.linspace(0.85, 0.65, 30)
    frontier = pd.DataFrame({"frequency": f, "reliability_median": r, "reliability_lo": r - 0.05,
                             "reliability_hi": r + 0.05, "glm_reliability": r})
    ax = plot_frontier_map(cells, frontier).axes[0]
    np.testing.assert_allclose(sorted(ax.collections[0].get_array()), sorted([2 / 3, 1, 1, 0, 2 / 3]))  # one disc per cell
    assert sorted(t.get_text() for t in ax.texts) == sorted(["2/3", "3/3", "3/3", "0/3", "2/3"])
    assert ax.get_facecolor()[:3] == (1.0, 1.0, 1.0)  # white ground, no grey block
    legend = ax.get_legend()
    assert legend.get_bbox_to_anchor().y0 < ax.get_window_extent().y0  # below the axes, off the cells
    dotted = next(l for l in ax.get_lines() if l.get_label().startswith("between the cells"))
    assert np.isfinite(np.asarray(dotted.get_ydata(), dtype=float)).any()  # the unmeasured stretch, dotted
    plt.close(ax.figure)


def test_posterior_labels_sit_on_a_box_above_the_reference_lines():
    """issue 68: ArviZ's "mean=" and HDI labels collided with the published-exponent lines."""
    import numpy as np

    from ihstats import _bayes
    from ihstats.figures.posterior import plot_posterior

    rng = np.random.default_rng(0)
    idata = _bayes.from_draws({"a": rng.normal(0.37, 0.05, (2, 200))})
    fig = plot_posterior(idata, ["a"], hdi_prob=0.9, ref_val={"a": 0.37}, extra_ref=(0.5, "tokens form"))
    ax = fig.axes[0]
    line_z = max(l.get_zorder() for l in ax.get_lines())
    assert ax.texts and all(t.get_bbox_patch() is not None and t.get_zorder() > line_z for t in ax.texts)
    plt.close(fig)
