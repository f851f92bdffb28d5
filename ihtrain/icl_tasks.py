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


__all__ = ["WORDS", "NUMBER_WORDS", "TASKS", "TASK_NAMES", "get_task", "Prompt", "format_prompt",
           "build_prompts"]
