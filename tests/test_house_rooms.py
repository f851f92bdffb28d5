"""The trainer's rooms (issue 51): ihtrain is a core (config, model, probes, metrics, data, presets)
with rooms standing on it. The grid stands on the run, the run on the core; the ablations and the
public-checkpoint scorer stand on the run and the core; never the other way, and the core imports
no room. Imports are followed as the code makes them: import statements at any depth, and the
modules a file loads by name through ``importlib.import_module`` (the data registry loads the
shipped sources so), which the statement graph of ``test_house`` cannot see.
"""
from __future__ import annotations

import ast
from pathlib import Path

from test_house import ROOT, _cycles, _imports, _module_name, _sources

#: room -> the other rooms it may import (every room may import the core)
ROOMS = {
    "ihtrain.run": set(),
    "ihtrain.grid": {"ihtrain.run"},
    "ihtrain.ablate": {"ihtrain.run"},
    "ihtrain.score": {"ihtrain.run"},
}
#: entry points -> the rooms each may import; no module imports them: a command line kept at an old
#: address (``python -m ihtrain.train``), and the console scripts' table (``ihtrain.commands``), which
#: loads every command's module by name when its script runs
ENTRY_POINTS = {"ihtrain.train": {"ihtrain.run"}, "ihtrain.commands": set(ROOMS)}


def _room_of(module: str) -> str:
    """The room ``module`` stands in, ``"core"`` for the rest of ihtrain."""
    if module in ENTRY_POINTS:
        return module
    return next((r for r in ROOMS if module == r or module.startswith(r + ".")), "core")


def _loaded_by_name(path: Path, modules: set[str]) -> set[str]:
    """Package modules ``path`` loads through ``importlib.import_module``/``__import__``: every
    module name it spells in a string when it calls one of them (a literal or a tuple of names)."""
    tree = ast.parse(path.read_text())
    loads = any(isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[-1] in ("import_module", "__import__")
                for n in ast.walk(tree))
    if not loads:
        return set()
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in modules}


def full_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports, at any depth, ``TYPE_CHECKING`` and importlib
    loads included."""
    files = {_module_name(p): p for p in _sources(("ihtrain", "ihstats"))}
    # a package __init__ that re-exports its submodules is not a dependency of theirs
    return {m: {d for d in _imports(p, True) | _loaded_by_name(p, set(files))
                if d in files and d != m and not m.startswith(d + ".")} for m, p in files.items()}


def room_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, deps in sorted(graph.items()):
        if not module.startswith("ihtrain"):
            continue
        here = _room_of(module)
        for dep in sorted(d for d in deps if d.startswith("ihtrain")):
            there = _room_of(dep)
            if there in ENTRY_POINTS:
                bad.append(f"{module} imports the entry point {dep}")
            elif here in ENTRY_POINTS:
                if there != "core" and there not in ENTRY_POINTS[here]:
                    bad.append(f"{module} (entry point) imports {dep} ({there})")
            elif there != here and there != "core" and (here == "core" or there not in ROOMS[here]):
                bad.append(f"{module} ({here}) imports {dep} ({there})")
    return bad


def test_rooms_import_downward_only():
    """grid -> run -> core, ablate -> run / core, score -> run / core; the core imports no room."""
    assert room_violations(full_graph()) == []


def test_the_room_rule_sees_a_back_import_and_an_importlib_load(tmp_path):
    graph = {"ihtrain.config": {"ihtrain.run.files"}, "ihtrain.run.train": {"ihtrain.grid.cli"},
             "ihtrain.ablate.cli": {"ihtrain.grid.spec", "ihtrain.run.checkpoint", "ihtrain.model"},
             "ihtrain.grid.cli": {"ihtrain.run.train", "ihtrain.train"}, "ihtrain.train": {"ihtrain.run.train"}}
    assert room_violations(graph) == [
        "ihtrain.ablate.cli (ihtrain.ablate) imports ihtrain.grid.spec (ihtrain.grid)",
        "ihtrain.config (core) imports ihtrain.run.files (ihtrain.run)",
        "ihtrain.grid.cli imports the entry point ihtrain.train",
        "ihtrain.run.train (ihtrain.run) imports ihtrain.grid.cli (ihtrain.grid)"]
    f = tmp_path / "registry.py"
    f.write_text("import importlib\nMODULES = ('ihtrain.data.markov', 'not.a.module')\n"
                 "def load():\n    for m in MODULES:\n        importlib.import_module(m)\n")
    assert _loaded_by_name(f, {"ihtrain.data.markov", "ihtrain.config"}) == {"ihtrain.data.markov"}
    # the shipped registry's loads are seen
    assert "ihtrain.data.markov" in full_graph()["ihtrain.data.registry"]


def test_every_ihtrain_module_has_a_room_or_the_core():
    """The rooms are folders; the flat top of ihtrain holds only the core and the entry points."""
    top = {p.stem for p in (ROOT / "ihtrain").glob("*.py")} - {"__init__"}
    assert not top & {"grid", "ablate", "run", "score"}, "a room is a folder, not a module"
    assert all((ROOT / "ihtrain" / r.split(".")[1] / "__init__.py").exists() for r in ROOMS)


def test_no_cycle_in_the_rooms_counting_importlib_loads():
    graph = full_graph()
    rooms = {m for m in graph if _room_of(m) != "core" and m.startswith("ihtrain")}
    assert not [c for c in _cycles(graph) if set(c) & rooms]


def test_no_cycle_counting_importlib_loads():
    """The data registry loads the shipped sources by name; none of them imports the config (each
    declares its own section), so the package has no cycle even counting those loads."""
    assert _cycles(full_graph()) == []


#: the modules every source passes through without being named there (issue 51 item 2): the
#: config, its checks and the registry know sources only through the registry's entries; the
#: statistics' factor and id rules read the shipped sources' facts from the file contract
#: (ihstats.base.contract: SHIPPED_SOURCE_FACTORS, SHIPPED_WRAPPER_FACTORS, LATE_FIELDS), the one place
#: besides the sources' own modules that names them; the run reader (ihstats.base.io) takes the factors
#: from those rules
SOURCE_NEUTRAL = ("ihtrain/config.py", "ihtrain/config_checks.py", "ihtrain/data/registry.py",
                  "ihtrain/data/__init__.py", "ihtrain/data/source.py", "ihstats/base/sources.py", "ihstats/base/ids.py",
                  "ihstats/base/io.py")


def _source_words() -> set[str]:
    from ihtrain.data import registry

    words = {s.name for s in registry.sources()} | {s.section for s in registry.sources() if s.section}
    return words | {"natural", "markov", "seminatural", "biinduct"}


def _names_spelled(path: Path, words: set[str]) -> set[str]:
    """Source names ``path`` spells in code: a string constant, an attribute, or a keyword
    (docstrings and comments aside)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            found |= {w for w in words if w == n.value or f"data.{w}." in n.value or n.value.startswith(f"{w}:")}
        elif isinstance(n, ast.Attribute) and n.attr in words:
            found.add(n.attr)
        elif isinstance(n, ast.keyword) and n.arg in words:
            found.add(n.arg)
    return found


def test_config_registry_ids_and_factor_rules_name_no_source():
    """A new source is its module (and its test): the config, its checks, the registry, the id
    rule and the factor rules name none, so adding one edits none of them."""
    words = _source_words()
    assert {str(p): _names_spelled(ROOT / p, words) for p in SOURCE_NEUTRAL if _names_spelled(ROOT / p, words)} == {}


def test_the_source_name_spelling_check_sees_a_name(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""about markov."""\ndef f(d):\n    """markov."""\n    return d.markov.vocab, "data.biinduct.mode", g(seminatural=1)\n')
    assert _names_spelled(f, {"markov", "biinduct", "seminatural", "builtin"}) == {"markov", "biinduct", "seminatural"}


# ------------------------------------------------------------------ the statistics half's rooms (issue 67)
#: ihstats in three rooms, lowest first: the base (the run contract and what both halves read and
#: write), the figures (they draw what they are handed), the statistics (ihstats itself, less the
#: other two). An arrow may only run down this list; the statistics reach the figures only through
#: a fit group's ``report`` module.
STATS_ROOMS = ("ihstats.base", "ihstats.figures", "ihstats")
#: what the trainer may read from ihstats beyond the base, by module and name (issue 67): the
#: formed verdict and the certificate it records, the figure writer of its plot command and the
#: head-set design its ablations share with the ablation fit (the ablations measure; every test is
#: the statistics': ``ihstats.ablation.results.kv_true_above`` tests the key -> value controls)
#: (``ihtrain.commands`` loads the statistics' commands by name, only to run their ``main``)
TRAINER_READS = {
    "ihstats.emergence": {"formation", "onset_metric", "circuit", "onsets_beside"},
    "ihstats.certificate": {"CERTIFICATE_COLUMNS", "certify_run"},
    "ihstats.figures.save": {"save_figure"},
    "ihstats.ablation.spec": {"DEFAULT_RANDOM_SETS", "PREV_TOKEN_SUFFIX", "allowed_heads", "choose_head_sets",
                              "count_head_sets"},
}


def stats_room_of(module: str) -> str:
    return next(r for r in STATS_ROOMS if module == r or module.startswith(r + "."))


def stats_room_violations(graph: dict[str, set[str]]) -> list[str]:
    """Arrows running up the statistics half's rooms, and statistics reaching a figure outside a
    report."""
    rank = {r: i for i, r in enumerate(STATS_ROOMS)}
    bad = []
    for module, deps in sorted(graph.items()):
        if not module.startswith("ihstats"):
            continue
        here = stats_room_of(module)
        for dep in sorted(d for d in deps if d.startswith("ihstats")):
            there = stats_room_of(dep)
            if rank[there] > rank[here]:
                bad.append(f"{module} ({here}) imports {dep} ({there})")
            elif here == "ihstats" and there == "ihstats.figures" and not module.endswith(".report"):
                bad.append(f"{module} imports the figure {dep} outside a report")
    return bad


def test_statistics_rooms_import_downward_only():
    """base <- figures <- statistics: the base imports neither, the figures import only the base,
    and a statistic reaches a figure only through its group's report."""
    assert stats_room_violations(full_graph()) == []


def test_the_statistics_room_rule_sees_an_upward_arrow():
    graph = {"ihstats.base.cli_checks": {"ihstats.fit_protocol"},
             "ihstats.figures.frontier": {"ihstats.frontier.glm", "ihstats.base.fileio"},
             "ihstats.emergence": {"ihstats.figures.law"}, "ihstats.law.report": {"ihstats.figures.law"}}
    assert stats_room_violations(graph) == [
        "ihstats.base.cli_checks (ihstats.base) imports ihstats.fit_protocol (ihstats)",
        "ihstats.emergence imports the figure ihstats.figures.law outside a report",
        "ihstats.figures.frontier (ihstats.figures) imports ihstats.frontier.glm (ihstats)"]


#: the one figure module every other imports: the writer (``save_figure``) and the Agg setup
FIGURE_SHARED = "ihstats.figures.save"


def figure_module_violations(graph: dict[str, set[str]]) -> list[str]:
    """Figure modules importing another group's figure module: within ``ihstats.figures`` each
    module stands alone on ``save`` (and the base: :func:`stats_room_violations`)."""
    return [f"{module} imports the figure module {dep}" for module, deps in sorted(graph.items())
            if module.startswith("ihstats.figures.") for dep in sorted(deps)
            if dep.startswith("ihstats.figures.") and dep != FIGURE_SHARED]


def test_figure_modules_share_only_save():
    """One home per figure, a module per group: ``law``, ``frontier``, ``posterior``, ... import
    ``save`` and the base, never each other."""
    graph = full_graph()
    figures = {m for m in graph if m.startswith("ihstats.figures.")}
    assert {"ihstats.figures.save", "ihstats.figures.law", "ihstats.figures.frontier"} <= figures
    assert figure_module_violations(graph) == []


def test_the_figure_module_rule_sees_a_sibling_import():
    graph = {"ihstats.figures.frontier": {"ihstats.figures.save", "ihstats.figures.law", "ihstats.base.fileio"},
             "ihstats.figures.law": {"ihstats.figures.save"}, "ihstats.law.report": {"ihstats.figures.frontier"}}
    assert figure_module_violations(graph) == [
        "ihstats.figures.frontier imports the figure module ihstats.figures.law"]


def test_the_statistics_half_is_three_rooms_of_folders():
    """base/ and figures/ are packages; no module of the old flat base is left at ihstats' top."""
    top = {p.stem for p in (ROOT / "ihstats").glob("*.py")}
    assert (ROOT / "ihstats" / "base" / "__init__.py").exists() and (ROOT / "ihstats" / "figures" / "__init__.py").exists()
    # the figure modules share their group's name (figures/emergence.py draws ihstats.emergence's
    # curves): of them, only the flat ihstats/plots*.py they came from would be a leftover
    moved = {p.stem for p in (ROOT / "ihstats" / "base").glob("*.py")} | {"plots", "plots_paper"}
    assert not (top & moved) - {"__init__"}


def _trainer_reads(path: Path) -> set[tuple[str, str]]:
    """(ihstats module, name) pairs a file imports outside the base; a plain ``import ihstats.x``
    reads the whole module (name ``*``)."""
    out = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("ihstats") and not n.level:
            for a in n.names:
                sub = f"{n.module}.{a.name}"
                mod, name = (sub, "*") if (ROOT / (sub.replace(".", "/") + ".py")).exists() else (n.module, a.name)
                out.add((mod, name))
        elif isinstance(n, ast.Import):
            out |= {(a.name, "*") for a in n.names if a.name.startswith("ihstats")}
    return {(m, x) for m, x in out if not (m == "ihstats.base" or m.startswith("ihstats.base."))}


def trainer_violations(files: dict[str, Path]) -> list[str]:
    bad = []
    for module, path in sorted(files.items()):
        for mod, name in sorted(_trainer_reads(path)):
            if name not in TRAINER_READS.get(mod, set()):
                bad.append(f"{module} imports {mod}.{name}")
    return bad


def test_the_trainer_reads_only_the_base_and_the_named_verdicts():
    """ihtrain imports ihstats.base, plus only the names of :data:`TRAINER_READS`."""
    files = {_module_name(p): p for p in _sources(("ihtrain",))}
    assert trainer_violations(files) == []
    assert any(_trainer_reads(p) for p in files.values())  # the check sees the real reads


def test_the_trainer_rule_sees_a_statistic(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from ihstats.concentration import concentration\nfrom ihstats.base.contract import FORMED_LEVEL\n"
                 "from ihstats.emergence import formation\nimport ihstats.knobs\n")
    assert trainer_violations({"ihtrain.m": f}) == ["ihtrain.m imports ihstats.concentration.concentration",
                                                    "ihtrain.m imports ihstats.knobs.*"]


def test_the_probe_audit_needs_no_torch():
    """analyses/probe_audit.py reads the probe geometry (``ihtrain.data.probe_in_region``), not the
    probes: importing it imports no torch."""
    import subprocess
    import sys

    code = "import sys, analyses.probe_audit; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ one command skeleton (issue 67)
def _main_blocks() -> dict[str, str]:
    """file -> the body of its ``if __name__ == "__main__":`` block (the package's and the scripts')."""
    out = {}
    for path in _sources(("ihtrain", "ihstats", "analyses", "paper_figures")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'":
                out[str(path.relative_to(ROOT))] = "\n".join(ast.unparse(s) for s in node.body)
    return out


def test_every_command_ends_in_run_cli():
    """Warnings, Ctrl-C and the exit code are run_cli's (ihstats.base.command), in every command."""
    blocks = _main_blocks()
    assert len(blocks) >= 20
    assert {f: b for f, b in blocks.items() if not b.endswith("run_cli(main)")} == {}
    for pkg in ("grid", "ablate", "score"):  # python -m ihtrain.<room> forwards to its cli.py
        text = (ROOT / "ihtrain" / pkg / "__main__.py").read_text()
        assert f"from ihtrain.{pkg}.cli import main" in text and text.rstrip().endswith("run_cli(main)")


def test_exit_codes_are_defined_once():
    """EXIT_* numbers live in ihstats.base.command only."""
    home = ROOT / "ihstats" / "base" / "command.py"
    defined = [f"{p.relative_to(ROOT)}:{n.lineno}" for p in _sources() if p != home for n in ast.walk(ast.parse(p.read_text()))
               if isinstance(n, ast.Assign) and any(isinstance(t, (ast.Name, ast.Tuple)) and "EXIT_" in ast.unparse(t)
                                                    for t in n.targets)]
    assert defined == []



def _main_source(path: Path) -> str | None:
    """The module ``path`` takes its ``main`` from: its own name when it defines one, the module of a
    ``from X import main`` (a forwarder: ``ihtrain/grid/__main__.py``, ``ihtrain/train.py``), else None."""
    tree = ast.parse(path.read_text())
    if any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
        return _module_name(path)
    return next((n.module for n in tree.body if isinstance(n, ast.ImportFrom)
                 and any(a.name == "main" and a.asname is None for a in n.names)), None)


def test_console_scripts_are_the_command_table():
    """pyproject's [project.scripts] is ihtrain.commands' table, each script calling its function
    there (run_cli around its module's main), not the module's main directly."""
    import tomllib

    from ihtrain import commands

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {s: f"ihtrain.commands:{commands.entry_name(s)}" for s in commands.COMMANDS}
    assert all(callable(getattr(commands, commands.entry_name(s))) for s in commands.COMMANDS)


def test_every_package_command_is_a_console_script_and_runs_as_python_m():
    """Each table module ends in a run_cli block (so ``python -m MODULE`` works), and every package
    module with such a block, and every package's ``__main__.py``, is in the table or forwards to a
    module that is (its ``main`` imported from there: ``python -m ihtrain.grid``, the old
    ``python -m ihtrain.train``). The scripts under
    analyses/ and paper_figures/ run by path and are no console scripts."""
    from ihtrain.commands import COMMANDS

    blocks = {f: b for f, b in _main_blocks().items() if f.startswith(("ihtrain/", "ihstats/"))}
    table = set(COMMANDS.values())
    files = {m: str(Path(*m.split(".")).with_suffix(".py")) for m in table}
    assert {m: f for m, f in files.items() if not blocks.get(f, "").endswith("run_cli(main)")} == {}
    forwarders = {str(p.relative_to(ROOT)) for d in ("ihtrain", "ihstats") for p in (ROOT / d).rglob("__main__.py")}
    sources = {f: _main_source(ROOT / f) for f in set(blocks) | forwarders}
    assert {f: m for f, m in sources.items() if m not in table} == {}
    assert sources["ihtrain/grid/__main__.py"] == "ihtrain.grid.cli" and sources["ihtrain/train.py"] == "ihtrain.run.train"


def test_the_command_table_loads_no_module_until_its_script_runs():
    """``ihlaw-schema`` and the other statistics scripts need no torch: the table imports nothing
    of the commands it lists."""
    import subprocess
    import sys

    code = "import sys, ihtrain.commands; print('torch' in sys.modules, 'ihstats.emergence' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "False False"
