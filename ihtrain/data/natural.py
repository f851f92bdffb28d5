"""Natural-language token streams: corpus -> tokenizer -> memory-mapped token arrays, all cached.

``data.source`` forms:

- ``builtin-v1`` (default, offline): the builtin corpus built once and shipped compressed in the
  package, byte-identical on every machine (:mod:`ihtrain.data.shipped`).
- ``builtin`` (offline; the source of runs made before ``builtin-v1``): English built at run time
  from the docstrings (read with ``ast``, nothing is imported) and installed docs (``.rst``/``.md``,
  package long descriptions, ``pydoc_data`` topics) of the Python standard library and the packages in
  :data:`BUILTIN_PACKAGES`. Private sub-packages, tests and vendored code are skipped; docstrings
  are deduplicated; documents (one per source file) are shuffled with a fixed seed so the
  validation tail is not one package. The fingerprint lists every source with its version: a
  different install gives a different (recorded) fingerprint.
- ``text:PATH_OR_GLOB``: local text files, one document each, in sorted order. A directory means
  every file under it; globs may use ``**``.
- ``hf:NAME[:CONFIG][:SPLIT]``: ``datasets.load_dataset(NAME, CONFIG, split=SPLIT or "train",
  streaming=True)``. ``NAME`` may be a local directory of text/json/parquet/csv files. For the
  packaged builders ``json``, ``csv``, ``parquet``, ``text``, ``arrow`` the second part is the
  data files instead of a config: ``hf:json:/data/*.jsonl[:SPLIT]``. The text column is ``text``
  if present, else the first string column. At most ``data.max_corpus_chars`` characters are
  read (default cap :data:`HF_DEFAULT_MAX_CHARS`). Hub datasets are cached here by their spec. A
  folder saved with ``save_to_disk`` is read with ``load_from_disk`` (offline).

Each document is followed by the eos token (id 0). The stream's last ``data.val_fraction`` is the
validation split. Cache layout under ``data.cache_dir`` (or ``$IHLAW_CACHE``, ``~/.cache/ihlaw``):
``corpora/`` (text + fingerprint), ``tokenizers/`` (trained BPE), ``tokens/`` (``.npy`` streams,
uint16 when the vocabulary fits), keyed by content so a run never re-tokenizes.
"""

from __future__ import annotations

import ast
import glob
import hashlib
import importlib.metadata as md
import importlib.util
import json
import multiprocessing as mp
import os
import platform
import re
import socket
import sysconfig
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse

import numpy as np

from ihtrain.data.shipped import SHIPPED_CORPORA, shipped_plan
from ihtrain.data.source import DataError, DataSource, check_sample_args, resolve_cache_dir
from ihtrain.data.tokenizer import Tokenizer, check_bpe_vocab, get_tokenizer, tokenizer_info
from ihtrain.data.successors import held_out_bigrams
from ihstats.base.fileio import atomic_write, atomic_write_json, atomic_write_text
from ihstats.base.progress import bar as progress_bar, step

BUILTIN_PACKAGES = ("arviz", "matplotlib", "networkx", "numpy", "pandas", "pymc", "scipy", "seaborn",
                    "statsmodels", "torch", "xarray")  # sorted; those installed are used (stdlib first)
BUILTIN_VERSION = 1  # bump when extraction changes: part of the cache key and the fingerprint
HF_DEFAULT_MAX_CHARS = 50_000_000
HF_PACKAGED = ("json", "csv", "parquet", "text", "arrow")
DOC_SEP = "\x1e"  # ASCII record separator between documents in the cached corpus file
SHUFFLE_SEED = 20250101
_SKIP_DIRS = {"test", "tests", "testing", "__pycache__", "site-packages", "dist-packages", "idlelib",
              "lib2to3", "turtledemo", "ensurepip", "vendored", "externals", "benchmarks"}
_KEEP_PRIVATE = {"_core"}  # numpy keeps its documented functions in numpy/_core
_MIN_DOCSTRING = 20  # characters; shorter docstrings ("Return x.") carry little text
_SEQUENTIAL_MAX_CHARS = 5_000_000  # below this cap the builtin walk runs in-process and stops early


def _tqdm(progress: bool, **kw):
    return progress_bar(show=progress, **kw)


def _sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def normalise(text: str) -> str:
    """Light whitespace clean-up: unify newlines, strip line ends, at most one blank line."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace(DOC_SEP, " ").replace("\x00", "")
    text = "\n".join(line.rstrip() for line in text.split("\n")).strip()
    return re.sub(r"\n{3,}", "\n\n", text)


# ---------------------------------------------------------------------- corpus (cached text)
@dataclass
class Corpus:
    """A cached corpus file (documents joined by :data:`DOC_SEP`) and its fingerprint."""

    path: Path
    fingerprint: dict[str, Any]
    build_s: float = 0.0
    cached: bool = False

    @property
    def sha256(self) -> str:
        return self.fingerprint["sha256"]

    def docs(self) -> list[str]:
        return self.path.read_text(encoding="utf-8").split(DOC_SEP)


def build_corpus(source: str, max_chars: int = 0, cache_dir: str | Path = "", progress: bool = False) -> Corpus:
    """Build (or load from cache) the corpus for a natural ``data.source``."""
    if max_chars < 0:
        raise DataError(f"data.max_corpus_chars: must be >= 0 (0: whole corpus), got {max_chars}")
    if source == "builtin":
        identity, builder = _builtin_identity(max_chars), lambda: _builtin_docs(max_chars, progress)
    elif source in SHIPPED_CORPORA:
        identity, builder = shipped_plan(source, max_chars, DOC_SEP)
    elif source.startswith("text:"):
        identity, builder = _text_plan(source, max_chars)
    elif source.startswith("hf:"):
        identity, builder = _hf_plan(source, max_chars, progress)
    else:
        raise DataError(f"data.source: {source!r} is not a natural source; use builtin-v1, text:PATH_OR_GLOB "
                        "or hf:NAME[:CONFIG][:SPLIT]")
    kind = identity["kind"]
    path = resolve_cache_dir(cache_dir) / "corpora" / f"{kind}-{_sha(identity)[:20]}.txt"
    meta = path.with_suffix(".json")
    if path.is_file() and meta.is_file():
        m = json.loads(meta.read_text())
        return Corpus(path, m["fingerprint"], m.get("build_s", 0.0), cached=True)
    t0 = time.perf_counter()
    step(f"building the {source} corpus on first use (decompress, check, normalise; cached in {path.parent})")
    docs = [d for d in (normalise(d) for d in builder()) if d]
    docs = _truncate(docs, max_chars if max_chars else (HF_DEFAULT_MAX_CHARS if kind == "hf" else 0))
    if not docs:
        raise DataError(f"data.source={source!r}: the corpus is empty (no non-blank documents)")
    if kind == "builtin":  # module order is arbitrary: shuffle so the validation tail mixes sources
        perm = np.random.default_rng(SHUFFLE_SEED).permutation(len(docs))
        docs = [docs[i] for i in perm]
    text = DOC_SEP.join(docs)
    fp = {k: v for k, v in identity.items() if k not in ("files_stat",)}
    fp.update(sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), n_chars=sum(map(len, docs)),
              n_docs=len(docs))
    build_s = time.perf_counter() - t0
    atomic_write_text(path, text)
    atomic_write_json(meta, {"fingerprint": fp, "build_s": build_s})
    return Corpus(path, fp, build_s, cached=False)


def _truncate(docs: list[str], max_chars: int) -> list[str]:
    """The first ``max_chars`` characters of the document sequence (0: all)."""
    if not max_chars:
        return docs
    out, total = [], 0
    for d in docs:
        if total + len(d) >= max_chars:
            if max_chars - total > 0:
                out.append(d[: max_chars - total])
            break
        out.append(d)
        total += len(d)
    return out


# ---------------------------------------------------------------------- builtin corpus
def _builtin_sources() -> list[tuple[str, str, Path]]:
    """(name, version, root directory) of the stdlib and each installed builtin package."""
    out = [("stdlib", platform.python_version(), Path(sysconfig.get_paths()["stdlib"]))]
    for name in BUILTIN_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)  # top-level: locates without importing
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            continue
        try:
            version = md.version(name)
        except md.PackageNotFoundError:
            version = "unknown"
        out.append((name, version, Path(list(spec.submodule_search_locations)[0])))
    return out


def _builtin_identity(max_chars: int) -> dict[str, Any]:
    return {"kind": "builtin", "source": "builtin", "builtin_version": BUILTIN_VERSION,
            "python": platform.python_version(),
            "sources": [{"name": n, "version": v} for n, v, _ in _builtin_sources()],
            "max_corpus_chars": max_chars}


def _builtin_units() -> list[tuple[str, str]]:
    """Work items in a fixed order: (kind, path-or-name) with kind in py | doc | topics | meta."""
    units: list[tuple[str, str]] = []
    for name, _, root in _builtin_sources():
        if name == "stdlib":
            topics = root / "pydoc_data" / "topics.py"
            if topics.is_file():
                units.append(("topics", str(topics)))
        else:
            units.append(("meta", name))
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")
                                 and (not d.startswith("_") or d in _KEEP_PRIVATE))
            for f in sorted(filenames):
                low = f.lower()
                if low.endswith(".py"):
                    units.append(("py", os.path.join(dirpath, f)))
                elif low.endswith((".rst", ".md")) or (low.startswith("readme") and low.endswith(".txt")):
                    units.append(("doc", os.path.join(dirpath, f)))
    return units


def _unit_text(unit: tuple[str, str]) -> list[str]:
    """Pieces of text from one work item (runs in worker processes: must be picklable, no state)."""
    kind, where = unit
    try:
        if kind == "meta":
            body = md.distribution(where).metadata.get_payload() or ""
            return [body] if len(body) > 200 else []
        data = Path(where).read_bytes()
        if len(data) > 4_000_000:
            return []
        if kind == "doc":
            return [data.decode("utf-8", errors="replace")]
        if kind == "topics":
            tree = ast.parse(data)
            for node in tree.body:
                if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "topics" for t in node.targets):
                    topics = ast.literal_eval(node.value)
                    return [topics[k] for k in sorted(topics)]
            return []
        if b'"""' not in data and b"'''" not in data:  # cheap skip: no docstrings possible
            return []
        tree = ast.parse(data)
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError, OSError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc and len(doc) >= _MIN_DOCSTRING:
                out.append(doc)
    return out


def _builtin_docs(max_chars: int, progress: bool) -> list[str]:
    """One document per work item (a .py file's docstrings joined), docstrings deduplicated."""
    units = _builtin_units()
    sequential = (0 < max_chars <= _SEQUENTIAL_MAX_CHARS) or (os.cpu_count() or 1) == 1
    seen: set[str] = set()
    docs: list[str] = []
    total = 0
    bar = _tqdm(progress, total=len(units), desc="builtin corpus", unit="file")
    if sequential:
        results = map(_unit_text, units)
        pool = None
    else:
        # fork where available: spawn re-runs the user's main script, which breaks unguarded scripts;
        # the workers only parse files, so threads held by the parent (torch, tokenizers) do not matter
        method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        pool = ProcessPoolExecutor(max_workers=min(os.cpu_count() or 1, 8), mp_context=mp.get_context(method))
        results = pool.map(_unit_text, units, chunksize=16)
    try:
        for (kind, _), pieces in zip(units, results):
            bar.update(1)
            fresh = []
            for p in pieces:
                p = normalise(p)
                if p and p not in seen:
                    seen.add(p)
                    fresh.append(p)
            if not fresh:
                continue
            new = ["\n\n".join(fresh)] if kind == "py" else fresh
            docs += new
            total += sum(map(len, new))
            if max_chars and total >= max_chars:
                break
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return docs


# ---------------------------------------------------------------------- text: files
def _files_under(pattern: str) -> list[Path]:
    p = Path(pattern).expanduser()
    if p.is_dir():
        found = [f for f in p.rglob("*") if f.is_file() and not f.name.startswith(".")]
    else:
        found = [Path(f) for f in glob.glob(str(p), recursive=True) if os.path.isfile(f)]
    return sorted(found)


def _files_stat(files: list[Path]) -> list[list]:
    return [[str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns] for f in files]


def _text_plan(source: str, max_chars: int) -> tuple[dict, Callable[[], list[str]]]:
    pattern = source[len("text:"):]
    files = _files_under(pattern) if pattern else []
    if not files:
        raise DataError(f"data.source={source!r}: no files match {pattern!r}")
    identity = {"kind": "text", "source": source, "max_corpus_chars": max_chars,
                "files": [[f.name, f.stat().st_size] for f in files], "files_stat": _files_stat(files)}

    def build() -> list[str]:
        docs = [f.read_text(encoding="utf-8", errors="replace") for f in files]
        if not any(d.strip() for d in docs):
            raise DataError(f"data.source={source!r}: the corpus is empty ({len(files)} file(s) matched, all blank)")
        return docs

    return identity, build


# ---------------------------------------------------------------------- hf: datasets
def parse_hf_spec(source: str) -> dict[str, Any]:
    """``hf:NAME[:CONFIG][:SPLIT]`` (or ``hf:BUILDER:DATA_FILES[:SPLIT]``) -> its parts."""
    parts = source[len("hf:"):].split(":")
    if len(parts) > 3:
        raise DataError(f"data.source={source!r}: too many ':'-separated parts; expected "
                        "hf:NAME[:CONFIG][:SPLIT] or hf:json|csv|parquet|text:DATA_FILES[:SPLIT]")
    name = parts[0]
    if not name:
        raise DataError(f"data.source={source!r}: missing dataset name after 'hf:'")
    second = parts[1] if len(parts) > 1 and parts[1] else None
    split = parts[2] if len(parts) > 2 and parts[2] else "train"
    if name in HF_PACKAGED:
        if not second:
            raise DataError(f"data.source={source!r}: the {name!r} builder needs data files: hf:{name}:PATH_OR_GLOB")
        return {"name": name, "config": None, "data_files": second, "split": split}
    return {"name": name, "config": second, "data_files": None, "split": split}


def _hub_reachable(timeout: float = 3.0) -> bool:
    """A quick TCP check, so an offline machine gets a clear error instead of minutes of retries."""
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _open_hf(spec: dict, kw: dict):
    """The rows of an ``hf:`` source: a folder written by ``datasets``' ``save_to_disk`` (a
    Dataset, or a DatasetDict whose ``split`` is read) through ``load_from_disk``, anything else
    streamed by ``load_dataset`` (which refuses a saved folder)."""
    import datasets

    root = Path(spec["name"]).expanduser()
    if root.is_dir() and any((root / f).is_file() for f in ("state.json", "dataset_dict.json")):
        ds = datasets.load_from_disk(str(root))
        return ds[spec["split"]] if isinstance(ds, datasets.DatasetDict) else ds
    return datasets.load_dataset(spec["name"], spec["config"], split=spec["split"], streaming=True, **kw)


def _hf_plan(source: str, max_chars: int, progress: bool) -> tuple[dict, Callable[[], list[str]]]:
    import datasets

    spec = parse_hf_spec(source)
    local_dir = spec["data_files"] is None and os.path.isdir(spec["name"])
    files = (_files_under(spec["data_files"]) if spec["data_files"] else
             _files_under(spec["name"]) if local_dir else [])
    if (spec["data_files"] or local_dir) and not files:
        raise DataError(f"data.source={source!r}: no files match {spec['data_files'] or spec['name']!r}")
    cap = max_chars or HF_DEFAULT_MAX_CHARS
    identity = {"kind": "hf", "source": source, **spec, "max_corpus_chars": max_chars,
                "datasets": datasets.__version__, "files": [[f.name, f.stat().st_size] for f in files],
                "files_stat": _files_stat(files)}

    def build() -> list[str]:
        offline = any(os.environ.get(v, "").lower() in ("1", "true", "yes")
                      for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))
        if not files and not offline and not _hub_reachable():
            raise DataError(f"data.source={source!r}: the Hugging Face hub is unreachable; use local files "
                            "(hf:json:PATH_OR_GLOB, hf:text:..., hf:parquet:..., hf:LOCAL_DIR or text:PATH_OR_GLOB), "
                            "or set HF_HUB_OFFLINE=1 for a dataset already in the HF cache")
        try:
            kw = {"data_files": str(Path(spec["data_files"]).expanduser())} if spec["data_files"] else {}
            ds = _open_hf(spec, kw)
        except Exception as e:  # hub/network/format errors come in many types: report one line
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            hint = "" if files else " (if the hub is unreachable, use local files: hf:json:PATH_OR_GLOB or hf:LOCAL_DIR)"
            raise DataError(f"data.source={source!r}: load_dataset failed: {type(e).__name__}: {msg}{hint}") from None
        docs, total, column = [], 0, None
        bar = _tqdm(progress, total=cap, desc=f"reading {spec['name']}", unit="char", unit_scale=True)
        for row in ds:
            if column is None:
                column = "text" if isinstance(row.get("text"), str) else next(
                    (k for k, v in row.items() if isinstance(v, str)), None)
                if column is None:
                    raise DataError(f"data.source={source!r}: no string column in the dataset (columns: {list(row)})")
            text = row.get(column) or ""
            docs.append(text)
            total += len(text)
            bar.update(len(text))
            if total >= cap:
                break
        bar.close()
        return docs

    return identity, build


# ---------------------------------------------------------------------- token streams
@dataclass
class TokenStream:
    """A tokenized corpus: ``train``/``val`` are read-only memory-mapped 1-D integer arrays."""

    train: np.ndarray
    val: np.ndarray
    tokenizer: Tokenizer
    vocab_size: int
    special_tokens: dict[str, int]
    fingerprint: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)  # seconds; not part of the fingerprint


def _tokenize_corpus(corpus: Corpus, tok: Tokenizer, dtype, progress: bool, batch_docs: int = 256) -> np.ndarray:
    """Whole corpus -> one 1-D array, each document followed by eos (batched ``encode_batch``)."""
    docs = corpus.docs()
    parts = []
    bar = _tqdm(progress, total=corpus.fingerprint["n_chars"], desc="tokenizing", unit="char", unit_scale=True)
    for i in range(0, len(docs), batch_docs):
        batch = docs[i:i + batch_docs]
        parts.append(tok.encode_to_array(batch, dtype=dtype))
        bar.update(sum(map(len, batch)))
    bar.close()
    return np.concatenate(parts)


def load_stream(data_cfg: Any, progress: bool = True) -> TokenStream:
    """Corpus -> tokenizer -> cached token memmap, split into train and the last ``val_fraction``."""
    if data_cfg.tokenizer == "bpe":
        check_bpe_vocab(data_cfg.vocab_size)  # fail before a long corpus build
    if not 0 < data_cfg.val_fraction < 0.5:
        raise DataError(f"data.val_fraction: must be in (0, 0.5), got {data_cfg.val_fraction}")
    cache = resolve_cache_dir(data_cfg.cache_dir)
    t0 = time.perf_counter()
    corpus = build_corpus(data_cfg.source, data_cfg.max_corpus_chars, cache, progress)
    t1 = time.perf_counter()
    tok = get_tokenizer(data_cfg.tokenizer, corpus.docs, corpus.sha256, data_cfg.vocab_size, cache, progress)
    t2 = time.perf_counter()
    dtype = np.uint16 if tok.vocab_size <= 65536 else np.uint32
    path = cache / "tokens" / f"{corpus.sha256[:20]}-{tok.hash[:20]}.npy"
    if not path.is_file():
        arr = _tokenize_corpus(corpus, tok, dtype, progress)

        def write(tmp: str) -> None:
            with open(tmp, "wb") as f:
                np.save(f, arr)

        atomic_write(path, write)
    tokens = np.load(path, mmap_mode="r")
    t3 = time.perf_counter()
    n = int(tokens.shape[0])
    n_val = max(1, int(round(n * data_cfg.val_fraction)))
    fp = dict(corpus.fingerprint)
    fp.update(tokenizer=tokenizer_info(tok, data_cfg.tokenizer), n_tokens=n, n_train=n - n_val, n_val=n_val,
              val_fraction=data_cfg.val_fraction, dtype=np.dtype(dtype).name)
    timings = {"corpus_s": t1 - t0, "corpus_build_s": 0.0 if corpus.cached else corpus.build_s,
               "tokenizer_s": t2 - t1, "tokens_s": t3 - t2, "total_s": t3 - t0}
    return TokenStream(tokens[: n - n_val], tokens[n - n_val:], tok, tok.vocab_size, dict(tok.special_tokens),
                       fp, timings)


class NaturalSource:
    """``TokenSource`` over a :class:`TokenStream`: uniform random windows from train."""

    def __init__(self, stream: TokenStream):
        self.stream = stream
        self.tokenizer = stream.tokenizer
        self.vocab_size = int(stream.vocab_size)
        self.special_tokens = dict(stream.special_tokens)
        self.ordinary_range = (len(self.special_tokens), self.vocab_size)
        self.fingerprint = dict(stream.fingerprint)

    def _check(self, n_avail: int, length: int, split: str) -> None:
        if length > n_avail:
            src = self.fingerprint.get("source", self.fingerprint.get("kind"))
            fix = ("raise data.val_fraction" if split == "val" else "use a larger corpus (data.max_corpus_chars, "
                   "data.source)") + " or a shorter train.context"
            raise DataError(f"data.source={src!r}: the {split} split has {n_avail} tokens, fewer than one "
                            f"window of {length}; {fix}")

    def sample(self, rng: np.random.Generator, n_seqs: int, length: int,
               progress: float = 0.0) -> tuple[np.ndarray, dict[str, float]]:
        """``n_seqs`` uniform random windows (int64 ``(n_seqs, length)``); no per-step stats."""
        check_sample_args(n_seqs, length)
        train = self.stream.train
        self._check(train.shape[0], length, "train")
        starts = rng.integers(0, train.shape[0] - length + 1, size=n_seqs)  # (n_seqs,)
        idx = starts[:, None] + np.arange(length)  # (n_seqs, length)
        return np.array(train[idx], dtype=np.int64), {}

    def val_sample(self, n_seqs: int, length: int) -> np.ndarray:
        """Evenly spaced windows over the validation split (deterministic, may overlap if short)."""
        check_sample_args(n_seqs, length)
        self._check((val := self.stream.val).shape[0], length, "val")
        starts = np.linspace(0, val.shape[0] - length, n_seqs).round().astype(np.int64)  # (n_seqs,)
        return np.array(val[starts[:, None] + np.arange(length)], dtype=np.int64)

    successor_stats = held_out_bigrams  # natural text has no generator: its held-out split's bigram counts

    def __repr__(self) -> str:
        fp = self.fingerprint
        return (f"NaturalSource({fp.get('source', fp.get('kind'))!r}, vocab_size={self.vocab_size}, "
                f"train={fp.get('n_train')}, val={fp.get('n_val')})")


# ---------------------------------------------------------------------------- the registry's entries
def _build_source(data_cfg: Any, seed: int = 0, progress: bool = True, context: int | None = None) -> NaturalSource:
    return NaturalSource(load_stream(data_cfg, progress=progress))


# a natural source's cached stream is the source itself; the first shipped corpus (builtin-v1: the
# same bytes on every machine) is the default source
_DEFAULT = next(iter(SHIPPED_CORPORA))
SOURCES = tuple(DataSource(name, _build_source, stream=lambda data_cfg: data_cfg, usage=usage, default=name == _DEFAULT)
                for name, usage in (("builtin", "builtin"), *((n, n) for n in SHIPPED_CORPORA),
                                    ("text:", "text:PATH_OR_GLOB"), ("hf:", "hf:NAME[:CONFIG][:SPLIT]")))
