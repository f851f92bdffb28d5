"""Metrics against hand-wired models with known answers (docs/DESIGN.md: one per metric)."""

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from ihstats.base import contract
from ihtrain.config import ModelConfig
from ihtrain.data.successors import Successors
from ihstats.base.contract import OPT_IN_METRICS
from ihtrain.metrics import (METRIC_NAMES, NEEDS_SUCCESSORS, REGISTRY, Activations, ar_from_logits, evaluate, ov_copy,
                             to_rows, val_loss)
from ihtrain.model import GPT
from ihtrain.probes import make_probes

# one thread: torch's default spins badly on a shared, oversubscribed CPU (30x slower here)
torch.set_num_threads(1)

sys.path.insert(0, str(Path(__file__).parent))
from handwired import induction_model, positional_heads_model, small_probes  # noqa: E402

V, C = 20, 16
NEAR = 1e-6  # attention in the hand-wired models is one-hot to ~1e-10 per key


@pytest.fixture(scope="module")
def probes():
    return small_probes(V, C)


@pytest.fixture(scope="module")
def induction(probes):
    return evaluate(induction_model(V, C), probes)


@pytest.fixture(scope="module")
def positional(probes):
    return evaluate(positional_heads_model(V, C, m=probes.n_copy), probes)


def uniform_score(queries):
    """A uniform causal head puts 1 / (q + 1) on every key of query q."""
    return float(np.mean([1.0 / (q + 1) for q in queries]))


# ------------------------------------------------------------------------------ induction model
def test_induction_model_ps_prev_and_la(induction):
    # layer 0 = previous-token head, layer 1 = induction head (one head each)
    np.testing.assert_allclose(induction["ps"], [[0.0], [1.0]], atol=NEAR)
    np.testing.assert_allclose(induction["prev_token"], [[1.0], [0.0]], atol=NEAR)
    np.testing.assert_allclose(induction["la"], [[0.0], [1.0]], atol=NEAR)
    assert induction["la"][0, 0] == 0.0  # writes no unembedding direction: total 0 -> 0


def test_induction_model_ar(induction):
    assert induction["ar_acc"] == 1.0
    assert induction["ar_rank"] == 0.0


def test_induction_model_copy_scores_and_ov(induction):
    np.testing.assert_allclose(induction["copy_fwd"], [[0.0], [1.0]], atol=NEAR)
    np.testing.assert_allclose(induction["anti_induction"], [[0.0], [0.0]], atol=NEAR)
    np.testing.assert_allclose(induction["ov_copy"], [[0.0], [1.0]], atol=1e-9)


def test_breaking_the_induction_head_breaks_ar(probes):
    model = induction_model(V, C)
    with torch.no_grad():
        model.W_K(1)[0].zero_()  # layer 1 now attends uniformly
    r = evaluate(model, probes, include=["ps", "ar_acc", "ar_rank"])
    n = probes.n
    assert r["ps"][1, 0] == pytest.approx(uniform_score(range(n, 2 * n)), abs=1e-6)
    assert r["ar_acc"] < 0.2 and r["ar_rank"] >= 1.0


# ------------------------------------------------------------------------------ positional heads
def test_uniform_heads_have_exact_scores(positional, probes):
    n, m = probes.n, probes.n_copy
    ps_u = uniform_score(range(n, 2 * n))  # s in [n, 2n-1]
    copy_u = uniform_score(range(m + 1, 2 * m))  # q in [m+1, 2m-1]
    for h in (0, 4, 5, 6, 7):
        assert positional["ps"][0, h] == pytest.approx(ps_u, abs=1e-6)
        assert positional["prev_token"][0, h] == pytest.approx(ps_u, abs=1e-6)
        assert positional["copy_fwd"][0, h] == pytest.approx(copy_u, abs=1e-6)
        assert positional["anti_induction"][0, h] == pytest.approx(copy_u, abs=1e-6)


def test_positional_heads(positional, probes):
    assert positional["prev_token"][0, 1] == pytest.approx(1.0, abs=NEAR)
    assert positional["ps"][0, 1] == pytest.approx(0.0, abs=NEAR)
    # forward copy head: q -> q - m; anti-induction head: q -> 2m - 1 - q
    assert positional["copy_fwd"][0, 2] == pytest.approx(1.0, abs=NEAR)
    assert positional["anti_induction"][0, 3] == pytest.approx(1.0, abs=NEAR)
    # the anti head looks at 2m-1-q, never at q-m on the measured queries (except where they meet)
    m = probes.n_copy
    meet = [q for q in range(m + 1, 2 * m) if 2 * m - 1 - q == q - m]
    assert positional["copy_fwd"][0, 3] == pytest.approx(len(meet) / (m - 1), abs=NEAR)
    assert positional["anti_induction"][0, 2] == pytest.approx(len(meet) / (m - 1), abs=NEAR)


def test_ov_copy_signs(positional):
    np.testing.assert_allclose(positional["ov_copy"], [[1, -1, 0, 0, -1, 0, 0, 0]], atol=1e-9)


def test_la_exact_values(positional, probes):
    n = probes.n
    la = positional["la"][0]
    # head 0 (uniform, copies): the correct next token has been seen once, earlier tokens twice,
    # so after mean subtraction it is below the mean: LA = 0
    assert la[0] == pytest.approx(0.0, abs=1e-6)
    # head 1 (previous token, anti-copies): every token but the previous one gets an equal share
    assert la[1] == pytest.approx(1.0 / (n - 1), abs=1e-5)
    # head 4 (uniform, anti-copies): at s the 2n-1-s tokens seen once share the positive mass
    assert la[4] == pytest.approx(sum(1.0 / k for k in range(1, n)) / (n - 1), abs=1e-5)
    assert np.all(la[[2, 3, 5, 6, 7]] == 0.0)  # no output: total 0 -> 0


# ------------------------------------------------------------------------------ model level
def test_ar_from_hand_made_logits():
    logits = torch.tensor([[[3.0, 1.0, 2.0, 0.0],  # target 0: rank 0, correct
                            [3.0, 1.0, 2.0, 0.0],  # target 2: one logit greater
                            [1.0, 1.0, 1.0, 5.0]]])  # target 1: ties do not count, 5 > 1
    targets = torch.tensor([[0, 2, 1]])
    acc, rank = ar_from_logits(logits, targets)
    assert acc == pytest.approx(1 / 3)
    assert rank == pytest.approx((0 + 1 + 1) / 3)


def test_val_loss_uniform_logits_is_log_v():
    model = GPT(ModelConfig(n_layer=1, n_head=2, d_model=16, vocab_size=37, context=12), seed=0)
    with torch.no_grad():
        model.ln_f.weight.zero_()
        model.ln_f.bias.zero_()  # every logit 0
    toks = torch.randint(0, 37, (5, 13))
    acts = Activations(model, None, toks)
    assert val_loss(model, None, acts, chunk=2) == pytest.approx(math.log(37), rel=1e-6)


def test_val_loss_matches_fast_path_loss():
    model = GPT(ModelConfig(n_layer=1, n_head=2, d_model=16, vocab_size=37, context=12), seed=0).eval()
    toks = torch.randint(0, 37, (6, 13))
    with torch.no_grad():
        _, want = model(toks[:, :-1], toks[:, 1:])
    r = evaluate(model, make_probes(37, 12, 0, (1, 37), 0, n_seqs=3), val_tokens=toks.numpy(), include=["val_loss"])
    assert r == {"val_loss": pytest.approx(want.item(), rel=1e-6)}


# ------------------------------------------------------------------------------ weights only
def test_ov_copy_matches_full_vocabulary_eigenvalues():
    model = GPT(ModelConfig(n_layer=2, n_head=2, d_model=24, vocab_size=30, context=8, tie_embeddings=False), seed=5)
    got = ov_copy(model, None, None)
    W_E, W_U = model.W_E.double(), model.W_U.double()
    for layer in range(2):
        for h in range(2):
            full = W_E @ model.W_V(layer)[h].double() @ model.W_O(layer)[h].double() @ W_U.T  # (V, V)
            eig = torch.linalg.eigvals(full)
            want = (eig.sum().real / eig.abs().sum()).item()
            assert got[layer, h] == pytest.approx(want, abs=1e-6)
    assert np.all(np.abs(got) <= 1 + 1e-12) and got.shape == (2, 2)


# ------------------------------------------------------------------------------ evaluate / rows
def test_evaluate_restores_mode_and_shapes(probes):
    model = GPT(ModelConfig(n_layer=2, n_head=4, d_model=32, vocab_size=V, context=C), seed=0).train()
    val = torch.randint(0, V, (4, C + 1))
    val[:, C // 2:] = val[:, :C // 2 + 1]  # copies, for the in-distribution probes
    succ = Successors(np.full((V, V), 1 / V), np.full(V, 1 / V), "uniform")  # no successor is likely
    r = evaluate(model, probes, val_tokens=val, successors=succ)
    assert model.training
    assert list(r) == [m for m in METRIC_NAMES if m not in OPT_IN_METRICS]  # opt-in ones only by name
    everything = evaluate(model, probes, val_tokens=val, include=list(METRIC_NAMES), successors=succ)
    assert list(everything) == list(METRIC_NAMES)
    # without successor statistics the controlled score and the successor ceilings are left out
    assert set(r) - set(evaluate(model, probes, val_tokens=val)) == set(NEEDS_SUCCESSORS)
    for name in ("ps", "prev_token", "la", "copy_fwd", "anti_induction", "ov_copy"):
        assert r[name].shape == (2, 4) and r[name].dtype == np.float64
    for name in ("ar_acc", "ar_rank", "val_loss"):
        assert isinstance(r[name], float)
    assert "val_loss" not in evaluate(model.eval(), probes)
    assert not model.training
    sub = evaluate(model, probes, include=["ov_copy", "ps"])
    assert list(sub) == ["ps", "ov_copy"]
    np.testing.assert_array_equal(sub["ps"], r["ps"])


def test_registry_is_the_contracts_names_and_flags():
    assert {n: m.per_head for n, m in REGISTRY.items()} == contract.METRICS
    assert list(REGISTRY) == list(contract.METRICS)  # evaluation and row order


def test_evaluate_errors(probes):
    model = induction_model(V, C)
    with pytest.raises(ValueError, match="include: unknown"):
        evaluate(model, probes, include=["induction"])
    with pytest.raises(ValueError, match="val_tokens"):
        evaluate(model, probes, include=["val_loss"])


def test_to_rows_tidy(induction):
    rows = to_rows(induction, step=12, tokens=3072)
    assert list(rows.columns) == ["step", "tokens", "metric", "layer", "head", "value"]
    # no val_tokens, opt-in metrics not named: 10 per-head metrics on the 2 x 1 heads (7 + the general
    # probe's 3), 3 model-level (ar_acc, ar_rank, ceil_offset_gen)
    assert len(rows) == 10 * 2 + 3
    assert rows["step"].dtype == np.int64 and rows["layer"].dtype == np.int64 and rows["value"].dtype == np.float64
    ps = rows[rows.metric == "ps"].set_index(["layer", "head"])["value"]
    assert ps.loc[(1, 0)] == pytest.approx(1.0, abs=NEAR)
    model_level = rows[rows.metric.isin(["ar_acc", "ar_rank"])]
    assert (model_level["layer"] == -1).all() and (model_level["head"] == -1).all()
    assert rows.tokens.unique().tolist() == [3072]
    with pytest.raises(ValueError, match="results"):
        to_rows({"ps": np.zeros(3)}, 0, 0)
    assert isinstance(to_rows({}, 0, 0), pd.DataFrame)


def test_to_rows_layer_head_order():
    rows = to_rows({"ps": np.arange(6.0).reshape(2, 3)}, 0, 0)
    assert rows[["layer", "head", "value"]].values.tolist() == [[0, 0, 0], [0, 1, 1], [0, 2, 2], [1, 0, 3],
                                                                [1, 1, 4], [1, 2, 5]]
