"""Natural sources: text files, local HF datasets, the builtin corpus; caching, sampling, errors."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from ihtrain.config import DataConfig
from ihtrain.data import TokenSource, build_source
from ihtrain.data import natural
from ihtrain.data.natural import NaturalSource, build_corpus, load_stream, parse_hf_spec
from ihtrain.data.source import DataError

WORDS = ("attention head copies the next token after an earlier match of the current one while the "
         "residual stream carries position and content through every layer of the model").split()


def _write_docs(folder, n_files=4, n_words=400, seed=0):
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n_files):
        words = rng.choice(WORDS, size=n_words)
        (folder / f"doc{i:02d}.txt").write_text(" ".join(words) + ".\n")
    return folder


def _cfg(tmp_path, source, **kw):
    return DataConfig(source=source, cache_dir=str(tmp_path / "cache"), vocab_size=kw.pop("vocab_size", 300),
                      val_fraction=kw.pop("val_fraction", 0.1), **kw)


# ---------------------------------------------------------------------- text:
def test_text_glob_stream(tmp_path):
    _write_docs(tmp_path / "corpus")
    st = load_stream(_cfg(tmp_path, f"text:{tmp_path}/corpus/*.txt"), progress=False)
    assert st.special_tokens == {"eos": 0, "sep": 1}
    assert isinstance(st.train, np.memmap) and st.train.dtype == np.uint16
    assert st.fingerprint["n_docs"] == 4 and [f[0] for f in st.fingerprint["files"]] == [
        f"doc{i:02d}.txt" for i in range(4)]
    full = np.concatenate([st.train, st.val])
    assert (full == 0).sum() == 4 and full[-1] == 0  # one eos after each document
    assert len(st.val) == round(0.1 * len(full)) and st.fingerprint["n_tokens"] == len(full)
    # the stream decodes back to the documents, in sorted order
    docs = st.tokenizer.decode(full).split("<|endoftext|>")[:-1]
    assert docs == [(tmp_path / "corpus" / f"doc{i:02d}.txt").read_text().strip() for i in range(4)]
    assert full.min() >= 0 and full.max() < st.vocab_size and st.vocab_size <= 300


def test_text_determinism_and_cache(tmp_path, monkeypatch):
    _write_docs(tmp_path / "corpus")
    cfg = _cfg(tmp_path, f"text:{tmp_path}/corpus")  # a directory works like a glob of its files
    a = load_stream(cfg, progress=False)
    npy = list((tmp_path / "cache" / "tokens").glob("*.npy"))
    assert len(npy) == 1
    mtime = npy[0].stat().st_mtime_ns

    def boom(*args, **kw):
        raise AssertionError("re-tokenized on a cache hit")

    monkeypatch.setattr(natural, "_tokenize_corpus", boom)
    b = load_stream(cfg, progress=False)
    assert npy[0].stat().st_mtime_ns == mtime
    assert a.fingerprint == b.fingerprint
    np.testing.assert_array_equal(a.train, b.train)
    monkeypatch.undo()
    # a fresh cache gives the same tokens and fingerprint (training and tokenizing are deterministic)
    c = load_stream(dataclasses.replace(cfg, cache_dir=str(tmp_path / "cache2")), progress=False)
    assert c.fingerprint == a.fingerprint
    np.testing.assert_array_equal(np.asarray(a.train), np.asarray(c.train))
    # changing the text changes the fingerprint
    (tmp_path / "corpus" / "doc00.txt").write_text("something else entirely. " * 50)
    d = load_stream(cfg, progress=False)
    assert d.fingerprint["sha256"] != a.fingerprint["sha256"]


def test_natural_source_sampling(tmp_path):
    _write_docs(tmp_path / "corpus", n_files=6)
    src = build_source(_cfg(tmp_path, f"text:{tmp_path}/corpus/*.txt"), seed=0, progress=False)
    assert isinstance(src, NaturalSource) and isinstance(src, TokenSource)
    assert src.ordinary_range == (2, src.vocab_size) and src.special_tokens == {"eos": 0, "sep": 1}
    toks, stats = src.sample(np.random.default_rng(1), 8, 33, 0.5)
    assert toks.shape == (8, 33) and toks.dtype == np.int64 and stats == {}
    train = np.asarray(src.stream.train)
    windows = np.lib.stride_tricks.sliding_window_view(train, 33)
    for row in toks:  # every row is a contiguous window of the train split
        assert (windows == row).all(axis=1).any()
    again, _ = src.sample(np.random.default_rng(1), 8, 33)
    np.testing.assert_array_equal(toks, again)
    v1, v2 = src.val_sample(4, 16), src.val_sample(4, 16)
    np.testing.assert_array_equal(v1, v2)
    val = np.asarray(src.stream.val)
    np.testing.assert_array_equal(v1[0], val[:16])
    np.testing.assert_array_equal(v1[-1], val[-16:])
    json.dumps(src.fingerprint)  # goes to config.json
    with pytest.raises(DataError, match=r"train split has \d+ tokens, fewer than one window of 100000"):
        src.sample(np.random.default_rng(0), 2, 100_000)
    with pytest.raises(DataError, match="val split.*data.val_fraction"):
        src.val_sample(2, len(val) + 1)


def test_text_errors(tmp_path):
    with pytest.raises(DataError, match=r"data.source='text:.*nothing\*.txt': no files match"):
        load_stream(_cfg(tmp_path, f"text:{tmp_path}/nothing*.txt"), progress=False)
    (tmp_path / "blank").mkdir()
    (tmp_path / "blank" / "a.txt").write_text("")
    (tmp_path / "blank" / "b.txt").write_text("  \n\n ")
    with pytest.raises(DataError, match=r"corpus is empty \(2 file\(s\) matched, all blank\)"):
        load_stream(_cfg(tmp_path, f"text:{tmp_path}/blank/*.txt"), progress=False)
    _write_docs(tmp_path / "corpus")
    with pytest.raises(DataError, match=r"data.vocab_size: 100 is too small"):
        load_stream(_cfg(tmp_path, f"text:{tmp_path}/corpus", vocab_size=100), progress=False)
    with pytest.raises(DataError, match="data.tokenizer: pretrained tokenizer path"):
        load_stream(_cfg(tmp_path, f"text:{tmp_path}/corpus", tokenizer="pretrained:/no/such/tok"),
                    progress=False)
    with pytest.raises(DataError, match="data.max_corpus_chars"):
        build_corpus(f"text:{tmp_path}/corpus", -1, tmp_path / "cache")


def test_max_corpus_chars_truncates(tmp_path):
    _write_docs(tmp_path / "corpus")
    c = build_corpus(f"text:{tmp_path}/corpus", 1000, tmp_path / "cache")
    assert c.fingerprint["n_chars"] == 1000 and c.fingerprint["max_corpus_chars"] == 1000
    assert "".join(c.docs()) == (tmp_path / "corpus" / "doc00.txt").read_text().strip()[:1000]


# ---------------------------------------------------------------------- hf:
def test_parse_hf_spec():
    assert parse_hf_spec("hf:wikitext:wikitext-2-raw-v1:validation") == {
        "name": "wikitext", "config": "wikitext-2-raw-v1", "data_files": None, "split": "validation"}
    assert parse_hf_spec("hf:json:/d/*.jsonl")["data_files"] == "/d/*.jsonl"
    assert parse_hf_spec("hf:org/name")["split"] == "train"
    with pytest.raises(DataError, match="too many ':'-separated parts"):
        parse_hf_spec("hf:a:b:c:d")
    with pytest.raises(DataError, match="needs data files"):
        parse_hf_spec("hf:json")
    with pytest.raises(DataError, match="missing dataset name"):
        parse_hf_spec("hf:")


def _write_jsonl(folder, rows):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "part0.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_hf_local_json(tmp_path):
    texts = [" ".join(np.random.default_rng(i).choice(WORDS, 200)) for i in range(5)]
    _write_jsonl(tmp_path / "ds", [{"id": i, "body": t, "n": 3} for i, t in enumerate(texts)])
    # no "text" column: the first string column ("body") is used
    c = build_corpus(f"hf:json:{tmp_path}/ds/*.jsonl", 0, tmp_path / "cache")
    assert c.docs() == texts and c.fingerprint["name"] == "json"
    st = load_stream(_cfg(tmp_path, f"hf:json:{tmp_path}/ds/*.jsonl"), progress=False)
    full = np.concatenate([st.train, st.val])
    assert st.tokenizer.decode(full).split("<|endoftext|>")[:-1] == texts
    # a local directory as NAME goes through load_dataset(path) with its own file inference
    c2 = build_corpus(f"hf:{tmp_path}/ds", 0, tmp_path / "cache")
    assert c2.docs() == texts
    # max_corpus_chars stops the stream early
    c3 = build_corpus(f"hf:json:{tmp_path}/ds/*.jsonl", len(texts[0]) + 10, tmp_path / "cache")
    assert c3.fingerprint["n_docs"] == 2 and c3.fingerprint["n_chars"] == len(texts[0]) + 10


def test_hf_text_column_preferred(tmp_path):
    _write_jsonl(tmp_path / "ds", [{"title": "T", "text": "the body text here"}])
    assert build_corpus(f"hf:json:{tmp_path}/ds/part0.jsonl", 0, tmp_path / "cache").docs() == ["the body text here"]


def test_hf_errors(tmp_path, monkeypatch):
    with pytest.raises(DataError, match="no files match"):
        build_corpus(f"hf:json:{tmp_path}/missing/*.jsonl", 0, tmp_path / "cache")
    monkeypatch.setattr(natural, "_hub_reachable", lambda timeout=3.0: False)
    for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(v, raising=False)
    with pytest.raises(DataError, match=r"hub is unreachable; use local files \(hf:json:PATH_OR_GLOB"):
        build_corpus("hf:some-org/some-dataset", 0, tmp_path / "cache")


# ---------------------------------------------------------------------- builtin
def test_builtin_truncated(tmp_path):
    cfg = DataConfig(source="builtin", max_corpus_chars=60_000, cache_dir=str(tmp_path / "cache"),
                     vocab_size=300, val_fraction=0.05)
    src = build_source(cfg, seed=0, progress=False)
    fp = src.fingerprint
    assert fp["n_chars"] == 60_000 and fp["kind"] == "builtin"
    assert fp["sources"][0]["name"] == "stdlib" and fp["python"]
    assert {"numpy", "torch"} <= {s["name"] for s in fp["sources"]}  # installed with the package
    assert fp["n_tokens"] > 60_000 / 4  # byte-level BPE at V=300: a few characters per token
    text = src.tokenizer.decode(np.asarray(src.stream.train[:3000]))
    assert sum(w in text.split() for w in ("the", "of", "and", "is", "a")) >= 3  # it is English
    again = build_source(cfg, seed=0, progress=False)
    assert again.fingerprint == fp
    np.testing.assert_array_equal(src.val_sample(2, 64), again.val_sample(2, 64))


def test_normalise():
    assert natural.normalise("a  \r\nb\t \n\n\n\n c\x1e") == "a\nb\n\n c"


def test_build_source_rejects_unknown(tmp_path):
    with pytest.raises(DataError, match="data.source: must be one of"):
        build_source(DataConfig(source="wiki"), progress=False)


def test_build_source_dispatch(tmp_path, monkeypatch):
    """Generators and Bi-Induct are built through the registry with the documented arguments."""
    import importlib

    calls = {}

    def fake(module, cls):
        class Fake:
            def __init__(self, *args, **kw):
                calls[cls] = (args, kw)

        monkeypatch.setattr(importlib.import_module(f"ihtrain.data.{module}"), cls, Fake)
        return Fake

    Semi, Markov, Bi = (fake("seminatural", "SeminaturalSource"), fake("markov", "MarkovSource"),
                        fake("biinduct", "BiInductSource"))
    cfg = DataConfig(source="seminatural", cache_dir=str(tmp_path / "c"))
    assert isinstance(build_source(cfg, seed=3), Semi)
    args, kw = calls["SeminaturalSource"]
    assert args == (cfg.seminatural,) and kw["seed"] == 3 and kw["cache_dir"] == str(tmp_path / "c")
    assert isinstance(build_source(dataclasses.replace(cfg, source="markov"), seed=4), Markov)
    assert calls["MarkovSource"] == ((cfg.markov,), {"seed": 4, "context": None})  # context: f(C) (issue 53)
    _write_docs(tmp_path / "corpus")
    bi = dataclasses.replace(_cfg(tmp_path, f"text:{tmp_path}/corpus"),
                             biinduct=dataclasses.replace(cfg.biinduct, mode="forward"))
    assert isinstance(build_source(bi, seed=5, progress=False), Bi)
    (base, bcfg), kw = calls["BiInductSource"]
    assert isinstance(base, NaturalSource) and bcfg is bi.biinduct and kw == {"seed": 5, "context": None}


def test_pretrained_tokenizer_stream(tmp_path):
    """A local tokenizer whose eos is its last id: the stream still uses eos = 0, sep = 1."""
    from tokenizers import Tokenizer as HF
    from tokenizers import decoders, models, pre_tokenizers, trainers

    _write_docs(tmp_path / "corpus")
    tok = HF(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([" ".join(WORDS)] * 3, trainers.BpeTrainer(
        vocab_size=270, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.add_special_tokens(["<|endoftext|>"])
    tok.save(str(tmp_path / "tokenizer.json"))
    st = load_stream(_cfg(tmp_path, f"text:{tmp_path}/corpus", tokenizer=f"pretrained:{tmp_path}"), progress=False)
    full = np.concatenate([st.train, st.val])
    assert st.vocab_size == tok.get_vocab_size() + 1 and st.fingerprint["tokenizer"]["spec"].startswith("pretrained:")
    assert (full == 0).sum() == 4 and full[-1] == 0 and not (full == 1).any()
    first = st.tokenizer.decode(full[: int(np.flatnonzero(full == 0)[0])])
    assert first == (tmp_path / "corpus" / "doc00.txt").read_text().strip()


def test_hf_dataset_saved_with_datasets_is_read_offline_and_hashes_alike(tmp_path, monkeypatch):
    """issue 56: a dataset saved with ``datasets`` (save_to_disk) trains offline through hf:DIR, and
    two fresh builds of it (separate caches) record the same corpus hash."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    texts = [" ".join(np.random.default_rng(i).choice(WORDS, 120)) for i in range(4)]
    datasets.Dataset.from_dict({"text": texts}).save_to_disk(str(tmp_path / "saved"))
    datasets.DatasetDict({"validation": datasets.Dataset.from_dict({"text": texts[:2]})}).save_to_disk(
        str(tmp_path / "saved_dict"))
    a = build_corpus(f"hf:{tmp_path}/saved", 0, tmp_path / "cache_a")
    b = build_corpus(f"hf:{tmp_path}/saved", 0, tmp_path / "cache_b")
    assert a.docs() == texts and a.fingerprint["sha256"] == b.fingerprint["sha256"]
    assert build_corpus(f"hf:{tmp_path}/saved_dict::validation", 0, tmp_path / "cache_c").docs() == texts[:2]
