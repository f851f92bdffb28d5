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
