"""Tokenizers for natural corpora: a byte-level BPE trained on the corpus, or a local pretrained one.

``data.tokenizer``:

- ``bpe``: byte-level BPE trained with Hugging Face ``tokenizers`` on the corpus, with
  ``data.vocab_size`` entries in total: ``<|endoftext|>`` = 0 (eos), ``<|sep|>`` = 1 (sep), the 256
  byte tokens, then merges. Training is deterministic and cached on disk by (corpus fingerprint,
  vocab size), on an evenly spaced sample of at most :data:`BPE_TRAIN_CHARS` characters of
  documents. A small corpus can run out of merges: the real size is ``Tokenizer.vocab_size``.
- ``pretrained:PATH``: a local ``tokenizer.json``, a directory holding one, or a directory with
  GPT-2-style ``vocab.json`` + ``merges.txt``. Nothing is downloaded. Its end-of-text token (or an
  added ``<|endoftext|>``) is moved to id 0 and a separator (an existing one or an added
  ``<|sep|>``) to id 1 by swapping ids, so every natural source has ``eos = 0, sep = 1``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ihtrain.data.source import EOS, SEP, SPECIAL_TOKENS, DataError
from ihstats.base.fileio import atomic_write_text
from ihstats.base.progress import interactive, step

EOS_TEXT, SEP_TEXT = "<|endoftext|>", "<|sep|>"
N_BYTES = 256
_EOS_CANDIDATES = (EOS_TEXT, "</s>", "<eos>", "<|eos|>", "[EOS]", "<|end_of_text|>")
_SEP_CANDIDATES = (SEP_TEXT, "[SEP]", "<sep>", "<|sep|>")
BPE_VERSION = 2  # bump when the training recipe changes: it is part of the cache key
BPE_TRAIN_CHARS = 8_000_000  # train on an evenly spaced sample of documents this large (speed)


class Tokenizer:
    """A ``tokenizers.Tokenizer`` seen through ids where eos = 0 and sep = 1.

    ``to_ours`` maps the wrapped tokenizer's ids to ours (``None``: identity, the trained BPE).
    """

    def __init__(self, tok, name: str, to_ours: np.ndarray | None = None):
        self._tok = tok
        self.name = name
        self.vocab_size = int(tok.get_vocab_size(with_added_tokens=True))
        self._to_ours = to_ours
        self._to_raw = None if to_ours is None else np.argsort(to_ours)
        self.special_tokens = dict(SPECIAL_TOKENS)
        self.eos_id, self.sep_id = EOS, SEP
        blob = tok.to_str() + ("" if to_ours is None else ",".join(map(str, to_ours.tolist())))
        self.hash = hashlib.sha256(blob.encode()).hexdigest()

    # ------------------------------------------------------------------ encode / decode
    def encode(self, text: str) -> list[int]:
        return self.encode_batch([text])[0]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        if self._to_ours is None:
            return [e.ids for e in encs]
        return [self._to_ours[np.asarray(e.ids, dtype=np.int64)].tolist() for e in encs]

    def encode_to_array(self, texts: Sequence[str], dtype=np.int64, append_eos: bool = True) -> np.ndarray:
        """Concatenated ids of ``texts`` (each followed by eos when ``append_eos``), 1-D ``dtype``."""
        # encode_batch_fast (tokenizers >= 0.20) skips character offsets we never use: ~20% faster
        encode = getattr(self._tok, "encode_batch_fast", self._tok.encode_batch)
        encs = encode(list(texts), add_special_tokens=False)
        flat: list[int] = []
        raw_eos = EOS if self._to_raw is None else int(self._to_raw[EOS])
        for e in encs:
            flat.extend(e.ids)
            if append_eos:
                flat.append(raw_eos)
        arr = np.asarray(flat, dtype=np.int64)
        if self._to_ours is not None:
            arr = self._to_ours[arr]
        return arr.astype(dtype, copy=False)

    def decode(self, ids: Iterable[int]) -> str:
        ids = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=np.int64)
        if self._to_raw is not None:
            ids = self._to_raw[ids]
        return self._tok.decode(ids.tolist(), skip_special_tokens=False)

    def id_to_token(self, i: int) -> str | None:
        raw = i if self._to_raw is None else int(self._to_raw[i])
        return self._tok.id_to_token(raw)

    def save(self, path: str | Path) -> None:
        """Write the wrapped tokenizer's JSON (the id swap of a pretrained one is not included)."""
        atomic_write_text(path, self._tok.to_str())

    def __repr__(self) -> str:
        return f"Tokenizer({self.name!r}, vocab_size={self.vocab_size}, hash={self.hash[:12]})"


# ---------------------------------------------------------------------- byte-level BPE
def check_bpe_vocab(vocab_size: int) -> None:
    need = N_BYTES + len(SPECIAL_TOKENS)
    if vocab_size < need:
        raise DataError(f"data.vocab_size: {vocab_size} is too small for byte-level BPE; need >= {need} "
                        f"({N_BYTES} byte tokens + {len(SPECIAL_TOKENS)} special tokens)")


def train_bpe(docs: Sequence[str], vocab_size: int, progress: bool = False) -> Tokenizer:
    """Train a byte-level BPE with ``vocab_size`` entries (specials at ids 0, 1) on ``docs``."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    check_bpe_vocab(vocab_size)
    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    if progress:
        step(f"training a byte-level BPE tokenizer ({vocab_size} tokens) on {len(docs)} documents")
    # the trainer's own (Rust) bars only on a terminal: in a log file they print blank lines
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=progress and interactive(),
                                  special_tokens=[EOS_TEXT, SEP_TEXT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(docs, trainer=trainer, length=len(docs))
    if tok.token_to_id(EOS_TEXT) != EOS or tok.token_to_id(SEP_TEXT) != SEP:  # guards the contract
        raise RuntimeError("BPE training did not put the special tokens at ids 0 and 1")
    return Tokenizer(tok, f"bpe-{vocab_size}")


def bpe_training_sample(docs: Sequence[str], max_chars: int = BPE_TRAIN_CHARS) -> list[str]:
    """Evenly spaced documents totalling about ``max_chars`` (all of them if the corpus is smaller).

    Merge statistics for a few hundred merges settle long before millions of characters, and
    training time grows with the text: a sample keeps the first build fast.
    """
    total = sum(map(len, docs))
    if total <= max_chars:
        return list(docs)
    k = max(1, int(np.ceil(len(docs) * max_chars / total)))
    return [docs[i] for i in np.unique(np.linspace(0, len(docs) - 1, k).round().astype(int))]


def bpe_cache_path(cache_dir: Path, corpus_sha: str, vocab_size: int) -> Path:
    return Path(cache_dir) / "tokenizers" / f"bpe{BPE_VERSION}-v{vocab_size}-{corpus_sha[:16]}.json"


def get_tokenizer(spec: str, docs_fn, corpus_sha: str, vocab_size: int, cache_dir: Path,
                  progress: bool = False) -> Tokenizer:
    """``bpe`` (trained on ``docs_fn()``, cached) or ``pretrained:PATH`` (local files only)."""
    if spec.startswith("pretrained:"):
        return load_pretrained(spec[len("pretrained:"):])
    if spec != "bpe":
        raise DataError(f"data.tokenizer: must be 'bpe' or 'pretrained:NAME_OR_PATH', got {spec!r}")
    from tokenizers import Tokenizer as HFTokenizer

    check_bpe_vocab(vocab_size)
    path = bpe_cache_path(cache_dir, corpus_sha, vocab_size)
    if path.is_file():
        return Tokenizer(HFTokenizer.from_file(str(path)), f"bpe-{vocab_size}")
    tok = train_bpe(bpe_training_sample(docs_fn()), vocab_size, progress=progress)
    tok.save(path)
    return tok


# ---------------------------------------------------------------------- pretrained (local)
def load_pretrained(name_or_path: str) -> Tokenizer:
    """Load a local tokenizer; move eos to id 0 and sep to id 1 (adding them if missing)."""
    from tokenizers import AddedToken
    from tokenizers import Tokenizer as HFTokenizer

    p = Path(name_or_path).expanduser()
    if not name_or_path or not p.exists():
        raise DataError(f"data.tokenizer: pretrained tokenizer path {name_or_path!r} does not exist "
                        "(give a local tokenizer.json or a directory holding one; nothing is downloaded)")
    if p.is_dir() and (p / "tokenizer.json").is_file():
        p = p / "tokenizer.json"
    try:
        if p.is_file():
            tok = HFTokenizer.from_file(str(p))
        elif (p / "vocab.json").is_file() and (p / "merges.txt").is_file():
            from tokenizers import ByteLevelBPETokenizer

            tok = ByteLevelBPETokenizer(str(p / "vocab.json"), str(p / "merges.txt"))._tokenizer
        else:
            raise DataError(f"data.tokenizer: {str(p)!r} holds neither tokenizer.json nor vocab.json + merges.txt")
    except DataError:
        raise
    except Exception as e:  # tokenizers raises plain Exception on malformed JSON
        raise DataError(f"data.tokenizer: cannot read pretrained tokenizer {str(p)!r}: "
                        f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None

    def find_or_add(candidates: tuple[str, ...]) -> int:
        for c in candidates:
            i = tok.token_to_id(c)
            if i is not None:
                return int(i)
        tok.add_special_tokens([AddedToken(candidates[0], special=True)])
        return int(tok.token_to_id(candidates[0]))

    raw_eos = find_or_add(_EOS_CANDIDATES)
    raw_sep = find_or_add(_SEP_CANDIDATES)
    if raw_sep == raw_eos:  # a tokenizer whose eos doubles as separator: add a distinct one
        tok.add_special_tokens([AddedToken(SEP_TEXT, special=True)])
        raw_sep = int(tok.token_to_id(SEP_TEXT))
    V = int(tok.get_vocab_size(with_added_tokens=True))
    to_ours = np.arange(V, dtype=np.int64)
    for raw, ours in ((raw_eos, EOS), (raw_sep, SEP)):  # two swaps: raw -> ours
        j = int(np.flatnonzero(to_ours == ours)[0])
        to_ours[j], to_ours[raw] = to_ours[raw], ours
    identity = bool(np.array_equal(to_ours, np.arange(V)))
    return Tokenizer(tok, f"pretrained:{name_or_path}", None if identity else to_ours)


def tokenizer_info(tok: Tokenizer, spec: str) -> dict:
    """The tokenizer's part of a data fingerprint."""
    return {"spec": spec, "name": tok.name, "vocab_size": tok.vocab_size, "sha256": tok.hash}


__all__ = ["EOS_TEXT", "SEP_TEXT", "Tokenizer", "bpe_cache_path", "check_bpe_vocab", "get_tokenizer",
           "load_pretrained", "tokenizer_info", "train_bpe", "bpe_training_sample"]
