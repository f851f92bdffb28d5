"""The grid specs in examples/ (the ones the README tells users to copy) load and expand."""

from pathlib import Path

import pytest

from ihtrain.grid.spec import load_spec

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
