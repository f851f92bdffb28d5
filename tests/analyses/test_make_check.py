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
