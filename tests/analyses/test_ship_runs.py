"""paper_figures/ship_runs.py: tidy logs only (no weights), a README with wall time and size."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from ihstats.simulate.curves import simulate_curve
from ihstats.simulate.run_dirs import write_fake_grid

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("ship_runs", ROOT / "paper_figures" / "ship_runs.py")
ship_runs = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = ship_runs
spec.loader.exec_module(ship_runs)


def test_ships_tidy_logs_without_weights(tmp_path):
    grid = tmp_path / "mygrid"
    write_fake_grid(grid, [(simulate_curve("flat", "mixed", n=20, last_step=1000, seed=0),
                            {"train.batch_size": 8, "train.context": 64})])
    run = next(p for p in grid.iterdir() if (p / "config.json").is_file())
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "final.pt").write_bytes(b"weights")
    (run / "curves.png").write_bytes(b"png")
    done = tmp_path / "done.txt"
    done.write_text("other rc=0 wall=5\nmygrid rc=0 wall=1234\n")
    extra = tmp_path / "icl.csv"
    extra.write_text("a,b\n1,2\n")
    dest, size = ship_runs.ship(grid, "mygrid", tmp_path / "ref", done, [extra])
    files = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}
    assert not any(f.endswith((".pt", ".png")) for f in files)
    assert {"grid.json", "README.md", "icl.csv", f"{run.name}/config.json"} <= files
    text = (dest / "README.md").read_text()
    assert "1,234 s (rc=0)" in text and "--preset mygrid" in text and "KiB" in text
    assert size == sum(p.stat().st_size for p in dest.rglob("*")
                       if p.is_file() and p.name != "README.md")
    assert ship_runs.main([str(tmp_path / "nope")]) == 2
