"""Copy a finished grid's tidy logs (never weights) into ``data/reference_runs/<preset>/``.

    python paper_figures/ship_runs.py /work/bg/runs/bxc-markov --done-file /work/bg/done.txt
    python paper_figures/ship_runs.py RUNS/biinduct --extra RUNS/biinduct-ablation.csv

What is copied is an allow-list of the data contract's tidy files (``grid.json``,
``manifest.parquet``, ``summary.csv``; per run ``config.json``, ``status.json``,
``metrics.parquet``, ``train.parquet``) plus any ``--extra`` tidy tables: no checkpoints, no
figures, no lock or worker files. A ``README.md`` says which command made the set, at which
commit, on which machine, how long it took and how big the shipped set is.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from pathlib import Path
from ihstats.base.command import run_cli

ROOT = Path(__file__).resolve().parents[1]
GRID_FILES = ("grid.json", "manifest.parquet", "summary.csv")
RUN_FILES = ("config.json", "status.json", "metrics.parquet", "train.parquet")


def tidy_files(grid: Path) -> list[Path]:
    """The grid's tidy log files, relative to ``grid`` (raises if it is not a grid dir)."""
    if not (grid / "grid.json").is_file():
        raise FileNotFoundError(f"{grid}: no grid.json, not a grid directory")
    files = [Path(n) for n in GRID_FILES if (grid / n).is_file()]
    for run in sorted(p for p in grid.iterdir() if (p / "config.json").is_file()):
        files += [run.relative_to(grid) / n for n in RUN_FILES if (run / n).is_file()]
    return files


def wall_seconds(preset: str, done_file: Path | None) -> str:
    """Wall time from a ``done.txt`` line ``<preset> rc=0 wall=<s>``, else 'not recorded'."""
    if done_file and done_file.is_file():
        for line in done_file.read_text().splitlines():
            parts = dict(p.split("=", 1) for p in line.split()[1:] if "=" in p)
            if line.split()[:1] == [preset] and "wall" in parts:
                return f"{int(parts['wall']):,} s (rc={parts.get('rc', '?')})"
    return "not recorded"


def _commit(grid: Path, files: list[Path]) -> str:
    commits = {json.loads((grid / f).read_text()).get("git_commit") or "unknown"
               for f in files if f.name == "config.json"}
    return ", ".join(sorted(c[:7] for c in commits)) or "unknown"


def readme(preset: str, grid: Path, files: list[Path], size: int, wall: str,
           extras: list[str], note: str = "") -> str:
    n_runs = sum(f.name == "config.json" for f in files)
    lines = [f"# `{preset}`: tidy logs of a real run (no weights)", "",
             f"- command: `python -m ihtrain.grid --preset {preset} --out {grid}`" + (f" ({note})" if note else ""),
             f"- commit: `{_commit(grid, files)}` (each run's `config.json` `git_commit`)",
             f"- machine: {platform.machine()} {platform.system()}, {os.cpu_count()} CPU cores "
             f"(the machine's own count; say in --note what else shared it), no GPU",
             f"- wall time of the whole grid: {wall}",
             f"- runs: {n_runs}; files: {len(files) + len(extras)}; size: {size / 1024:,.0f} KiB",
             "", "Per run: `config.json`, `status.json`, `metrics.parquet`, `train.parquet`; per "
             "grid: `grid.json`, `manifest.parquet`, `summary.csv`. Check them with "
             f"`python -m ihstats.base.schema --logs-only data/reference_runs/{preset}`."]
    if extras:
        lines += ["", "Extra tidy tables: " + ", ".join(f"`{e}`" for e in extras)]
    return "\n".join(lines) + "\n"


def ship(grid: Path, preset: str, dest_root: Path, done_file: Path | None,
         extras: list[Path] = (), note: str = "") -> tuple[Path, int]:
    """Copy the tidy logs to ``dest_root/preset`` (replacing it); returns (dest, bytes)."""
    files = tidy_files(grid)
    tmp = dest_root / f".{preset}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for f in files:
        (tmp / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(grid / f, tmp / f)
    for e in extras:
        shutil.copy2(e, tmp / e.name)
    size = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
    text = readme(preset, grid, files, size, wall_seconds(preset, done_file),
                  [e.name for e in extras], note)
    (tmp / "README.md").write_text(text)
    dest = dest_root / preset
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)  # the set appears whole or not at all
    return dest, size


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grid", type=Path, help="finished grid directory (with grid.json)")
    ap.add_argument("--preset", default=None, help="set name (default: the grid dir's name)")
    ap.add_argument("--done-file", type=Path, default=None,
                    help="text file with '<preset> rc=N wall=S' lines (wall time)")
    ap.add_argument("--extra", type=Path, nargs="*", default=[], help="more tidy tables to ship")
    ap.add_argument("--note", default="", help="how it ran, e.g. 'nice 19 beside other work' (into the README)")
    ap.add_argument("--dest", type=Path, default=ROOT / "data" / "reference_runs")
    args = ap.parse_args(argv)
    try:
        dest, size = ship(args.grid, args.preset or args.grid.name, args.dest, args.done_file,
                          args.extra, args.note)
    except (FileNotFoundError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"shipped {dest} ({size / 1024:,.0f} KiB)")
    return 0


if __name__ == "__main__":
    run_cli(main)
