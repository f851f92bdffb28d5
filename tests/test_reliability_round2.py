"""Reliability round 2 (issue 38): each class of silent wrong answer, closed as a class. Every case
asserts a clear error (one line naming the flag, field or file) or the correct result; the cases go
beyond the issue's examples. Training is cpu-smoke sized, on one thread."""

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ihstats.base.cli_checks import COUNT, PROBABILITY_OPEN, OutputPathError, Range, check_args, check_out_dir
from ihstats.law.data import prepare
from ihstats.law.spec import UPTLawError, UPTLawSpec
from ihstats.tables import formed_column, numeric_column

torch = pytest.importorskip("torch")

from ihtrain.config import ConfigError, resolve  # noqa: E402
from ihtrain.grid.cli import write_grid_json  # noqa: E402
from ihtrain.grid.status import checked_status  # noqa: E402
from ihtrain.grid.spec import load_spec, parse_spec  # noqa: E402
from ihtrain.run.files import changed_settings, resume_threads  # noqa: E402
from ihtrain.run.train import main as train_main, train_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def script(name: str):
    """An analyses/ script as a module (its parse_args checks every flag before any work)."""
    spec = importlib.util.spec_from_file_location(f"analyses_{name}", ROOT / "analyses" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def smoke(cache: Path, **overrides):
    return resolve("cpu-smoke", overrides={"data.cache_dir": str(cache), "train.threads": 1, **overrides})


@pytest.fixture(scope="module")
def done_run(tmp_path_factory, smoke_cache):
    """One finished cpu-smoke run (40 updates), copied by the tests that damage it."""
    out = tmp_path_factory.mktemp("r2") / "run"
    assert train_run(smoke(smoke_cache), out, progress=False, make_figures=False)["status"] == "done"
    return out


def copy_run(src: Path, dst: Path, status: str | None = None) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".run.lock"))
    if status:  # e.g. "running": as a Ctrl-C leaves it, resumable from last.pt
        st = json.loads((dst / "status.json").read_text())
        st.update(status=status, reason="interrupted", stop_reason="interrupted")
        (dst / "status.json").write_text(json.dumps(st))
    return dst


# ------------------------------------------------------------- 1. numeric options and their ranges
@pytest.mark.parametrize("field, value", [
    ("train.emergence_threshold", "-1"), ("train.emergence_threshold", "0"), ("train.emergence_threshold", "1.5"),
    ("train.threads", "-1"), ("train.checkpoint_seconds", "0"), ("train.checkpoint_seconds", "inf"),
    ("data.markov.zipf_alpha", "0"), ("data.markov.n_groups", "-1"), ("data.markov.entropy_rate", "-0.5"),
    ("data.markov.within_similarity", "1.5"), ("data.max_corpus_chars", "-1"), ("data.seminatural.top_v", "0"),
    ("metrics.val_seqs", "0"),
])
def test_config_field_outside_its_range_is_refused_by_name(field, value):
    with pytest.raises(ConfigError, match=rf"^{field.replace('.', '[.]')}: must be"):
        resolve("cpu-smoke", overrides={field: value})


def test_until_emergence_with_negative_threshold_never_starts(tmp_path, capsys):
    """The issue's example ended "done" with crossing 0; now nothing is written."""
    rc = train_main(["--preset", "cpu-smoke", "--set", "train.budget=until-emergence", "--set",
                     "train.emergence_threshold=-1", "--set", "train.max_steps=300", "--out", str(tmp_path / "r")])
    assert rc == 2 and "train.emergence_threshold: must be in (0, 1) (the formed level, contract.formed_level), got -1.0" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("name, argv, message", [
    ("fit_upt_law", ["--target-accept", "1.5"], "--target-accept: must be a finite number in (0, 1), got 1.5"),
    ("fit_upt_law", ["--draws", "0"], "--draws: must be an integer >= 1, got 0"),
    ("fit_upt_law", ["--chains", "-2"], "--chains: must be an integer >= 1"),
    ("fit_upt_law", ["--tune", "-1"], "--tune: must be an integer >= 0"),
    ("fit_upt_law", ["--hdi-prob", "1"], "--hdi-prob: must be a finite number in (0, 1), got 1.0"),
    ("fit_upt_law", ["--hdi-prob", "nan"], "--hdi-prob: must be a finite number in (0, 1), got nan"),
    ("fit_frontier", ["--draws", "0"], "--draws: must be an integer >= 1"),
    ("fit_frontier", ["--hdi-prob", "0"], "--hdi-prob: must be a finite number in (0, 1)"),
    ("ablation_tests", ["--n-possible", "-1"], "--n-possible: must be an integer >= 1, got -1"),
    ("ablation_tests", ["--alpha", "1.2"], "--alpha: must be a finite number in (0, 1)"),
    ("ablation_tests", ["--n-boot", "0"], "--n-boot: must be an integer >= 1"),
    ("ablation_tests", ["--power-effect", "-0.2"], "--power-effect: must be a finite number > 0"),
    ("validate_law", ["--runs", "G", "--cv", "cell", "--draws", "0"], "--draws: must be an integer >= 1, got 0"),
    ("validate_law", ["--runs", "G", "--cv", "cell", "--chains", "-1"], "--chains: must be an integer >= 1"),
    ("natural_repeats", ["--windows", "1"], "--windows: must be an integer >= 2, got 1"),
])
def test_analysis_flag_outside_its_range_stops_before_work(name, argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        script(name).parse_args([*argv, "--out", str(tmp_path / "o")])
    assert e.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("module, argv, message", [
    ("ihstats.emergence", ["RUNS", "--min-rise", "-1"], "--min-rise: must be a finite number > 0, got -1.0"),
    ("ihstats.emergence", ["RUNS", "--level", "1.5"], "--level: must be a finite number in (0, 1)"),
    ("ihstats.emergence", ["RUNS", "--min-log-bf", "-3"], "--min-log-bf: must be a finite number >= 0"),
    ("ihstats.emergence", ["RUNS", "--min-rise-sd", "0"], "--min-rise-sd: must be a finite number > 0"),
    ("ihstats.law.predict", ["--batch-size", "0.5", "--context", "64"], "--batch-size: must be a finite number >= 1"),
    ("ihstats.law.predict", ["--batch-size", "16", "--context", "1"], "--context: must be a finite number >= 2"),
    ("ihstats.law.predict", ["--batch-size", "16", "--context", "64", "--hdi-prob", "1"], "--hdi-prob: must be"),
    ("ihtrain.ablate.cli", ["RUN", "--top-frac", "1.5"], "--top-frac: must be a finite number in (0, 1]"),
    ("ihtrain.ablate.cli", ["RUN", "--shots", "0"], "--shots: must be an integer >= 1"),
    ("ihtrain.ablate.cli", ["RUN", "--threads", "-1"], "--threads: must be an integer >= 0 (0: torch's default)"),
    ("ihstats.frontier.budget", ["GRID", "--ratio", "1"], "--ratio: must be a finite number > 1, got 1.0"),
    ("ihstats.frontier.budget", ["GRID", "--cap", "nan"], "--cap: must be a finite number >= 1, got nan"),
    ("ihstats.concentration", ["GRID", "--level", "0", "--out", "O"], "--level: must be a finite number in (0, 1]"),
    ("ihstats.concentration", ["GRID", "--frac", "2", "--out", "O"], "--frac: must be a finite number in (0, 1]"),
])
def test_module_cli_flag_outside_its_range_stops_before_reading(module, argv, message, capsys):
    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as e:
        main(argv)  # RUNS / RUN do not exist: the range check comes first
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_range_rejects_what_has_no_meaning():
    assert not COUNT.contains(1.5) and not COUNT.contains(0) and COUNT.contains(3)
    assert not PROBABILITY_OPEN.contains(float("nan")) and not Range().contains(float("inf"))
    assert not Range(0).contains("x") and Range(0, 1, hi_open=True).describe() == "a finite number in [0, 1)"
    ns, p = argparse.Namespace(draws=None, alpha=0.5), argparse.ArgumentParser()
    check_args(p, ns, {"draws": COUNT, "alpha": PROBABILITY_OPEN})  # None: not given, not checked


# ------------------------------------------------------------------ 2. paths that escape or collide
@pytest.mark.parametrize("name", ["../../../x", "..", ".", "a/b", "a\\b", ""])
def test_a_run_name_is_a_name_not_a_path(name):
    with pytest.raises(ConfigError, match=r"^name: must be a plain name"):
        resolve("cpu-smoke", overrides={"name": name})


@pytest.mark.parametrize("name", ["..", ".", "a/b"])
def test_a_grid_name_is_a_name_not_a_path(name):
    with pytest.raises(ConfigError, match=r"name: a non-empty string that is a plain name is required"):
        parse_spec({"name": name, "base": {"preset": "cpu-smoke"}, "axes": {"seed": [0, 1]}})


def test_fit_upt_law_out_holding_its_input_is_refused_before_anything_is_written(tmp_path, capsys):
    grid = tmp_path / "G"
    grid.mkdir()
    (grid / "summary.csv").write_text("run_id\nabc\n")
    for out in (grid, tmp_path):  # the grid itself, and a folder above it
        with pytest.raises(SystemExit) as e:
            script("fit_upt_law").parse_args(["--runs", str(grid), "--out", str(out)])
        assert e.value.code == 2 and "holds the input" in capsys.readouterr().err
    assert (grid / "summary.csv").read_text() == "run_id\nabc\n"


def test_fit_upt_law_default_output_is_under_results_never_the_data_folder():
    mod = script("fit_upt_law")
    args = mod.parse_args(["--runs", "data/reference_runs/bxc-markov"])
    assert Path(args.out) == Path("results/upt_law/bxc-markov")
    assert Path(mod.parse_args(["--emergence", "data/example_emergence.csv"]).out) == \
        Path("results/upt_law/example_emergence")


@pytest.mark.parametrize("name", ["fit_upt_law", "fit_frontier", "ablation_tests"])
def test_out_that_is_a_file_or_under_a_file_is_one_line(name, tmp_path, capsys):
    f = tmp_path / "f.txt"
    f.write_text("x")
    for out, why in ((f, "is a file"), (f / "sub", f"lies under the file {f}")):
        with pytest.raises(SystemExit) as e:
            script(name).parse_args(["--out", str(out)])
        err = capsys.readouterr().err
        assert e.value.code == 2 and f"--out {out}: {why}" in err and "Traceback" not in err


def test_ablate_out_must_be_a_csv_path(tmp_path, capsys):
    from ihtrain.ablate.cli import main as ablate_main
    f = tmp_path / "f"
    f.write_text("x")
    for out, why in ((tmp_path, "it is a folder"), (f / "a.csv", "lies under a file")):
        with pytest.raises(SystemExit) as e:
            ablate_main(["RUN", "--out", str(out)])  # checked before the run is read
        assert e.value.code == 2 and f"--out {out}: give a CSV file path" in capsys.readouterr().err


def test_train_out_under_a_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("x")
    assert train_main(["--preset", "cpu-smoke", "--out", str(f / "run")]) == 2
    assert capsys.readouterr().err == f"error: --out {f / 'run'}: lies under the file {f}; give a folder (it is " \
                                      f"created when missing)\n"
    with pytest.raises(OutputPathError, match="is a file"):
        check_out_dir(f)


# ----------------------------------------------------------- 3. directories that are not what they claim
def test_only_selects_by_cell_coordinates_or_says_why_ids_differ():
    from ihtrain.grid.plan import select_runs
    runs = parse_spec({"name": "g", "base": {"preset": "cpu-smoke"},
                       "axes": {"train.batch_size": [8, 16], "seed": [0, 1]}}).expand()
    picked = select_runs(runs, "train.batch_size=16")
    assert picked == {r.run_id for r in runs if r.config.train.batch_size == 16} and len(picked) == 2
    assert select_runs(runs, "train.batch_size=16,seed=1") == {r.run_id for r in runs
                                                               if r.config.train.batch_size == 16 and r.config.seed == 1}
    with pytest.raises(ConfigError, match="--only: train.context is not an axis of this grid"):
        select_runs(runs, "train.context=32")
    with pytest.raises(ConfigError, match="--only: no run of this grid has train.batch_size=32"):
        select_runs(runs, "train.batch_size=32")
    with pytest.raises(ConfigError, match="ids hash the whole config: another --set gives other ids"):
        select_runs(runs, "2500654b3228")


def test_grid_dir_refuses_other_settings(tmp_path):
    spec = parse_spec({"name": "g", "base": {"preset": "cpu-smoke", "train.max_steps": 400},
                       "axes": {"seed": [0, 1]}})
    write_grid_json(spec, spec.expand(), tmp_path)
    same = parse_spec({"name": "g", "base": {"preset": "cpu-smoke", "train.max_steps": 400}, "axes": {"seed": [0, 1]}})
    write_grid_json(same, same.expand(), tmp_path)  # the same settings: fine (a resume)
    other = parse_spec({"name": "g", "base": {"preset": "cpu-smoke", "train.max_steps": 400},
                        "axes": {"seed": [0, 1]}})
    other.override_base({"train.max_steps": 50})
    with pytest.raises(ConfigError, match=r"was made with other settings \(train.max_steps: 400 then, 50 now"):
        write_grid_json(other, other.expand(), tmp_path)
    more = parse_spec({"name": "g", "base": {"preset": "cpu-smoke", "train.max_steps": 400}, "axes": {"seed": [0, 1, 2]}})
    with pytest.raises(ConfigError, match="2 runs then, 3 now, 1 of them new"):
        write_grid_json(more, more.expand(), tmp_path)
    assert len(json.loads((tmp_path / "grid.json").read_text())["runs"]) == 2  # never rewritten
    assert changed_settings({"runs": [{"run_id": "a"}]}, {}, ["a"]) is None


def test_done_run_with_empty_or_edited_config_is_not_counted_done(done_run, tmp_path):
    run_id = json.loads((done_run / "config.json").read_text())["run_id"]
    assert checked_status(copy_run(done_run, tmp_path / "ok" / run_id))["status"] == "done"
    empty = copy_run(done_run, tmp_path / "empty" / run_id)
    (empty / "config.json").write_text("")
    st = checked_status(empty)
    assert st["status"] == "unreadable" and "config.json: empty" in st["reason"]
    edited = copy_run(done_run, tmp_path / "edited" / run_id)
    rec = json.loads((edited / "config.json").read_text())
    rec["config"]["seed"] = 7
    (edited / "config.json").write_text(json.dumps(rec))
    st = checked_status(edited)
    assert st["status"] == "unreadable" and f"not its run_id {run_id}" in st["reason"]
    moved = copy_run(done_run, tmp_path / "moved" / "0123456789ab")
    assert f"holds run {run_id}, not 0123456789ab" in checked_status(moved)["reason"]


@pytest.mark.parametrize("log", ["metrics.parquet", "train.parquet"])
def test_resume_with_a_deleted_log_is_refused_not_continued_with_a_gap(log, done_run, tmp_path, capsys, smoke_cache):
    run = copy_run(done_run, tmp_path / "r", status="running")
    (run / log).unlink()
    rc = train_main(["--preset", "cpu-smoke", "--set", f"data.cache_dir={smoke_cache}", "--set", "train.threads=1",
                     "--out", str(run), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{run / log}: missing, but checkpoints/last.pt is at update 40" in err


def test_resume_with_a_cut_log_is_refused(done_run, tmp_path, smoke_cache):
    run = copy_run(done_run, tmp_path / "r", status="running")
    m = pd.read_parquet(run / "metrics.parquet")
    m[m["step"] > 0].to_parquet(run / "metrics.parquet")  # the first evaluation's rows lost
    from ihstats.base.fileio import UnreadableFile
    with pytest.raises(UnreadableFile, match=r"metrics.parquet: starts at update \d+, not 0"):
        train_run(smoke(smoke_cache), run, progress=False, make_figures=False)


def test_schema_check_finds_logs_that_lost_their_early_rows(done_run, tmp_path):
    from ihstats.base.schema import check_run_dir
    rid = json.loads((done_run / "config.json").read_text())["run_id"]
    for log in ("metrics", "train"):
        run = copy_run(done_run, tmp_path / log / rid)
        frame = pd.read_parquet(run / f"{log}.parquet")
        frame[frame["step"] > 20].to_parquet(run / f"{log}.parquet")  # resumed at 20 after the file was deleted
        assert any(f"{log}.parquet: starts at update" in p and "early rows are missing" in p
                   for p in check_run_dir(run)), log
    assert check_run_dir(copy_run(done_run, tmp_path / "whole" / rid)) == []


def test_truncated_or_einval_checkpoint_is_a_named_unreadable_file(done_run, tmp_path, monkeypatch):
    from ihtrain.run import checkpoint
    from ihstats.base.fileio import UnreadableFile
    last = copy_run(done_run, tmp_path / "r") / "checkpoints" / "last.pt"
    last.write_bytes(last.read_bytes()[:1000])
    with pytest.raises(UnreadableFile, match="last.pt: not a readable PyTorch checkpoint"):
        checkpoint.load_checkpoint(last)

    def einval(*a, **k):  # what torch raised on the truncated file
        raise OSError(22, "Invalid argument")
    monkeypatch.setattr(checkpoint.torch, "load", einval)
    with pytest.raises(UnreadableFile, match=r"OSError: \[Errno 22\] Invalid argument"):
        checkpoint.load_checkpoint(last)


# ----------------------------------------------------------------- 4. one rule for the fits' inputs
def law_table(**cols):
    t = pd.DataFrame({"run_id": [f"r{i}" for i in range(6)], "B": [16, 16, 32, 32, 64, 64],
                      "C": [16, 32, 16, 32, 16, 32], "onset": [900.0, 500, 600, 300, 400, 200],
                      "onset_lo": [800.0, 400, 500, 250, 300, 150], "onset_hi": [1000.0, 600, 700, 350, 500, 250],
                      "censored": [False] * 6, "last_step": [2000] * 6})
    for k, v in cols.items():
        t[k] = v
    return t


def test_uncensored_run_without_its_interval_stops_the_fit():
    t = law_table()
    t.loc[2, "onset_hi"] = np.nan
    with pytest.raises(UPTLawError, match=r"onset_lo, onset_hi: blank or not finite on uncensored 1 row\(s\) "
                                          r"\(run_id \['r2'\]\).*--no-measurement-error"):
        prepare(t, UPTLawSpec())
    assert len(prepare(t, UPTLawSpec(measurement_error=False)).y) == 6  # without it the interval is not needed


def test_text_in_onset_is_named_as_text():
    t = law_table()
    t["onset"] = t["onset"].astype(object)
    t.loc[1, "onset"] = "about 500"
    with pytest.raises(UPTLawError, match=r"onset: not a number in 1 row\(s\) \(run_id \['r1'\]\), values \['about 500'\]"):
        prepare(t, UPTLawSpec())


def test_formed_false_with_an_onset_is_fitted_as_not_formed():
    t = law_table(formed=[True, True, False, True, True, True])
    with pytest.warns(UserWarning, match=r"formed = False with an uncensored onset in 1 row\(s\) \(run_id \['r2'\]\)"):
        data = prepare(t, UPTLawSpec())
    assert data.censored.tolist() == [False, False, True, False, False, False]
    assert data.y[2] == pytest.approx(np.log(2000))  # censored at last_step, not at its onset 600


def test_formed_on_a_censored_run_is_a_contradiction():
    t = law_table(formed=[True] * 6)
    t.loc[0, "censored"] = True
    with pytest.raises(UPTLawError, match=r"formed = True on a censored run in 1 row\(s\) \(run_id \['r0'\]\)"):
        prepare(t, UPTLawSpec())


def test_frontier_and_ablation_tests_apply_the_same_rule():
    from ihstats.frontier.data import prepare
    from ihstats.frontier.spec import FrontierSpec
    from ihstats.ablation.results import run_ablation_tests
    t = pd.DataFrame({"frequency": [0.5, 0.5, 0.9, 0.9], "reliability": [0.5, 0.9, 0.5, 0.9],
                      "formed": [False, False, False, True], "censored": [True, False, True, False]})
    with pytest.warns(UserWarning, match="formed = False with an uncensored onset"):
        cells = prepare(t, FrontierSpec()).table
    assert cells["n_formed"].tolist() == [0, 0, 0, 1]  # the uncensored-but-not-formed run is not formed
    bad = t.assign(frequency=["0.5", "high", 0.9, 0.9])
    with pytest.raises(ValueError, match=r"frequency: not a number in 1 row\(s\) \(table row \[2\]\), values \['high'\]"), \
            pytest.warns(UserWarning, match="formed = False"):  # the verdict is read before the knobs
        prepare(bad, FrontierSpec())
    ab = pd.read_csv(ROOT / "data" / "example_ablation.csv").astype({"value": object})
    ab.loc[3, "value"] = "n/a"
    with pytest.raises(ValueError, match=r"value: not a number in 1 row\(s\) \(table row \[4\]\), values \['n/a'\]"):
        run_ablation_tests(ab, n_resamples=9, n_boot=9)


def test_formed_column_needs_one_of_its_columns():
    with pytest.raises(ValueError, match="formed, censored: the table needs one of them"):
        formed_column(pd.DataFrame({"x": [1]}))
    assert np.isnan(numeric_column(pd.DataFrame({"v": ["1", ""]}), "v")[1])  # blank: NaN, the caller decides


# ------------------------------------------------------------------------------------ 5. predict
def predict(*args):
    return subprocess.run([sys.executable, "-m", "ihstats.law.predict", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_predict_checks_both_laws_alike_and_shows_every_interval():
    r = predict("--law", "published", "--batch-size", "1e30", "--context", "1e30")
    assert r.returncode == 2 and "the published law predicts 1.14e-24 updates, not a usable prediction" in r.stderr
    r = predict("--law", "published", "--batch-size", "512", "--context", "2048", "--model-size", "1e6")
    assert r.returncode == 2 and "--model-size: the published law has no size term" in r.stderr
    r = predict("--batch-size", "32", "--context", "256", "--model-size", "1e6")
    assert r.returncode == 2 and "--model-size: this posterior has no size term" in r.stderr
    r = predict("--batch-size", "32", "--context", "256")
    assert r.returncode == 0, r.stderr
    assert "HDI for a new cell:" in r.stdout and "HDI for a new run:" in r.stdout


# ---------------------------------------------------------------------- 6. threads and reproducibility
def test_resume_uses_the_recorded_thread_count(tmp_path, capsys):
    cfg = resolve("cpu-smoke")  # train.threads = 0: the caller's count
    (tmp_path / "config.json").write_text(json.dumps({"run_id": cfg.run_id(), "config": cfg.to_dict(), "threads": 2}))
    assert resume_threads(cfg, tmp_path, current=1, resuming=True) == 2
    assert "resumes with the 2 torch threads it started with, not 1" in capsys.readouterr().err
    assert resume_threads(cfg, tmp_path, current=1, resuming=False) == 0  # a fresh start: the caller's
    one = resolve("cpu-smoke", overrides={"train.threads": 1})
    assert resume_threads(one, tmp_path / "none", current=4, resuming=True) == 1  # nothing recorded


def test_same_seed_and_threads_reproduce_exactly_and_resume_keeps_the_count(done_run, tmp_path, smoke_cache):
    """The README's claim, tested: a run stopped and resumed under another requested thread count
    continues with its recorded one and ends exactly where the uninterrupted run did."""
    assert json.loads((done_run / "config.json").read_text())["threads"] == 1
    run, n = tmp_path / "r", iter(range(10**6))
    st = train_run(smoke(smoke_cache), run, progress=False, make_figures=False, should_stop=lambda: next(n) >= 15)
    assert st["status"] == "running" and 0 < st["step"] < 40
    torch.set_num_threads(2)
    try:
        assert train_run(smoke(smoke_cache, **{"train.threads": 2}), run, progress=False,
                         make_figures=False)["status"] == "done"
    finally:
        torch.set_num_threads(1)
    assert json.loads((run / "config.json").read_text())["threads"] == 1
    for log, cols in (("train.parquet", ["step", "loss", "grad_norm"]), ("metrics.parquet", ["step", "metric", "value"])):
        pd.testing.assert_frame_equal(pd.read_parquet(run / log)[cols], pd.read_parquet(done_run / log)[cols])


# ------------------------------------------------------------------------------- 7. messages
def test_spec_messages_say_what_is_wrong(tmp_path):
    late = tmp_path / "late.toml"
    late.write_text('description = "x"\n[axes]\nseed = [0, 1]\nname = "g"\n')
    with pytest.raises(ConfigError, match=r"axes.name: 'name' is a top-level key but follows the \[axes\] header"):
        load_spec(late)
    with pytest.raises(ConfigError, match=r"is a directory; give the TOML file in it"):
        load_spec(tmp_path)
    latin = tmp_path / "latin.toml"
    latin.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match=r"not UTF-8 text .*save it as UTF-8"):  # issue 50: told apart from bad syntax
        load_spec(latin)
    with pytest.raises(ConfigError, match="exclude removes every run of the grid"):
        parse_spec({"name": "g", "base": {"preset": "cpu-smoke"}, "axes": {"seed": [0]},
                    "exclude": [{"seed": 0}]}).expand()


def test_ablate_score_names_why_a_listed_metric_cannot_rank_heads(done_run):
    from ihtrain.ablate.head_sets import run_head_scores
    with pytest.raises(ValueError, match=r"--score 'val_loss' is a whole-model metric \(no per-head values\)"):
        run_head_scores(done_run, "val_loss")
    with pytest.raises(ValueError, match=r"--score 'bogus' is not in .*per-head metrics there: .*ps"):
        run_head_scores(done_run, "bogus")


def test_make_check_does_not_name_the_temporary_folder_it_deletes(tmp_path, capsys):
    import re
    import tempfile

    from paper_figures import make
    figs = tmp_path / "figs"
    assert make.main(["--only", "emergence_curves_default", "--out", str(figs)]) == 0
    capsys.readouterr()
    assert make.main(["--only", "emergence_curves_default", "--out", str(figs), "--check"]) == 0
    out = capsys.readouterr().out
    assert "<temporary folder, deleted after the check>" in out
    assert not re.search(re.escape(tempfile.gettempdir()) + r"/tmp\w{8}", out)
