"""A series with a planted onset, end to end: checkpoints blended from a random GPT to the hand-wired
induction GPT on a known schedule, exported to GPT-2 (ihtrain.score.convert), scored by
python -m ihtrain.score and read by ihstats.emergence: the onsets come out where they were put."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from ihstats.emergence import emergence_table
from ihstats.base.io import load_grids
from ihtrain.model import GPT
from ihtrain.score.cli import main
from ihtrain.score.convert import to_gpt2
from tests.ihtrain.handwired import induction_model

pytest.importorskip("transformers")
STEPS = [int(round(10 * 1000 ** (i / 15))) for i in range(16)]  # 10 .. 10000, log-spaced


def planted_series(root: Path, midpoint: float, width: float = 0.4) -> Path:
    """Revisions step{s}: weights (1 - a) random + a induction, a = sigmoid((ln s - ln midpoint) / width)."""
    ind = induction_model(V=20, P=64, d=256)
    rnd = GPT(ind.cfg, seed=1)
    for s in STEPS:
        a = 1 / (1 + math.exp(-(math.log(s) - math.log(midpoint)) / width))
        g = GPT(ind.cfg, seed=1)
        with torch.no_grad():
            for p, pi, pr in zip(g.parameters(), ind.parameters(), rnd.parameters()):
                p.copy_((1 - a) * pr + a * pi)
        to_gpt2(g).save_pretrained(root / f"step{s}")
    return root


@pytest.mark.slow
def test_planted_onsets_are_found_in_scored_series(tmp_path):
    outs = []
    for B in (8, 32):  # midpoint 20000 B^-0.8: 3789 and 1250 updates
        src = planted_series(tmp_path / f"ckpt{B}", 20000 * B ** -0.8)
        outs.append(tmp_path / f"B{B}")
        assert main([str(src), "--out", str(outs[-1]), "--batch-size", str(B), "--context", "64",
                     "--probe-len", "7", "--ordinary-range", "0", "20", "--threads", "1", "--no-progress"]) == 0
    table = emergence_table(load_grids(outs)).set_index("B")
    assert table["formed"].all() and not table["censored"].any()
    ratio = table.loc[8, "onset"] / table.loc[32, "onset"]
    assert 2.0 < ratio < 4.5, ratio  # planted 4 ** 0.8 = 3.0 on the midpoints
