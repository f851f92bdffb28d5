"""Grid specs: parsing, expansion, include/exclude, errors, presets, CLI; one failing-run grid."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from ihtrain.config import ConfigError
from ihtrain.grid.cli import build_parser, main
from ihtrain.grid.plan import GridOptions, Placement, make_tasks, plan_local, start_order
from ihtrain.grid.spec import grid_preset_paths, load_grid_preset, parse_spec
from ihtrain.grid.status import run_state, to_execute
from ihtrain.grid.run_cost import train_flops_per_token

ROOT = Path(__file__).resolve().parents[2]


def spec_of(text: str):
    return parse_spec(tomllib.loads(text), source="test.toml")


BXC = """
name = "g"
description = "test grid"
include = [{ "train.batch_size" = 4, "train.context" = 16 }]
exclude = [{ "train.batch_size" = 16, "train.context" = 64 }]
[base]
preset = "cpu-smoke"
[base.train]
max_steps = 7
[axes]
"train.batch_size" = [8, 16]
"train.context" = [32, 64]
"""


def test_product_include_exclude():
    spec = spec_of(BXC)
    runs = spec.expand()
    points = [(r.config.train.batch_size, r.config.train.context) for r in runs]
    # 2 x 2 product, minus (16, 64), plus the include point, in product order
    assert points == [(8, 32), (8, 64), (16, 32), (4, 16)]
    assert [r.origin for r in runs] == ["product"] * 3 + ["include[0]"]
    assert all(r.config.name == "g" and r.config.train.max_steps == 7 for r in runs)
    assert all(r.config.model.d_model == 32 for r in runs)  # from the cpu-smoke preset
    assert len({r.run_id for r in runs}) == 4
    assert runs[0].factors == {"train.batch_size": 8, "train.context": 32}
    assert spec.columns == ["train.batch_size", "train.context"]
    # run ids are the config's own hash: stable across parses
    assert [r.run_id for r in spec_of(BXC).expand()] == [r.run_id for r in runs]


def test_group_axis_forms_and_labels():
    spec = spec_of("""
name = "sizes"
include = [{ size = "small", seed = 5 }]
[base]
preset = "cpu-smoke"
[axes]
seed = [0, 1]
size = [{ label = "small", "model.d_model" = 32 }, { "model.d_model" = 64, "model.n_layer" = 1 }]
model = [{ n_head = 2 }, { n_head = 4 }]
""")
    runs = spec.expand()
    assert len(runs) == 2 * 2 * 2 + 1
    assert spec.columns == ["seed", "size", "model.d_model", "model.n_layer", "model", "model.n_head"]
    big = [r for r in runs if r.factors["size"] == "d_model=64,n_layer=1"]  # default label
    assert len(big) == 4 and all(r.config.model.n_layer == 1 and r.config.model.d_model == 64 for r in big)
    assert {r.factors["model"] for r in runs} == {"n_head=2", "n_head=4"}  # section key -> model.*
    inc = runs[-1]
    assert inc.factors["size"] == "small" and inc.config.seed == 5 and inc.config.model.d_model == 32
    assert inc.factors["model.n_layer"] == 2  # not set by the level: the base value


def test_exclude_by_group_label():
    spec = spec_of("""
name = "x"
exclude = [{ size = "big", seed = 1 }]
[base]
preset = "cpu-smoke"
[axes]
seed = [0, 1]
size = [{ label = "small", "model.d_model" = 32 }, { label = "big", "model.d_model" = 64 }]
""")
    got = {(r.config.seed, r.factors["size"]) for r in spec.expand()}
    assert got == {(0, "small"), (1, "small"), (0, "big")}


@pytest.mark.parametrize("text, needle", [
    ('name = "e"\n[axes]\n"train.batchsize" = [1, 2]', "axes.train.batchsize: unknown config field"),
    ('name = "e"\n[axes]\n"train.batch_size" = []', "axes.train.batch_size: empty axis"),
    ('name = "e"\n[axes]\n"train.batch_size" = [8, "big"]', "axes.train.batch_size[1]: train.batch_size: expected an integer"),
    ('name = "e"\n[axes]\n"train.budget" = ["steps", "forever"]', "train.budget: must be one of"),
    ('name = "e"\n[base]\npreset = "nope"', "base.preset: unknown preset 'nope'"),
    ('name = "e"\n[base.train]\nbatch = 3', "base: unknown config field 'train.batch'"),
    ('name = "e"\ninclude = [{ "train.batch_size" = 8 }]\n[base]\npreset = "cpu-smoke"\n[axes]\n"train.batch_size" = [8, 16]',
     "include[0]: duplicate run id"),
    ('name = "e"\n[base]\npreset = "cpu-smoke"\n[axes]\n"train.batch_size" = [8]\ninclude = [{ seed = 1 }]',
     "axes.include: include/exclude are top-level keys and must appear before the first [table]"),
    ('name = "e"\nexclude = [{ "train.batch_size" = 4 }]\n[axes]\n"train.batch_size" = [8, 16]', "exclude[0]:"),
    ('name = "e"\n[axes]\n"train.batch_size" = [8, 8]', "duplicate values"),
    ('name = "e"\n[axes]\n"train.context" = [64, 512]', "axes: train.context: 512 is longer than the model's context"),
    ('name = "e"\nsteps = 3', "unknown top-level key 'steps'"),
    ('description = "no name"', "name: a non-empty string"),
    ('name = "e"\n[axes]\nsize = [{ label = "a", "model.dmodel" = 1 }]', "axes.size[0]: unknown config field 'model.dmodel'"),
    ('name = "e"\nextends = "bxc-cpv"', "extends: 'bxc-cpv' is neither a grid preset (biinduct-paper, biinduct-text-cpu, biinduct-text, biinduct, bxc-cross-holdout, bxc-cross, "),
    ('name = "e"\nextends = 3', "extends: expected a grid preset name or a spec file path, got 3"),
    ('name = "e"\nextends = "bxc-text"\n[axes]\n"train.batch_size" = [16, "x"]', "axes.train.batch_size[1]:"),
])
def test_bad_specs_name_the_field(text, needle):
    with pytest.raises(ConfigError) as e:
        spec_of(text).expand()
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


def test_extends_merges_base_axes_and_lists(tmp_path):
    """A spec that extends another: base fields on top, axes replaced by key or added, include and
    exclude inherited unless given; the same runs as the spec written out in full."""
    parent = tmp_path / "parent.toml"
    parent.write_text(BXC)
    (tmp_path / "sub").mkdir()
    child = tmp_path / "sub" / "child.toml"
    child.write_text('name = "c"\nextends = "../parent.toml"\n[base.train]\nlr = 1e-3\n'
                     '[axes]\n"train.context" = [16, 32, 64]\nseed = [0, 1]\n')
    from ihtrain.grid.spec import load_spec

    spec = load_spec(child)
    assert spec.name == "c" and spec.raw["extends"] == "../parent.toml"
    assert spec.raw["base"]["train.max_steps"] == 7 and len(spec.raw["exclude"]) == 1  # grid.json: resolved
    assert [ax.name for ax in spec.axes] == ["train.batch_size", "train.context", "seed"]
    full = spec_of(BXC.replace('name = "g"', 'name = "c"').replace("max_steps = 7", "max_steps = 7\nlr = 1e-3")
                   .replace('"train.context" = [32, 64]', '"train.context" = [16, 32, 64]\nseed = [0, 1]'))
    assert [r.run_id for r in spec.expand()] == [r.run_id for r in full.expand()]
    assert len(spec.expand()) == 2 * 3 * 2 - 2 + 1  # the parent's exclude (both seeds) and include
    # the default grid with its width-160 level at another rate: 9 runs, the preset's other fields
    probe = spec_of('name = "p"\nextends = "bxc-text"\n[axes]\n'
                    'size = [{ label = "d160", "model.d_model" = 160, "train.lr" = 1.5e-2 }]').expand()
    assert len(probe) == 9 and {(r.config.model.d_model, r.config.train.lr) for r in probe} == {(160, 1.5e-2)}
    assert {r.config.train.dtype for r in probe} == {"float32"}
    loop = tmp_path / "loop.toml"
    loop.write_text('name = "l"\nextends = "loop.toml"\n')
    with pytest.raises(ConfigError, match="a cycle"):
        load_spec(loop)


def test_presets_parse_and_meet_the_brief():
    paths = grid_preset_paths()
    assert {"bxc-markov", "bxc-text", "bxc-paper"} <= set(paths)
    for name in paths:
        load_grid_preset(name).expand()  # every shipped spec (also other engineers') is valid
    for name in ("bxc-markov", "bxc-text"):  # B x C (3 levels each, a factor >= 4) x 2 model sizes
        cpu = load_grid_preset(name).expand()
        Bs = {r.config.train.batch_size for r in cpu}
        Cs = {r.config.train.context for r in cpu}
        Ns = {r.factors["size"] for r in cpu}
        assert len(Bs) == 3 and max(Bs) / min(Bs) >= 4 and len(Cs) == 3 and max(Cs) / min(Cs) >= 4 and len(Ns) == 2
        assert all(r.config.train.budget == "until-emergence" for r in cpu)
    fast = load_grid_preset("bxc-markov").expand()  # one setting for every cell: only B, C, width and seed vary
    assert len({(r.config.train.lr, r.config.data.markov.vocab) for r in fast}) == 1
    assert len(fast) == 36 and {r.seed for r in fast} == {0, 1}  # 2 seeds per cell (the packing issue)
    assert all(r.config.data.markov.vocab > r.config.train.context for r in fast)
    paper = load_grid_preset("bxc-paper").expand()
    assert min(r.config.train.batch_size for r in paper) == 4 and max(r.config.train.batch_size for r in paper) == 512
    assert min(r.config.train.context for r in paper) == 64 and max(r.config.train.context for r in paper) == 4096
    assert all(r.config.train.lr == 2.5e-4 and r.config.train.schedule == "cosine" and r.config.model.n_head == 8
               for r in paper)
    with pytest.raises(ConfigError, match="unknown grid preset 'nope'"):
        load_grid_preset("nope")


def test_plan_local_splits_threads(monkeypatch):
    monkeypatch.setattr("ihtrain.grid.plan.cpu_count", lambda: 16)
    assert plan_local(100, None, None, [], 1) == (16, 1)
    assert plan_local(2, None, None, [], 1) == (2, 8)  # fewer runs than cores: threads go to them
    assert plan_local(100, 4, None, [], 1) == (4, 4)
    assert plan_local(100, None, 4, [], 1) == (4, 4)
    assert plan_local(100, None, None, ["0", "1"], 3) == (6, 2)  # 2 GPUs x 3 runs each


def test_grid_options_from_the_command_line(capsys):
    assert GridOptions.from_args(build_parser().parse_args([])) == GridOptions()  # the CLI's defaults
    args = build_parser().parse_args(["--workers", "3", "--no-pack", "--pack-size", "2", "--retry-failed",
                                      "--order", "spec", "--executor", "ray", "--ray-address", "auto",
                                      "--threads-per-run", "2", "--runs-per-gpu", "4", "--no-progress",
                                      "--no-figures"])
    assert GridOptions.from_args(args) == GridOptions(
        retry_failed=True, order="spec", executor="ray", workers=3, threads_per_run=2, runs_per_gpu=4,
        ray_address="auto", pack=False, pack_size=2, progress=False, figures=False)
    with pytest.raises(ConfigError, match="--pack-size: must be a positive integer, got 0"):
        GridOptions(pack_size=0)
    with pytest.raises(AttributeError):  # frozen: built once in main, then only read
        GridOptions().workers = 2  # type: ignore[misc]
    assert main(["--workers", "0", "--dry-run"]) == 2
    assert "error: --workers: must be a positive integer, got 0" in capsys.readouterr().err


def test_tasks_carry_the_validated_run_config(tmp_path):
    """The worker trains the RunConfig that expand() validated, not a dict rebuilt without checks."""
    import pickle

    runs = spec_of(BXC).expand()
    states = {r.run_id: ("new", None) for r in runs}
    tasks = make_tasks(Placement(None, [[runs[0]], runs[1:3]], 2, ""), states, tmp_path, make_figures=False)
    assert tasks[0].config is runs[0].config and tasks[0].threads == 2 and not tasks[0].make_figures
    assert [m.config for m in tasks[1].members] == [runs[1].config, runs[2].config]
    assert tasks[1].run_id == f"pack-{runs[1].run_id}+1" and tasks[1].run_dir == str(tmp_path / runs[1].run_id)
    sent = pickle.loads(pickle.dumps(tasks[1]))  # as the spawned worker receives it
    assert [m.config for m in sent.members] == [runs[1].config, runs[2].config]
    assert sent.members[0].config.run_id() == runs[1].run_id


def test_resume_states(tmp_path):
    run = spec_of(BXC).expand()[0]
    assert run_state(run, tmp_path)[0] == "new"
    (tmp_path / run.run_id).mkdir()
    # a done run counts as done only with its config.json (issue 38); the others need none
    (tmp_path / run.run_id / "config.json").write_text(json.dumps({"run_id": run.run_id, "config": run.config.to_dict()}))
    for status, state in (("running", "interrupted"), ("failed", "failed"), ("done", "done")):
        (tmp_path / run.run_id / "status.json").write_text(json.dumps({"status": status, "step": 3}))
        assert run_state(run, tmp_path)[0] == state
    assert to_execute("interrupted", False) and to_execute("new", False) and not to_execute("done", True)
    assert not to_execute("failed", False) and to_execute("failed", True)


def test_start_order_resumes_interrupted_runs_then_longest_first(tmp_path):
    runs = spec_of(BXC).expand()  # (8, 32), (8, 64), (16, 32), (4, 16); 7 updates each

    def points(order):
        states = {r.run_id: run_state(r, tmp_path) for r in runs}
        return [(r.config.train.batch_size, r.config.train.context) for r in start_order(runs, states, order)]

    # same tokens per update for (8, 64) and (16, 32): the longer context costs more attention FLOPs
    assert points("longest-first") == [(8, 64), (16, 32), (8, 32), (4, 16)]
    assert points("spec") == [(8, 32), (8, 64), (16, 32), (4, 16)]
    (tmp_path / runs[3].run_id).mkdir()
    (tmp_path / runs[3].run_id / "status.json").write_text(json.dumps({"status": "running", "step": 3}))
    assert points("longest-first") == [(4, 16), (8, 64), (16, 32), (8, 32)]


def test_train_flops_per_token_matches_the_model():
    import torch

    from ihtrain.model import GPT

    cfg = spec_of(BXC).expand()[1].config
    cfg.model.vocab_size = 300
    for attn_only in (False, True):
        cfg.model.attn_only = attn_only
        with torch.device("meta"):
            model = GPT(cfg.model)
        # the model also counts biases and layer norms: 2% of N at width 32, less when wider
        want = model.estimate_flops_per_token(cfg.train.context)
        assert train_flops_per_token(cfg) == pytest.approx(want, rel=0.03)


def test_cli_bad_input_exit_2_and_dry_run(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "b"\n[axes]\n"train.batch_size" = []\n')
    assert main(["--spec", str(bad), "--dry-run"]) == 2
    assert "error: axes.train.batch_size: empty axis" in capsys.readouterr().err
    assert main(["--preset", "nope", "--dry-run"]) == 2
    assert "unknown grid preset 'nope'" in capsys.readouterr().err
    assert main(["--preset", "bxc-text", "--set", "train.batch_size=3", "--dry-run"]) == 2
    assert "--set train.batch_size: this field is an axis" in capsys.readouterr().err
    good = tmp_path / "g.toml"
    good.write_text(BXC)
    assert main(["--spec", str(good), "--out", str(tmp_path / "out"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    ids = [r.run_id for r in spec_of(BXC).expand()]
    assert all(i in out for i in ids) and "steps 7 upd" in out and out.count(" run\n") == 4
    assert not (tmp_path / "out").exists()  # a dry run writes nothing
    assert main(["--list-presets"]) == 0
    assert "bxc-text" in capsys.readouterr().out


def test_help_runs():
    out = subprocess.run([sys.executable, "-m", "ihtrain.grid", "--help"], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.returncode == 0 and "--retry-failed" in out.stdout and "--runs-per-gpu" in out.stdout


def test_lock_excludes_a_second_grid(tmp_path):
    from ihtrain.run.locks import GridLock

    a, b = GridLock(tmp_path), GridLock(tmp_path)
    a.acquire()
    # flock is per open file description, so a second acquire in this process is refused too
    with pytest.raises(RuntimeError, match=f"pid {os.getpid()}"):
        b.acquire()
    a.release()
    b.acquire()  # released (as the kernel does when the holder dies): free again
    b.release()


# two runs: the builtin corpus, and a text source whose files do not exist (fails at start)
GOOD_AND_MISSING_SOURCE = """
name = "fail"
[base]
preset = "cpu-smoke"
[base.train]
max_steps = 6
[base.metrics]
n_evals = 3
[axes]
"data.source" = ["builtin", "text:/nonexistent/nothing-*.txt"]
"""


def test_failing_run_is_recorded_and_others_finish(tmp_path, smoke_cache):
    """One run's data source does not exist: it fails at start, the other finishes, exit code 1."""
    spec = tmp_path / "f.toml"
    spec.write_text(GOOD_AND_MISSING_SOURCE)
    out = tmp_path / "grid"
    proc = subprocess.run([sys.executable, "-m", "ihtrain.grid", "--spec", str(spec), "--out", str(out),
                           "--no-progress", "--no-figures", "--workers", "2"], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, env={**os.environ, "IHLAW_CACHE": str(smoke_cache)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    man = pd.read_parquet(out / "manifest.parquet").set_index("data.source")
    assert man.loc["builtin", "status"] == "done" and man.loc["builtin", "steps"] == 6
    bad = man.loc["text:/nonexistent/nothing-*.txt"]
    assert bad["status"] == "failed" and bad["reason"]
    assert "1 run(s) not done; rerun with --retry-failed to retry the failed\n" in proc.stderr
    assert bad["run_id"] in proc.stderr
    assert "data text:/nonexistent/nothing-*.txt: not ready" in proc.stdout  # reported before the workers
    assert (out / bad["run_id"] / "error.txt").is_file()
    # rerun without --retry-failed: nothing to do, still non-zero; the done run is not retrained
    mtime = (out / man.loc["builtin", "run_id"] / "metrics.parquet").stat().st_mtime_ns
    again = subprocess.run([sys.executable, "-m", "ihtrain.grid", "--spec", str(spec), "--out", str(out),
                            "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=120,
                           env={**os.environ, "IHLAW_CACHE": str(smoke_cache)})
    assert again.returncode == 1 and "0 to run" in again.stdout
    assert (out / man.loc["builtin", "run_id"] / "metrics.parquet").stat().st_mtime_ns == mtime
    # --status reads the grid without running it: the done run's numbers, the failed one's state
    st = subprocess.run([sys.executable, "-m", "ihtrain.grid", "--spec", str(spec), "--out", str(out), "--status",
                         "--wide"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert st.returncode == 0, st.stderr
    assert "1 done, 1 failed" in st.stdout and "a grid is running" not in st.stdout
    done_line = next(line for line in st.stdout.splitlines() if man.loc["builtin", "run_id"] in line)
    assert " done " in done_line and " 6 " in done_line
    assert " crossing " in next(line for line in st.stdout.splitlines() if "run_id" in line)
    # the default view is narrow: an 8-character id, the state, one onset column, under 120 characters
    narrow = subprocess.run([sys.executable, "-m", "ihtrain.grid", "--spec", str(spec), "--out", str(out),
                             "--status"], capture_output=True, text=True, cwd=ROOT, timeout=120).stdout
    rows = narrow.splitlines()[1:-1]
    assert rows[0].split()[0] == "run_id" and "onset [90%]" in rows[0] and "crossing" not in rows[0]
    done_line = next(line for line in rows if man.loc["builtin", "run_id"] in line)
    assert " done " in done_line and " 6 " in done_line and max(map(len, rows)) < 120


def test_status_marks_unfinished_runs_running_while_a_grid_holds_the_lock(tmp_path, capsys):
    from ihtrain.run.locks import GridLock

    good = tmp_path / "g.toml"
    good.write_text(BXC)
    run = spec_of(BXC).expand()[0]
    (tmp_path / "out" / run.run_id).mkdir(parents=True)
    (tmp_path / "out" / run.run_id / "status.json").write_text(json.dumps({"status": "running", "step": 3}))
    args = ["--spec", str(good), "--out", str(tmp_path / "out"), "--status"]
    assert main(args) == 0
    assert "1 interrupted, 3 pending" in capsys.readouterr().out  # nobody runs it: a killed grid left it
    lock = GridLock(tmp_path / "out")
    lock.acquire()
    try:
        assert main(args) == 0
        out = capsys.readouterr().out
        assert "3 pending, 1 running" in out and f"pid {os.getpid()}" in out
    finally:
        lock.release()


def test_only_runs_the_chosen_runs(tmp_path, smoke_cache, capsys, monkeypatch):
    """--only picks runs by id prefix: the others are neither run nor counted as failures."""
    monkeypatch.setenv("IHLAW_CACHE", str(smoke_cache))
    spec = tmp_path / "o.toml"
    spec.write_text(GOOD_AND_MISSING_SOURCE)
    good, bad = (r.run_id for r in spec_of(spec.read_text()).expand())
    out = tmp_path / "grid"
    base = ["--spec", str(spec), "--out", str(out), "--no-progress", "--no-figures", "--workers", "1"]
    assert main(base + ["--dry-run", "--only", good[:5]]) == 0
    table = capsys.readouterr().out
    assert "skip (not in --only)" in next(line for line in table.splitlines() if bad in line)
    assert main(base + ["--only", f"{bad}x"]) == 2  # no such id: a clear error, nothing written
    assert f"--only: no run id of this grid start with '{bad}x'" in capsys.readouterr().err
    assert not out.exists()
    assert main(base + ["--only", good[:5]]) == 0  # the failing run is not attempted
    man = pd.read_parquet(out / "manifest.parquet").set_index("run_id")
    assert man.loc[good, "status"] == "done" and man.loc[bad, "status"] == "pending"
    assert not (out / bad).exists()


def test_prepare_data_builds_each_cached_stream_once(tmp_path):
    """The grid builds the token streams its runs read before any worker starts: one per distinct
    corpus and tokenizer (a semi-natural source reads its base corpus), none for markov; a source
    that cannot be built is reported, not raised."""
    from ihtrain.data import build_source
    from ihtrain.grid.plan import prepare_data

    runs = spec_of(f"""
name = "prep"
[base]
preset = "cpu-smoke"
[base.data]
max_corpus_chars = 100000
cache_dir = "{tmp_path / 'cache'}"
[axes]
seed = [0, 1]
"data.source" = ["builtin", "seminatural", "markov", "text:{tmp_path}/none-*.txt"]
""").expand()
    lines = prepare_data(runs, progress=False)
    assert len(lines) == 2, lines
    assert lines[0].startswith("data builtin (bpe-300): ") and lines[0].endswith("for 4 run(s)")
    assert lines[1].startswith(f"data text:{tmp_path}/none-*.txt: not ready (") and "2 run(s)" in lines[1]
    tokens = list((tmp_path / "cache" / "tokens").glob("*.npy"))
    assert len(tokens) == 1
    mtime = tokens[0].stat().st_mtime_ns
    assert prepare_data(runs[:1], progress=False)[0].endswith("for 1 run(s)")  # cached now: not rebuilt
    semi = next(r.config for r in runs if r.config.data.source == "seminatural")
    assert build_source(semi.data, seed=semi.seed, progress=False).vocab_size > 2  # its worker reads the same
    assert list((tmp_path / "cache" / "tokens").glob("*.npy")) == tokens
    assert tokens[0].stat().st_mtime_ns == mtime


def test_reference_grids_follow_the_contract():
    """The committed grid logs (no weights) pass the logs-only schema check and load in ihstats."""
    from ihstats.base.io import load_grid
    from ihstats.base.schema import check_grid_dir

    grids = sorted((ROOT / "data" / "reference_runs").glob("bxc-cpu-*"))
    assert grids
    for grid in grids:
        assert check_grid_dir(grid, weights=False) == []
        assert all("final.pt" in p for p in check_grid_dir(grid))  # the default asks for the weights
        data = load_grid(grid)
        assert set(data.runs["run_id"]) == set(pd.read_parquet(grid / "manifest.parquet")["run_id"])


# ------------------------------------------------------------------------------ seeds
SEEDED = """
name = "s"
seeds = 3
include = [{ "train.batch_size" = 2 }]
[base]
preset = "cpu-smoke"
[axes]
"train.context" = [16, 32]
"""


def test_seeds_replicate_every_cell_with_one_cell_id():
    spec = spec_of(SEEDED)
    runs = spec.expand()
    assert len(runs) == (2 + 1) * 3 and len({r.run_id for r in runs}) == 9
    cells: dict[str, set[int]] = {}
    for r in runs:
        cells.setdefault(r.cell_id, set()).add(r.seed)
    assert list(cells.values()) == [{0, 1, 2}] * 3  # one cell_id per cell, its replicates adjacent
    assert spec.columns == ["train.context", "seed"] and runs[1].factors == {"train.context": 16, "seed": 1}
    # seeds = N is [axes] seed = [0..N-1] for the product: the same run ids
    axis = spec_of(SEEDED.replace("seeds = 3\n", "").replace("[16, 32]", "[16, 32]\nseed = [0, 1, 2]"))
    assert [r.run_id for r in runs if r.origin == "product"] == [r.run_id for r in axis.expand()
                                                                 if r.origin == "product"]
    listed = spec_of(SEEDED.replace("seeds = 3", "seeds = [4, 9]")).expand()
    assert {r.seed for r in listed} == {4, 9} and len({r.cell_id for r in listed}) == 3


@pytest.mark.parametrize("text, needle", [
    (SEEDED.replace('[16, 32]', '[16, 32]\nseed = [0, 1]'), "seeds and axes.seed: both set the run seed"),
    (SEEDED.replace("seeds = 3", "seeds = 0"), "seeds: expected a number of replicate seeds >= 1"),
    (SEEDED.replace("seeds = 3", "seeds = [1, 1]"), "non-empty list of distinct integers >= 0"),
])
def test_bad_seeds_name_the_keys(text, needle):
    with pytest.raises(ConfigError, match=re.escape(needle)):
        spec_of(text)


def test_extends_inherits_and_overrides_seeds(tmp_path):
    parent = tmp_path / "parent.toml"
    parent.write_text(SEEDED)
    child = tmp_path / "child.toml"
    child.write_text('name = "c"\nextends = "parent.toml"\n')
    from ihtrain.grid.spec import load_spec

    assert load_spec(child).seeds == [0, 1, 2]
    child.write_text('name = "c"\nextends = "parent.toml"\nseeds = 2\n')
    assert load_spec(child).seeds == [0, 1]
    child.write_text('name = "c"\nextends = "parent.toml"\n[axes]\nseed = [5]\n')  # the child's form wins
    spec = load_spec(child)
    assert spec.seeds == [] and {r.seed for r in spec.expand()} == {0, 5}  # include points: base seed


def _run_id_before_issue_26(cfg) -> str:
    """RunConfig.run_id as written before cell_id existed, frozen here: the rule must not move."""
    import hashlib

    from ihstats.base.ids import EXECUTION_ONLY_FIELDS

    d = cfg.to_dict()
    d.pop("name", None)
    for f in EXECUTION_ONLY_FIELDS:
        d["train"].pop(f, None)
    if d["data"]["markov"]["repeat_start"] == 0:  # added later (issue 39): absent from older configs
        del d["data"]["markov"]["repeat_start"]
    if d["train"]["emergence_metric"] == "ps":  # added later (issue 52)
        del d["train"]["emergence_metric"]
    late = {"repeat_distance": "uniform", "max_distance": 0, "frequency_exponent": 0.0, "frequency_ref_context": 64,
            "min_distance": 0, "copies_per_token": -1.0}  # the last two: the decoupled setting (issue 66)
    for sect in ("markov", "seminatural"):  # the generators' mechanism knobs, added later (issue 53)
        for k, default in late.items():
            if d["data"][sect][k] == default:
                del d["data"][sect][k]
    if d["data"]["seminatural"]["repeat_start"] == 0:
        del d["data"]["seminatural"]["repeat_start"]
    for kind in ("weight_seed", "data_seed"):  # seeds by kind (issue 66): -1 is the run's seed
        if d[kind] == -1:
            del d[kind]
    return hashlib.sha256(json.dumps(d, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]


def test_shipped_presets_keep_their_run_ids():
    """Every run of every shipped grid preset keeps its id; cell_id is the same rule without seed."""
    from ihstats.base.ids import cell_hash, config_hash

    for name in grid_preset_paths():
        for r in load_grid_preset(name).expand():
            assert r.run_id == _run_id_before_issue_26(r.config), (name, r.factors)
            assert r.cell_id == r.config.cell_id() != r.run_id
            other = r.config.to_dict() | {"seed": r.seed + 1}
            assert cell_hash(other) == r.cell_id and config_hash(other) != r.run_id


def test_law_design_presets():
    """bxc-law: B spans 8x, C >= 64, one probe length and vocabulary; bxc-size: 4x parameters."""
    law = load_grid_preset("bxc-law").expand()
    Bs, Cs = ({getattr(r.config.train, f) for r in law} for f in ("batch_size", "context"))
    assert max(Bs) / min(Bs) >= 8 and min(Cs) >= 64 and len(law) == 18 and {r.seed for r in law} == {0, 1, 2}
    assert {r.config.train.emergence_metric for r in law} == {"ps_indist"}  # the probe misses C 128 (issue 52)
    assert len({(r.config.metrics.probe_len, r.config.data.markov.vocab, r.config.train.lr) for r in law}) == 1
    assert 2 * law[0].config.metrics.probe_len + 1 <= min(Cs)
    assert all(r.config.data.markov.vocab >= r.config.train.context for r in law)  # the shipped layout
    size = load_grid_preset("bxc-size").expand()
    widths = {r.config.model.d_model for r in size}
    assert (max(widths) / min(widths)) ** 2 >= 4  # non-embedding parameters scale with d_model^2


def test_reference_runs_keep_their_ids():
    """A config field added later (data.markov.repeat_start) leaves the shipped runs' ids alone."""
    shipped = {p.name for p in (ROOT / "data" / "reference_runs" / "bxc-markov").iterdir() if p.is_dir()}
    assert {r.run_id for r in load_grid_preset("bxc-markov").expand()} == shipped
    cfg = load_grid_preset("bxc-markov").expand()[0].config
    before = cfg.run_id()
    cfg.data.markov.repeat_start = 8
    assert cfg.run_id() != before  # a set value is part of the id


def test_cli_seeds_dry_run(tmp_path, capsys):
    good = tmp_path / "g.toml"
    good.write_text(BXC)
    assert main(["--spec", str(good), "--out", str(tmp_path / "out"), "--dry-run", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    spec = spec_of(BXC)
    spec.set_seeds(2)
    runs = spec.expand()
    assert len(runs) == 8 and all(r.run_id in out and r.cell_id in out for r in runs)
    header = out.splitlines()[1].split()
    assert header[:4] == ["#", "run_id", "cell_id", "seed"]
    (tmp_path / "out").mkdir()
    assert main(["--spec", str(good), "--status", "--seeds", "2", "--out", str(tmp_path / "out")]) == 0
    assert "8 pending" in capsys.readouterr().out
    seeded = tmp_path / "s.toml"
    seeded.write_text(BXC.replace('"train.context" = [32, 64]', '"train.context" = [32, 64]\nseed = [0, 1]'))
    assert main(["--spec", str(seeded), "--dry-run", "--seeds", "2"]) == 2
    assert "--seeds and axes.seed: both set the run seed" in capsys.readouterr().err
    assert main(["--spec", str(good), "--dry-run", "--seeds", "0"]) == 2


def test_tiny_seeded_grid_carries_seed_and_cell_id(tmp_path, smoke_cache, monkeypatch):
    """Two replicates of one cell, really trained: manifest, summary, ihstats readers and the
    emergence table carry seed and one shared cell_id; the schema check asks for them."""
    from ihstats.emergence import emergence_table
    from ihstats.base.io import load_grid
    from ihstats.base.schema import check_grid_dir

    monkeypatch.setenv("IHLAW_CACHE", str(smoke_cache))
    spec = tmp_path / "t.toml"
    spec.write_text('name = "t"\n[base]\npreset = "cpu-smoke"\n[base.train]\nmax_steps = 12\n')
    out = tmp_path / "grid"
    assert main(["--spec", str(spec), "--out", str(out), "--seeds", "2", "--no-progress", "--no-figures",
                 "--workers", "1"]) == 0
    man = pd.read_parquet(out / "manifest.parquet")
    summary = pd.read_csv(out / "summary.csv", dtype={"cell_id": str})
    for frame in (man, summary):
        assert list(frame.columns[:3]) == ["run_id", "cell_id", "seed"]
        assert sorted(frame["seed"]) == [0, 1] and frame["cell_id"].nunique() == 1
    assert check_grid_dir(out) == []
    man.drop(columns=["cell_id"]).to_parquet(out / "manifest.parquet")
    assert "missing columns ['cell_id']" in " ".join(check_grid_dir(out))
    runs = load_grid(out).runs.set_index("run_id")
    assert runs["cell_id"].to_dict() == man.set_index("run_id")["cell_id"].to_dict()
    table = emergence_table(out, method="threshold", on_error="skip")
    assert {"cell_id", "seed"} <= set(table.columns)


def test_a_grid_resumes_into_a_logs_only_copy_and_still_asks_for_lost_weights(tmp_path, smoke_cache, monkeypatch,
                                                                               capsys):
    """The shipped sets' way to add their missing runs: copy the logs (no checkpoints) and rerun the
    grid. The copied runs are skipped and their logs checked (exit 0, a note says they have no
    weights); a run whose checkpoints folder exists but lost final.pt is still an error."""
    import shutil

    monkeypatch.setenv("IHLAW_CACHE", str(smoke_cache))
    spec = tmp_path / "t.toml"
    spec.write_text('name = "t"\n[base]\npreset = "cpu-smoke"\n[base.train]\nmax_steps = 6\n'
                    '[base.metrics]\nn_evals = 3\n')
    out = tmp_path / "grid"
    args = ["--spec", str(spec), "--out", str(out), "--seeds", "2", "--no-progress", "--no-figures", "--workers", "1"]
    assert main(args) == 0
    first, second = sorted(pd.read_parquet(out / "manifest.parquet")["run_id"])
    shutil.rmtree(out / first / "checkpoints")  # a logs-only copy, as data/reference_runs ships it
    capsys.readouterr()
    assert main(args) == 0
    assert "1 done run(s) are logs without weights" in capsys.readouterr().out
    (out / second / "checkpoints" / "final.pt").unlink()  # weights lost from a run that had them
    assert main(args) == 1
    assert f"{second}/checkpoints/final.pt: missing for a done run" in capsys.readouterr().err
