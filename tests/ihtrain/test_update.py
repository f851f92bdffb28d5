"""The fast update (ihtrain.run.update) equals torch's clip_grad_norm_ + AdamW.step, alone and packed."""

from __future__ import annotations

import pytest
import torch

from ihtrain.config import ModelConfig
from ihtrain.model import GPT
from ihtrain.run.update import adamw_step_, clip_grad_norms_

CFG = ModelConfig(n_layer=2, n_head=2, d_model=16, vocab_size=40, context=12)


def _model_and_opt(seed: int, fused: bool = True):
    model = GPT(CFG, seed=seed)
    groups = [{"params": [p for p in model.parameters() if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in model.parameters() if p.dim() < 2], "weight_decay": 0.0}]
    return model, torch.optim.AdamW(groups, lr=1e-2, betas=(0.9, 0.95), fused=fused)


def _backward(model: GPT, step: int) -> None:
    idx = torch.randint(0, 40, (4, 11), generator=torch.Generator().manual_seed(step))
    _, loss = model(idx[:, :-1], idx[:, 1:])
    (loss * 50).backward()  # large gradients, so that a clip of 1.0 bites


@pytest.mark.parametrize("clip", [1.0, 0.3, 0.0])
@pytest.mark.parametrize("fused", [True, False])
def test_update_equals_clip_grad_norm_and_optimizer_step_bit_for_bit(clip, fused):
    (ref, ref_opt), (ours, opt) = _model_and_opt(0, fused), _model_and_opt(0, fused)
    for step in range(6):
        lr = 1e-2 * (step + 1) / 6  # a schedule: the rate changes every update, as in training
        for o in (ref_opt, opt):
            for g in o.param_groups:
                g["lr"] = lr
        _backward(ref, step)
        ref_norm = torch.nn.utils.clip_grad_norm_(ref.parameters(), clip if clip > 0 else float("inf"))
        ref_opt.step()
        ref_opt.zero_grad(set_to_none=True)
        _backward(ours, step)
        grads = {p: p.grad for p in ours.parameters()}
        norm = clip_grad_norms_([list(grads.values())], [clip])[0]
        adamw_step_([(opt, grads)])
        for p in grads:
            p.grad = None
        assert norm.item() == ref_norm.item()
        if clip > 0 and step == 0:
            assert ref_norm.item() > clip  # the clip was active
    for (name, a), b in zip(ref.named_parameters(), ours.parameters()):
        assert torch.equal(a, b), name
    assert str(ref_opt.state_dict()) == str(opt.state_dict())  # what a checkpoint holds


def test_members_are_clipped_and_stepped_each_as_alone():
    """Three members with their own clip, rate and state, updated in one call, equal each updated alone."""
    alone = [_model_and_opt(s) for s in range(3)]
    together = [_model_and_opt(s) for s in range(3)]
    clips, lrs = [0.5, 0.0, 2.0], [1e-2, 1e-2, 3e-3]  # two members share a rate: one fused call for them
    for step in range(4):
        for k, ((m, o), (m2, o2)) in enumerate(zip(alone, together)):
            for g in [*o.param_groups, *o2.param_groups]:
                g["lr"] = lrs[k]
            _backward(m, 10 * k + step)
            _backward(m2, 10 * k + step)
            grads = {p: p.grad for p in m.parameters()}
            clip_grad_norms_([list(grads.values())], [clips[k]])
            adamw_step_([(o, grads)])
        grads = [{p: p.grad for p in m.parameters()} for m, _ in together]
        norms = clip_grad_norms_([list(g.values()) for g in grads], clips)
        assert norms.shape == (3,) and bool((norms > 0).all())
        adamw_step_([(o, g) for (_, o), g in zip(together, grads)])
        for m, _ in alone + together:
            m.zero_grad(set_to_none=True)
    for (m, _), (m2, _) in zip(alone, together):
        for a, b in zip(m.parameters(), m2.parameters()):
            assert torch.equal(a, b)
