"""Natural-text corpora shipped with the package: fixed, versioned, byte-identical on every machine.

``data.source = "builtin-v1"`` reads ``ihtrain/data/corpus/builtin-v1.txt.xz`` (xz, 4.0 MB; 23.1M
characters of English in 3,155 documents joined by ``natural.DOC_SEP``). It is the ``builtin``
corpus as built once, on Python 3.11.7 with the package versions listed in
``ihtrain/data/corpus/README.md`` -- the very text (same sha256) the shipped CPU reference runs
(cpu-tiny, freqrel, biinduct) recorded. The ``builtin`` source still builds its text from the
installed packages' docstrings, so it differs between machines (the H200 runs recorded another);
``builtin-v1`` does not.

The decompressed text must hash to the sha256 pinned here (:data:`SHIPPED_CORPORA`): an edited or
damaged file is refused by name before any token is drawn, and the hash goes into each run's data
fingerprint (``corpus_hash``), which a resume checks (``ihtrain.run_files.check_resumed_data``).
A new corpus is a new name (``builtin-v2``) with its own file and pin, so no run's data changes
under it.
"""

from __future__ import annotations

import hashlib
import lzma
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ihtrain.data.source import DataError

CORPUS_DIR = Path(__file__).parent / "corpus"


@dataclass(frozen=True)
class ShippedCorpus:
    """One shipped corpus: its file in :data:`CORPUS_DIR` and the sha256 of its decompressed text."""

    file: str
    sha256: str


SHIPPED_CORPORA: dict[str, ShippedCorpus] = {
    "builtin-v1": ShippedCorpus("builtin-v1.txt.xz",
                                "5913a143e062841592a1080c2356d184883fa3da53eb27cfcf9bf8d7e0d132ba"),
}


def corpus_path(name: str) -> Path:
    return CORPUS_DIR / SHIPPED_CORPORA[name].file


def recorded_path(name: str) -> str:
    """``ihtrain/data/corpus/FILE``: the file as a fingerprint records it (the same string on every
    machine, in a checkout or an installed package)."""
    return f"ihtrain/data/corpus/{SHIPPED_CORPORA[name].file}"


def read_shipped(name: str) -> str:
    """The whole text of shipped corpus ``name``, refused unless it hashes to its pinned sha256."""
    corpus, path = SHIPPED_CORPORA[name], corpus_path(name)
    restore = (f"restore it (git checkout -- {recorded_path(name)}, or reinstall ihlaw); a new corpus "
               f"gets a new name, e.g. {name.rsplit('-v', 1)[0]}-v2")
    try:
        raw = lzma.decompress(path.read_bytes())
    except FileNotFoundError:
        raise DataError(f"data.source={name!r}: the corpus file {path} is missing; {restore}") from None
    except (lzma.LZMAError, OSError) as e:
        raise DataError(f"data.source={name!r}: the corpus file {path} cannot be read ({e}); {restore}") from None
    got = hashlib.sha256(raw).hexdigest()
    if got != corpus.sha256:
        raise DataError(f"data.source={name!r}: the corpus file {path} holds text with sha256 {got[:12]}..., "
                        f"not the {corpus.sha256[:12]}... {name} is; {restore}")
    return raw.decode("utf-8")


def shipped_plan(name: str, max_chars: int, sep: str) -> tuple[dict[str, Any], Callable[[], list[str]]]:
    """``(identity, build)`` for :func:`ihtrain.data.natural.build_corpus`: the identity keys the
    cache and enters the fingerprint; ``build`` returns the documents (split at ``sep``), only as
    many as the first ``max_chars`` characters need (0: all), after the whole file's hash check."""
    corpus = SHIPPED_CORPORA[name]
    identity = {"kind": "shipped", "source": name, "corpus": name,
                "file": recorded_path(name), "corpus_hash": corpus.sha256,
                "max_corpus_chars": max_chars}

    def build() -> list[str]:
        docs, total = [], 0
        for doc in read_shipped(name).split(sep):
            docs.append(doc)
            total += len(doc)
            if max_chars and total >= max_chars:
                break
        return docs

    return identity, build


__all__ = ["CORPUS_DIR", "SHIPPED_CORPORA", "ShippedCorpus", "corpus_path", "read_shipped", "recorded_path", "shipped_plan"]
