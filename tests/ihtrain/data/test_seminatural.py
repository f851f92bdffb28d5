"""Semi-natural data: realised frequency/reliability on the 5 x 5 grid, structure, determinism, errors."""

import numpy as np
import pytest

from ihtrain.config import SeminaturalConfig
from ihtrain.data.repeats import measure_repeats
from ihtrain.data.seminatural import BigramModel, SeminaturalSource, generate_seminatural

GRID = [0.1, 0.3, 0.5, 0.7, 0.9]


@pytest.fixture(scope="module")
def stream():
    """A fixed natural-like stream: a sparse random Markov chain over ids 2..401 (plus specials)."""
    rng = np.random.default_rng(0)
    V = 400
    P = rng.dirichlet(np.full(V, 0.05), size=V)
    cdf = np.cumsum(P, 1)
    u = rng.random(60_000)
    toks = np.empty(60_000, np.int64)
    toks[0] = 0
    for t in range(1, toks.size):
        toks[t] = min(np.searchsorted(cdf[toks[t - 1]], u[t]), V - 1)
    return toks + 2


@pytest.fixture(scope="module")
def bigram(stream):
    return BigramModel.from_tokens(stream, 300)


@pytest.mark.parametrize("f", GRID)
@pytest.mark.parametrize("r", GRID)
def test_realised_frequency_reliability_on_grid(bigram, f, r):
    x, truth = generate_seminatural(bigram, 1563, 64, f, r, seed=11)  # 1e5 tokens
    m = measure_repeats(x)
    assert abs(m["frequency"] - f) <= 0.02 and abs(m["reliability"] - r) <= 0.02, (m["frequency"], m["reliability"])
    # the generator's own bookkeeping is exactly what an independent measurement finds
    np.testing.assert_array_equal(m["n_contexts"], truth["n_contexts"])
    np.testing.assert_array_equal(m["n_copies"], truth["n_copies"])


def test_structure(bigram):
    x, _ = generate_seminatural(bigram, 300, 65, 0.7, 0.5, seed=1)
    h = 65 // 2
    assert x.min() >= 0 and x.max() < bigram.V
    assert all(np.unique(row[:h]).size == h for row in x)  # first half: no repeats
    assert not (x[:, 1:] == x[:, :-1]).any()  # never A A
    assert measure_repeats(x[:, :h + 1], start=0)["frequency"] == 0.0


def test_finer_and_extreme_targets(bigram):
    rng = np.random.default_rng(5)
    for f, r in list(zip(rng.random(6), rng.random(6))) + [(0.0, 0.5), (1.0, 1.0), (1.0, 0.0)]:
        x, _ = generate_seminatural(bigram, 800, 64, f, r, seed=2)
        m = measure_repeats(x)
        assert abs(m["frequency"] - f) <= 0.02
        if f > 0:
            assert abs(m["reliability"] - r) <= 0.03


def test_bigram_sampling_matches_rows(bigram):
    rng = np.random.default_rng(3)
    D = bigram.dense()
    np.testing.assert_allclose(D.sum(1), 1.0)
    for a in (0, 5, 50):
        s = bigram.sample_next(rng, np.full(100_000, a))
        emp = np.bincount(s, minlength=bigram.V) / s.size
        assert 0.5 * np.abs(emp - D[a]).sum() < 0.03


def test_same_seed_same_bytes(bigram):
    a, _ = generate_seminatural(bigram, 50, 64, 0.5, 0.5, seed=9)
    b, _ = generate_seminatural(bigram, 50, 64, 0.5, 0.5, seed=9)
    c, _ = generate_seminatural(bigram, 50, 64, 0.5, 0.5, seed=10)
    assert a.tobytes() == b.tobytes() and a.tobytes() != c.tobytes()


def test_source_protocol(stream):
    cfg = SeminaturalConfig(frequency=0.3, reliability=0.7, top_v=200)
    src = SeminaturalSource(cfg, seed=0, tokens=stream, pool_tokens=50_000)
    assert src.vocab_size == 202 and src.ordinary_range == (2, 202) and src.special_tokens["sep"] == 1
    x, st = src.sample(np.random.default_rng(0), 16, 65, 0.0)
    assert x.shape == (16, 65) and x.dtype == np.int64 and x.min() >= 2 and x.max() < 202
    assert set(st) == {"realised_frequency", "realised_reliability", "realised_copies_per_token", "realised_copy_distance"}
    y, _ = SeminaturalSource(cfg, seed=0, tokens=stream, pool_tokens=50_000).sample(np.random.default_rng(0), 16, 65)
    assert x.tobytes() == y.tobytes()
    v1, v2 = src.val_sample(8, 65), src.val_sample(8, 65)
    assert v1.tobytes() == v2.tobytes()
    fresh = SeminaturalSource(cfg, seed=0, tokens=stream, pool_tokens=0)
    xs, _ = fresh.sample(np.random.default_rng(0), 4, 65)
    assert xs.shape == (4, 65)
    assert src.fingerprint["bigram_hash"] == fresh.fingerprint["bigram_hash"]


def test_errors(bigram, stream):
    with pytest.raises(ValueError, match="frequency"):
        generate_seminatural(bigram, 4, 64, 1.2, 0.5)
    with pytest.raises(ValueError, match="reliability"):
        generate_seminatural(bigram, 4, 64, 0.5, -0.1)
    with pytest.raises(ValueError, match="vocab"):
        generate_seminatural(bigram, 4, 400, 0.5, 0.5)
    with pytest.raises(ValueError, match="data.seminatural.frequency"):
        SeminaturalSource(SeminaturalConfig(frequency=2.0), tokens=stream)
