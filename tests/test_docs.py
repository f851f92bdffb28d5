"""The docs match the repo: every reference to the design resolves and the files it names exist;
the README's first path runs as written and prints what the README quotes (issue 68)."""

import importlib
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "DESIGN.md"
SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "runs", "results", "out",
             "build", ".cache"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".sh", ".cfg", ".ini", ".yaml", ".yml", ""}


def _text_files():
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts[:-1]):
            continue
        if path.is_file() and path.suffix in TEXT_SUFFIXES and path != Path(__file__).resolve():  # not this file
            yield path


def _design_refs(path: Path):
    """(line number, the path written before ``DESIGN.md``) for each mention in ``path``."""
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        return
    for i, line in enumerate(text.splitlines(), 1):
        for m in re.finditer(r"([\w./-]*)DESIGN\.md", line):
            yield i, m.group(1)


def test_every_design_reference_resolves_inside_the_repo():
    assert DESIGN.is_file()
    bad = []
    for path in _text_files():
        for line, prefix in _design_refs(path):
            target = (ROOT / prefix / "DESIGN.md") if prefix else None
            relative = (path.parent / prefix / "DESIGN.md") if prefix else None
            ok = any(t is not None and t.resolve() == DESIGN.resolve() and t.resolve().is_relative_to(ROOT)
                     for t in (target, relative))
            if not ok:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {prefix}DESIGN.md")
    assert not bad, "references that do not name docs/DESIGN.md:\n" + "\n".join(bad)


def test_files_named_in_the_design_exist():
    """Paths the design names in backticks (``ihtrain/metrics.py``, ``examples/``) are in the repo,
    so the document cannot drift from the tree unnoticed. Run-directory files are not repo paths."""
    text = DESIGN.read_text()
    named = set(re.findall(r"`((?:ihtrain|ihstats|analyses|paper_figures|benchmarks|tests|docs|data|examples|notes)"
                           r"/[\w./-]*)`", text))
    assert len(named) > 10
    missing = sorted(p for p in named if not (ROOT / p.rstrip("/")).exists())
    assert not missing, f"docs/DESIGN.md names paths that do not exist: {missing}"


def test_readme_links_and_figure_resolve():
    text = (ROOT / "README.md").read_text()
    links = [t for t in re.findall(r"\]\(([^)#\s]+)", text) if "://" not in t]
    assert links, "the README links its figure and docs/DESIGN.md"
    missing = [t for t in links if not (ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


# ------------------------------------------------------------------ the README's first path (issue 68)
README = ROOT / "README.md"
FIRST_PATH = re.compile(r"<!-- first-path[^>]*-->\s*```bash\n(.*?)```\s*<!-- /first-path -->\s*(.*?)\n## ", re.S)
#: first-path lines that take half a minute or more: the slow test runs them, the quick one their --help
SLOW_LINES = ("analyses/fit_upt_law.py", "-m ihtrain.score")
#: quoted output that comes from a slow line (the fit's numbers and report)
SLOW_QUOTES = ("a 0.", "b 0.", "results/upt_law/")


def first_path() -> tuple[list[str], list[str]]:
    """The first path's command lines (comments dropped) and the output the README quotes after them."""
    m = FIRST_PATH.search(README.read_text())
    assert m, "README.md: the first path's fenced block between <!-- first-path --> markers is missing"
    lines = [ln.split("  #")[0].strip() for ln in m.group(1).splitlines() if ln.strip() and not ln.startswith("#")]
    return lines, re.findall(r"`([^`]+)`", m.group(2))


def _flat(text: str) -> str:
    return " ".join(text.split())


def _argv(line: str) -> list[str]:
    argv = shlex.split(line)
    assert argv[0] == "python", f"README first path: {line!r} does not start with python"
    return [sys.executable, *argv[1:]]


def _help_of(argv: list[str]) -> list[str]:
    """The line's command with --help instead of its arguments."""
    return argv[:3] + ["--help"] if argv[1] == "-m" else argv[:2] + ["--help"]


@pytest.fixture
def sandbox(tmp_path, smoke_cache):
    """A working folder that looks like the repository root (data/, analyses/ linked) and writes
    its runs/ and results/ into tmp; the corpus cache shared with the other tests."""
    for name in ("data", "analyses", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "IHLAW_CACHE": str(smoke_cache), "OMP_NUM_THREADS": "1",
           "IHLAW_PROGRESS": "0"}
    return tmp_path, env


def _run(argv: list[str], sandbox, timeout: int = 600) -> str:
    cwd, env = sandbox
    out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(argv[1:])} exited {out.returncode}:\n{out.stderr[-2000:]}"
    return out.stdout + out.stderr


def test_the_first_path_runs_as_written_and_prints_what_the_readme_quotes(sandbox):
    lines, quotes = first_path()
    assert len(lines) >= 6 and quotes
    printed = ""
    for line in lines:
        argv = _argv(line)
        slow = any(s in line for s in SLOW_LINES)
        said = _run(_help_of(argv) if slow else argv, sandbox)
        assert "usage:" in said if slow else said.strip()
        printed += said
    quick = [q for q in quotes if not q.startswith(SLOW_QUOTES)]
    missing = [q for q in quick if _flat(q) not in _flat(printed)]
    assert not missing, f"README first path quotes output its commands do not print: {missing}"


@pytest.mark.slow
def test_the_whole_first_path_runs_and_the_fit_gives_the_quoted_numbers(sandbox):
    lines, quotes = first_path()
    printed = "".join(_run(_argv(line), sandbox) for line in lines)
    for q in quotes:
        if q.startswith(("a 0.", "b 0.")):  # sampler output: within Monte Carlo error on another stack
            name, *nums = re.findall(r"[ab]|\d+\.\d+", q)
            got = re.search(rf"^\s*{name}\s+(\d+\.\d+)\s+\[(\d+\.\d+), (\d+\.\d+)\]", printed, re.M)
            assert got and np.allclose([float(g) for g in got.groups()], [float(n) for n in nums], atol=0.02), q
        else:
            assert _flat(q) in _flat(printed), q


def test_console_scripts_are_documented_and_resolve():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    text = README.read_text()
    for name, target in scripts.items():
        module, func = target.split(":")
        assert f"`{name}`" in text, f"pyproject.toml installs {name}; README.md does not say what it is"
        assert callable(getattr(importlib.import_module(module), func)), target


def test_readme_names_only_modules_and_scripts_that_exist():
    text = README.read_text()
    modules = set(re.findall(r"python -m ([\w.]+)", text)) - {"pytest", "venv", "pip"}
    scripts = set(re.findall(r"python ((?:analyses|paper_figures|benchmarks)/[\w/]+\.py)", text))
    assert len(modules) > 8 and len(scripts) > 5
    assert not [m for m in modules if importlib.util.find_spec(m) is None]
    assert not [s for s in scripts if not (ROOT / s).is_file()]


def test_readme_only_example_ids_are_runs_of_the_default_grid():
    from ihtrain.grid.cli import load

    ids = {r.run_id for r in load().expand()}
    examples = re.findall(r"--only ([0-9a-f]{4,12}(?:,[0-9a-f]{4,12})*)\b", README.read_text())
    assert examples, "README.md: no --only example by run id"
    for prefix in ",".join(examples).split(","):
        assert any(i.startswith(prefix) for i in ids), f"--only {prefix}: not a run of the default grid"


def test_readme_quoted_cpu_tiny_onset_is_the_shipped_logs():
    import pandas as pd

    from ihstats.emergence import formation

    m = re.search(r"Bayesian onset at update ([\d,]+) \[([\d,]+), ([\d,]+)\]", README.read_text())
    assert m, "README.md no longer quotes the cpu-tiny onset"
    f = formation(pd.read_parquet(ROOT / "data/reference_runs/cpu-tiny/metrics.parquet"))
    got = [f"{v:,.0f}" for v in (f["onset"], f["onset_lo"], f["onset_hi"])]
    assert got == list(m.groups())


def test_help_shows_each_default_once():
    from ihtrain.grid.cli import build_parser

    text = build_parser().format_help()
    entries = re.split(r"\n  (?=-)", text)
    twice = [e.split()[0] for e in entries if len(re.findall(r"\bdefault\b", e)) > 1]
    assert not twice, f"python -m ihtrain.grid --help states a default twice: {twice}"
    assert "(default: None)" not in text and "(default: False)" not in text
