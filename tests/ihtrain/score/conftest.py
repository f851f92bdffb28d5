"""Tiny random checkpoints of each supported family, saved as local "revisions" (offline, CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
transformers.utils.logging.disable_progress_bar()

V, CONTEXT = 300, 64


#: a tiny config per supported family: 2 layers, 4 heads, d = 32, vocab 300; Llama with
#: grouped-query attention (2 kv heads). test_adapter holds its keys equal to adapter.FAMILIES.
TINY = {
    "gpt2": lambda: transformers.GPT2Config(n_layer=2, n_head=4, n_embd=32, vocab_size=V, n_positions=CONTEXT,
                                            bos_token_id=None, eos_token_id=None),
    "gpt_neox": lambda: transformers.GPTNeoXConfig(num_hidden_layers=2, num_attention_heads=4, hidden_size=32,
                                                   intermediate_size=64, vocab_size=V,
                                                   max_position_embeddings=CONTEXT),
    "llama": lambda: transformers.LlamaConfig(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                              hidden_size=32, intermediate_size=64, vocab_size=V,
                                              max_position_embeddings=CONTEXT),
}


def tiny_config(family: str):
    return TINY[family]()


def tiny_model(family: str, seed: int):
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(tiny_config(family), attn_implementation="eager").eval()


def save_revisions(root: Path, family: str, steps: tuple[int, ...]) -> Path:
    """``root/step{s}`` for each step, a differently seeded random model each (as checkpoints differ)."""
    for s in steps:
        tiny_model(family, s).save_pretrained(root / f"step{s}")
    return root


FAMILIES = tuple(TINY)


@pytest.fixture(scope="module", params=FAMILIES)
def family_series(request, tmp_path_factory) -> tuple[str, Path]:
    """(family, directory of 3 revisions step10, step100, step1000)."""
    root = tmp_path_factory.mktemp(request.param)
    return request.param, save_revisions(root, request.param, (10, 100, 1000))
