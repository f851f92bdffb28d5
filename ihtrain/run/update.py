"""The optimizer update after the backward pass: one implementation for a run alone and for a pack.

A tiny model's update is a few milliseconds, so ``torch.optim``'s per-step bookkeeping (building
the parameter lists, hooks, profiler records, checks) is a measurable share of it. Both update
paths, :func:`ihtrain.run.train.solo_update` and :meth:`ihtrain.run.packed.Pack.update`, therefore call the
two functions here directly:

- :func:`clip_grad_norms_`: each member's ``torch.nn.utils.clip_grad_norm_`` (the same foreach
  norms and the same coefficient, so a run alone gets bit-identical gradients), for K members at once;
- :func:`adamw_step_`: each member's AdamW step on its own optimizer's state and parameter groups,
  through the fused AdamW kernel that ``optimizer.step()`` itself calls, one call per (learning
  rate, weight decay, betas, eps) for all members that share them.

The state stays in each member's ``torch.optim.AdamW`` (``optimizer.state``, ``param_groups``), so
checkpoints hold ``optimizer.state_dict()`` as before and a resume is exact. An optimizer without
the fused kernel (an older torch) steps through ``optimizer.step()``.
"""

from __future__ import annotations

import torch
from torch.optim.adam import adam

# A member's update: its optimizer and, for each of its parameters, the gradient to step with
# (the parameter's own ``.grad`` alone; its slice of the stacked gradient in a pack).
Member = tuple[torch.optim.Optimizer, dict[torch.Tensor, torch.Tensor]]


def clip_grad_norms_(grads: list[list[torch.Tensor]], clips: list[float]) -> torch.Tensor:
    """Clip each member's gradients ``grads[k]`` in place to total 2-norm ``clips[k]`` (<= 0: no
    clipping), as ``clip_grad_norm_`` does; returns the members' norms before clipping (K,).

    One foreach norm over every member's tensors (one dispatch instead of one per tensor), then
    per member ``coef = min(1, clip / (norm + 1e-6))``, exactly ``clip_grad_norm_``'s arithmetic.
    """
    K = len(grads)
    per_tensor = torch.stack(torch._foreach_norm([g for member in grads for g in member])).view(K, -1)
    norms = torch.linalg.vector_norm(per_tensor, dim=1)  # (K,)
    limits = [c if c > 0 else float("inf") for c in clips]
    # one clip for all (always so alone): a Python scalar, as clip_grad_norm_ (no tensor to build or copy)
    limit = limits[0] if len(set(limits)) == 1 else torch.tensor(limits, device=norms.device)
    coef = (limit / (norms + 1e-6)).clamp(max=1.0)
    for k, member in enumerate(grads):
        torch._foreach_mul_(member, coef[k])
    return norms


def _fused(opt: torch.optim.Optimizer) -> bool:
    return all(g.get("fused") and not g["amsgrad"] and not g["maximize"] for g in opt.param_groups)


def adamw_step_(members: list[Member]) -> None:
    """Each member's AdamW step, as its ``optimizer.step()`` would take it with these gradients,
    in one fused call per hyper-parameter set. The optimizers' state is created at the first step
    as ``torch.optim.AdamW`` creates it, so ``state_dict()`` and resume are unchanged."""
    calls: dict[tuple, list[tuple[torch.Tensor, torch.Tensor, dict]]] = {}
    for opt, grads in members:
        if not _fused(opt):
            _step_through(opt, grads)
            continue
        for group in opt.param_groups:
            key = (group["lr"], group["weight_decay"], *group["betas"], group["eps"],
                   group.get("decoupled_weight_decay", True))
            for param in group["params"]:
                grad = grads.get(param)
                if grad is None:  # as optimizer.step(): a parameter without a gradient is not stepped
                    continue
                state = opt.state[param]
                if not state:
                    state.update(step=torch.zeros((), dtype=torch.float32, device=param.device),
                                 exp_avg=torch.zeros_like(param), exp_avg_sq=torch.zeros_like(param))
                calls.setdefault(key, []).append((param, grad, state))
    for (lr, wd, beta1, beta2, eps, decoupled), items in calls.items():
        params, grads_, states = zip(*items)
        adam([p.data for p in params], list(grads_), [s["exp_avg"] for s in states],
             [s["exp_avg_sq"] for s in states], [], [s["step"] for s in states], fused=True,
             decoupled_weight_decay=decoupled, amsgrad=False, beta1=beta1, beta2=beta2, lr=lr, weight_decay=wd,
             eps=eps, maximize=False)


def _step_through(opt: torch.optim.Optimizer, grads: dict[torch.Tensor, torch.Tensor]) -> None:
    """The plain ``optimizer.step()`` with these gradients (an optimizer without the fused kernel)."""
    for param, grad in grads.items():
        param.grad = grad
    opt.step()
    opt.zero_grad(set_to_none=True)


__all__ = ["Member", "adamw_step_", "clip_grad_norms_"]
