"""The generators' mechanism knobs (issue 53): each realised value measured from the tokens alone
(copy_distances, measure_repeats) against its target; the lag pmf; the copystats command."""

import json

import numpy as np
import pytest

from ihstats.base.ids import config_hash
from ihtrain.config import RunConfig, apply_overrides, validate
from ihtrain.copystats import main
from ihtrain.data.copystats import copy_distances, copy_table
from ihtrain.data.lags import BUILTIN_LAG_FILE, bigram_lags, builtin_lag_pmf, lag_pmf, lag_weights
from ihtrain.data.markov import MarkovConfig, MarkovSource
from ihtrain.data.repeats import copy_labels, measure_repeats, plant_repeats
from ihtrain.data.seminatural import BigramModel, SeminaturalConfig, SeminaturalSource
from ihtrain.errors import ConfigError

V = 400


def _uniform_model(rng_first, n):
    return rng_first.integers(0, V, n)


def _plant(n, T, f, r, seed=0, **kw):
    return plant_repeats(np.random.default_rng(seed), n, T, V, f, r, _uniform_model,
                         lambda rng, prev: rng.integers(0, V, prev.size), **kw)


def test_copy_distances_by_hand():
    # a b c a b d e a b: (a b) repeats at a=3 (distance 3) and a=7 (4, to the nearest, at 3)
    x = np.array([[0, 1, 2, 0, 1, 3, 4, 0, 1]])
    rows, a, d = copy_distances(x)
    assert rows.tolist() == [0, 0] and a.tolist() == [3, 7] and d.tolist() == [3, 4]
    t = copy_table(x)
    assert t["copies_per_seq"] == 2 and t["copies_per_token"] == pytest.approx(2 / 8) and t["d_mean"] == 3.5


def test_copies_found_from_tokens_are_the_planted_ones():
    x, truth = _plant(64, 48, 0.7, 0.8, seed=1)
    rows, a, _ = copy_distances(x)
    found = np.zeros_like(x, dtype=bool)
    found[rows, a] = True
    assert np.array_equal(found, copy_labels(x)[0])  # the same events as the label function
    planted = np.zeros_like(found)
    r, p = np.nonzero(truth["copy_source"] >= 0)
    planted[r, p - 1] = True  # a copy at p has its query at p - 1
    assert np.array_equal(found, planted)


@pytest.mark.parametrize("cap", [12, 32])  # below ~12 plants run short of positions (docstring)
def test_capped_distance(cap):
    x, truth = _plant(200, 64, 0.9, 0.9, seed=cap, lag_weights=lag_weights("uniform", cap))
    _, _, d = copy_distances(x)
    assert d.size > 1000 and d.max() <= cap and d.min() >= 2
    r, p = np.nonzero(truth["copy_source"] >= 0)
    assert (p - truth["copy_source"][r, p]).max() <= cap  # the generator's own choice too
    m = measure_repeats(x)  # frequency and reliability still hit their targets
    assert abs(m["frequency"] - 0.9) < 0.02 and abs(m["reliability"] - 0.9) < 0.02


def test_distance_distribution_matches_the_pmf():
    # a pmf on [2, 10], every plant has its whole support (repeats from position 12); sparse copies
    # (f 0.25) keep tokens' occurrences few, so the nearest occurrence is the planted one
    w = np.zeros(11)
    w[2:] = np.arange(9, 0, -1, dtype=float)
    target = w / w.sum()
    x, _ = _plant(600, 60, 0.25, 0.5, seed=3, start=12, lag_weights=w)
    _, _, d = copy_distances(x)
    got = np.bincount(d, minlength=11)[:11] / d.size
    assert d.max() <= 10 and 0.5 * np.abs(got - target).sum() < 0.04


def test_uniform_rule_is_unchanged_without_weights():
    a, _ = _plant(32, 40, 0.8, 0.7, seed=5)
    b, _ = _plant(32, 40, 0.8, 0.7, seed=5, lag_weights=None)
    assert a.tobytes() == b.tobytes()
    assert lag_weights("uniform", 0) is None


def test_frequency_scales_with_context():
    cfg = MarkovConfig(vocab=600, frequency=0.3, reliability=0.8, frequency_exponent=0.5, frequency_ref_context=64)
    for C, target in ((64, 0.3), (256, 0.6)):
        src = MarkovSource(cfg, seed=0, pool_tokens=0, context=C)
        x, st = src.sample(np.random.default_rng(0), 256, C + 1)
        m = measure_repeats(x - 2)
        assert abs(m["frequency"] - target) < 0.02 and abs(st["realised_frequency"] - m["frequency"]) < 1e-12
        # copies per predicted token: f r over the second half's decision points
        expect = target * 0.8 * (C - 1 - (C + 1) // 2) / C
        assert copy_table(x)["copies_per_token"] == pytest.approx(expect, rel=0.06)
        assert st["realised_copies_per_token"] == pytest.approx(copy_table(x)["copies_per_token"])
    assert src.fingerprint["frequency_at_context"] == pytest.approx(0.6)


def test_seminatural_knobs():
    rng = np.random.default_rng(0)
    stream = rng.integers(0, 300, 30_000)
    bigram = BigramModel.from_tokens(stream, 300, exclude=())
    cfg = SeminaturalConfig(frequency=0.5, reliability=0.8, top_v=300, repeat_start=8, max_distance=16)
    src = SeminaturalSource(cfg, seed=0, bigram=bigram, pool_tokens=0, context=128)
    x, st = src.sample(np.random.default_rng(1), 128, 129)
    rows, a, d = copy_distances(x)
    assert a.min() >= 8 and d.max() <= 16
    assert abs(measure_repeats(x, start=8)["frequency"] - 0.5) < 0.02
    assert st["realised_copy_distance"] <= 16


def test_lag_pmf_and_the_shipped_one():
    period = np.tile(np.arange(7), 50)  # every bigram repeats 7 tokens later
    assert set(bigram_lags(period).tolist()) == {7}
    pmf, n = lag_pmf(period, max_lag=20)
    assert pmf[7] == 1.0 and n == bigram_lags(period).size
    with pytest.raises(ValueError, match="no repeated bigram"):
        lag_pmf(np.arange(50))
    shipped = builtin_lag_pmf()
    meta = json.loads(BUILTIN_LAG_FILE.read_text())
    assert shipped[:2].sum() == 0 and shipped.sum() == pytest.approx(1.0, abs=1e-4)
    assert shipped.size == meta["max_lag"] + 1 and meta["n_events"] > 100_000
    assert lag_weights("builtin-text", 32).size == 33


def test_knob_errors_name_the_field():
    base = RunConfig()
    with pytest.raises(ConfigError, match="data.markov.max_distance"):
        validate(apply_overrides(base, {"data.source": "markov", "data.markov.frequency": 0.5,
                                        "data.markov.reliability": 0.5, "data.markov.max_distance": 1}))
    with pytest.raises(ConfigError, match="data.markov.frequency_exponent"):
        validate(apply_overrides(base, {"data.source": "markov", "data.markov.frequency": 0.9, "train.context": 128,
                                        "data.markov.reliability": 0.5, "data.markov.frequency_exponent": 0.5}))
    with pytest.raises(ValueError, match="data.markov.repeat_distance"):
        lag_weights("nearest", 0, "data.markov")


def test_new_fields_at_defaults_keep_run_ids():
    d = RunConfig().to_dict()
    old = json.loads(json.dumps(d))
    for sect in ("markov", "seminatural"):
        for k in ("repeat_distance", "max_distance", "frequency_exponent", "frequency_ref_context"):
            del old["data"][sect][k]
    del old["data"]["seminatural"]["repeat_start"]
    assert config_hash(d) == config_hash(old)
    d["data"]["markov"]["max_distance"] = 32
    assert config_hash(d) != config_hash(old)


def test_command(capsys):
    rc = main(["--source", "markov", "--context", "16", "32", "--seqs", "16", "--set", "data.markov.vocab=64",
               "--set", "data.markov.frequency=0.9", "--set", "data.markov.reliability=0.9",
               "--set", "data.markov.pool_tokens=0", "--set", "data.markov.max_distance=8"])
    out = capsys.readouterr().out
    assert rc == 0 and "copies_per_token" in out and "gen_copy_distance" in out
    assert [ln.split()[0] for ln in out.splitlines()[2:]] == ["16", "32"]
    assert main(["--source", "markov", "--context", "16", "--set", "data.markov.max_distance=1",
                 "--set", "data.markov.frequency=0.5", "--set", "data.markov.reliability=0.5"]) == 2


# ---------------------------------------------------------------- the decoupled setting (issue 66)
#: bxc-ident's source (ihtrain/presets/bxc-ident.toml): repeats from position 12, copy distances
#: uniform on [8, 12], 0.4 copies per token at every C
DECOUPLED = {"data.markov.repeat_start": 12, "data.markov.min_distance": 8, "data.markov.max_distance": 12,
             "data.markov.copies_per_token": 0.4}


def _markov_rows(extra):
    from ihtrain.copystats import source_table
    cfg = apply_overrides(RunConfig(), {"data.source": "markov", "data.markov.vocab": 512, "data.markov.frequency": 0.9,
                                        "data.markov.reliability": 0.9, "data.markov.pool_tokens": 0,
                                        "model.context": 128, "train.context": 64, **extra})
    return {r["C"]: r for r in source_table(cfg, [32, 64, 128], n_seqs=128)}


def test_decoupled_setting_holds_copy_statistics_across_C():
    rows = _markov_rows(DECOUPLED)
    for stat in ("copies_per_token", "d_mean", "repeat_start"):
        vals = [rows[C][stat] for C in (32, 64, 128)]
        assert max(vals) <= 1.1 * min(vals), (stat, vals)  # constant within 10%
    assert rows[32]["repeat_start"] == 12 and rows[64]["copies_per_token"] == pytest.approx(0.4, rel=0.03)
    assert 8 <= rows[128]["d_q10"] and rows[128]["d_q90"] <= 12
    shipped = _markov_rows({})  # the shipped layout: distance and repeat start grow with C
    assert shipped[128]["d_mean"] > 3 * shipped[32]["d_mean"] and shipped[128]["repeat_start"] == 64
    # the shortcut's payoff still falls with C (more distinct tokens in view), less than in the shipped layout
    assert rows[32]["payoff_mean"] > rows[128]["payoff_mean"] > shipped[128]["payoff_mean"]


def test_successor_payoff_by_hand():
    from ihtrain.data.copystats import successor_payoff
    P = np.full((4, 4), 0.25)
    # 0 1 2 0 1: the copy at a = 3 (bigram 0 1 seen at 0) sees tokens {0, 1, 2}: mass 3/4
    out = successor_payoff(np.array([[0, 1, 2, 0, 1]]), P)
    assert out["payoff_mean"] == pytest.approx(-np.log(0.75)) == pytest.approx(out["payoff_q50"])
    assert np.isnan(successor_payoff(np.array([[0, 1, 2, 3]]), P)["payoff_mean"])  # no copies
    with pytest.raises(ValueError, match="transitions"):
        successor_payoff(np.array([[0, 5, 0, 5]]), P)


def test_planted_frequency_and_its_errors():
    from ihtrain.data.lags import planted_frequency
    sect = MarkovConfig(frequency=0.9, reliability=0.8, copies_per_token=0.4, min_distance=8, max_distance=12)
    # f = k C / (r (C - max(h, min_distance)))
    assert planted_frequency(sect, 64, 4, "data.markov") == pytest.approx(0.4 * 64 / (0.8 * 56))
    assert planted_frequency(sect, 64, 12, "data.markov") == pytest.approx(0.4 * 64 / (0.8 * 52))
    base = RunConfig()
    over = {"data.source": "markov", "data.markov.frequency": 0.5, "data.markov.reliability": 0.5, "train.context": 32}
    with pytest.raises(ConfigError, match="data.markov.copies_per_token"):
        validate(apply_overrides(base, {**over, "data.markov.copies_per_token": 0.45, "data.markov.repeat_start": 16}))
    with pytest.raises(ConfigError, match="data.markov.min_distance"):
        validate(apply_overrides(base, {**over, "data.markov.min_distance": 20, "data.markov.max_distance": 12}))
    with pytest.raises(ValueError, match="data.markov.min_distance"):
        lag_weights("uniform", 12, "data.markov", min_distance=1)
    w = lag_weights("uniform", 12, "data.markov", min_distance=8)
    assert w.size == 13 and w[:8].sum() == 0 and (w[8:] == 1).all()


def test_decoupled_fields_at_defaults_keep_run_ids():
    d = RunConfig().to_dict()
    old = json.loads(json.dumps(d))
    for sect in ("markov", "seminatural"):
        for k in ("min_distance", "copies_per_token"):
            del old["data"][sect][k]
    assert config_hash(d) == config_hash(old)
    d["data"]["markov"]["copies_per_token"] = 0.4
    assert config_hash(d) != config_hash(old)
