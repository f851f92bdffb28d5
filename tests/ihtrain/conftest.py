"""Fixtures for trainer tests: a small local text corpus, so no test waits for the builtin one."""

from pathlib import Path

import numpy as np
import pytest

WORDS = ("the model learns to copy tokens that followed an earlier occurrence of the current token "
         "induction heads form abruptly during training batch size context length law").split()


@pytest.fixture(scope="session")
def text_corpus(tmp_path_factory) -> Path:
    """~120k characters of seeded pseudo-text with repeated phrases (so copying helps)."""
    rng = np.random.default_rng(0)
    root = tmp_path_factory.mktemp("corpus")
    for d in range(4):
        lines = []
        for _ in range(300):
            phrase = " ".join(rng.choice(WORDS, size=rng.integers(3, 8)))
            lines.append(f"{phrase}. {phrase}, and again {phrase}.")
        (root / f"doc{d}.txt").write_text("\n".join(lines))
    return root


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ihlaw-cache")
