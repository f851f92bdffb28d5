"""GPT: fast path == metric path, hook points, shapes, accessors, parameter counts, init, optimizer."""

import math

import pytest
import torch
import torch.nn.functional as F

from ihtrain.config import ModelConfig
from ihtrain.model import BLOCK_HOOKS, GPT, HookPoint

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


# ------------------------------------------------------------------------------ hook points
def reference_forward(model: GPT, idx: torch.Tensor, explicit: bool = False):
    """The model's eval forward written out from its weights, with no hook points, in the order of
    operations the model had before it had hook points. Returns logits (B, T, V) and, per layer,
    the pattern (B, H, T, T) (explicit attention only) and the head outputs z (B, T, H, dh)."""
    B, T = idx.shape
    x = model.wte(idx) + model.wpe(torch.arange(T))  # (B, T, d)
    patterns, zs = [], []
    for blk in model.blocks:
        a = blk.attn
        q, k, v = a._qkv(blk.ln_1(x))  # (B, H, T, dh)
        if explicit:
            att = (q * (1.0 / math.sqrt(a.d_head))) @ k.transpose(-2, -1)  # (B, H, T, T)
            att = att.masked_fill_(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(dim=-1)
            patterns.append(att)
            y = att @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, dh)
        zs.append(y.transpose(1, 2))  # (B, T, H, dh)
        x = x + a.c_proj(y.transpose(1, 2).reshape(B, T, -1))
        if not blk.attn_only:
            x = x + blk.mlp(blk.ln_2(x))
    return model.lm_head(model.ln_f(x)), patterns, zs


@pytest.mark.parametrize("kw", [{}, {"attn_only": True}, {"bias": False}, {"tie_embeddings": False}])
def test_hook_points_with_no_hook_change_no_bit(kw):
    model = GPT(cfg(**kw), seed=3).eval()
    idx = torch.randint(0, 50, (3, 24), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        ref, _, _ = reference_forward(model, idx)
        ref_x, patterns, zs = reference_forward(model, idx, explicit=True)
        fast = model(idx)[0]
        slow, cache = model.run_with_cache(idx)
    assert torch.equal(fast, ref)
    assert torch.equal(slow, ref_x)
    assert torch.equal(cache.attn, torch.stack(patterns)) and torch.equal(cache.head_out, torch.stack(zs))


@pytest.mark.parametrize("attn_only", [False, True])
def test_hook_names_are_the_hook_point_modules_in_forward_order(attn_only):
    model = GPT(cfg(attn_only=attn_only), seed=0).eval()
    found = [n for n, m in model.named_modules() if isinstance(m, HookPoint)]
    assert model.hook_names() == found == list(model.hook_dict)
    assert all(model.hook_dict[n].name == n for n in found)
    assert len(found) == 2 * (len(BLOCK_HOOKS) - 2 * attn_only)  # attn_only: no resid_mid, no mlp_out
    # each point fires once per forward, in the listed order, with the listed shape
    fired: list[tuple[str, tuple]] = []
    with model.hooks([(n, lambda x, hook: fired.append((hook.name, tuple(x.shape)))) for n in found]):
        model(torch.zeros(3, 24, dtype=torch.long))
    assert [n for n, _ in fired] == found
    B, T, d, H = 3, 24, 32, 4
    want = {"attn.hook_pattern": (B, H, T, T), "attn.hook_z": (B, T, H, d // H)}
    assert all(shape == want.get(n.split(".", 2)[2], (B, T, d)) for n, shape in fired)


def test_hook_points_leave_checkpoints_as_they_were():
    model = GPT(cfg(n_layer=1), seed=0)
    assert list(model.state_dict()) == [  # the keys before hook points existed
        "wte.weight", "wpe.weight", "blocks.0.ln_1.weight", "blocks.0.ln_1.bias", "blocks.0.attn.c_attn.weight",
        "blocks.0.attn.c_attn.bias", "blocks.0.attn.c_proj.weight", "blocks.0.attn.c_proj.bias",
        "blocks.0.ln_2.weight", "blocks.0.ln_2.bias", "blocks.0.mlp.c_fc.weight", "blocks.0.mlp.c_fc.bias",
        "blocks.0.mlp.c_proj.weight", "blocks.0.mlp.c_proj.bias", "ln_f.weight", "ln_f.bias", "lm_head.weight"]


def test_hooks_replace_activations_and_are_removed():
    model = GPT(cfg(), seed=4).eval()
    idx = torch.randint(0, 50, (2, 24), generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        base = model(idx)[0]
        # a zero final residual: ln_f gives its bias (0), so every logit is 0
        out = model.run_with_hooks(idx, [("blocks.1.hook_resid_post", lambda x, hook: torch.zeros_like(x))])[0]
        assert torch.equal(out, torch.zeros_like(out))
        assert torch.equal(model(idx)[0], base)
    def noop(x, hook):
        return None
    with pytest.raises(ValueError, match="no such hook point"):
        with model.hooks([("blocks.0.attn.hook_z", noop), ("blocks.2.attn.hook_z", noop)]):
            pass
    assert not any(p.has_hooks for p in model.hook_dict.values())  # the first one was removed too


def test_a_pattern_hook_makes_the_fast_path_explicit_and_keeps_gradients():
    model = GPT(cfg(), seed=5)
    idx = torch.randint(0, 50, (2, 24), generator=torch.Generator().manual_seed(7))
    seen = []
    logits, loss = model.run_with_hooks(idx[:, :-1], [("blocks.0.attn.hook_pattern", lambda a, h: seen.append(a))],
                                        targets=idx[:, 1:])
    loss.backward()  # the explicit path trains too
    assert model.blocks[0].attn.c_attn.weight.grad.abs().sum() > 0
    _, cache = model.run_with_cache(idx[:, :-1])
    torch.testing.assert_close(seen[0].detach(), cache.attn[0], atol=0, rtol=0)
    torch.testing.assert_close(logits.detach(), model(idx[:, :-1])[0], atol=1e-5, rtol=1e-5)
    assert model.training  # run_with_cache restores the mode


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
