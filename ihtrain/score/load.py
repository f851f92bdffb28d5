"""Which checkpoints a series holds, and loading one: local directories or Hub revisions.

A :class:`Revision` is one checkpoint: its name, its training step and where it loads from (a
local directory, or a Hub model name and revision). :func:`resolve_revisions` turns the command
line into them; :func:`load_checkpoint` loads one with ``transformers`` (eager attention, so the
patterns are formed), :func:`vocabulary` reads the tokenizer's ordinary range once per series.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

HF_CONFIG = "config.json"  # what makes a directory a transformers checkpoint
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
OFFLINE_HINT = ("without network, download the revisions where there is one (e.g. "
                "`hf download MODEL --revision REV --local-dir DIR/REV`) and pass DIR")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class ScoreError(ValueError):
    """A scoring command cannot go on; the message names the model, revision or flag and what to do."""


@dataclass(frozen=True)
class Revision:
    name: str  # the revision as given (a sub-directory name, or a Hub revision like "step1000")
    step: int  # the training step it was saved at
    source: str  # a local directory, or the Hub model name
    hub_revision: str | None = None  # None: ``source`` is a local directory

    def record(self, B: int, C: int) -> dict[str, Any]:
        """Its entry in series.json (``ihstats.base.series.REVISION_KEYS``): tokens = step * B * C."""
        src = self.source if self.hub_revision is None else f"{self.source}@{self.hub_revision}"
        return {"revision": self.name, "step": self.step, "tokens": self.step * B * C, "source": src}


#: the revision names a step is read from, as the WHOLE name (``step1000``, ``checkpoint-500``);
#: any other name (``main``, ``step100-ep2``, ``v2-step10``) needs ``--steps``: guessing from its
#: digits would put a revision at the wrong step
STEP_NAME = re.compile(r"step(\d+)|checkpoint-(\d+)")


def step_of(name: str) -> int:
    """The training step in a revision's name, when the whole name is :data:`STEP_NAME`
    (``step1000`` -> 1000, ``checkpoint-500`` -> 500); any other name is refused."""
    m = STEP_NAME.fullmatch(name)
    if m is None:
        raise ScoreError(f"revision {name!r}: no step in its name (only stepN or checkpoint-N as the whole "
                         f"name give one); pass --steps, one per revision")
    return int(m.group(1) or m.group(2))


def _local_names(root: Path, revisions: list[str] | None) -> list[str]:
    if revisions:
        _check_inside(root, revisions)
        missing = [r for r in revisions if not (root / r / HF_CONFIG).is_file()]
        if missing:
            raise ScoreError(f"{root}: revision(s) {', '.join(missing)} are not checkpoint directories "
                             f"(a sub-directory with {HF_CONFIG}); have: {', '.join(_local_names(root, None))}")
        return list(revisions)
    names = sorted(p.name for p in root.iterdir() if (p / HF_CONFIG).is_file())
    if not names:
        raise ScoreError(f"{root}: no checkpoint directories (sub-directories with {HF_CONFIG}) in it")
    return names


def _check_inside(root: Path, names: list[str]) -> None:
    """Every revision is its own folder inside MODEL: none reached through ``..``, an absolute
    path or a link pointing out of it, and no two names (a symlink beside its target) one folder."""
    top, seen = root.resolve(), {}
    for name in names:
        try:
            real = (root / name).resolve()
        except (OSError, RuntimeError) as e:  # a symlink loop (RuntimeError before Python 3.13), a name too long
            raise ScoreError(f"{root}: revision {name[:80]!r}: cannot resolve it ({e}); give a checkpoint folder") from None
        if real == top or top not in real.parents:
            raise ScoreError(f"{root}: revision {name!r} resolves to {real}, outside the model folder; "
                             f"move the checkpoint into {root}")
        if real in seen:
            raise ScoreError(f"{root}: revisions {seen[real]!r} and {name!r} are the same folder {real} "
                             f"(a symlink?); keep one")
        seen[real] = name


def resolve_revisions(model: str, revisions: list[str] | None, steps: list[int] | None) -> list[Revision]:
    """The checkpoints of ``model``, ordered by step.

    ``model`` a local directory: its sub-directories holding a ``config.json`` (all of them, or
    those named in ``revisions``), or the directory itself when it is one checkpoint. Else a Hub
    model name, whose ``revisions`` must be given. Steps come from ``steps`` (one per revision)
    or from each name (:func:`step_of`).
    """
    root = Path(model)
    if root.is_dir():
        single = (root / HF_CONFIG).is_file() and not revisions
        names = [root.name] if single else _local_names(root, revisions)
        if not single:
            _check_inside(root, names)
        paths = [root] if single else [root / n for n in names]
        hub: list[str | None] = [None] * len(names)
        sources = [str(p) for p in paths]
    elif not revisions:
        raise ScoreError(f"MODEL {model!r}: not a local directory; a Hub model needs --revisions (e.g. step1000)")
    else:
        names, hub, sources = list(revisions), list(revisions), [model] * len(revisions)
    if steps is not None and len(steps) != len(names):
        raise ScoreError(f"--steps: {len(steps)} given for {len(names)} revisions ({', '.join(names)}); give one each")
    found = steps if steps is not None else [step_of(n) for n in names]
    revs = sorted((Revision(n, int(s), src, h) for n, s, src, h in zip(names, found, sources, hub)),
                  key=lambda r: r.step)
    dup = sorted({r.step for r in revs if sum(q.step == r.step for q in revs) > 1})
    if dup:
        raise ScoreError(f"revisions: step(s) {dup} given twice; each revision needs its own step (--steps)")
    return revs


REMOTE_CODE_FILES = ("config.json", "tokenizer_config.json")  # where ``auto_map`` asks for a checkpoint's own code


def refuse_remote_code(folder: Path) -> None:
    """A checkpoint is data, never code: a local revision whose config or tokenizer config names
    its own Python (``auto_map``) is refused before transformers sees it (which would otherwise ask
    "trust remote code?" on stdin, and a piped ``y`` would run the checkpoint's code)."""
    for name in REMOTE_CODE_FILES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise ScoreError(f"{path}: cannot read ({e.strerror})") from None
        if '"auto_map"' in text:
            raise ScoreError(f"{folder}: {name} asks to run the checkpoint's own code (auto_map); "
                             "ihlaw loads weights as data only and refuses it")


def _from_pretrained(cls: Any, rev: Revision, **kw: Any) -> Any:
    """``cls.from_pretrained`` of a local directory or a Hub revision, never running code the
    checkpoint ships (``trust_remote_code=False``); a Hub failure (offline) or a refusal is one line
    naming the model and revision."""
    where = rev.source if rev.hub_revision is None else f"{rev.source} revision {rev.hub_revision!r} (Hub)"
    try:
        if rev.hub_revision is None:
            refuse_remote_code(Path(rev.source))
            return cls.from_pretrained(rev.source, local_files_only=True, trust_remote_code=False, **kw)
        return cls.from_pretrained(rev.source, revision=rev.hub_revision, trust_remote_code=False, **kw)
    except ValueError as e:
        if "trust_remote_code" in str(e) or "custom code" in str(e):
            raise ScoreError(f"{where}: it asks to run its own code; ihlaw loads weights as data only "
                             "and refuses it") from None
        if isinstance(e, ScoreError):
            raise
        raise ScoreError(f"{where}: cannot load ({one_line(e)})") from None
    except OSError as e:
        hint = "" if rev.hub_revision is None else f"; {OFFLINE_HINT}"
        raise ScoreError(f"{where}: cannot load ({one_line(e)}){hint}") from None
    except Exception as e:  # noqa: BLE001 - damaged safetensors, an absurd header, a pickle refused, ...
        raise ScoreError(f"{where}: cannot load ({type(e).__name__}: {one_line(e)}); the checkpoint is "
                         f"damaged or not in a format transformers reads") from None


def one_line(e: BaseException, most: int = 300) -> str:
    """An error's message on one line (transformers' run over several), at most ``most`` characters."""
    text = " ".join(str(e).split())
    return text if len(text) <= most else text[:most] + "..."


def load_checkpoint(rev: Revision, dtype: str, device: str) -> torch.nn.Module:
    """The causal LM of one revision in ``dtype`` on ``device``, eval mode, eager attention."""
    import transformers  # heavy (seconds): only a scoring command needs it

    transformers.utils.logging.disable_progress_bar()  # ours counts revisions; one bar per shard is noise
    model = _from_pretrained(transformers.AutoModelForCausalLM, rev, dtype=DTYPES[dtype],
                             attn_implementation="eager")
    return model.to(device).eval()


def vocabulary(rev: Revision, vocab_size: int) -> tuple[tuple[int, int], int | None, str]:
    """(ordinary_range, sep_token, where from) for the probes, from the revision's tokenizer.

    The ordinary range is the longest run of ids below ``min(len(tokenizer), vocab_size)`` without a
    special token (embedding rows past the tokenizer are padding no text ever produces); SEP is
    the tokenizer's ``sep_token_id`` (None for most causal LMs: the probes then use the range's
    first token). Without a tokenizer: every id of the embedding, ``(0, vocab_size)``.
    """
    import transformers  # heavy (seconds): only a scoring command needs it

    everything = (0, vocab_size), None, "no tokenizer: every embedding row"
    local = rev.hub_revision is None
    if local and not any((Path(rev.source) / f).is_file() for f in TOKENIZER_FILES):
        return everything
    if local:
        refuse_remote_code(Path(rev.source))  # a tokenizer with code is refused, not skipped
    try:
        tok = _from_pretrained(transformers.AutoTokenizer, rev)
    except (ScoreError, ValueError, KeyError, ImportError) as e:
        if "its own code" in str(e):
            raise
  # no usable tokenizer beside the weights
        return everything
    top = min(len(tok), vocab_size)
    if top < 2:  # recent transformers builds an empty tokenizer from a config alone
        return everything
    special = sorted({int(i) for i in tok.all_special_ids if i is not None and 0 <= i < top})
    bounds = [-1, *special, top]
    lo, hi = max(((a + 1, b) for a, b in zip(bounds, bounds[1:])), key=lambda r: r[1] - r[0])
    return (lo, hi), tok.sep_token_id, f"tokenizer of {rev.name} ({len(tok)} tokens, specials {special[:5]})"


def count_params(model: torch.nn.Module) -> tuple[int, int]:
    """(all parameters, non-embedding ones) as for our GPT: the token and position embeddings, and
    an untied unembedding, left out."""
    total = sum(p.numel() for p in model.parameters())  # tied weights counted once
    emb = [model.get_input_embeddings().weight]
    out = model.get_output_embeddings()
    if out is not None and out.weight.data_ptr() != emb[0].data_ptr():
        emb.append(out.weight)
    emb += [m.weight for name, m in model.named_modules() if name.endswith("wpe")]  # GPT-2's positions
    return total, total - sum(w.numel() for w in emb)


__all__ = ["DTYPES", "HF_CONFIG", "Revision", "ScoreError", "count_params", "load_checkpoint",
           "one_line", "refuse_remote_code", "resolve_revisions", "step_of", "vocabulary"]
