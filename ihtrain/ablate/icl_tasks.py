"""Synthetic in-context-learning tasks and few-shot prompts (after Todd et al. 2024, function vectors).

A task is a list of ``{"input": str, "output": str}`` pairs, generated here from rules and a fixed
word list written for this package (no third-party data, no world knowledge such as capitals:
only algorithmic tasks a small model can in principle infer from the demonstrations).

Prompt format (Todd et al.): each demonstration is ``"Q: x\\nA: y\\n\\n"`` (a space before every
input and output), ``n_shots`` of them, then the query ``"Q: x\\nA:"``; the answer is scored as
``" " + y`` (its first token). The label-permutation control shuffles the outputs among the
demonstrations (a derangement when possible, so no demonstration keeps its own label), leaving the
query and its answer untouched: a model that reads the task from the labels should get worse, one
that only uses the input format should not.

**Key -> value recall** (:func:`kv_recall_batch`; token level, any source, no tokenizer): a prompt
is ``k_1 v_1 k_2 v_2 ... k_n v_n k_q`` of ``2n`` distinct random ordinary tokens plus the query
key; the answer scored at the last position is ``v_j`` (the value shown after ``k_q = k_j``), so
an induction head solves it in context (the answer is among the demonstrations, the pairing is
random, so no weight can know it). Controls on the same keys, values, query and answer:
``permuted`` (the values are deranged among the keys: ``v_j`` is still in the prompt, after
another key; a model that copies "some earlier value" scores the same, one that binds key to
value scores worse) and ``absent`` (the query is a fresh key not in the prompt: nothing to copy).

    >>> p = build_prompts(TASKS["next_letter"](), n_shots=2, n_prompts=1, seed=0)[0]
    >>> p.text.count("Q:"), p.text.endswith("A:")
    (3, True)
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Callable

import numpy as np

#: a fixed list of common short English words written for this package (lowercase, distinct)
WORDS = (
    "apple", "river", "table", "green", "house", "stone", "light", "water", "music", "paper",
    "cloud", "bread", "chair", "dream", "field", "glass", "heart", "horse", "money", "night",
    "ocean", "plant", "queen", "radio", "sugar", "tiger", "train", "voice", "world", "youth",
    "bird", "book", "cake", "door", "fish", "game", "hand", "king", "lamp", "moon", "nose",
    "park", "rain", "ship", "tree", "wind", "wolf", "star", "snow", "road", "milk", "gold",
    "fire", "farm", "desk", "coat", "boat", "ball", "baby", "army",
)
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
                "eighteen", "nineteen", "twenty")

Pair = dict[str, str]


def next_letter() -> list[Pair]:
    """a -> b, ..., y -> z (25 pairs)."""
    a = string.ascii_lowercase
    return [{"input": a[i], "output": a[i + 1]} for i in range(25)]


def prev_letter() -> list[Pair]:
    """b -> a, ..., z -> y (25 pairs)."""
    a = string.ascii_lowercase
    return [{"input": a[i + 1], "output": a[i]} for i in range(25)]


def letter_to_upper() -> list[Pair]:
    """a -> A, ..., z -> Z (26 pairs)."""
    return [{"input": c, "output": c.upper()} for c in string.ascii_lowercase]


def next_number_word() -> list[Pair]:
    """zero -> one, ..., nineteen -> twenty (20 pairs)."""
    return [{"input": NUMBER_WORDS[i], "output": NUMBER_WORDS[i + 1]} for i in range(20)]


def digit_to_word() -> list[Pair]:
    """0 -> zero, ..., 20 -> twenty (21 pairs)."""
    return [{"input": str(i), "output": w} for i, w in enumerate(NUMBER_WORDS)]


def lower_to_upper() -> list[Pair]:
    """apple -> APPLE (one pair per word of :data:`WORDS`)."""
    return [{"input": w, "output": w.upper()} for w in WORDS]


def copy_word() -> list[Pair]:
    """apple -> apple."""
    return [{"input": w, "output": w} for w in WORDS]


def first_letter() -> list[Pair]:
    """apple -> a."""
    return [{"input": w, "output": w[0]} for w in WORDS]


TASKS: dict[str, Callable[[], list[Pair]]] = {
    "next_letter": next_letter, "prev_letter": prev_letter, "letter_to_upper": letter_to_upper,
    "next_number_word": next_number_word, "digit_to_word": digit_to_word,
    "lower_to_upper": lower_to_upper, "copy_word": copy_word, "first_letter": first_letter,
}
TASK_NAMES = tuple(TASKS)


def get_task(name: str) -> list[Pair]:
    if name not in TASKS:
        raise ValueError(f"task: unknown ICL task {name!r}; allowed: {', '.join(TASKS)}")
    return TASKS[name]()


@dataclass(frozen=True)
class Prompt:
    """One few-shot prompt: ``text`` ends with ``"A:"``; the answer to score is ``" " + answer``."""

    task: str
    index: int
    demos: tuple[tuple[str, str], ...]  # (input, output) as shown (outputs shuffled under the control)
    query: str
    answer: str
    permuted: bool

    @property
    def text(self) -> str:
        return format_prompt(self.demos, self.query)


def format_prompt(demos, query: str) -> str:
    """``"Q: x\\nA: y\\n\\n"`` per demonstration, then ``"Q: query\\nA:"``."""
    return "".join(f"Q: {x}\nA: {y}\n\n" for x, y in demos) + f"Q: {query}\nA:"


def _derangement(rng: np.random.Generator, n: int) -> np.ndarray:
    """A random permutation with no fixed point (identity for n < 2); rejection sampling."""
    if n < 2:
        return np.arange(n)
    while True:  # P(derangement) -> 1/e, so a few tries
        p = rng.permutation(n)
        if not np.any(p == np.arange(n)):
            return p


def build_prompts(pairs: list[Pair], n_shots: int = 10, n_prompts: int = 50, seed: int = 0,
                  permute_labels: bool = False, task: str = "") -> list[Prompt]:
    """``n_prompts`` prompts: a query pair and ``n_shots`` other pairs as demonstrations.

    Query ``i`` is pair ``order[i % len(pairs)]`` of a seeded shuffle, so queries cycle through the
    task before repeating; demonstrations are drawn without replacement from the other pairs. The
    same ``seed`` gives the same queries and demonstrations with and without ``permute_labels``,
    so the two conditions are paired prompt by prompt.
    """
    if n_shots < 0:
        raise ValueError(f"n_shots: must be >= 0, got {n_shots}")
    if n_prompts < 1:
        raise ValueError(f"n_prompts: must be >= 1, got {n_prompts}")
    if n_shots > len(pairs) - 1:
        raise ValueError(f"n_shots: {n_shots} demonstrations need more than the {len(pairs)} pairs of "
                         f"task {task!r}")
    rng = np.random.default_rng(seed)
    perm_rng = np.random.default_rng([seed, 1])  # separate stream: the control changes labels only
    order = rng.permutation(len(pairs))
    out = []
    for i in range(n_prompts):
        q = int(order[i % len(pairs)])
        others = np.array([j for j in range(len(pairs)) if j != q])
        demo_idx = rng.choice(others, size=n_shots, replace=False)
        xs = [pairs[j]["input"] for j in demo_idx]
        ys = [pairs[j]["output"] for j in demo_idx]
        if permute_labels:
            ys = [ys[j] for j in _derangement(perm_rng, len(ys))]
        out.append(Prompt(task, i, tuple(zip(xs, ys)), pairs[q]["input"], pairs[q]["output"],
                          permute_labels))
    return out


@dataclass
class ICLBatch:
    """Tokenised prompts of one task condition."""

    task: str
    permuted: bool
    ids: list[list[int]]  # prompt token ids (ending with "A:", plus a bare-space token if the BPE has one)
    answer: np.ndarray  # (P,) first answer token that carries a character (see encode_query)
    shots: np.ndarray  # (P,) demonstrations kept after truncation to the context


def encode_query(tokenizer, prompt: str, answer: str) -> tuple[list[int], int]:
    """Prompt ids and the answer's first scored token, tokenised as in running text.

    ``prompt + " " + answer`` is encoded whole; the answer's tokens are what follows the prompt's
    own encoding. Leading whitespace-only tokens (a small BPE keeps ``" "`` apart from ``"b"``)
    are moved into the prompt, since they are the same for every answer: the scored token is the
    first one that carries a character of the answer.
    """
    p_ids = tokenizer.encode(prompt)
    full = tokenizer.encode(prompt + " " + answer)
    if full[:len(p_ids)] != p_ids:  # the merge crossed the boundary: encode the parts apart
        full = p_ids + tokenizer.encode(" " + answer)
    k = len(p_ids)
    while k < len(full) - 1 and not tokenizer.decode([full[k]]).strip():
        k += 1
    if k >= len(full):
        raise ValueError(f"answer {answer!r}: encodes to no tokens")
    return full[:k], full[k]


def tokenize_prompts(tokenizer, task: str, n_shots: int, n_prompts: int, max_len: int, seed: int = 0,
                     permute_labels: bool = False) -> ICLBatch:
    """Encode prompts; drop the earliest demonstrations of any prompt longer than ``max_len``."""
    pairs = get_task(task)
    prompts = build_prompts(pairs, min(n_shots, len(pairs) - 1), n_prompts, seed, permute_labels, task)
    ids, ans, shots = [], [], []
    for p in prompts:
        for k in range(len(p.demos), -1, -1):
            enc, first = encode_query(tokenizer, format_prompt(p.demos[len(p.demos) - k:], p.query), p.answer)
            if len(enc) <= max_len:
                break
        else:  # even zero shots do not fit
            raise ValueError(f"task {task}: the zero-shot prompt has {len(enc)} tokens, more than the "
                             f"context {max_len}")
        ids.append(enc)
        ans.append(first)
        shots.append(k)
    return ICLBatch(task, permute_labels, ids, np.array(ans, dtype=np.int64), np.array(shots))


KV_CONTROLS = ("true", "permuted", "absent")


def kv_recall_batch(n_prompts: int, n_pairs: int, ordinary_range: tuple[int, int], control: str = "true",
                    seed: int = 0) -> ICLBatch:
    """Key -> value recall prompts (module docstring) as an :class:`ICLBatch` of ``2 n_pairs + 1``
    tokens each. The same ``seed`` gives the same keys, values, queries and answers under every
    control, so the three are paired prompt by prompt."""
    if control not in KV_CONTROLS:
        raise ValueError(f"control: must be one of {', '.join(KV_CONTROLS)}; got {control!r}")
    lo, hi = (int(v) for v in ordinary_range)
    if n_pairs < 2 or n_prompts < 1:
        raise ValueError(f"kv recall: need n_pairs >= 2 and n_prompts >= 1, got {n_pairs}, {n_prompts}")
    if hi - lo < 2 * n_pairs + 1:
        raise ValueError(f"ordinary_range: {ordinary_range} holds {hi - lo} tokens, fewer than the "
                         f"2 * {n_pairs} + 1 distinct keys, values and fresh key a prompt needs")
    rng = np.random.default_rng([seed, 42])
    toks = np.argsort(rng.random((n_prompts, hi - lo)), axis=1)[:, :2 * n_pairs + 1] + lo  # distinct per row
    keys, vals, fresh = toks[:, :n_pairs], toks[:, n_pairs:2 * n_pairs], toks[:, 2 * n_pairs]
    j = rng.integers(0, n_pairs, size=n_prompts)
    rows = np.arange(n_prompts)
    answer = vals[rows, j]
    perm_rng = np.random.default_rng([seed, 43])  # drawn after the shared stream: controls stay paired
    if control == "permuted":
        vals = np.stack([v[_derangement(perm_rng, n_pairs)] for v in vals])
    query = fresh if control == "absent" else keys[rows, j]
    seq = np.concatenate([np.stack([keys, vals], axis=2).reshape(n_prompts, 2 * n_pairs), query[:, None]], axis=1)
    return ICLBatch(f"kv_recall:{control}", control == "permuted", seq.tolist(), answer.astype(np.int64),
                    np.full(n_prompts, n_pairs))


__all__ = ["WORDS", "NUMBER_WORDS", "TASKS", "TASK_NAMES", "get_task", "Prompt", "format_prompt",
           "build_prompts",
           "ICLBatch", "encode_query", "tokenize_prompts", "KV_CONTROLS", "kv_recall_batch"]
