"""ihstats.base.progress: bars that suit a log file, step lines, warnings once (issue 56, item 1)."""

from __future__ import annotations

import io

import pytest

from ihstats.base import progress


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_line_writer_turns_redraws_into_rate_limited_lines():
    out, clock = io.StringIO(), FakeClock()
    w = progress.LineWriter(out, interval=10.0, clock=clock)
    w.write("\rbar 1/100")  # the first state prints at once
    for i in range(2, 50):  # redraws within the interval: held, only the latest kept
        clock.t += 0.1
        w.write(f"\rbar {i}/100   ")
    clock.t = 10.5
    w.write("\rbar 60/100")
    w.write("\rbar 100/100")
    w.write("\n")  # a bar's close: what is pending prints
    assert out.getvalue() == "bar 1/100\nbar 60/100\nbar 100/100\n"
    assert "\r" not in out.getvalue()


def test_bar_in_a_log_file_writes_plain_lines(monkeypatch):
    monkeypatch.setenv("IHLAW_PROGRESS", "1")
    out = io.StringIO()  # not a TTY: a log file
    bar = progress.bar(total=1000, desc="grid", stream=out)
    for _ in range(1000):
        bar.update(1)
    bar.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert 1 <= len(lines) <= 3 and lines[-1].startswith("grid: 100%")


def test_bar_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("IHLAW_PROGRESS", "0")
    out = io.StringIO()
    bar = progress.bar(total=10, desc="x", stream=out)
    bar.update(10)
    bar.close()
    assert out.getvalue() == "" and not progress.enabled()


def test_warn_once_prints_a_warning_once(capsys):
    msg = "a warning only test_progress gives"
    assert progress.warn_once(msg) and not progress.warn_once(msg)
    assert capsys.readouterr().err.count(msg) == 1


@pytest.mark.parametrize("show", [True, False])
def test_a_fit_says_what_it_samples(capsys, monkeypatch, show):
    pm = pytest.importorskip("pymc")
    from ihstats import _bayes

    monkeypatch.setenv("IHLAW_PROGRESS", "1" if show else "0")
    seen, real = {}, pm.sample
    monkeypatch.setattr(pm, "sample", lambda **kw: (seen.update(kw), real(**kw))[1])
    with pm.Model() as m:
        pm.Normal("x")
    _bayes.sample(m, draws=20, tune=20, chains=1, seed=0, log_likelihood=False, label="a toy")
    assert "sampling a toy: 1 chain(s) x (20 tune + 20 draws)" in capsys.readouterr().err
    assert (seen["progressbar"] is not False) is show  # PyMC's own progress (True or a narrower style), unless IHLAW_PROGRESS=0


def test_cli_warnings_show_each_text_once_across_filter_resets(capsys):
    import warnings

    with progress.cli_warnings():
        for _ in range(3):  # three fits, each resetting the filters as PyMC does
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
            warnings.warn("formed = False in 2 row(s)", UserWarning)
    err = capsys.readouterr().err
    assert err == "warning: formed = False in 2 row(s)\n"


def test_the_interval_off_a_terminal_can_be_set(monkeypatch):
    monkeypatch.setenv("IHLAW_PROGRESS_INTERVAL", "0.5")
    assert progress.log_interval() == 0.5 and progress.LineWriter(io.StringIO()).interval == 0.5
    monkeypatch.setenv("IHLAW_PROGRESS_INTERVAL", "soon")  # not a number: the default
    assert progress.log_interval() == progress.LOG_INTERVAL_S
    monkeypatch.delenv("IHLAW_PROGRESS_INTERVAL")
    assert progress.log_interval() == progress.LOG_INTERVAL_S == 10.0
