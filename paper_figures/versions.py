"""The versions a set of figures was made with: ``constraints.txt`` beside them.

``make.py`` writes it into its output folder with the figures; ``pip install -c
paper_figures/figures/constraints.txt -e ".[all]"`` then installs the stack the committed figures
were made with. Each pin carries the interpreter's ``python_version`` marker: the Bayesian stack
differs between Python 3.11 (PyMC 5 / ArviZ 0.2x) and 3.12+ (PyMC 6 / ArviZ 1), so on another
Python the pins do not apply and ``make.py --check`` compares within Monte Carlo tolerance.
"""

from __future__ import annotations

import platform
import re
from importlib import metadata
from pathlib import Path

from ihstats.fileio import atomic_write_text

FILE = "constraints.txt"
#: What shapes the figures' numbers and drawings (sampler, summaries, tables, plots).
PACKAGES = ("numpy", "scipy", "pandas", "pymc", "pytensor", "arviz", "arviz-base", "arviz-stats",
            "arviz-plots", "xarray", "statsmodels", "ruptures", "matplotlib", "seaborn")
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^;\s]+)")


def running() -> dict[str, str]:
    """``{package: version}`` of the installed ``PACKAGES``, plus ``python``."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def write_constraints(folder: Path, versions: dict[str, str] | None = None) -> Path:
    """Write ``folder/constraints.txt`` (pins of the running versions, or ``versions``)."""
    v = dict(versions or running())
    py = v.pop("python")
    marker = f'python_version == "{".".join(py.split(".")[:2])}"'
    lines = [f"# The versions paper_figures/make.py made these figures with (Python {py}).",
             f'# Use: pip install -c {FILE} -e ".[all]" (the pins apply on Python '
             f"{'.'.join(py.split('.')[:2])} only).",
             f"# python=={py}"]
    lines += [f"{name}=={ver}; {marker}" for name, ver in sorted(v.items())]
    return atomic_write_text(Path(folder) / FILE, "\n".join(lines) + "\n")


def read_constraints(path: Path) -> dict[str, str]:
    """``{package: version}`` (and ``python``) pinned in a constraints file."""
    out = {}
    for line in Path(path).read_text().splitlines():
        m = _PIN.match(line.removeprefix("# ").strip())
        if m:
            out[m.group(1).lower()] = m.group(2)
    return out


def version_note(folder: Path) -> str | None:
    """One line naming every pinned version that differs from the running one (None when all
    agree); says so when the folder records no versions."""
    path = Path(folder) / FILE
    if not path.is_file():
        return f"versions: {path} missing: the versions these figures were made with are unknown"
    pinned, now = read_constraints(path), running()
    diff = [f"{k} {pinned[k]} -> {now.get(k, 'not installed')}" for k in pinned
            if now.get(k) != pinned[k]]
    if not diff:
        return None
    return (f"versions differ from those the figures in {folder} were made with ({path.name}): "
            f"{', '.join(diff)}; sampler tables are compared within Monte Carlo tolerance")
