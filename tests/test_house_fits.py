"""One habit per fit (issue 51 item 4), checked on every fit group (a folder of ihstats with a
``spec.py``): ``prepare`` returns a :class:`ihstats.fit_protocol.FitData`; the spec checks its
fields in one place and raises the group's error naming the field; one default sampler setting;
scripts save and print a fit through its results object; only the figure home draws, and the
reports that show figures ask it."""
from __future__ import annotations

import ast
import importlib
import inspect
import typing
from pathlib import Path

import pandas as pd
import pytest

from ihstats.fit_protocol import SAMPLER, FitData, FitError

ROOT = Path(__file__).resolve().parents[1]
GROUPS = sorted(p.parent.name for p in (ROOT / "ihstats").glob("*/spec.py"))


def _tiny_inputs() -> dict:
    """Group -> (a small table, its spec, a bad field and value, the field's name in the message)."""
    from ihstats.ablation.spec import AblationSpec
    from ihstats.frontier.spec import FrontierSpec
    from ihstats.law.spec import UPTLawSpec
    from ihstats.onset.spec import OnsetSpec
    from ihstats.simulate.law import simulate_emergence_table
    from ihstats.simulate.onsets import simulate_onsets

    onset, _ = simulate_onsets([(0.6, 0.9), (0.9, 0.9), (0.9, 0.5)], n_seeds=3, seed=0)
    return {
        "law": (simulate_emergence_table(seed=1)[0], UPTLawSpec(), UPTLawSpec, {"hdi_prob": 1.5}),
        "frontier": (pd.read_csv(ROOT / "data" / "example_frontier.csv"), FrontierSpec(), FrontierSpec,
                     {"prior_sd": 0}),
        "onset": (onset, OnsetSpec(), OnsetSpec, {"sigma_sd": -1.0}),
        "ablation": (pd.read_csv(ROOT / "data" / "example_ablation.csv"), AblationSpec("natural"), AblationSpec,
                     {"condition": ""}),
    }


def test_every_group_has_a_tiny_case_here():
    """A new fit group joins by its layout; it must then add its case to :func:`_tiny_inputs`."""
    assert {"law", "frontier", "onset", "ablation"} <= set(GROUPS)
    assert set(_tiny_inputs()) == set(GROUPS)


@pytest.mark.parametrize("group", GROUPS)
def test_prepare_returns_the_groups_fit_data(group):
    data_mod = importlib.import_module(f"ihstats.{group}.data")
    prepare = data_mod.prepare
    hints = typing.get_type_hints(prepare, vars(data_mod))
    assert issubclass(hints["return"], FitData) and hints["return"] is not FitData, hints["return"]
    assert list(inspect.signature(prepare).parameters)[:2] == ["table", "spec"]
    table, spec, *_ = _tiny_inputs()[group]
    data = prepare(table, spec)
    assert type(data) is hints["return"]
    assert isinstance(data.table, pd.DataFrame) and data.n_rows == len(data.table) > 0


def _spec_class(group: str) -> type:
    spec = importlib.import_module(f"ihstats.{group}.spec")
    found = [v for v in vars(spec).values() if isinstance(v, type) and v.__module__ == spec.__name__
             and v.__name__.endswith("Spec")]
    assert len(found) == 1, f"ihstats.{group}.spec declares {found}"
    return found[0]


def _group_error(group: str) -> type:
    spec = importlib.import_module(f"ihstats.{group}.spec")
    return next(v for v in vars(spec).values() if isinstance(v, type) and issubclass(v, FitError)
                and v is not FitError and v.__module__ == spec.__name__)


@pytest.mark.parametrize("group", GROUPS)
def test_the_spec_checks_its_fields_in_one_place(group):
    """The spec's ``__post_init__`` checks every field and raises the group's error naming it;
    nothing else of the group checks a spec field (the build step only reads it)."""
    cls = _spec_class(group)
    assert "__post_init__" in vars(cls), f"{cls.__name__} checks no field"
    table, spec, cls_, bad = _tiny_inputs()[group]
    assert cls_ is cls
    field = next(iter(bad))
    base = {"condition": "natural"} if group == "ablation" else {}
    with pytest.raises(_group_error(group), match=field):
        cls(**{**base, **bad})
    model = ROOT / "ihstats" / group / "model.py"
    if model.exists():
        for node in ast.walk(ast.parse(model.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name == "from_table":
                assert not [n for n in ast.walk(node) if isinstance(n, ast.Raise)], f"{group}.model.from_table checks"


SAMPLER_ARGS = {"chains", "draws", "tune", "target_accept"}


def literal_sampler_defaults(path: Path) -> list[str]:
    """Functions that give a sampler argument a number of their own as default."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            pos = a.posonlyargs + a.args
            pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
            out += [f"{path.name}:{node.lineno} {node.name}({arg.arg}={ast.unparse(d)})" for arg, d in pairs
                    if arg.arg in SAMPLER_ARGS and isinstance(d, ast.Constant) and not isinstance(d.value, bool)]
    return out


def test_one_default_sampler_setting():
    """Every fit, product and arm model and the sampler flags start from ``fit_protocol.SAMPLER``."""
    assert [w for p in sorted((ROOT / "ihstats").rglob("*.py")) for w in literal_sampler_defaults(p)] == []
    from ihstats.frontier.model import FrontierModel
    from ihstats.law.model import UPTLawModel
    from ihstats.onset.model import OnsetModel
    for model in (UPTLawModel, FrontierModel, OnsetModel):
        params = inspect.signature(model.fit).parameters
        assert {k: params[k].default for k in ("chains", "draws", "tune", "target_accept", "seed")} == \
            {"chains": SAMPLER.chains, "draws": SAMPLER.draws, "tune": SAMPLER.tune,
             "target_accept": SAMPLER.target_accept, "seed": SAMPLER.seed}, model.__name__


def test_the_sampler_default_check_sees_a_number(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def fit(x, draws=SAMPLER.draws, *, chains: int = 2, progress=True):\n    pass\n")
    assert literal_sampler_defaults(f) == ["m.py:1 fit(chains=2)"]


def _analyses() -> list[Path]:
    return sorted((ROOT / "analyses").glob("*.py"))


def _imported(tree: ast.AST) -> set[str]:
    mods = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    return mods | {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}


def hand_saved_fits(path: Path) -> list[str]:
    """A script that fits a group's model or tests saves the results through
    ``fit_protocol.save_and_warn`` (save + the sampler's warnings), never ``res.save`` by hand."""
    tree = ast.parse(path.read_text())
    fits = {f"ihstats.{g}.model" for g in GROUPS} | {"ihstats.ablation.results"}
    if not _imported(tree) & fits:
        return []
    out = [f"{path.name}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Call)
           and isinstance(n.func, ast.Attribute) and n.func.attr == "save"
           and isinstance(n.func.value, ast.Name) and n.func.value.id in ("res", "result", "results")]
    if "save_and_warn" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}:
        out.append(f"{path.name}: no save_and_warn")
    return out


def test_scripts_save_and_print_a_fit_through_its_results():
    assert [w for p in _analyses() for w in hand_saved_fits(p)] == []


def test_the_save_check_sees_a_hand_save(tmp_path):
    f = tmp_path / "s.py"
    f.write_text("from ihstats.frontier.model import FrontierModel\nres = FrontierModel.fit()\nres.save('x')\n")
    assert hand_saved_fits(f) == ["s.py:3", "s.py: no save_and_warn"]


def test_every_results_class_of_a_group_implements_the_protocol():
    from ihstats.fit_protocol import FitResults
    found = []
    for group in GROUPS:
        module = importlib.import_module(f"ihstats.{group}.results")
        classes = [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__
                   and v.__name__.endswith("Results")]
        assert classes, f"ihstats.{group}.results has no results class"
        found += [c for c in classes if not issubclass(c, FitResults)]
    assert found == []


#: the figure home: the figures package, a module per group
FIGURE_HOME = "ihstats/figures/"
DRAWING = ("matplotlib", "seaborn")


def drawing_imports(path: Path) -> list[str]:
    return sorted(m for m in _imported(ast.parse(path.read_text())) if m.split(".")[0] in DRAWING)


def test_only_the_figure_home_imports_matplotlib():
    """Results hold numbers and reports ask the figure home: no other module of ihstats draws."""
    found = {str(p.relative_to(ROOT)): drawing_imports(p) for p in sorted((ROOT / "ihstats").rglob("*.py"))}
    assert {p: m for p, m in found.items() if m and not p.startswith(FIGURE_HOME)} == {}
    assert found[FIGURE_HOME + "save.py"] and found[FIGURE_HOME + "law.py"]  # the check sees the real thing


def test_reports_draw_through_the_figure_home_and_scripts_leave_it_to_them():
    """A report that names a figure draws it (through a module of ihstats.figures); a script that
    writes a group's report draws none of that group's figures itself."""
    for group in GROUPS:
        text = (ROOT / "ihstats" / group / "report.py").read_text()
        names_figure = ".png" in text
        asks_home = bool({m for m in _imported(ast.parse(text)) if m.startswith("ihstats.figures")})
        assert names_figure == asks_home, f"ihstats.{group}.report names a figure: {names_figure}, draws: {asks_home}"
    for path in _analyses():
        tree = ast.parse(path.read_text())
        if not {m for m in _imported(tree) if m.endswith(".report") and m.startswith("ihstats.")}:
            continue
        drawn = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("ihstats.figures")
                 for a in n.names if a.name.startswith("plot_") or a.name == "save_figure"]
        assert drawn == [], f"{path.name} draws {drawn}; its report draws"
