"""Head ablations (top-k heads against random head sets) and in-context-learning probes.

    python -m ihtrain.ablate RUN_DIR [--score ps] [--top-k 2] [--random-sets 199] [--examples 100]
    python -m ihtrain.ablate RUN_DIR --icl [--shots 10] [--examples 50]

**Ablation.** :func:`ablate_heads` is a context manager that replaces chosen heads' outputs
``o_h(s)`` by zero (``mode="zero"``) or by their mean over reference tokens (``mode="mean"``)
*before* ``W_O`` sums the heads: a hook on the model's hook point ``blocks.{l}.attn.hook_z``
(B, T, H, d_head), the same mechanism the metric cache and user code use
(:func:`ablation_hooks` gives the ``(name, fn)`` pairs). Both forward paths go through
``hook_z``, so ``model(idx)`` and ``run_with_cache`` see the ablation (the cache's ``head_out``
shows the ablated heads). With no heads chosen no hook is attached: bit-identical.

**Head sets** are one tuple of head indices per layer, ``((h, ...), (h, ...))``, as
:func:`ihstats.permutation.choose_head_sets` returns them; random sets come from that function, so
they have the top set's count per layer. Top-k rule (:func:`top_heads`), by a per-head score at the
run's last logged step (default ``ps`` from ``metrics.parquet``), ties to the lower (layer, head):

- ``--top-k K``: the K highest-scoring heads over the whole model;
- ``--top-k K --per-layer``: the K highest in every layer;
- ``--top-frac F``: ``max(1, round_half_up(F * L * H))`` heads over the whole model;
- ``--top-frac F --per-layer``: ``max(1, round_half_up(F * H))`` per layer: at least one per layer
  (so Sabry and Belz's "top 2% per layer" with 12-24 heads per layer is one head per layer).

**Per-example metrics** (all higher-is-better, so one ``higher_is_better=True`` in
``ihstats.permutation`` reads the whole table and a drop is a loss increase):
``repeat_logprob`` (mean log-prob of the next token over the repeat probe's second copy,
``s in [n, 2n-2]``, per sequence), ``repeat_acc`` (top-1 accuracy there, per sequence),
``val_logprob`` (mean next-token log-prob per held-out sequence from ``source.val_sample``) and,
for sources with a tokenizer, ``icl_logprob`` / ``icl_hits1`` (first answer token, per prompt);
with ``--metrics`` also ``repeat_nat_logprob`` / ``repeat_nat_acc`` (the repeat scores on the
natural repeat probe, held-out spans repeated: in distribution for every condition) and
``kv_logprob`` / ``kv_hits1`` (key -> value recall, :func:`ihtrain.icl_tasks.kv_recall_batch`).

**Previous-token set** (``--prev-token-set``): the same rule applied to the ``prev_token`` score
gives a second top set, ablated against its own same-count random sets; its rows carry the
condition ``"<condition>:prev_token"`` (a separate family for the Holm correction).

**ICL** (:func:`icl_scores`): prompts from :mod:`ihtrain.icl_tasks`; the score is the rank of the
answer's first token among the vocabulary logits at the last prompt position (HITS@k: rank < k).
The answer is tokenised in running text (``prompt + " " + answer``); a small BPE that keeps the
space as its own token gets that token appended to the prompt, and the first token carrying a
character of the answer is scored (:func:`encode_query`).
Prompts longer than the training context lose their earliest demonstrations until they fit; the
shots actually used are reported. ``--icl`` also writes key -> value recall under its
``true`` / ``permuted`` / ``absent`` controls beside the report (``icl_kv.csv`` for ``icl.csv``;
column ``control``; token level, so also for sources without a tokenizer).
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ihstats.cli_checks import COUNT, NONNEG_INT, Range, check_args
from ihstats.permutation import DEFAULT_RANDOM_SETS, choose_head_sets, count_head_sets
from ihtrain.checkpoint import load_model
from ihtrain.config import ConfigError, RunConfig, from_dict
from ihtrain.data import build_source
from ihstats.fileio import UnreadableFile, read_json, read_parquet
from ihtrain.icl_tasks import (KV_CONTROLS, TASK_NAMES, ICLBatch, encode_query, kv_recall_batch,  # noqa: F401
                               tokenize_prompts)
from ihtrain.model import GPT, HookFn
from ihtrain.probes import MAX_PROBE_LEN, make_probes, natural_repeat

HeadSet = tuple[tuple[int, ...], ...]  # one tuple of head indices per layer
KV_PAIRS = 20  # key -> value pairs per recall prompt (41 tokens; fewer when the context is short)
MODES = ("zero", "mean")
METRICS = ("repeat", "val", "icl", "repeat_nat", "kv")


# ------------------------------------------------------------------------------ head sets
def as_head_set(heads, n_layer: int, n_head: int) -> HeadSet:
    """Normalise ``heads`` to one sorted tuple per layer.

    Accepts a per-layer sequence of head-index sequences (``[[0], [1, 3]]``) or a dict
    ``{layer: [heads]}`` (``(layer, head)`` pairs: :func:`pairs_to_head_set`). Raises ValueError
    naming the bad layer/head.
    """
    if isinstance(heads, dict):
        per = [tuple(heads.get(l, ())) for l in range(n_layer)]
        extra = set(heads) - set(range(n_layer))
        if extra:
            raise ValueError(f"heads: layers {sorted(extra)} out of range [0, {n_layer})")
    else:
        per = [tuple(h) for h in heads]
        if len(per) != n_layer:
            raise ValueError(f"heads: need one entry per layer ({n_layer}), got {len(per)}")
    for l, hs in enumerate(per):
        bad = [h for h in hs if not 0 <= int(h) < n_head]
        if bad:
            raise ValueError(f"heads: layer {l} heads {bad} out of range [0, {n_head})")
    return tuple(tuple(sorted({int(h) for h in hs})) for hs in per)


def pairs_to_head_set(pairs: Iterable[tuple[int, int]], n_layer: int, n_head: int) -> HeadSet:
    """``[(layer, head), ...]`` -> head set."""
    d: dict[int, list[int]] = {}
    for l, h in pairs:
        d.setdefault(int(l), []).append(int(h))
    return as_head_set(d, n_layer, n_head)


def format_head_set(heads: HeadSet) -> str:
    """``((0,), (1, 3))`` -> ``"L0H0 L1H1 L1H3"`` (the ``heads`` column of the table)."""
    return " ".join(f"L{l}H{h}" for l, hs in enumerate(heads) for h in hs) or "-"


def top_heads(scores: np.ndarray, k: int | None = None, frac: float | None = None,
              per_layer: bool = False) -> HeadSet:
    """Highest-scoring heads of an (L, H) score array; rounding rules in the module docstring."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"scores: expected an (n_layers, n_heads) array, got shape {s.shape}")
    L, H = s.shape
    if (k is None) == (frac is None):
        raise ValueError("top_heads: give exactly one of k (--top-k) or frac (--top-frac)")
    if frac is not None:
        if not 0 < frac <= 1:
            raise ValueError(f"--top-frac: must lie in (0, 1], got {frac}")
        k = max(1, int(np.floor(frac * (H if per_layer else L * H) + 0.5)))
    assert k is not None
    limit = H if per_layer else L * H
    if not 1 <= k <= limit:
        where = f"the {H} heads per layer" if per_layer else f"the {L * H} heads ({L} layers x {H})"
        raise ValueError(f"--top-k: must be in [1, {limit}] ({where}), got {k}")
    if per_layer:
        # stable sort of -score: ties go to the lower head index
        return tuple(tuple(sorted(np.argsort(-s[l], kind="stable")[:k].tolist())) for l in range(L))
    flat = np.argsort(-s.ravel(), kind="stable")[:k]
    return pairs_to_head_set([divmod(int(i), H) for i in flat], L, H)


def run_head_scores(run_dir: str | Path, score: str = "ps", step: int | None = None) -> np.ndarray:
    """(L, H) per-head ``score`` at ``step`` (default: the last logged step) from metrics.parquet."""
    path = Path(run_dir) / "metrics.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (is {run_dir} a run directory?)")
    m = read_parquet(path, what="metric log", remedy=f"the run's logs are damaged: train {run_dir} again")
    per_head = sorted(m.loc[m["head"] >= 0, "metric"].unique())
    if score not in per_head:
        why = ("is a whole-model metric (no per-head values), so it cannot rank heads"
               if score in set(m["metric"]) else f"is not in {path}")
        raise ValueError(f"--score {score!r} {why}; per-head metrics there: {', '.join(per_head)}")
    m = m[(m["metric"] == score) & (m["head"] >= 0)]
    step = int(m["step"].max()) if step is None else int(step)
    m = m[m["step"] == step]
    if m.empty:
        raise ValueError(f"--step: {score!r} was not logged at step {step}")
    L, H = int(m["layer"].max()) + 1, int(m["head"].max()) + 1
    out = np.full((L, H), np.nan)
    out[m["layer"].to_numpy(), m["head"].to_numpy()] = m["value"].to_numpy()
    return out


# ------------------------------------------------------------------------------ ablation hooks
@torch.no_grad()
def head_means(model: GPT, tokens: torch.Tensor) -> torch.Tensor:
    """Mean of each head's output over batch and positions of ``tokens``: (L, H, d_head)."""
    _, cache = model.run_with_cache(tokens, logits=False)
    return cache.head_out.float().mean(dim=(1, 2))  # (L, B, T, H, dh) -> (L, H, dh)


def ablation_hooks(model: GPT, heads: HeadSet, mode: str = "zero",
                   means: torch.Tensor | None = None) -> list[tuple[str, HookFn]]:
    """``(name, fn)`` hooks on ``blocks.{l}.attn.hook_z`` that set the heads in ``heads`` to zero
    (or to ``means[l, h]``): one hook per layer with heads chosen, none elsewhere. For
    :meth:`GPT.hooks` / :meth:`GPT.run_with_hooks`, or use :func:`ablate_heads`.

    ``means`` (L, H, d_head) is required for ``mode="mean"`` (see :func:`head_means`).
    """
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} not in {MODES}")
    L, H = model.cfg.n_layer, model.cfg.n_head
    heads = as_head_set(heads, L, H)
    if mode == "mean" and (means is None or tuple(means.shape[:2]) != (L, H)):
        raise ValueError(f"means: mode='mean' needs an (L={L}, H={H}, d_head) tensor from head_means()")

    def make_hook(layer: int, idx: list[int]) -> HookFn:
        def hook(z: torch.Tensor, point) -> torch.Tensor:  # z (B, T, H, dh)
            z = z.clone()  # never edit the model's tensor in place (autograd, and a cache may hold it)
            if mode == "zero":
                z[:, :, idx] = 0.0
            else:
                z[:, :, idx] = means[layer, idx].to(z.dtype)  # (k, dh) broadcast over B, T
            return z
        return hook

    # nothing to ablate in a layer: no hook, so its output stays bit-identical
    return [(f"blocks.{l}.attn.hook_z", make_hook(l, list(hs))) for l, hs in enumerate(heads) if hs]


@contextmanager
def ablate_heads(model: GPT, heads: HeadSet, mode: str = "zero", means: torch.Tensor | None = None) -> Iterator[GPT]:
    """Within the block, the heads in ``heads`` write zero (or their mean) through ``W_O``
    (the hooks of :func:`ablation_hooks`, removed on exit)."""
    with model.hooks(ablation_hooks(model, heads, mode, means)):
        yield model


# ------------------------------------------------------------------------------ per-example metrics
@torch.no_grad()
def _next_token_logprobs(model: GPT, tokens: torch.Tensor, chunk: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """tokens (N, T+1) -> log-prob of each next token (N, T) and whether it was the argmax (N, T)."""
    lps, hits = [], []
    for i in range(0, tokens.shape[0], chunk):
        x, y = tokens[i:i + chunk, :-1], tokens[i:i + chunk, 1:]
        logits, _ = model(x)  # (b, T, V)
        logp = F.log_softmax(logits.float(), dim=-1)
        lps.append(logp.gather(-1, y.unsqueeze(-1)).squeeze(-1))  # (b, T)
        hits.append((logits.argmax(-1) == y).float())
    return torch.cat(lps), torch.cat(hits)


def repeat_scores(model: GPT, repeat: torch.Tensor, n: int) -> dict[str, np.ndarray]:
    """Per sequence of the repeat probe (N, 2n): mean log-prob and accuracy at s in [n, 2n-2]."""
    lp, hit = _next_token_logprobs(model, repeat)  # (N, 2n-1): position s predicts s + 1
    return {"repeat_logprob": lp[:, n:2 * n - 1].mean(1).cpu().numpy(),
            "repeat_acc": hit[:, n:2 * n - 1].mean(1).cpu().numpy()}


def val_scores(model: GPT, val: torch.Tensor) -> dict[str, np.ndarray]:
    """Per held-out sequence (N, T+1): mean next-token log-prob."""
    return {"val_logprob": _next_token_logprobs(model, val)[0].mean(1).cpu().numpy()}


@torch.no_grad()
def icl_scores(model, batch: ICLBatch) -> dict[str, np.ndarray]:
    """Per prompt: ``icl_rank`` (logits strictly above the answer's), ``icl_logprob``, ``icl_hits1/3``.

    Prompts of equal length run together (no padding: learned positions would shift).
    """
    device = next(model.parameters()).device
    P = len(batch.ids)
    rank, logprob = np.zeros(P), np.zeros(P)
    lengths = np.array([len(x) for x in batch.ids])
    for T in np.unique(lengths):
        idx = np.flatnonzero(lengths == T)
        x = torch.tensor([batch.ids[i] for i in idx], dtype=torch.long, device=device)  # (b, T)
        logits, _ = model(x)
        last = logits[:, -1].float()  # (b, V)
        tgt = torch.as_tensor(batch.answer[idx], device=device)
        t_logit = last.gather(-1, tgt[:, None])  # (b, 1)
        rank[idx] = (last > t_logit).sum(-1).cpu().numpy()
        logprob[idx] = F.log_softmax(last, -1).gather(-1, tgt[:, None]).squeeze(-1).cpu().numpy()
    return {"icl_rank": rank, "icl_logprob": logprob, "icl_hits1": (rank < 1).astype(float),
            "icl_hits3": (rank < 3).astype(float)}


# ------------------------------------------------------------------------------ runs
@dataclass
class LoadedRun:
    model: GPT
    cfg: RunConfig
    source: object
    step: int

    @property
    def tokenizer(self):
        """The run's tokenizer (natural and Bi-Induct sources), else None."""
        tok = getattr(self.source, "tokenizer", None)
        return tok if tok is not None else getattr(getattr(self.source, "base", None), "tokenizer", None)


def load_run(run_dir: str | Path, device: str = "cpu", progress: bool = False) -> LoadedRun:
    """Final checkpoint, config and data source of a run directory (clear errors when missing)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"RUN_DIR {run_dir}: no such directory")
    cfg_path = run_dir / "config.json"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{cfg_path}: not found (is {run_dir} a run directory?)")
    loaded = load_model(run_dir, "final", device)
    retrain = f"the run must be trained again: delete {run_dir} and rerun its training command"
    meta = read_json(cfg_path, "run's config", retrain)
    if "config" not in meta:
        raise UnreadableFile(cfg_path, "has no 'config' key (not written by ihtrain.train)", retrain)
    cfg = from_dict(meta["config"])
    source = build_source(cfg.data, seed=cfg.seed, progress=progress, context=cfg.train.context)
    return LoadedRun(loaded.model, cfg, source, loaded.step)


def example_inputs(run: LoadedRun, n_examples: int, seed: int, metrics: Sequence[str] = METRICS,
                   n_shots: int = 10, tasks: Sequence[str] = TASK_NAMES) -> dict[str, object]:
    """The fixed inputs every head set is scored on (same ids under every set)."""
    C, src = run.cfg.train.context, run.source
    out: dict[str, object] = {}
    if "repeat" in metrics:
        pr = make_probes(src.vocab_size, C, seed=seed, ordinary_range=src.ordinary_range,
                         sep_token=src.special_tokens.get("sep"), n_seqs=n_examples,
                         n=run.cfg.metrics.probe_len)
        out["repeat"] = (pr.repeat, pr.n)
    if "val" in metrics:
        out["val"] = torch.as_tensor(src.val_sample(n_examples, C + 1), dtype=torch.long)
    if "repeat_nat" in metrics:  # in distribution for every condition (ihtrain.probes.natural_repeat)
        n = run.cfg.metrics.probe_len or min(MAX_PROBE_LEN, C // 2)
        out["repeat_nat"] = (natural_repeat(src.val_sample(n_examples, C + 1), n), n)
    if "kv" in metrics:  # key -> value recall, answer among the demonstrations (ihtrain.icl_tasks)
        out["kv"] = kv_recall_batch(n_examples, min(KV_PAIRS, (C - 1) // 2), src.ordinary_range, "true", seed)
    if "icl" in metrics:
        if run.tokenizer is None:
            print(f"note: ICL metrics skipped: data.source={run.cfg.data.source!r} has no tokenizer",
                  file=sys.stderr)
        else:
            out["icl"] = [tokenize_prompts(run.tokenizer, t, n_shots, n_examples, C, seed) for t in tasks]
    return out


def score_examples(model: GPT, inputs: dict[str, object]) -> dict[str, tuple[list[str], np.ndarray]]:
    """metric -> (example ids, values) under whatever ablation is active."""
    res: dict[str, tuple[list[str], np.ndarray]] = {}
    if "repeat" in inputs:
        rep, n = inputs["repeat"]  # type: ignore[misc]
        ids = [f"seq{i}" for i in range(rep.shape[0])]
        res.update({k: (ids, v) for k, v in repeat_scores(model, rep, n).items()})
    if "repeat_nat" in inputs:
        rep, n = inputs["repeat_nat"]  # type: ignore[misc]
        ids = [f"nat{i}" for i in range(rep.shape[0])]
        res.update({k.replace("repeat", "repeat_nat"): (ids, v) for k, v in repeat_scores(model, rep, n).items()})
    if "kv" in inputs:
        s = icl_scores(model, inputs["kv"])  # type: ignore[arg-type]
        ids = [f"kv{i}" for i in range(len(s["icl_logprob"]))]
        res.update({"kv_logprob": (ids, s["icl_logprob"]), "kv_hits1": (ids, s["icl_hits1"])})
    if "val" in inputs:
        val = inputs["val"]
        ids = [f"val{i}" for i in range(val.shape[0])]  # type: ignore[union-attr]
        res.update({k: (ids, v) for k, v in val_scores(model, val).items()})  # type: ignore[arg-type]
    if "icl" in inputs:
        ids, lp, h1 = [], [], []
        for b in inputs["icl"]:  # type: ignore[union-attr]
            s = icl_scores(model, b)
            ids += [f"{b.task}:{i}" for i in range(len(b.ids))]
            lp.append(s["icl_logprob"])
            h1.append(s["icl_hits1"])
        res["icl_logprob"] = (ids, np.concatenate(lp))
        res["icl_hits1"] = (ids, np.concatenate(h1))
    return res


def ablation_table(run: LoadedRun, top: HeadSet, n_random: int = 50, n_examples: int = 100, seed: int = 0,
                   mode: str = "zero", metrics: Sequence[str] = METRICS, condition: str | None = None,
                   n_shots: int = 10) -> tuple[pd.DataFrame, dict]:
    """Tidy ablation table (``ihstats.permutation`` contract, plus a ``heads`` column) and set info.

    Rows: per metric, one per example x {none, top, each random set}.
    """
    model, L, H = run.model, run.model.cfg.n_layer, run.model.cfg.n_head
    top = as_head_set(top, L, H)
    ks = [len(h) for h in top]
    if count_head_sets([H] * L, ks) < 2:
        raise ValueError(f"--top-k: the top set {format_head_set(top)} is the only set with "
                         f"{ks} heads per layer; no random sets exist (choose fewer heads)")
    rand, exact = choose_head_sets([H] * L, top, n_random, seed=seed)
    inputs = example_inputs(run, n_examples, seed, metrics, n_shots)
    means = None
    if mode == "mean":  # reference activations: held-out text, never the probe being scored
        ref = torch.as_tensor(run.source.val_sample(32, run.cfg.train.context), dtype=torch.long)
        means = head_means(model, ref.to(next(model.parameters()).device))
    condition = condition or run.cfg.name
    sets = [("none", "none", tuple(() for _ in range(L))), ("top", "top", top)]
    sets += [("random", f"r{i:03d}", s) for i, s in enumerate(rand)]
    frames = []
    for ablation, set_id, hs in sets:
        with ablate_heads(model, hs, mode, means):
            scores = score_examples(model, inputs)
        for metric, (ids, v) in scores.items():
            frames.append(pd.DataFrame({"condition": condition, "example": ids, "ablation": ablation,
                                        "set_id": set_id, "value": v.astype(np.float64), "metric": metric,
                                        "heads": format_head_set(hs)}))
    info = {"top": format_head_set(top), "k_per_layer": ks, "n_random": len(rand), "exact": exact,
            "n_possible": count_head_sets([H] * L, ks), "mode": mode, "step": run.step}
    return pd.concat(frames, ignore_index=True), info


def icl_report(run: LoadedRun, n_prompts: int = 50, n_shots: int = 10, seed: int = 0,
               tasks: Sequence[str] = TASK_NAMES) -> pd.DataFrame:
    """HITS@1/3 and mean rank per task, with and without the label permutation."""
    if run.tokenizer is None:
        raise ValueError(f"--icl: data.source={run.cfg.data.source!r} has no tokenizer; ICL probes need a "
                         "natural source (builtin, text:, hf:, or Bi-Induct over one)")
    rows = []
    for task in tasks:
        for permuted in (False, True):
            b = tokenize_prompts(run.tokenizer, task, n_shots, n_prompts, run.cfg.train.context, seed, permuted)
            s = icl_scores(run.model, b)
            rows.append({"task": task, "label_permuted": permuted, "n_prompts": len(b.ids),
                         "shots_mean": float(b.shots.mean()), "shots_min": int(b.shots.min()),
                         "hits1": s["icl_hits1"].mean(), "hits3": s["icl_hits3"].mean(),
                         "mean_rank": s["icl_rank"].mean(), "mean_logprob": s["icl_logprob"].mean()})
    return pd.DataFrame(rows)


def kv_report(run: LoadedRun, n_prompts: int = 50, seed: int = 0) -> pd.DataFrame:
    """Key -> value recall under its three controls (same prompts): :func:`icl_report`'s columns
    plus ``control``; token level, so any source (no tokenizer needed)."""
    C, rows = run.cfg.train.context, []
    for control in KV_CONTROLS:
        b = kv_recall_batch(n_prompts, min(KV_PAIRS, (C - 1) // 2), run.source.ordinary_range, control, seed)
        s = icl_scores(run.model, b)
        rows.append({"task": "kv_recall", "label_permuted": control == "permuted", "control": control,
                     "n_prompts": len(b.ids), "shots_mean": float(b.shots.mean()), "shots_min": int(b.shots.min()),
                     "hits1": s["icl_hits1"].mean(), "hits3": s["icl_hits3"].mean(),
                     "mean_rank": s["icl_rank"].mean(), "mean_logprob": s["icl_logprob"].mean()})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ CLI
CLI_RANGES = {"top_k": COUNT, "top_frac": Range(0, 1, lo_open=True), "random_sets": COUNT, "examples": COUNT,
              "shots": COUNT, "seed": NONNEG_INT, "threads": Range(0, integer=True, note="0: torch's default")}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ihtrain.ablate", description="Ablate a run's top-k heads "
                                "against random head sets (tidy table for analyses/ablation_tests.py), or "
                                "probe its in-context learning (--icl).")
    p.add_argument("run_dir", metavar="RUN_DIR", help="run directory with config.json and checkpoints/final.pt")
    p.add_argument("--score", default="ps", help="per-head metric in metrics.parquet that ranks heads (default ps)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--top-k", type=int, default=None, help="ablate the K top heads (default 2; per layer "
                   "with --per-layer)")
    g.add_argument("--top-frac", type=float, default=None, help="ablate max(1, round(F x heads)) top heads")
    p.add_argument("--per-layer", action="store_true", help="apply --top-k/--top-frac within each layer")
    p.add_argument("--prev-token-set", action="store_true", help="also ablate the top set by the prev_token "
                   "score (rows with condition '<condition>:prev_token')")
    p.add_argument("--random-sets", type=int, default=DEFAULT_RANDOM_SETS, help="random head sets with the top "
                   f"set's count per layer (default {DEFAULT_RANDOM_SETS}: smallest p 0.005, enough for Holm over up "
                   "to 10 conditions; all of them if fewer exist)")
    p.add_argument("--examples", type=int, default=100, help="examples per metric (ICL: prompts per task)")
    p.add_argument("--metrics", default="repeat,val,icl", help="comma list of repeat, val, icl, repeat_nat, kv")
    p.add_argument("--mode", choices=MODES, default="zero", help="zero- or mean-ablation (default zero)")
    p.add_argument("--condition", default=None, help="condition label in the table (default: the run's name)")
    p.add_argument("--icl", action="store_true", help="only the ICL probe: HITS@1/3 per task, +- label permutation")
    p.add_argument("--shots", type=int, default=10, help="ICL demonstrations per prompt (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of probes, prompts and random sets")
    p.add_argument("--device", default="cpu", help="torch device (default cpu)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--out", default=None, help="output CSV (default RUN_DIR/ablation.csv or RUN_DIR/icl.csv)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args, CLI_RANGES)
    out_csv = Path(args.out) if args.out else None
    if out_csv is not None and (out_csv.is_dir() or any(p.is_file() for p in out_csv.parents)):
        parser.error(f"--out {out_csv}: give a CSV file path (it is a folder, or lies under a file)")
    try:
        if args.threads > 0:
            torch.set_num_threads(args.threads)
        metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
        if not metrics or set(metrics) - set(METRICS):
            raise ValueError(f"--metrics: {args.metrics!r}; allowed: {', '.join(METRICS)}")
        run = load_run(args.run_dir, args.device)
        if args.icl:
            out = Path(args.out or Path(args.run_dir) / "icl.csv")
            kv_out = out.with_name(out.stem + "_kv.csv")
            reports = [(kv_report(run, args.examples, args.seed), kv_out)]
            if run.tokenizer is not None:  # text tasks need one; kv recall is token level
                reports.insert(0, (icl_report(run, args.examples, args.shots, args.seed), out))
            for rep, path in reports:
                rep.to_csv(path, index=False)
                print(rep.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
                print(f"wrote {path}")
            return 0
        scores = run_head_scores(args.run_dir, args.score)
        k = 2 if args.top_k is None and args.top_frac is None else args.top_k
        top = top_heads(scores, k=k, frac=args.top_frac, per_layer=args.per_layer)
        table, info = ablation_table(run, top, args.random_sets, args.examples, args.seed, args.mode,
                                     metrics, args.condition, args.shots)
        if args.prev_token_set:
            prev = top_heads(run_head_scores(args.run_dir, "prev_token"), k=k, frac=args.top_frac,
                             per_layer=args.per_layer)
            t2, info2 = ablation_table(run, prev, args.random_sets, args.examples, args.seed, args.mode, metrics,
                                       f"{args.condition or run.cfg.name}:prev_token", args.shots)
            table = pd.concat([table, t2], ignore_index=True)
            print(f"previous-token set: {info2['top']}; {info2['n_random']} random sets")
    except (FileNotFoundError, ValueError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out or Path(args.run_dir) / "ablation.csv")
    table.to_csv(out, index=False)
    summary = (table.groupby(["metric", "ablation"])["value"].mean().unstack("ablation")
               .reindex(columns=["none", "top", "random"]))
    print(f"top set ({args.score}): {info['top']}; {info['n_random']} random sets"
          f"{' (all others: exact)' if info['exact'] else ''} of {info['n_possible']} possible; {args.mode}-ablation")
    print(summary.to_string(float_format=lambda v: f"{v:.4f}"))
    print(f"wrote {out} (analyse with: python analyses/ablation_tests.py --table {out} "
          f"--n-possible {info['n_possible']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
