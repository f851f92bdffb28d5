"""Probe batches: layout, distinctness, determinism, the SEP rule and errors."""

import numpy as np
import pytest
import torch

from ihtrain.probes import make_probes

# one thread: torch's default spins badly on a shared, oversubscribed CPU (30x slower here)
torch.set_num_threads(1)


def test_repeat_probe_layout():
    p = make_probes(vocab_size=512, context=128, seed=0, ordinary_range=(2, 512), sep_token=1)
    assert p.n == 50 and p.n_copy == 50 and p.repeat.shape == (100, 100)
    assert p.repeat.dtype == torch.long
    r = p.repeat.numpy()
    assert np.array_equal(r[:, :50], r[:, 50:])  # repeated twice, no BOS
    assert all(len(set(row[:50])) == 50 for row in r)  # distinct tokens
    assert r.min() >= 2 and r.max() < 512


def test_copy_probes_layout_and_sep():
    p = make_probes(vocab_size=100, context=32, seed=1, ordinary_range=(2, 100), sep_token=1, n_seqs=3,
                    n_copy_seqs=7)
    m = p.n_copy
    assert (p.n, m) == (16, 15)  # n = C // 2; 2 m + 1 <= C
    f, b = p.copy_fwd.numpy(), p.copy_bwd.numpy()
    assert f.shape == b.shape == (7, 2 * m + 1) and 2 * m + 1 <= 32
    assert np.all(f[:, m] == 1) and np.all(b[:, m] == 1)
    assert np.array_equal(f[:, :m], f[:, m + 1:])
    assert np.array_equal(b[:, :m], b[:, m + 1:][:, ::-1])
    assert np.array_equal(f[:, :m], b[:, :m])
    assert all(len(set(row[:m])) == m for row in f) and not np.any(f[:, :m] == 1)


@pytest.mark.parametrize("C, n, n_copy", [(128, 50, 50), (100, 50, 49), (101, 50, 50), (16, 8, 7), (17, 8, 8)])
def test_default_lengths(C, n, n_copy):
    p = make_probes(vocab_size=200, context=C, seed=0, ordinary_range=(0, 200), sep_token=None, n_seqs=9)
    assert (p.n, p.n_copy) == (n, n_copy)
    assert (p.n_seqs, p.n_copy_seqs) == (9, 2)  # copy probes: n_seqs // 4 rows by default
    assert p.repeat.shape[1] <= C and p.copy_fwd.shape[1] <= C


def test_sep_none_uses_first_ordinary_token_and_excludes_it():
    p = make_probes(vocab_size=30, context=16, seed=0, ordinary_range=(5, 30), sep_token=None, n_seqs=200)
    assert p.n_copy_seqs == 50
    assert p.sep_token == 5
    s = p.copy_fwd[:, :p.n_copy]
    assert not torch.any(s == 5) and torch.all(p.copy_fwd[:, p.n_copy] == 5)
    assert torch.any(p.repeat == 5)  # the repeat probe still uses the whole ordinary range


def test_pure_function_of_arguments():
    a = make_probes(64, 20, 3, (2, 64), 1, n_seqs=10)
    b = make_probes(64, 20, 3, (2, 64), 1, n_seqs=10)
    c = make_probes(64, 20, 4, (2, 64), 1, n_seqs=10)
    assert torch.equal(a.repeat, b.repeat) and torch.equal(a.copy_bwd, b.copy_bwd)
    assert not torch.equal(a.repeat, c.repeat)


def test_tokens_are_uniform_over_the_ordinary_range():
    p = make_probes(vocab_size=12, context=10, seed=0, ordinary_range=(2, 12), sep_token=0, n_seqs=4000)
    counts = np.bincount(p.repeat[:, :5].numpy().ravel(), minlength=12)[2:]
    expected = 4000 * 5 / 10  # 2000 per token; sd ~ 32
    assert np.all(np.abs(counts - expected) < 6 * np.sqrt(expected))
    first = np.bincount(p.repeat[:, 0].numpy(), minlength=12)[2:]  # every slot uniform too
    assert np.all(np.abs(first - 400) < 6 * 20)


def test_explicit_n_and_to_device():
    p = make_probes(64, 40, 0, (2, 64), 1, n_seqs=3, n=10)
    assert p.repeat.shape == (3, 20) and p.n_copy == 10
    q = p.to("cpu")
    assert torch.equal(q.copy_bwd, p.copy_bwd) and (q.n, q.n_copy, q.sep_token) == (p.n, p.n_copy, p.sep_token)


@pytest.mark.parametrize("kw, match", [
    (dict(ordinary_range=(2, 40)), "ordinary_range"),  # 38 tokens < n = 50
    (dict(context=4), "context"),
    (dict(n=70), "n:"),
    (dict(n=1), "n:"),
    (dict(ordinary_range=(2, 600)), "ordinary_range"),  # beyond the vocabulary
    (dict(sep_token=512), "sep_token"),
    (dict(n_seqs=0), "n_seqs"),
    (dict(n_copy_seqs=-1), "n_copy_seqs"),
])
def test_errors(kw, match):
    args = dict(vocab_size=512, context=128, seed=0, ordinary_range=(2, 512), sep_token=1)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        make_probes(**args)


def test_copy_pool_too_small_after_removing_sep():
    # 8 ordinary tokens are enough for n = 8 but not for n_copy = 8 once SEP (inside the range) is removed
    with pytest.raises(ValueError, match="n_copy"):
        make_probes(vocab_size=10, context=17, seed=0, ordinary_range=(2, 10), sep_token=3)
