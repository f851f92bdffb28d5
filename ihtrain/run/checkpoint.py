"""A run's checkpoints, and the trained model back from a run directory.

Files in ``<run>/checkpoints/`` (docs/DESIGN.md, run directory), each written atomically:

- ``last.pt`` (:func:`save_last`): everything exact resume needs: ``model``, ``optimizer``,
  ``step``, ``wall_s``, ``torch_rng``, ``crossing``, ``stop_at``, ``run_id``, ``evaluated``,
  ``initial_loss``; ``step_<N>.pt`` (``train.keep_checkpoints``) holds the same.
- ``final.pt`` (:func:`save_final`): a done run's ``model``, ``model_config``, ``step``, ``run_id``
  (absent in runs made before issue 50).

Every checkpoint read for a run (resume, :func:`load_model`) must carry that run's ``run_id``
(:func:`check_run_id`): a ``last.pt`` or ``final.pt`` copied in from another run (another seed)
would otherwise be resumed or ablated as this run's.
- ``model.json`` (the sidecar): ``{"model_config": <ModelConfig, vocab_size resolved>, "run_id"}``,
  written before the first ``.pt``, so a reader learns the model's shape without unpickling
  weights or rebuilding the data source.

:func:`load_model` rebuilds the trained model (ablation, an exporter, any reader); training resume
reads ``last.pt`` whole through :func:`read_last`, into the model it has built. Run directories
from before the sidecar load too: the model config then comes from ``final.pt``'s
``model_config`` or from ``config.json`` (its ``config.model`` with the top-level ``vocab_size``
the trainer resolved from the data).
"""

from __future__ import annotations

import dataclasses
import errno
import pickle
from pathlib import Path
from typing import Any, Literal, NamedTuple

import torch

from ihtrain.config import ModelConfig
from ihstats.base.fileio import UnreadableFile, atomic_write, atomic_write_json, first_line, is_os_error, read_json
from ihtrain.model import GPT

CHECKPOINT_DIR = "checkpoints"
LAST, FINAL, SIDECAR = "last.pt", "final.pt", "model.json"
Which = Literal["final", "last", "auto"]


# torch's file I/O lives here, not in ihstats.base.fileio, so that module stays torch-free for ihstats
def atomic_write_torch(path: str | Path, obj: Any) -> Path:
    """``torch.save`` through an open file: a full disk then raises ``OSError(ENOSPC)``, which
    :func:`io_error_of` recognises (given a path, torch raises a bare RuntimeError)."""
    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            torch.save(obj, f)

    return atomic_write(path, write)


def load_checkpoint(path: str | Path, map_location: Any = "cpu", remedy: str = "") -> dict[str, Any]:
    """A ``torch.save`` dict; :class:`UnreadableFile` when missing, empty or not a checkpoint."""
    path = Path(path)
    if not path.is_file():
        raise UnreadableFile(path, "missing (checkpoint)", remedy)
    if str(map_location).startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"{path}: asked to load onto {map_location}, but this machine has no CUDA device "
                           "(the checkpoint itself is not at fault); pass --device cpu")
    try:
        # weights_only: a checkpoint is data (tensors, numbers, strings); a pickled object in a file
        # a user was handed must never run as code (torch's restricted unpickler refuses it)
        ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # noqa: BLE001 - UnpicklingError, EOFError, RuntimeError (zip), ...
        # EINVAL: torch seeking past the end of a truncated file, a damaged file rather than a failing disk
        if is_os_error(e) and e.errno != errno.EINVAL:
            raise
        if isinstance(e, pickle.UnpicklingError) and "global" in str(e).lower():  # names a callable: not data
            raise UnreadableFile(path, "refused: it holds Python objects other than tensors, numbers and strings "
                                 "(a checkpoint of ihtrain holds only data; this file may carry code)",
                                 "do not load it; get the run directory from a source you trust, or retrain it"
                                 ) from None
        raise UnreadableFile(path, f"not a readable PyTorch checkpoint ({type(e).__name__}: {first_line(e)})",
                             remedy) from None
    if not isinstance(ckpt, dict):
        raise UnreadableFile(path, f"holds a {type(ckpt).__name__}, expected a checkpoint dict", remedy)
    return ckpt


def checkpoint_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / CHECKPOINT_DIR


def own_storage(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The state dict with each tensor that views a larger storage (a packed run's slice of its stack)
    copied out, tied tensors kept tied: ``torch.save`` writes a view's whole storage."""
    copies: dict[int, torch.Tensor] = {}
    out = {}
    for name, v in state.items():
        if v.untyped_storage().nbytes() > v.numel() * v.element_size():
            key = v.data_ptr()
            v = copies[key] if key in copies else copies.setdefault(key, v.clone())
        out[name] = v
    return out


# ------------------------------------------------------------------------------ writing
def write_sidecar(run_dir: str | Path, model_cfg: ModelConfig, run_id: str) -> None:
    """``model.json``, unless there (the model config of a run never changes)."""
    path = checkpoint_dir(run_dir) / SIDECAR
    if not path.is_file():
        atomic_write_json(path, {"model_config": dataclasses.asdict(model_cfg), "run_id": run_id})


def save_last(run_dir: str | Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, *, step: int,
              wall_s: float, torch_rng: torch.Tensor, crossing: int | None, stop_at: int | None, run_id: str,
              evaluated: bool, initial_loss: float | None, name: str = LAST) -> None:
    """A resumable checkpoint. The keys and their order are the file format (tests resume from it
    exactly): add keys at the end, never rename."""
    state = {"model": own_storage(model.state_dict()), "optimizer": optimizer.state_dict(), "step": step,
             "wall_s": wall_s, "torch_rng": torch_rng, "crossing": crossing, "stop_at": stop_at, "run_id": run_id,
             "evaluated": evaluated, "initial_loss": initial_loss}
    atomic_write_torch(checkpoint_dir(run_dir) / name, state)


def save_final(run_dir: str | Path, model: torch.nn.Module, model_cfg: ModelConfig, step: int, run_id: str) -> None:
    """A done run's weights (``model_config`` inside too, as final.pt always held it)."""
    final = {"model": own_storage(model.state_dict()), "model_config": model_cfg.__dict__, "step": step,
             "run_id": run_id}
    atomic_write_torch(checkpoint_dir(run_dir) / FINAL, final)


# ------------------------------------------------------------------------------ reading
def check_run_id(path: Path, ckpt: dict[str, Any], run_id: str | None, remedy: str) -> None:
    """:class:`UnreadableFile` when the checkpoint at ``path`` carries another run's id than
    ``run_id`` (older checkpoints without one, or no ``run_id`` to compare, pass)."""
    stored = ckpt.get("run_id")
    if stored is not None and run_id is not None and stored != run_id:
        raise UnreadableFile(path, f"belongs to run {stored}, not to this run {run_id} (copied from another run?)",
                             remedy)


def _own_run_id(run_dir: Path) -> str | None:
    """The run_id of the run directory's config.json (None: no readable one)."""
    try:
        return read_json(run_dir / "config.json", "run's config").get("run_id")
    except (UnreadableFile, AttributeError):
        return None


def read_last(run_dir: str | Path, device: Any, remedy: str) -> dict[str, Any] | None:
    """``last.pt`` as saved (None when the run has none yet); :class:`UnreadableFile` when damaged."""
    path = checkpoint_dir(run_dir) / LAST
    return load_checkpoint(path, device, remedy=remedy) if path.is_file() else None


def _retrain(run_dir: Path) -> str:
    return f"the run must be trained again: delete {run_dir} and rerun its training command"


def read_model_config(run_dir: str | Path, final: dict[str, Any] | None = None) -> ModelConfig:
    """The run's resolved model config: the sidecar, else (older runs) ``final.pt``'s
    ``model_config`` (pass the loaded ``final``), else ``config.json``."""
    run_dir = Path(run_dir)
    sidecar = checkpoint_dir(run_dir) / SIDECAR
    if sidecar.is_file():
        remedy = "delete it: the model config is then read from final.pt or config.json"
        d = read_json(sidecar, "model config", remedy).get("model_config")
        if not isinstance(d, dict):
            raise UnreadableFile(sidecar, "has no 'model_config'", remedy)
    elif final is not None and isinstance(final.get("model_config"), dict):
        d = final["model_config"]
    else:
        cfg_path = run_dir / "config.json"
        if not cfg_path.is_file():
            raise FileNotFoundError(f"{cfg_path}: not found (is {run_dir} a run directory?)")
        meta = read_json(cfg_path, "run's config", _retrain(run_dir))
        if not isinstance(meta.get("config"), dict) or not isinstance(meta["config"].get("model"), dict):
            raise UnreadableFile(cfg_path, "has no 'config.model' (not written by ihtrain.run.train)", _retrain(run_dir))
        d = {**meta["config"]["model"], "vocab_size": meta.get("vocab_size", meta["config"]["model"].get("vocab_size"))}
    try:
        return ModelConfig(**d)
    except TypeError as e:  # a field this version does not know
        raise UnreadableFile(sidecar if sidecar.is_file() else run_dir, f"not a model config ({e})",
                             _retrain(run_dir)) from None


class LoadedModel(NamedTuple):
    model: GPT  # in eval mode, on the requested device
    model_config: ModelConfig
    step: int  # the updates the weights have had
    path: Path  # the checkpoint read


def load_model(run_dir: str | Path, which: Which = "auto", device: Any = "cpu") -> LoadedModel:
    """The trained model of a run directory: ``final`` (a done run), ``last`` (the latest resumable
    checkpoint) or ``auto`` (final if there, else last). FileNotFoundError when the checkpoint is
    missing, :class:`ihstats.base.fileio.UnreadableFile` when it cannot be read."""
    run_dir = Path(run_dir)
    if which not in ("final", "last", "auto"):
        raise ValueError(f"which: must be final, last or auto, got {which!r}")
    ckpt_dir = checkpoint_dir(run_dir)
    name = FINAL if which == "final" or (which == "auto" and (ckpt_dir / FINAL).is_file()) else LAST
    path = ckpt_dir / name
    if not path.is_file():
        hint = "has the run finished? see" if name == FINAL else "has the run checkpointed yet? see"
        raise FileNotFoundError(f"{path}: not found ({hint} {run_dir}/status.json)")
    ckpt = load_checkpoint(path, device, remedy=_retrain(run_dir))
    check_run_id(path, ckpt, _own_run_id(run_dir), _retrain(run_dir))
    if "model" not in ckpt:
        raise UnreadableFile(path, "lacks 'model' (not a checkpoint of ihtrain.run.train)", _retrain(run_dir))
    model_cfg = read_model_config(run_dir, ckpt)
    model = GPT(model_cfg).to(device)
    model.load_state_dict(ckpt["model"])
    model.eval()
    return LoadedModel(model, model_cfg, int(ckpt.get("step", -1)), path)


__all__ = ["CHECKPOINT_DIR", "FINAL", "LAST", "SIDECAR", "LoadedModel", "check_run_id", "checkpoint_dir",
           "load_model",
           "own_storage", "read_last", "read_model_config", "save_final", "save_last", "write_sidecar"]
