"""The data-source registry (issue 43): a new source is its own module and its test, nothing else.

The toy source below lives only in this file. Registering it is all it takes for the config to
accept ``data.source = "toy"`` and ``data.toy.*``, for ``build_source`` to build it, for a run to
train on it, for the pack key to see its vocabulary and for ``ihstats.base.io`` to read its factors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ihstats.base import io
from ihtrain.config import ConfigError, RunConfig, from_dict, resolve
from ihtrain.errors import need
from ihtrain.data import build_source, registry

REFERENCE = Path(__file__).resolve().parents[3] / "data" / "reference_runs"


@dataclass
class ToyConfig:
    """Cyclic tokens 2, 3, ..., 2 + period - 1, 2, ...: every window repeats itself."""

    period: int = 5
    vocab: int = 16


class ToySource:
    def __init__(self, cfg: ToyConfig, seed: int):
        self.cfg, self.seed = cfg, seed

    vocab_size = property(lambda self: self.cfg.vocab)
    special_tokens = property(lambda self: {"eos": 0, "sep": 1})
    ordinary_range = property(lambda self: (2, self.cfg.vocab))
    fingerprint = property(lambda self: {"kind": "toy", "period": self.cfg.period, "seed": self.seed})

    def _windows(self, starts: np.ndarray, length: int) -> np.ndarray:
        return 2 + (starts[:, None] + np.arange(length)) % self.cfg.period  # (n_seqs, length)

    def sample(self, rng: np.random.Generator, n_seqs: int, length: int, progress: float = 0.0):
        return self._windows(rng.integers(0, self.cfg.period, n_seqs), length).astype(np.int64), {}

    def val_sample(self, n_seqs: int, length: int) -> np.ndarray:
        return self._windows(np.arange(n_seqs), length).astype(np.int64)


def _check(toy: ToyConfig, cfg: Any) -> None:
    need(2 <= toy.period <= toy.vocab - 2, "data.toy.period", f"must be in [2, data.toy.vocab - 2], got {toy.period}")


@pytest.fixture
def toy(monkeypatch):
    """The toy source registered for one test (the registry and the factor rules restored after)."""
    from ihstats.base import sources

    registry.sources()  # the shipped ones first, as in any process
    monkeypatch.setattr(registry, "_SOURCES", dict(registry._SOURCES))
    monkeypatch.setattr(sources, "_RULES", dict(sources._RULES))
    return registry.register(registry.DataSource(
        "toy", lambda data_cfg, seed=0, progress=True, context=None: ToySource(data_cfg.toy, seed),
        section="toy", config=ToyConfig, vocab_fields=("vocab",), check=_check))


TINY = {"model.n_layer": 1, "model.n_head": 2, "model.d_model": 16, "model.context": 32, "train.batch_size": 4,
        "train.context": 24, "train.max_steps": 6, "train.warmup_steps": 1, "train.device": "cpu",
        "metrics.n_evals": 3, "metrics.probe_seqs": 4, "metrics.val_seqs": 2, "metrics.probe_len": 6}


def test_a_registered_source_is_configured_built_and_read(toy):
    cfg = resolve(overrides={"data.source": "toy", "data.toy.period": 7})
    assert cfg.data.toy.period == 7 and cfg.to_dict()["data"]["toy"] == {"period": 7, "vocab": 16}
    assert from_dict(cfg.to_dict()).run_id() == cfg.run_id()  # config.json reads back to the same run
    tokens, _ = build_source(cfg.data, seed=0).sample(np.random.default_rng(0), 3, 10)
    assert tokens.shape == (3, 10) and set(np.unique(tokens)) <= set(range(2, 9))
    with pytest.raises(ConfigError, match="data.toy.period"):
        resolve(overrides={"data.source": "toy", "data.toy.period": 20})
    factors = io.config_factors({"config": cfg.to_dict(), "seed": 0})
    assert factors["source"] == "toy" and factors["period"] == 7 and factors["vocab"] == 16


def test_a_registered_source_changes_no_other_run(toy):
    """Shipped configs neither gain its section nor change id: their to_dict and run_id are as before."""
    plain = RunConfig()
    assert "toy" not in plain.to_dict()["data"] and "sections" not in plain.to_dict()["data"]
    for path in sorted(REFERENCE.glob("*/*/config.json"))[::10]:
        rec = json.loads(path.read_text())
        assert from_dict(rec["config"]).run_id() == rec["run_id"], path
    with pytest.raises(ConfigError, match="must be one of builtin, .*markov, toy; got 'toys'"):
        resolve(overrides={"data.source": "toys"})


def test_the_pack_key_takes_the_sources_vocabulary_fields(toy):
    pytest.importorskip("torch")
    from ihtrain.run.packed import pack_key

    a, b = (resolve(overrides={"data.source": "toy", "data.toy.vocab": v}) for v in (16, 32))
    assert pack_key(a) != pack_key(b)
    assert pack_key(a) == pack_key(resolve(overrides={"data.source": "toy", "data.toy.period": 3}))


def test_a_run_trains_on_a_registered_source_and_reads_back(toy, tmp_path):
    pytest.importorskip("torch")
    from ihtrain.run.train import train_run

    cfg = resolve(overrides={**TINY, "data.source": "toy", "data.toy.period": 4, "name": "toy"})
    status = train_run(cfg, tmp_path / cfg.run_id(), progress=False, make_figures=False)
    assert status["status"] == "done"
    run = io.load_run(tmp_path / cfg.run_id())
    assert run.run_id == cfg.run_id() and run.factors["period"] == 4 and run.factors["cell_id"] == cfg.cell_id()
