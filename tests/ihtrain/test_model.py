"""GPT: fast path == metric path, shapes, accessors, parameter counts, init, optimizer."""

import math

import pytest
import torch

from ihtrain.config import ModelConfig
from ihtrain.model import GPT

# one thread: torch's default spins badly on a shared, oversubscribed CPU (30x slower here)
torch.set_num_threads(1)


def cfg(**kw) -> ModelConfig:
    base = dict(n_layer=2, n_head=4, d_model=32, vocab_size=50, context=24)
    base.update(kw)
    return ModelConfig(**base)


@pytest.mark.parametrize("kw", [{}, {"attn_only": True}, {"tie_embeddings": False}, {"bias": False}])
def test_metric_path_matches_fast_path(kw):
    model = GPT(cfg(**kw), seed=1).eval()
    idx = torch.randint(0, 50, (3, 24), generator=torch.Generator().manual_seed(0))
    fast, _ = model(idx)
    slow, cache = model.run_with_cache(idx)
    assert fast.shape == slow.shape == (3, 24, 50)
    torch.testing.assert_close(slow, fast, atol=1e-5, rtol=1e-5)
    L, B, H, T, dh = 2, 3, 4, 24, 8
    assert cache.attn.shape == (L, B, H, T, T)
    assert cache.head_out.shape == (L, B, T, H, dh)
    torch.testing.assert_close(cache.attn.sum(-1), torch.ones(L, B, H, T))
    assert torch.all(cache.attn.triu(1) == 0)  # causal
    # logit_positions and logits=False are consistent with the full run
    part, cache2 = model.run_with_cache(idx, logit_positions=slice(5, 9))
    torch.testing.assert_close(part, slow[:, 5:9])
    none, cache3 = model.run_with_cache(idx, logits=False)
    assert none is None
    torch.testing.assert_close(cache3.attn, cache.attn)
    torch.testing.assert_close(cache3.head_out, cache.head_out)


def test_head_outputs_through_W_O_rebuild_attention_output():
    """Sum over heads of head_out[l, :, :, h] @ W_O(l)[h] (+ bias) is the attention block's output."""
    model = GPT(cfg(), seed=2).eval()
    idx = torch.randint(0, 50, (2, 10))
    _, cache = model.run_with_cache(idx)
    x = model.wte(idx) + model.wpe(torch.arange(10))
    blk = model.blocks[0]
    want = blk.attn(blk.ln_1(x))  # (B, T, d), fast path of layer 0
    got = torch.einsum("bthe,hed->btd", cache.head_out[0], model.W_O(0)) + blk.attn.c_proj.bias
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    # W_V slices the value block of c_attn: v = ln_1(x) W_V[h] (+ bias) per head
    v = blk.attn.c_attn(blk.ln_1(x))[..., 64:96].view(2, 10, 4, 8)
    v2 = torch.einsum("btd,hde->bthe", blk.ln_1(x), model.W_V(0)) + blk.attn.c_attn.bias[64:96].view(4, 8)
    torch.testing.assert_close(v2, v, atol=1e-6, rtol=1e-5)


def test_accessor_shapes_and_tying():
    tied = GPT(cfg(), seed=0)
    assert tied.W_E.shape == tied.W_U.shape == (50, 32)
    assert tied.W_U.data_ptr() == tied.W_E.data_ptr()
    assert tied.W_V(1).shape == tied.W_Q(1).shape == tied.W_K(1).shape == (4, 32, 8)
    assert tied.W_O(1).shape == (4, 8, 32)
    untied = GPT(cfg(tie_embeddings=False), seed=0)
    assert untied.W_U.data_ptr() != untied.W_E.data_ptr()


def test_num_params_counts():
    d, V, C, L = 32, 50, 24, 2
    attn = 2 * d + (3 * d * d + 3 * d) + (d * d + d)  # ln_1, c_attn, c_proj
    mlp = 2 * d + (4 * d * d + 4 * d) + (4 * d * d + d)  # ln_2, c_fc, c_proj
    lnf = 2 * d
    m = GPT(cfg())
    assert m.num_params(non_embedding=True) == L * (attn + mlp) + lnf
    assert m.num_params(non_embedding=False) == L * (attn + mlp) + lnf + V * d + C * d
    m = GPT(cfg(attn_only=True, tie_embeddings=False))
    assert m.num_params() == L * attn + lnf
    assert m.num_params(non_embedding=False) == L * attn + lnf + 2 * V * d + C * d


def test_seeded_construction_is_deterministic():
    a, b, c = GPT(cfg(), seed=7), GPT(cfg(), seed=7), GPT(cfg(), seed=8)
    for (k, x), (_, y), (_, z) in zip(a.state_dict().items(), b.state_dict().items(), c.state_dict().items()):
        assert torch.equal(x, y), k
        if x.dim() == 2:
            assert not torch.equal(x, z), k
    torch.manual_seed(3)
    d = GPT(cfg())
    torch.manual_seed(3)
    e = GPT(cfg())
    assert all(torch.equal(x, y) for x, y in zip(d.parameters(), e.parameters()))


def test_gpt2_init_statistics():
    m = GPT(cfg(n_layer=4, d_model=128, n_head=4, vocab_size=512, context=64), seed=0)
    assert abs(m.wte.weight.std().item() - 0.02) < 1e-3
    assert abs(m.blocks[0].attn.c_attn.weight.std().item() - 0.02) < 1e-3
    want = 0.02 / math.sqrt(2 * 4)
    assert abs(m.blocks[0].attn.c_proj.weight.std().item() - want) < 5e-4
    assert abs(m.blocks[0].mlp.c_proj.weight.std().item() - want) < 5e-4
    assert torch.all(m.blocks[0].attn.c_attn.bias == 0) and torch.all(m.ln_f.weight == 1)


def test_loss_and_training_step_reduce_loss():
    torch.manual_seed(0)
    m = GPT(cfg(), seed=0)
    x = torch.randint(0, 50, (4, 17))
    _, loss = m(x[:, :-1], x[:, 1:])
    assert abs(loss.item() - math.log(50)) < 0.1  # small init: near-uniform predictions
    opt = m.configure_optimizer(weight_decay=0.1, lr=1e-2, betas=(0.9, 0.95), device_type="cpu")
    for _ in range(20):
        _, loss2 = m(x[:, :-1], x[:, 1:])
        opt.zero_grad()
        loss2.backward()
        opt.step()
    assert loss2.item() < loss.item() - 1.0


def test_configure_optimizer_decays_2d_weights_only():
    m = GPT(cfg(tie_embeddings=False))
    opt = m.configure_optimizer(weight_decay=0.1, lr=1e-3, betas=(0.9, 0.95), device_type="cpu")
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() == 2 for p in decay["params"]) and all(p.dim() == 1 for p in no_decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(m.parameters()))


def test_flops_estimate_formula():
    m = GPT(cfg())
    n = m.num_params(non_embedding=False) - 24 * 32  # all but the position embedding (tied)
    assert m.estimate_flops_per_token() == 6 * n + 12 * 2 * 4 * 8 * 24
    assert m.estimate_mfu(tokens_per_s=1000.0, peak_flops=1e12) == pytest.approx(m.estimate_flops_per_token() * 1e-9)


def test_errors_name_the_field():
    with pytest.raises(ValueError, match="model.vocab_size"):
        GPT(cfg(vocab_size=0))
    with pytest.raises(ValueError, match="model.context"):
        GPT(cfg())(torch.zeros(1, 25, dtype=torch.long))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_paths_agree_and_fused_adamw():
    model = GPT(cfg(), seed=0).cuda().eval()
    idx = torch.randint(0, 50, (3, 24), device="cuda")
    fast, _ = model(idx)
    slow, cache = model.run_with_cache(idx)
    torch.testing.assert_close(slow, fast, atol=1e-4, rtol=1e-4)  # TF32 / SDPA kernels differ slightly
    assert cache.attn.device.type == "cuda"
    opt = model.train().configure_optimizer(0.1, 1e-3, (0.9, 0.95), device_type="cuda")
    assert opt.defaults.get("fused") is True
    _, loss = model(idx[:, :-1], idx[:, 1:])
    loss.backward()
    opt.step()
