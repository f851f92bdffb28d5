"""The ablation tests' report home: ``summary.md`` and ``drops.png/.pdf`` of ``analyses/ablation_tests.py``.

:func:`write_ablation_report` writes the tests of :func:`ihstats.ablation.results.run_ablation_tests`
(top-k against random-k head sets, per condition), the design's floor (:func:`floor_text`) and the
condition comparisons, and asks the figure home (:func:`ihstats.figures.plots_paper.plot_ablation_drops`)
for the figure beside it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ihstats.figures.save import save_figure
from ihstats.figures.plots_paper import plot_ablation_drops
from ihstats.base.fileio import atomic_write_text


def floor_text(tests: pd.DataFrame) -> str:
    """The design's smallest attainable p per row, and whether it can reject at all."""
    parts = [f"{r['condition']}: {r['p_random_min']:.3g} raw, {r['p_random_min_holm']:.3g} Holm "
             f"({r['n_random']} random sets{'' if r['can_reject'] else '; CANNOT REJECT'})"
             for r in tests.to_dict("records")]
    return "; ".join(parts)


def write_ablation_report(path: Path, tests: pd.DataFrame, comps: pd.DataFrame, *, source: str,
                          loss: bool, n_resamples: int, n_boot: int, alpha: float,
                          power_effect: float, n_min: int, power: float,
                          pooled: pd.DataFrame | None = None, drops: pd.DataFrame | None = None) -> None:
    """Write ``summary.md`` (at ``path``): the input and design (drop direction, resamples, the
    sign-flip test's power at ``power_effect`` with ``n_min`` examples, the random-set floor), one
    row per test, and the condition comparisons when there are any; with ``drops`` (the mean drop
    of every set, ``drops.csv``), the figure it names beside it, ``drops.png/.pdf``."""
    if drops is not None:
        xlabel = "mean drop (ablated - unablated)" if loss else "mean drop (unablated - ablated)"
        save_figure(plot_ablation_drops(drops, tests, title="", xlabel=xlabel), path.parent / "drops", close=True)
    md = ["# Ablation tests", "", f"- input: {source}",
          f"- drop = {'ablated - unablated (loss)' if loss else 'unablated - ablated'}; "
          f"{n_resamples} sign flips, {n_boot} bootstrap draws, alpha {alpha}",
          f"- power of the sign-flip test for d_z = {power_effect} with {n_min} examples: "
          f"{power:.2f} (200 simulations)",
          f"- smallest attainable p of the random-set test (the design's floor; 1 / (random sets + 1), "
          f"then Holm over the tests of its family): {floor_text(tests)}", "",
          "| condition | metric | top drop | random drop | gap [95% CI] | p random sets (Holm) "
          "| p sign-flip gap (BH) |", "|---|---|---|---|---|---|---|"]
    for r in tests.to_dict("records"):
        md.append(f"| {r['condition']} | {r.get('metric', '')} | {r['top_drop']:.3g} | "
                  f"{r['random_drop']:.3g} | {r['gap']:.3g} [{r['gap_lo']:.3g}, {r['gap_hi']:.3g}]"
                  f" | {r['p_random']:.3g} ({r['p_random_holm']:.3g}) | "
                  f"{r['p_sign_flip_gap']:.3g} ({r['p_sign_flip_gap_fdr_bh']:.3g}) |")
    if len(comps):
        md += ["", "## Condition comparisons (gap A - gap B, paired sign flips over examples)", "",
               "| A | B | diff | p | p Holm |", "|---|---|---|---|---|"]
        md += [f"| {r['condition_a']} | {r['condition_b']} | {r['diff']:.3g} | {r['p']:.3g} | "
               f"{r['p_holm']:.3g} |" for r in comps.to_dict("records")]
    if pooled is not None and len(pooled):
        md += ["", "## Seeds as the unit (conditions `MODE@sN` pooled; `pooled.csv`)", "",
               "Fisher's combination of each seed's random-set p with its exact null; floor: every seed's "
               "top set beats all its random sets; Holm within a family.", "",
               "| family | condition | metric | seeds | top drop | random drop | seeds' p | p pooled (Holm) "
               "| p top hurts less (Holm) | floor (Holm) |", "|---|---|---|---|---|---|---|---|---|---|"]
        md += [f"| {r['family']} | {r['condition']} | {r.get('metric', '')} | {r['n_seeds']} | "
               f"{r['top_drop']:.3g} | {r['random_drop']:.3g} | {r['p_seeds']} | {r['p_pooled']:.3g} "
               f"({r['p_pooled_holm']:.3g}) | {r['p_pooled_less']:.3g} ({r['p_pooled_less_holm']:.3g}) | "
               f"{r['p_floor']:.3g} ({r['p_floor_holm']:.3g}) |"
               for r in pooled.to_dict("records")]
    md += ["", "Figure: `drops.png` / `drops.pdf`; data behind it: `drops.csv`."]
    atomic_write_text(Path(path), "\n".join(md) + "\n")
