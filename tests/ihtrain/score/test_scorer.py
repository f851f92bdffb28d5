"""python -m ihtrain.score on local revisions of each family: the series directory follows the
contract, ihstats reads it with no config.json, and a killed command resumes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ihstats.base import io
from ihstats.base.contract import OPT_IN_METRICS, PER_HEAD
from ihstats.emergence import emergence_table, main as emergence_main
from ihstats.base.schema import check_run_dir
from ihstats.base.series import read_series
from ihtrain.score import scorer
from ihtrain.score.cli import main
from ihtrain.score.load import Revision, ScoreError, load_checkpoint, refuse_remote_code, resolve_revisions, step_of
from tests.ihtrain.score.conftest import save_revisions

ARGS = ["--batch-size", "8", "--context", "32", "--probe-seqs", "12", "--threads", "1", "--no-progress"]


def test_a_series_of_each_family_follows_the_contract(family_series, tmp_path):
    family, src = family_series
    out = tmp_path / "series"
    assert main([str(src), "--out", str(out), *ARGS]) == 0
    assert not (out / "config.json").exists()
    assert check_run_dir(out) == []
    rec = read_series(out)
    assert rec["family"] == family and (rec["B"], rec["C"]) == (8, 32)
    assert [(r["step"], r["tokens"]) for r in rec["revisions"]] == [(s, s * 8 * 32) for s in (10, 100, 1000)]
    run = io.load_run(out)
    m = run.metrics
    assert sorted(m["step"].unique()) == [10, 100, 1000]
    # opt-in metrics are logged only when asked for; ps_indist and its successor control need held-out tokens
    assert set(PER_HEAD) - set(OPT_IN_METRICS) - {"ps_indist", "ps_indist_ctrl"} <= set(m["metric"])
    # the general induction probe is scored by default, filled with random tokens without held-out text
    assert {"ps_gen_near", "ps_gen_mid", "ps_gen_far"} <= set(m["metric"]) and rec["probe"]["general"]["filler"] == "random"
    ps = m[m["metric"] == "ps"]
    assert len(ps) == 3 * 2 * 4 and ps["value"].between(0, 1).all()
    assert run.status == "done" and run.factors["family"] == family and run.factors["N"] == rec["n_params_non_embedding"]
    # random checkpoints differ: the metrics are measured per revision, not copied
    assert ps.groupby("step")["value"].sum().nunique() == 3


def test_emergence_reads_two_series_as_one_table(tmp_path):
    steps = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000)  # the Bayesian detector needs >= 8 checkpoints
    src = save_revisions(tmp_path / "ckpt", "gpt2", steps)
    a, b = tmp_path / "a", tmp_path / "b"
    assert main([str(src), "--out", str(a), *ARGS]) == 0
    assert main([str(src), "--out", str(b), *ARGS, "--batch-size", "16"]) == 0  # B = 16: another series
    out = tmp_path / "em.csv"
    assert emergence_main([str(a), str(b), "-o", str(out)]) == 0
    table = pd.read_csv(out)
    assert sorted(table["B"]) == [8, 16] and set(table["C"]) == {32}
    assert (table["last_step"] == 5000).all() and table["family"].eq("gpt2").all()
    assert len(emergence_table(a)) == 1


def test_a_killed_scoring_resumes_with_the_next_revision(family_series, tmp_path, monkeypatch):
    family, src = family_series
    out = tmp_path / "series"
    loads = []
    real = scorer.load_checkpoint

    def counting(rev, dtype, device):
        loads.append(rev.name)
        if rev.name == "step1000" and len(loads) > 1 and "kill" in counting.mode:
            raise KeyboardInterrupt  # the kill, after two revisions were written
        return real(rev, dtype, device)

    counting.mode = "kill"
    monkeypatch.setattr(scorer, "load_checkpoint", counting)
    with pytest.raises(KeyboardInterrupt):
        main([str(src), "--out", str(out), *ARGS])
    first = pd.read_parquet(out / "metrics.parquet")
    assert sorted(first["step"].unique()) == [10, 100]
    counting.mode = ""
    loads.clear()
    assert main([str(src), "--out", str(out), *ARGS]) == 0
    assert loads == ["step10", "step1000"]  # the first for the series' record, then only the unscored one
    loads.clear()
    main([str(src), "--out", str(tmp_path / "fresh"), *ARGS])
    assert loads == ["step10", "step100", "step1000"]  # each loaded once
    after = pd.read_parquet(out / "metrics.parquet")
    pd.testing.assert_frame_equal(after[after["step"] < 1000].reset_index(drop=True), first)
    assert check_run_dir(out) == []


def test_other_settings_into_a_series_directory_are_refused(tmp_path):
    src = save_revisions(tmp_path / "ckpt", "llama", (1, 2))
    out = tmp_path / "s"
    assert main([str(src), "--out", str(out), *ARGS]) == 0
    with pytest.raises(ScoreError, match="B differ"):
        scorer.score_series(scorer.ScoreSpec(str(src), resolve_revisions(str(src), None, None), out, 16, 32,
                                             probe_seqs=12, progress=False))


def test_revisions_and_steps(tmp_path):
    assert step_of("step1000") == 1000 and step_of("checkpoint-500") == 500
    with pytest.raises(ScoreError, match="no step in its name"):
        step_of("main")
    src = save_revisions(tmp_path / "c", "gpt2", (5, 50))
    revs = resolve_revisions(str(src), None, None)
    assert [(r.name, r.step) for r in revs] == [("step5", 5), ("step50", 50)]
    assert [r.step for r in resolve_revisions(str(src), ["step50", "step5"], [7, 3])] == [3, 7]
    with pytest.raises(ScoreError, match="step9 are not checkpoint directories"):
        resolve_revisions(str(src), ["step9"], None)
    with pytest.raises(ScoreError, match="needs --revisions"):
        resolve_revisions("EleutherAI/pythia-70m", None, None)


def test_a_hub_model_offline_fails_in_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rev = resolve_revisions("EleutherAI/pythia-70m", ["step1000"], None)[0]
    assert rev == Revision("step1000", 1000, "EleutherAI/pythia-70m", "step1000")
    with pytest.raises(ScoreError, match=r"pythia-70m revision 'step1000' \(Hub\): cannot load.*without network"):
        load_checkpoint(rev, "float32", "cpu")


def test_probes_use_the_tokenizer_vocabulary(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    src = save_revisions(tmp_path / "c", "gpt2", (1,))
    vocab = {"<eos>": 0, "<pad>": 1, **{f"w{i}": i + 2 for i in range(250)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<pad>"))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<pad>")
    fast.save_pretrained(src / "step1")
    out = tmp_path / "s"
    assert main([str(src), "--out", str(out), *ARGS]) == 0
    probe = read_series(out)["probe"]
    assert probe["ordinary_range"] == [2, 252]  # specials 0, 1 and the 48 padding rows left out
    m = pd.read_parquet(out / "metrics.parquet")
    assert np.isfinite(m["value"]).all()


def test_a_checkpoint_that_ships_code_is_refused_and_its_code_never_runs(tmp_path, monkeypatch, capsys):
    """auto_map in config.json (or tokenizer_config.json) asks transformers to import the folder's own
    Python; with a piped 'y' on stdin that code would run. The scorer refuses in one line, exit 2."""
    import io as _io
    import json

    src = save_revisions(tmp_path / "ckpt", "gpt2", (1, 2))
    marker = tmp_path / "ran"
    for rev in ("step1", "step2"):
        (src / rev / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
        cfg = json.loads((src / rev / "config.json").read_text())
        cfg["auto_map"] = {"AutoModelForCausalLM": "evil.Evil", "AutoConfig": "evil.Evil"}
        (src / rev / "config.json").write_text(json.dumps(cfg))
    monkeypatch.setattr("sys.stdin", _io.StringIO("y\n" * 20))
    with pytest.raises(ScoreError, match=r"step1: config.json asks to run the checkpoint's own code"):
        load_checkpoint(resolve_revisions(str(src), None, None)[0], "float32", "cpu")
    assert main([str(src), "--out", str(tmp_path / "s"), *ARGS]) == 2
    assert "own code" in capsys.readouterr().err
    assert not marker.exists()
    tok_only = save_revisions(tmp_path / "tok", "gpt2", (3,)) / "step3"
    (tok_only / "tokenizer_config.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": ["evil.T", None]}}))
    with pytest.raises(ScoreError, match="tokenizer_config.json asks to run"):
        refuse_remote_code(tok_only)
