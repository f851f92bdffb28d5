"""The adapter gives the metrics what our GPT gives them: patterns, per-head outputs and head weights
that agree with the family's own forward pass."""

from __future__ import annotations

import pytest
import torch

from ihtrain.score import adapter
from ihtrain.score.adapter import HFModel, family_of
from tests.ihtrain.score.conftest import FAMILIES, tiny_model


def test_every_family_has_a_tiny_model_here():
    assert set(FAMILIES) == set(adapter.FAMILIES)


def _zero_attention_biases(hf):
    """So a head's output at position 0 (it attends to itself alone) is exactly x0 @ W_V[h]."""
    for name, p in hf.named_parameters():
        if name.endswith("bias") and any(k in name for k in ("c_attn", "query_key_value", "v_proj")):
            p.data.zero_()


@pytest.mark.parametrize("family", FAMILIES)
def test_heads_and_weights_agree_with_the_forward_pass(family):
    hf = tiny_model(family, 0)
    _zero_attention_biases(hf)
    model = HFModel(hf)
    fam = family_of(hf)
    x = torch.randint(0, 300, (3, 12))
    seen_in, seen_out = {}, {}
    handles = []
    for l in range(model.cfg.n_layer):
        attn = model._attn(l)
        handles.append(attn.register_forward_pre_hook(
            lambda m, a, k, l=l: seen_in.__setitem__(l, a[0] if a else k["hidden_states"]), with_kwargs=True))
        handles.append(getattr(attn, fam.out_proj).register_forward_hook(
            lambda m, a, o, l=l: seen_out.__setitem__(l, o)))
    logits, cache = model.run_with_cache(x)
    for h in handles:
        h.remove()
    L, H, dh = model.cfg.n_layer, model.cfg.n_head, model.cfg.d_head
    assert cache.attn.shape == (L, 3, H, 12, 12) and cache.head_out.shape == (L, 3, 12, H, dh)
    torch.testing.assert_close(cache.attn.sum(-1), torch.ones(L, 3, H, 12))
    assert float(cache.attn.triu(1).abs().max()) == 0.0  # causal
    torch.testing.assert_close(logits, hf(x).logits, atol=1e-5, rtol=1e-5)
    for l in range(L):
        proj = getattr(model._attn(l), fam.out_proj)
        bias = proj.bias if proj.bias is not None else 0
        # the heads' outputs through W_O, summed, are the projection's output
        summed = torch.einsum("bthe,hed->btd", cache.head_out[l], model.W_O(l)) + bias
        torch.testing.assert_close(summed, seen_out[l], atol=1e-5, rtol=1e-5)
        # at position 0 each head's output is its value of the first token
        v0 = torch.einsum("bd,hde->bhe", seen_in[l][:, 0], model.W_V(l))
        torch.testing.assert_close(cache.head_out[l][:, 0], v0, atol=1e-5, rtol=1e-5)


def test_logit_positions_unembed_only_those():
    model = HFModel(tiny_model("gpt2", 1))
    x = torch.randint(0, 300, (2, 10))
    full, _ = model.run_with_cache(x)
    part, _ = model.run_with_cache(x, logit_positions=slice(4, 9))
    torch.testing.assert_close(part, full[:, 4:9])
    none, cache = model.run_with_cache(x, logits=False)
    assert none is None and cache.attn.shape[0] == 2


def test_an_unsupported_family_is_named():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.OPTConfig(num_hidden_layers=1, num_attention_heads=2, hidden_size=16, ffn_dim=32,
                                 vocab_size=50, max_position_embeddings=32, word_embed_proj_dim=16)
    with pytest.raises(ValueError, match="model_type 'opt'.*supported: gpt2, gpt_neox, llama"):
        HFModel(transformers.AutoModelForCausalLM.from_config(cfg))
