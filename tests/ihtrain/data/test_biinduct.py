"""Bi-Induct snippets: exact structure, iso-token, schedule, errors, determinism."""

from types import SimpleNamespace

import numpy as np
import pytest

from ihtrain.data.biinduct import BiInductConfig, BiInductSource, inject_snippets


class FakeNatural:
    """A natural-like base source: i.i.d. ordinary tokens (ids 2..V-1), eos=0, sep=1."""

    vocab_size, special_tokens, ordinary_range, fingerprint = 100, {"eos": 0, "sep": 1}, (2, 100), {"kind": "fake"}

    def sample(self, rng, n_seqs, length, progress=0.0):
        return rng.integers(2, 100, size=(n_seqs, length)), {}

    def val_sample(self, n_seqs, length):
        return np.random.default_rng(0).integers(2, 100, size=(n_seqs, length))


@pytest.mark.parametrize("mode", ["forward", "backward", "balanced"])
@pytest.mark.parametrize("span_source", ["random", "natural"])
def test_exact_structure_and_iso_token(mode, span_source):
    base = np.random.default_rng(1).integers(2, 100, size=(64, 129))
    x, tr = inject_snippets(base, 0.5, 20, 1, mode, span_source, (2, 100), seed=3)
    assert x.shape == base.shape and x.dtype == np.int64  # iso-token: same array shape
    L, covered = 20, np.zeros(base.shape, bool)
    assert len(tr["seq"]) > 0
    for s, st, bw in zip(tr["seq"], tr["start"], tr["backward"]):
        S = x[s, st: st + L]
        assert x[s, st + L] == 1
        np.testing.assert_array_equal(x[s, st + L + 1: st + 2 * L + 1], S[::-1] if bw else S)
        if span_source == "natural":
            np.testing.assert_array_equal(S, base[s, st: st + L])
        assert not covered[s, st: st + 2 * L + 1].any()  # no overlap
        covered[s, st: st + 2 * L + 1] = True
    np.testing.assert_array_equal(x[~covered], base[~covered])  # the rest is untouched
    assert tr["inject_ratio"] == pytest.approx(covered.mean())
    if mode == "forward":
        assert not tr["backward"].any()
    if mode == "backward":
        assert tr["backward"].all()
    if mode == "balanced":
        assert 0.25 < tr["backward"].mean() < 0.75


def test_ratio_follows_linear_schedule():
    src = BiInductSource(FakeNatural(), BiInductConfig(mode="balanced", span_len=5, mix_start=0.5), seed=0)
    for progress in (0.0, 0.25, 0.5, 0.9, 1.0):
        ratios = []
        for i in range(40):
            toks, st = src.sample(np.random.default_rng(i), 16, 65, progress)
            assert st["inject_target"] == pytest.approx(0.5 * (1 - progress))
            # within one snippet of the target in every batch
            assert abs(st["inject_ratio"] - st["inject_target"]) <= 11 / (16 * 65) + 1e-12
            ratios.append(st["inject_ratio"])
        assert np.mean(ratios) == pytest.approx(0.5 * (1 - progress), abs=0.003)
    _, st = src.sample(np.random.default_rng(0), 16, 65, 1.0)
    assert st["inject_ratio"] == 0.0


def test_same_seed_same_bytes_and_none_mode():
    src = BiInductSource(FakeNatural(), BiInductConfig(mode="forward"), seed=0)
    a, _ = src.sample(np.random.default_rng(7), 8, 129, 0.1)
    b, _ = src.sample(np.random.default_rng(7), 8, 129, 0.1)
    assert a.tobytes() == b.tobytes()
    none = BiInductSource(FakeNatural(), BiInductConfig(mode="none"), seed=0)
    x, st = none.sample(np.random.default_rng(7), 8, 129, 0.0)
    np.testing.assert_array_equal(x, FakeNatural().sample(np.random.default_rng(7), 8, 129)[0])
    assert st["inject_ratio"] == 0.0


def test_sep_token_choice_and_errors():
    assert BiInductSource(FakeNatural(), BiInductConfig(mode="forward")).sep == 1
    assert BiInductSource(FakeNatural(), BiInductConfig(mode="forward", sep_token=7)).sep == 7
    with pytest.raises(ValueError, match="sep_token"):
        BiInductSource(FakeNatural(), BiInductConfig(mode="forward", sep_token=1000))
    with pytest.raises(ValueError, match="mix_start"):
        BiInductSource(FakeNatural(), BiInductConfig(mode="forward", mix_start=1.5))
    with pytest.raises(ValueError, match="span_len"):
        BiInductSource(FakeNatural(), BiInductConfig(mode="forward", span_len=40), context=64)
    with pytest.raises(ValueError, match="span_len"):
        inject_snippets(np.zeros((2, 30), np.int64), 0.5, 20, 1, "forward")
    with pytest.raises(ValueError, match="mode"):
        BiInductSource(FakeNatural(), SimpleNamespace(mode="sideways", mix_start=0.5, span_len=5,
                                                      span_source="random", sep_token=-1))


@pytest.mark.parametrize("span_source", ["random", "natural"])
def test_random_span_control_has_chance_match_rate(span_source):
    """The control ``S SEP S'``: SEP in place, S as in the other modes, and S' independent of S:
    its position-wise match rate to S and to reverse(S) is chance, 1 / (hi - lo), within a
    binomial 4-sigma band (forward would give 1, which the band excludes by far)."""
    lo, hi, L = 2, 12, 20  # a small range makes chance 0.1, so a dependence would show clearly
    base = np.random.default_rng(5).integers(lo, hi, size=(256, 129))
    x, tr = inject_snippets(base, 0.5, L, 1, "random", span_source, (lo, hi), seed=7)
    k = len(tr["seq"])
    assert k > 300 and not tr["backward"].any()
    starts = tr["start"][:, None] + np.arange(L)[None, :]
    S = x[tr["seq"][:, None], starts]
    S2 = x[tr["seq"][:, None], starts + L + 1]
    assert (x[tr["seq"], tr["start"] + L] == 1).all()
    assert ((S2 >= lo) & (S2 < hi)).all()
    if span_source == "natural":
        np.testing.assert_array_equal(S, base[tr["seq"][:, None], starts])
    chance, n = 1 / (hi - lo), S.size
    band = 4 * np.sqrt(chance * (1 - chance) / n)
    for ref in (S, S[:, ::-1]):
        assert abs((S2 == ref).mean() - chance) < band
    # and S' is uniform over the range: every token's share near chance
    shares = np.bincount(S2.ravel() - lo, minlength=hi - lo) / n
    assert np.abs(shares - chance).max() < band
    # the same seed gives the same snippets; the control keeps the iso-token budget of forward
    x_again, _ = inject_snippets(base, 0.5, L, 1, "random", span_source, (lo, hi), seed=7)
    np.testing.assert_array_equal(x, x_again)
    _, tr_fwd = inject_snippets(base, 0.5, L, 1, "forward", span_source, (lo, hi), seed=7)
    assert tr_fwd["inject_ratio"] == tr["inject_ratio"]
