"""Issue 42's probes on hand-wired models with known heads: duplicate-token attention and the
backward-copy log-prob on the reversed probe, the natural repeat probe, the token-index ICL score."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ihstats.base.chance import copy_probe_floors, repeat_probe_floor
from ihtrain.config import ModelConfig
from ihtrain.metrics import NEEDS_VAL, evaluate
from ihtrain.model import GPT
from ihtrain.probes import natural_repeat

torch.set_num_threads(1)
sys.path.insert(0, str(Path(__file__).parent))
from handwired import backward_heads_model, induction_model, small_probes  # noqa: E402

V, C = 20, 16
NEAR = 1e-6
NEW = ["dup_bwd", "ps_nat", "repeat_nat_logprob", "copy_fwd_logprob", "copy_bwd_logprob", "icl_token_index"]


@pytest.fixture(scope="module")
def probes():
    return small_probes(V, C)


@pytest.fixture(scope="module")
def val():
    """Held-out rows ``y_0..y_7 y_0..y_7 y_0``: 8 distinct tokens, repeated (T + 1 = 17 tokens)."""
    rng = np.random.default_rng(1)
    first = np.stack([rng.permutation(np.arange(1, V))[:8] for _ in range(12)])
    return torch.as_tensor(np.concatenate([first, first, first[:, :1]], axis=1))


def test_natural_repeat_layout_and_errors(val):
    r = natural_repeat(val, 8)
    assert r.shape == (12, 16)
    np.testing.assert_array_equal(r[:, :8], val[:, :8])
    np.testing.assert_array_equal(r[:, 8:], val[:, :8])
    with pytest.raises(ValueError, match="val_tokens"):
        natural_repeat(val[:, :5], 8)


def test_backward_heads_model(probes, val):
    """Head 0 finds the query's own token in S (duplicate), head 1 the token before it and copies
    it: anti-induction and duplicate attention both 1, and the model predicts the reversed
    continuation (log-prob near 0) but not the forward copy (far below 0)."""
    r = evaluate(backward_heads_model(V, C, m=probes.n_copy), probes, val_tokens=val, include=NEW + ["anti_induction"])
    m = probes.n_copy
    # head 1 has no key for the last query (q = 2m, x_0: nothing before it) and spreads uniformly
    # over its 2m + 1 keys there; averaged over the m queries that is 1 / ((2m + 1) m)
    np.testing.assert_allclose(r["dup_bwd"], [[1.0, 1.0 / ((2 * m + 1) * m)]], atol=NEAR)
    np.testing.assert_allclose(r["anti_induction"], [[0.0, 1.0]], atol=NEAR)
    assert r["copy_bwd_logprob"] > -0.05
    assert r["copy_fwd_logprob"] < -3.0


def test_induction_model_new_probes(probes, val):
    """The induction model copies forward: natural PS 1 on its induction head, the natural second
    copy predicted, forward copy log-prob near 0, backward near chance or below, and late tokens
    (second copy) far easier than early ones: token-index ICL score strongly negative."""
    r = evaluate(induction_model(V, C), probes, val_tokens=val, include=NEW)
    np.testing.assert_allclose(r["ps_nat"], [[0.0], [1.0]], atol=NEAR)
    assert r["repeat_nat_logprob"] > -0.5
    assert r["copy_fwd_logprob"] > -0.5
    assert r["copy_bwd_logprob"] < -np.log(V)
    assert r["dup_bwd"][1, 0] < 0.1 and r["dup_bwd"][0, 0] < 0.1  # neither head looks at the duplicate
    assert r["icl_token_index"] < -1.0


def test_blank_model_scores_chance(probes, val):
    """All-zero weights: uniform predictions, so every log-prob is -log V and the ICL score 0."""
    model = GPT(ModelConfig(n_layer=1, n_head=2, d_model=16, vocab_size=V, context=C, attn_only=True), seed=0)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    r = evaluate(model.eval(), probes, val_tokens=val, include=NEW + ["ps", "anti_induction", "anti_copy"])
    for name in ("repeat_nat_logprob", "copy_fwd_logprob", "copy_bwd_logprob"):
        assert r[name] == pytest.approx(-np.log(V), abs=1e-5)
    assert r["icl_token_index"] == pytest.approx(0.0, abs=1e-5)
    # the chance levels the verdicts compare with (ihstats.base.chance) are what a uniform head measures
    floors = copy_probe_floors(C, 0, V)
    for name in ("dup_bwd", "anti_induction"):
        np.testing.assert_allclose(r[name], floors[name], rtol=1e-5)
    np.testing.assert_allclose(r["ps"], repeat_probe_floor(C, 0), rtol=1e-5)
    np.testing.assert_allclose(r["anti_copy"], 0.0)  # no output at all: no attribution


def test_anti_copy_sees_the_backward_copier(probes):
    """Sabry and Belz's anti-induction copy score: the head that attends to x_{j-1} and copies it
    scores ~1; the duplicate-token head, with no output, 0."""
    r = evaluate(backward_heads_model(V, C, m=probes.n_copy), probes, include=["anti_induction", "anti_copy"])
    assert r["anti_copy"][0, 1] > 0.95 and r["anti_copy"][0, 0] == 0.0


def test_val_metrics_need_val_tokens(probes):
    model = induction_model(V, C)
    assert not set(NEEDS_VAL) & set(evaluate(model, probes))
    with pytest.raises(ValueError, match="need val_tokens"):
        evaluate(model, probes, include=["ps_nat"])
    no_val = [m for m in NEW if m not in NEEDS_VAL]
    assert set(no_val) <= set(evaluate(model, probes, include=no_val))
    assert set(evaluate(model, probes)) & set(NEW) == {"dup_bwd"}  # the rest are opt-in (OPT_IN_METRICS)
