"""``python -m ihtrain.score``: per-head metrics over a model's training checkpoints, one series directory.

    python -m ihtrain.score EleutherAI/pythia-70m --revisions step1000 step2000 step4000 \\
        --batch-size 1024 --context 2048 --out runs/series/pythia-70m
    python -m ihtrain.score ckpts/ --batch-size 8 --context 64 --out runs/series/mine   # ckpts/step*/

A local MODEL directory holds one sub-directory per revision (each saved with save_pretrained),
or is one checkpoint itself. Rerun the same command to resume after a kill.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from ihstats.base.cli_checks import COUNT, NONNEG_INT, check_args, check_out_dir
from ihtrain.score.load import DTYPES, ScoreError, one_line, resolve_revisions
from ihtrain.score.scorer import ScoreSpec, mechanism_line, score_series
from ihstats.base.command import run_cli

RANGES = {"batch_size": COUNT, "context": COUNT, "probe_seqs": COUNT, "probe_len": NONNEG_INT,
          "probe_seed": NONNEG_INT, "threads": NONNEG_INT}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ihtrain.score", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.split("\n")[1:]))
    p.add_argument("model", help="local directory (of revision sub-directories, or one checkpoint) or Hub name")
    p.add_argument("--revisions", nargs="+", default=None,
                   help="Hub revisions (required for a Hub name), or sub-directories of a local MODEL "
                        "(default: every sub-directory holding a config.json)")
    p.add_argument("--steps", nargs="+", type=int, default=None,
                   help="training step of each revision, in --revisions order (default: from names "
                        "that are stepN or checkpoint-N as a whole; any other name needs --steps)")
    p.add_argument("--out", required=True, help="series directory to write (or resume)")
    p.add_argument("--batch-size", type=int, required=True,
                   help="B, sequences per update of the model's training (tokens = step * B * C)")
    p.add_argument("--context", type=int, required=True, help="C, the model's training context")
    p.add_argument("--dtype", choices=list(DTYPES), default="float32", help="weights' dtype (default float32)")
    p.add_argument("--device", default="auto", help="auto (cuda when present, else cpu), cpu, cuda, cuda:1 ...")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (default 0: torch's choice)")
    p.add_argument("--probe-seed", type=int, default=0, help="seed of the probe batches (default 0)")
    p.add_argument("--probe-seqs", type=int, default=100, help="repeat-probe sequences (default 100)")
    p.add_argument("--probe-len", type=int, default=0, help="repeat-probe half length n (default 0: min(50, C // 2))")
    p.add_argument("--include", nargs="+", default=None,
                   help="metric names (default: the trainer's default set; val_loss, ps_nat, ... need --val-tokens)")
    p.add_argument("--val-tokens", default=None,
                   help=".npy of held-out token ids (n, T + 1) in the model's vocabulary, for val_loss "
                        "and the in-distribution metrics; also the general induction probe's filler (else "
                        "random tokens) and, by its bigram counts, the successor control (else none)")
    p.add_argument("--ordinary-range", nargs=2, type=int, default=None, metavar=("LO", "HI"),
                   help="probe tokens from [LO, HI) (default: the tokenizer's longest run without specials)")
    p.add_argument("--sep-token", type=int, default=None, help="copy probes' separator (default: the tokenizer's sep, else LO)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = p.parse_args(argv)
    check_args(p, a, RANGES)
    inputs = [x for x in (a.model, a.val_tokens) if x and Path(x).exists()]
    check_out_dir(a.out, inputs, parser=p, kind="series")  # before any checkpoint loads
    return a


def _val_tokens(path: str | None) -> np.ndarray | None:
    if path is None:
        return None
    try:
        val = np.load(path)
    except (OSError, ValueError) as e:
        raise ScoreError(f"--val-tokens {path}: cannot read it as .npy ({e})") from None
    if val.ndim != 2 or not np.issubdtype(val.dtype, np.integer):
        raise ScoreError(f"--val-tokens {path}: expected integer token ids of shape (n, T + 1), got "
                         f"{val.dtype} {val.shape}")
    return val


def spec_from_args(a: argparse.Namespace) -> ScoreSpec:
    device = a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ScoreError(f"--device {a.device}: CUDA asked but this machine has none; pass --device cpu")
    return ScoreSpec(model=a.model, revisions=resolve_revisions(a.model, a.revisions, a.steps), out=Path(a.out),
                     batch_size=a.batch_size, context=a.context, dtype=a.dtype, device=device,
                     probe_seed=a.probe_seed, probe_seqs=a.probe_seqs, probe_len=a.probe_len,
                     include=a.include or [], val_tokens=_val_tokens(a.val_tokens),
                     ordinary_range=tuple(a.ordinary_range) if a.ordinary_range else None,
                     sep_token=a.sep_token, progress=not a.no_progress)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    try:
        spec = spec_from_args(a)
        rec = score_series(spec)
    except (ScoreError, ValueError, OSError) as e:  # OSError: an over-long name, a lost permission, ...
        print(f"error: {one_line(e, 2000)}", file=sys.stderr)
        return 2
    n = len(rec["revisions"])
    print(f"scored {n} revision{'s' if n != 1 else ''} of {rec['model']} ({rec['family']}, "
          f"{rec['n_layer']} x {rec['n_head']} heads) into {spec.out}")
    general = rec["probe"]["general"]
    print(f"general induction probe: distances {', '.join(map(str, general['distances']))}, {general['filler']} "
          f"filler; successor control: {rec['probe']['successors'] or 'none (no --val-tokens)'}")
    print(mechanism_line(spec.out, rec))
    return 0


if __name__ == "__main__":
    run_cli(main)
