"""The training side's seams (issue 43): its command lines still answer ``--help`` after their modules
were split, and no module reaches into another's private names (``packed`` once imported
``train._record_exception``; what two modules share has a public home)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("module", ["ihtrain.train", "ihtrain.grid", "ihtrain.ablate", "ihtrain.score",
                                    "ihtrain.score.convert"])
def test_entry_point_help(module):
    r = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: python -m {module}")


def _private_imports(path: Path) -> list[str]:
    """``module._name`` for each private name ``path`` imports from another ihtrain module."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ihtrain"):
            out += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_") and a.name != "__version__"]
    return out


def test_no_module_imports_a_private_name_of_another():
    found = {str(p.relative_to(ROOT)): bad for p in sorted((ROOT / "ihtrain").rglob("*.py"))
             if (bad := _private_imports(p))}
    assert not found, f"private names imported across modules (give them a public home): {found}"
