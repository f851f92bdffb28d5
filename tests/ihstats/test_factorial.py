"""ihstats.factorial: the mechanism factorial's arms and contrasts on hand-built emergence tables."""

import numpy as np
import pandas as pd
import pytest

from ihstats.factorial import (ARMS, FactorialError, arm_table, check_arms, contrast_pairs, contrast_table,
                               run_table)
from ihstats.onset.contrast import fit_arms, profile_interval

# the hand-built tables hold the rise an uncertified run showed, as real ones do: formed_column says so
pytestmark = pytest.mark.filterwarnings("ignore:formed = False with an uncensored onset")

#: planted log onset offsets from the centre (onset 1,000 updates)
OFFSETS = {"centre": 0.0, "c32": 0.3, "c128": -0.2, "near": -0.1, "far": 0.4, "sparse": 0.5, "dense": -0.3}
SETTINGS = {"centre": (64, 10.0, 0.4), "c32": (32, 10.0, 0.4), "c128": (128, 10.0, 0.4), "near": (64, 5.0, 0.4),
            "far": (64, 24.0, 0.4), "sparse": (64, 10.0, 0.2), "dense": (64, 10.0, 0.6)}


def _table(n: int = 5, seed: int = 0, cap: float = 1750.0) -> pd.DataFrame:
    """An emergence table as the analysis hands it over: arm, C, copy distance, copies per token,
    onset, last_step, formed (certified), crossed, onset_basis, mechanism; runs past ``cap`` are not
    certified (their onset column holds a rise the certificate refused, as real tables do)."""
    rng = np.random.default_rng(seed)
    rows = []
    for arm in ARMS:
        C, d, k = SETTINGS[arm]
        for s in range(n):
            onset = float(np.exp(np.log(1000) + OFFSETS[arm] + rng.normal(0, 0.15)))
            ok = onset < cap
            rows.append({"run_id": f"{arm}{s}", "arm": arm, "seed": s, "C": C, "copy_distance": d,
                         "copies_per_token": k, "onset": onset if ok else 300.0, "last_step": cap,
                         "censored": False, "formed": ok, "crossed": not ok,
                         "onset_basis": "certified", "mechanism": "induction (previous-token)" if ok else "fixed-offset copy"})
    return pd.DataFrame(rows)


def test_contrasts_recover_the_planted_effects_with_the_design_floor():
    runs = run_table(_table())
    arms = arm_table(runs).set_index("arm")
    assert list(arms.index) == list(ARMS) and (arms["n"] == 5).all()
    # far: 1,490 planted, one run past the cap of 1,750: censored there, its class and crossing kept
    assert arms.at["far", "certified"] == 4 and arms.at["far", "crossed_not_certified"] == 1
    assert arms.at["far", "uncertified_classes"] == "fixed-offset copy 1" and arms.at["far", "uncertified_last_steps"] == "1750"
    assert runs.loc[~runs["certified"], "time"].tolist() == [1750.0]
    c = contrast_table(runs).set_index("contrast")
    assert len(c) == len(contrast_pairs()) == 9 and c["testable"].all()
    for name, row in c.iterrows():
        truth = OFFSETS[row["high"]] - OFFSETS[row["low"]]
        assert row["lo"] < row["estimate"] < row["hi"] and abs(row["estimate"] - truth) < 0.3, name
        assert row["onset_ratio"] == pytest.approx(np.exp(row["estimate"]))
        assert row["p_floor"] == pytest.approx(2 / 252) and row["p_floor"] <= row["rank_p"] <= 1
    assert c.loc["c128 - c32", "factor_ratio"] == 4 and c.loc["dense - sparse", "factor_ratio"] == pytest.approx(3)
    e = c.loc["c128 - c32"]
    assert e["elasticity"] == pytest.approx(e["estimate"] / np.log(4))
    below = c.loc["near - centre"]  # a ratio under 1: the interval's ends swap
    assert below["elasticity_lo"] == pytest.approx(below["hi"] / np.log(0.5))
    assert below["elasticity_lo"] < below["elasticity"] < below["elasticity_hi"]
    # the estimate is the shared-sigma fit over every arm
    fit = fit_arms(runs["arm"], np.log(runs["time"]), ~runs["certified"])
    assert c.loc["far - near", ["estimate", "lo", "hi"]].tolist() == pytest.approx(profile_interval(fit, "far", "near"))


def test_an_arm_with_one_onset_is_not_testable_and_says_why():
    t = _table(n=5, cap=5000.0)
    few = t["arm"].eq("dense") & (t["seed"] > 0)
    t.loc[few, ["formed", "mechanism"]] = [False, "none"]
    t["stop_reason"] = np.where(few & (t["seed"] < 3), "emerged", "max_steps")  # two stopped on a crossing
    runs = run_table(t)
    arms = arm_table(runs).set_index("arm")
    assert arms.at["dense", "certified"] == 1 and arms.at["dense", "uncertified_classes"] == "none 4"
    assert arms.at["dense", "stopped_not_certified"] == 2 and arms["stopped_not_certified"].sum() == 2
    assert arms.at["dense", "uncertified_last_steps"] == "5000, 5000, 5000, 5000"
    c = contrast_table(runs).set_index("contrast")
    for name in ("dense - sparse", "dense - centre"):
        assert not c.at[name, "testable"] and "dense: 1 of 5 runs certified" in c.at[name, "why"]
        assert c.loc[name, ["estimate", "lo", "hi", "elasticity", "rank_p"]].isna().all()
        assert c.at[name, "p_floor"] == pytest.approx(2 / 252)  # the floor is the design's, said anyway
    assert c.drop(["dense - sparse", "dense - centre"])["testable"].all()


def test_no_contrast_testable_on_one_seed():
    t = _table(n=1)
    c = contrast_table(run_table(t))
    assert not c["testable"].any() and c["estimate"].isna().all() and (c["p_floor"] == 1).all()
    assert c["why"].str.startswith("not testable").all()


def test_refusals():
    with pytest.raises(FactorialError, match="no arm far, sparse"):
        check_arms(["centre", "c32", "c128", "near", "dense"], "grid x")
    with pytest.raises(FactorialError, match="not the mechanism factorial"):
        run_table(_table().assign(arm="B32-C64"))
    with pytest.raises(FactorialError, match="no column last_step"):
        run_table(_table().drop(columns="last_step"))
    bad = _table()
    bad.loc[0, "onset"] = np.nan
    with pytest.raises(FactorialError, match="certified run needs its onset"):
        run_table(bad)
