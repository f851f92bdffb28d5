"""Every fit's results class satisfies the one results protocol (issue 43 item 2):
``summary()``, ``diagnostics()``, ``save(dir)``, callable with nothing more, and none of them
draws: results objects hold numbers, the figure home draws them."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from ihstats.fit_protocol import FitResults
from ihstats.frontier.results import FrontierResults
from ihstats.law.results import UPTLawResults
from ihstats.onset.results import OnsetResults

ROOT = Path(__file__).resolve().parents[2]
RESULTS = [UPTLawResults, FrontierResults, OnsetResults]
RESULTS_MODULES = ["ihstats/law/results.py", "ihstats/frontier/results.py", "ihstats/onset/results.py"]


@pytest.mark.parametrize("cls", RESULTS, ids=lambda c: c.__name__)
def test_results_class_satisfies_the_protocol(cls):
    assert issubclass(cls, FitResults)
    for name, n_required in (("summary", 0), ("diagnostics", 0), ("save", 1)):
        params = list(inspect.signature(getattr(cls, name)).parameters.values())[1:]  # past self
        required = [p for p in params if p.default is p.empty
                    and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        assert len(required) == n_required, (cls.__name__, name, required)
        if name == "save":
            assert required[0].kind is not required[0].KEYWORD_ONLY  # save(out_dir), positional


def test_every_results_class_of_a_fit_group_is_listed():
    """A new ``*Results`` class in a fit's results module joins RESULTS (and so this check)."""
    found = {n.name for m in RESULTS_MODULES for n in ast.parse((ROOT / m).read_text()).body
             if isinstance(n, ast.ClassDef) and n.name.endswith("Results")}
    assert found == {c.__name__ for c in RESULTS}


@pytest.mark.parametrize("path", RESULTS_MODULES)
def test_results_modules_do_not_draw(path):
    """No plotting method on a results class, and no import of matplotlib or the figure home."""
    tree = ast.parse((ROOT / path).read_text())
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    mods |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in mods if m and (m.startswith("matplotlib") or m.startswith("ihstats.plots"))}
    assert not [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("plot")]
    assert "ihstats import plots" not in (ROOT / path).read_text()
