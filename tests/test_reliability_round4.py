"""Reliability round 4 (issue 64): one test per case class of the catalogue, each asserting the
clear outcome (one line, exit 2, a failed status) or the correct result.

Classes: G (the output guard every writing command uses), R (readers that trust nothing unhashed),
F (flags with no effect, fits over several grids, refits), M (messages: one line, exit 2, failed).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ihstats.base import io
from ihstats.base.cli_checks import (WRITTEN_RECORD, OutputPathError, check_out_dir, check_out_file, claim_folder)
from ihstats.base.contract import SchemaError
from ihstats.emergence import main as emergence_main
from ihstats.base.fileio import atomic_write_csv, atomic_write_text
from ihstats.base.ids import config_hash
from ihstats.base.series import read_series, series_id, shape_id
from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_grid, write_fake_run

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_RUN = sorted((ROOT / "data" / "reference_runs" / "bxc-law").glob("*/config.json"))[0].parent
SCORE_ARGS = ["--batch-size", "8", "--context", "32", "--probe-seqs", "12", "--threads", "1", "--no-progress"]


def _grid(path: Path, n: int = 2, seed0: int = 0) -> Path:
    runs = [(simulate_curve("sigmoid", "mixed", n=60, seed=seed0 + i), {"train.batch_size": 8 * (i + 1),
                                                                        "seed": seed0 + i}) for i in range(n)]
    write_fake_grid(path, runs)
    return path


def _one_line_exit_2(capsys, rc: int, *words: str) -> str:
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert all(w in err for w in words), err
    return err


def _rehash(run: Path, edit) -> None:
    """Edit a run's config.json and give it the run_id its edited config hashes to (so only the
    value checks, not the hash check, stand between the edit and a reader)."""
    meta = json.loads((run / "config.json").read_text())
    edit(meta)
    meta["run_id"] = config_hash(meta["config"])
    (run / "config.json").write_text(json.dumps(meta))


# ------------------------------------------------------------------------------- G: output guard
def test_g1_the_scorer_lag_tool_and_figure_script_ask_the_guard(tmp_path, capsys):
    from ihtrain import lag_pmf
    from ihtrain.score.cli import main as score_main
    from paper_figures.make import parse_args as figures_args

    grid = _grid(tmp_path / "g")
    with pytest.raises(SystemExit) as e:  # refused before any checkpoint loads (there is none here)
        score_main([str(tmp_path / "nowhere"), "--out", str(grid / "series"), *SCORE_ARGS])
    assert e.value.code == 2 and "lies in the grid directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # before the corpus is read
        lag_pmf.main(["--out", str(grid / "pmf.json")])
    assert e.value.code == 2 and "lies in the grid directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        lag_pmf.main(["--out", "/etc/ihlaw-pmf.json"])
    assert e.value.code == 2 and "system folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        figures_args(["--out", str(grid / "figs")])
    assert e.value.code == 2 and "lies in the grid directory" in capsys.readouterr().err
    assert sorted(p.name for p in grid.iterdir() if p.is_file()) == ["grid.json", "manifest.parquet"]


def test_g2_convert_never_writes_over_a_run_series_or_grid(tmp_path, capsys):
    from ihtrain.score.convert import main as convert_main

    grid = _grid(tmp_path / "g")
    run = next(p for p in grid.iterdir() if p.is_dir())
    before = (run / "config.json").read_bytes()
    _one_line_exit_2(capsys, convert_main([str(run), str(run)]), "holds the input")
    _one_line_exit_2(capsys, convert_main([str(run), str(grid / "hf")]), "lies in the grid directory")
    other = tmp_path / "other"
    write_fake_run(other, simulate_curve("sigmoid", seed=3))  # another run (a series reads as one too)
    _one_line_exit_2(capsys, convert_main([str(run), str(other)]), "is the run directory")
    assert (run / "config.json").read_bytes() == before and not (grid / "hf").exists()


def test_g3_single_file_outputs_are_refused_anywhere_in_a_run_or_grid(tmp_path, capsys):
    from ihstats.frontier.budget import main as budget_main

    grid = _grid(tmp_path / "g")
    run = next(p for p in grid.iterdir() if p.is_dir())
    _one_line_exit_2(capsys, emergence_main([str(grid), "-o", str(grid / "notes.csv")]), "lies in the grid directory")
    with pytest.raises(SystemExit) as e:
        budget_main([str(grid), "-o", str(run / "budget.csv")])
    assert e.value.code == 2 and "lies in the run directory" in capsys.readouterr().err
    with pytest.raises(OutputPathError, match="lies in the run directory"):  # ablate: only its own tables there
        check_out_file(run / "notes.csv", [run], allowed_in_run=("ablation.csv",))
    assert check_out_file(run / "ablation.csv", [run], allowed_in_run=("ablation.csv",)) == run / "ablation.csv"
    assert not (grid / "notes.csv").exists() and not (run / "budget.csv").exists()


def test_g4_a_default_output_folder_is_never_made_inside_a_grid(tmp_path, capsys, monkeypatch):
    grid = _grid(tmp_path / "g")
    monkeypatch.chdir(grid)  # results/emergence/... would land in the grid
    _one_line_exit_2(capsys, emergence_main(["."]), "lies in the grid directory", "run the command from outside")
    with pytest.raises(OutputPathError, match="lies in the grid directory"):
        check_out_dir("results/fit")
    assert not (grid / "results").exists()


def test_g5_result_files_are_atomic_and_never_written_through_a_symlink(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("keep")
    out = tmp_path / "fit"
    claim_folder(out)
    (out / "summary.csv").symlink_to(secret)
    with pytest.raises(OutputPathError, match="summary.csv .a symlink"):  # the guard refuses the folder
        check_out_dir(out)
    atomic_write_csv(out / "summary.csv", pd.DataFrame({"a": [1]}), index=False)  # a write replaces the link
    assert secret.read_text() == "keep" and not (out / "summary.csv").is_symlink()
    assert (out / "summary.csv").read_text() == "a\n1\n"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]  # no temporary file left
    # a fit's folder: every result file written through atomic_write (recorded), a rerun accepted
    assert "summary.csv" in (out / WRITTEN_RECORD).read_text().split("\n") and check_out_dir(out) == out


def test_g6_names_with_control_characters_are_refused(tmp_path, capsys):
    grid = _grid(tmp_path / "g")
    forged = tmp_path / "x\nsummary.csv"  # would forge a line of the written-files record
    _one_line_exit_2(capsys, emergence_main([str(grid), "-o", str(forged)]), "control character")
    with pytest.raises(OutputPathError, match="control character"):
        check_out_dir(tmp_path / "res\x1b[2J")
    with pytest.raises(ValueError, match="control character"):
        atomic_write_text(tmp_path / "a\rb.txt", "x")
    assert not forged.exists() and not list(tmp_path.glob("x*"))


def test_g7_folder_outputs_honour_the_per_file_record(tmp_path):
    out = tmp_path / "fit"
    claim_folder(out)
    atomic_write_text(out / "report.md", "ours")
    assert check_out_dir(out) == out
    (out / "mine.txt").write_text("the user's notes")  # a file the record does not list
    with pytest.raises(OutputPathError, match="holds mine.txt, which this package did not write"):
        check_out_dir(out)
    assert (out / "mine.txt").read_text() == "the user's notes"


# ------------------------------------------------------------------------------- R: readers
def _reference_copy(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(REFERENCE_RUN, run, ignore=shutil.ignore_patterns("checkpoints"))
    assert io.load_run(run).run_id  # the shipped run reads
    return run


@pytest.mark.parametrize("edit, words", [
    (lambda m: m.update(seed=m["seed"] + 1), "top-level seed"),
    (lambda m: m.update(n_params=m["n_params"] * 10), "n_params"),
    (lambda m: m.update(n_params_non_embedding=m["n_params_non_embedding"] + 1), "n_params_non_embedding"),
    (lambda m: m["config"]["train"].update(batch_size=True), "config.train.batch_size is True"),
])
def test_r1_unhashed_factors_are_cross_checked_against_the_hashed_config(tmp_path, edit, words):
    run = _reference_copy(tmp_path)
    _rehash(run, edit)
    with pytest.raises(SchemaError, match=words.replace(".", r"\.")) as e:
        io.load_run(run)
    assert "config.json" in str(e.value) and str(run) in str(e.value)


def _series(path: Path, steps=(10, 100), **edits) -> Path:
    """A scored series directory written by hand (the scorer's layout), edited by ``edits``."""
    rec = {"kind": "series", "run_id": "", "model": "m", "family": "gpt2", "B": 8, "C": 32,
           "revisions": [{"revision": f"step{s}", "step": s, "tokens": s * 256, "source": f"m/step{s}"} for s in steps],
           "probe": {"seed": 0}, "metrics": ["ps"], "dtype": "float32", "n_params": 20000,
           "n_params_non_embedding": 10000, "n_layer": 2, "n_head": 4, "d_model": 32, "versions": {},
           "created": "2026-01-01T00:00:00+00:00"}
    rec["run_id"] = series_id(rec)
    rec["shape_id"] = shape_id(rec)
    rec.update(edits)
    path.mkdir(parents=True)
    (path / "series.json").write_text(json.dumps(rec))
    rows = [(s, s * 256, "ps", l, h, 0.1) for s in (10, 100) for l in range(2) for h in range(4)]
    pd.DataFrame(rows, columns=["step", "tokens", "metric", "layer", "head", "value"]).to_parquet(
        path / "metrics.parquet", index=False)
    (path / "status.json").write_text(json.dumps({"status": "done", "step": 100}))
    return path


@pytest.mark.parametrize("edits, words", [
    ({"n_params_non_embedding": 15000}, "shape_id"),
    ({"n_params_non_embedding": 99999}, "exceeds n_params"),
    ({"n_layer": 12}, "shape_id"),
    ({"d_model": 4096}, "shape_id"),
    ({"B": True}, "key 'B' must be an integer"),
])
def test_r2_a_series_sidecars_counts_and_width_are_checked(tmp_path, edits, words):
    assert io.load_run(_series(tmp_path / "ok")).factors["N"] == 10000
    with pytest.raises(SchemaError, match=words):
        read_series(_series(tmp_path / "edited", **edits))


@pytest.mark.parametrize("level", [0.0, float("nan"), 5.0])
def test_r3_a_formed_level_the_trainer_would_refuse_is_refused_naming_the_run(tmp_path, capsys, level):
    run = _reference_copy(tmp_path)
    _rehash(run, lambda m: m["config"]["train"].update(emergence_threshold=level))
    rid = json.loads((run / "config.json").read_text())["run_id"]
    with pytest.raises(SchemaError, match=f"run {rid}.*emergence_threshold .the formed level."):
        io.load_run(run)
    _one_line_exit_2(capsys, emergence_main([str(run), "-o", str(tmp_path / "e.csv")]), rid, "formed level")


def test_r4_a_metric_value_outside_its_range_is_refused_naming_run_and_metric(tmp_path, capsys):
    run = tmp_path / "r"
    write_fake_run(run, simulate_curve("flat", seed=0))  # never forms
    m = pd.read_parquet(run / "metrics.parquet")
    m.loc[(m["metric"] == "ps") & (m["step"] == m["step"].max()), "value"] = 5.0  # a PS of 5.0 would form it
    m.to_parquet(run / "metrics.parquet", index=False)
    _one_line_exit_2(capsys, emergence_main([str(run), "-o", str(tmp_path / "e.csv")]),
                     str(run), "metric 'ps'", "outside its range [0, 1]")
    assert not (tmp_path / "e.csv").exists()


def test_r5_a_series_log_is_checked_against_its_revisions(tmp_path):
    s = _series(tmp_path / "s", steps=(10,))  # the log has step 100, no revision has
    with pytest.raises(SchemaError, match=r"step\(s\) \[100\] that no revision of series.json has"):
        io.load_run(s)
    with pytest.raises(SchemaError, match="tokens"):
        read_series(_series(tmp_path / "t", revisions=[{"revision": "step10", "step": 10, "tokens": 1,
                                                        "source": "m"}]))


def test_r6_steps_come_from_names_only_by_an_explicit_pattern(tmp_path):
    from ihtrain.score.load import ScoreError, resolve_revisions, step_of

    assert step_of("step1000") == 1000 and step_of("checkpoint-500") == 500
    for name in ("step100-ep2", "v2-step10", "main", "step", "global_step7"):
        with pytest.raises(ScoreError, match="pass --steps"):
            step_of(name)
    for name in ("step100-ep2", "step200-ep2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    with pytest.raises(ScoreError, match="'step100-ep2': no step in its name"):
        resolve_revisions(str(tmp_path), None, None)
    assert [r.step for r in resolve_revisions(str(tmp_path), None, [100, 200])] == [100, 200]


def test_r7_revisions_outside_the_model_folder_or_twice_by_symlink_are_refused(tmp_path):
    from ihtrain.score.load import ScoreError, resolve_revisions

    model, elsewhere = tmp_path / "model", tmp_path / "elsewhere"
    for d in (model / "step1", elsewhere / "step9"):
        d.mkdir(parents=True)
        (d / "config.json").write_text("{}")
    (model / "step2").symlink_to(model / "step1")
    with pytest.raises(ScoreError, match="'step1' and 'step2' are the same folder"):
        resolve_revisions(str(model), None, None)
    (model / "step2").unlink()
    (model / "step3").symlink_to(elsewhere / "step9")
    with pytest.raises(ScoreError, match="outside the model folder"):
        resolve_revisions(str(model), None, None)
    with pytest.raises(ScoreError, match="outside the model folder"):
        resolve_revisions(str(model), ["../elsewhere/step9"], [9])


def test_r7_a_revision_of_another_width_fails_the_series_in_one_line(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    from ihtrain.score.cli import main as score_main

    for step, width in ((1, 32), (2, 64)):
        cfg = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=width, vocab_size=300, n_positions=64,
                                      bos_token_id=None, eos_token_id=None)
        transformers.GPT2LMHeadModel(cfg).save_pretrained(tmp_path / "m" / f"step{step}")
    capsys.readouterr()  # transformers' own progress lines while saving
    out = tmp_path / "s"
    _one_line_exit_2(capsys, score_main([str(tmp_path / "m"), "--out", str(out), *SCORE_ARGS]),
                     "revision step2", "'d_model': 64", "one series is one model")
    assert json.loads((out / "status.json").read_text())["status"] == "failed"


def test_r8_one_scorer_per_series_folder(tmp_path, capsys):
    pytest.importorskip("transformers")
    from ihtrain.score.cli import main as score_main
    from ihtrain.score.scorer import series_lock
    from tests.ihtrain.score.conftest import save_revisions

    src = save_revisions(tmp_path / "m", "gpt2", (1, 2))
    out = tmp_path / "s"
    assert score_main([str(src), "--out", str(out), *SCORE_ARGS]) == 0
    capsys.readouterr()
    with series_lock(out):  # a first scorer still writing
        _one_line_exit_2(capsys, score_main([str(src), "--out", str(out), *SCORE_ARGS]), "another scorer")
    assert json.loads((out / "status.json").read_text())["status"] == "done"  # the first one's series intact


# ------------------------------------------------------------------------------- F: flags, mixes, refits
def test_f1_a_flag_with_no_effect_in_the_chosen_mode_is_refused(tmp_path, capsys):
    import analyses.fit_frontier as fit_frontier
    import analyses.fit_upt_law as fit_upt_law

    grid = _grid(tmp_path / "g")
    table = ROOT / "data" / "example_emergence.csv"
    cases = [
        (lambda: emergence_main([str(grid), "--threshold", "0.3"]), "--threshold 0.3: has no effect"),
        (lambda: emergence_main([str(grid), "--onset", "ps", "--metric", "ps"]), "--onset 'ps': has no effect"),
        (lambda: fit_upt_law.parse_args(["--runs", str(grid), "--threshold", "0.3"]), "--threshold 0.3"),
        (lambda: fit_upt_law.parse_args(["--emergence", str(table), "--onset", "ps"]), "--emergence gives the onsets"),
        (lambda: fit_frontier.parse_args(["--table", str(ROOT / "data" / "example_frontier.csv"), "--onset", "ps"]),
         "a given table holds its verdicts"),
    ]
    for call, words in cases:
        with pytest.raises(SystemExit) as e:
            call()
        assert e.value.code == 2 and words in capsys.readouterr().err


def test_f2_a_fit_over_several_grids_names_every_run_it_leaves_out_and_its_onset(tmp_path, capsys):
    import analyses.fit_upt_law as fit_upt_law

    a, b = _grid(tmp_path / "a"), _grid(tmp_path / "b", seed0=10)
    for run in (p for p in a.iterdir() if p.is_dir()):  # grid a logs the in-distribution PS, b does not
        m = pd.read_parquet(run / "metrics.parquet")
        pd.concat([m, m[m["metric"] == "ps"].assign(metric="ps_indist")]).to_parquet(run / "metrics.parquet")
    args = fit_upt_law.parse_args(["--runs", str(a), str(b), "--out", str(tmp_path / "fit")])
    table, _ = fit_upt_law.load_table(args)
    cap = capsys.readouterr()
    left = [p.name for p in b.iterdir() if p.is_dir()]
    assert set(table["run_id"]) == {p.name for p in a.iterdir() if p.is_dir()}
    assert all(f"run {rid}" in cap.err and "left out of the fit" in cap.err for rid in left)
    assert "onsets from the ps_indist curves" in cap.out


def test_f3_a_refit_sets_the_earlier_fits_files_aside_and_loses_nothing(tmp_path, capsys):
    out = tmp_path / "fit"
    claim_folder(out)
    for name in ("summary.csv", "onset/product.csv", "loo_sigma.csv"):  # the first fit's files
        atomic_write_text(out / name, "old")
    claim_folder(out)  # the refit, before its first write (it may still fail: nothing is lost)
    atomic_write_text(out / "summary.csv", "new")
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == [WRITTEN_RECORD, "earlier_run/loo_sigma.csv", "earlier_run/onset/product.csv",
                     "earlier_run/summary.csv", "summary.csv"]
    assert (out / "earlier_run" / "summary.csv").read_text() == "old" and not (out / "onset").exists()
    assert "moved 3 file(s) of the earlier run here into earlier_run/" in capsys.readouterr().out
    assert check_out_dir(out) == out  # the set-aside files are recorded: the folder stays the package's
    claim_folder(out)  # the next refit: the second fit's files are set aside, the first's go
    assert (out / "earlier_run" / "summary.csv").read_text() == "new"
    assert not (out / "earlier_run" / "loo_sigma.csv").exists()
    (out / WRITTEN_RECORD).write_text("../secret.txt\n")  # an edited record never reaches outside
    (tmp_path / "secret.txt").write_text("keep")
    claim_folder(out)
    assert (tmp_path / "secret.txt").read_text() == "keep"


# ------------------------------------------------------------------------------- M: messages
def test_m1_a_damaged_checkpoint_is_one_line_exit_2_and_a_failed_series(tmp_path, capsys):
    pytest.importorskip("transformers")
    from ihtrain.score.cli import main as score_main
    from tests.ihtrain.score.conftest import save_revisions

    src = save_revisions(tmp_path / "m", "gpt2", (1, 2))
    weights = src / "step2" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])  # truncated: an absurd header for its length
    out = tmp_path / "s"
    _one_line_exit_2(capsys, score_main([str(src), "--out", str(out), *SCORE_ARGS]), "step2", "cannot load")
    status = json.loads((out / "status.json").read_text())
    assert status["status"] == "failed" and "step2" in status["reason"]
    assert sorted(pd.read_parquet(out / "metrics.parquet")["step"].unique()) == [1]  # the good one kept


def test_m2_odd_names_links_and_specs_are_one_line(tmp_path, capsys):
    from ihtrain.errors import ConfigError
    from ihtrain.grid.spec import parse_spec
    from ihtrain.score.cli import main as score_main

    model = tmp_path / "m"
    model.mkdir()
    (model / "loop").symlink_to(model / "loop")
    (model / "dangling").symlink_to(tmp_path / "gone")
    _one_line_exit_2(capsys, score_main([str(model), "--out", str(tmp_path / "s"), *SCORE_ARGS]),
                     "no checkpoint directories")
    _one_line_exit_2(capsys, score_main([str(model), "--revisions", "x" * 300, "--steps", "1", "--out",
                                         str(tmp_path / "s"), *SCORE_ARGS]), "x" * 20)
    _one_line_exit_2(capsys, score_main([str(model), "--revisions", "loop", "--steps", "1", "--out",
                                         str(tmp_path / "s"), *SCORE_ARGS]), "loop")
    with pytest.raises(ConfigError, match="base: expected a table, got 'preset'"):
        parse_spec({"name": "g", "base": "preset", "axes": {"train.lr": [1e-3]}})
    assert not (tmp_path / "s" / "status.json").exists() or json.loads(
        (tmp_path / "s" / "status.json").read_text())["status"] == "failed"
    assert math.isfinite(float(np.float64(1.0))) and os.sep == "/"  # POSIX paths assumed above (symlinks)
