"""Seeds by kind (issue 66): weight_seed draws the initial weights, data_seed the data; both default
to ``seed``, so every shipped run keeps its id; a cell's replicates share cell_id whatever kind varies."""

import numpy as np
import pytest

from ihstats.base import io
from ihtrain.config import ConfigError, resolve

TINY = {"data.source": "markov", "data.markov.vocab": 64, "data.markov.frequency": 0.9, "data.markov.reliability": 0.9,
        "data.markov.pool_tokens": 0, "model.n_layer": 1, "model.n_head": 2, "model.d_model": 16,
        "model.context": 32, "train.batch_size": 4, "train.context": 24, "train.max_steps": 4,
        "train.device": "cpu", "metrics.n_evals": 2, "metrics.probe_seqs": 4, "metrics.val_seqs": 2}


def _cfg(**kw):
    return resolve(overrides={**TINY, **kw})


def test_defaults_keep_ids_and_kinds_share_the_cell():
    base = _cfg(seed=3)
    assert base.init_seed == base.stream_seed == 3
    assert _cfg(seed=3, weight_seed=-1, data_seed=-1).run_id() == base.run_id()
    crossed = [_cfg(seed=0, weight_seed=w, data_seed=d) for w in (0, 1, 2) for d in (0, 1, 2)]
    assert len({c.run_id() for c in crossed}) == 9 and len({c.cell_id() for c in crossed}) == 1
    assert crossed[0].cell_id() == base.cell_id()
    f = io.config_factors({"config": crossed[5].to_dict(), "seed": 0})
    assert (f["seed"], f["weight_seed"], f["data_seed"]) == (0, 1, 2)
    g = io.config_factors({"config": base.to_dict(), "seed": 3})  # a shipped run: both kinds are its seed
    assert (g["weight_seed"], g["data_seed"]) == (3, 3)
    with pytest.raises(ConfigError, match="weight_seed"):
        _cfg(weight_seed=-2)


def test_each_kind_moves_only_its_own_part(tmp_path):
    torch = pytest.importorskip("torch")
    from ihtrain.run.trainer import Trainer

    def build(name, **kw):
        run = Trainer(_cfg(**kw), tmp_path / name, progress=False)
        weights = torch.cat([p.detach().flatten() for p in run.model.parameters()])
        return weights, run.next_batch(), run.source.chain.digest()

    w0, x0, ch0 = build("a", seed=0)
    w1, x1, ch1 = build("b", seed=0, weight_seed=1)  # new weights, same data
    w2, x2, ch2 = build("c", seed=0, data_seed=1)  # same weights, new chain and stream
    assert not torch.equal(w0, w1) and torch.equal(x0, x1) and ch0 == ch1
    assert torch.equal(w0, w2) and not torch.equal(x0, x2) and ch0 != ch2
    w3, x3, ch3 = build("d", seed=1, weight_seed=0, data_seed=0)  # the kinds, not the replicate seed, decide
    assert torch.equal(w0, w3) and torch.equal(x0, x3) and ch0 == ch3
    assert np.isfinite(w0.numpy()).all()
