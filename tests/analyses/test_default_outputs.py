"""Where commands write by default (issue 56, item 2): under results/<command>/<name of the input>,
never into the current directory or the source tree, and they say where. The kinds are one table
and every results folder goes through one helper (issue 67, item 3: ``ihstats.base.command``)."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ihstats.base.cli_checks import OutputPathError
from ihstats.base.command import OUTPUT_KINDS, default_out, out_folder
from ihstats.emergence import main as emergence_main
from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_grid

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def script(monkeypatch):
    """An analyses/ script as a fresh module, imported from the scripts' folder."""
    monkeypatch.syspath_prepend(str(ROOT / "analyses"))

    def load(name: str):
        sys.modules.pop(name, None)
        return importlib.import_module(name)
    return load


def test_default_out_names_a_folder_by_its_own_name_and_a_table_by_its_stem(tmp_path, monkeypatch):
    (tmp_path / "mygrid").mkdir()
    (tmp_path / "t.csv").write_text("x\n")
    monkeypatch.chdir(tmp_path / "mygrid")
    assert default_out("emergence", ".") == Path("results/emergence/mygrid")
    assert default_out("emergence", "../mygrid/") == Path("results/emergence/mygrid")
    assert default_out("upt_law", "../t.csv") == Path("results/upt_law/t")
    assert default_out("frontier", None) == Path("results/frontier")


def test_default_out_refuses_a_kind_not_in_the_table():
    with pytest.raises(ValueError, match="register it in ihstats.base.command.OUTPUT_KINDS"):
        default_out("my_new_fit", None)


def test_out_folder_takes_the_given_folder_or_the_default_and_asks_the_guard(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert out_folder(None, "validate_law", "g.csv", sub="loco") == Path("results/validate_law/g/loco")
    assert out_folder("mine", "validate_law", "g.csv", sub="loco") == Path("mine")  # sub: the default's only
    (tmp_path / "t.csv").write_text("x\n")
    with pytest.raises(OutputPathError, match="holds the input"):
        out_folder(".", "upt_law", "t.csv", inputs=["t.csv"])


def test_emergence_cli_writes_under_results_not_the_current_directory(tmp_path, monkeypatch, capsys):
    grid = tmp_path / "data" / "simgrid"
    runs = [(simulate_curve("ramp", n=40, seed=i), {"train.batch_size": b}) for i, b in enumerate([8, 16])]
    write_fake_grid(grid, runs)
    cwd = tmp_path / "work"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert emergence_main([str(grid)]) == 0
    written = sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*") if p.is_file())
    folder = os.path.join("results", "emergence", "simgrid")  # the table and the output guard's record
    assert written == [os.path.join(folder, ".ihlaw-written"), os.path.join(folder, "emergence.csv")]
    assert "to results/emergence/simgrid/emergence.csv" in capsys.readouterr().out


@pytest.mark.parametrize("name, argv, expected", [
    ("fit_upt_law", ["--emergence", "data/example_emergence.csv"], "results/upt_law/example_emergence"),
    ("fit_frontier", [], "results/frontier/example_frontier"),
    ("fit_frontier", ["--grid", "data/reference_runs/freqrel"], "results/frontier/freqrel"),
    ("ablation_tests", [], "results/ablation/example_ablation"),
    ("biinduct_verdicts", ["data/reference_runs/biinduct"], "results/biinduct/biinduct"),
    ("natural_repeats", [], "results/natural_repeats"),
])
def test_analysis_scripts_default_to_results(name, argv, expected, monkeypatch, script):
    monkeypatch.chdir(ROOT)  # the shipped inputs, by the paths the README gives
    assert Path(script(name).parse_args(argv).out) == Path(expected)


def test_validate_law_default_folder_does_not_double_the_mode(monkeypatch, script):
    monkeypatch.chdir(ROOT)
    mod = script("validate_law")
    args = mod.parse_args(["--fit", "data/reference_runs/bxc-markov",
                           "--test", "data/reference_runs/bxc-markov-holdout"])
    assert Path(args.out) == Path("results/validate_law/bxc-markov-holdout/holdout")
    args = mod.parse_args(["--runs", "data/reference_runs/bxc-markov", "--cv", "cell"])
    assert Path(args.out) == Path("results/validate_law/bxc-markov/loco")


class _Stop(Exception):
    """Raised where a command's output folder is settled, before it reads or writes anything."""


@pytest.mark.parametrize("name, argv, expected", [
    ("legacy_ceilings", ["data/reference_runs/bxc-cross"], "results/legacy_ceilings"),
    ("design_law", [], "results/design_law"),
])
def test_the_hard_coded_defaults_kept_their_paths(name, argv, expected, monkeypatch, script):
    """Two commands with no parse step: their folder, caught where main asks for it."""
    monkeypatch.chdir(ROOT)
    mod = script(name)
    seen = []

    def caught(*args, **kwargs):
        seen.append(out_folder(*args, **kwargs))
        raise _Stop

    monkeypatch.setattr(mod, "out_folder", caught)
    with pytest.raises(_Stop):
        mod.main(argv)
    assert seen == [Path(expected)]


#: files that call the output guard's check_out_dir themselves, and why: none of them writes a
#: results folder under results/ (those go through ``ihstats.base.command.out_folder``)
OWN_FOLDER_CHECKS = {
    "ihtrain/run/train.py": "a run folder (kind run, default runs/single/<name>-<id>)",
    "ihtrain/grid/cli.py": "a grid folder (kind grid, default runs/<grid name>)",
    "ihtrain/score/cli.py": "a scored series folder (kind series)",
    "ihtrain/score/convert.py": "a converted checkpoint (kind checkpoint), a required OUT_DIR with no default",
    "ihstats/simulate/examples.py": "the repository's shipped example tables, rewritten on purpose by name",
    "paper_figures/make.py": "the committed paper_figures/figures/ by default (kind shipped)",
}


def _calls(path: Path, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)
            and ast.unparse(n.func).split(".")[-1] == name]


def _sources() -> list[Path]:
    return [p for d in ("ihstats", "ihtrain", "analyses", "paper_figures") for p in sorted((ROOT / d).rglob("*.py"))]


def test_every_results_folder_goes_through_out_folder():
    """No command asks check_out_dir for a folder itself, but the listed run, grid, series,
    checkpoint and shipped writers; every folder a command claims (claim_folder) came from
    out_folder or one of them."""
    homes = {"ihstats/base/command.py", "ihstats/base/cli_checks.py"}
    by_hand = {str(p.relative_to(ROOT)) for p in _sources() if _calls(p, "check_out_dir")} - homes
    assert by_hand == set(OWN_FOLDER_CHECKS)
    claims = {str(p.relative_to(ROOT)) for p in _sources() if _calls(p, "claim_folder")} - homes
    assert {f for f in claims if f not in OWN_FOLDER_CHECKS and not _calls(ROOT / f, "out_folder")} == set()


def test_every_output_kind_is_its_commands_and_every_command_names_a_listed_kind():
    """OUTPUT_KINDS lists each results folder once, by the file whose command writes it, and that
    file asks for it by that kind; no file asks for a kind it does not list."""
    asked = {}
    for path in (p for p in _sources() if p != ROOT / "ihstats/base/command.py"):  # the helpers' home
        for call in _calls(path, "out_folder") + _calls(path, "default_out"):
            kind = call.args[1] if ast.unparse(call.func).endswith("out_folder") else call.args[0]
            asked.setdefault(ast.literal_eval(kind), set()).add(str(path.relative_to(ROOT)))
    assert {k: {f} for k, f in OUTPUT_KINDS.items()} == asked


def test_make_names_the_committed_files_it_overwrites(capsys):
    from paper_figures.make import FIGURES, announce_overwrite

    hit = announce_overwrite(FIGURES, ["upt_law"])
    names = {p.name for p in hit}
    assert {"upt_law.png", "upt_law.csv", "INDEX.md"} <= names
    assert not any(n.startswith("upt_law_default") for n in names)  # another figure's files
    assert "overwriting" in capsys.readouterr().out
    assert announce_overwrite(ROOT / "data", None) == []  # another folder: nothing committed replaced


def _source_tree_state() -> str | None:
    """Changed and untracked (not ignored) files of the checkout, None outside a git checkout."""
    r = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def test_train_and_grid_write_only_under_runs_and_the_cache(tmp_path):
    """The trainer and the grid, run with no --out from an empty folder, write their run and grid
    directories under runs/ there and the corpus, tokenizer and tokens under $IHLAW_CACHE: nothing
    else in the folder, nothing in the source tree (the shipped corpus is only read)."""
    cwd, cache = tmp_path / "work", tmp_path / "cache"
    cwd.mkdir()
    env = {**os.environ, "IHLAW_CACHE": str(cache), "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "MPLBACKEND": "Agg"}
    spec = tmp_path / "g.toml"  # the spec lives outside the folder: only outputs land there
    spec.write_text('name = "g"\n[base]\npreset = "cpu-smoke"\n[base.train]\nmax_steps = 4\n'
                    '[base.data]\nmax_corpus_chars = 60000\n[axes]\n"train.batch_size" = [4]\n')
    before = _source_tree_state()
    small = ["--set", "train.max_steps=4", "--set", "data.max_corpus_chars=60000", "--set", "metrics.n_evals=2"]
    commands = [[sys.executable, "-m", "ihtrain.train", "--preset", "cpu-smoke", "--no-progress", *small],
                [sys.executable, "-m", "ihtrain.grid", "--spec", str(spec), "--workers", "1", "--no-progress"]]
    for cmd in commands:
        r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
    tops = {p.relative_to(cwd).parts[:2] for p in cwd.rglob("*") if p.is_file()}
    assert {t[0] for t in tops} == {"runs"}, tops
    assert {t[1] for t in tops} == {"single", "g"} and any((cache / "corpora").iterdir())
    assert _source_tree_state() == before
