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


# ---- docs/RESULTS.md: a verdict sits next to its measurement and the design's floor (issue 69) ----
RESULTS = ROOT / "docs" / "RESULTS.md"
#: the verdict words; "differ" (a plain description of two numbers) is not one
VERDICT = re.compile(r"\b(agrees?|differs|refut(?:e|es|ed)|support(?:s|ed)?)\b", re.I)
#: a p-value ("p = 0.02", "p 0.0045", "Holm p 0.020", a table's p column) or an interval ("[0.52, 0.75]")
MEASURE = re.compile(r"\bp\b[^\[\]|\n]{0,40}?\d|\[[-+]?\d[\d.,]*(?:\s*\w+)?\s*,\s*[-+]?\d[\d.,]*\]")
FLOOR = re.compile(r"\bfloor", re.I)
QUOTED = re.compile(r"`[^`]*`|\"[^\"\n]*\"")  # quoted text (a withdrawn verdict, a command) is not a verdict
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*])")


def _table_units(lines: list[str]) -> list[tuple[int, str]]:
    """Each row of a markdown table as ``header: cell`` pairs: a row's p and floor sit in its own
    cells under the columns the header names."""
    header = [c.strip() for c in lines[0][1].strip().strip("|").split("|")]
    out = []
    for i, row in lines[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        out.append((i, " | ".join(f"{h}: {c}" for h, c in zip(header, cells))))
    return out


def claim_units(text: str) -> list[tuple[int, str]]:
    """(first line, text) of every unit a verdict must share with its measurement: a table row
    (with its header), a bullet (with its continuation lines), else a sentence of a paragraph."""
    units, block, table = [], [], []
    def flush():
        if block:
            start = block[0][0]
            joined = " ".join(line.strip() for _, line in block)
            units.extend((start, s) for s in ([joined] if block[0][1].lstrip().startswith("- ")
                                              else SENTENCE_END.split(joined)))
            block.clear()
        if table:
            units.extend(_table_units(table) if len(table) > 2 else [])
            table.clear()
    for i, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("|"):
            if block:
                flush()
            table.append((i, line))
        elif not stripped or stripped.startswith("#") or stripped.startswith("- ") or table:
            flush()
            if stripped.startswith("- "):
                block.append((i, line))
            elif stripped and not stripped.startswith("#"):
                block.append((i, line))
        else:
            block.append((i, line))
    flush()
    return units


def test_every_results_verdict_sits_next_to_its_measurement_and_floor():
    """A verdict word (agrees, differs, refuted, supported) in docs/RESULTS.md shares its unit (the
    same table row, bullet or sentence) with a p-value or an interval and with the design's floor
    (the smallest p it can give, or the smallest effect it resolves)."""
    bad = []
    for line, unit in claim_units(RESULTS.read_text()):
        plain = QUOTED.sub("", unit)
        if VERDICT.search(plain) and not (MEASURE.search(plain) and FLOOR.search(plain)):
            bad.append(f"docs/RESULTS.md:{line}: {plain[:140]}")
    assert not bad, "verdicts without a p-value or interval and a floor beside them:\n" + "\n".join(bad)


def test_claim_units_split_rows_bullets_and_sentences():
    text = ("| claim | p | floor | verdict |\n|---|---|---|---|\n| x | 0.01 | 0.005 | agrees |\n\n"
            "- A bullet that agrees\n  with p 0.01, floor 0.005.\n\nOne sentence agrees. Another has p 0.2 and a floor.\n")
    units = claim_units(text)
    assert units[0] == (3, "claim: x | p: 0.01 | floor: 0.005 | verdict: agrees")
    assert units[1][0] == 5 and "agrees with p 0.01, floor 0.005." in units[1][1]
    assert [u for _, u in units[2:]] == ["One sentence agrees.", "Another has p 0.2 and a floor."]
    flagged = [u for _, u in units if VERDICT.search(u) and not (MEASURE.search(u) and FLOOR.search(u))]
    assert flagged == ["One sentence agrees."]


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
