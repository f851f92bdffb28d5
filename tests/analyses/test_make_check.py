"""paper_figures/make.py --check says whether regenerated CSVs are bit-identical and, when not, why
(issue 68): the versions, and the code changed since the commit constraints.txt records."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from paper_figures import versions  # noqa: E402
from paper_figures.make import figure_of  # noqa: E402


def test_constraints_record_the_commit_and_the_reason_names_it(tmp_path):
    if not versions.made_at_commit():
        pytest.skip("not a git checkout: no commit to record")
    versions.write_constraints(tmp_path)
    commit = versions.recorded_commit(tmp_path)
    assert commit == versions.made_at_commit() and len(commit) == 40
    why = versions.why_not_identical(tmp_path)
    assert "versions: the same as recorded" in why and "code: the same commit" in why
    assert "byte-identical" in why


def test_figures_without_a_recorded_commit_say_so(tmp_path):
    (tmp_path / versions.FILE).write_text("# python==3.11.7\n")
    assert versions.recorded_commit(tmp_path) == ""
    assert "record no commit" in versions.why_not_identical(tmp_path)


def test_a_csv_belongs_to_the_longest_figure_name_it_starts_with():
    assert figure_of("upt_law_default_law") == "upt_law_default" and figure_of("upt_law_params") == "upt_law"
    assert figure_of("frontier_markov_cells") == "frontier_markov" and figure_of("nothing") is None


def test_only_redraws_its_rows_and_keeps_every_other_figure_in_the_index(tmp_path):
    import argparse
    import shutil

    from paper_figures.make import REGISTRY, earlier_index, write_index
    shutil.copy(ROOT / "paper_figures/figures/INDEX.md", tmp_path / "INDEX.md")
    header, before = earlier_index(tmp_path / "INDEX.md")
    assert set(before) == set(REGISTRY) and header
    args = argparse.Namespace(full=False, seed=3, only=["mechanism"], argv=["--only", "mechanism", "--fast"])
    redrawn = {"name": "mechanism", "status": "skipped", "source": "-", "command": "c", "note": "no data",
               "seconds": 0.5}
    write_index(tmp_path, [redrawn], args)
    header_after, after = earlier_index(tmp_path / "INDEX.md")
    assert list(after) == list(REGISTRY)  # every figure, in the registry's order
    assert after["mechanism"]["row"].startswith("| mechanism | skipped |")
    assert all(after[n] == before[n] for n in REGISTRY if n != "mechanism")
    assert header_after.startswith(header.rstrip(".")) and "then mechanism by" in header_after
