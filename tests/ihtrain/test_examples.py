"""The grid specs in examples/ (the ones the README tells users to copy) load and expand."""

import json
from pathlib import Path

import numpy as np
import pytest

from ihtrain.config import apply_overrides
from ihtrain.grid_spec import load_spec
from ihtrain.train import train_run

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.toml"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_spec_expands(path):
    spec = load_spec(path)
    runs = spec.expand()
    assert spec.name == path.stem and runs
    assert len({r.run_id for r in runs}) == len(runs)  # no two points train the same config


def test_examples_do_what_their_comments_say():
    by_name = {p.stem: load_spec(p).expand() for p in EXAMPLES}
    seeds = by_name["bxc-markov-seeds"]
    assert len(seeds) == 36 and {r.config.seed for r in seeds} == {0, 1, 2}
    assert {r.config.train.batch_size for r in seeds} == {16, 32}
    probe = by_name["bxc-text-b64-probe"]
    assert len(probe) == 6 and {(r.config.seed, r.config.train.batch_size) for r in probe} == {(1, 64)}
    corners = {(r.config.data.markov.frequency, r.config.data.markov.reliability) for r in by_name["freqrel-corners"]}
    assert corners == {(0.5, 0.9), (0.9, 0.5), (0.9, 0.9), (0.8, 0.7)}
    hf = by_name["hf-text"]  # a Hugging Face dataset through datasets: the same text on every machine
    assert len(hf) == 2 and {r.config.data.source for r in hf} == {"hf:wikitext:wikitext-2-raw-v1:train"}


def test_the_hf_example_trains_offline_on_a_dataset_saved_with_datasets(tmp_path, monkeypatch):
    """issue 56: the hf-text example's run, pointed at a dataset saved with ``save_to_disk`` (as its
    comment says to do offline) and shrunk to seconds, trains through ``datasets`` with no network
    and records the text's hash."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    words = "the head copies a token that followed an earlier occurrence of the current one".split()
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, 400)) for _ in range(60)]
    datasets.Dataset.from_dict({"text": texts}).save_to_disk(str(tmp_path / "saved"))
    run = next(r for r in load_spec(EXAMPLES[[p.stem for p in EXAMPLES].index("hf-text")]).expand())
    cfg = apply_overrides(run.config, {
        "data.source": f"hf:{tmp_path / 'saved'}", "data.vocab_size": 300, "data.val_fraction": 0.05,
        "data.cache_dir": str(tmp_path / "cache"), "model.d_model": 32, "train.budget": "steps",
        "train.max_steps": 6, "train.batch_size": 4, "train.context": 32, "metrics.n_evals": 2,
        "metrics.probe_seqs": 8, "metrics.val_seqs": 2})
    assert train_run(cfg, tmp_path / "run", progress=False, make_figures=False)["status"] == "done"
    fp = json.loads((tmp_path / "run" / "config.json").read_text())["data_fingerprint"]
    assert fp["kind"] == "hf" and fp["n_docs"] == 60 and len(fp["sha256"]) == 64
