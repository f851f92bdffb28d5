"""The induction certificate on hand-built metric frames: one per mechanism class (issue 65)."""

import numpy as np
import pandas as pd
import pytest

from ihstats.certificate import (CERT_MARGIN, FIXED_OFFSET, GENERAL_SLOTS, INDIST_LOOKUP, INDUCTION_OTHER,
                                 INDUCTION_PT, LEGACY_BASIS, MECHANISM_CLASSES, NO_HEAD, SUCCESSOR, UNCERTIFIABLE,
                                 certify, certify_run, fit_basis, general_curve)
from ihstats.emergence import emergence_table, formation, onset_metric

STEPS = np.unique(np.geomspace(10, 6000, 60).astype(int))


def rise(top: float, at: float, base: float = 0.03, steps=STEPS) -> np.ndarray:
    """A sigmoid in log step from ``base`` to ``top`` centred at update ``at``."""
    return base + (top - base) / (1 + np.exp(-8 * (np.log(steps) - np.log(at))))


def frame(head: dict, pt0: float = 0.05, ctrl_ceiling: float | None = None, pmi_ceiling: float | None = None,
          steps=STEPS) -> pd.DataFrame:
    """Tidy metrics of one run: ``head`` maps a metric name to its curve on head (1, 0); every other
    head (layers 0-1, 2 heads each) sits at 0.02; layer-0 prev_token is ``pt0`` from the start;
    ``ceil_*`` model-level ceilings are constant when given."""
    rows = []
    for i, s in enumerate(steps):
        for layer in (0, 1):
            for h in (0, 1):
                for name, curve in head.items():
                    v = curve[i] if (layer, h) == (1, 0) else 0.02
                    rows.append((s, name, layer, h, v))
                rows.append((s, "prev_token", layer, h, pt0 if layer == 0 else 0.05))
        for name, value in (("ceil_succ_ctrl", ctrl_ceiling), ("ceil_succ_pmi_indist", pmi_ceiling)):
            if value is not None:
                rows.append((s, name, -1, -1, value))
    return pd.DataFrame(rows, columns=["step", "metric", "layer", "head", "value"])


def general(near, mid, far) -> dict:
    return dict(zip(GENERAL_SLOTS, (near, mid, far)))


FLAT = rise(0.04, 1000, base=0.03)
INDUCTION = {**general(rise(0.85, 800), rise(0.8, 800), rise(0.75, 800)), "ps": rise(0.8, 800),
             "ps_indist": rise(0.85, 800), "ps_indist_ctrl": rise(0.7, 800)}


def test_the_classes_are_the_contract():
    assert MECHANISM_CLASSES == ("induction (previous-token)", "induction (other circuit)", "fixed-offset copy",
                                 "successor lookup", "in-distribution lookup", "none",
                                 "uncertifiable (no general probe)")
    assert 0 < CERT_MARGIN < 0.5


def test_induction_through_a_previous_token_head_is_certified_at_its_rise():
    c = certify(frame(INDUCTION, pt0=0.9, ctrl_ceiling=0.12), level=0.3)
    assert c.certified and c.cls == INDUCTION_PT and c.certificate == "certified"
    assert 500 < c.onset < 1200 and c.onset_lo <= c.onset <= c.onset_hi
    assert 600 < c.certified_step < 1500  # the first evaluation from which every distance stays >= 0.3
    assert min(c.general_end.values()) == pytest.approx(0.75, abs=0.01)


def test_induction_through_another_circuit_is_certified_with_its_label():
    c = certify(frame(INDUCTION, pt0=0.05, ctrl_ceiling=0.12), level=0.3)
    assert c.certified and c.cls == INDUCTION_OTHER  # the previous-token head is a label, not a requirement


def test_a_fixed_offset_copier_passes_one_distance_and_is_not_certified():
    # attends s - o + 1 for the one offset the single-distance probe used: that distance only
    copier = {**general(FLAT, rise(0.9, 800), FLAT), "ps": rise(0.87, 800), "ps_indist": rise(0.2, 800)}
    c = certify(frame(copier, pt0=0.04), level=0.3)
    assert not c.certified and c.cls == FIXED_OFFSET and c.certified_step is None
    assert np.isnan(c.onset)
    f = formation(frame(copier, pt0=0.04), metric="ps")  # crossed on the single-distance probe, not formed
    assert f["crossed"] and not f["formed"] and f["mechanism"] == FIXED_OFFSET


def test_a_successor_lookup_is_not_certified():
    # ps_indist creeps to 0.38 (attention to likely successors); random-token copies never happen
    lookup = {**general(FLAT, FLAT, FLAT), "ps": FLAT, "ps_indist": rise(0.38, 600), "ps_indist_ctrl": rise(0.1, 600)}
    c = certify(frame(lookup, ctrl_ceiling=0.08), level=0.3)
    assert not c.certified and c.cls == SUCCESSOR
    # without the control: ps_indist within the margin of the sharpened oracle successor head's
    no_ctrl = {k: v for k, v in lookup.items() if k != "ps_indist_ctrl"}
    assert certify(frame(no_ctrl, pmi_ceiling=0.4), level=0.3).cls == SUCCESSOR
    # a head that passes every distance but whose in-distribution copies are only successors
    both = {**INDUCTION, "ps_indist_ctrl": rise(0.12, 800)}
    c = certify(frame(both, pt0=0.9, ctrl_ceiling=0.1), level=0.3)
    assert not c.certified and c.cls == SUCCESSOR


def test_an_in_distribution_lookup_is_not_certified():
    # position-keyed: the data's own copies (0.85, controlled 0.7 over a 0.1 ceiling), never random tokens
    lookup = {**general(FLAT, FLAT, FLAT), "ps": rise(0.06, 800), "ps_indist": rise(0.85, 800),
              "ps_indist_ctrl": rise(0.7, 800)}
    c = certify(frame(lookup, ctrl_ceiling=0.1), level=0.5)
    assert not c.certified and c.cls == INDIST_LOOKUP


def test_nothing_copied_is_none_and_a_head_that_fell_back_is_not_certified():
    assert certify(frame({**general(FLAT, FLAT, FLAT), "ps_indist": FLAT}), level=0.3).cls == NO_HEAD
    fell = {k: v.copy() for k, v in INDUCTION.items()}
    fell["ps_gen_far"][-3:] = 0.1  # passed, then one distance fell below the level at the end
    c = certify(frame(fell, pt0=0.9, ctrl_ceiling=0.1), level=0.3)
    assert not c.certified and c.cls == FIXED_OFFSET


def test_creep_then_jump_is_read_at_the_jump():
    """ps_indist creeps to 0.38 by update ~800 (a successor lookup), the induction head comes at 2,600:
    the certified onset (the general curve, which cannot creep) is the jump; before the jump the run
    is a successor lookup, not formed."""
    creep = rise(0.38, 700, base=0.03)
    jump = rise(0.9, 2600, base=0.0)
    run = {**general(rise(0.85, 2600), rise(0.8, 2600), rise(0.8, 2600)), "ps": rise(0.8, 2600),
           "ps_indist": np.maximum(creep, jump), "ps_indist_ctrl": rise(0.7, 2600, base=0.05)}
    m = frame(run, pt0=0.9, ctrl_ceiling=0.1)
    c = certify(m, level=0.3)
    # the knee of a sigmoid centred at 2,600 (eight per log unit) lies ~25% before its centre; the creep's at ~500
    assert c.certified and 0.65 * 2600 <= c.onset <= 1.1 * 2600
    assert onset_metric(m) == "ps_gen"
    row = emergence_table(m.assign(run_id="r")).iloc[0]  # the default onset: the certified one
    assert row["metric"] == "ps_gen" and row["onset_basis"] == "certified" and row["formed"]
    assert abs(row["onset"] - c.onset) < 1
    early = certify(m[m["step"] < 1500], level=0.3)
    assert not early.certified and early.cls == SUCCESSOR


def test_a_general_curve_that_creeps_is_read_at_the_jump_that_reaches_the_level():
    """Decoupled data (copies 8-12 back): layer-0 heads reading the band's offsets lift the general
    curve to ~0.15 by update 600, the induction head jumps at 2,500 (mechanism-factorial's c32 and near
    runs). The certified onset, and the table's, is the jump: the creep's knee dated two of them at
    120-370 updates before the detector read the rise that reaches the run's level."""
    creep = rise(0.16, 500, base=0.03)
    jump = rise(0.85, 2500, base=0.0)
    curve = np.maximum(creep, jump)
    run = {**general(curve, curve, curve), "ps": rise(0.8, 2500), "ps_indist": curve, "ps_indist_ctrl": rise(0.7, 2500)}
    m = frame(run, pt0=0.9, ctrl_ceiling=0.1)
    for level in (0.3, 0.5):
        c = certify(m, level=level, watched="ps_gen")
        assert c.certified and 0.65 * 2500 <= c.onset <= 1.1 * 2500 and c.onset_lo > 1000
    row = emergence_table(m.assign(run_id="r"), metric="ps_gen").iloc[0]  # no config: the level is 0.3
    assert abs(row["onset"] - certify(m, level=0.3, watched="ps_gen").onset) < 1


def test_legacy_logs_are_uncertifiable_with_a_provisional_class():
    # bxc-cross B 16 x C 64: ps_indist 0.83 with no previous-token head and random-token PS 0.06
    legacy = frame({"ps": rise(0.06, 800), "ps_indist": rise(0.83, 800)}, pt0=0.06)
    c = certify_run(legacy, {"run_id": "x", "config": {"train": {"emergence_threshold": 0.5,
                                                                 "emergence_metric": "ps_indist"}}})
    assert not c.certified and c.cls == UNCERTIFIABLE and c.certificate == UNCERTIFIABLE
    assert c.provisional == INDIST_LOOKUP and c.crossing_step is not None and c.level == 0.5
    with_pt = frame({"ps": rise(0.5, 800), "ps_indist": rise(0.85, 800)}, pt0=0.95)
    assert certify(with_pt, 0.5, "ps_indist").provisional == INDUCTION_PT  # random tokens read at 0.3
    no_pt = frame({"ps": rise(0.77, 800), "ps_indist": rise(0.86, 800)}, pt0=0.08)
    assert certify(no_pt, 0.5, "ps_indist").provisional == INDUCTION_OTHER
    ps_only = frame({"ps": rise(0.5, 800)}, pt0=0.95)  # like cpu-tiny: PS 0.49 under its own level 0.5
    assert certify(ps_only, 0.6, "ps").provisional == NO_HEAD and certify(ps_only, 0.3, "ps").provisional == INDUCTION_PT
    assert certify(frame({"ps": rise(0.87, 800)}, pt0=0.04), 0.3).provisional == FIXED_OFFSET
    # bxc-law C 128: the random-token probe sits off the repeat region (PS 0.18-0.25) over a
    # previous-token head of 0.98: the data's copies through the classic circuit
    off_probe = frame({"ps": rise(0.2, 800), "ps_indist": rise(0.88, 800)}, pt0=0.98)
    assert certify(off_probe, 0.3, "ps_indist").provisional == INDUCTION_PT
    t = emergence_table(legacy.assign(run_id="x", formed_level=0.5), "ps_indist").iloc[0]
    assert (t["formed"], t["crossed"], t["onset_basis"]) == (False, True, "crossing")
    assert fit_basis(pd.Series(["crossing"]), pd.Series([UNCERTIFIABLE])) == LEGACY_BASIS


def test_the_general_curve_is_max_over_heads_of_min_over_distances():
    m = frame({**general(rise(0.9, 800), rise(0.6, 800), rise(0.7, 800))})
    assert general_curve(m).iloc[-1] == pytest.approx(0.6, abs=0.01)


def test_a_bad_formed_level_is_refused_naming_the_run():
    with pytest.raises(ValueError, match="run r7: config.json train.emergence_threshold is 1.5"):
        certify_run(frame(INDUCTION), {"run_id": "r7", "config": {"train": {"emergence_threshold": 1.5}}})


def test_fits_read_crossings_only_where_the_basis_says_so():
    from ihstats.tables import formed_column, outcome_basis, outcome_word, summary_formed

    legacy = pd.DataFrame({"run_id": ["a", "b", "c"], "formed": [False] * 3, "crossed": [True, False, True],
                           "censored": [False, True, False], "onset_basis": "crossing", "certificate": UNCERTIFIABLE})
    assert formed_column(legacy).tolist() == [True, False, True]  # by their crossing, not as formed
    assert outcome_basis(legacy) == LEGACY_BASIS and outcome_word(LEGACY_BASIS) == "crossed"  # never "formed"
    certified = legacy.assign(onset_basis="certified", certificate="not certified", formed=[True, False, False])
    with pytest.warns(UserWarning):  # c crossed but is not certified: not formed
        assert formed_column(certified).tolist() == [True, False, False]
    assert outcome_word(outcome_basis(certified)) == "formed"
    assert outcome_basis(certified) == "certified" and outcome_basis(legacy.drop(columns="onset_basis")) \
        == "the table's formed column"
    old_summary = pd.DataFrame({"run_id": ["a", "b"], "formed": [True, None]})  # written before issue 65
    formed, basis = summary_formed(old_summary)
    assert formed.tolist() == [True, False] and basis == LEGACY_BASIS
    formed, basis = summary_formed(legacy.assign(formed=[False, pd.NA, False]))
    assert formed.tolist() == [True, False, True] and basis == LEGACY_BASIS


def test_a_step_without_controlled_queries_reads_the_general_probe_alone():
    m = frame(INDUCTION, pt0=0.9, ctrl_ceiling=np.nan)
    m.loc[m["metric"] == "ps_indist_ctrl", "value"] = np.nan  # every head: no copy query left after the control
    assert certify(m, level=0.3).certified


def test_a_head_spreading_over_the_three_offsets_is_not_certified():
    """A head that puts 1/3 of its attention on each probed offset reads 1/3 at every distance, above
    FORMED_LEVEL 0.3: the general level sits above it, so a three-offset copier is never formed,
    while an induction head whose weakest distance reads 0.39 (two heads sharing the near one, as a
    trained bxc-cross run does just after its jump) is, at the default level."""
    from ihstats.certificate import GENERAL_LEVEL
    assert 1 / 3 < GENERAL_LEVEL < 0.39
    third = rise(1 / 3, 800)
    spreader = {**general(third, third, third), "ps": third, "ps_indist": third}
    c = certify(frame(spreader, pt0=0.9), level=0.3)
    assert not c.certified and c.cls != INDUCTION_PT and c.certified_step is None
    shared = {**general(rise(0.39, 800), rise(0.85, 800), rise(0.66, 800)), "ps": rise(0.8, 800),
              "ps_indist": rise(0.8, 800)}
    assert certify(frame(shared, pt0=0.9), level=0.3).certified
    assert not certify(frame(shared, pt0=0.9), level=0.5).certified  # a run's own higher level applies
