"""One figure home (issue 29 item 5): drawing lives in the figure modules (``ihstats/figures/``, a
module per group, and ``ihtrain/plots.py``), files are written by ``ihstats.figures.save.save_figure``
only, and the scripts use public names of the package only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLOT_MODULES = {f"ihstats/figures/{p.name}" for p in (ROOT / "ihstats" / "figures").glob("*.py")} | {"ihtrain/plots.py"}
OURS = ("ihstats", "ihtrain", "paper_figures")


def _sources(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def _functions_calling(tree: ast.AST, attr: str) -> list[str]:
    """Names of the innermost functions (``<module>`` at top level) that call ``X.<attr>(...)``."""
    found = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                    and child.func.attr == attr):
                found.append(where)
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_savefig_only_in_save_figure():
    calls = {(_rel(p), fn) for p in _sources("ihstats", "ihtrain", "analyses", "paper_figures")
             for fn in _functions_calling(ast.parse(p.read_text()), "savefig")}
    assert calls == {("ihstats/figures/save.py", "save_figure")}


def test_pyplot_only_in_plot_modules():
    """Figures are drawn in the figure modules: nothing else imports pyplot."""
    offenders = []
    for p in _sources("ihstats", "ihtrain", "analyses", "paper_figures"):
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom)
                     else [])
            if any(n.startswith(("matplotlib.pyplot", "matplotlib.colors")) for n in names):
                offenders.append(_rel(p))
    assert not set(offenders) - PLOT_MODULES


def _private_uses(path: Path) -> list[str]:
    """Private names of our packages that a script imports or reaches through a module."""
    tree = ast.parse(path.read_text())
    bad, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(OURS):
            if any(part.startswith("_") for part in node.module.split(".")):
                bad.append(node.module)
            for a in node.names:
                if a.name.startswith("_"):
                    bad.append(f"{node.module}.{a.name}")
                modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(OURS):
                    if any(part.startswith("_") for part in a.name.split(".")):
                        bad.append(a.name)
                    modules.add(a.asname or a.name.split(".")[0])
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            bad.append(f"{node.value.id}.{node.attr}")
    return bad


@pytest.mark.parametrize("path", _sources("analyses", "paper_figures"), ids=_rel)
def test_scripts_use_public_names_only(path):
    assert _private_uses(path) == []


def test_private_use_detector_sees_private_imports(tmp_path):
    f = tmp_path / "s.py"
    f.write_text("from ihstats import _bayes\nfrom ihstats.frontier import _edges\nimport ihstats.emergence as em\n"
                 "em._lift(1)\n")
    assert _private_uses(f) == ["ihstats._bayes", "ihstats.frontier._edges", "em._lift"]
