"""Grid specs: one probe geometry across C (issue 39 item 1)."""

import tomllib

from ihstats.base.contract import MAX_PROBE_LEN, probe_len_of
from ihtrain.grid.cli import main
from ihtrain.grid.expand import probe_geometry_warning
from ihtrain.grid.spec import parse_spec

SPEC = """
name = "geom"
[base]
preset = "cpu-tiny"
[base.model]
context = 128
[base.train]
context = 64
[axes]
"train.batch_size" = [4, 8]
"train.context" = [16, 40, 128]
"""


def _spec(extra: str = ""):
    return parse_spec(tomllib.loads(SPEC.replace("[axes]", extra + "\n[axes]")), source="test.toml")


def test_default_probe_length_follows_context():
    assert [probe_len_of(0, c) for c in (16, 40, 128)] == [8, 20, MAX_PROBE_LEN]
    assert probe_len_of(7, 128) == 7


def test_cells_probed_with_different_lengths_are_named_in_a_warning():
    msg = probe_geometry_warning(_spec().expand())
    assert msg is not None
    # every length, the contexts and cell counts that get it, and the largest length that fits all
    for part in ("3 lengths", "probe_len 8 in 2 cells at C 16", "probe_len 20 in 2 cells at C 40",
                 "probe_len 50 in 2 cells at C 128", "batch_size=4,context=16",
                 "--set metrics.probe_len=N", "shortest context (16): N <= 7"):
        assert part in msg, part


def test_one_length_for_every_cell_gives_no_warning():
    assert probe_geometry_warning(_spec("[base.metrics]\nprobe_len = 7").expand()) is None


def test_the_grid_warns_at_plan_time(tmp_path, capsys):
    spec = tmp_path / "g.toml"
    spec.write_text(SPEC)
    assert main(["--spec", str(spec), "--dry-run", "--out", str(tmp_path / "g")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: the grid's runs measure PS on repeat probes of 3 lengths")
    assert main(["--spec", str(spec), "--dry-run", "--out", str(tmp_path / "g"),
                 "--set", "metrics.probe_len=7"]) == 0
    assert "probe" not in capsys.readouterr().err
