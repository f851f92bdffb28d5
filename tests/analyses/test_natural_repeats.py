"""analyses/natural_repeats.py: repeated-bigram counts on streams with known repeats, and the exponent."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "analyses" / "natural_repeats.py"
spec = importlib.util.spec_from_file_location("natural_repeats", SCRIPT)
nr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nr)


def test_events_count_every_bigram_after_its_first():
    w = np.array([[1, 2, 1, 2, 1, 2],    # bigrams 12 21 12 21 12: 3 repeats
                  [5, 6, 7, 8, 9, 10],   # none
                  [3, 3, 3, 3, 3, 3]])   # 33 five times: 4 repeats
    assert nr.repeated_bigram_events(w).tolist() == [3, 0, 4]
    # a repeated token with a different successor is not a repeated bigram
    assert nr.repeated_bigram_events(np.array([[4, 1, 4, 2, 4, 3]])).tolist() == [0]
    with pytest.raises(ValueError, match="windows"):
        nr.repeated_bigram_events(np.array([1, 2, 3]))


def test_uniform_tokens_give_the_birthday_count_and_its_exponent():
    """i.i.d. uniform tokens over V: E(C) = sum over t of P(an earlier bigram equals this one)
    ~ C^2 / (2 V^2) for C << V, so the exponent is 2 and the density grows like C."""
    V = 64
    tokens = np.random.default_rng(0).integers(0, V, size=400_000)
    t = nr.density_table(tokens, contexts=(32, 64, 128, 256), n_windows=2000, seed=1)
    expected = np.array([(C - 1) - V**2 * (1 - (1 - V**-2) ** (C - 1)) for C in t["C"]])  # distinct-count mean
    assert np.allclose(t["events"], expected, rtol=0.1)
    assert nr.events_exponent(t) == pytest.approx(2.0, abs=0.1)
    assert nr.events_exponent(t, 64, 256) == pytest.approx(2.0, abs=0.1)
    with pytest.raises(ValueError, match="two or more"):
        nr.events_exponent(t, 64, 64)


def test_help():
    r = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "--vocab" in r.stdout and "b = k * a" in r.stdout
