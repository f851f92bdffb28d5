"""The default grid rerun with the general probe (data/reference_runs/bxc-cross-certified): the
certificate read from real logs (issue 65)."""

from pathlib import Path

from ihstats.base import io
from ihstats.emergence import emergence_table

GRID = Path(__file__).resolve().parents[2] / "data" / "reference_runs" / "bxc-cross-certified"


def test_the_rerun_certifies_the_previous_token_circuits_and_not_the_b16_lookups():
    data = io.load_grid(GRID)
    table = emergence_table(data).set_index("run_id")  # default onset: the certified general curve
    assert (table["metric"] == "ps_gen").all() and (table["onset_basis"] == "certified").all()
    formed = table[table["formed"].astype(bool)]
    assert len(table) == 24 and len(formed) == 17
    assert set(formed["mechanism"]) == {"induction (previous-token)"}
    b16 = table[(table["B"] == 16) & (table["C"] == 64)]
    assert len(b16) == 3 and not b16["formed"].astype(bool).any()  # the shipped in-distribution lookups
    assert (b16["ps_gen_near_end"] < 0.1).all() and (b16["ps_gen_mid_end"] > 0.8).all()
    assert (formed[["ps_gen_near_end", "ps_gen_mid_end", "ps_gen_far_end"]].min(axis=1) >= 0.5).all()
