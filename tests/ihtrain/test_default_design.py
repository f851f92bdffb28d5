"""The default law design (issue 53, item 3): bxc-cross spans B 8x and C 4x with log B and log C
uncorrelated, one probe geometry, and its held-out preset and the mechanism preset share its settings."""

from __future__ import annotations

import numpy as np

from ihtrain.grid.cli import DEFAULT_PRESET
from ihtrain.grid.spec import load_grid_preset


def _runs(name):
    return load_grid_preset(name).expand()


def _cells(name):
    return {(r.config.train.batch_size, r.config.train.context) for r in _runs(name)}


def test_the_main_job_is_the_crosss_first_two_seeds():
    """The main job (issue 66 item 3: <= 30 minutes) is bxc-cross at seeds 0 and 1: the same run ids,
    so the shipped cross's logs are its logs."""
    assert DEFAULT_PRESET == "bxc-main"
    main, cross = _runs("bxc-main"), _runs("bxc-cross")
    assert {r.seed for r in main} == {0, 1} and len(main) == 16
    assert {r.run_id for r in main} == {r.run_id for r in cross if r.seed < 2}


def test_the_cross_design_identifies_both_exponents():
    runs = _runs("bxc-cross")
    B = np.log2([r.config.train.batch_size for r in runs])
    C = np.log2([r.config.train.context for r in runs])
    assert B.max() - B.min() >= 3 and C.max() - C.min() >= 2  # B over 8x, C over 4x
    assert abs(np.corrcoef(B, C)[0, 1]) < 1e-12  # decorrelated: neither exponent borrows the other's
    assert {r.seed for r in runs} == {0, 1, 2} and len(runs) == 3 * len(_cells("bxc-cross"))
    probe = {r.config.metrics.probe_len for r in runs}
    assert len(probe) == 1 and 2 * probe.pop() + 1 <= min(r.config.train.context for r in runs)
    assert {r.config.train.emergence_metric for r in runs} == {"ps_indist"}
    assert {r.config.model.d_model for r in runs} == {64}


def test_the_holdout_cells_are_new_between_and_beyond_the_default():
    default, held = _cells("bxc-cross"), _cells("bxc-cross-holdout")
    assert not default & held
    Bs = sorted({b for b, _ in default})
    Cs = sorted({c for _, c in default})
    off_levels = [(b, c) for b, c in held if Bs[0] < b < Bs[-1] and b not in Bs and Cs[0] < c < Cs[-1]]
    assert len(off_levels) >= 3 and any(c not in Cs for _, c in off_levels)
    assert any(b >= 2 * Bs[-1] for b, _ in held) and any(b <= Bs[0] / 2 for b, _ in held)
    ref = _runs("bxc-cross")[0].config
    for r in _runs("bxc-cross-holdout"):
        c = r.config
        assert (c.train.lr, c.train.max_steps, c.metrics.probe_len, c.data.markov.vocab, c.model.d_model) == \
            (ref.train.lr, ref.train.max_steps, ref.metrics.probe_len, ref.data.markov.vocab, ref.model.d_model)
        assert r.seed in (0, 1)


def test_the_mechanism_presets_fixed_arm_is_the_defaults_b32_cells():
    """law-mechanism's fixed arm has bxc-cross's configs, so its runs can be copied in (same ids)."""
    cross = {r.run_id for r in _runs("bxc-cross") if r.config.train.batch_size == 32 and r.seed < 2}
    mech = _runs("law-mechanism")
    fixed = {r.run_id for r in mech if r.factors["cell"].startswith("fixed-")}
    assert len(fixed) == 6 and fixed == cross
    assert {r.config.train.context for r in mech} == {32, 64, 128}
