"""The held-out preset for the default grid's law (issue 40): cells the default never ran, between
its levels and at least 2x outside its range, under the default's own settings."""

from __future__ import annotations

from ihtrain.grid.spec import load_grid_preset


def _cells(name):
    return {(r.config.train.batch_size, r.config.train.context, r.config.model.d_model): r
            for r in load_grid_preset(name).expand()}


def test_holdout_cells_are_new_and_interpolate_and_extrapolate():
    default, held = _cells("bxc-markov"), _cells("bxc-markov-holdout")
    assert not set(default) & set(held)  # no cell of the fit is scored as held-out
    Bs = sorted({b for b, _, _ in default})
    Cs = sorted({c for _, c, _ in default})
    inside = [(b, c) for b, c, _ in held if Bs[0] < b < Bs[-1] and Cs[0] < c < Cs[-1]
              and b not in Bs and c not in Cs]
    outside = [(b, c) for b, c, _ in held
               if b >= 2 * Bs[-1] or b <= Bs[0] / 2 or c >= 2 * Cs[-1] or c <= Cs[0] / 2]
    assert len(inside) >= 4 and len(outside) >= 3
    runs = load_grid_preset("bxc-markov-holdout").expand()
    assert {r.seed for r in runs} == {0, 1}
    # the default's settings everywhere but the cells (and the step cap): what is scored is the law
    ref = next(iter(default.values())).config
    for r in runs:
        c = r.config
        assert (c.train.lr, c.train.schedule, c.data.markov.vocab, c.model.n_layer) == \
            (ref.train.lr, ref.train.schedule, ref.data.markov.vocab, ref.model.n_layer)
        assert c.data.markov.vocab > c.train.context and c.model.context >= c.train.context


def test_the_default_designs_holdout_is_new_and_reaches_past_its_range():
    """bxc-law-holdout: no cell of bxc-law; B between its levels at C 64 and a C between its
    levels; B at least 2x outside its range both ways; bxc-law's settings, probe length included."""
    default, held = _cells("bxc-law"), _cells("bxc-law-holdout")
    assert not set(default) & set(held)
    Bs = sorted({b for b, _, _ in default})
    Cs = sorted({c for _, c, _ in default})
    between_B = [b for b, c, _ in held if Bs[0] < b < Bs[-1] and b not in Bs and c in Cs]
    between_C = [c for _, c, _ in held if Cs[0] < c < Cs[-1]]
    assert len(between_B) >= 3 and between_C
    assert any(b >= 2 * Bs[-1] for b, _, _ in held) and any(b <= Bs[0] / 2 for b, _, _ in held)
    ref = next(iter(default.values())).config
    for r in load_grid_preset("bxc-law-holdout").expand():
        c = r.config
        assert (c.train.lr, c.train.max_steps, c.metrics.probe_len, c.data.markov.vocab, c.model.d_model) == \
            (ref.train.lr, ref.train.max_steps, ref.metrics.probe_len, ref.data.markov.vocab, ref.model.d_model)
