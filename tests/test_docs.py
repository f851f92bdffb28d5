"""The design lives in the repo: every reference to it resolves, and the files it names exist."""

import re
from pathlib import Path

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
