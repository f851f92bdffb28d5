"""The identification design's simulation (issue 66): widths shrink with cells and seeds, the intervals
cover the truth, and bxc-cross's logs give the variances it simulates at."""

from pathlib import Path

import pandas as pd
import pytest

from ihstats.simulate.design import Variances, design_cells, design_widths, fit_mixed, measured_variances

ROOT = Path(__file__).resolve().parents[2]
VAR = Variances(sigma=0.44, cell_sd=0.05, weight_sd=0.3)


def test_cells_of_each_layout():
    assert len(design_cells([8, 16, 32], [32, 64])) == 6
    assert design_cells([16, 32, 64], [32, 64, 128], "cross") == sorted({(16, 64), (32, 64), (64, 64), (32, 32), (32, 128)})
    with pytest.raises(ValueError, match="layout"):
        design_cells([8], [32], "diagonal")


def test_more_cells_and_seeds_narrow_the_intervals_which_cover():
    small = design_widths(design_cells([16, 32, 64, 128], [32, 64, 128], "cross"), 3, VAR, n_sims=40)
    big = design_widths(design_cells([8, 16, 32, 64, 128], [32, 64, 128]), 5, VAR, n_sims=40)
    assert big["width_a"] < 0.6 * small["width_a"] and big["width_b"] < 0.6 * small["width_b"]
    assert big["runs"] == 75 and big["cover_a"] >= 0.75 and big["cover_b"] >= 0.75


def test_fit_recovers_a_known_line():
    import numpy as np
    rng = np.random.default_rng(0)
    B = np.repeat([8.0, 32, 128], 20)
    C = np.tile(np.repeat([32.0, 128], 10), 3)
    cell = pd.factorize(pd.Series([f"{b}x{c}" for b, c in zip(B, C)]))[0]
    y = 7 - 0.4 * np.log(B) - 0.6 * np.log(C) + 0.1 * rng.standard_normal(B.size)
    fit = fit_mixed(y, np.log(B), np.log(C), [cell])
    assert fit["a"] == pytest.approx(0.4, abs=0.05) and fit["b"] == pytest.approx(0.6, abs=0.05)


def test_variances_from_the_shipped_grid():
    var, fit = measured_variances(pd.read_csv(ROOT / "data/reference_runs/bxc-cross/summary.csv"))
    assert fit["n_runs"] == 21 and 0.3 < var.sigma < 0.6 and var.weight_sd < 0.6
    assert 0.3 < fit["a"] < 0.9  # the default law's a 0.68 [0.27, 1.08]


def test_contrast_floor():
    import numpy as np
    from ihstats.simulate.design import contrast_width
    w = contrast_width(0.44, 5, np.log(4))  # the mechanism factorial's C arm
    assert w == pytest.approx(2 * 1.6449 * 0.44 * np.sqrt(0.4) / np.log(4), rel=1e-3)
    assert contrast_width(0.44, 20, np.log(4)) == pytest.approx(w / 2, rel=1e-9)
    with pytest.raises(ValueError):
        contrast_width(0.44, 0)
