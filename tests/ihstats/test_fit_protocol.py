"""Every fit's results class satisfies the one results protocol (issue 43 item 2):
``summary()``, ``diagnostics()``, ``save(dir)``, callable with nothing more, and none of them
draws: results objects hold numbers, the figure home draws them."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from ihstats.fit_protocol import FitResults

ROOT = Path(__file__).resolve().parents[2]
#: Every fit group's results module (a fit group: a folder of ihstats with a spec.py)
RESULTS_MODULES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ihstats").glob("*/results.py")
                         if (p.parent / "spec.py").exists())


def _results_classes() -> list[type]:
    out = []
    for path in RESULTS_MODULES:
        module = importlib.import_module(path[:-3].replace("/", "."))
        out += [getattr(module, n.name) for n in ast.parse((ROOT / path).read_text()).body
                if isinstance(n, ast.ClassDef) and n.name.endswith("Results")]
    return out


RESULTS = _results_classes()


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


def test_every_fit_group_is_found():
    """The four fit groups are found without a list to keep: a new group joins by its layout."""
    fits = ("law", "frontier", "onset", "ablation")
    assert {f"ihstats/{g}/results.py" for g in fits} <= set(RESULTS_MODULES)
    assert {"UPTLawResults", "FrontierResults", "OnsetResults", "AblationResults"} <= {c.__name__ for c in RESULTS}


@pytest.mark.parametrize("path", RESULTS_MODULES)
def test_results_modules_do_not_draw(path):
    """No plotting method on a results class, and no import of matplotlib or the figure home."""
    tree = ast.parse((ROOT / path).read_text())
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    mods |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in mods if m and (m.startswith("matplotlib") or m.startswith("ihstats.figures"))}
    methods = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert not [m for m in methods if m.startswith("plot")]
