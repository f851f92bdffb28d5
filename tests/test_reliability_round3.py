"""Reliability round 3 (issue 50): files a user is handed are data, never code. Each case asserts a
clear error or the correct result."""

import ast
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

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
