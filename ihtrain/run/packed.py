"""Packed training: K runs of one model shape, batch size and context trained in one process.

For the small models that make CPU experiments possible, much of an update is fixed cost (Python,
kernel dispatch, the optimizer step); K runs packed share one forward and one backward over a
leading run dimension, so that cost is paid once per K updates.

Each member is a full :class:`ihtrain.run.trainer.Trainer`: its own data stream, schedule, optimizer
state, metrics, checkpoints and run directory, in exactly the format of a run trained alone (a member's
results equal its solo run's to float rounding, tested). Only the update is shared:

- the members' weights are stacked, one ``(K, ...)`` leaf tensor per parameter, and each member's
  ``GPT`` holds views into the stack, so evaluation and checkpoints read the member's own weights;
- :func:`packed_loss` is the GPT's training forward with batched weights (``bmm`` over the run
  dimension); one backward of the summed member losses gives every member its own gradients;
- each member is clipped by its own gradient norm and steps with its own AdamW state, learning rate
  and schedule (one fused AdamW call for all members that share a rate): :mod:`ihtrain.run.update`,
  the same update a run alone takes.

A member that stops (emerged, cap) or fails (non-finite, diverged) leaves the pack, which is
re-stacked from the others; a kill leaves every member resumable from its own checkpoint. The
packed forward is a second implementation of ``GPT.forward`` (kept beside the trainer so that
``model.py`` stays one readable model): ``tests/ihtrain/test_packed.py`` holds the two equal.
"""

from __future__ import annotations

import dataclasses
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F

from ihstats.base.contract import read_status
from ihtrain.run.checkpoint import LAST, checkpoint_dir
from ihtrain.config import ModelConfig, RunConfig
from ihtrain.data.registry import find
from ihtrain.run.locks import run_lock
from ihtrain.run.files import record_exception, resume_threads, start_or_record
from ihtrain.run.trainer import Trainer
from ihtrain.run.update import adamw_step_, clip_grad_norms_

Params = dict[str, torch.Tensor]  # parameter name (as in GPT.named_parameters) -> (K, ...) stack


# ---------------------------------------------------------------------------- the packed forward
def _linear(x: torch.Tensor, p: Params, name: str) -> torch.Tensor:
    """x (K, N, d_in) -> (K, N, d_out) with member k's nn.Linear weights (K, d_out, d_in)."""
    w, b = p[name + ".weight"], p.get(name + ".bias")
    if b is None:
        return torch.bmm(x, w.transpose(1, 2))
    return torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))


def _layer_norm(x: torch.Tensor, p: Params, name: str) -> torch.Tensor:
    """LayerNorm of x (K, N, d) with member k's gain (and bias)."""
    y = F.layer_norm(x, (x.shape[-1],)) * p[name + ".weight"].unsqueeze(1)
    b = p.get(name + ".bias")
    return y if b is None else y + b.unsqueeze(1)


def _attention(x: torch.Tensor, p: Params, pre: str, cfg: ModelConfig, B: int, T: int) -> torch.Tensor:
    """Causal self-attention of x (K, B*T, d): the members' batches side by side as one SDPA batch."""
    K, d, H = x.shape[0], cfg.d_model, cfg.n_head
    q, k, v = _linear(x, p, pre + "c_attn").split(d, dim=2)  # 3 x (K, B*T, d)
    heads = lambda z: z.reshape(K * B, T, H, d // H).transpose(1, 2)  # noqa: E731 - (K*B, H, T, dh)
    y = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)  # (K*B, H, T, dh)
    return _linear(y.transpose(1, 2).reshape(K, B * T, d), p, pre + "c_proj")


def packed_loss(p: Params, cfg: ModelConfig, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``GPT.forward``'s mean cross-entropy for K members at once: idx, targets (K, B, T) -> (K,).

    Dropout is not supported (a packed member must draw the same masks as alone; the grid never
    packs a run with dropout). Target ``-1`` is ignored, as in ``GPT.forward``.
    """
    K, B, T = idx.shape
    V, d = cfg.vocab_size, cfg.d_model
    wte = p["wte.weight"]  # (K, V, d)
    offset = (torch.arange(K, device=idx.device) * V).view(K, 1, 1)  # member k's rows of the flattened table
    x = wte.reshape(K * V, d)[(idx + offset).view(K, B * T)]  # (K, B*T, d)
    x = (x.view(K, B, T, d) + p["wpe.weight"][:, None, :T]).view(K, B * T, d)
    for layer in range(cfg.n_layer):
        pre = f"blocks.{layer}."
        x = x + _attention(_layer_norm(x, p, pre + "ln_1"), p, pre + "attn.", cfg, B, T)
        if not cfg.attn_only:
            h = F.gelu(_linear(_layer_norm(x, p, pre + "ln_2"), p, pre + "mlp.c_fc"))
            x = x + _linear(h, p, pre + "mlp.c_proj")
    unembed = wte if cfg.tie_embeddings else p["lm_head.weight"]  # (K, V, d)
    logits = torch.bmm(_layer_norm(x, p, "ln_f"), unembed.transpose(1, 2))  # (K, B*T, V)
    flat = targets.reshape(K, B * T)
    losses = F.cross_entropy(logits.reshape(K * B * T, V), flat.reshape(-1), ignore_index=-1, reduction="none")
    return losses.view(K, B * T).sum(dim=1) / (flat != -1).sum(dim=1)  # (K,) each member's mean


# ---------------------------------------------------------------------------- the pack
def pack_key(cfg: RunConfig) -> tuple | None:
    """Runs with equal keys can train packed: same model shape, batch (and micro-batch), context,
    dtype and device. None: this run trains alone (dropout draws per-run masks; compiled models)."""
    t = cfg.train
    if cfg.model.dropout > 0 or t.compile:
        return None
    d = cfg.data  # a vocabulary of 0 comes from the data: the fields that set it (the source's, by the registry)
    src = find(d.source)
    own = tuple(getattr(getattr(d, src.section), f) for f in src.vocab_fields) if src is not None else ()
    vocab = (d.source, d.tokenizer, d.vocab_size, *own) if not cfg.model.vocab_size else ()
    return (tuple(sorted(dataclasses.asdict(cfg.model).items())), vocab, t.batch_size, cfg.micro_batch, t.context,
            t.dtype, t.device)


class Pack:
    """The members' weights stacked (``stack``: name -> (K, ...) leaf tensor) and the members'
    GPT parameters made views into it. ``restack`` after a member leaves."""

    def __init__(self, members: list[Trainer]):
        self.members: list[Trainer] = []
        self.stack: Params = {}
        self.restack(members)

    def restack(self, members: list[Trainer]) -> None:
        self.members = list(members)
        if not members:
            self.stack = {}
            return
        names = [n for n, _ in members[0].model.named_parameters()]  # tied weights appear once
        params = [dict(m.model.named_parameters()) for m in members]
        with torch.no_grad():
            self.stack = {n: torch.stack([ps[n] for ps in params]).requires_grad_() for n in names}
        for k, ps in enumerate(params):
            for n, param in ps.items():
                param.data = self.stack[n].data[k]  # the member's weights live in the stack from now on
        for m in members:
            m.packed = True
        self.names = {id(param): n for ps in params for n, param in ps.items()}  # a member's parameter -> its stack

    def update(self, batches: list[torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """One update of every member on its own batch (B, C + 1). Returns the members' summed
        micro-batch losses (K,) and their gradient norms before clipping."""
        first = self.members[0]
        cfg, model_cfg = first.cfg, first.model_cfg
        micro, accum = cfg.micro_batch, cfg.grad_accum
        batch = torch.stack(batches)  # (K, B, C + 1)
        loss_sum: Any = 0.0
        for i in range(accum):
            chunk = batch[:, i * micro:(i + 1) * micro]
            with first.autocast:
                losses = packed_loss(self.stack, model_cfg, chunk[..., :-1], chunk[..., 1:])  # (K,)
            (losses.sum() / accum).backward()  # member k's gradient is d loss_k: the members are independent
            loss_sum = loss_sum + losses.detach()
        grads = [{p: self.stack[self.names[id(p)]].grad[k] for p in m.model.parameters()}
                 for k, m in enumerate(self.members)]
        norms = clip_grad_norms_([list(g.values()) for g in grads], [m.cfg.train.grad_clip for m in self.members])
        adamw_step_([(m.optimizer, g) for m, g in zip(self.members, grads)])
        for s in self.stack.values():
            s.grad = None
        return loss_sum, list(norms)


# ---------------------------------------------------------------------------- training a pack
def train_pack(cfgs: list[RunConfig], out_dirs: list[str | Path], should_stop: Callable[[], bool] | None = None,
               make_figures: bool = True) -> list[dict[str, Any]]:
    """Train runs of one :func:`pack_key` packed, each into its run directory (as
    :func:`ihtrain.run.train.train_run` would, resuming each from its own checkpoint). A member that
    fails is recorded in its own ``status.json`` and ``error.txt`` and leaves the pack; the others
    go on. Returns each run's final status, in order."""
    dirs = [Path(d) for d in out_dirs]
    # resumed members continue with the thread count they recorded (ihtrain.run.files.resume_threads)
    current = torch.get_num_threads()
    threads = max(resume_threads(c, d, current, (checkpoint_dir(d) / LAST).is_file()) for c, d in zip(cfgs, dirs))
    if threads > 0:
        torch.set_num_threads(threads)
    with ExitStack() as stack:
        members = []
        for cfg, run_dir in zip(cfgs, dirs):
            stack.enter_context(run_lock(run_dir))
            member = _start_member(cfg, run_dir)
            if member is not None:
                members.append(member)
        for group in _by_shape(members):  # equal keys give equal shapes unless a data vocabulary surprised us
            _train_group(group, should_stop, make_figures)
    return [read_status(d) for d in dirs]


def _start_member(cfg: RunConfig, run_dir: Path) -> Trainer | None:
    """The member's Trainer (resumed), or None when it is done already or failed to start (recorded)."""
    if not start_or_record(cfg, run_dir):
        return None
    try:
        return Trainer(cfg, run_dir, progress=False)
    except Exception as e:  # noqa: BLE001 - this member fails alone
        record_exception(run_dir, e)
        return None


def _by_shape(members: list[Trainer]) -> list[list[Trainer]]:
    groups: dict[Any, list[Trainer]] = {}
    for m in members:
        groups.setdefault((repr(m.model_cfg), m.cfg.micro_batch, m.cfg.grad_accum, m.cfg.train.context), []).append(m)
    return list(groups.values())


def _train_group(members: list[Trainer], should_stop: Callable[[], bool] | None, make_figures: bool) -> None:
    """The packed loop: each member evaluates and decides for itself; those going on share an update."""
    pack = Pack(members)
    try:
        while pack.members:
            going = []
            for m in pack.members:
                ok, more = _attempt(m, m.go_on)
                if ok and more:
                    going.append(m)
                elif ok:  # reached its end (emerged or cap): it leaves the pack, the rest go on
                    _attempt(m, lambda: m.finish(make_figures))
            if going and should_stop is not None and should_stop():
                for m in going:
                    m.stop_reason = "interrupted"
                    _attempt(m, m.finish)
                return
            drawn = [(m, b) for m in going for ok, b in [_attempt(m, m.next_batch)] if ok]
            if [m for m, _ in drawn] != pack.members:
                pack.restack([m for m, _ in drawn])
            if not drawn:
                return
            losses, norms = pack.update([b for _, b in drawn])
            survivors = [m for k, m in enumerate(pack.members)
                         if _attempt(m, lambda: m.after_update(losses[k], norms[k]))[0]]
            if survivors != pack.members:
                pack.restack(survivors)
    except BaseException as e:  # the shared update failed, or an interrupt: every member left records it
        for m in pack.members:
            record_exception(m.run_dir, e)
        raise


def _attempt(m: Trainer, fn: Callable[[], Any]) -> tuple[bool, Any]:
    """(True, fn()) for member m; (False, error) when fn raised: m fails alone, recorded in its
    ``status.json`` and ``error.txt``, and must leave the pack."""
    try:
        return True, fn()
    except Exception as e:  # noqa: BLE001
        record_exception(m.run_dir, e)
        return False, e


__all__ = ["packed_loss", "pack_key", "Pack", "train_pack"]
