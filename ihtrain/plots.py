"""Figures of one run's logs: the curves a person looks at to see an induction head form.

Training curves live here, beside the trainer that draws them at the end of a run; every other
figure is in :mod:`ihstats.figures`, whose ``save_figure`` (:mod:`ihstats.figures.save`) writes
this one too.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ihstats.base.contract import FORMED_LEVEL, PER_HEAD, formed_level, max_over_heads  # noqa: E402
from ihstats.emergence import formation, onset_metric  # noqa: E402
from ihstats.figures.save import save_figure  # noqa: E402
from ihstats.base.fileio import UnreadableFile, read_json, read_parquet  # noqa: E402


#: the per-head curves of the first panel, bottom to top: (metric, legend label, line style). The scores
#: sit together at chance (~0.02) until the head forms: the solid PS lines go beneath, the dashed and
#: dotted ones over them, so where two coincide both still show
CURVE_STYLES = (
    ("ps", "prefix matching, repeat probe (max over heads)", {"color": "C0", "lw": 2.2}),
    ("ps_indist", "prefix matching at the data's copies (max)", {"color": "C4", "lw": 1.4}),
    ("prev_token", "previous token (max)", {"color": "C1", "ls": (0, (5, 2)), "lw": 1.3}),
    ("la", "logit attribution (max)", {"color": "C2", "ls": (0, (1, 1.5)), "lw": 1.5}),
)


def plot_run_curves(run_dir: str | Path) -> list[Path]:
    """Max-over-heads PS, previous-token score, AR accuracy and val loss against updates.

    Writes ``curves.png`` and ``curves.pdf`` in the run directory and returns their paths.
    """
    run_dir = Path(run_dir)
    m = read_parquet(run_dir / "metrics.parquet", what="metric log")
    per_head = pd.DataFrame({name: max_over_heads(m, name) for name in PER_HEAD if name in set(m["metric"])})
    model_level = m[m["head"] < 0].pivot_table(index="step", columns="metric", values="value")
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), constrained_layout=True)
    x = per_head.index.to_numpy().clip(min=1)
    for z, (name, label, style) in enumerate(CURVE_STYLES, start=2):
        if name in per_head:
            axes[0].plot(x, per_head[name], label=label, zorder=z, **style)
    metric = onset_metric(m)  # the PS the emergence table reads (the general probe, else the data's copies)
    f = formation(m, formed_level=_level(run_dir), metric=metric)  # as the grid summary reads the run
    if f["crossed"]:  # the PS onset with its interval, and whether the run is certified (ihstats.certificate)
        axes[0].axvspan(f["onset_lo"], f["onset_hi"], color="0.85", zorder=0)
        axes[0].axvline(f["onset"], color="0.4", ls=(0, (4, 3)), lw=0.8, zorder=1,
                        label=f"{metric} onset {f['onset']:,.0f} [{f['onset_lo']:,.0f}, {f['onset_hi']:,.0f}] "
                              f"({'certified' if f['formed'] else 'crossing; ' + f['mechanism']})")
    axes[0].set(xscale="log", xlabel="updates", ylabel="score", ylim=(0, 1.02), title="per-head scores")
    axes[0].legend(fontsize=7, loc="upper left", framealpha=0.85)
    if "ar_acc" in model_level:
        axes[1].plot(model_level.index.to_numpy().clip(min=1), model_level["ar_acc"], color="C3")
    axes[1].set(xscale="log", xlabel="updates", ylabel="top-1 accuracy", ylim=(0, 1.02),
                title="associative recall (2nd copy)")
    if "val_loss" in model_level:
        axes[2].plot(model_level.index.to_numpy().clip(min=1), model_level["val_loss"], color="C4")
    axes[2].set(xscale="log", xlabel="updates", ylabel="nats/token", title="held-out loss")
    fig.suptitle(_title(run_dir), fontsize=9)
    return save_figure(fig, run_dir / "curves", dpi=120, close=True)


def _level(run_dir: Path) -> float:
    """The run's own formed level (its config.json; the default where it cannot be read)."""
    try:
        return formed_level(read_json(run_dir / "config.json", "run's config"))
    except (UnreadableFile, ValueError):  # a figure never fails the run: the default level
        return FORMED_LEVEL


def _title(run_dir: Path) -> str:
    """The run's name, id and what it trained on (the folder's name alone may be anything)."""
    try:
        rec = read_json(run_dir / "config.json", "run's config")
    except UnreadableFile:
        return run_dir.name
    c = rec.get("config", {})
    t, mdl = c.get("train", {}), c.get("model", {})
    return (f"{c.get('name', run_dir.name)} (run {rec.get('run_id', '?')}): {mdl.get('n_layer')}-layer "
            f"{mdl.get('n_head')}-head GPT, {c.get('data', {}).get('source')} data, B {t.get('batch_size')} x "
            f"C {t.get('context')}, {t.get('schedule')} schedule")
