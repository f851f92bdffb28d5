"""What made a run: package versions, the git commit and the resolved config, in ``config.json``."""

from __future__ import annotations

import platform
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from ihtrain import __version__
from ihtrain.config import RunConfig


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "ihlaw": __version__}
    for name in ("torch", "numpy", "pandas", "tokenizers", "datasets"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def git_commit() -> str | None:
    try:
        root = Path(__file__).resolve().parents[2]  # the checkout
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except Exception:
        return None


def config_record(cfg: RunConfig, *, data_fingerprint: dict[str, Any], vocab_size: int, n_params: int,
                  n_params_non_embedding: int, device: str, threads: int) -> dict[str, Any]:
    """``config.json``: the resolved config whole, with what made the run (docs/DESIGN.md, run
    directory), including the torch thread count a resume must reuse; the key order is the file's."""
    return {
        "run_id": cfg.run_id(), "config": cfg.to_dict(), "seed": cfg.seed, "versions": package_versions(),
        "git_commit": git_commit(), "data_fingerprint": data_fingerprint, "vocab_size": vocab_size,
        "n_params": n_params, "n_params_non_embedding": n_params_non_embedding, "device": device,
        "threads": threads,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
