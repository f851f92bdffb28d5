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
import subprocess
from importlib import metadata
from pathlib import Path

from ihstats.base.fileio import atomic_write_text

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
    commit = made_at_commit()
    lines = [f"# The versions paper_figures/make.py made these figures with (Python {py}).",
             *([f"# commit {commit}"] if commit else []),
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


def made_at_commit() -> str:
    """The repository's HEAD commit (``""`` outside a git checkout): the code that made the figures."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def recorded_commit(folder: Path) -> str:
    """The ``# commit SHA`` line of ``folder/constraints.txt`` (``""`` when it records none)."""
    path = Path(folder) / FILE
    if not path.is_file():
        return ""
    m = re.search(r"^# commit ([0-9a-f]{7,40})$", path.read_text(), flags=re.M)
    return m.group(1) if m else ""


def why_not_identical(folder: Path) -> str:
    """Why regenerated sampler tables can differ in their last digits from those in ``folder``: a
    sampler's draws are a function of seed, package versions, CPU and the fit's code; this names the
    versions that differ and the code changed since the commit the figures were made at."""
    reasons = [version_note(folder) or "versions: the same as recorded"]
    commit, now = recorded_commit(folder), made_at_commit()
    if not commit:
        reasons.append("code: the figures record no commit (made before make.py recorded one), so code changes "
                       "since cannot be ruled out")
    elif commit != now and now:
        out = subprocess.run(["git", "diff", "--name-only", commit, "HEAD", "--", "ihstats", "paper_figures"],
                             cwd=Path(__file__).parent, capture_output=True, text=True, timeout=30)
        changed = [f for f in out.stdout.split() if f.endswith(".py")]
        reasons.append(f"code: {len(changed)} source file(s) of ihstats/paper_figures changed since {commit[:12]}"
                       + (f" ({', '.join(changed[:4])}{' ...' if len(changed) > 4 else ''})" if changed else ""))
    else:
        reasons.append("code: the same commit")
    return ("; ".join(reasons) + "; with the same seed, versions, code and CPU two runs give byte-identical files")
