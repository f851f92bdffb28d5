"""The shipped natural-text corpus (issue 56): the same bytes on every machine, pinned by hash,
named by the presets, checked on resume; the runs made on the legacy ``builtin`` source keep
their ids."""

import hashlib
import json
import lzma
from pathlib import Path

import pytest

from ihtrain.config import ConfigError, resolve
from ihtrain.data import shipped
from ihtrain.data.natural import build_corpus
from ihtrain.data.source import DataError, cached_stream_config
from ihtrain.data.shipped import SHIPPED_CORPORA, ShippedCorpus
from ihtrain.grid_spec import grid_preset_paths, load_grid_preset
from ihtrain.presets import preset_names
from ihtrain.run_files import check_resumed_data
from ihtrain.train import train_run

ROOT = Path(__file__).resolve().parents[3]
REF = ROOT / "data" / "reference_runs"


def test_builtin_v1_is_the_same_bytes_in_two_fresh_builds(tmp_path):
    """Two empty caches build byte-identical text, hashed as pinned, and it is the text the shipped
    CPU runs on the legacy ``builtin`` source recorded (built on Python 3.11.7, same packages)."""
    a = build_corpus("builtin-v1", cache_dir=tmp_path / "a")
    b = build_corpus("builtin-v1", cache_dir=tmp_path / "b")
    assert not a.cached and not b.cached
    assert a.path.read_bytes() == b.path.read_bytes()
    assert a.sha256 == b.sha256 == SHIPPED_CORPORA["builtin-v1"].sha256
    recorded = json.loads((REF / "cpu-tiny" / "config.json").read_text())["data_fingerprint"]
    assert recorded["source"] == "builtin" and recorded["sha256"] == a.sha256
    assert (a.fingerprint["n_chars"], a.fingerprint["n_docs"]) == (recorded["n_chars"], recorded["n_docs"])
    fp = a.fingerprint
    assert fp["file"] == "ihtrain/data/corpus/builtin-v1.txt.xz" and fp["corpus_hash"] == a.sha256
    small = build_corpus("builtin-v1", max_chars=50_000, cache_dir=tmp_path / "a")
    assert small.fingerprint["n_chars"] == 50_000 and small.docs()[0] == a.docs()[0]  # a prefix


def _fake_corpus_dir(tmp_path: Path, text: bytes) -> Path:
    d = tmp_path / "corpus"
    d.mkdir(exist_ok=True)
    (d / "builtin-v1.txt.xz").write_bytes(lzma.compress(text))
    return d


def test_a_changed_or_missing_corpus_file_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setattr(shipped, "CORPUS_DIR", _fake_corpus_dir(tmp_path, b"other text\x1eanother doc"))
    with pytest.raises(DataError, match=r"corpus file .*corpus/builtin-v1.txt.xz holds text with sha256 .* "
                                        r"not the 5913a143e062\.\.\. builtin-v1 is; restore it"):
        build_corpus("builtin-v1", cache_dir=tmp_path / "cache")
    (tmp_path / "corpus" / "builtin-v1.txt.xz").write_bytes(b"not xz")
    with pytest.raises(DataError, match=r"builtin-v1.txt.xz cannot be read .*restore it"):
        build_corpus("builtin-v1", cache_dir=tmp_path / "cache")
    (tmp_path / "corpus" / "builtin-v1.txt.xz").unlink()
    with pytest.raises(DataError, match=r"builtin-v1.txt.xz is missing; restore it \(git checkout -- "
                                        r"ihtrain/data/corpus/builtin-v1.txt.xz"):
        build_corpus("builtin-v1", cache_dir=tmp_path / "cache")


def test_a_resume_on_a_changed_shipped_corpus_is_refused_naming_the_file(tmp_path, monkeypatch):
    """A run started on builtin-v1, resumed where the corpus under that name holds other text (a
    file and pin both replaced), is refused by name, not spliced onto the new text."""
    cfg = resolve("cpu-smoke", overrides={"data.max_corpus_chars": 60_000, "data.cache_dir": str(tmp_path / "c"),
                                          "train.max_steps": 10})
    calls = {"n": 0}

    def stop_at_3():
        calls["n"] += 1
        return calls["n"] > 3

    out = tmp_path / "run"
    assert train_run(cfg, out, progress=False, should_stop=stop_at_3)["status"] == "running"
    text = (shipped.read_shipped("builtin-v1")[:200_000] + " changed").encode()  # same first 60,000 chars
    monkeypatch.setattr(shipped, "CORPUS_DIR", _fake_corpus_dir(tmp_path, text))
    monkeypatch.setitem(SHIPPED_CORPORA, "builtin-v1",
                        ShippedCorpus("builtin-v1.txt.xz", hashlib.sha256(text).hexdigest()))
    with pytest.raises(ConfigError, match=r"config.json: this run started on data with corpus_hash 5913a143e062"
                                          r".*\(the corpus file ihtrain/data/corpus/builtin-v1.txt.xz changed\)"):
        train_run(cfg, out, progress=False)


def test_the_resume_check_names_a_wrapped_corpus_file(tmp_path):
    """Semi-natural and Bi-Induct fingerprints hold the corpus under ``base``: still named."""
    old = {"kind": "seminatural", "bigram_hash": "1", "base": {"sha256": "a" * 64, "file": "F.txt.xz"}}
    (tmp_path / "config.json").write_text(json.dumps({"data_fingerprint": old}))
    check_resumed_data(tmp_path, old)  # the same data: resumes
    new = {**old, "base": {"sha256": "b" * 64, "file": "F.txt.xz"}}
    with pytest.raises(ConfigError, match=r"base.sha256 aaaaaaaaaaaa.*\(the corpus file F.txt.xz changed\)"):
        check_resumed_data(tmp_path, new)


def _preset_configs():
    for name in preset_names():
        yield name, resolve(name)
    for name in grid_preset_paths():
        for run in load_grid_preset(name).expand():
            yield f"{name}/{run.run_id}", run.config


def test_every_preset_on_natural_text_names_a_shipped_corpus():
    """No preset reads the machine-dependent docstring corpus: natural and semi-natural presets
    read a corpus whose bytes are pinned (cached_stream_config: the natural stream a source reads)."""
    natural = 0
    for name, cfg in _preset_configs():
        stream = cached_stream_config(cfg.data)
        if stream is not None:
            natural += 1
            assert stream.source in SHIPPED_CORPORA, f"{name}: reads {stream.source!r}"
    assert natural > 100


@pytest.mark.parametrize("preset", ["freqrel", "biinduct"])
def test_shipped_runs_keep_their_ids_under_the_legacy_source(preset):
    """The presets now name builtin-v1, which renames their runs; the shipped ones were made on
    ``builtin`` (the same text here: tested above) and are that spec with the old source."""
    shipped_ids = {p.name for p in (REF / preset).iterdir() if p.is_dir()}
    spec = load_grid_preset(preset)
    assert shipped_ids.isdisjoint(r.run_id for r in spec.expand())
    spec.base_overrides["data.seminatural.base_source"] = "builtin"
    assert {r.run_id for r in spec.expand()} == shipped_ids
