"""Reliability round 3 (issue 50, class 3, the analyses' results folders): a results folder the
package did not make is refused, so a user's files in it are never overwritten; one the package
made (an interrupted run's included) is reused."""

import subprocess
import sys
from pathlib import Path

import pytest

from ihstats.base.cli_checks import WRITTEN_RECORD, OutputPathError, check_out_dir, claim_folder
from ihstats.base.fileio import atomic_write_text

ROOT = Path(__file__).resolve().parents[1]


def test_a_users_folder_is_refused_and_a_package_folder_reused(tmp_path):
    users = tmp_path / "mine"
    users.mkdir()
    (users / "notes.txt").write_text("my notes")
    with pytest.raises(OutputPathError, match=r"mine: holds notes.txt, which this package did not write"):
        check_out_dir(users)
    assert (users / "notes.txt").read_text() == "my notes" and not (users / WRITTEN_RECORD).exists()
    new = check_out_dir(tmp_path / "results" / "fit")
    assert not new.exists()  # a check writes nothing: bad input later leaves no folder behind
    claim_folder(new)  # what a command does before its first write
    assert (new / WRITTEN_RECORD).is_file()
    atomic_write_text(new / "report.md", "a first, interrupted run")  # recorded, as every result file
    assert check_out_dir(new) == new  # the package's folder: a rerun may write there
    empty = tmp_path / "empty"
    empty.mkdir()
    assert check_out_dir(empty) == empty  # an empty folder holds nothing to lose


def test_an_analysis_script_refuses_a_users_folder_before_any_work(tmp_path):
    users = tmp_path / "mine"
    users.mkdir()
    (users / "summary.md").write_text("mine")
    r = subprocess.run([sys.executable, str(ROOT / "analyses" / "fit_upt_law.py"), "--emergence",
                        str(ROOT / "data" / "example_emergence.csv"), "--fast", "--out", str(users)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 2 and "which this package did not write" in r.stderr, r.stderr[-800:]
    assert (users / "summary.md").read_text() == "mine"
    ours = tmp_path / "ours"
    for _ in range(2):  # a command's own folder is reused by the next run
        r = subprocess.run([sys.executable, str(ROOT / "analyses" / "fit_upt_law.py"), "--emergence",
                            str(ROOT / "data" / "example_emergence.csv"), "--fast", "--draws", "50", "--tune", "50",
                            "--out", str(ours)], capture_output=True, text=True, cwd=tmp_path, timeout=600)
        assert r.returncode == 0, r.stderr[-800:]
    assert (ours / WRITTEN_RECORD).is_file() and (ours / "report.md").is_file()
