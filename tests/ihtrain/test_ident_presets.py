"""The identification presets (issue 66): bxc-ident's factorial on decoupled data, its crossed seed
kinds, the mechanism factorial, the held-out runs at new seeds and the main-job candidate."""

from __future__ import annotations

from ihtrain.grid.spec import load_grid_preset


def _runs(name):
    return load_grid_preset(name).expand()


def test_ident_is_a_decoupled_factorial_with_five_seeds():
    runs = _runs("bxc-ident")
    Bs = {r.config.train.batch_size for r in runs}
    Cs = {r.config.train.context for r in runs}
    assert len(runs) == 125 and max(Bs) / min(Bs) >= 8 and max(Cs) / min(Cs) >= 4 and len(Bs) * len(Cs) == 25
    assert {r.seed for r in runs} == {0, 1, 2, 3, 4}
    for r in runs:
        mk = r.config.data.markov
        assert (mk.repeat_start, mk.min_distance, mk.max_distance, mk.copies_per_token) == (12, 8, 12, 0.4)
        assert r.config.model.context == 128 and r.config.train.emergence_metric == "ps_gen"  # the certificate's score


def test_seed_kinds_cross_at_one_cell_of_ident():
    kinds = _runs("bxc-seed-kinds")
    pairs = {(r.config.weight_seed, r.config.data_seed) for r in kinds}
    assert len(kinds) == 9 and pairs == {(w, d) for w in range(3) for d in range(3)}
    ident = {r.cell_id for r in _runs("bxc-ident") if (r.config.train.batch_size, r.config.train.context) == (32, 64)}
    assert {r.cell_id for r in kinds} == ident  # the crossed block is one of ident's cells


def test_mechanism_factorial_moves_one_factor_at_a_time():
    runs = _runs("mechanism-factorial")
    by = {}
    for r in runs:
        mk = r.config.data.markov
        key = (r.config.train.context, (mk.min_distance, mk.max_distance), mk.copies_per_token)
        by.setdefault(key, set()).add(r.seed)
    centre = (64, (8, 12), 0.4)
    assert len(runs) == 35 and len(by) == 7 and all(s == {0, 1, 2, 3, 4} for s in by.values())
    moved = sorted(tuple(i for i in range(3) if key[i] != centre[i]) for key in by)
    # centre; C twice; density twice; distance twice (the far band with its density fix, 0.43)
    assert moved == [(), (0,), (0,), (1,), (1, 2), (2,), (2,)]
    ident = {r.run_id for r in _runs("bxc-ident")}
    shared = [r for r in runs if r.run_id in ident]
    assert len(shared) == 15  # the centre and the C arm are bxc-ident's runs (copy them in)


def test_holdout_is_at_new_seeds_and_off_design_cells():
    ident, held = _runs("bxc-ident"), _runs("bxc-ident-holdout")
    cells = {(r.config.train.batch_size, r.config.train.context) for r in ident}
    assert not cells & {(r.config.train.batch_size, r.config.train.context) for r in held}
    fit_w = {r.config.init_seed for r in ident}
    fit_d = {r.config.stream_seed for r in ident}
    assert all(r.config.init_seed not in fit_w and r.config.stream_seed not in fit_d for r in held)
    assert len(held) == 21


def test_the_small_ident_corner_spans_8x_and_4x_in_16_runs():
    runs = _runs("bxc-ident-small")
    assert len(runs) == 16 and {r.config.train.context for r in runs} == {32, 128}
    assert {r.config.train.batch_size for r in runs} == {16, 32, 64, 128}


def test_ident_cpu_is_a_4x3_factorial_whose_b32_cells_are_the_factorials_runs():
    runs = _runs("bxc-ident-cpu")
    cells = {(r.config.train.batch_size, r.config.train.context) for r in runs}
    assert len(runs) == 60 and cells == {(b, c) for b in (16, 32, 64, 128) for c in (32, 64, 128)}
    assert {r.seed for r in runs} == {0, 1, 2, 3, 4}
    b32 = {r.run_id for r in runs if r.config.train.batch_size == 32}
    factorial = {r.run_id for r in _runs("mechanism-factorial")}
    assert len(b32) == 15 and b32 <= factorial  # copied in, not retrained
    for r in runs:
        if r.config.train.batch_size != 32:  # one token cap: an uncertified large-B x C run costs what B 32 x C 64's does
            assert r.config.cap_steps * r.config.tokens_per_step == 12_288_000
        mk = r.config.data.markov
        assert (mk.repeat_start, mk.min_distance, mk.max_distance, mk.copies_per_token) == (12, 8, 12, 0.4)


def test_ident_cpu_holdout_is_at_new_seeds_and_off_design_cells():
    fit, held = _runs("bxc-ident-cpu"), _runs("bxc-ident-cpu-holdout")
    cells = {(r.config.train.batch_size, r.config.train.context) for r in fit}
    assert len(held) == 10 and not cells & {(r.config.train.batch_size, r.config.train.context) for r in held}
    assert not {r.config.init_seed for r in held} & {r.config.init_seed for r in fit}
    assert not {r.config.stream_seed for r in held} & {r.config.stream_seed for r in fit}
    assert all((r.config.cap_steps - 1) * r.config.tokens_per_step < 12_288_000 for r in held)  # the cap, rounded up
