"""The house rules of issue 29, checked on the source: the import graph has no cycle and runs
downward, no function is over 80 lines without a comment saying why, no module is over ~500 lines.

A long function states its reason in a ``# long: ...`` comment within its first three lines, so the
exception is visible where a reader meets it.
"""
from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ihtrain", "ihstats")
SOURCE_DIRS = PACKAGES + ("analyses", "paper_figures")
MAX_MODULE_LINES = 520    # "about 500": the margin keeps one added docstring from failing CI
MAX_FUNCTION_LINES = 80


def _sources(dirs=SOURCE_DIRS) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.lru_cache(maxsize=None)  # the chain walks revisit modules: parse each file once
def _imports(path: Path, type_checking: bool = False) -> frozenset[str]:
    """Every module ``path`` imports, at any depth (a function-local import is still a dependency);
    with ``type_checking``, also those under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    here = _module_name(path).split(".")
    out: set[str] = set()
    # imports under `if TYPE_CHECKING:` are for annotations only and never run
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test) for s in block.body for n in ast.walk(s)}
    for node in ast.walk(tree):
        if id(node) in typing_only and not type_checking:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_pkg else here[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            # `from pkg import sub` imports the submodule when there is one
            out.update(f"{mod}.{a.name}" for a in node.names)
    return frozenset(out)


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    files = {_module_name(p): p for p in _sources(PACKAGES)}
    graph = {}
    for name, path in files.items():
        deps = {d for d in _imports(path, type_checking) if d in files and d != name}
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _package_cycles(type_checking: bool = False) -> list[list[str]]:
    # a package __init__ that re-exports its submodules is not a dependency cycle of theirs
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in import_graph(type_checking).items()}
    return _cycles(graph)


def test_import_graph_has_no_cycle():
    assert _package_cycles() == []


def test_import_graph_has_no_cycle_counting_type_checking_imports():
    """An import under ``if TYPE_CHECKING:`` never runs, but it is still a dependency a reader
    follows: two modules that name each other's types are one module split in two."""
    assert _package_cycles(type_checking=True) == []


def _reachable(module: str, graph: dict[str, set[str]]) -> set[str]:
    """Every package module importing ``module`` imports, through any chain."""
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += graph[m]
    return seen - {module}


def test_ihstats_never_imports_ihtrain():
    """ihstats is the ground floor: no module of it imports ihtrain, directly or through a chain,
    at the top, inside a function or under TYPE_CHECKING (ihtrain stands on ihstats, never back)."""
    graph = import_graph(type_checking=True)
    outside = {p for p in _sources(("ihstats",)) for m in _imports(p, True) if m.split(".")[0] == "ihtrain"}
    assert sorted(str(p.relative_to(ROOT)) for p in outside) == []
    bad = {m: sorted(d for d in _reachable(m, graph) if d.startswith("ihtrain")) for m in graph if m.startswith("ihstats")}
    assert {m: d for m, d in bad.items() if d} == {}


def test_the_chain_walk_finds_an_indirect_import():
    assert _reachable("a", {"a": {"b"}, "b": {"c"}, "c": set()}) == {"b", "c"}


def _imports_torch(module: str, graph: dict[str, set[str]], files: dict[str, Path]) -> bool:
    """Whether importing ``module`` imports torch, through any chain of package modules."""
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        if "torch" in _imports(files[m]):
            return True
        todo += graph[m]
    return False


def test_imports_run_downward():
    """ihstats never imports torch or a torch-importing ihtrain module; presets are data; an
    ihtrain.data module never imports its own package."""
    files = {_module_name(p): p for p in _sources(PACKAGES)}
    graph = import_graph()
    bad = []
    for path in _sources(("ihstats",)):
        for mod in _imports(path) & (set(files) | {"torch"}):
            if mod == "torch" or (mod.startswith("ihtrain") and _imports_torch(mod, graph, files)):
                bad.append(f"{path.relative_to(ROOT)} imports {mod}")
    for path in _sources(("ihtrain/presets",)):
        bad += [f"{path.relative_to(ROOT)} imports {m}" for m in _imports(path) if m.startswith("ihtrain.")]
    for path in _sources(("ihtrain/data",)):
        if path.name != "__init__.py":
            bad += [f"{path.relative_to(ROOT)} imports its package" for m in _imports(path) if m == "ihtrain.data"]
    assert bad == []


def test_the_downward_rule_sees_torch_through_a_chain():
    files = {_module_name(p): p for p in _sources(PACKAGES)}
    assert _imports_torch("ihtrain.model", import_graph(), files)
    assert not _imports_torch("ihtrain.config", import_graph(), files)


def _long_functions(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    out = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1
            head = lines[node.lineno - 1: node.body[0].lineno + 2]
            if n > MAX_FUNCTION_LINES and not any("# long:" in h for h in head):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_function_over_80_lines_without_a_reason():
    assert [f for p in _sources() for f in _long_functions(p)] == []


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_over_about_500_lines(path):
    n_lines = len(path.read_text().splitlines())
    assert n_lines <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)} has {n_lines} lines; split it along a seam"


# Imported inside functions on purpose: each costs a CLI or a grid worker seconds it may not need.
HEAVY = {"torch", "pymc", "arviz", "pytensor", "matplotlib", "seaborn", "statsmodels", "ruptures", "ray",
         "datasets", "tokenizers", "scipy", "xarray"}


def _unexplained_local_imports(path: Path) -> list[str]:
    """Function-local imports of light modules with no comment in the function above them."""
    lines = path.read_text().splitlines()
    out = []
    for fn in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            mod = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            if (mod or "").split(".")[0] in HEAVY:
                continue
            if not any("#" in line for line in lines[fn.lineno - 1: node.end_lineno]):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {fn.name} imports {mod}")
    return out


def test_function_local_imports_are_heavy_or_explained():
    """A dependency is visible at the top of its module unless importing it costs real time (a
    heavy library, or a module that imports one) and a comment says so."""
    assert [f for p in _sources() for f in _unexplained_local_imports(p)] == []


# ---------------------------------------------------------------------------- registries, not if/elif
# Where a source name may be compared: its own module. Exceptions, each a different thing that
# shares a name with a source: (file, name) -> why.
SOURCE_NAME_EXCEPTIONS = {
    ("ihtrain/data/biinduct.py", "natural"): "data.biinduct.span_source = 'natural' (copy the stream's own "
                                             "tokens), not the natural source",
    ("ihstats/ablation/biinduct.py", "biinduct"): "Claim.biinduct: the Bi-Induct modes a claim pools, read "
                                                  "from the run table, not the config section",
}


def _source_modules() -> dict[str, str]:
    """Source name -> the module that owns it: every registered source and wrapper (Bi-Induct)."""
    from ihtrain.data import registry

    owner = {s.name: sys.modules[s.build.__module__].__file__ for s in registry.sources()}
    owner["natural"] = owner["builtin"]
    return {name: str(Path(f).resolve().relative_to(ROOT)) for name, f in owner.items()}


def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _names_compared(path: Path, names: set[str]) -> set[str]:
    """Source names ``path`` tests in a condition (``if``/``elif``/``while``/``x if c else y``/
    ``match``/a comprehension's ``if``): compared (``==``, ``in``) or matched as a prefix
    (``.startswith``), alone, in a tuple, or in a tuple the module binds to a name first
    (``kinds = ("builtin", "markov")`` ... ``if source in kinds``)."""
    tree = ast.parse(path.read_text())
    bound: dict[str, set[str]] = {}  # name -> the strings of the literals assigned to it
    tests: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Tuple, ast.List, ast.Set, ast.Constant)):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, set()).update(_strings(node.value))
        elif isinstance(node, (ast.If, ast.IfExp, ast.While)):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests += node.ifs
        elif isinstance(node, ast.Match):
            tests += [c.pattern for c in node.cases]
    found: set[str] = set()
    for test in tests:
        for n in ast.walk(test):
            is_prefix = isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "startswith"
            if isinstance(n, (ast.Compare, ast.MatchValue)) or is_prefix:
                found |= _strings(n) & names
                found |= {v for m in ast.walk(n) if isinstance(m, ast.Name) for v in bound.get(m.id, ())} & names
    return found


def _sections_read(path: Path, sections: set[str]) -> set[str]:
    """Registered sources' config sections ``path`` reads as attributes (``cfg.data.markov``)."""
    return {n.attr for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Attribute)} & sections


def test_no_source_name_in_a_condition_outside_its_module():
    """Data sources are chosen through the registry (ihtrain.data.registry): no module but a
    source's own compares its name in an if/elif, or reads its config section (a new source then
    touches its module only). Each source module declares its own section, the shipped ones too."""
    from ihtrain.data import registry

    owner = _source_modules()
    sections = {s.section: owner[s.name] for s in registry.sources() if s.section}
    bad = []
    for path in _sources():
        rel = str(path.relative_to(ROOT))
        for name in sorted(_names_compared(path, set(owner))):
            if owner[name] != rel and (rel, name) not in SOURCE_NAME_EXCEPTIONS:
                bad.append(f"{rel} compares data source {name!r} (owned by {owner[name]})")
        for name in sorted(_sections_read(path, set(sections))):
            if rel != sections[name] and (rel, name) not in SOURCE_NAME_EXCEPTIONS:
                bad.append(f"{rel} reads config section data.{name} (owned by {sections[name]})")
    assert bad == []


def test_the_source_name_rule_sees_a_chain(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f(s):\n    if s == 'markov':\n        return 1\n    elif s.startswith(('text:', 'hf:')):\n"
                 "        return 2\n    return 3 if s in ('seminatural',) else 4\n")
    assert _names_compared(f, {"markov", "text:", "hf:", "seminatural", "natural"}) == \
        {"markov", "text:", "hf:", "seminatural"}
    f.write_text("KINDS = ('builtin', 'markov')\ndef g(d):\n    return d.markov.vocab if d.source in KINDS else 0\n")
    assert _names_compared(f, {"builtin", "markov"}) == {"builtin", "markov"}
    assert _sections_read(f, {"markov", "seminatural"}) == {"markov"}


# ------------------------------------------------------------------- detectors by name
DETECTOR_NAMES = frozenset({"bayes", "pelt", "threshold"})
DETECTOR_HOME = ROOT / "ihstats" / "detectors"  # each detector's module, and the registry that names them


def _str_operands(node: ast.AST) -> set[str]:
    """String constants a comparison operand holds: itself, or the items of a tuple/list/set."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return {n.value for n in items if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _names_chosen(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """Where ``source`` picks among ``names`` itself: a comparison (``==``, ``in``, ...; the stuff
    of if/elif chains and conditional expressions), a ``match`` case, or a dict keyed by two or
    more of them (a second registry)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            hit = set().union(*(_str_operands(o) for o in (node.left, *node.comparators))) & names
        elif isinstance(node, ast.MatchValue):
            hit = _str_operands(node.value) & names
        elif isinstance(node, ast.Dict):
            hit = {k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in names}
            hit = hit if len(hit) >= 2 else set()
        else:
            continue
        out += [(node.lineno, name) for name in sorted(hit)]
    return out


def test_the_name_check_sees_a_chain_and_spares_a_constant():
    chain = ("if method == 'pelt':\n    pass\nelif method in ('bayes', 'x'):\n    pass\n"
             "label = 'a' if m != 'bayes' else 'b'\n")
    assert _names_chosen(chain, DETECTOR_NAMES) == [(1, "pelt"), (3, "bayes"), (5, "bayes")]
    assert _names_chosen("match m:\n    case 'threshold':\n        pass\n", DETECTOR_NAMES) == [(2, "threshold")]
    assert _names_chosen("RUN = {'bayes': f, 'pelt': g}[m]\n", DETECTOR_NAMES) == [(1, "bayes"), (1, "pelt")]
    # a constant naming one detector (the formed rule's), a default, a call by name: no choice made here
    fine = "FORMED_METHOD = 'bayes'\nf(method='bayes')\nif method == FORMED_METHOD:\n    get_detector('pelt')\n"
    assert _names_chosen(fine, DETECTOR_NAMES) == []


def test_detectors_are_chosen_by_name_through_the_registry():
    """No detector name in an if/elif (or a dict of its own) outside ihstats/detectors: callers pass
    the name to ihstats.detectors (get_detector, detect, DETECTORS), so a new detector touches its
    module and its test only. No exceptions: the formed rule names its detector in a constant
    (``ihstats.emergence.FORMED_METHOD``) and compares against that."""
    bad = [f"{p.relative_to(ROOT)}:{line} chooses {name!r}" for p in _sources(SOURCE_DIRS + ("benchmarks",))
           if DETECTOR_HOME not in p.parents for line, name in _names_chosen(p.read_text(), DETECTOR_NAMES)]
    assert bad == []


# ---- the fits' groups (issue 43 item 2): law, frontier, onset ---------------------------------

#: A fit group: a folder of ihstats with a spec.py (found, not listed: a new fit joins by its layout)
FIT_GROUPS = tuple(sorted(f"ihstats.{p.parent.name}" for p in (ROOT / "ihstats").glob("*/spec.py")))


def _all_imports(path: Path) -> set[str]:
    """Every module ``path`` names in an import, ``TYPE_CHECKING`` blocks and function bodies
    included (an annotation-only import is still a seam that must run downward)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_fit_groups_have_no_cycle_even_for_annotations():
    """law / frontier / onset / ablation: one shape (spec, data, model or permutation tests,
    results, report), no cycle among their modules counting every import, and each group's
    ``spec`` is its bottom (it imports nothing from its own group)."""
    files = {_module_name(p): p for p in _sources(("ihstats",))}
    assert {"ihstats.law", "ihstats.frontier", "ihstats.onset", "ihstats.ablation"} <= set(FIT_GROUPS)
    members = {m for m in files if m in FIT_GROUPS or m.startswith(tuple(g + "." for g in FIT_GROUPS))}
    assert {f"{g}.{s}" for g in FIT_GROUPS for s in ("spec", "data", "results", "report")} <= members
    # the step that makes the numbers: a Bayesian model, or the ablation group's permutation tests
    assert all({f"{g}.model", f"{g}.permutation"} & members for g in FIT_GROUPS)
    graph = {m: {d for d in _all_imports(files[m]) if d in files and d != m} for m in files}
    assert _cycles({m: graph[m] & members for m in members}) == []
    assert not [c for c in _cycles(graph) if set(c) & members]
    for group in FIT_GROUPS:
        assert not {d for d in graph[f"{group}.spec"] if d.startswith(group)}, group
    for m in members:  # a group's package file imports nothing: reading one module loads no other
        if m in FIT_GROUPS:
            assert not graph[m], m


def _group_of(module: str) -> str | None:
    return next((g for g in FIT_GROUPS if module == g or module.startswith(g + ".")), None)


def cross_group_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports from one fit group (or a simulator) into another fit group's modules (STYLE.md #6:
    stages talk through tables and shared modules, never through each other's internals)."""
    bad = []
    for m, deps in sorted(graph.items()):
        here = _group_of(m) or ("ihstats.simulate" if m.startswith("ihstats.simulate") else None)
        if here is None:
            continue
        bad += [f"{m} imports {d}" for d in sorted(deps) if _group_of(d) not in (None, here)]
    return bad


def test_fit_groups_and_simulators_import_no_other_groups_modules():
    """What two fits share (the knobs and the claim rule of the frontier and the onset model) lives
    in a shared module (``ihstats.knobs``); a simulator imports no fit (the law fits its own
    simulated reference posterior, ``ihstats.law.predict.fit_simulated_reference``)."""
    files = {_module_name(p): p for p in _sources(("ihstats",))}
    graph = {m: {d for d in _all_imports(files[m]) if d in files and d != m} for m in files}
    assert cross_group_imports(graph) == []
    assert cross_group_imports({"ihstats.onset.data": {"ihstats.frontier.spec", "ihstats.knobs"},
                                "ihstats.simulate.law": {"ihstats.law.model"},
                                "ihstats.law.predict": {"ihstats.simulate.law", "ihstats.law.model"}}) == [
        "ihstats.onset.data imports ihstats.frontier.spec", "ihstats.simulate.law imports ihstats.law.model"]


def test_every_fit_group_declares_its_error_and_its_data_step_raises_it():
    """One error base (``ihstats.fit_protocol.FitError``, a ValueError), one subclass per group in
    its ``spec``; the group's ``data`` step (the checks of its input table) raises that, never a
    bare ValueError, so ``except FitError`` catches every fit's bad input."""
    import importlib

    from ihstats.fit_protocol import FitError

    for group in FIT_GROUPS:
        spec = importlib.import_module(f"{group}.spec")
        errors = [v for v in vars(spec).values() if isinstance(v, type) and issubclass(v, FitError) and v is not FitError
                  and v.__module__ == spec.__name__]
        assert len(errors) == 1, f"{group}.spec declares {errors}"
        data = ROOT / Path(*group.split(".")) / "data.py"
        bare = [n.lineno for n in ast.walk(ast.parse(data.read_text())) if isinstance(n, ast.Raise) and n.exc is not None
                and isinstance(n.exc, ast.Call) and ast.unparse(n.exc.func) == "ValueError"]
        assert bare == [], f"{group}.data raises a bare ValueError at lines {bare}; raise {errors[0].__name__}"


#: what an atomic write is made of; only ihstats/base/fileio.py (atomic_write and its kin) may call them
ATOMIC_PARTS = {"os.replace", "os.rename", "tempfile.mkstemp", "tempfile.NamedTemporaryFile", "os.fsync"}


def hand_made_atomic_writes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    where = path.relative_to(ROOT) if ROOT in path.parents else path.name
    return [f"{where}:{n.lineno} {ast.unparse(n.func)}" for n in ast.walk(tree)
            if isinstance(n, ast.Call) and ast.unparse(n.func) in ATOMIC_PARTS]


def test_every_atomic_write_goes_through_fileio():
    """A file a reader may see half-written is written by ``ihstats.base.fileio`` (temporary file,
    usual permissions, fsync, rename), never by a hand-made copy of it."""
    home = ROOT / "ihstats" / "base" / "fileio.py"
    assert [w for p in _sources(SOURCE_DIRS + ("benchmarks",)) if p != home for w in hand_made_atomic_writes(p)] == []
    assert hand_made_atomic_writes(home)  # the check sees the real thing


def test_the_atomic_write_check_sees_a_hand_made_one(tmp_path):
    f = tmp_path / "probe.py"
    f.write_text("import os, tempfile\nfd, tmp = tempfile.mkstemp()\nos.replace(tmp, 'x')\n")
    assert hand_made_atomic_writes(f) == ["probe.py:2 tempfile.mkstemp", "probe.py:3 os.replace"]


#: the sampler flags every fitting script takes; declared once, by ihstats.fit_protocol.add_sampler_flags
SAMPLER_FLAGS = {"--draws", "--tune", "--chains", "--target-accept"}


def hand_made_sampler_flags(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    where = path.relative_to(ROOT) if ROOT in path.parents else path.name
    return [f"{where}:{n.lineno} {n.args[0].value}" for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"
            and n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value in SAMPLER_FLAGS]


def test_sampler_flags_are_declared_by_one_helper():
    """Every user-facing script that samples takes the same --draws/--tune/--chains/--fast with the
    same help (issue 51): only ihstats/fit_protocol.py declares them, beside the SAMPLER settings (benchmarks/ set their own
    smaller budgets per measurement, so they are not held to it)."""
    home = ROOT / "ihstats" / "fit_protocol.py"
    assert [w for p in _sources() if p != home for w in hand_made_sampler_flags(p)] == []
    assert hand_made_sampler_flags(home)  # the check sees the real declaration
