"""What a person meets at the console (issue 68): a finished run leaves no lock and a rerun says it
was done; a converted run carries its tokenizer, a run without weights says so; the scorer's log
off a terminal is one plain line per revision; heads read L1H2; counts read as counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ihstats.base.display import compact_runs, head_label, parse_head, rounded_csv
from ihstats.tables import formed_counts
from ihtrain.run.train import main as train_main
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory, smoke_cache):
    out = tmp_path_factory.mktemp("smoke") / "run"
    argv = ["--preset", "cpu-smoke", "--out", str(out), "--no-progress", "--set", f"data.cache_dir={smoke_cache}"]
    assert train_main(argv) == 0
    return out, argv


def test_a_finished_run_removes_its_lock_and_a_rerun_says_already_done(smoke_run, capsys):
    out, argv = smoke_run
    assert not (out / ".run.lock").exists()
    mtime = (out / "metrics.parquet").stat().st_mtime_ns
    capsys.readouterr()
    assert train_main(argv) == 0
    said = capsys.readouterr().out
    assert said.startswith("already done: ") and "nothing trained" in said and "wrote" not in said
    assert (out / "metrics.parquet").stat().st_mtime_ns == mtime and not (out / ".run.lock").exists()


def test_convert_saves_the_runs_tokenizer(smoke_run, tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    from ihtrain.score.convert import main as convert_main, run_tokenizer

    out, _ = smoke_run
    assert convert_main([str(out), str(tmp_path / "hf")]) == 0
    assert "and its tokenizer" in capsys.readouterr().out
    hf_tok = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    ours, why = run_tokenizer(out)
    text = "The quick brown fox returns None."
    assert why == "" and hf_tok(text)["input_ids"] == ours.encode(text) and hf_tok.eos_token_id == 0


def test_convert_of_a_shipped_run_says_it_has_no_weights(tmp_path, capsys):
    pytest.importorskip("transformers")
    from ihtrain.score.convert import main as convert_main

    run = ROOT / "data/reference_runs/bxc-cross/010c2516ce9e"
    assert convert_main([str(run), str(tmp_path / "hf")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "shipped runs carry logs only, no weights" in err
    assert "python -m ihtrain.grid --preset bxc-cross --only 010c2516ce9e" in err and not (tmp_path / "hf").exists()


def test_the_scorers_log_off_a_terminal_is_one_line_per_revision(capsys):
    from ihtrain.score.scorer import RevisionLog

    log = RevisionLog("pythia-70m", 3, show=True)
    for name in ("step1000", "step2000", "step4000"):
        assert log.bar([name]) == [name]  # no tqdm off a terminal
        log.scored(name)
    err = capsys.readouterr().err
    assert "\r" not in err and len(err.splitlines()) == 3
    assert err.splitlines()[1].startswith("scored pythia-70m step2000 (2/3) in ")


def test_heads_read_l1h2_whatever_form_a_table_holds():
    assert [head_label(v) for v in ("1.2", 1.2, "L1H2", (1, 2), "", np.nan, "max")] == \
        ["L1H2", "L1H2", "L1H2", "L1H2", "", "", "max"]
    assert head_label("1.10") == "L1H10" and parse_head("L0H3") == (0, 3) and parse_head("0.3") == (0, 3)
    with pytest.raises(ValueError, match="LAYER.HEAD or LxHy"):
        parse_head("first")


def test_counts_read_as_counts():
    assert formed_counts(None, [False, False]) == "2 runs: 2 with an onset, none censored"
    assert formed_counts([True], [False]) == "1 run: 1 formed, 0 not formed"
    assert formed_counts([True, False], [False, True]) == \
        "2 runs: 1 formed, 1 not formed (1 of them censored: no onset by the last step)"


def test_compact_rows_and_rounded_csv():
    table = pd.DataFrame({"run_id": ["aaaaaaaaaaaa", "bbbbbbbbbbbb"], "B": [32, 16], "C": [64, 64], "seed": [0, 0],
                          "onset": [2418.337, 6000.0], "onset_lo": [2326.1, 6000.0], "onset_hi": [2499.9, np.nan],
                          "censored": [False, True], "last_step": [6000, 6000], "formed": [True, False],
                          "mechanism_class": ["induction", ""], "ih_head_crossing": ["1.2", ""]})
    show = compact_runs(table)
    assert list(show.columns) == ["run_id", "B", "onset [90%]", "formed", "class", "head"]  # C, seed do not vary
    assert show["onset [90%]"].tolist() == [">6,000", "2,418 [2,326, 2,500]"]  # sorted by B
    assert show["head"].tolist() == ["-", "L1H2"] and show["class"].tolist() == ["-", "induction"]
    csv = rounded_csv(table)
    assert "2418.34" in csv and "2418.337" not in csv and ",L1H2" in csv

