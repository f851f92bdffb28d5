"""Our GPT exported to Hugging Face GPT-2 scores identically through python -m ihtrain.score and
through our own metrics (issue 55): every architectural option of ours has a GPT-2 form."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from ihtrain.config import ModelConfig
from ihtrain.data.successors import bigram_successors
from ihtrain.metrics import evaluate, to_rows
from ihtrain.model import GPT
from ihtrain.probes import make_probes
from ihtrain.score.cli import main
from ihtrain.score.convert import to_gpt2

pytest.importorskip("transformers")
V, C, LO = 300, 64, 3  # probe tokens from [3, 300), as a source with 3 specials
OPTIONS = [{}, {"bias": False, "tie_embeddings": False}, {"attn_only": True, "n_layer": 3}]


def _gpt(seed: int, **kw) -> GPT:
    cfg = ModelConfig(**{"n_layer": 2, "n_head": 4, "d_model": 32, "vocab_size": V, "context": C, **kw})
    return GPT(cfg, seed=seed).eval()


@pytest.mark.parametrize("options", OPTIONS, ids=["default", "no-bias-untied", "attn-only"])
def test_converted_gpt_computes_the_same_logits(options):
    ours = _gpt(1, **options)
    hf = to_gpt2(ours)
    x = torch.randint(0, V, (3, C))
    torch.testing.assert_close(hf(x).logits, ours(x)[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("options", OPTIONS, ids=["default", "no-bias-untied", "attn-only"])
def test_scoring_the_export_matches_our_metrics(options, tmp_path):
    models = {s: _gpt(s, **options) for s in (1, 2, 3)}  # three "revisions"
    for s, g in models.items():
        to_gpt2(g).save_pretrained(tmp_path / "ckpt" / f"step{s}")
    out = tmp_path / "series"
    argv = [str(tmp_path / "ckpt"), "--out", str(out), "--batch-size", "4", "--context", str(C),
            "--probe-seqs", "16", "--probe-seed", "7", "--ordinary-range", str(LO), str(V), "--threads", "1",
            "--no-progress"]
    assert main(argv) == 0
    scored = pd.read_parquet(out / "metrics.parquet")
    probes = make_probes(V, C, 7, (LO, V), None, n_seqs=16)
    ours = pd.concat([to_rows(evaluate(g, probes), s, s * 4 * C) for s, g in models.items()], ignore_index=True)
    key = ["step", "tokens", "metric", "layer", "head"]
    pd.testing.assert_frame_equal(scored[key], ours[key], check_dtype=False)
    rank = ours["metric"] == "ar_rank"  # a mean of ranks in the hundreds, summed in float32: relative
    np.testing.assert_allclose(scored["value"][~rank], ours["value"][~rank], atol=1e-5, rtol=0)
    np.testing.assert_allclose(scored["value"][rank], ours["value"][rank], rtol=1e-5)


def test_every_metric_with_held_out_tokens_matches(tmp_path):
    """--include every metric and --val-tokens: val_loss, ps_nat, icl_token_index and the copy
    log-probs through the command equal our own."""
    from ihtrain.metrics import NEEDS_SUCCESSORS, REGISTRY

    g = _gpt(4)
    to_gpt2(g).save_pretrained(tmp_path / "ckpt" / "step5")
    val = np.random.default_rng(0).integers(LO, V, size=(6, 33))
    np.save(tmp_path / "val.npy", val)
    out = tmp_path / "series"
    assert main([str(tmp_path / "ckpt"), "--out", str(out), "--batch-size", "2", "--context", "32",
                 "--probe-seqs", "8", "--ordinary-range", str(LO), str(V), "--val-tokens", str(tmp_path / "val.npy"),
                 "--include", *REGISTRY, "--threads", "1", "--no-progress"]) == 0
    scored = pd.read_parquet(out / "metrics.parquet")
    # the scorer fills the general probe with the held-out text and counts its bigrams for the successor control
    probes = make_probes(V, 32, 0, (LO, V), None, n_seqs=8, filler=val)
    ours = to_rows(evaluate(g, probes, val, include=list(REGISTRY), successors=bigram_successors(val, V)), 5, 320)
    # 6 random rows over 297 tokens hold no copy: the in-distribution constants are undefined, not logged
    undefined = {"chance_indist", *NEEDS_SUCCESSORS}
    assert list(scored["metric"].unique()) == [m for m in REGISTRY if m not in undefined]
    rank = ours["metric"] == "ar_rank"
    np.testing.assert_allclose(scored["value"][~rank], ours["value"][~rank], atol=1e-5, rtol=0)
    np.testing.assert_allclose(scored["value"][rank], ours["value"][rank], rtol=1e-5)


def test_bfloat16_scores_close_to_float32(tmp_path):
    g = _gpt(5)
    to_gpt2(g).save_pretrained(tmp_path / "ckpt" / "step1")
    frames = {}
    for dtype in ("float32", "bfloat16"):
        out = tmp_path / dtype
        assert main([str(tmp_path / "ckpt"), "--out", str(out), "--batch-size", "2", "--context", "32",
                     "--probe-seqs", "8", "--dtype", dtype, "--threads", "1", "--no-progress"]) == 0
        frames[dtype] = pd.read_parquet(out / "metrics.parquet")
    ps = {k: f.loc[f["metric"] == "ps", "value"].to_numpy() for k, f in frames.items()}
    assert np.isfinite(ps["bfloat16"]).all() and not np.array_equal(ps["bfloat16"], ps["float32"])
    np.testing.assert_allclose(ps["bfloat16"], ps["float32"], atol=0.02)
