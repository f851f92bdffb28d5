"""Shared test setup: one torch thread (CI machines are small and shared), no network."""

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

try:  # ihstats tests must run without torch
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    torch = None


def pytest_collection_modifyitems(config, items):
    has_cuda = torch is not None and torch.cuda.is_available()
    for item in items:
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA device"))


@pytest.fixture(scope="session")
def smoke_cache(tmp_path_factory):
    """The tokenizer/corpus cache: $IHLAW_CACHE if set (built once, reused), else a session dir."""
    return Path(os.environ.get("IHLAW_CACHE") or tmp_path_factory.mktemp("ihlaw-cache"))
