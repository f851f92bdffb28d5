"""Regenerate the paper figures (PNG + PDF + the tidy CSV behind each) from logs in one command.

    python paper_figures/make.py                     # every figure, paper quality, from the shipped real logs
    python paper_figures/make.py --fast              # every figure, quick sampling (2 chains x 300 draws)
    python paper_figures/make.py --check             # regenerate to a temp dir, compare the CSVs
    python paper_figures/make.py --runs runs/bxc-text --fast    # your own grid, quick sampling
    python paper_figures/make.py --only upt_law --simulated --out /tmp/figs  # simulated example
    python paper_figures/make.py --list

Each figure is an entry of ``registry.REGISTRY``: an analysis function (inputs -> tidy DataFrame,
built with the package's own ``ihstats`` functions) and its drawing (tidy DataFrame -> matplotlib
Figure, from ``ihstats.figures.plots_paper``); this file runs them and writes the files, ``INDEX.md``,
``constraints.txt`` (the package versions they were made with, usable with ``pip install -c``)
and the ``--check`` report (``check.py``: sampler tables within Monte Carlo tolerance, the rest
exact); it says when the running versions differ from those recorded.
By default every figure reads the real logs shipped in ``data/reference_runs/`` (natural text:
``bxc-cpu-h200-bf16``; the default ``bxc-cross`` and its held-out grid; ``law-mechanism``;
``freqrel`` and ``freqrel-extend``; ``markov`` and its entropy-matched companions;
``biinduct-text-cpu``), and the planted series ``data/example_series_planted``. A
figure whose set is not shipped is *skipped* with the reason in ``INDEX.md``; the simulated
examples in ``data/`` are used only with ``--simulated`` (and say so in the title and INDEX.md).
A failing figure is reported and the others still run; the exit status is 1 if any failed
(2 on bad arguments). Seeds are fixed (``--seed``, default 0), so reruns give the same files.
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import io
import re
import shlex
import sys
import tempfile
import textwrap
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script, the repository root is not on the path
    sys.path.insert(0, str(ROOT))

from ihstats.base.cli_checks import NONNEG_INT, check_args, check_out_dir, claim_folder  # noqa: E402
from ihstats.figures.save import save_figure  # noqa: E402
from paper_figures.builders import BUDGET, EXAMPLES, REFERENCE, FigureData, Inputs, Skip, rel_path  # noqa: E402
from paper_figures.registry import FIGURE_CLAIMS, REGISTRY  # noqa: E402
from paper_figures.check import ESS_MIN_PER_CHAIN, RHAT_MAX, Z, csv_differences  # noqa: E402
from paper_figures.versions import version_note, why_not_identical, write_constraints  # noqa: E402
from ihstats.base.fileio import atomic_write_csv, atomic_write_text  # noqa: E402
from ihstats.base.command import run_cli

FIGURES = ROOT / "paper_figures" / "figures"
# --check in fast mode (2 chains x 300 draws) accepts a looser r_hat than paper-quality sampling
RHAT_MAX_FAST = 1.05


def make_figure(name: str, inp: Inputs, out: Path) -> tuple[FigureData, list[Path]]:
    """Run one registry entry: analysis, plot, and write ``name.png/.pdf/.csv`` (+ extras)."""
    np.random.seed(inp.seed)  # belt and braces: every ihstats call also takes the seed
    entry = REGISTRY[name]
    data = entry.analysis(inp)
    # the theme for this figure only: sns.set_theme would change every later figure of the process
    with sns.axes_style("ticks"), sns.plotting_context("paper"):
        fig = entry.plot(data)
        if data.note:  # wrapped to the figure's width: one long line ran off its edge
            width = int(fig.get_figwidth() * 22)
            fig.text(0.01, -0.01, textwrap.fill(data.note, width), fontsize=6, color="0.35", va="top")
        files = save_figure(fig, out / name, close=True)
    atomic_write_csv(out / f"{name}.csv", data.frame, index=False)
    files.append(out / f"{name}.csv")
    for k, df in data.extra.items():
        atomic_write_csv(out / f"{name}_{k}.csv", df, index=False)
        files.append(out / f"{name}_{k}.csv")
    return data, files


def _command(name: str, args: argparse.Namespace) -> str:
    parts = ["python", "paper_figures/make.py", "--only", name]
    for flag in REGISTRY[name].inputs:
        v = getattr(args, flag)
        if v is not None:
            parts += [f"--{flag.replace('_', '-')}", str(v)]
    if not args.full:
        parts.append("--fast")
    if args.simulated:
        parts.append("--simulated")
    if args.seed:
        parts += ["--seed", str(args.seed)]
    return shlex.join(parts + ["--out", rel_path(args.out)])


def index_lines(r: dict) -> dict[str, str]:
    """One figure's three INDEX.md lines: its table row, its claim and its note."""
    files = ", ".join(f"`{p.name}`" for p in r.get("files", []))
    return {"row": f"| {r['name']} | {r['status']} | {r['source']} | {files} | `{r['command']}` | {r['seconds']:.1f} |",
            "claim": f"- **{r['name']}** ({r['source'].split(' (')[0]}): {FIGURE_CLAIMS.get(r['name'], '-')}",
            "note": f"- **{r['name']}** ({REGISTRY[r['name']].description}): {r['note'] or '-'}"}


def earlier_index(path: Path) -> tuple[str | None, dict[str, dict[str, str]]]:
    """The header command and each figure's three lines of an INDEX.md this file wrote before
    (``--only`` keeps the figures it does not redraw); nothing where there is none."""
    if not path.is_file():
        return None, {}
    text = path.read_text(encoding="utf-8")
    header = re.search(r"^Regenerated by (.*)$", text, re.M)
    found: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        row = re.match(r"\| (\w+) \| ", line)
        item = re.match(r"- \*\*(\w+)\*\* \((.*?)\): ", line)
        if row and row.group(1) in REGISTRY:
            found.setdefault(row.group(1), {})["row"] = line
        elif item and item.group(1) in REGISTRY:  # claims come before notes, each once per figure
            kind = "claim" if "claim" not in found.get(item.group(1), {}) else "note"
            found.setdefault(item.group(1), {})[kind] = line
    return (header.group(1) if header else None), {n: v for n, v in found.items() if len(v) == 3}


def write_index(out: Path, results: list[dict], args: argparse.Namespace) -> Path:
    """INDEX.md: every figure's status, data, files, command, claim and note. A run with
    ``--only`` redraws some figures: the others keep their lines from the INDEX.md before it."""
    mode = "full sampling" if args.full else "fast (--fast: few draws, not for the paper)"
    path = out / "INDEX.md"
    command = f"`{shlex.join(['python', 'paper_figures/make.py', *args.argv])}` ({mode}, seed {args.seed})"
    lines = {r["name"]: index_lines(r) for r in results}
    header = f"Regenerated by {command}."
    if args.only:
        before, kept = earlier_index(path)
        lines = {n: lines.get(n) or kept[n] for n in REGISTRY if n in lines or n in kept}
        if before and len(lines) > len(results):
            header = f"Regenerated by {before.rstrip('.')}; then {', '.join(args.only)} by {command}."
    text = ["# Paper figures", "", header, "",
            "| figure | status | data | files | command | seconds |", "|---|---|---|---|---|---|"]
    text += [v["row"] for v in lines.values()]
    text += ["", "## Each figure's grid and claim", "",
             "\"Crossed\": max PS reached the run's own level (an uncensored onset); the shipped logs "
             "lack the induction certificate's probe, so no figure says a head formed.", ""]
    text += [v["claim"] for v in lines.values()]
    text += ["", "## Notes", ""]
    text += [v["note"] for v in lines.values()]
    atomic_write_text(path, "\n".join(text) + "\n")
    return path


def figure_of(stem: str) -> str | None:
    """The registry figure that writes the file ``stem`` (``name`` or ``name_<table>``; the
    longest name wins, so ``upt_law_default_law`` belongs to ``upt_law_default``)."""
    owners = [n for n in REGISTRY if stem == n or stem.startswith(n + "_")]
    return max(owners, key=len) if owners else None


def announce_overwrite(out: Path, only: list[str] | None) -> list[Path]:
    """Say which committed files a run into the committed ``paper_figures/figures`` (the
    default ``--out``) replaces; returns them (none for another folder)."""
    if not out.is_dir() or out.resolve() != FIGURES.resolve():
        return []
    names = set(only or REGISTRY)
    hit = sorted(p for p in out.iterdir() if p.is_file() and (
        figure_of(p.name.split(".")[0]) in names or p.name in {"INDEX.md", "constraints.txt"}))
    if hit:
        print(f"overwriting {len(hit)} committed file(s) in {rel_path(out)}/: "
              f"{', '.join(p.name for p in hit)} (git diff shows what changed; --out DIR writes "
              f"elsewhere, --check compares without writing)")
    return hit


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python paper_figures/make.py",
                                 description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--runs", type=Path, default=None,
                    help="grid directory of run logs (emergence_curves; upt_law detects onsets "
                         "from it unless --emergence is given)")
    ap.add_argument("--emergence", type=Path, default=None,
                    help=f"emergence table CSV for upt_law (default: the shipped real logs; "
                         f"{EXAMPLES['emergence'].name}, simulated, only with --simulated)")
    ap.add_argument("--frontier-table", type=Path, default=None,
                    help=f"run table for frontier (default: the shipped real logs; "
                         f"{EXAMPLES['frontier'].name} with --simulated)")
    ap.add_argument("--ablation-table", type=Path, default=None,
                    help=f"tidy ablation table for ablation (default: the shipped real logs; "
                         f"{EXAMPLES['ablation'].name} with --simulated)")
    ap.add_argument("--only", nargs="+", choices=list(REGISTRY), default=None, metavar="NAME",
                    help=f"figures to make (default all): {', '.join(REGISTRY)}")
    ap.add_argument("--fast", action="store_true",
                    help="quick look: 2 chains x 300 draws, 999 resamples (default: paper "
                         "quality, 4 x 1000 draws, 9999 resamples)")
    ap.add_argument("--full", action="store_true", help="paper quality (the default; kept for "
                                                         "old command lines)")
    ap.add_argument("--seed", type=int, default=0, help="seed of every sampler (default 0)")
    ap.add_argument("--simulated", action="store_true",
                    help="draw upt_law, frontier and ablation from the shipped SIMULATED examples "
                         "in data/ (never the default)")
    ap.add_argument("--reference", type=Path, default=REFERENCE,
                    help="folder of shipped real sets (default data/reference_runs)")
    ap.add_argument("--out", type=Path, default=FIGURES,
                    help="output folder (default paper_figures/figures, the committed figures)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary folder and report every CSV that differs "
                         "from the one in --out: sampler tables beyond Monte Carlo tolerance or "
                         "with diagnostics past their thresholds, others at all (exit 1 if any)")
    ap.add_argument("--list", action="store_true", help="list the figures and exit")
    args = ap.parse_args(argv)
    check_args(ap, args, {"seed": NONNEG_INT})
    if not (args.check or args.list):  # the output guard: the committed figures by name, else a results folder
        inputs = [p for p in (args.runs, args.emergence, args.frontier_table, args.ablation_table, args.reference) if p]
        check_out_dir(args.out, inputs, parser=ap, kind="shipped" if args.out.resolve() == FIGURES else "results")
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.full = not args.fast
    return args



def check(args: argparse.Namespace) -> int:
    """Regenerate into a temporary folder and compare every CSV with the committed ones
    (:mod:`paper_figures.check`: sampler tables within Monte Carlo tolerance, others exact)."""
    note = version_note(args.out)
    if note:
        print(note)
    limits = {"rhat_max": RHAT_MAX if args.full else RHAT_MAX_FAST,
              "ess_min": ESS_MIN_PER_CHAIN * BUDGET[args.full]["chains"],
              "n_boot": BUDGET[args.full]["n_boot"]}
    with tempfile.TemporaryDirectory() as tmp:
        argv = [a for a in args.argv if a != "--check"]
        if "--out" in argv:
            i = argv.index("--out")
            del argv[i:i + 2]
        with contextlib.redirect_stdout(io.StringIO()) as log:
            rc = main([*argv, "--out", tmp])
        # the regenerated files live in a folder deleted below: never name it as where they are
        print(log.getvalue().replace(tmp, "<temporary folder, deleted after the check>"), end="")
        made = sorted(Path(tmp).glob("*.csv"))
        problems = [d for p in made for d in csv_differences(p, args.out / p.name, **limits)]
        same = [p.name for p in made if (args.out / p.name).is_file()
                and filecmp.cmp(p, args.out / p.name, shallow=False)]
    names = {p.name for p in made}
    wanted = {p.name for p in args.out.glob("*.csv")
              if args.only is None or figure_of(p.name.split(".")[0]) in args.only}
    problems += [f"{n}: committed but not regenerated" for n in sorted(wanted - names)]
    for line in problems:
        print(f"[differs] {line}")
    print(f"bit-identical: {len(same)} of {len(made)} CSV(s)"
          + ("" if len(same) == len(made) else f"; why not all: {why_not_identical(args.out)}"))
    print(f"check: {len(made)} CSV(s) regenerated, {len(problems)} difference(s) (sampler "
          f"tables: posterior means and interval ends within {Z:g} Monte Carlo standard errors, "
          f"r_hat <= {limits['rhat_max']}, ESS >= {limits['ess_min']}; others exact)")
    return 1 if problems or rc else 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.list:
        for name, fig in REGISTRY.items():
            print(f"{name:18s} {fig.description}")
        return 0
    if args.runs is not None and not args.runs.is_dir():
        print(f"error: --runs: not a directory: {args.runs}", file=sys.stderr)
        return 2
    if args.check:
        return check(args)
    inp = Inputs(args.runs, args.emergence, args.frontier_table, args.ablation_table,
                 args.full, args.seed, args.simulated, args.reference)
    out = args.out
    announce_overwrite(out, args.only)
    if out.resolve() == FIGURES:
        out.mkdir(parents=True, exist_ok=True)
    else:  # marked as the package's; --only rewrites some figures, so the others' files stay
        claim_folder(out, fresh=False)
    results = []
    for name in args.only or list(REGISTRY):
        t0 = time.perf_counter()
        r = {"name": name, "command": _command(name, args), "note": "", "source": "-"}
        try:
            data, files = make_figure(name, inp, out)
            r.update(status="ok", files=files, note=data.note,
                     source=("SIMULATED: " if data.simulated else "real: ") + data.source)
            print(f"[ok]      {name}: {', '.join(p.name for p in files)} "
                  f"({'simulated example' if data.simulated else 'real data'})")
        except Skip as e:
            r.update(status="skipped", note=str(e))
            print(f"[skipped] {name}: {e}")
        except Exception as e:  # noqa: BLE001 -- one figure's failure must not stop the others
            r.update(status="FAILED", note=f"{type(e).__name__}: {e}")
            print(f"[FAILED]  {name}: {type(e).__name__}: {e}", file=sys.stderr)
            traceback.print_exc(limit=3, file=sys.stderr)
        r["seconds"] = time.perf_counter() - t0
        results.append(r)
    index = write_index(out, results, args)
    if (out / "constraints.txt").is_file() and (note := version_note(out)):
        print(note.replace("sampler tables are compared within Monte Carlo tolerance",
                           "constraints.txt now records the running ones"))
    write_constraints(out)
    failed = [r["name"] for r in results if r["status"] == "FAILED"]
    print(f"wrote {out}/ and {index}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    warnings.filterwarnings("ignore", message=".*BLAS.*")
    run_cli(main)
