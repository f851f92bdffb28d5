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

from ihstats.fileio import UnreadableFile  # noqa: E402
from ihtrain.checkpoint import FINAL, LAST, checkpoint_dir, load_checkpoint, load_model  # noqa: E402
from ihtrain.config import resolve  # noqa: E402
from ihtrain.train import train_run  # noqa: E402

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
from ihstats import io  # noqa: E402
from ihstats.contract import SchemaError, write_status  # noqa: E402
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
    r = _cli("ihstats.schema", "--logs-only", str(g))
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
    assert _cli("ihstats.schema", "--logs-only", str(g)).returncode == 1


@pytest.mark.parametrize("how", ["copy", "symlink"])
def test_a_duplicated_run_directory_is_refused(grid, how):
    g, ids = grid
    (shutil.copytree if how == "copy" else os.symlink)(g / ids[0], g / "extra")
    with pytest.raises(SchemaError, match=f"run {ids[0]}" + (".*symlink" if how == "symlink" else "")):
        io.load_grid(g)
    r = _cli("ihstats.schema", "--logs-only", str(g))
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
