"""analyses/legacy_ceilings.py on the shipped default grid: the successor ceilings of logs that
predate them, from each run's generator, and the provisional class each crossing gets with them."""

import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_grids_ceilings_and_classes(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "analyses" / "legacy_ceilings.py"),
                        str(ROOT / "data/reference_runs/bxc-cross"), "--out", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    t = pd.read_csv(tmp_path / "legacy_ceilings.csv")
    assert len(t) == 24
    # chance < the oracle successor head < its sharpened form, all falling with C (more positions)
    assert ((t["chance_indist"] < t["ceil_succ_indist"]) & (t["ceil_succ_indist"] < t["ceil_succ_pmi_indist"])).all()
    by_c = t.groupby("C")["ceil_succ_pmi_indist"].mean()
    assert by_c[32] > by_c[64] > by_c[128] and 0.40 < by_c[32] < 0.5  # the level 0.5 has little margin at C 32
    # the B 16 x C 64 crossings copy the data, not random tokens, above any successor lookup
    b16 = t[(t["B"] == 16) & (t["C"] == 64)]
    assert (b16["provisional"] == "in-distribution lookup").all()
    assert (b16["ps_indist_end"] > b16["ceil_succ_pmi_indist"] + 0.1).all()
    assert t["provisional"].value_counts().to_dict() == {"induction (previous-token)": 17, "none": 3,
                                                         "in-distribution lookup": 3, "induction (other circuit)": 1}
