"""The biinduct grid preset's design (issue 42): conditions, seeds, equal tokens, budget past every
rise of the former grid, the anneal after its latest formation."""

from ihtrain.grid_spec import load_grid_preset
from ihtrain.schedule import lr_at

# the natural-only onset on the preset's base stream and model (freqrel's f = r = 0.9 cell, the same
# semi-natural source and 2 x 4 d64 model at B 64, C 128: 1,296-1,399 over 3 seeds), and the
# latest formation of the former builtin-text grid relative to its natural-only onset (2,897 / 2,266)
NATURAL_ONSET, LATEST_RATIO = 1399, 2897 / 2266


def test_conditions_seeds_and_equal_tokens():
    runs = load_grid_preset("biinduct").expand()
    modes = {r.factors["data.biinduct.mode"] for r in runs}
    assert modes == {"none", "forward", "backward", "balanced", "random"}
    for mode in modes:
        assert sorted(r.seed for r in runs if r.factors["data.biinduct.mode"] == mode) == [0, 1, 2]
    tokens = {r.config.cap_steps * r.config.train.batch_size * r.config.train.context for r in runs}
    assert len(tokens) == 1  # iso-token across conditions
    assert {(r.config.model.n_layer, r.config.model.n_head, r.config.data.source) for r in runs} == {
        (2, 4, "seminatural")}


def test_budget_and_anneal_come_after_every_rise():
    cfg = load_grid_preset("biinduct").expand()[0].config
    total = cfg.cap_steps
    assert total >= 2 * NATURAL_ONSET
    peak = cfg.train.lr
    decay_start = next(s for s in range(total) if lr_at(s, cfg, total) < peak and s > cfg.train.warmup_steps)
    assert decay_start > LATEST_RATIO * NATURAL_ONSET + 500  # the anneal comes after a later formation
    assert lr_at(total - 1, cfg, total) < 0.2 * peak


# issue 54: the scarce-copy design on the builtin text; the natural-only reference onset is the
# bxc-cpu-h200 d128 run's at the same B 64, C 128 (PS 0.3 at 1,823 updates, 4 heads)
TEXT_ONSET = 1823


def test_biinduct_text_is_scarce_natural_text_with_eight_heads_a_layer():
    runs = load_grid_preset("biinduct-text").expand()
    assert len(runs) == 15 and {r.factors["data.biinduct.mode"] for r in runs} == {
        "none", "forward", "backward", "balanced", "random"}
    assert {(r.config.model.n_layer, r.config.model.n_head, r.config.data.source) for r in runs} == {
        (2, 8, "builtin-v1")}
    assert len({r.config.cap_steps * r.config.train.batch_size * r.config.train.context for r in runs}) == 1
    cfg = runs[0].config
    assert "anti_copy" in cfg.metrics.include and "anti_induction" in cfg.metrics.include
    total, peak = cfg.cap_steps, cfg.train.lr
    assert total >= 2.5 * TEXT_ONSET
    decay_start = next(s for s in range(total) if lr_at(s, cfg, total) < peak and s > cfg.train.warmup_steps)
    assert decay_start > 2 * TEXT_ONSET
