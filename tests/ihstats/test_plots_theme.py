"""A figure's seaborn theme stays with that figure (issue 56): no global side effect."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from ihstats.plots import plot_obs_vs_pred


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
