"""Reliability round 3 (issue 50): files a user is handed are data, never code. Each case asserts a
clear error or the correct result."""

import ast
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from ihstats.base.fileio import UnreadableFile  # noqa: E402
from ihtrain.run.checkpoint import FINAL, LAST, checkpoint_dir, load_checkpoint, load_model  # noqa: E402
from ihtrain.config import resolve  # noqa: E402
from ihtrain.run.train import train_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class _Payload:
    """Unpickling this calls ``os.system`` with a command that leaves a marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.fixture(scope="module")
def done_run(tmp_path_factory, smoke_cache):
    out = tmp_path_factory.mktemp("r3") / "run"
    cfg = resolve("cpu-smoke", overrides={"data.cache_dir": str(smoke_cache), "train.threads": 1})
    assert train_run(cfg, out, progress=False, make_figures=False)["status"] == "done"
    return out


def _plant(path: Path, marker: Path) -> None:
    """A checkpoint whose dict holds the payload beside real weights (as an attacker would ship it)."""
    ckpt = torch.load(path, weights_only=True)
    ckpt["extra"] = _Payload(marker)
    with open(path, "wb") as f:
        torch.save(ckpt, f)


@pytest.mark.parametrize("name", [FINAL, LAST])
def test_a_pickle_payload_in_a_checkpoint_never_runs(done_run, tmp_path, name):
    run = tmp_path / "run"
    shutil.copytree(done_run, run)
    marker = tmp_path / "pwned"
    _plant(checkpoint_dir(run) / name, marker)
    with pytest.raises(UnreadableFile, match="may carry code"):
        load_checkpoint(checkpoint_dir(run) / name)
    with pytest.raises(UnreadableFile, match=re.escape(name)):
        load_model(run, "final" if name == FINAL else "last")
    assert not marker.exists()
    # the payload is live: an unrestricted unpickler would have run it (so the test can fail)
    torch.load(checkpoint_dir(run) / name, weights_only=False)
    assert marker.exists()


def test_ablate_on_a_planted_final_pt_refuses_and_runs_nothing(done_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(done_run, run)
    marker = tmp_path / "pwned"
    _plant(checkpoint_dir(run) / FINAL, marker)
    r = subprocess.run([sys.executable, "-m", "ihtrain.ablate", str(run), "--threads", "1"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode != 0 and "may carry code" in r.stderr, r.stderr[-2000:]
    assert not marker.exists()


def test_loading_onto_cuda_without_cuda_says_so(done_run):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(RuntimeError, match="no CUDA device.*not at fault"):
        load_checkpoint(checkpoint_dir(done_run) / FINAL, map_location="cuda")


def _unsafe_loads(tree: ast.AST) -> list[int]:
    """Lines of ``torch.load`` calls without ``weights_only=True`` and of ``pickle.load(s)`` calls."""
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value.id if isinstance(node.func.value, ast.Name) else ""
        if owner == "torch" and node.func.attr == "load":
            kw = {k.arg: k.value for k in node.keywords}
            ok = isinstance(kw.get("weights_only"), ast.Constant) and kw["weights_only"].value is True
            bad += [] if ok else [node.lineno]
        elif owner in ("pickle", "cloudpickle", "dill", "joblib") and node.func.attr in ("load", "loads"):
            bad.append(node.lineno)
    return bad


def test_the_unsafe_load_finder_sees_unsafe_calls():
    src = "import torch, pickle\ntorch.load(p)\ntorch.load(p, weights_only=False)\npickle.loads(b)\n" \
          "torch.load(p, weights_only=True)\n"
    assert _unsafe_loads(ast.parse(src)) == [2, 3, 4]


def test_no_file_is_unpickled_as_code_anywhere_in_the_package():
    """House rule: every torch.load passes weights_only=True; nothing calls pickle.load(s)."""
    found = {}
    for pkg in ("ihtrain", "ihstats", "analyses", "paper_figures", "benchmarks"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            lines = _unsafe_loads(ast.parse(path.read_text(), str(path)))
            if lines:
                found[str(path.relative_to(ROOT))] = lines
    assert not found, f"unsafe loads (use weights_only=True): {found}"


# ------------------------------------------------------------------ class 2: readers check what they read
from ihstats.base import io  # noqa: E402
from ihstats.base.contract import SchemaError, write_status  # noqa: E402
from ihstats.simulate.curves import simulate_curve  # noqa: E402
from ihstats.simulate.run_dirs import write_fake_grid  # noqa: E402


@pytest.fixture
def grid(tmp_path):
    runs = [(simulate_curve("sigmoid", "mixed", n=40, seed=i), {"train.batch_size": 4, "seed": i}) for i in range(3)]
    return tmp_path / "g", write_fake_grid(tmp_path / "g", runs)


def _edit(path: Path, fn) -> None:
    d = json.loads(path.read_text())
    fn(d)
    path.write_text(json.dumps(d))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_an_edited_config_is_refused_by_every_reader(grid, tmp_path):
    g, ids = grid
    _edit(g / ids[1] / "config.json", lambda d: d["config"]["train"].update(batch_size=64))  # B 4 -> 64
    with pytest.raises(SchemaError, match=f"run {ids[1]} .*edited after the run was made"):
        io.load_grid(g)
    skipped = io.load_grid(g, on_error="skip")  # reported by id, never fitted as B 64
    assert sorted(skipped.runs.run_id) == sorted([ids[0], ids[2]]) and ids[1] in skipped.skipped[0]
    r = _cli("ihstats.base.schema", "--logs-only", str(g))
    assert r.returncode == 1 and "edited after the run was made" in r.stdout and "ok" not in r.stdout.split()[-1]
    r = _cli("ihstats.emergence", str(g), "--method", "threshold", "-o", str(tmp_path / "e.csv"))
    assert r.returncode == 2 and ids[1] in r.stderr and not (tmp_path / "e.csv").exists()


def test_a_done_run_missing_its_last_evaluation_is_refused_not_censored_early(grid):
    g, ids = grid
    m = pd.read_parquet(g / ids[0] / "metrics.parquet")
    m[m.step < m.step.max()].to_parquet(g / ids[0] / "metrics.parquet", index=False)
    with pytest.raises(SchemaError, match=f"run {ids[0]} .*ends at update .*done at update {m.step.max()}"):
        io.load_grid(g)


@pytest.mark.parametrize("lost", ["metrics.parquet", "config.json"])
def test_a_run_that_lost_a_file_is_reported_never_dropped(grid, lost):
    g, ids = grid
    (g / ids[2] / lost).unlink()
    with pytest.raises(SchemaError, match=re.escape(ids[2])):
        io.load_grid(g)
    part = io.load_grid(g, on_error="skip")
    assert len(part.runs) == 2 and len(part.skipped) == 1 and ids[2] in part.skipped[0]
    assert _cli("ihstats.base.schema", "--logs-only", str(g)).returncode == 1


@pytest.mark.parametrize("how", ["copy", "symlink"])
def test_a_duplicated_run_directory_is_refused(grid, how):
    g, ids = grid
    (shutil.copytree if how == "copy" else os.symlink)(g / ids[0], g / "extra")
    with pytest.raises(SchemaError, match=f"run {ids[0]}" + (".*symlink" if how == "symlink" else "")):
        io.load_grid(g)
    r = _cli("ihstats.base.schema", "--logs-only", str(g))
    assert r.returncode == 1 and "not listed in" in r.stdout and "held by 2 directories" in r.stdout


def test_resume_refuses_a_last_pt_of_another_run(done_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(done_run, run)
    path = checkpoint_dir(run) / LAST
    ckpt = torch.load(path, weights_only=True)
    ckpt["run_id"] = "0123456789ab"  # as in a last.pt copied from another seed's run
    torch.save(ckpt, path)
    write_status(run, "running", ckpt["step"], reason="interrupted")
    cfg = resolve("cpu-smoke", overrides={"data.cache_dir": str(json.loads((run / "config.json").read_text())
                                                                 ["config"]["data"]["cache_dir"]),
                                          "train.threads": 1})
    with pytest.raises(UnreadableFile, match="belongs to run 0123456789ab"):
        train_run(cfg, run, progress=False, make_figures=False)
    assert json.loads((run / "status.json").read_text())["status"] != "done"


def test_ablate_refuses_a_final_pt_of_another_run(done_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(done_run, run)
    ckpt = torch.load(checkpoint_dir(run) / FINAL, weights_only=True)
    ckpt["run_id"] = "0123456789ab"
    torch.save(ckpt, checkpoint_dir(run) / FINAL)
    with pytest.raises(UnreadableFile, match="belongs to run 0123456789ab"):
        load_model(run, "final")


# ------------------------------------------------------------------ class 3: outputs never land on inputs
from ihstats.base.cli_checks import WRITTEN_RECORD, OutputPathError, check_out_dir, check_out_file  # noqa: E402


@pytest.mark.parametrize("own", ["metrics.parquet", "config.json", "train.parquet", "checkpoints/final.pt",
                                 "../summary.csv", "../grid.json"])
def test_no_output_file_replaces_a_runs_or_grids_own_file(grid, own):
    g, ids = grid
    (g / "summary.csv").write_text("run_id\n")
    target = (g / ids[0] / own).resolve() if not own.startswith("..") else g / own[3:]
    before = target.read_bytes() if target.is_file() else None
    with pytest.raises(OutputPathError, match="own"):
        check_out_file(target)
    r = _cli("ihstats.emergence", str(g), "--method", "threshold", "-o", str(target))
    assert r.returncode == 2 and "own" in r.stderr and (target.read_bytes() if target.is_file() else None) == before


def test_ablate_out_onto_the_runs_own_files_is_refused_before_any_work(done_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(done_run, run)
    for own in ("metrics.parquet", "config.json", "train.parquet", "checkpoints/final.pt"):
        before = (run / own).read_bytes()
        r = _cli("ihtrain.ablate", str(run), "--threads", "1", "--out", str(run / own))
        assert r.returncode == 2 and "own" in r.stderr and (run / own).read_bytes() == before, r.stderr


def test_a_file_the_package_did_not_write_is_never_overwritten(grid, tmp_path):
    g, _ = grid
    mine = tmp_path / "mine.csv"
    mine.write_text("my notes\n")
    r = _cli("ihstats.emergence", str(g), "--method", "threshold", "-o", str(mine))
    assert r.returncode == 2 and "not written by this package" in r.stderr and mine.read_text() == "my notes\n"
    out = tmp_path / "e.csv"  # its own output it may rewrite: it is in the folder's record
    for _ in range(2):
        assert _cli("ihstats.emergence", str(g), "--method", "threshold", "-o", str(out)).returncode == 0
    assert "e.csv" in (tmp_path / WRITTEN_RECORD).read_text().split()


@pytest.mark.parametrize("kind, theirs", [("run", "curves.png"), ("grid", "summary.csv")])
def test_a_run_or_grid_out_holding_a_users_files_is_refused(tmp_path, kind, theirs):
    (tmp_path / theirs).write_text("the user's own")
    with pytest.raises(OutputPathError, match=f"holds {theirs} but is not a {kind} directory"):
        check_out_dir(tmp_path, kind=kind)
    cmd = ("ihtrain.train", "--preset", "cpu-smoke") if kind == "run" else ("ihtrain.grid", "--preset", "bxc-law")
    r = _cli(*cmd, "--out", str(tmp_path))
    assert r.returncode == 2 and theirs in r.stderr and (tmp_path / theirs).read_text() == "the user's own"


@pytest.mark.parametrize("where", ["/", "/usr/share/ihlaw", "ihtrain/presets", "ihstats", "<prefix>"])
def test_system_and_package_folders_are_refused(where):
    path = Path(sys.prefix) / "out" if where == "<prefix>" else (ROOT / where if not where.startswith("/") else
                                                                  Path(where))
    with pytest.raises(OutputPathError, match="root|system folder|package folder|Python installation"):
        check_out_dir(path)
    with pytest.raises(OutputPathError):
        check_out_file(path / "t.csv")
    r = _cli("ihtrain.train", "--preset", "cpu-smoke", "--out", str(path))
    assert r.returncode == 2 and "give another folder" in r.stderr


def test_results_are_never_written_into_a_run_or_grid_folder(grid):
    g, ids = grid
    for folder in (g, g / ids[0], g / ids[0] / "plots"):
        with pytest.raises(OutputPathError, match="holds only what its trainer writes"):
            check_out_dir(folder)


def test_a_second_ablation_condition_keeps_the_first(done_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(done_run, run)
    # one head: random sets exist whichever layer the top head sits in (two of four heads can fill a layer)
    args = ["ihtrain.ablate", str(run), "--threads", "1", "--examples", "4", "--top-k", "1", "--random-sets", "1",
            "--metrics", "val"]
    assert _cli(*args, "--condition", "a").returncode == 0
    first = pd.read_csv(run / "ablation.csv")
    assert _cli(*args, "--condition", "b", "--mode", "mean").returncode == 0
    both = pd.read_csv(run / "ablation.csv")
    assert sorted(both["condition"].unique()) == ["a", "b"]
    pd.testing.assert_frame_equal(both[both.condition == "a"].reset_index(drop=True), first)
    assert _cli(*args, "--condition", "a").returncode == 0  # a rerun replaces its own rows only
    assert len(pd.read_csv(run / "ablation.csv")) == len(both)


# ------------------------------------------------------------------ class 4: cross-column and cross-table rules
from ihstats.frontier.data import prepare as frontier_cells  # noqa: E402
from ihstats.frontier.spec import FrontierSpec  # noqa: E402
from ihstats.law.data import prepare  # noqa: E402
from ihstats.law.spec import UPTLawError, UPTLawSpec  # noqa: E402
from ihstats.ablation.pooled import condition_of, pooled_ablation_tests  # noqa: E402
from ihstats.simulate.ablation import simulate_ablation  # noqa: E402
from ihstats.simulate.frontier import simulate_frontier  # noqa: E402
from ihstats.simulate.law import simulate_emergence_table  # noqa: E402


def test_onsets_in_tokens_past_the_runs_last_step_are_refused():
    table, _ = simulate_emergence_table(seed=1)
    prepare(table, UPTLawSpec())  # the table as simulated fits
    tokens = table.assign(onset=table["onset"] * table["B"] * table["C"])  # onsets given in tokens
    with pytest.raises(UPTLawError, match="onset: after the run's last_step.*not tokens"):
        prepare(tokens, UPTLawSpec())


def test_every_fit_refuses_a_table_listing_each_run_twice():
    law, _ = simulate_emergence_table(seed=1)
    with pytest.raises(UPTLawError, match="one row per run"):
        prepare(pd.concat([law, law]), UPTLawSpec())
    front, _ = simulate_frontier(n_seeds=2)
    frontier_cells(front, FrontierSpec())
    with pytest.raises(ValueError, match="the frontier needs one row per run"):
        frontier_cells(pd.concat([front, front]), FrontierSpec())


def test_validate_law_refuses_a_test_set_that_was_fitted():
    from ihstats.law.validation import _disjoint
    table, _ = simulate_emergence_table(seed=1)
    test = prepare(table, UPTLawSpec())
    _disjoint(set(), test)  # no shared runs: accepted
    with pytest.raises(UPTLawError, match="disjoint fit and test sets"):
        _disjoint(set(table["run_id"].astype(str)), test)
    r = subprocess.run([sys.executable, "analyses/validate_law.py", "--fit", "data/reference_runs/bxc-markov",
                        "--test", "data/reference_runs/bxc-markov", "--fast", "--out", "/tmp/never"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode != 0 and "disjoint" in r.stderr, r.stderr[-1500:]


@pytest.mark.parametrize("label", ["forward@s1x", "forward@s1@s2", "forward@sx", "forward@1", "@s1"])
def test_ablation_seed_labels_follow_an_exact_grammar(label):
    assert condition_of("forward@s12") == "forward" and condition_of("natural") == "natural"
    with pytest.raises(ValueError, match="not a seed label MODE@sSEED"):
        condition_of(label)
    table, _ = simulate_ablation(conditions=("forward@s0", label), n_random=9, n_examples=20)
    with pytest.raises(ValueError, match=re.escape(repr(label))):
        pooled_ablation_tests(table)


def test_a_budget_the_runs_never_trained_to_is_refused(grid):
    from ihstats.frontier.budget import two_budgets
    g, ids = grid
    data = io.load_grid(g)
    cap = json.loads((g / ids[0] / "config.json").read_text())["config"]["train"]["max_steps"]
    with pytest.raises(ValueError, match=f"past train.max_steps.*--cap <= {cap}"):
        two_budgets(data, 3.0, cap * 10)
    with pytest.raises(ValueError, match="before the runs' first evaluation"):
        two_budgets(data, 1e9)
    r = _cli("ihstats.frontier.budget", str(g), "--cap", str(cap * 10))
    assert r.returncode == 2 and "past train.max_steps" in r.stderr


def test_a_join_that_matches_nothing_is_an_error():
    from ihstats.tables import matched
    matched(pd.Series(["forward@s0", "none@s0"]), pd.Series(["forward@s0", "other"]), "t")  # one match: fine
    with pytest.raises(ValueError, match="another experiment"):
        matched(pd.Series(["forward@s0", "none@s0"]), pd.Series(["natural", "biinduct"]), "the ablation table")


# ------------------------------------------------------------------ class 5: --status reads the directory's record
GRID_TOML = """
name = "mine"
[base]
preset = "cpu-smoke"
[axes]
"train.batch_size" = [4, 8]
"""


def test_grid_status_reads_the_directorys_own_grid_json(tmp_path):
    from ihtrain.grid.cli import load, write_grid_json
    (tmp_path / "g.toml").write_text(GRID_TOML)
    spec = load(spec=str(tmp_path / "g.toml"), seeds=3, overrides={"train.max_steps": 9})
    runs = spec.expand()
    write_grid_json(spec, runs, tmp_path / "g")
    r = _cli("ihtrain.grid", "--status", "--out", str(tmp_path / "g"))
    assert r.returncode == 0, r.stderr
    assert f"grid mine in {tmp_path / 'g'}: 6 pending" in r.stdout  # 2 cells x 3 seeds, not the default preset
    assert all(run.run_id in r.stdout for run in runs)
    r = _cli("ihtrain.grid", "--status", "--out", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and "no such directory" in r.stderr and "pending" not in r.stdout
    r = _cli("ihtrain.grid", "--status", "--preset", "bxc-law", "--out", str(tmp_path / "g"))
    assert r.returncode == 2 and "holds grid 'mine', not 'bxc-law'" in r.stderr
    (tmp_path / "child.toml").write_text('extends = "g.toml"\nname = "child"\n')  # a parent beside the spec only
    spec = load(spec=str(tmp_path / "child.toml"))
    write_grid_json(spec, spec.expand(), tmp_path / "c")
    r = _cli("ihtrain.grid", "--status", "--out", str(tmp_path / "c"))
    assert r.returncode == 0 and "grid child" in r.stdout and "2 pending" in r.stdout, r.stderr


def test_grid_status_reads_a_grid_whose_base_sets_an_axis_field(tmp_path):
    # bxc-law's [base] sets train.batch_size (to keep the base config valid) and its cell axis sweeps
    # it: grid.json records both, and --status must not read the base's copy as a --set override
    from ihtrain.grid.cli import load, write_grid_json
    spec = load(preset="bxc-law", overrides={"train.max_steps": 9})
    write_grid_json(spec, spec.expand(), tmp_path / "g")
    r = _cli("ihtrain.grid", "--status", "--out", str(tmp_path / "g"))
    assert r.returncode == 0, r.stderr
    assert "18 pending" in r.stdout
    r = _cli("ihtrain.grid", "--status", "--out", "data/reference_runs/bxc-law")
    assert r.returncode == 0 and "18 done" in r.stdout, r.stderr


# ------------------------------------------------------------------ class 6: messages say what happened and what to do
def test_a_bom_is_read_and_a_syntax_error_is_named_as_such(tmp_path):
    from ihtrain.config import ConfigError, load_toml
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf[train]\nmax_steps = 5\n")
    assert load_toml(tmp_path / "bom.toml") == {"train": {"max_steps": 5}}
    (tmp_path / "bad.toml").write_text("[train\nmax_steps = 5\n")
    with pytest.raises(ConfigError, match="invalid TOML syntax"):
        load_toml(tmp_path / "bad.toml")
    (tmp_path / "latin.toml").write_bytes(b"name = \"caf\xe9\"\n")
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_toml(tmp_path / "latin.toml")


def test_train_given_a_grid_spec_says_so_in_one_short_line(tmp_path):
    (tmp_path / "g.toml").write_text(GRID_TOML)
    r = _cli("ihtrain.train", "--config", str(tmp_path / "g.toml"))
    assert r.returncode == 2 and "is a grid spec" in r.stderr and "python -m ihtrain.grid --spec" in r.stderr
    r = _cli("ihtrain.train", "--preset", "cpu-smoke", "--set", "train.max_step=5", "--print-config")
    assert r.returncode == 2 and "did you mean train.max_steps" in r.stderr and len(r.stderr) < 400


def test_only_compares_numbers_as_numbers(tmp_path):
    from ihtrain.grid.cli import load
    from ihtrain.grid.plan import select_runs
    (tmp_path / "g.toml").write_text(GRID_TOML.replace('"train.batch_size" = [4, 8]', '"train.lr" = [0.01, 0.003]'))
    runs = load(spec=str(tmp_path / "g.toml")).expand()
    want = {r.run_id for r in runs if r.config.train.lr == 0.01}
    assert select_runs(runs, "train.lr=1e-2") == select_runs(runs, "train.lr=0.01") == want


def test_sigterm_stops_a_training_run_resumably_with_exit_130(tmp_path, smoke_cache):
    import signal
    import time
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-m", "ihtrain.train", "--preset", "cpu-smoke", "--out", str(out),
                          "--no-progress", "--set", "train.threads=1", "--set", "train.max_steps=100000",
                          "--set", f"data.cache_dir={smoke_cache}"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while not (out / "train.parquet").is_file() and time.time() < deadline and p.poll() is None:
        time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err[-1500:]
    assert "rerun the same command to resume" in err
    st = json.loads((out / "status.json").read_text())
    assert st["status"] == "running" and st["stop_reason"] == "interrupted"


def test_schema_on_a_missing_directory_says_so():
    r = _cli("ihstats.base.schema", "/nonexistent/grid")
    assert r.returncode == 2 and "no such directory" in r.stderr and "status.json" not in r.stderr + r.stdout


def test_a_run_may_be_trained_into_a_grid_but_nothing_into_a_run(grid):
    g, ids = grid
    assert check_out_dir(g / "newrun", kind="run") == g / "newrun"  # one run of a grid, by hand
    assert check_out_dir(g / ids[0], kind="run") == g / ids[0]  # the run itself: it resumes
    for kind in ("run", "grid"):
        with pytest.raises(OutputPathError, match="lies in the run directory"):
            check_out_dir(g / ids[0] / "inner", kind=kind)
