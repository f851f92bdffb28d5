"""ihstats.ablation.biinduct: the claim tests' wording, floors and seeds-as-unit contrasts."""

import numpy as np
import pandas as pd
import pytest

from ihstats.ablation.biinduct import CLAIMS, claim_tests, verdict


def _runs(shift_ps=0.0, n_seeds=3):
    rows = []
    for mode in ("none", "forward", "backward", "balanced", "random"):
        for s in range(n_seeds):
            bi = mode in ("forward", "backward", "balanced")
            rows.append({"mode": mode, "seed": s, "ps": 0.4 + (shift_ps if bi else 0) + 0.01 * s,
                         "onset_or_cap": 2000.0 + 10 * s, "anti_induction": 0.05 + 0.001 * s,
                         "copy_bwd_logprob": -5.0 - 0.1 * s - (1.0 if mode in ("backward", "balanced") else 0.0)})
    return pd.DataFrame(rows)


def test_verdict_wording():
    assert verdict(0.001, 1.0, 0.0045, "greater") == "agrees"
    assert verdict(1.0, 0.001, 0.0045, "greater") == "differs"
    assert verdict(0.3, 0.7, 0.0045, "greater").startswith("not resolvable")
    assert verdict(0.05, 0.95, 0.05, "greater") == "agrees" and verdict(0.1, 0.95, 0.1, "less").startswith("not res")
    assert verdict(0.8, 0.2, 0.009, "not greater") == "agrees (no increase detected)"
    assert verdict(0.99, 0.01, 0.009, "not greater") == "agrees (lower)"
    assert verdict(0.002, 0.99, 0.009, "not greater") == "differs"
    assert verdict(0.8, 0.2, 0.1, "not greater") == "not resolvable by this design"  # 3 vs 3, Holm over 2
    assert verdict(0.002, 0.99, 0.009, "not less") == "differs"  # e.g. a lower (better) ICL loss difference
    assert verdict(0.99, 0.01, 0.009, "not less") == "agrees (higher)"
    assert verdict(0.8, 0.2, 0.009, "not less") == "agrees (no decrease detected)"


def test_better_token_index_icl_refutes_icl_not_better():
    # the score is late minus early loss: Bi-Induct runs more negative = more in-context learning
    runs = _runs()
    runs["icl_token_index"] = np.where(runs["mode"] == "none", -0.45, -0.80) - 0.01 * runs["seed"]
    c = claim_tests(runs).set_index("column")
    assert c.at["icl_token_index", "predicts"] == "not less"
    assert c.at["icl_token_index", "p_for"] == pytest.approx(1 / 220)  # Bi-Induct lower in every run: the floor
    assert c.at["icl_token_index", "verdict"] == "differs"


def test_claims_pool_the_curricula_against_natural_with_the_exact_floor():
    c = claim_tests(_runs(shift_ps=0.3))
    assert (c.loc[c["column"] == "onset_or_cap", "baseline"].tolist() == ["none", "random"])  # and the control
    c = c[c["baseline"] == "none"].set_index("column")
    assert c.at["ps", "n"] == 9 and c.at["ps", "n_baseline"] == 3
    assert c.at["ps", "floor"] == pytest.approx(1 / 220)
    assert c.at["ps", "p_greater"] == pytest.approx(1 / 220)
    # Holm over the claim's two measures (ps and ps_nat; ps_nat absent here: a family of one)
    assert c.at["ps", "p_for_holm"] == pytest.approx(1 / 220) and c.at["ps", "verdict"] == "agrees"
    # onsets identical across conditions: nothing earlier
    assert c.at["onset_or_cap", "verdict"].startswith("not resolvable")
    # anti-induction uses backward + balanced only (6 vs 3: one-sided floor 1 / 84)
    assert c.at["anti_induction", "n"] == 6 and c.at["anti_induction", "floor"] == pytest.approx(1 / 84)
    assert c.at["anti_induction", "floor_holm"] == pytest.approx(2 / 84)  # Holm with copy_bwd_logprob
    assert c.at["anti_induction", "verdict"] == "agrees (no increase detected)"
    assert not c["at_chance"].any()  # no floor columns in these runs: no chance check
    # backward-copy log-prob lower with backward snippets in every run: not an increase
    assert c.at["copy_bwd_logprob", "verdict"] == "agrees (lower)"
    # the random-span control is never pooled with the curricula
    assert all("random" not in r for r in c["runs"])


def _at_chance_runs(none_hits: float, backward_logprob: float) -> pd.DataFrame:
    """Runs whose key -> value HITS@1 (chance 1 / 20 pairs) and backward-copy log-prob (chance
    -ln 256) are set; natural-only differs from every Bi-Induct run in both, so the permutation
    p sits at the design's floor."""
    rows = []
    for mode in ("none", "forward", "backward", "balanced"):
        for s in range(3):
            bwd = mode in ("backward", "balanced")
            rows.append({"mode": mode, "seed": s, "kv_hits1": (none_hits if mode == "none" else 0.0) + 0.001 * s,
                         "kv_hits1_floor": 1 / 20, "copy_bwd_logprob": (backward_logprob if bwd else -8.0) - 0.01 * s,
                         "copy_bwd_logprob_floor": -np.log(256)})
    return pd.DataFrame(rows)


def test_a_verdict_on_a_measure_at_chance_says_not_testable():
    """Both groups at chance: natural-only's HITS@1 of 0.06 (about 1 / pairs) beats Bi-Induct's 0
    in every seed, yet the verdict is not "agrees (lower)"; a backward-copy log-prob of -5.0
    against uniform -5.55 is no backward copy. Off chance the same tests give a verdict."""
    c = claim_tests(_at_chance_runs(none_hits=0.06, backward_logprob=-5.0)).set_index("column")
    for col in ("kv_hits1", "copy_bwd_logprob"):
        assert c.at[col, "at_chance"] and c.at[col, "verdict"].startswith("not testable by this design")
    assert c.at["kv_hits1", "p_against"] == pytest.approx(1 / 220)  # the test itself is at its floor
    assert "0.05" in c.at["kv_hits1", "verdict"] and "-5.55" in c.at["copy_bwd_logprob", "verdict"]
    c = claim_tests(_at_chance_runs(none_hits=0.6, backward_logprob=-0.5)).set_index("column")
    assert not c["at_chance"].any()
    assert c.at["kv_hits1", "verdict"] == "agrees (lower)" and c.at["copy_bwd_logprob", "verdict"] == "differs"
    # the anti-induction copy share is a share among m candidates: chance 1 / m on a ratio scale
    anti_copy = next(cl for cl in CLAIMS if cl.column == "anti_copy")
    assert anti_copy.floor.scale == "ratio" and "1 / m" in anti_copy.floor.what
    assert verdict(0.001, 1.0, 0.0045, "greater", at_chance="floor 0.05") == (
        "not testable by this design (at chance: floor 0.05)")


def test_three_seeds_of_one_curriculum_cannot_resolve_a_two_sided_claim():
    runs = _runs(shift_ps=0.3, n_seeds=1)
    c = claim_tests(runs)
    c = c[c["baseline"] == "none"].set_index("column")
    assert c.at["ps", "floor"] == pytest.approx(0.25)
    assert c.at["ps", "verdict"] == "not resolvable by this design"
    assert {cl.column for cl in CLAIMS} >= {"ps", "onset_or_cap", "icl_token_index", "kv_gain", "ablation_gap",
                                           "top_share", "anti_induction", "copy_bwd_logprob", "kv_hits1"}
    assert not np.isnan(c["p_greater"]).any()


def test_a_measure_one_group_never_reached_is_said_not_testable_never_dropped():
    # natural-only never reached the PS level concentration is read at: its top share is missing
    runs = _runs(shift_ps=0.3)
    runs["top_share"] = np.where(runs["mode"] == "none", np.nan, 0.4 + 0.01 * runs["seed"])
    c = claim_tests(runs).set_index("column")
    assert c.at["top_share", "verdict"] == "not testable by this design (no none run has a value)"
    assert c.at["top_share", "n"] == 9 and c.at["top_share", "n_baseline"] == 0
    assert np.isnan(c.at["top_share", "p_for_holm"]) and np.isnan(c.at["top_share", "floor_holm"])
    assert c.loc[c.index == "ps", "verdict"].iloc[0] == "agrees"  # the other claims are tested as before
