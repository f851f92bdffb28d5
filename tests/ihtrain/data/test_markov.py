"""Markov data: exact construction checked against dense matrices, sampled data, targets, errors."""

import numpy as np
import pytest

from ihtrain.config import RunConfig, validate
from ihtrain.data.markov import MarkovConfig, TOL_H, TOL_SIM, MarkovSource, build_chain, generate_markov, marginal
from ihtrain.data.repeats import measure_repeats


# The estimators from the tokens alone that check what markov.py computes exactly (kept beside
# their only use: no package module measures them).
def mutual_information(tokens: np.ndarray, V: int) -> float:
    """Plug-in mutual information (bits) between neighbouring tokens of ``tokens`` (n, T)."""
    a, b = tokens[:, :-1].ravel(), tokens[:, 1:].ravel()
    joint = np.bincount(a * V + b, minlength=V * V).reshape(V, V) / a.size
    pa, pb = joint.sum(1), joint.sum(0)
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log2(joint[nz] / np.outer(pa, pb)[nz])))


def empirical_entropy_rate(tokens: np.ndarray, V: int) -> float:
    """Conditional entropy ``H(x_t | x_{t-1})`` (bits) of neighbouring tokens of ``tokens`` (n, T),
    plug-in with the Miller-Madow correction (+ (cells seen - rows seen) / (2 N ln 2)): for a
    first-order chain sampled from its stationary distribution it estimates the entropy rate
    that :meth:`ihtrain.data.markov.MarkovChain.stats` computes exactly."""
    a, b = tokens[:, :-1].ravel(), tokens[:, 1:].ravel()
    joint = np.bincount(a * V + b, minlength=V * V).reshape(V, V).astype(np.float64)
    n = joint.sum()
    rows = joint.sum(1)
    nz = joint > 0
    plug_in = -np.sum(joint[nz] * np.log2((joint / np.where(rows > 0, rows, 1)[:, None])[nz])) / n
    return float(plug_in + (nz.sum() - (rows > 0).sum()) / (2 * n * np.log(2)))


def dense_stats(ch):
    """Independent computation of the chain's statistics from its dense matrix."""
    P, pi = ch.dense(), ch.pi
    H = -(pi * np.sum(np.where(P > 0, P * np.log2(np.where(P > 0, P, 1)), 0), 1)).sum()
    N = P / np.linalg.norm(P, axis=1, keepdims=True)
    S = N @ N.T
    same = ch.group[:, None] == ch.group[None, :]
    off = ~np.eye(len(pi), dtype=bool)
    return {"P": P, "H": H, "within": S[same & off].mean(), "across": S[~same].mean() if (~same).any() else None}


@pytest.mark.parametrize("shape", ["uniform", "zipf", "gaussian"])
def test_entropy_target_and_stationarity(shape):
    ch, tr = build_chain(200, "markov", shape, entropy_rate=4.0, seed=0)
    d = dense_stats(ch)
    np.testing.assert_allclose(d["P"].sum(1), 1.0, atol=1e-12)
    assert 0.5 * np.abs(ch.pi @ d["P"] - ch.pi).sum() < 1e-12  # exact stationary distribution
    np.testing.assert_allclose(ch.pi, marginal(shape, 200))
    assert abs(d["H"] - 4.0) <= TOL_H and d["H"] == pytest.approx(tr["entropy_rate"], abs=1e-9)
    # sampled data: realised unigram close to the target shape, transitions close to the rows
    x = ch.sample(np.random.default_rng(1), 200, 1000)
    emp = np.bincount(x.ravel(), minlength=200) / x.size
    assert 0.5 * np.abs(emp - ch.pi).sum() < 0.03
    top = np.argmax(ch.pi)
    nxt = x[:, 1:][x[:, :-1] == top]
    assert 0.5 * np.abs(np.bincount(nxt, minlength=200) / nxt.size - d["P"][top]).sum() < 0.1


@pytest.mark.parametrize("shape, n_groups, target", [("uniform", 0, 0.0), ("zipf", 0, 3.0), ("gaussian", 4, 0.0)])
def test_entropy_rate_of_a_generated_chain_matches_its_analytic_value(shape, n_groups, target):
    """The entropy rate the summary reports (``stats()``, closed form) is what a sampled chain
    shows: the conditional entropy of next tokens measured on 1.6M sampled transitions (through
    the source's own sampler), within 0.02 bits; a chain at another rate is told apart."""
    ch, tr = build_chain(64, "markov", shape, n_groups=n_groups, within_similarity=0.3,
                         across_similarity=0.1, entropy_rate=target, seed=1)
    x, _ = generate_markov(ch, 400, 4001, seed=2)
    measured = empirical_entropy_rate(x, 64)
    assert measured == pytest.approx(tr["entropy_rate"], abs=0.02)
    other, _ = build_chain(64, "markov", shape, entropy_rate=tr["entropy_rate"] - 0.2, seed=1)
    assert abs(empirical_entropy_rate(generate_markov(other, 400, 4001, seed=2)[0], 64) - measured) > 0.1
    iid, tr_iid = build_chain(64, "iid", shape, seed=1)  # i.i.d.: the rate is the marginal entropy
    assert empirical_entropy_rate(iid.sample(np.random.default_rng(3), 400, 4001), 64) == pytest.approx(
        tr_iid["marginal_entropy"], abs=0.02)


@pytest.mark.parametrize("within", [0.4, 0.1])
def test_categoriality_targets(within):
    ch, tr = build_chain(1000, "markov", "zipf", n_groups=10, within_similarity=within,
                         across_similarity=0.1, entropy_rate=5.0, seed=0)
    assert abs(tr["within_similarity"] - within) <= TOL_SIM
    assert abs(tr["across_similarity"] - 0.1) <= TOL_SIM
    assert abs(tr["entropy_rate"] - 5.0) <= TOL_H
    assert tr["stationary_tv"] < 1e-9


def test_fast_stats_equal_dense_with_groups():
    ch, tr = build_chain(150, "markov", "gaussian", n_groups=5, within_similarity=0.1,
                         across_similarity=0.1, entropy_rate=5.0, seed=2)
    d = dense_stats(ch)
    assert d["within"] == pytest.approx(tr["within_similarity"], abs=1e-9)
    assert d["across"] == pytest.approx(tr["across_similarity"], abs=1e-9)
    assert d["H"] == pytest.approx(tr["entropy_rate"], abs=1e-9)


def test_iid_has_no_dependency_and_markov_does():
    iid, tr = build_chain(50, "iid", "zipf", seed=0)
    x = iid.sample(np.random.default_rng(0), 100, 1000)
    assert mutual_information(x, 50) < 0.03  # plug-in bias is ~ (V-1)^2 / (2 N ln 2) = 0.017 bits
    assert tr["entropy_rate"] == pytest.approx(tr["marginal_entropy"])
    mk, _ = build_chain(50, "markov", "zipf", entropy_rate=2.0, seed=0)
    assert mutual_information(mk.sample(np.random.default_rng(0), 100, 1000), 50) > 0.5


def test_frequency_reliability_imposed():
    ch, _ = build_chain(500, "markov", "zipf", entropy_rate=5.0, seed=0)
    for f, r in [(0.1, 0.3), (0.9, 0.9), (0.5, 0.1)]:
        x, truth = generate_markov(ch, 1563, 64, f, r, seed=4)
        m = measure_repeats(x)
        assert abs(m["frequency"] - f) <= 0.02 and abs(m["reliability"] - r) <= 0.02
        np.testing.assert_array_equal(m["n_copies"], truth["n_copies"])


def test_repeat_start_moves_the_first_repeat_and_keeps_the_targets():
    ch, _ = build_chain(300, "markov", "zipf", entropy_rate=5.0, seed=0)
    shipped, _ = generate_markov(ch, 200, 64, 0.9, 0.9, seed=7)
    half, _ = generate_markov(ch, 200, 64, 0.9, 0.9, seed=7, repeat_start=32)
    assert shipped.tobytes() == half.tobytes()  # 0 is the shipped layout (C // 2), bit for bit
    x, truth = generate_markov(ch, 1600, 64, 0.9, 0.7, seed=4, repeat_start=4)
    m = measure_repeats(x, start=4)
    assert abs(m["frequency"] - 0.9) <= 0.02 and abs(m["reliability"] - 0.7) <= 0.02
    np.testing.assert_array_equal(m["n_copies"], truth["n_copies"])
    assert (truth["n_decisions"] == 64 - 1 - 4).all()
    assert all(len(set(row[:4])) == 4 for row in x)  # the prefix stays repeat-free
    # contexts now fill the first half too: about f of its decision points repeat an earlier token
    early = measure_repeats(x[:, :32], start=4)
    assert abs(early["frequency"] - 0.9) <= 0.03
    # only the prefix and the breaks draw fresh tokens, so a vocabulary smaller than C suffices
    small, _ = build_chain(64, "markov", "zipf", seed=1)
    y, _ = generate_markov(small, 200, 256, 0.9, 0.9, seed=5, repeat_start=8)
    m = measure_repeats(y, start=8)
    assert y.max() < 64 and abs(m["frequency"] - 0.9) <= 0.02 and abs(m["reliability"] - 0.9) <= 0.02
    with pytest.raises(ValueError, match="vocab"):  # f = 0.5 needs ~130 fresh tokens per sequence
        generate_markov(small, 200, 256, 0.5, 0.9, seed=5, repeat_start=8)
    with pytest.raises(ValueError, match="vocab"):  # the shipped layout still needs V >= C
        generate_markov(small, 2, 256, 0.9, 0.9)
    for bad in (1, 63):
        with pytest.raises(ValueError, match="repeat_start"):
            generate_markov(ch, 2, 64, 0.5, 0.5, repeat_start=bad)


def test_source_and_determinism():
    cfg = MarkovConfig(vocab=300, marginal="zipf", entropy_rate=4.0, frequency=0.3, reliability=0.7)
    a = MarkovSource(cfg, seed=3, pool_tokens=20_000)
    b = MarkovSource(cfg, seed=3, pool_tokens=20_000)
    x, st = a.sample(np.random.default_rng(0), 16, 65)
    y, _ = b.sample(np.random.default_rng(0), 16, 65)
    assert x.tobytes() == y.tobytes() and x.min() >= 2 and x.max() < a.vocab_size == 302
    assert set(st) == {"realised_frequency", "realised_reliability", "realised_copies_per_token", "realised_copy_distance"}
    assert a.fingerprint["chain_hash"] == b.fingerprint["chain_hash"]
    assert a.val_sample(4, 65).tobytes() == b.val_sample(4, 65).tobytes()
    plain = MarkovSource(MarkovConfig(vocab=300, dependency="iid"), seed=0, pool_tokens=0)
    z, st = plain.sample(np.random.default_rng(0), 4, 65)
    assert z.shape == (4, 65) and st == {}


def test_errors():
    with pytest.raises(ValueError, match="marginal"):
        build_chain(100, marginal_shape="cauchy")
    with pytest.raises(ValueError, match="within_similarity"):
        build_chain(100, n_groups=4, within_similarity=1.5)
    with pytest.raises(ValueError, match="n_groups"):
        build_chain(100, n_groups=80)
    with pytest.raises(ValueError, match="entropy_rate"):  # above the marginal entropy: infeasible
        build_chain(100, "markov", "zipf", entropy_rate=9.0)
    with pytest.raises(ValueError, match="frequency"):
        MarkovSource(MarkovConfig(vocab=100, frequency=1.5))
    with pytest.raises(ValueError, match="data.markov.repeat_start"):
        cfg = RunConfig()
        cfg.data.source, cfg.data.markov.repeat_start = "markov", 300
        validate(cfg)
    with pytest.raises(ValueError, match="vocab"):
        ch, _ = build_chain(20, "markov", "uniform")
        generate_markov(ch, 2, 64, 0.5, 0.5)


@pytest.mark.slow
def test_paper_scale_10k_within_a_minute():
    import time

    t0 = time.time()
    ch, tr = build_chain(10_000, "markov", "zipf", entropy_rate=6.2, seed=0)
    assert abs(tr["entropy_rate"] - 6.2) <= TOL_H
    ch, tr = build_chain(10_000, "markov", "zipf", n_groups=50, within_similarity=0.4,
                         across_similarity=0.05, entropy_rate=6.2, seed=0)
    assert abs(tr["within_similarity"] - 0.4) <= TOL_SIM
    assert time.time() - t0 < 120
