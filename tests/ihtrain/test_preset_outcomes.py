"""Each experiment preset's cheapest cell, trained for real, shows the outcome the preset exists
to show (formed, or not formed where the data cannot grow a head). Minutes each: ``-m slow``."""

import pandas as pd
import pytest
import torch

from ihstats.emergence import formation
from ihtrain.grid.spec import load_grid_preset
from ihtrain.run.train import train_run

CELLS = [
    # preset, factors of the cell, formed?
    ("bxc-markov", {"train.batch_size": 64, "train.context": 16, "size": "d32"}, True),
    ("freqrel-markov", {"data.markov.frequency": 0.9, "data.markov.reliability": 0.9}, True),
    # i.i.d. tokens with the same planted repeats: no head within the cap (12,000 updates)
    ("markov", {"data.markov.marginal": "uniform", "data.markov.dependency": "iid", "regime": "high"}, False),
    # the semi-natural stream at a fixed budget (3,200 updates, 2 x 4 heads): the shipped seed 0 formed at 1,288
    ("biinduct", {"data.biinduct.mode": "none"}, True),
]


def cell_run(preset: str, factors: dict):
    """The cell's seed-0 run (a preset with ``seeds`` holds one run per seed of each cell)."""
    runs = [r for r in load_grid_preset(preset).expand()
            if r.seed == 0 and all(r.factors.get(k) == v for k, v in factors.items())]
    assert len(runs) == 1, f"{preset}: {len(runs)} runs match {factors}"
    return runs[0]


@pytest.fixture
def one_thread():
    """The grid trains each run on one thread; the same thread count gives the same float
    reductions, hence the same run (a run near the plateau can go either way on the last bit)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.slow
@pytest.mark.parametrize("preset, factors, formed", CELLS, ids=[c[0] for c in CELLS])
def test_cheapest_cell_shows_the_preset_outcome(preset, factors, formed, tmp_path, one_thread):
    run = cell_run(preset, factors)
    status = train_run(run.config, tmp_path, progress=False, make_figures=False)
    assert status["status"] == "done"
    f = formation(pd.read_parquet(tmp_path / "metrics.parquet"), formed_level=run.config.train.emergence_threshold,
                  metric=run.config.train.emergence_metric)
    assert f["crossed"] is formed, f  # the crossing the budget stops on (the certificate: ihstats.certificate)
    stops_early = formed and run.config.train.budget == "until-emergence"
    assert status["stop_reason"] == ("emerged" if stops_early else run.config.cap_reason)
