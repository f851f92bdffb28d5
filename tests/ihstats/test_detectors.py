"""The detector registry: a detector added in a test (its class and its registration, nothing
else) is chosen by name in the emergence table and on the command line; names are checked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ihstats.base import io
from ihstats.base.contract import ps_crossing
from ihstats.detectors import DETECTORS, BayesDetector, detect, get_detector, register_detector
from ihstats.detectors.base import Detector, EmergenceResult, censored_result, check_curve
from ihstats.emergence import emergence_table, main
from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_grid


@dataclass
class FirstCrossing(Detector):
    """A toy detector: the onset is the first checkpoint at or above ``at`` (bracketed by the one before)."""

    name = "first-crossing"
    min_points = 2
    at: float = 0.3

    def fit(self, steps: Any, values: Any, label: str = "curve") -> EmergenceResult:
        s, y = check_curve(steps, values, self.min_points, label)
        hit = np.flatnonzero(y >= self.at)
        if hit.size == 0:
            return censored_result(self.name, s, np.nan, interval_kind="bracketing")
        i = int(hit[0])
        return EmergenceResult(self.name, float(s[i]), float(s[max(i - 1, 0)]), float(s[i]), np.nan, np.nan, False,
                               float(s[-1]), np.nan, interval_kind="bracketing")


@pytest.fixture
def toy():
    register_detector(FirstCrossing)
    yield FirstCrossing.name
    del DETECTORS[FirstCrossing.name]


@pytest.fixture
def grid(tmp_path):
    runs = [(simulate_curve("sigmoid", "mixed", n=60, seed=i), {"train.batch_size": b, "seed": i})
            for i, b in enumerate([8, 16])]
    runs.append((simulate_curve("flat", "mixed", n=60, seed=9), {"train.batch_size": 32, "seed": 2}))
    write_fake_grid(tmp_path / "grid", runs)
    return tmp_path / "grid"


def test_a_registered_detector_runs_through_the_emergence_table(toy, grid):
    table = emergence_table(grid, method=toy, at=0.3)
    g = io.load_grid(grid)
    expected = {rid: ps_crossing(m, 0.3) for rid, m in g.metrics.groupby("run_id")}
    assert (table["method"] == toy).all() and "formed" not in table.columns  # formed is the bayes rule's
    for _, row in table.iterrows():
        if expected[row.run_id] is None:
            assert row.censored and row.onset == row.last_step
        else:
            assert not row.censored and row.onset == expected[row.run_id] and row.onset_lo < row.onset
    assert table["censored"].tolist().count(True) == 1
    shifted = emergence_table(grid, method=toy, at=0.5)  # its own parameter reaches it
    assert (shifted["onset"] >= table["onset"]).all() and (shifted["onset"] > table["onset"]).any()


def test_a_registered_detector_is_a_cli_method(toy, grid, tmp_path, capsys):
    out = tmp_path / "em.csv"
    assert main([str(grid), "-o", str(out), "--method", toy]) == 0
    assert "wrote 3 runs: 2 with an onset, 1 censored (no onset by the last step)" in capsys.readouterr().out
    # --min-rise is a flag of the built-in detectors: the toy takes none, so it is refused, not ignored
    with pytest.raises(SystemExit) as e:
        main([str(grid), "-o", str(out), "--method", toy, "--min-rise", "0.2"])
    assert e.value.code == 2 and "--min-rise 0.2: has no effect here" in capsys.readouterr().err
    assert set(pd.read_csv(out)["method"]) == {toy}


def test_names_are_checked():
    assert list(DETECTORS)[:3] == ["bayes", "pelt", "threshold"]
    assert isinstance(get_detector("bayes", level=0.8), BayesDetector)
    with pytest.raises(ValueError, match="method: must be one of bayes, pelt, threshold"):
        get_detector("magic")
    with pytest.raises(ValueError, match="level"):
        get_detector("pelt", level=1.0)
    with pytest.raises(TypeError):
        get_detector("pelt", min_log_bf=3.0)  # a parameter of another detector

    @dataclass
    class Impostor(FirstCrossing):
        name = "bayes"

    with pytest.raises(ValueError, match="'bayes' is already BayesDetector"):
        register_detector(Impostor)
    with pytest.raises(TypeError, match="Detector subclass"):
        register_detector(dict)
    assert register_detector(BayesDetector) is BayesDetector  # registering the same class again is a no-op


def test_a_detector_class_and_detect_by_name_agree():
    c = simulate_curve("sigmoid", "mixed", n=120, seed=3)
    for name, cls in [(n, DETECTORS[n]) for n in ("bayes", "pelt", "threshold")]:
        direct = cls(level=0.8).fit(c.steps, c.values)
        assert direct.row() == pytest.approx(detect(c.steps, c.values, name, level=0.8).row(), nan_ok=True)
        assert direct.method == name and "level" in cls.options() and "min_rise" in cls.options()
