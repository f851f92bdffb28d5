"""Head ablation hooks, top-k rules, ICL prompts and scoring, and the ablate CLI on a tiny run."""

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from analyses.ablation_tests import main as ablation_tests_main
from ihstats.ablation.results import kv_true_above
from ihtrain.ablate.cli import (ICLBatch, LoadedRun, encode_query, example_inputs, icl_report, icl_scores,
                            load_trained_run, main, repeat_scores, score_examples)
from ihtrain.config import ModelConfig, resolve
from ihtrain.ablate.head_ablation import ablate_heads, head_means
from ihtrain.ablate.head_sets import as_head_set, pairs_to_head_set, prev_token_head, run_head_scores, top_heads
from ihtrain.ablate.icl_tasks import TASKS, build_prompts, format_prompt, get_task
from ihtrain.model import GPT
from ihtrain.probes import make_probes
from ihtrain.run.train import train_run

sys.path.insert(0, str(Path(__file__).parent))
from handwired import induction_model  # noqa: E402


def tiny_model(attn_only=False, seed=0):
    cfg = ModelConfig(n_layer=2, n_head=4, d_model=32, vocab_size=50, context=16, attn_only=attn_only)
    return GPT(cfg, seed=seed).eval()


def c_proj_outputs(model, idx, layer):
    """Output of blocks[layer].attn.c_proj on the fast path: (B, T, d)."""
    got = {}
    h = model.blocks[layer].attn.c_proj.register_forward_hook(lambda m, a, out: got.setdefault("y", out))
    model(idx)
    h.remove()
    return got["y"]


# ------------------------------------------------------------------------------ hooks
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_ablation_removes_exactly_that_heads_contribution(mode):
    model = tiny_model()
    idx = torch.randint(0, 50, (3, 16), generator=torch.Generator().manual_seed(1))
    _, cache = model.run_with_cache(idx)
    means = head_means(model, idx)  # (L, H, dh)
    with torch.no_grad():
        base = c_proj_outputs(model, idx, 0)
        with ablate_heads(model, [[2], []], mode, means):
            abl = c_proj_outputs(model, idx, 0)
        o = cache.head_out[0, :, :, 2]  # (B, T, dh)
        removed = (o if mode == "zero" else o - means[0, 2]) @ model.W_O(0)[2]  # (B, T, d)
    torch.testing.assert_close(base - abl, removed, atol=1e-5, rtol=1e-4)
    assert removed.abs().max() > 1e-3  # the head did contribute something


def test_a_user_hook_on_hook_z_is_the_ablation():
    model = tiny_model()
    idx = torch.randint(0, 50, (3, 16), generator=torch.Generator().manual_seed(5))

    def zero_head_2(z, hook):  # z (B, T, H, dh)
        z = z.clone()
        z[:, :, 2] = 0.0
        return z

    def zero_head_2_at_c_proj(module, args):  # ablation as it was before hook points: heads side by side
        x = args[0].clone()  # (B, T, H * dh)
        x.view(*x.shape[:2], 4, -1)[:, :, 2] = 0.0
        return (x,)

    with torch.no_grad():
        user = model.run_with_hooks(idx, [("blocks.0.attn.hook_z", zero_head_2)])[0]
        with ablate_heads(model, [[2], []]):
            ablated = model(idx)[0]
            _, cache = model.run_with_cache(idx)
        handle = model.blocks[0].attn.c_proj.register_forward_pre_hook(zero_head_2_at_c_proj)
        before = model(idx)[0]
        handle.remove()
        base = model(idx)[0]
    assert torch.equal(user, ablated) and torch.equal(user, before)
    assert not torch.allclose(user, base)
    assert torch.all(cache.head_out[0, :, :, 2] == 0) and cache.head_out[0, :, :, 1].abs().max() > 0
    assert not any(p.has_hooks for p in model.hook_dict.values())


def test_ablating_a_later_layer_leaves_earlier_layers_untouched():
    model = tiny_model()
    idx = torch.randint(0, 50, (2, 16), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        base0, base_logits = c_proj_outputs(model, idx, 0), model(idx)[0]
        with ablate_heads(model, [[], [0, 3]]):
            abl0, abl_logits = c_proj_outputs(model, idx, 0), model(idx)[0]
            cache_logits = model.run_with_cache(idx)[0]
    assert torch.equal(base0, abl0)
    assert not torch.allclose(base_logits, abl_logits)
    torch.testing.assert_close(cache_logits, abl_logits, atol=1e-5, rtol=1e-4)  # both paths see it


def test_no_heads_and_exit_leave_logits_bit_identical():
    model = tiny_model()
    idx = torch.randint(0, 50, (2, 16), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        ref = model(idx)[0]
        with ablate_heads(model, [[], []]):
            same = model(idx)[0]
        with ablate_heads(model, [[0, 1, 2, 3], [1]]):
            pass
        after = model(idx)[0]
    assert torch.equal(ref, same) and torch.equal(ref, after)
    assert all(not b.attn.c_proj._forward_pre_hooks for b in model.blocks)


def test_all_heads_of_attn_only_model_gives_embedding_only_logits():
    model = tiny_model(attn_only=True)
    idx = torch.randint(0, 50, (2, 16), generator=torch.Generator().manual_seed(4))
    with torch.no_grad(), ablate_heads(model, [range(4), range(4)]):
        logits = model(idx)[0]
        # every head zeroed: residual = embeddings + the two c_proj biases (zero at init)
        x = model._embed(idx) + sum(b.attn.c_proj.bias for b in model.blocks)
        expect = model.lm_head(model.ln_f(x))
    torch.testing.assert_close(logits, expect, atol=1e-5, rtol=1e-5)


def test_hand_wired_induction_circuit_breaks_under_ablation():
    # layer 0 head 0 writes the previous token, layer 1 head 0 is the induction head (K-composition):
    # the model copies perfectly, and either ablation destroys it
    model = induction_model(V=20, P=16)
    probes = make_probes(20, 16, seed=0, ordinary_range=(0, 20), sep_token=None, n_seqs=30)
    base = repeat_scores(model, probes.repeat, probes.n)
    assert base["repeat_acc"].min() == 1.0
    for heads in ([[], [0]], [[0], []]):
        with ablate_heads(model, heads):
            abl = repeat_scores(model, probes.repeat, probes.n)
        assert abl["repeat_acc"].mean() < 0.2
        assert (abl["repeat_logprob"] < base["repeat_logprob"] - 1).all()


def test_head_set_validation():
    assert as_head_set({1: [3, 0]}, 2, 4) == ((), (0, 3))
    assert pairs_to_head_set([(0, 1), (1, 2), (0, 0)], 2, 4) == ((0, 1), (2,))
    with pytest.raises(ValueError, match="layer 1 heads \\[4\\]"):
        as_head_set([[0], [4]], 2, 4)
    with pytest.raises(ValueError, match="mode"):
        with ablate_heads(tiny_model(), [[0], []], mode="resample"):
            pass


# ------------------------------------------------------------------------------ top-k rules
def test_top_heads_rules():
    s = np.array([[0.1, 0.9, 0.3, 0.0], [0.8, 0.2, 0.2, 0.7]])
    assert top_heads(s, k=2) == ((1,), (0,))
    assert top_heads(s, k=3) == ((1,), (0, 3))
    assert top_heads(s, k=2, per_layer=True) == ((1, 2), (0, 3))
    assert top_heads(s, frac=0.25) == ((1,), (0,))  # round(0.25 * 8) = 2 heads
    assert top_heads(s, frac=0.02, per_layer=True) == ((1,), (0,))  # under one head: at least one
    assert top_heads(np.zeros((2, 12)), frac=0.02, per_layer=True) == ((0,), (0,))  # ties -> low index
    assert top_heads(np.zeros((1, 12)), frac=0.125, per_layer=True) == ((0, 1),)  # 1.5 rounds half up
    with pytest.raises(ValueError, match="--top-k: must be in \\[1, 8\\]"):
        top_heads(s, k=9)
    with pytest.raises(ValueError, match="--top-k: must be in \\[1, 4\\]"):
        top_heads(s, k=5, per_layer=True)
    with pytest.raises(ValueError, match="--top-frac"):
        top_heads(s, frac=1.5)
    # the shared previous-token head (L0H1 here) is never chosen; the next best takes its place
    assert prev_token_head(s) == ((1,), ())
    assert top_heads(s, k=2, exclude=((1,), ())) == ((), (0, 3))
    assert top_heads(s, frac=0.02, per_layer=True, exclude=((1,), ())) == ((2,), (0,))
    with pytest.raises(ValueError, match="less 1 excluded"):
        top_heads(s, k=4, per_layer=True, exclude=((1,), ()))


# ------------------------------------------------------------------------------ ICL prompts
def test_prompt_format_and_label_permutation():
    assert format_prompt([("a", "b"), ("c", "d")], "e") == "Q: a\nA: b\n\nQ: c\nA: d\n\nQ: e\nA:"
    pairs = get_task("next_letter")
    plain = build_prompts(pairs, n_shots=10, n_prompts=30, seed=3, task="next_letter")
    perm = build_prompts(pairs, n_shots=10, n_prompts=30, seed=3, permute_labels=True, task="next_letter")
    for a, b in zip(plain, perm):
        assert (a.query, a.answer) == (b.query, b.answer) and a.answer == chr(ord(a.query) + 1)
        assert [x for x, _ in a.demos] == [x for x, _ in b.demos]
        assert sorted(y for _, y in a.demos) == sorted(y for _, y in b.demos)
        assert all(y == chr(ord(x) + 1) for x, y in a.demos)
        assert not any(y == chr(ord(x) + 1) for x, y in b.demos)  # a derangement of distinct labels
        assert a.query not in [x for x, _ in a.demos] and len(a.demos) == 10
    assert len({p.query for p in plain[:25]}) == 25  # queries cycle through the task
    for name in TASKS:
        task = get_task(name)
        assert len(task) >= 20 and all(set(p) == {"input", "output"} for p in task)
    with pytest.raises(ValueError, match="n_shots"):
        build_prompts(pairs, n_shots=25)
    with pytest.raises(ValueError, match="task: unknown ICL task 'capitals'"):
        get_task("capitals")


class CharTokenizer:
    """One token per character (a BPE that never merges the space with what follows)."""

    def encode(self, s):
        return [ord(c) for c in s]

    def decode(self, ids):
        return "".join(map(chr, ids))


def test_encode_query_moves_bare_space_into_prompt():
    ids, first = encode_query(CharTokenizer(), "A:", "bc")
    assert ids == [ord("A"), ord(":"), ord(" ")] and first == ord("b")


class NextTokenModel(torch.nn.Module):
    """Logits -|v - (x + 1)| at a position holding x: answer x + 1 + j has rank 2j - 1 (j >= 1)."""

    def __init__(self, V=20):
        super().__init__()
        self.V = V
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, idx):
        v = torch.arange(self.V)
        return -(v - (idx[..., None] + 1)).abs().float(), None  # (B, T, V)


def test_icl_scores_ranks_against_hand_built_logits():
    # prompts of two lengths (run in separate groups); last tokens 5, 7, 9, 3
    batch = ICLBatch("t", False, ids=[[1, 5], [2, 7], [3, 4, 9], [1, 1, 3]],
                     answer=np.array([6, 9, 10, 7]), shots=np.array([1, 1, 1, 1]))
    s = icl_scores(NextTokenModel(), batch)
    # 6 after 5 and 10 after 9 are the argmax (rank 0); 9 after 7 ties with 7 at -1, only 8 is
    # strictly above (rank 1); 7 after 3 has 2..6 above it (rank 5)
    assert s["icl_rank"].tolist() == [0, 1, 0, 5]
    assert s["icl_hits1"].tolist() == [1, 0, 1, 0] and s["icl_hits3"].tolist() == [1, 1, 1, 0]
    np.testing.assert_allclose(np.exp(s["icl_logprob"][0]),
                               torch.softmax(NextTokenModel()(torch.tensor([[5]]))[0][0, 0], -1)[6].item())


# ------------------------------------------------------------------------------ a tiny run
@pytest.fixture(scope="module")
def tiny_run(text_corpus, cache_dir, tmp_path_factory):
    cfg = resolve("cpu-tiny", overrides={
        "data.source": f"text:{text_corpus}/*.txt", "data.vocab_size": 300, "data.cache_dir": str(cache_dir),
        "model.n_layer": 2, "model.n_head": 2, "model.d_model": 32, "model.context": 64,
        "train.batch_size": 8, "train.micro_batch_size": 4, "train.context": 32, "train.max_steps": 30,
        "train.lr": 3e-3, "train.warmup_steps": 5, "train.checkpoint_every": 10, "train.device": "cpu",
        "metrics.n_evals": 12, "metrics.probe_seqs": 16, "metrics.val_seqs": 4})
    out = tmp_path_factory.mktemp("ablate-run")
    assert train_run(cfg, out, progress=False, make_figures=False)["status"] == "done"
    return out


def test_unablated_scores_match_the_logged_metrics(tiny_run):
    run = load_trained_run(tiny_run)
    m = pd.read_parquet(tiny_run / "metrics.parquet")
    last = m[m["step"] == m["step"].max()].set_index("metric")["value"]
    # same probe arguments as the trainer (seed, 16 sequences) -> the same probe: AR accuracy agrees
    rep = score_examples(run.model, example_inputs(run, 16, seed=run.cfg.seed, metrics=["repeat"]))
    assert rep["repeat_acc"][1].mean() == pytest.approx(last["ar_acc"], abs=1e-9)
    val = score_examples(run.model, example_inputs(run, 4, seed=0, metrics=["val"]))
    assert -val["val_logprob"][1].mean() == pytest.approx(last["val_loss"], rel=1e-5)


def test_cli_table_feeds_the_permutation_tests(tiny_run, tmp_path, capsys):
    from ihstats.ablation.results import run_ablation_tests

    out = tmp_path / "abl.csv"
    assert main([str(tiny_run), "--top-k", "1", "--per-layer", "--random-sets", "50", "--examples", "6",
                 "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    table = pd.read_csv(out)
    # 2 layers x 2 heads, one per layer: 4 possible sets, so the 3 others are all the random sets
    metrics = {"repeat_logprob", "repeat_acc", "val_logprob", "icl_logprob", "icl_hits1"}
    assert set(table["metric"]) == metrics
    n_icl = 6 * len(TASKS)
    assert len(table) == 5 * (3 * 6 + 2 * n_icl)
    assert table.groupby("metric")["set_id"].nunique().eq(5).all()
    assert set(table.loc[table["ablation"] == "top", "heads"]) <= {"L0H0 L1H0", "L0H0 L1H1", "L0H1 L1H0",
                                                                   "L0H1 L1H1"}
    none = table[(table["ablation"] == "none") & (table["metric"] == "val_logprob")]["value"].to_numpy()
    top = table[(table["ablation"] == "top") & (table["metric"] == "val_logprob")]["value"].to_numpy()
    assert not np.allclose(none, top)  # ablating two heads changes the held-out loss
    tests, _ = run_ablation_tests(table, n_resamples=99, n_boot=50, n_possible=4)
    assert main([str(tiny_run), "--top-k", "1", "--random-sets", "2", "--examples", "3", "--metrics", "val",
                 "--mode", "mean", "--out", str(tmp_path / "mean.csv")]) == 0
    mean = pd.read_csv(tmp_path / "mean.csv")
    # one global top head: the only same-count-per-layer set is the other head of its layer
    assert set(mean["metric"]) == {"val_logprob"} and len(mean) == 3 * 3  # none, top, 1 random
    assert set(tests["metric"]) == metrics and tests["exact"].all()
    assert tests["n_random"].eq(3).all() and tests["p_random"].between(0.25, 1.0).all()


def test_cli_icl_and_errors(tiny_run, tmp_path, capsys):
    out = tmp_path / "icl.csv"
    assert main([str(tiny_run), "--icl", "--examples", "4", "--out", str(out)]) == 0
    rep = pd.read_csv(out)
    assert len(rep) == 2 * len(TASKS) and rep["hits1"].between(0, 1).all()
    assert (rep["hits3"] >= rep["hits1"]).all() and (rep["shots_mean"] <= 10).all()
    kv = pd.read_csv(tmp_path / "icl_kv.csv")  # key -> value recall beside it, 3 controls
    assert kv["control"].tolist() == ["true", "permuted", "absent"] and kv["hits1"].between(0, 1).all()
    prompts = pd.read_csv(tmp_path / "icl_kv_prompts.csv")  # the answer log-prob of each prompt, per control
    assert len(prompts) == 3 * 4 and prompts.groupby("control")["logprob"].mean().round(6).to_dict() == \
        kv.set_index("control")["mean_logprob"].round(6).to_dict()
    p = kv_true_above(prompts)  # the paired test is the statistics' (issue 67)
    assert p["control"].tolist() == ["permuted", "absent"] and p["n_prompts"].eq(4).all()
    assert p["p_true_above"].between(1 / 16, 1).all()  # 4 prompts: exact, floor 1/16
    assert ablation_tests_main(["--kv", str(tmp_path / "icl_kv_prompts.csv"), "--out", str(tmp_path / "kv")]) == 0
    assert pd.read_csv(tmp_path / "kv" / "kv_tests.csv")["p_true_above"].tolist() == p["p_true_above"].tolist()
    assert "wrote" in capsys.readouterr().out

    assert main([str(tmp_path / "nope")]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert main([str(tiny_run), "--top-k", "5"]) == 2
    assert "--top-k: must be in [1, 4]" in capsys.readouterr().err
    assert main([str(tiny_run), "--score", "bogus"]) == 2
    assert "--score 'bogus' is not in" in capsys.readouterr().err
    assert main([str(tiny_run), "--metrics", "repeat,loss"]) == 2
    assert "--metrics" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--help"])
    bare = tmp_path / "bare"
    (bare / "checkpoints").mkdir(parents=True)
    (bare / "config.json").write_text(json.dumps({"config": {}}))
    assert main([str(bare)]) == 2 and "final.pt: not found" in capsys.readouterr().err


def test_icl_needs_a_tokenizer(tiny_run):
    run = load_trained_run(tiny_run)
    no_tok = LoadedRun(run.model, run.cfg, source=object(), step=run.step)
    with pytest.raises(ValueError, match="has no tokenizer"):
        icl_report(no_tok)


# ------------------------------------------------------------------------------ issue 42: kv recall, prev-token set
def test_kv_recall_prompts_and_controls():
    from ihtrain.ablate.icl_tasks import kv_recall_batch

    b = {c: kv_recall_batch(40, 6, (2, 60), c, seed=3) for c in ("true", "permuted", "absent")}
    for c, batch in b.items():
        x = np.array(batch.ids)
        assert x.shape == (40, 13) and batch.task == f"kv_recall:{c}"
        np.testing.assert_array_equal(batch.answer, b["true"].answer)  # paired prompt by prompt
        assert all(len(set(r[:12])) == 12 for r in x)  # distinct keys and values
    t, p, a = (np.array(b[c].ids) for c in ("true", "permuted", "absent"))
    for row, ans in zip(t, b["true"].answer):
        j = list(row[0:12:2]).index(row[-1])  # the query is one of the keys ...
        assert row[2 * j + 1] == ans  # ... and the answer is the value shown after it
    np.testing.assert_array_equal(p[:, 0:12:2], t[:, 0:12:2])  # same keys and query
    assert all(ans in row[1:12:2] and row[list(row[0:12:2]).index(row[-1]) * 2 + 1] != ans
               for row, ans in zip(p, b["true"].answer))  # answer present, after another key
    assert not any(row[-1] in row[:12] for row in a)  # absent: a fresh key
    with pytest.raises(ValueError, match="control"):
        kv_recall_batch(4, 6, (2, 60), "shuffled")
    with pytest.raises(ValueError, match="ordinary_range"):
        kv_recall_batch(4, 6, (2, 10))


def test_kv_recall_hand_wired_induction_beats_its_controls():
    """The induction head finds the query key earlier and copies the value after it: recall is
    near perfect on true prompts, and the answer's log-prob falls far under both controls."""
    from ihtrain.ablate.icl_tasks import kv_recall_batch

    model, V, P = induction_model(20, 16), 20, 16
    s = {c: icl_scores(model, kv_recall_batch(30, 7, (1, V), c, seed=0)) for c in ("true", "permuted", "absent")}
    assert s["true"]["icl_hits1"].mean() == 1.0
    assert s["permuted"]["icl_hits1"].mean() == 0.0
    assert s["true"]["icl_logprob"].mean() > -0.5
    for c in ("permuted", "absent"):
        assert s[c]["icl_logprob"].mean() < s["true"]["icl_logprob"].mean() - 2.0


def test_cli_new_metrics_and_prev_token_set(tiny_run, tmp_path, capsys):
    out = tmp_path / "abl.csv"
    assert main([str(tiny_run), "--top-k", "1", "--per-layer", "--examples", "4", "--metrics",
                 "repeat_nat,kv", "--prev-token-set", "--condition", "nat", "--out", str(out)]) == 0
    assert "previous-token set" in capsys.readouterr().out
    table = pd.read_csv(out)
    assert set(table["metric"]) == {"repeat_nat_logprob", "repeat_nat_acc", "kv_logprob", "kv_hits1"}
    assert set(table["condition"]) == {"nat", "nat:prev_token"}
    # 2 x 2 heads, one per layer: none, top and 3 random sets per family, 4 examples per metric
    assert len(table) == 2 * 4 * 5 * 4
    # without the top previous-token head: one head left in its layer, so the top set's layer is
    # fixed there and only the other layer's 2 heads vary: 1 random set, and none holds that head
    out2 = tmp_path / "excl.csv"
    assert main([str(tiny_run), "--top-k", "1", "--per-layer", "--examples", "2", "--metrics", "val",
                 "--exclude-prev-token", "--out", str(out2)]) == 0
    prev = prev_token_head(run_head_scores(tiny_run, "prev_token"))
    shared = next(f"L{l}H{hs[0]}" for l, hs in enumerate(prev) if hs)
    assert f"excluded from every set: {shared}" in capsys.readouterr().out
    excl = pd.read_csv(out2)
    assert excl["set_id"].nunique() == 3 and not excl["heads"].str.contains(shared).any()
