"""Issue 65 on tiny TRAINED models: the certificate reads behaviour, not a probe that happens to
match the training data.

- A GPT trained on ``[16 random tokens | the same 16]`` copies at one offset: the repeat probe at
  its default half-length (16 = the offset) reads it as formed (the old crossing), the general
  probe passes only its middle distance, and ``python -m ihtrain.score`` on its checkpoints says
  "fixed-offset copy, not formed" in one line.
- A GPT trained on Markov data with repeats planted at varied distances (the default grid's data)
  is certified, with the certified step at its loss drop (slow: about a minute of CPU).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from ihstats.certificate import FIXED_OFFSET, certify_run
from ihtrain.config import ModelConfig
from ihtrain.metrics import evaluate, to_rows
from ihtrain.model import GPT
from ihtrain.probes import make_probes

V, C, HALF = 66, 32, 16  # ordinary tokens 2 .. 65; [16 | 16] repeats at offset 16
GEN = ["ps", "prev_token", "ps_gen_near", "ps_gen_mid", "ps_gen_far"]


def fixed_offset_batch(rng: np.random.Generator, n: int) -> torch.Tensor:
    x = rng.integers(2, V, size=(n, C))
    x[:, HALF:] = x[:, :HALF]
    return torch.from_numpy(x)


@pytest.fixture(scope="module")
def fixed_offset_run():
    """A 2-layer attention-only GPT trained 300 updates on [16 | 16]: (checkpoints by step, metrics)."""
    torch.manual_seed(0)
    model = GPT(ModelConfig(n_layer=2, n_head=2, d_model=64, vocab_size=V, context=C, attn_only=True), seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    rng = np.random.default_rng(0)
    probes = make_probes(V, C, seed=0, ordinary_range=(2, V), sep_token=1, n_seqs=24, repeat_start=HALF)
    saved, rows = {}, []
    for step in range(301):
        if step % 25 == 0:
            saved[step] = {k: v.clone() for k, v in model.state_dict().items()}
            rows.append(to_rows(evaluate(model, probes, include=GEN), step, step * 32 * C))
        if step == 300:
            break
        x = fixed_offset_batch(rng, 32)
        loss = model(x[:, :-1], x[:, 1:])[1]
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model, saved, pd.concat(rows, ignore_index=True)


def test_fixed_offset_model_crosses_but_is_not_certified(fixed_offset_run):
    _, _, metrics = fixed_offset_run
    cert = certify_run(metrics, {})
    end = metrics[metrics["step"] == 300].groupby("metric")["value"].max()
    assert end["ps"] > 0.8 and cert.crossing_step is not None  # the old rule: "formed"
    assert end["ps_gen_mid"] > 0.8 and max(end["ps_gen_near"], end["ps_gen_far"]) < 0.15
    assert not cert.certified and cert.cls == FIXED_OFFSET and cert.certified_step is None


def test_the_scorer_says_fixed_offset_in_one_line(fixed_offset_run, tmp_path, capsys):
    pytest.importorskip("transformers")
    from ihtrain.score.cli import main
    from ihtrain.score.convert import to_gpt2

    model, saved, _ = fixed_offset_run
    for step in (0, 50, 100, 200, 300):
        model.load_state_dict(saved[step])
        to_gpt2(model).save_pretrained(tmp_path / "ckpt" / f"step{step}")
    assert main([str(tmp_path / "ckpt"), "--out", str(tmp_path / "series"), "--batch-size", "32", "--context",
                 str(C), "--ordinary-range", "2", str(V), "--probe-seqs", "24", "--threads", "1",
                 "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    verdict = [line for line in lines if "fixed-offset copy" in line]
    assert len(verdict) == 1 and "fixed-offset copy, not formed" in verdict[0]
    m = pd.read_parquet(tmp_path / "series" / "metrics.parquet")
    # at the scorer's defaults the repeat probe's half-length is the training offset: PS alone hides it
    assert json.loads((tmp_path / "series" / "series.json").read_text())["probe"]["n"] == HALF
    assert m[(m.metric == "ps") & (m.step == 300)]["value"].max() > 0.8


@pytest.mark.slow
def test_repeats_at_varied_distances_are_certified_at_the_loss_drop(tmp_path):
    """The default grid's data (Markov V 512, repeats planted at uniform distances) at B 64 x C 64,
    seed 0, the grid's width-64 GPT, 1,100 updates at the default level 0.3 (about 2 minutes of
    one CPU): the induction head forms near update 800; the certificate holds at the end, and its
    onset (the detector's, on the general curve) sits at the training loss's drop."""
    from ihtrain.config import apply_overrides, validate
    from ihtrain.grid.spec import load_grid_preset
    from ihtrain.run.train import train_run

    over = {"train.batch_size": 64, "train.context": 64, "train.threads": 1, "train.max_steps": 1100,
            "train.budget": "steps", "train.emergence_threshold": 0.3, "metrics.n_evals": 30,
            "train.checkpoint_seconds": 1e9}
    cfg = validate(apply_overrides(load_grid_preset("bxc-cross").base_config(), over))
    train_run(cfg, tmp_path, progress=False, make_figures=False)
    metrics = pd.read_parquet(tmp_path / "metrics.parquet")
    cert = certify_run(metrics, json.loads((tmp_path / "config.json").read_text()))
    assert cert.certified and cert.cls.startswith("induction"), cert.reason
    loss = pd.read_parquet(tmp_path / "train.parquet").set_index("step")["loss"].rolling(25, min_periods=1).mean()
    before, after = loss.loc[300:500].mean(), loss.iloc[-50:].mean()
    drop = int(loss.index[(loss <= (before + after) / 2) & (loss.index > 300)][0])  # halfway down the drop
    assert 0.7 * drop <= cert.onset <= 1.3 * drop, (cert.onset, drop)
    # the rule holds from a later evaluation on: the near distance (8) lags the others (measured:
    # drop 720, rule from 1,027), its two induction heads sharing the copies there
    assert cert.onset <= cert.certified_step <= 1.6 * drop
