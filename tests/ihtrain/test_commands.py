"""The console scripts (issue 67, item 3): each ``ihlaw-*`` entry function runs its module's main
under run_cli, as ``python -m`` does: the exit code main returns, 130 on Ctrl-C, 2 on bad input.
Called in-process (the installed scripts are thin wrappers that call these functions)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import ihstats.base.schema
from ihtrain import commands

ROOT = Path(__file__).resolve().parents[2]


def _exit_code(monkeypatch, script: str, *args: str) -> int:
    """Run the console script ``script`` with ``args`` as its command line; its exit status."""
    monkeypatch.setattr(sys, "argv", [script, *args])
    with pytest.raises(SystemExit) as stop:
        getattr(commands, commands.entry_name(script))()
    return stop.value.code


def test_a_console_script_exits_with_the_code_main_returns(monkeypatch, capsys):
    run = ROOT / "data/reference_runs/bxc-cross/010c2516ce9e"
    assert _exit_code(monkeypatch, "ihlaw-schema", str(run), "--logs-only") == 0
    assert _exit_code(monkeypatch, "ihlaw-schema", str(ROOT / "no-such-run")) == 2
    assert "no such directory" in capsys.readouterr().err
    assert _exit_code(monkeypatch, "ihlaw-emergence", "--help") == 0  # argparse's own exit passes through


def test_a_console_script_turns_ctrl_c_into_130(monkeypatch, capsys):
    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(ihstats.base.schema, "main", interrupted)
    assert _exit_code(monkeypatch, "ihlaw-schema") == 130
    assert capsys.readouterr().err.strip() == "interrupted"


def test_a_console_script_shows_a_warning_once_on_one_line(monkeypatch, capsys):
    import warnings

    def warns() -> int:
        for _ in range(3):
            warnings.warn("the same thing\nover two lines", UserWarning)
        return 3

    monkeypatch.setattr(ihstats.base.schema, "main", warns)
    assert _exit_code(monkeypatch, "ihlaw-schema") == 3
    lines = [x for x in capsys.readouterr().err.splitlines() if "the same thing" in x]
    assert len(lines) == 1 and lines[0].startswith("warning: ")
