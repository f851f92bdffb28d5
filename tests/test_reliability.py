"""Reliability under bad input and faults (issue 28): each case a hostile but fair user tried is
held here as a test (a clear error that names the field or file, or the right result)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from ihtrain.config import ConfigError, ModelConfig, resolve  # noqa: E402
from ihtrain.run.divergence import DivergenceWatch  # noqa: E402
from ihtrain.run.locks import DirectoryLocked, run_lock  # noqa: E402
from ihtrain.run.train import main, read_status, train_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def smoke(cache: Path, **overrides):
    """cpu-smoke (40 updates, builtin corpus) on one thread."""
    return resolve("cpu-smoke", overrides={"data.cache_dir": str(cache), "train.threads": 1, **overrides})


def trainer(cache: Path, *args: str) -> list[str]:
    """The cpu-smoke trainer command, with the same run_id as :func:`smoke` for the same overrides."""
    return [sys.executable, "-m", "ihtrain.train", "--no-progress", "--preset", "cpu-smoke",
            "--set", f"data.cache_dir={cache}", "--set", "train.threads=1", *args]


def run_cli(cache: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(trainer(cache, *args), capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})


# ------------------------------------------------------------------------- config at the edge
@pytest.mark.parametrize("field, value", [
    ("train.lr", "inf"), ("train.lr", "nan"), ("train.lr", "-1e-3"),
    ("train.beta1", "-0.1"), ("train.beta2", "1.5"), ("train.beta2", "1"),
    ("train.weight_decay", "-0.1"), ("train.warmup_steps", "-5"), ("train.emergence_margin", "-1"),
    ("train.checkpoint_every", "-1"), ("train.log_every", "0"), ("seed", "-1"),
    ("train.divergence_factor", "0.5"), ("train.divergence_factor", "inf"), ("train.divergence_window", "0"),
])
def test_bad_value_is_refused_naming_the_field(field, value):
    with pytest.raises(ConfigError, match=rf"^{field.replace('.', '[.]')}: must be"):
        resolve("cpu-smoke", overrides={field: value})


def test_cli_refuses_infinite_lr_before_training(tmp_path, capsys):
    assert main(["--preset", "cpu-smoke", "--set", "train.lr=inf", "--out", str(tmp_path / "r")]) == 2
    assert "train.lr: must be a finite number > 0, got inf" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_divergence_rule_is_off_at_zero_and_outside_the_run_id():
    base = resolve("cpu-smoke")
    off = resolve("cpu-smoke", overrides={"train.divergence_factor": 0, "train.divergence_window": 3})
    assert off.train.divergence_factor == 0 and base.train.divergence_factor > 1
    assert off.run_id() == base.run_id()  # it decides only whether a broken run fails


# ------------------------------------------------------------------------- the divergence rule
def watch(factor=5.0, window=3):
    t = resolve("cpu-smoke", overrides={"train.divergence_factor": factor, "train.divergence_window": window}).train
    w = DivergenceWatch(t, None, before_fail=lambda: None)
    w.start(2.0)
    return w


def test_a_spike_is_not_a_divergence_but_a_sustained_rise_is():
    w = watch()
    for step, loss in enumerate([1.0, 11.0, 11.0, 1.0, 11.0, 11.0], start=1):  # never 3 in a row
        w.check(step, loss, 1.0)
    w.check(7, 1.0, 1.0)
    w.at_end(7)  # ends below: fine
    with pytest.raises(RuntimeError, match=r"update 10: diverged: loss 12 above train.divergence_factor=5"):
        for step in (8, 9, 10):
            w.check(step, 12.0, 1.0)


def test_a_run_that_ends_far_above_its_start_fails_and_nan_fails_at_once():
    w = watch()
    w.check(1, 11.0, 1.0)
    with pytest.raises(RuntimeError, match="update 1: diverged"):
        w.at_end(1)
    with pytest.raises(RuntimeError, match="update 4: training went non-finite"):
        watch(factor=0).check(4, 1.0, float("inf"))  # non-finite fails even with the rule off


def test_metrics_of_a_non_finite_model_are_nan_never_zero():
    from ihtrain.metrics import evaluate
    from ihtrain.model import GPT
    from ihtrain.probes import make_probes

    torch.manual_seed(0)
    model = GPT(ModelConfig(n_layer=2, n_head=2, d_model=16, vocab_size=20, context=32))
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float("nan"))
    probes = make_probes(vocab_size=20, context=32, seed=0, ordinary_range=(1, 20), sep_token=0, n_seqs=8)
    val = torch.randint(0, 20, (4, 17))
    out = evaluate(model, probes, val_tokens=val)
    from ihstats.base.contract import DATA_CONSTANTS  # the data's chance levels and ceilings: no model in them
    for name, v in out.items():
        if name not in DATA_CONSTANTS:
            assert np.isnan(v).all(), f"{name} = {v} on a NaN model"


def test_huge_lr_fails_the_run_with_nan_metrics_and_exits_nonzero(tmp_path, smoke_cache):
    """--set train.lr=1e6 used to end `done`, exit 0, with ar_acc/la/ov_copy/ar_rank 0.0."""
    out = tmp_path / "r"
    r = run_cli(smoke_cache, "--set", "train.lr=1e6", "--out", str(out))
    assert r.returncode == 1 and "TrainingDiverged" in r.stderr and "non-finite" in r.stderr, r.stderr
    st = read_status(out)
    assert st["status"] == "failed" and "non-finite" in st["reason"] and 1 <= st["step"] < 40
    assert not (out / "checkpoints" / "final.pt").exists()
    m = pd.read_parquet(out / "metrics.parquet")
    ps_nan = m[m.metric == "ps"].groupby("step")["value"].apply(lambda v: v.isna().all())
    broken = ps_nan.index[ps_nan]  # evaluations of a wholly non-finite model
    assert len(broken), "no evaluation of the NaN model was logged"
    from ihstats.base.contract import DATA_CONSTANTS  # the data's chance levels and ceilings: no model in them
    at = m[m.step.isin(broken) & ~m.metric.isin(DATA_CONSTANTS)]
    assert at["value"].isna().all(), at[at.value.notna()]  # ar_acc, la, ov_copy, ar_rank too: never 0


def test_a_non_finite_state_is_never_checkpointed(tmp_path, smoke_cache):
    cfg = smoke(smoke_cache, **{"train.lr": 1e6, "train.checkpoint_every": 1})
    with pytest.raises(RuntimeError, match="non-finite"):
        train_run(cfg, tmp_path, progress=False, make_figures=False)
    st = read_status(tmp_path)
    ckpt = torch.load(tmp_path / "checkpoints" / "last.pt", weights_only=True)
    assert st["status"] == "failed" and 1 <= ckpt["step"] < st["step"]
    assert all(torch.isfinite(v).all() for v in ckpt["model"].values())
    assert not (tmp_path / "checkpoints" / "final.pt").exists()


def test_loss_far_above_its_start_fails_unless_the_rule_is_off(tmp_path, smoke_cache):
    """lr = 10 ends about 30x above its initial loss: failed; with divergence_factor = 0 it trains on."""
    with pytest.raises(RuntimeError, match="diverged: loss .* above train.divergence_factor=5"):
        train_run(smoke(smoke_cache, **{"train.lr": 10.0}), tmp_path / "a", progress=False, make_figures=False)
    assert read_status(tmp_path / "a")["status"] == "failed"
    off = smoke(smoke_cache, **{"train.lr": 10.0, "train.divergence_factor": 0})
    assert train_run(off, tmp_path / "b", progress=False, make_figures=False)["status"] == "done"


# ------------------------------------------------------------------------- one trainer per directory
def test_a_held_run_directory_is_refused_and_left_alone(tmp_path, smoke_cache):
    cfg = smoke(smoke_cache)
    with run_lock(tmp_path):  # flock is per open file: this process counts as another holder
        with pytest.raises(DirectoryLocked, match=rf"another trainer is running .* \(pid {os.getpid()} on "):
            train_run(cfg, tmp_path, progress=False)
    assert not (tmp_path / "status.json").exists()


def test_a_second_trainer_exits_at_once_naming_the_first_and_a_killed_one_blocks_nothing(tmp_path, smoke_cache):
    out = tmp_path / "r"
    long_run = ("--set", "train.max_steps=100000", "--set", "train.checkpoint_every=2", "--out", str(out))
    first = subprocess.Popen(trainer(smoke_cache, *long_run), cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (out / "checkpoints" / "last.pt").is_file():
            assert first.poll() is None and time.monotonic() < deadline, "the first trainer did not start"
            time.sleep(0.2)
        t0 = time.monotonic()
        second = run_cli(smoke_cache, "--set", "train.lr=1e-3", "--out", str(out))
        assert second.returncode == 3 and f"pid {first.pid} on " in second.stderr, second.stderr
        assert time.monotonic() - t0 < 30  # at once: no data built, nothing trained
        assert json.loads((out / "config.json").read_text())["config"]["train"]["lr"] == 3e-3
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # the kernel dropped the dead trainer's lock: the same command resumes from its checkpoint
    cfg = smoke(smoke_cache, **{"train.max_steps": 100000, "train.checkpoint_every": 2})
    at = torch.load(out / "checkpoints" / "last.pt", weights_only=True)["step"]
    st = train_run(cfg, out, progress=False, should_stop=lambda: True)
    assert st["status"] == "running" and st["stop_reason"] == "interrupted" and st["step"] == at


def test_grid_does_not_overwrite_the_status_of_a_trainer_outside_it(tmp_path):
    from ihtrain.grid.executors import settle

    (tmp_path / "status.json").write_text(json.dumps({"status": "running", "step": 7}))
    with run_lock(tmp_path):
        st = settle(tmp_path, 1)
    assert st["status"] == "failed" and "another trainer holds the run directory" in st["reason"]
    assert read_status(tmp_path)["status"] == "running"


# ------------------------------------------------------------------------- statistics CLI
def test_emergence_cli_drops_nonfinite_values_on_request(tmp_path, capsys):
    from ihstats.emergence import main as emergence_main
    from ihstats.simulate.curves import simulate_curve
    from ihstats.simulate.run_dirs import write_fake_run

    write_fake_run(tmp_path / "r", simulate_curve("sigmoid", "mixed", n=60, seed=2))
    m = tmp_path / "r" / "metrics.parquet"
    d = pd.read_parquet(m)
    d.loc[d.index[-3:], "value"] = np.nan  # a run that diverged at its end
    d.to_parquet(m, index=False)
    out = tmp_path / "em.csv"
    assert emergence_main([str(tmp_path / "r"), "-o", str(out)]) == 2
    assert "--nonfinite drop" in capsys.readouterr().err
    assert emergence_main([str(tmp_path / "r"), "-o", str(out), "--nonfinite", "drop"]) == 0
    assert len(pd.read_csv(out)) == 1


# ------------------------------------------------------------------------- tables checked before fitting
EXAMPLE_LAW = ROOT / "data" / "example_emergence.csv"
EXAMPLE_FRONTIER = ROOT / "data" / "example_frontier.csv"


def law_table(**edits) -> pd.DataFrame:
    """The shipped emergence example with ``column=(row positions, value)`` edits."""
    t = pd.read_csv(EXAMPLE_LAW)
    for col, (pos, value) in edits.items():
        t[col] = t[col].astype(object)
        t.loc[t.index[pos], col] = value
    return t


def prepare_law(table):
    from ihstats.law.data import prepare
    from ihstats.law.spec import UPTLawSpec

    return prepare(table, UPTLawSpec())


@pytest.mark.parametrize("values", ["bool", "int", "text"])
def test_a_blank_censored_cell_is_an_error_naming_the_column_and_rows(values):
    from ihstats.law.spec import UPTLawError

    t = pd.read_csv(EXAMPLE_LAW)
    t["censored"] = {"bool": t["censored"], "int": t["censored"].astype(int),
                     "text": t["censored"].map({True: "true", False: "false"})}[values]
    assert prepare_law(t).censored.sum() == 5  # the example: 5 of 30 censored, in every spelling
    t["censored"] = t["censored"].astype(object)
    t.loc[[3, 4], "censored"] = np.nan  # blank cells: before, NaN -> astype(bool) -> censored
    with pytest.raises(UPTLawError, match=r"^censored: blank in 2 row\(s\) \(run_id \['sim20251116-003', "
                                          r"'sim20251116-004'\]\); fill in True or False"):
        prepare_law(t)


def test_a_censored_cell_that_is_not_boolean_is_an_error():
    from ihstats.law.spec import UPTLawError

    with pytest.raises(UPTLawError, match=r"censored: not True/False/1/0 in 1 row\(s\).*'yes'"):
        prepare_law(law_table(censored=([0], "yes")))


@pytest.mark.parametrize("edits, match", [
    ({"onset_lo": ([0], 9.9e4), "onset_hi": ([0], 6.0e4)}, r"onset_lo, onset: onset_lo > onset in 1 row\(s\) "
                                                           r"\(run_id \['sim20251116-000'\]\)"),
    ({"onset": ([1], 7.0e4)}, r"onset, onset_hi: onset > onset_hi in 1 row"),
    ({"onset": ([1, 2], 1.0e3)}, r"onset_lo, onset: onset_lo > onset in 2 row"),
    ({"onset": ([0], np.inf)}, r"onset: UPT must be a finite number > 0 .*\[inf\]"),
    ({"onset": ([0], np.nan)}, r"onset: UPT must be a finite number > 0 .*mark the run censored"),
    ({"B": (slice(None), 8)}, r"B: only one distinct value \(8\).*two or more values of B"),
    ({"C": (slice(None), 64)}, r"C: only one distinct value"),
])
def test_bad_intervals_onsets_and_single_levels_are_refused_before_sampling(edits, match):
    from ihstats.law.spec import UPTLawError

    with pytest.raises(UPTLawError, match=match):
        prepare_law(law_table(**edits))


def test_fit_upt_law_names_the_file_and_writes_nothing(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "analyses"))
    try:
        from fit_upt_law import main as fit_main
    finally:
        sys.path.remove(str(ROOT / "analyses"))
    bad = tmp_path / "swapped.csv"
    law_table(onset_lo=([0], 9.9e4), onset_hi=([0], 6.0e4)).to_csv(bad, index=False)
    assert fit_main(["--emergence", str(bad), "--fast", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"error: {bad}: onset_lo, onset: onset_lo > onset" in err and "swap or fix" in err
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------- ihstats.law.predict
def predict_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ihstats.law.predict", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def strict_json(text: str):
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def exit_code(main, argv) -> int:
    """A CLI's exit status, returned or raised (flags outside their range exit through argparse)."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


@pytest.mark.parametrize("batch, message", [
    ("nan", "--batch-size: must be a finite number >= 1, got nan"),
    ("inf", "--batch-size: must be a finite number >= 1, got inf"),
    ("0", "--batch-size: must be a finite number >= 1, got 0.0"),
    ("-4", "--batch-size: must be a finite number >= 1, got -4.0"),
    ("1e30", "updates, not a usable prediction"),
])
def test_predict_refuses_unusable_inputs_with_exit_2(batch, message, capsys):
    from ihstats.law.predict import main as predict_main

    assert exit_code(predict_main, [f"--batch-size={batch}", "--context", "64", "--json"]) == 2
    out = capsys.readouterr()
    assert message in out.err and out.out == ""


def test_predict_refuses_a_non_finite_context_and_model_size(capsys):
    from ihstats.law.predict import main as predict_main

    assert exit_code(predict_main, ["--batch-size", "16", "--context", "inf"]) == 2
    assert exit_code(predict_main, ["--batch-size", "16", "--context", "64", "--model-size", "nan"]) == 2
    err = capsys.readouterr().err
    assert "--context: must be a finite number >= 2" in err and "--model-size: must be a finite number >= 1" in err


def test_predict_json_is_valid_and_an_old_posterior_without_a_range_still_works(capsys):
    from ihstats.law.predict import main as predict_main

    # the shipped simulated posterior predates the recorded range: no warning, N is null
    old = ROOT / "ihstats" / "reference_posterior" / "upt_law_simulated.nc"
    assert predict_main(["--batch-size", "512", "--context", "64", "--json", "--posterior",
                         str(old)]) == 0
    out = capsys.readouterr()
    doc = strict_json(out.out)
    assert doc["N"] is None and doc["upt"] > 1 and doc["warnings"] == [] and "warning" not in out.err


def test_fit_records_the_range_and_predict_warns_outside_it(tmp_path):
    from ihstats.law.model import UPTLawModel
    from ihstats.law.results import fitted_range
    from ihstats.law.spec import UPTLawSpec

    res = UPTLawModel.from_table(pd.read_csv(EXAMPLE_LAW), UPTLawSpec()).fit(draws=60, tune=60, chains=1, seed=0)
    assert fitted_range(res.idata) == {"B": [4.0, 64.0], "C": [16.0, 256.0]}
    paths = res.save(tmp_path)
    assert json.loads(paths["fit"].read_text())["fitted_range"]["B"] == [4.0, 64.0]
    inside = predict_cli("--batch-size", "16", "--context", "64", "--posterior", paths["idata"])
    assert inside.returncode == 0 and "warning" not in inside.stderr
    out = predict_cli("--batch-size", "512", "--context", "64", "--posterior", paths["idata"], "--json")
    assert out.returncode == 0, out.stderr
    assert "warning: B = 512 lies outside the fitted range 4-64" in out.stderr
    assert strict_json(out.stdout)["warnings"] == ["B = 512 lies outside the fitted range 4-64: the "
                                                   "prediction extrapolates the power law"]


# ------------------------------------------------------------------------- degenerate frontier tables
def frontier_cli(table: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "analyses" / "fit_frontier.py"), "--table", str(table),
                           "--draws", "100", "--tune", "100", "--chains", "2", "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.mark.parametrize("formed, line", [(True, "every run formed (200 of 200)"), (False, "no run formed (0 of 200)")])
def test_a_single_outcome_frontier_says_so_and_reports_no_contour(tmp_path, formed, line):
    table = tmp_path / "t.csv"
    pd.read_csv(EXAMPLE_FRONTIER).assign(formed=formed).to_csv(table, index=False)
    r = frontier_cli(table, tmp_path / "o")
    assert r.returncode == 0, r.stderr
    want = f"{line}: the data hold no boundary, so no frontier is drawn or reported"
    assert f"boundary: {want}" in r.stdout.splitlines()
    assert f"- boundary: **{want}**" in (tmp_path / "o" / "summary.md").read_text()
    fr = pd.read_csv(tmp_path / "o" / "frontier.csv")
    cols = ["reliability_median", "reliability_lo", "reliability_hi", "glm_reliability"]
    assert fr[cols].isna().all().all()  # before: a frontier at reliability 2.8
    assert (tmp_path / "o" / "frontier.png").stat().st_size > 0


def fake_frontier(coef):
    """Frontier results with fixed posterior draws ``coef`` (b0, bf, br): no sampling."""
    from ihstats import _bayes
    from ihstats.frontier.glm import fit_glm
    from ihstats.frontier.model import FrontierModel
    from ihstats.frontier.results import FrontierResults
    from ihstats.frontier.spec import FrontierSpec

    model = FrontierModel.from_table(pd.read_csv(EXAMPLE_FRONTIER), FrontierSpec())
    draws = np.tile(np.asarray(coef, float), (40, 1))
    idata = _bayes.from_draws({"intercept": draws[None, :, 0], "beta": draws[None, :, 1:]})
    glm = fit_glm(model.X, model.cells["n_formed"].to_numpy(), model.cells["n_runs"].to_numpy(), model.terms)
    return FrontierResults(model, idata, glm, {})


def test_a_boundary_above_the_grid_is_stated_and_never_reported_above_1():
    res = fake_frontier([-8.0, 0.0, 1.0])  # p = 0.5 at z(log r) = 8: far above reliability 1
    fr = res.frontier()
    assert fr["reliability_median"].isna().all()
    band = fr[["reliability_lo", "reliability_hi"]].to_numpy()
    assert np.all(np.isnan(band) | ((band >= 0) & (band <= 1)))
    assert res.boundary_note().startswith("the p = 0.5 boundary lies outside the grid (reliability 0.1-0.9)")


def test_a_boundary_inside_the_grid_is_kept_and_needs_no_note():
    res = fake_frontier([0.0, 0.5, 1.0])  # p = 0.5 at the design's centre
    fr = res.frontier()
    assert fr["reliability_median"].notna().all() and (fr["reliability_median"] <= 1).all()
    assert res.boundary_note() is None


def test_a_blank_formed_cell_names_the_file_column_and_rows(tmp_path):
    t = pd.read_csv(EXAMPLE_FRONTIER)
    t["formed"] = t["formed"].astype(object)
    t.loc[7, "formed"] = np.nan
    path = tmp_path / "blank.csv"
    t.to_csv(path, index=False)
    r = frontier_cli(path, tmp_path / "o")
    assert r.returncode == 2
    assert f"error: {path}: formed: blank in 1 row(s) (run_id ['sim00007'])" in r.stderr


# ------------------------------------------------------------------------- corrupt files: one checked path
from ihtrain.run.checkpoint import load_checkpoint  # noqa: E402
from ihstats.base.fileio import UnreadableFile, io_error_of, read_json, read_parquet, read_table  # noqa: E402


@pytest.mark.parametrize("text, match", [
    ("", r"status.json: empty \(0 bytes\): the status was not written to the end; the run's state is unknown: "
         r"delete this file and rerun the same command"),
    ('{"status": "do', r"status.json: invalid JSON \(.*truncated or damaged status\); the run's state is unknown"),
    ("[1, 2]", r"status.json: holds a JSON list, expected an object"),
    ('{"step": 4}', r"status.json: has no 'status' key"),
])
def test_a_damaged_status_json_names_the_file_the_problem_and_the_remedy(tmp_path, text, match):
    from ihstats.base.contract import read_status

    (tmp_path / "status.json").write_text(text)
    with pytest.raises(UnreadableFile, match=match) as e:
        read_status(tmp_path)
    assert str(e.value).startswith(str(tmp_path / "status.json"))
    assert read_status(tmp_path / "nothing") is None  # no status yet is not an error


def test_damaged_parquet_tables_and_checkpoints_are_named(tmp_path):
    ok = tmp_path / "ok.parquet"
    pd.DataFrame({"step": [1, 2]}).to_parquet(ok)
    cut = tmp_path / "metrics.parquet"
    cut.write_bytes(ok.read_bytes()[:40])
    with pytest.raises(UnreadableFile, match=r"metrics.parquet: not a readable parquet file \(ArrowInvalid: .*\); "
                                             r"the metric log is damaged; delete it"):
        read_parquet(cut, what="metric log", remedy="delete it")
    (tmp_path / "empty.parquet").write_bytes(b"")
    with pytest.raises(UnreadableFile, match=r"empty.parquet: empty \(0 bytes\)"):
        read_parquet(tmp_path / "empty.parquet")
    with pytest.raises(UnreadableFile, match=r"ok.parquet: lacks column\(s\) \['value'\]"):
        read_parquet(ok, columns=["value"])
    (tmp_path / "t.csv").write_text("a,b\n")
    with pytest.raises(UnreadableFile, match=r"t.csv: has no rows \(columns: a, b\)"):
        read_table(tmp_path / "t.csv")
    (tmp_path / "final.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(UnreadableFile, match=r"final.pt: not a readable PyTorch checkpoint \(UnpicklingError"):
        load_checkpoint(tmp_path / "final.pt")
    (tmp_path / "c.json").write_text('{"run_id": "ab')
    with pytest.raises(UnreadableFile, match=r"c.json: invalid JSON"):
        read_json(tmp_path / "c.json", "run's config")


def test_io_causes_are_told_apart_from_failures():
    import errno

    full = OSError(errno.ENOSPC, "No space left on device", "/x/last.pt")
    try:
        try:
            raise full
        except OSError as inner:
            raise RuntimeError("torch could not write") from inner
    except RuntimeError as outer:
        assert io_error_of(outer) is full  # found through the cause chain
    for code in (errno.EDQUOT, errno.EACCES, errno.EROFS, errno.EIO):
        assert io_error_of(OSError(code, "x")) is not None
    assert io_error_of(OSError(errno.ENOENT, "x")) is None and io_error_of(ValueError("x")) is None


def train_main(cache: Path, *args: str) -> int:
    """The cpu-smoke trainer CLI (:func:`trainer`'s arguments) in this process: no interpreter to start."""
    return main(trainer(cache, *args)[3:])


def test_cli_names_a_damaged_status_or_config_and_promises_no_error_txt(tmp_path, smoke_cache, capsys):
    """An empty status.json or a truncated config.json: a bare JSONDecodeError and "details in
    RUN/error.txt" (never written) before; now the file, the problem and what to do, nothing rewritten."""
    for name, text, problem in [("status.json", "", "empty (0 bytes)"),
                                ("config.json", '{"run_id": "4a', "invalid JSON")]:
        out = tmp_path / name
        out.mkdir()
        (out / name).write_text(text)
        assert train_main(smoke_cache, "--out", str(out)) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {out / name}: {problem}") and err.count("\n") == 1
        assert "error.txt" not in err and not (out / "error.txt").exists()
        assert (out / name).read_text() == text  # left as it was: the evidence


def test_cli_out_pointing_at_a_file_is_one_line(tmp_path, smoke_cache, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("mine")
    assert train_main(smoke_cache, "--out", str(f)) == 2
    assert capsys.readouterr().err == f"error: --out {f}: is a file; give a folder (it is created when missing)\n"
    assert f.read_text() == "mine"


def test_a_failed_run_always_leaves_error_txt_with_its_traceback(tmp_path, smoke_cache, capsys):
    out = tmp_path / "r"
    assert train_main(smoke_cache, "--set", "train.lr=1e6", "--out", str(out)) == 1
    assert f"(details in {out / 'error.txt'})" in capsys.readouterr().err
    text = (out / "error.txt").read_text()
    assert text.startswith("Traceback (most recent call last):") and "TrainingDiverged" in text
    assert read_status(out)["status"] == "failed"


def test_a_corrupt_last_checkpoint_is_named_when_resuming(tmp_path, smoke_cache):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "last.pt").write_bytes(b"\x80\x02truncated")
    with pytest.raises(UnreadableFile, match=r"last.pt: not a readable PyTorch checkpoint .*delete it to restart"):
        train_run(smoke(smoke_cache), tmp_path, progress=False, make_figures=False)
    st = read_status(tmp_path)
    assert st["status"] == "failed" and "last.pt: not a readable PyTorch checkpoint" in st["reason"]
    assert "UnreadableFile" in (tmp_path / "error.txt").read_text()


def test_a_full_disk_leaves_the_run_resumable_by_a_plain_rerun(tmp_path, smoke_cache, capsys, monkeypatch):
    """ENOSPC (simulated by the IHLAW_FAULT_ENOSPC hook) at the second metrics flush: before, error.txt
    was left empty and the run failed; now it stays resumable, and the same command finishes it."""
    from ihstats.base import fileio

    out = tmp_path / "r"
    args = ("--set", "train.checkpoint_every=5", "--out", str(out))
    monkeypatch.setattr(fileio, "_FAULT_COUNTS", {})
    monkeypatch.setenv("IHLAW_FAULT_ENOSPC", "metrics.parquet:2")
    assert train_main(smoke_cache, *args) == 75
    err = capsys.readouterr().err
    assert "error: run stopped by an I/O error: " in err and "No space left on device" in err
    assert "rerun the same command to resume" in err
    st = read_status(out)
    assert st["status"] == "running" and "No space left on device" in st["io_error"] and st["step"] == 5
    assert "OSError: [Errno 28]" in (out / "error.txt").read_text()
    monkeypatch.delenv("IHLAW_FAULT_ENOSPC")  # space freed
    assert train_main(smoke_cache, *args) == 0 and read_status(out)["status"] == "done"
    m = pd.read_parquet(out / "metrics.parquet")
    assert not m.duplicated(["step", "metric", "layer", "head"]).any()
    assert sorted(m["step"].unique()) == sorted(eval_steps(40, 10))
    assert not (out / "error.txt").exists()  # the traceback of the failed attempt went with it


@pytest.mark.parametrize("packed", [False, True])
def test_a_full_disk_while_a_run_starts_is_recorded_resumable(tmp_path, smoke_cache, monkeypatch, packed):
    """ENOSPC at the first status.json write (the run's start, before any training): the run is left
    ``running`` with ``io_error`` (a plain rerun resumes it), alone or as a member of a pack."""
    from ihstats.base import fileio
    from ihtrain.run.packed import train_pack
    from ihtrain.run.train import train_run

    cfg = smoke(smoke_cache, **{"train.max_steps": 4})
    monkeypatch.setattr(fileio, "_FAULT_COUNTS", {})
    monkeypatch.setenv("IHLAW_FAULT_ENOSPC", "status.json:1")
    with pytest.raises(OSError):
        if packed:
            train_pack([cfg], [tmp_path / "r"], make_figures=False)
        else:
            train_run(cfg, tmp_path / "r", progress=False, make_figures=False)
    st = read_status(tmp_path / "r")
    assert st["status"] == "running" and "No space left on device" in st["io_error"]


def eval_steps(total: int, n_evals: int) -> list[int]:
    from ihtrain.run.schedule import eval_schedule

    return eval_schedule(total, n_evals, resolve("cpu-smoke").metrics.log_fraction).tolist()


# ------------------------------------------------------------------------- corrupt files and faults in a grid
TINY_GRID = """
name = "tiny"
[base]
preset = "cpu-smoke"
[base.train]
max_steps = 6
checkpoint_every = 2
[base.metrics]
n_evals = 3
[axes]
seed = [0, 1]
"""


def grid_cli(spec: Path, out: Path, cache: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "ihtrain.grid", "--spec", str(spec), "--out", str(out), "--workers", "1",
           "--threads-per-run", "1", "--no-progress", "--no-figures", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "IHLAW_CACHE": str(cache), "OMP_NUM_THREADS": "1", **(env or {})})


def worker_starts(run_dir: Path) -> int:
    log = run_dir / "worker.log"
    return log.read_text().count("worker pid ") if log.is_file() else 0


def grid_runs(spec: Path, cache: Path):
    """Each run of the grid ``spec`` with the config it trains with under :func:`grid_cli` (one thread,
    the data cache from $IHLAW_CACHE as there), for training it in this process."""
    import dataclasses

    from ihtrain.grid.spec import load_spec

    before = os.environ.get("IHLAW_CACHE")
    os.environ["IHLAW_CACHE"] = str(cache)
    try:
        for run in load_spec(spec).expand():
            yield run, dataclasses.replace(run.config, train=dataclasses.replace(run.config.train, threads=1))
    finally:
        os.environ.pop("IHLAW_CACHE") if before is None else os.environ.update(IHLAW_CACHE=before)


@pytest.fixture(scope="module")
def finished_grid(tmp_path_factory, smoke_cache):
    """The TINY_GRID spec and its runs, done (trained here, in this process: no worker to spawn);
    each test copies them and damages the copy."""
    root = tmp_path_factory.mktemp("tiny")
    spec = root / "tiny.toml"
    spec.write_text(TINY_GRID)
    for run, cfg in grid_runs(spec, smoke_cache):
        assert train_run(cfg, root / "grid" / run.run_id, progress=False, make_figures=False)["status"] == "done"
    return spec, root / "grid"


@pytest.fixture
def grid_copy(finished_grid, tmp_path):
    import shutil

    spec, src = finished_grid
    shutil.copytree(src, tmp_path / "grid")
    return spec, tmp_path / "grid", sorted(d for d in (tmp_path / "grid").iterdir() if d.is_dir())


def test_grid_reports_a_finished_run_with_an_empty_status_as_unreadable_and_never_reruns_it(grid_copy, smoke_cache):
    """Before: shown as pending, rerun, then rewritten as failed ("worker exited with code 1")."""
    spec, out, (bad, good) = grid_copy
    (bad / "status.json").write_text("")
    logs = (bad / "metrics.parquet").stat().st_mtime_ns
    dry = grid_cli(spec, out, smoke_cache, "--dry-run", "--retry-failed")
    assert "skip (unreadable status.json)" in next(line for line in dry.stdout.splitlines() if bad.name in line)
    r = grid_cli(spec, out, smoke_cache, "--retry-failed")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "0 to run (1 done, 0 failed skipped, 1 with an unreadable status.json skipped)" in r.stdout
    assert f"unreadable: {bad.name}: {bad / 'status.json'}: empty (0 bytes)" in r.stderr
    assert "delete this file and rerun the same command" in r.stderr and "Traceback" not in r.stdout + r.stderr
    assert (bad / "status.json").read_text() == ""  # never rewritten as failed
    assert worker_starts(bad) == 0 and (bad / "metrics.parquet").stat().st_mtime_ns == logs  # never rerun over
    st = grid_cli(spec, out, smoke_cache, "--status")
    assert st.returncode == 0 and "1 done, 1 unreadable" in st.stdout


def test_grid_names_a_corrupt_metrics_parquet_of_a_finished_run(grid_copy, smoke_cache):
    """Before: max_ps "-", "2/2 runs done", then a pyarrow traceback from the schema check."""
    spec, out, (bad, good) = grid_copy
    data = (bad / "metrics.parquet").read_bytes()
    (bad / "metrics.parquet").write_bytes(data[: len(data) // 2])
    r = grid_cli(spec, out, smoke_cache)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1/2 runs done" in r.stdout and "Traceback" not in r.stdout + r.stderr
    assert f"unreadable: {bad.name}: {bad / 'metrics.parquet'}: not a readable parquet file" in r.stderr
    assert f"delete {bad} and rerun the same command to train the run again" in r.stderr
    assert worker_starts(bad) == 0  # not trained over


@pytest.mark.slow  # two grids of one worker each (~20 s); the fault-injection test below covers it too
def test_a_full_disk_in_a_grid_worker_leaves_the_run_resumable_by_a_plain_rerun(tmp_path, smoke_cache):
    """Before: error.txt empty, "worker exited with code 1", and only --retry-failed went on."""
    spec = tmp_path / "one.toml"
    spec.write_text(TINY_GRID.replace("seed = [0, 1]", "seed = [0]"))
    out = tmp_path / "grid"
    r = grid_cli(spec, out, smoke_cache, env={"IHLAW_FAULT_ENOSPC": "metrics.parquet:2"})
    assert r.returncode == 1, r.stdout + r.stderr
    (run,) = [d for d in out.iterdir() if d.is_dir()]
    assert f"interrupted {run.name}" in r.stdout and "stopped by an I/O error" in r.stdout
    assert "free space or fix permissions" in r.stderr and "rerun the same command to resume" in r.stderr
    assert "--retry-failed" not in r.stderr
    st = read_status(run)
    assert st["status"] == "running" and "No space left on device" in st["io_error"] and st["step"] == 2
    again = grid_cli(spec, out, smoke_cache)
    assert again.returncode == 0 and "1 to run" in again.stdout, again.stdout + again.stderr
    assert read_status(run)["status"] == "done" and worker_starts(run) == 2
    m = pd.read_parquet(run / "metrics.parquet")
    assert not m.duplicated(["step", "metric", "layer", "head"]).any()
    assert sorted(m["step"].unique()) == eval_steps(6, 3)


def test_settle_keeps_a_run_stopped_by_an_io_error_resumable_and_an_unreadable_status_untouched(tmp_path):
    from ihtrain.grid.executors import EXIT_IO_ERROR, settle

    (tmp_path / "status.json").write_text(json.dumps({"status": "running", "step": 4, "stop_reason": ""}))
    st = settle(tmp_path, EXIT_IO_ERROR)  # the disk refused even the worker's own status write
    assert st["status"] == "running" and st["step"] == 4 and "worker.log" in st["io_error"]
    assert read_status(tmp_path) == {"status": "running", "step": 4, "stop_reason": ""}
    (tmp_path / "status.json").write_text("{")
    st = settle(tmp_path, 1)
    assert st["status"] == "unreadable" and "status.json: invalid JSON" in st["reason"]
    assert (tmp_path / "status.json").read_text() == "{"


@pytest.fixture
def read_only_dir(tmp_path, monkeypatch):
    """A directory nothing can be written into: mode 0555, and, for root (who writes anyway), os.open
    and os.mkdir refuse under it with EROFS, as on a read-only mount."""
    import errno

    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    if os.geteuid() == 0:
        real_open, real_mkdir = os.open, os.mkdir

        def inside(p) -> bool:
            return os.path.abspath(os.fsdecode(p)).startswith(str(d))

        def ro_open(p, flags, *a, **k):
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and inside(p):
                raise OSError(errno.EROFS, "Read-only file system", os.fsdecode(p))
            return real_open(p, flags, *a, **k)

        def ro_mkdir(p, *a, **k):
            if inside(p):
                raise OSError(errno.EROFS, "Read-only file system", os.fsdecode(p))
            return real_mkdir(p, *a, **k)

        monkeypatch.setattr(os, "open", ro_open)
        monkeypatch.setattr(os, "mkdir", ro_mkdir)
    yield d
    d.chmod(0o755)


def test_grid_out_read_only_or_a_file_is_one_line(tmp_path, read_only_dir, capsys):
    from ihtrain.grid.cli import main as grid_main

    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY_GRID)
    assert grid_main(["--spec", str(spec), "--out", str(read_only_dir / "g"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --out {read_only_dir / 'g'}: cannot write the grid directory (") and \
        err.endswith("choose a writable path\n") and err.count("\n") == 1
    f = tmp_path / "grid.txt"
    f.write_text("")
    assert grid_main(["--spec", str(spec), "--out", str(f), "--no-progress"]) == 2
    assert capsys.readouterr().err == f"error: --out {f}: is a file, not a grid directory; choose another path\n"


# ------------------------------------------------------------------------- corrupt files in the statistics CLIs
def fake_grid(root: Path, n: int = 3) -> list[Path]:
    from ihstats.simulate.curves import simulate_curve
    from ihstats.simulate.run_dirs import write_fake_grid

    ids = write_fake_grid(root, [(simulate_curve("sigmoid", "mixed", n=60, seed=i), {"seed": i}) for i in range(n)])
    return [root / i for i in ids]


def test_emergence_skip_bad_skips_unreadable_runs_with_one_line_each(tmp_path, capsys):
    from ihstats.emergence import main as emergence_main

    runs = fake_grid(tmp_path / "g")
    (runs[0] / "status.json").write_text("")
    (runs[1] / "metrics.parquet").write_bytes(b"PAR1 not really")
    out = tmp_path / "em.csv"
    assert emergence_main([str(tmp_path / "g"), "-o", str(out)]) == 2  # without --skip-bad: the first bad file
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(tmp_path / "g") in err and "--skip-bad" in err  # the first bad file
    assert err.count("\n") == 1 and ("status.json: empty (0 bytes)" in err or "metrics.parquet: not a readable" in err)
    assert not out.exists()
    assert emergence_main([str(tmp_path / "g"), "-o", str(out), "--skip-bad"]) == 0
    warn = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(warn) == 2 and all(line.startswith("warning: ") and line.endswith("(run skipped)") for line in warn)
    joined = "\n".join(warn)
    assert f"{runs[0] / 'status.json'}: empty" in joined and f"{runs[1] / 'metrics.parquet'}: not a readable" in joined
    assert pd.read_csv(out)["run_id"].tolist() == [runs[2].name]


def test_emergence_out_read_only_or_a_directory_is_one_line(tmp_path, read_only_dir, capsys):
    from ihstats.emergence import main as emergence_main

    fake_grid(tmp_path / "g", n=1)
    for out, why in [(read_only_dir / "em.csv", "cannot write the table ("), (tmp_path, "give a CSV file path (it is a folder")]:
        assert emergence_main([str(tmp_path / "g"), "-o", str(out)]) == 2  # a folder: the output guard (issue 50)
        err = capsys.readouterr().err
        assert err.startswith(f"error: -o {out}: {why}") and err.count("\n") == 1


def test_predict_names_a_posterior_that_is_not_netcdf(tmp_path, capsys):
    from ihstats.law.predict import main as predict_main

    bad = tmp_path / "upt_law.nc"
    bad.write_text("not netcdf")
    assert predict_main(["--batch-size", "16", "--context", "64", "--posterior", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --posterior: {bad} is not a readable netCDF posterior (") and err.count("\n") == 1


@pytest.mark.parametrize("text, problem", [("", "empty: no header and no rows"),
                                           ("condition,example,ablation,set_id,value\n", "has no rows")])
def test_ablation_tests_on_an_empty_table_names_it(tmp_path, capsys, text, problem):
    sys.path.insert(0, str(ROOT / "analyses"))
    try:
        from ablation_tests import main as ablation_main
    finally:
        sys.path.remove(str(ROOT / "analyses"))
    table = tmp_path / "ablation.csv"
    table.write_text(text)
    assert ablation_main(["--table", str(table), "--fast", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.startswith(f"error: --table {table}: {problem}")
    assert not (tmp_path / "o").exists()


def test_ablate_names_a_corrupt_final_checkpoint(tmp_path, capsys):
    from ihtrain.ablate.cli import main as ablate_main

    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "config.json").write_text(json.dumps({"run_id": "x", "config": resolve("cpu-smoke").to_dict()}))
    (tmp_path / "checkpoints" / "final.pt").write_bytes(b"PK\x03\x04 half a zip")
    assert ablate_main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'checkpoints' / 'final.pt'}: not a readable PyTorch checkpoint (")
    assert "the run must be trained again" in err and err.count("\n") == 1


# ------------------------------------------------------------------------- fault injection (slow)
FAULT_STEPS, FAULT_LOG_EVERY = 30, 3
FAULT_GRID = f"""
name = "faults"
[base]
preset = "cpu-smoke"
[base.train]
max_steps = {FAULT_STEPS}
checkpoint_every = 3
log_every = {FAULT_LOG_EVERY}
[base.metrics]
n_evals = 8
[axes]
seed = [0, 1, 2]
"""


def grid_progress(out: Path) -> int:
    """Updates done over the grid's runs, as their status.json files say (checkpointed updates)."""
    from ihstats.base.contract import read_status as checked

    total = 0
    for d in (p for p in out.iterdir() if p.is_dir()) if out.is_dir() else []:
        st = checked(d) or {}
        total += FAULT_STEPS if st.get("status") == "done" else int(st.get("step", 0))
    return total


def kill_grid_at(cmd: list[str], env: dict, out: Path, target: int, extra_s: float) -> int | None:
    """Start the grid in its own process group; once ``target`` updates are checkpointed, wait
    ``extra_s`` more and SIGKILL the whole group (grid and workers at once). Returns the grid's exit
    code if it ended first, else None."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and grid_progress(out) < target:
            assert time.monotonic() < deadline, f"no progress to {target} updates"
            time.sleep(0.05)
        time.sleep(extra_s)
        if proc.poll() is not None:
            return proc.returncode
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        return None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.slow
def test_a_grid_killed_five_times_and_once_out_of_disk_completes_every_run_exactly_once(tmp_path, smoke_cache):
    """A 3-run grid SIGKILLed (process group) at 5 seeded random moments and with a full disk (the
    IHLAW_FAULT_ENOSPC hook, a seeded file and write) at one more, each time resumed by the plain
    command: every run ends done, trained once (logs equal an uninterrupted run's exactly), and a
    run once done is never touched again."""
    from ihstats.base.schema import check_grid_dir

    rng = np.random.default_rng(2028)
    spec = tmp_path / "faults.toml"
    spec.write_text(FAULT_GRID)
    out = tmp_path / "grid"
    cmd = [sys.executable, "-m", "ihtrain.grid", "--spec", str(spec), "--out", str(out), "--workers", "1",
           "--threads-per-run", "1", "--no-progress", "--no-figures",
           "--no-pack"]  # one run at a time, so a kill lands mid-run (packed kills: test_grid_packed)
    env = {**os.environ, "IHLAW_CACHE": str(smoke_cache), "OMP_NUM_THREADS": "1"}
    total = 3 * FAULT_STEPS
    # kills in the first three quarters: the grid must still be running when a kill lands, and
    # a smoke-size update takes milliseconds
    targets = np.sort(rng.integers(1, int(0.75 * total), size=5))
    extra = rng.uniform(0.0, 0.2, size=5)  # past the checkpoint that reached the target: mid-update, mid-write
    disk_full_after = int(rng.integers(0, 5))  # the full disk comes after this many kills
    full_file = str(rng.choice(["metrics.parquet", "train.parquet", "last.pt", "status.json"]))
    full_nth = int(rng.integers(2, 5))
    done_mtimes: dict[str, int] = {}
    io_stopped = []

    def check_done_runs_untouched() -> None:
        for d in (p for p in out.iterdir() if p.is_dir()):
            if read_status(d)["status"] == "done":
                mtime = (d / "metrics.parquet").stat().st_mtime_ns
                assert done_mtimes.setdefault(d.name, mtime) == mtime, f"{d.name}: a done run was trained again"

    for i, (target, wait) in enumerate(zip(targets, extra)):
        if i == disk_full_after:
            full = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                                  env={**env, "IHLAW_FAULT_ENOSPC": f"{full_file}:{full_nth}"})
            stopped = [d for d in out.iterdir() if d.is_dir() and (read_status(d) or {}).get("io_error")]
            assert full.returncode == 1 and stopped, full.stdout + full.stderr
            assert "rerun the same command to resume" in full.stderr and "--retry-failed" not in full.stderr
            io_stopped = [d.name for d in stopped]
            check_done_runs_untouched()
        code = kill_grid_at(cmd, env, out, max(int(target), grid_progress(out) + 1), float(wait))
        assert code is None, f"the grid exited {code} before kill {i + 1} could land"
        for d in (p for p in out.iterdir() if p.is_dir()):
            assert (read_status(d) or {"status": "new"})["status"] != "failed", f"{d.name} marked failed"
        check_done_runs_untouched()
    final = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert final.returncode == 0, final.stdout + final.stderr
    check_done_runs_untouched()
    assert io_stopped, "the full disk stopped no run"

    man = pd.read_parquet(out / "manifest.parquet")
    assert len(man) == 3 and (man["status"] == "done").all() and (man["steps"] == FAULT_STEPS).all()
    assert check_grid_dir(out) == []
    for run, cfg in grid_runs(spec, smoke_cache):  # each against the same run trained uninterrupted
        rd = out / run.run_id
        m = pd.read_parquet(rd / "metrics.parquet")
        assert not m.duplicated(["step", "metric", "layer", "head"]).any(), f"{run.run_id}: duplicated rows"
        tr = pd.read_parquet(rd / "train.parquet")
        assert tr["step"].tolist() == list(range(FAULT_LOG_EVERY, FAULT_STEPS + 1, FAULT_LOG_EVERY))
        ref = tmp_path / "reference" / run.run_id
        train_run(cfg, ref, progress=False, make_figures=False)
        for name in ("metrics", "train"):
            a, b = pd.read_parquet(rd / f"{name}.parquet"), pd.read_parquet(ref / f"{name}.parquet")
            a, b = (f.drop(columns=["tokens_per_s", "wall_s"], errors="ignore") for f in (a, b))
            pd.testing.assert_frame_equal(a, b, check_exact=True)
    print(f"kills at {targets.tolist()} updates (+{np.round(extra, 2).tolist()} s); full disk at write "
          f"{full_nth} of {full_file} after kill {disk_full_after} stopped {len(io_stopped)} run(s)")


def test_grid_names_a_damaged_config_json_of_an_interrupted_run(grid_copy, smoke_cache):
    """The worker fails before it can record anything: the grid's reason names the file."""
    spec, out, (bad, good) = grid_copy
    (bad / "status.json").write_text(json.dumps({"status": "running", "step": 2, "reason": "", "stop_reason": ""}))
    (bad / "config.json").write_text('{"run_id": "')
    r = grid_cli(spec, out, smoke_cache)
    assert r.returncode == 1, r.stdout + r.stderr
    st = read_status(bad)
    assert st["status"] == "failed" and f"UnreadableFile: {bad / 'config.json'}: invalid JSON" in st["reason"]
    assert (bad / "config.json").read_text() == '{"run_id": "'
