"""Head ablations (top-k heads against random head sets) and in-context-learning probes.

    python -m ihtrain.ablate RUN_DIR [--score ps] [--top-k 2] [--random-sets 199] [--examples 100]
    python -m ihtrain.ablate RUN_DIR --icl [--shots 10] [--examples 50]

Heads are chosen by :mod:`ihtrain.ablate.head_sets` (the top-k rule, :func:`~ihtrain.ablate.head_sets.top_heads`:
``--top-k`` / ``--top-frac``, over the model or ``--per-layer``, by ``--score`` at the run's last
logged step) and knocked out by :mod:`ihtrain.ablate.head_ablation` (zero or mean ablation through the hook
point ``hook_z``); random sets with the top set's count per layer come from
:func:`ihstats.ablation.spec.choose_head_sets`. This module scores a run under each head set and writes
the tidy table.

**Per-example metrics** (all higher-is-better, so one ``higher_is_better=True`` in
``ihstats.ablation`` reads the whole table and a drop is a loss increase):
``repeat_logprob`` (mean log-prob of the next token over the repeat probe's second copy,
``s in [n, 2n-2]``, per sequence), ``repeat_acc`` (top-1 accuracy there, per sequence),
``val_logprob`` (mean next-token log-prob per held-out sequence from ``source.val_sample``) and,
for sources with a tokenizer, ``icl_logprob`` / ``icl_hits1`` (first answer token, per prompt);
with ``--metrics`` also ``repeat_nat_logprob`` / ``repeat_nat_acc`` (the repeat scores on the
natural repeat probe, held-out spans repeated: in distribution for every condition) and
``kv_logprob`` / ``kv_hits1`` (key -> value recall, :func:`ihtrain.ablate.icl_tasks.kv_recall_batch`).

**Excluding the shared head** (``--exclude-prev-token``): the model's top ``prev_token`` head is
left out of the top set and of every random set (drawn from the other heads, same count per
layer), so the test asks whether the top set matters beyond the circuit's shared first step.

**Previous-token set** (``--prev-token-set``): the same rule applied to the ``prev_token`` score
gives a second top set, ablated against its own same-count random sets; its rows carry the
condition ``"<condition>:prev_token"`` (a separate family for the Holm correction).

**ICL** (:func:`icl_scores`): prompts from :mod:`ihtrain.ablate.icl_tasks`; the score is the rank of the
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
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ihstats.ablation.spec import (DEFAULT_RANDOM_SETS, PREV_TOKEN_SUFFIX, allowed_heads, choose_head_sets,
                                   count_head_sets)
from ihstats.base.cli_checks import COUNT, NONNEG_INT, Range, check_args, check_out_file, record_written
from ihstats.base.contract import probe_len_of
from ihstats.base.fileio import atomic_write_text, read_table
from ihtrain.run.checkpoint import load_model
from ihtrain.config import ConfigError, RunConfig, from_dict
from ihtrain.data import build_source
from ihtrain.ablate.head_ablation import MODES, ablate_heads, head_means
from ihtrain.ablate.head_sets import HeadSet, as_head_set, format_head_set, prev_token_head, run_head_scores, top_heads
from ihtrain.ablate.icl_tasks import (KV_CONTROLS, TASK_NAMES, ICLBatch, encode_query, kv_recall_batch,  # noqa: F401
                               tokenize_prompts)
from ihtrain.model import GPT
from ihtrain.probes import make_probes, natural_repeat
from ihtrain.run.files import read_config_record
from ihstats.base.command import run_cli

KV_PAIRS = 20  # key -> value pairs per recall prompt (41 tokens; fewer when the context is short)
METRICS = ("repeat", "val", "icl", "repeat_nat", "kv")


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


def load_trained_run(run_dir: str | Path, device: str = "cpu", progress: bool = False) -> LoadedRun:
    """Final checkpoint, config and data source of a run directory (clear errors when missing)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"RUN_DIR {run_dir}: no such directory")
    cfg_path = run_dir / "config.json"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{cfg_path}: not found (is {run_dir} a run directory?)")
    loaded = load_model(run_dir, "final", device)  # final.pt must carry this run's id
    retrain = f"the run must be trained again: delete {run_dir} and rerun its training command"
    meta = read_config_record(run_dir, retrain)  # the readers' run check: an edited config is refused
    cfg = from_dict(meta["config"])
    source = build_source(cfg.data, seed=cfg.stream_seed, progress=progress, context=cfg.train.context)
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
        n = probe_len_of(run.cfg.metrics.probe_len, C)
        out["repeat_nat"] = (natural_repeat(src.val_sample(n_examples, C + 1), n), n)
    if "kv" in metrics:  # key -> value recall, answer among the demonstrations (ihtrain.ablate.icl_tasks)
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
                   n_shots: int = 10, exclude: HeadSet | None = None) -> tuple[pd.DataFrame, dict]:
    """Tidy ablation table (``ihstats.ablation`` contract, plus a ``heads`` column) and set info.

    Rows: per metric, one per example x {none, top, each random set}. ``exclude``: heads no set
    holds (``--exclude-prev-token``), the random sets drawn from the others.
    """
    model, L, H = run.model, run.model.cfg.n_layer, run.model.cfg.n_head
    top = as_head_set(top, L, H)
    ks = [len(h) for h in top]
    n_free = [len(a) for a in allowed_heads([H] * L, exclude)]
    if count_head_sets(n_free, ks) < 2:
        raise ValueError(f"--top-k: the top set {format_head_set(top)} is the only set with "
                         f"{ks} heads per layer; no random sets exist (choose fewer heads)")
    rand, exact = choose_head_sets([H] * L, top, n_random, seed=seed, exclude=exclude)
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
            "n_possible": count_head_sets(n_free, ks), "mode": mode, "step": run.step,
            "excluded": format_head_set(exclude) if exclude is not None else "-"}
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


def kv_report(run: LoadedRun, n_prompts: int = 50, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Key -> value recall under its three controls (same prompts): :func:`icl_report`'s columns
    plus ``control``, and the answer log-prob of every prompt under each (``control, prompt,
    logprob``: the paired test over prompts is ``ihstats.ablation.results.kv_true_above``'s); token
    level, so any source (no tokenizer needed)."""
    C, rows, logp = run.cfg.train.context, [], []
    for control in KV_CONTROLS:
        b = kv_recall_batch(n_prompts, min(KV_PAIRS, (C - 1) // 2), run.source.ordinary_range, control, seed)
        s = icl_scores(run.model, b)
        # the controls share the true prompts' keys: the prompts pair up across controls
        logp.append(pd.DataFrame({"control": control, "prompt": np.arange(len(b.ids)), "logprob": s["icl_logprob"]}))
        rows.append({"task": "kv_recall", "label_permuted": control == "permuted", "control": control,
                     "n_prompts": len(b.ids), "shots_mean": float(b.shots.mean()), "shots_min": int(b.shots.min()),
                     "hits1": s["icl_hits1"].mean(), "hits3": s["icl_hits3"].mean(),
                     "mean_rank": s["icl_rank"].mean(), "mean_logprob": s["icl_logprob"].mean()})
    return pd.DataFrame(rows), pd.concat(logp, ignore_index=True)


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
    p.add_argument("--exclude-prev-token", action="store_true", help="leave the model's top prev_token head out "
                   "of the top set and of every random set (the circuit's shared head; ihtrain.ablate.head_sets)")
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


def _merged(table: pd.DataFrame, out: Path) -> tuple[pd.DataFrame, int]:
    """``table`` beside the rows of other conditions an earlier ablation wrote to ``out`` (a rerun
    of a condition replaces its own rows): one run's conditions gather in one table instead of the
    last replacing the others. Returns the table and how many earlier rows it keeps."""
    if not out.is_file():
        return table, 0
    old = read_table(out, "ablation table", f"move {out} away or give another --out")
    if list(old.columns) != list(table.columns):
        raise ValueError(f"--out {out}: holds a table with other columns ({', '.join(map(str, old.columns))}); "
                         f"give another --out")
    kept = old[~old["condition"].isin(set(table["condition"]))]
    return pd.concat([kept, table], ignore_index=True), len(kept)


#: the tables ablate writes into the run directory it reads (its default ``--out``)
RUN_TABLES = ("ablation.csv", "icl.csv", "icl_kv.csv", "icl_kv_prompts.csv")


def _write(frame: pd.DataFrame, path: Path) -> None:
    atomic_write_text(path, frame.to_csv(index=False))
    record_written(path)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args, CLI_RANGES)
    out = Path(args.out or Path(args.run_dir) / ("icl.csv" if args.icl else "ablation.csv"))
    # before any work: in a run directory only its own ablation tables, never a run's own file
    check_out_file(out, [args.run_dir], parser=parser, allowed_in_run=RUN_TABLES)
    if args.icl:
        for tail in ("_kv.csv", "_kv_prompts.csv"):
            check_out_file(out.with_name(out.stem + tail), [args.run_dir], parser=parser, allowed_in_run=RUN_TABLES)
    try:
        if args.threads > 0:
            torch.set_num_threads(args.threads)
        metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
        if not metrics or set(metrics) - set(METRICS):
            raise ValueError(f"--metrics: {args.metrics!r}; allowed: {', '.join(METRICS)}")
        run = load_trained_run(args.run_dir, args.device)
        if args.icl:
            kv_out = out.with_name(out.stem + "_kv.csv")
            kv, prompts = kv_report(run, args.examples, args.seed)
            reports = [(kv, kv_out)]
            if run.tokenizer is not None:  # text tasks need one; kv recall is token level
                reports.insert(0, (icl_report(run, args.examples, args.shots, args.seed), out))
            for rep, path in reports:
                _write(rep, path)
                print(rep.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
                print(f"wrote {path}")
            _write(prompts, out.with_name(out.stem + "_kv_prompts.csv"))
            print(f"wrote {out.with_name(out.stem + '_kv_prompts.csv')} (the paired test over prompts: "
                  f"python analyses/ablation_tests.py --kv {out.with_name(out.stem + '_kv_prompts.csv')})")
            return 0
        scores = run_head_scores(args.run_dir, args.score)
        k = 2 if args.top_k is None and args.top_frac is None else args.top_k
        exclude = prev_token_head(run_head_scores(args.run_dir, "prev_token")) if args.exclude_prev_token else None
        top = top_heads(scores, k=k, frac=args.top_frac, per_layer=args.per_layer, exclude=exclude)
        table, info = ablation_table(run, top, args.random_sets, args.examples, args.seed, args.mode,
                                     metrics, args.condition, args.shots, exclude)
        if args.prev_token_set:
            prev = top_heads(run_head_scores(args.run_dir, "prev_token"), k=k, frac=args.top_frac,
                             per_layer=args.per_layer)
            t2, info2 = ablation_table(run, prev, args.random_sets, args.examples, args.seed, args.mode, metrics,
                                       f"{args.condition or run.cfg.name}{PREV_TOKEN_SUFFIX}", args.shots)
            table = pd.concat([table, t2], ignore_index=True)
            print(f"previous-token set: {info2['top']}; {info2['n_random']} random sets")
        merged, kept = _merged(table, out)
    except (FileNotFoundError, ValueError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    _write(merged, out)
    summary = (table.groupby(["metric", "ablation"])["value"].mean().unstack("ablation")
               .reindex(columns=["none", "top", "random"]))
    print(f"top set ({args.score}): {info['top']}; excluded from every set: {info['excluded']}; "
          f"{info['n_random']} random sets"
          f"{' (all others: exact)' if info['exact'] else ''} of {info['n_possible']} possible; {args.mode}-ablation")
    print(summary.to_string(float_format=lambda v: f"{v:.4f}"))
    print(f"wrote {out}{f' (kept {kept} rows of its other conditions)' if kept else ''} (analyse with: python "
          f"analyses/ablation_tests.py --table {out} --n-possible {info['n_possible']})")
    return 0


if __name__ == "__main__":
    run_cli(main)
