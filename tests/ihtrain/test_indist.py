"""In-distribution probes (issue 52): truth labels from the generators against a recomputation
from the tokens, PS and loss gain at the data's own copies against a hand-wired induction model
that copies only where the data repeats, and the design check that catches a blind probe."""

import tomllib

import numpy as np
import pytest
import torch

from ihtrain.config import resolve
from ihtrain.data import repeat_start_of
from ihtrain.data.markov import build_chain, generate_markov
from ihtrain.data.repeats import copy_labels, plant_repeats
from ihtrain.data import probe_in_region
from ihtrain.grid.expand import probe_region_check
from ihtrain.grid.spec import parse_spec
from ihtrain.metrics import evaluate
from ihtrain.model import Cache
from ihtrain.probes import make_probes


def _brute_queries(x: np.ndarray, start: int) -> np.ndarray:
    """Copy queries by loops: a in [start, T-2] with x[j] == x[a], x[j+1] == x[a+1] for some j < a."""
    n, T = x.shape
    out = np.zeros((n, T), dtype=bool)
    for i in range(n):
        for a in range(start, T - 1):
            out[i, a] = any(x[i, j] == x[i, a] and x[i, j + 1] == x[i, a + 1] for j in range(a))
    return out


@pytest.mark.parametrize("start", [None, 5])
def test_generator_copies_are_the_copies_found_in_the_tokens(start):
    chain, _ = build_chain(64, "markov", "zipf", seed=1)
    x, truth = generate_markov(chain, 40, 48, 0.9, 0.7, seed=2, repeat_start=start or 0)
    h = 24 if start is None else start
    queries, keys = copy_labels(x, h)
    src = truth["copy_source"]  # (n, T): copied position p <- key j + 1; its query is p - 1
    copied = src >= 0
    assert copied.sum() == truth["n_copies"].sum() > 50
    np.testing.assert_array_equal(queries[:, :-1], copied[:, 1:])  # the generator's record, exactly
    np.testing.assert_array_equal(queries, _brute_queries(x, h))  # and a loop recomputation
    rows, p = np.nonzero(copied)
    assert keys[rows, p - 1, src[rows, p]].all()  # the copied source is among the keys
    assert not queries[:, :h].any()


def test_keys_are_the_positions_after_earlier_occurrences():
    x = np.array([[5, 6, 7, 5, 6, 9, 5, 8]])
    queries, keys = copy_labels(x, 0)
    assert np.flatnonzero(queries[0]).tolist() == [3]  # 5 -> 6 repeats at a = 3; a = 6 (5 -> 8) does not
    assert np.flatnonzero(keys[0, 3]).tolist() == [1]
    x2 = np.array([[5, 6, 5, 6, 5, 6]])
    q2, k2 = copy_labels(x2, 0)
    assert np.flatnonzero(q2[0]).tolist() == [2, 3, 4] and np.flatnonzero(k2[0, 4]).tolist() == [1, 3]


class LateInductionModel:
    """A hand-wired model in the metrics' interface: an induction head (layer 1, head 0) that
    attends to the position after the last earlier occurrence of the current token and predicts
    its token, but only at positions >= ``late`` (as a model trained on data that repeats only in
    its second half); elsewhere uniform attention and a uniform prediction."""

    def __init__(self, V: int, late: int):
        self.V, self.late = V, late
        self.cfg = type("Cfg", (), {"n_layer": 2, "n_head": 2})()
        self.training = False
        self._p = torch.nn.Parameter(torch.zeros(1))

    def parameters(self):
        return iter([self._p])

    def eval(self):
        return self

    def train(self, mode=True):
        return self

    def _forward(self, idx):
        B, T = idx.shape
        attn = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1)[:, None]  # uniform causal
        attn = attn.expand(2, B, 2, T, T).clone()  # (L, B, H, T, T)
        logits = torch.zeros(B, T, self.V)
        for b in range(B):
            for a in range(self.late, T):
                earlier = [j for j in range(a) if idx[b, j] == idx[b, a]]
                if earlier:
                    k = earlier[-1] + 1
                    attn[1, b, 0, a] = 0.0
                    attn[1, b, 0, a, k] = 1.0
                    logits[b, a, idx[b, k]] = 20.0
        return logits, Cache(attn=attn, head_out=torch.zeros(2, B, T, 2, 4))

    def run_with_cache(self, idx, logits=True, logit_positions=None):
        out, cache = self._forward(idx)
        out = out if logit_positions is None else out[:, logit_positions]
        return (out if logits else None), cache

    def __call__(self, idx):
        return self._forward(idx)[0], None


def test_early_probe_misses_a_late_head_that_the_data_probes_find():
    C, V = 64, 100
    chain, _ = build_chain(V - 2, "markov", "zipf", seed=3)
    val = generate_markov(chain, 16, C + 1, 0.9, 0.9, seed=4)[0] + 2  # repeats from (C + 1) // 2
    probes = make_probes(V, C, seed=0, ordinary_range=(2, V), sep_token=1, n_seqs=16, n=15)  # queries 15-29
    model = LateInductionModel(V, late=C // 2)
    names = ["ps", "ps_indist", "indist_gain"]
    out = evaluate(model, probes, val_tokens=val, include=names, copy_start=(C + 1) // 2)
    assert out["ps"].max() < 0.15  # the fixed early probe: no head
    assert out["ps_indist"][1, 0] > 0.95 and out["ps_indist"][0].max() < 0.2  # the head, at the data's copies
    assert out["indist_gain"] > 4.0  # about log V: uniform at first occurrences, sure at repeats  # repeats predicted far better than their first occurrences
    blind = LateInductionModel(V, late=C + 1)  # no head anywhere: the gain stays near its floor
    flat = evaluate(blind, probes, val_tokens=val, include=names, copy_start=(C + 1) // 2)
    assert abs(flat["indist_gain"]) < 1e-6 and flat["ps_indist"].max() < 0.2


SPEC = """
name = "t"
[base]
preset = "cpu-tiny"
[base.data]
source = "markov"
[base.data.markov]
vocab = 512
frequency = 0.9
reliability = 0.9
[base.model]
context = 128
[base.train]
budget = "until-emergence"
context = 64
max_steps = 100
{extra}
[base.metrics]
probe_len = 31
[axes]
cell = [
  {{ label = "c64", "train.context" = 64 }},
  {{ label = "c96", "train.context" = 96 }},
  {{ label = "c128", "train.context" = 128 }},
]
"""


def test_design_check_names_the_blind_cells_and_the_fixed_design_passes():
    runs = parse_spec(tomllib.loads(SPEC.format(extra="")), "t.toml").expand()
    lines, blocking = probe_region_check(runs)
    assert blocking and len(lines) == 2  # C 64 passes; C 96 has 14 of 31 queries in [48, 95], C 128 none
    assert "C 96" in lines[0] and "48-95" in lines[0] and "14 of 31" in lines[0]
    assert "C 128" in lines[1] and "31-61" in lines[1] and "64-127" in lines[1] and "0 of 31" in lines[1]
    c96 = next(r for r in runs if r.config.train.context == 96)
    assert probe_in_region(c96.config) == (31, 14, 48)
    fixed = parse_spec(tomllib.loads(SPEC.format(extra='emergence_metric = "ps_indist"')), "t.toml").expand()
    lines, blocking = probe_region_check(fixed)
    assert not blocking and len(lines) == 2  # still said, but the budget reads the data's own copies


def test_repeat_regions_come_from_the_sources():
    cfg = resolve("cpu-smoke", overrides={"data.source": "markov"})
    assert repeat_start_of(cfg.data, 129) == 64
    cfg = resolve("cpu-smoke", overrides={"data.source": "markov", "data.markov.repeat_start": 8})
    assert repeat_start_of(cfg.data, 129) == 8
    cfg = resolve("cpu-smoke")
    assert repeat_start_of(cfg.data, 129) == 0  # natural text repeats anywhere


def test_generator_records_no_copy_without_repeats():
    rng = np.random.default_rng(0)
    x, truth = plant_repeats(rng, 8, 20, 50, 0.0, 0.9, lambda r, n: r.integers(0, 50, n),
                             lambda r, prev: r.integers(0, 50, prev.size))
    assert (truth["copy_source"] < 0).all() and not copy_labels(x, 10)[0].any()


def test_a_single_run_says_when_its_probe_misses_the_data(tmp_path, capsys, smoke_cache):
    from ihtrain.run.train import main

    args = ["--preset", "cpu-smoke", "--set", "data.source=markov", "--set", f"data.cache_dir={smoke_cache}",
            "--set", "train.max_steps=2", "--set", "train.threads=1"]
    assert main(args + ["--set", "metrics.probe_len=4", "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "positions 4-7" in err and "0 of 4" in err and "(16-31)" in err
    assert main(args + ["--set", "metrics.probe_len=15", "--out", str(tmp_path / "b")]) == 0
    assert "off the training distribution" not in capsys.readouterr().err


def test_in_distribution_probes_are_the_same_in_chunks(monkeypatch):
    import ihtrain.metrics as metrics

    C, V = 48, 80
    chain, _ = build_chain(V - 2, "markov", "zipf", seed=5)
    val = generate_markov(chain, 12, C + 1, 0.9, 0.8, seed=6)[0] + 2
    probes = make_probes(V, C, seed=0, ordinary_range=(2, V), sep_token=1, n_seqs=8, n=10)
    model = LateInductionModel(V, late=30)
    whole = evaluate(model, probes, val_tokens=val, include=["ps_indist", "indist_gain"], copy_start=24)
    monkeypatch.setattr(metrics, "INDIST_CHUNK_ELEMENTS", 1)  # one sequence a chunk
    chunked = evaluate(model, probes, val_tokens=val, include=["ps_indist", "indist_gain"], copy_start=24)
    np.testing.assert_allclose(chunked["ps_indist"], whole["ps_indist"], rtol=1e-12)
    assert chunked["indist_gain"] == pytest.approx(whole["indist_gain"], rel=1e-12) and whole["indist_gain"] > 1
