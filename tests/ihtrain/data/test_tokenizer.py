"""Byte-level BPE and local pretrained tokenizers: special ids, round trips, determinism, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ihtrain.data.source import DataError
from ihtrain.data.tokenizer import (EOS_TEXT, SEP_TEXT, Tokenizer, get_tokenizer, load_pretrained,
                                    train_bpe)

DOCS = [
    "The quick brown fox jumps over the lazy dog. " * 5,
    "Return the sum of the array elements over the given axis.\n\nParameters\n----------\na : array_like",
    "Induction heads copy the token that followed an earlier occurrence of the current token.",
    "Ünïcödé text, emoji 🙂 and tabs\tare bytes too.",
] * 4


@pytest.fixture(scope="module")
def bpe() -> Tokenizer:
    return train_bpe(DOCS, 300)


def test_special_ids_and_alphabet(bpe):
    assert bpe.special_tokens == {"eos": 0, "sep": 1}
    assert bpe.id_to_token(0) == EOS_TEXT and bpe.id_to_token(1) == SEP_TEXT
    # 256 byte tokens come right after the specials, then merges; a small corpus may stop early
    assert 258 < bpe.vocab_size <= 300
    ids = np.array(bpe.encode_batch(DOCS)[0] + bpe.encode_batch(DOCS)[3])
    assert ids.min() >= 2 and ids.max() < bpe.vocab_size


@pytest.mark.parametrize("text", [d for d in DOCS[:4]] + ["", "never seen: Zqxj ~~~ \x00 \u2603"])
def test_round_trip(bpe, text):
    assert bpe.decode(bpe.encode(text)) == text


def test_merges_compress(bpe):
    text = DOCS[0]
    assert len(bpe.encode(text)) < 0.5 * len(text.encode())


def test_encode_to_array_appends_eos(bpe):
    arr = bpe.encode_to_array(["ab", "cd"], dtype=np.uint16)
    assert arr.dtype == np.uint16
    assert list(arr) == bpe.encode("ab") + [0] + bpe.encode("cd") + [0]


def test_training_is_deterministic(bpe):
    again = train_bpe(DOCS, 300)
    assert again.hash == bpe.hash
    assert again.encode(DOCS[1]) == bpe.encode(DOCS[1])


def test_vocab_too_small():
    with pytest.raises(DataError, match=r"data.vocab_size: 100 is too small.*258"):
        train_bpe(DOCS, 100)


def test_bpe_cache(tmp_path, bpe):
    calls = []

    def docs():
        calls.append(1)
        return DOCS

    a = get_tokenizer("bpe", docs, "ab" * 32, 300, tmp_path)
    b = get_tokenizer("bpe", docs, "ab" * 32, 300, tmp_path)
    assert len(calls) == 1 and a.hash == b.hash == bpe.hash
    with pytest.raises(DataError, match="data.tokenizer"):
        get_tokenizer("wordpiece", docs, "ab" * 32, 300, tmp_path)


# ---------------------------------------------------------------------- pretrained
def _gpt2_like(tmp_path):
    """A tokenizer.json whose eos sits at the last id (as in GPT-2) and has no separator."""
    from tokenizers import Tokenizer as HF
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = HF(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(DOCS, trainers.BpeTrainer(vocab_size=280, show_progress=False,
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.add_special_tokens([EOS_TEXT])
    path = tmp_path / "tok" / "tokenizer.json"
    path.parent.mkdir()
    tok.save(str(path))
    return tok, path


def test_pretrained_remaps_specials(tmp_path):
    raw, path = _gpt2_like(tmp_path)
    raw_eos = raw.token_to_id(EOS_TEXT)
    assert raw_eos > 1
    for spec in (str(path), str(path.parent)):  # a file or the directory holding it
        tok = load_pretrained(spec)
        assert tok.vocab_size == raw.get_vocab_size() + 1  # <|sep|> was added
        assert tok.id_to_token(0) == EOS_TEXT and tok.id_to_token(1) == SEP_TEXT
        text = DOCS[2]
        ids = tok.encode(text)
        assert tok.decode(ids) == text
        assert 0 not in ids and 1 not in ids  # raw ids 0/1 were moved elsewhere
        # same tokens as the raw tokenizer, up to the id swap
        assert [tok.id_to_token(i) for i in ids] == raw.encode(text).tokens
        assert list(tok.encode_to_array([text]))[-1] == 0


def test_pretrained_missing_path(tmp_path):
    with pytest.raises(DataError, match=r"data.tokenizer: pretrained tokenizer path .*nope.* does not exist"):
        load_pretrained(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="neither tokenizer.json"):
        load_pretrained(str(tmp_path / "empty"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"not": "a tokenizer"}))
    with pytest.raises(DataError, match="cannot read pretrained tokenizer"):
        load_pretrained(str(bad))


def test_training_sample_is_even_and_bounded():
    from ihtrain.data.tokenizer import bpe_training_sample

    docs = [f"{i:04d}" * 25 for i in range(1000)]  # 100 chars each
    assert bpe_training_sample(docs, 10**6) == docs
    sample = bpe_training_sample(docs, 10_000)
    assert 95 <= len(sample) <= 100 and sample[0] == docs[0] and sample[-1] == docs[-1]
    idx = [int(d[:4]) for d in sample]
    assert max(np.diff(idx)) <= 11  # evenly spread over the corpus, not its head
