"""The shipped ``biinduct-text-cpu`` grid read as docs/RESULTS.md section 5 reads it: on the
builtin text natural-only forms no head within 6,000 updates while the curricula do, so the
emergence claims are testable and agree, the token-index ICL claim differs, and the claims that
need a natural-only head say "not testable" instead of vanishing."""

from math import comb
from pathlib import Path

import pytest

from ihstats.ablation.biinduct import claim_tests, run_table
from ihstats.base.fileio import read_table

GRID = Path(__file__).resolve().parents[2] / "data" / "reference_runs" / "biinduct-text-cpu"


@pytest.fixture(scope="module")
def runs():
    return run_table(GRID, ablation=read_table(GRID / "ablation.parquet", "ablation table"))


def test_natural_only_forms_nothing_and_every_curriculum_rises(runs):
    natural = runs[runs["mode"] == "none"]
    assert len(natural) == 3 and not natural["formed"].any() and (natural["max_ps_peak"] < 0.05).all()
    curricula = runs[runs["mode"].isin(["forward", "backward", "balanced"])]
    assert len(curricula) == 9 and curricula["formed"].sum() == 8 and (curricula["ps"] > 0.25).all()
    assert curricula["onset"].max() < 5100  # every rise before the anneal
    control = runs[runs["mode"] == "random"]  # the same injection with nothing to copy
    assert len(control) == 3 and not control["formed"].any() and (control["ps"] < 0.03).all()


def test_verdicts_as_results_reads_them(runs):
    c = claim_tests(runs)
    vs_natural = c[c["baseline"] == "none"].set_index("column")
    floor = 1 / comb(12, 3)
    assert vs_natural.at["ps", "p_for"] == pytest.approx(floor) and vs_natural.at["ps", "verdict"] == "agrees"
    assert vs_natural.at["onset_or_cap", "verdict"] == "agrees"
    vs_control = c[c["baseline"] == "random"].set_index("column")
    assert vs_control.at["onset_or_cap", "verdict"] == "agrees"  # 9 vs 3: one unformed curriculum run ties
    assert vs_control.at["onset_or_cap", "p_for"] == pytest.approx(4 / comb(12, 3))
    assert vs_natural.at["icl_token_index", "p_for"] == pytest.approx(floor)
    assert vs_natural.at["icl_token_index", "verdict"] == "differs"
    assert vs_natural.at["kv_hits1", "verdict"].startswith("not testable by this design (at chance")
    assert vs_natural.at["top_share", "verdict"] == "not testable by this design (no none run has a value)"
    assert vs_natural.at["anti_induction", "verdict"].startswith("not testable by this design (at chance")
    assert vs_natural.at["anti_copy", "verdict"] == "differs"
