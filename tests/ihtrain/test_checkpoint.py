"""Checkpoints: the trained model back from a run directory, old run directories too."""

import dataclasses
import json

import pytest
import torch

from ihtrain.run.checkpoint import FINAL, LAST, SIDECAR, checkpoint_dir, load_model, read_model_config
from ihtrain.config import resolve
from ihstats.base.fileio import UnreadableFile
from ihtrain.run.train import solo_update
from ihtrain.run.trainer import Trainer

# the documented file formats (docs/DESIGN.md, run directory): resume and readers depend on them
LAST_KEYS = ["model", "optimizer", "step", "wall_s", "torch_rng", "crossing", "stop_at", "run_id", "evaluated",
             "initial_loss"]
FINAL_KEYS = ["model", "model_config", "step", "run_id"]  # run_id appended in issue 50


@pytest.fixture(scope="module")
def trained(text_corpus, cache_dir, tmp_path_factory):
    """A finished tiny run, driven as train_run drives it, and its in-memory model and probe."""
    cfg = resolve("cpu-tiny", overrides={
        "data.source": f"text:{text_corpus}/*.txt", "data.vocab_size": 300, "data.cache_dir": str(cache_dir),
        "model.n_layer": 2, "model.n_head": 2, "model.d_model": 32, "model.context": 64,
        "train.batch_size": 8, "train.micro_batch_size": 4, "train.context": 32, "train.max_steps": 12,
        "train.lr": 3e-3, "train.warmup_steps": 3, "train.checkpoint_every": 5, "train.device": "cpu",
        "metrics.n_evals": 4, "metrics.probe_seqs": 8, "metrics.val_seqs": 4})
    run_dir = tmp_path_factory.mktemp("ckpt-run")
    run = Trainer(cfg, run_dir, progress=False)
    while run.go_on():
        run.after_update(*solo_update(run, run.model, run.next_batch()))
    assert run.finish(make_figures=False)["status"] == "done"
    run.model.eval()
    tokens = run.probes.repeat[:4]  # (4, 2n)
    with torch.no_grad():
        logits, _ = run.model(tokens)
    return run_dir, run, tokens, logits


def _logits(model, tokens):
    with torch.no_grad():
        return model(tokens)[0]


def test_load_model_gives_the_trained_model_exactly(trained):
    run_dir, run, tokens, logits = trained
    for which in ("final", "last", "auto"):
        loaded = load_model(run_dir, which)
        assert not loaded.model.training and loaded.step == run.step == 12
        assert loaded.model_config == run.model_cfg and loaded.model_config.vocab_size > 0
        assert torch.equal(_logits(loaded.model, tokens), logits), which
    assert load_model(run_dir).path.name == FINAL  # auto prefers a done run's final weights
    sidecar = json.loads((checkpoint_dir(run_dir) / SIDECAR).read_text())
    assert sidecar == {"model_config": dataclasses.asdict(run.model_cfg), "run_id": run.cfg.run_id()}


def test_checkpoint_files_keep_their_format(trained):
    run_dir = trained[0]
    assert list(torch.load(checkpoint_dir(run_dir) / LAST, weights_only=True)) == LAST_KEYS
    final = torch.load(checkpoint_dir(run_dir) / FINAL, weights_only=True)
    assert list(final) == FINAL_KEYS and final["model_config"] == dataclasses.asdict(trained[1].model_cfg)


def test_a_run_directory_from_before_the_sidecar_still_loads(trained, tmp_path):
    """No model.json: the model config comes from final.pt, or for last.pt from config.json (its
    model section with the vocabulary size the trainer resolved from the data)."""
    src, run, tokens, logits = trained
    old = tmp_path / "old"
    (old / "checkpoints").mkdir(parents=True)
    (old / "config.json").write_bytes((src / "config.json").read_bytes())
    for name in (LAST, FINAL):
        (old / "checkpoints" / name).write_bytes((checkpoint_dir(src) / name).read_bytes())
    assert read_model_config(old) == run.model_cfg  # from config.json
    for which in ("final", "last"):
        assert torch.equal(_logits(load_model(old, which).model, tokens), logits), which
    (old / "checkpoints" / FINAL).unlink()
    assert load_model(old, "auto").path.name == LAST
    with pytest.raises(FileNotFoundError, match="final.pt: not found"):
        load_model(old, "final")


def test_load_model_errors_name_the_problem(trained, tmp_path):
    with pytest.raises(ValueError, match="which: must be final, last or auto"):
        load_model(trained[0], "best")
    with pytest.raises(FileNotFoundError, match="last.pt: not found"):
        load_model(tmp_path, "last")
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / SIDECAR).write_text(json.dumps({"model_config": {"n_layer": 2, "bogus": 1}}))
    (tmp_path / "checkpoints" / LAST).write_bytes((checkpoint_dir(trained[0]) / LAST).read_bytes())
    with pytest.raises(UnreadableFile, match="not a model config"):
        load_model(tmp_path, "last")
