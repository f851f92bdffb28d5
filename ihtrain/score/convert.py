"""Our GPT as a Hugging Face ``GPT2LMHeadModel``: score it with ``python -m ihtrain.score``, load it
in ``transformers``.

    python -m ihtrain.score.convert RUN_DIR OUT_DIR [--which final|last]

Beside the weights it saves the run's tokenizer (``tokenizer.json`` and its config, loadable with
``transformers.AutoTokenizer``) when the run's source has one: the byte-level BPE a natural-text
run trained, found in the data cache by the hash ``config.json`` recorded (rebuilt from the corpus
when the cache lacks it). Markov and semi-natural runs have none: their token ids are the
vocabulary. A run directory without weights (the shipped reference runs carry logs only) is
refused in one line that says how to retrain it.

Every part of :class:`ihtrain.model.GPT` has a GPT-2 counterpart computing the same function:
learned position embeddings (``wpe``), pre-LayerNorm blocks (eps 1e-5), fused qkv and output
projections (our ``nn.Linear`` (out, in) weights transposed into GPT-2's ``Conv1D`` (in, out)),
attention scaled by ``1/sqrt(d_head)``, exact (erf) GELU (``activation_function="gelu"``; GPT-2's own
default is the tanh approximation), tied or untied unembedding (``tie_word_embeddings``). Two of our
options have no switch in GPT-2 and are written as zeros, which computes the same function:
``model.bias = false`` (GPT-2 always has biases: they are 0) and ``model.attn_only = true`` (GPT-2
always has an MLP: its output projection is 0, so the block adds nothing after attention; the file
is larger than ours by the MLP's weights).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch

from ihtrain.config import from_dict
from ihtrain.data.natural import build_corpus
from ihtrain.data.source import resolve_cache_dir
from ihtrain.data.tokenizer import EOS_TEXT, get_tokenizer
from ihstats.base.cli_checks import check_out_dir, claim_folder
from ihstats.base.fileio import atomic_write
from ihtrain.run.checkpoint import load_model
from ihtrain.model import GPT
from ihstats.base.command import run_cli


def gpt2_config(model: GPT):
    """The ``GPT2Config`` of a GPT with the same function."""
    import transformers  # heavy (seconds): only conversion needs it

    c = model.cfg
    return transformers.GPT2Config(
        vocab_size=c.vocab_size, n_positions=c.context, n_embd=c.d_model, n_layer=c.n_layer, n_head=c.n_head,
        n_inner=c.mlp_ratio * c.d_model, activation_function="gelu", resid_pdrop=c.dropout, embd_pdrop=c.dropout,
        attn_pdrop=c.dropout, layer_norm_epsilon=1e-5, tie_word_embeddings=c.tie_embeddings,
        bos_token_id=None, eos_token_id=None)


def _block_state(model: GPT, l: int) -> dict[str, torch.Tensor]:
    """GPT-2 weights of block ``l``: Linear (out, in) -> Conv1D (in, out); absent biases and an
    absent MLP are zeros (the same function)."""
    b, c = model.blocks[l], model.cfg
    zeros = torch.zeros
    bias = lambda lin, n: lin.bias.detach() if lin.bias is not None else zeros(n)  # noqa: E731
    d, d_ff = c.d_model, c.mlp_ratio * c.d_model
    out = {"ln_1.weight": b.ln_1.weight, "ln_1.bias": bias(b.ln_1, d),
           "attn.c_attn.weight": b.attn.c_attn.weight.T, "attn.c_attn.bias": bias(b.attn.c_attn, 3 * d),
           "attn.c_proj.weight": b.attn.c_proj.weight.T, "attn.c_proj.bias": bias(b.attn.c_proj, d)}
    if c.attn_only:
        out.update({"ln_2.weight": torch.ones(d), "ln_2.bias": zeros(d), "mlp.c_fc.weight": torch.zeros(d, d_ff),
                    "mlp.c_fc.bias": zeros(d_ff), "mlp.c_proj.weight": torch.zeros(d_ff, d),
                    "mlp.c_proj.bias": zeros(d)})
    else:
        out.update({"ln_2.weight": b.ln_2.weight, "ln_2.bias": bias(b.ln_2, d),
                    "mlp.c_fc.weight": b.mlp.c_fc.weight.T, "mlp.c_fc.bias": bias(b.mlp.c_fc, d_ff),
                    "mlp.c_proj.weight": b.mlp.c_proj.weight.T, "mlp.c_proj.bias": bias(b.mlp.c_proj, d)})
    return {f"transformer.h.{l}.{k}": v.detach().contiguous() for k, v in out.items()}


@torch.no_grad()
def to_gpt2(model: GPT):
    """A ``GPT2LMHeadModel`` (float32, eval mode, eager attention) computing what ``model`` computes."""
    import transformers  # heavy (seconds): only conversion needs it

    hf = transformers.GPT2LMHeadModel(gpt2_config(model))
    d = model.cfg.d_model
    state = {"transformer.wte.weight": model.wte.weight, "transformer.wpe.weight": model.wpe.weight,
             "transformer.ln_f.weight": model.ln_f.weight,
             "transformer.ln_f.bias": model.ln_f.bias if model.ln_f.bias is not None else torch.zeros(d),
             "lm_head.weight": model.lm_head.weight}
    for l in range(model.cfg.n_layer):
        state.update(_block_state(model, l))
    missing, unexpected = hf.load_state_dict({k: v.detach().float().cpu() for k, v in state.items()}, strict=False)
    # only the tied lm_head may be left to the tie (and GPT-2's non-persistent causal-mask buffers)
    left = [k for k in missing if k != "lm_head.weight" and not k.endswith(".attn.bias")]
    if left or unexpected:
        raise RuntimeError(f"GPT -> GPT-2: weights not mapped {left}, unexpected {unexpected}")
    hf.set_attn_implementation("eager")
    return hf.eval()


def export_run(run_dir: str | Path, out_dir: str | Path, which: str = "auto") -> Path:
    """Save a run's model (``load_model(run_dir, which)``) as a GPT-2 checkpoint in ``out_dir``.

    The output guard (``ihstats.base.cli_checks``, kind ``checkpoint``) refuses ``out_dir`` when it is
    or lies in the run, another run, series or grid, or holds files the package did not write. The
    files are saved into a temporary folder beside it, then each is renamed into place (atomic, and
    never through a symlink), and recorded in the folder's ``.ihlaw-written``."""
    out = check_out_dir(out_dir, [run_dir], flag="OUT_DIR", kind="checkpoint")
    if no_weights := weights_missing(Path(run_dir)):
        raise FileNotFoundError(no_weights)
    loaded = load_model(run_dir, which)
    hf = to_gpt2(loaded.model)
    claim_folder(out)
    _save_into(out, hf.save_pretrained)
    return out


def _save_into(out: Path, save) -> None:
    """``save(folder)`` into a temporary folder beside ``out``, then each file renamed into ``out``
    atomically (never through a symlink) and recorded in its ``.ihlaw-written``."""
    with tempfile.TemporaryDirectory(dir=out, prefix=".convert.") as tmp:
        save(tmp)
        for f in sorted(Path(tmp).iterdir()):
            atomic_write(out / f.name, lambda dst, src=f: shutil.copyfile(src, dst))


def weights_missing(run_dir: Path) -> str | None:
    """Why ``run_dir`` has no weights to convert (a run of logs only: no ``checkpoints/``), with the
    command that trains it again; None when it has a checkpoints folder."""
    if not (run_dir / "config.json").is_file() or (run_dir / "checkpoints").is_dir():
        return None
    meta = json.loads((run_dir / "config.json").read_text())
    name, run_id = (meta.get("config") or {}).get("name", ""), meta.get("run_id", "")
    grid = run_dir.parent / "grid.json"
    if grid.is_file():
        cmd = f"python -m ihtrain.grid --preset {json.loads(grid.read_text()).get('name', name)} --only {run_id}"
    else:
        cmd = f"python -m ihtrain.train --preset {name}"
    return (f"{run_dir}: no weights here (no checkpoints/ folder): shipped runs carry logs only, no weights; "
            f"retrain with `{cmd}` (--dry-run / --print-config show its run id) and convert that run directory")


def run_tokenizer(run_dir: str | Path):
    """The tokenizer a run trained with, or ``(None, why)``: ``(tokenizer, "")`` for a natural-text
    run (its BPE from the data cache, else rebuilt from the corpus; checked against the hash in
    ``config.json``)."""
    meta = json.loads((Path(run_dir) / "config.json").read_text())
    fp = meta.get("data_fingerprint") or {}
    info = fp.get("tokenizer")
    if not info:
        return None, f"its source ({fp.get('kind') or fp.get('source', '?')}) has no text tokenizer: token ids are the vocabulary"
    data = from_dict(meta["config"]).data
    if data.tokenizer != "bpe":
        return None, f"it used {data.tokenizer!r}, whose ids ihtrain remaps (eos 0, sep 1); use that tokenizer's own files"
    corpus = build_corpus(data.source, data.max_corpus_chars, resolve_cache_dir(data.cache_dir))
    tok = get_tokenizer("bpe", corpus.docs, corpus.sha256, data.vocab_size, resolve_cache_dir(data.cache_dir))
    if tok.hash != info.get("sha256"):
        return None, (f"the BPE built now ({tok.hash[:12]}) is not the one the run recorded "
                      f"({str(info.get('sha256'))[:12]}): the corpus or the tokenizers version differs")
    return tok, ""


def save_tokenizer(tok, out_dir: Path) -> None:
    """Write ``tok`` where ``transformers.AutoTokenizer.from_pretrained(out_dir)`` finds it."""
    import transformers  # heavy (seconds): only conversion needs it

    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok._tok, eos_token=EOS_TEXT)
    _save_into(Path(out_dir), fast.save_pretrained)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ihtrain.score.convert",
                                description="Save a run's model as a Hugging Face GPT-2 checkpoint.")
    p.add_argument("run_dir", help="run directory (checkpoints/final.pt or last.pt)")
    p.add_argument("out_dir", help="directory to write (config.json + model.safetensors)")
    p.add_argument("--which", choices=["auto", "final", "last"], default="auto", help="checkpoint (default auto)")
    a = p.parse_args(argv)
    try:
        out = export_run(a.run_dir, a.out_dir, a.which)
        tok, why = run_tokenizer(a.run_dir)
        if tok is not None:
            save_tokenizer(tok, out)
    except (OSError, ValueError) as e:  # OutputPathError included
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    said = ("and its tokenizer (transformers.AutoTokenizer)" if tok is not None else f"without a tokenizer: {why}")
    print(f"wrote {out}: the model in GPT-2 format (transformers.AutoModelForCausalLM) {said}")
    return 0


if __name__ == "__main__":
    run_cli(main)
