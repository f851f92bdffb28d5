"""The frontier's report: ``summary.md`` and ``frontier.png/.pdf`` of ``analyses/fit_frontier.py``
(one report home per fit).

:func:`write_frontier_report` writes the fit (terms, separation, boundary), which knob matters more
and the GLM cross-check, and asks the figure home (:func:`ihstats.figures.frontier.plot_frontier`) for the
figure beside it; :func:`budget_lines` the section on a grid read at two budgets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.frontier.glm import SEPARATION_WORDS
from ihstats.frontier.results import CLAIM_PROBABILITY, PER_LOG_UNIT, knob_verdict
from ihstats.tables import outcome_word
from ihstats.figures.frontier import plot_frontier
from ihstats.base.fileio import atomic_write_text


def write_frontier_report(res, path: Path, source: str, hdi_prob: float, extra=(), knob=None,
                          basis: str = "the table's formed column") -> None:
    """Write ``summary.md`` (at ``path``): the fit, which knob matters more (``knob``:
    :func:`knob_table`, made here without the onset row when not given), the GLM cross-check, then
    ``extra`` lines (the two budgets of :func:`budget_lines`, the onset model of
    :mod:`ihstats.onset.report`); and beside it the figure it names, ``frontier.png/.pdf``. ``basis``:
    what "formed" rests on (:func:`ihstats.tables.outcome_basis`), said beside the count."""
    plot_frontier(res, path.parent / "frontier", hdi_prob=hdi_prob)
    s = res.summary(hdi_prob)
    cmp = res.compare_glm(hdi_prob)
    cells = res.model.cells
    note = res.boundary_note(hdi_prob)
    fmt = lambda x: f"{x:.3g}"  # noqa: E731
    lines = [
        "# Frontier fit", "",
        f"- input: {source}",
        f"- runs: {int(cells['n_runs'].sum())} in {len(cells)} cells; {outcome_word(basis)}: "
        f"{int(cells['n_formed'].sum())} ({basis})",
        f"- model: logit p(formed) = b0 + b_freq z(log f) + b_rel z(log r)"
        f"{' + b_int z z' if res.model.spec.interaction else ''}; Normal(0, "
        f"{res.model.spec.prior_sd}) slopes on the standardised scale",
        f"- separation in the data: **{SEPARATION_WORDS.get(res.separation, res.separation)}**",
        f"- boundary: **{note or 'inside the grid'}**",
        f"- max r_hat {s['r_hat'].max():.3f}, min bulk ESS {s['ess_bulk'].min():.0f}",
        "", f"| term | mean | sd | {int(hdi_prob * 100)}% HDI |", "|---|---|---|---|"]
    lines += [f"| {r.term} | {fmt(r.mean)} | {fmt(r.sd)} | [{fmt(r.hdi_lo)}, {fmt(r.hdi_hi)}] |"
              for r in s.itertuples()]
    lines += ["", "## Which knob matters more", *knob_lines(knob if knob is not None else knob_table(res, None, hdi_prob))]
    lines += ["", "## GLM cross-check",
              f"statsmodels GLM ({res.glm.method}); its contour lies inside the band at "
              f"{cmp['glm_in_band'].mean():.0%} of {len(cmp)} grid points; max |difference| "
              f"{cmp['diff_log'].abs().max():.3f} in log reliability." if len(cmp) else
              f"statsmodels GLM ({res.glm.method}); no contour inside (0, 1] to compare.",
              "", "Figure: `frontier.png` / `frontier.pdf`; data behind it: `frontier.csv`, "
              "`cells.csv`.", *extra]
    atomic_write_text(path, "\n".join(lines) + "\n")


#: The scale the knob verdict is read on: the frontier's slopes per unit log knob do not depend on
#: the ranges a design tested; the other rows of the knob table are shown, never claimed.
VERDICT_SCALE = "frontier, per unit log knob"


def _reading(p: float, level: float = CLAIM_PROBABILITY) -> str:
    """What one row would say on its own: the knob, or "not resolved (leans ...)"."""
    if not np.isfinite(p):
        return "not resolved"
    for q, knob in ((p, "frequency"), (1.0 - p, "reliability")):
        if q >= level:
            return knob
    return f"not resolved (leans {'frequency' if p > 0.5 else 'reliability'})"


def knob_table(res, onset=None, hdi_prob: float = 0.9) -> pd.DataFrame:
    """Which knob matters more, one row per scale: the frontier per unit log knob (the verdict,
    :data:`VERDICT_SCALE`), the frontier per sd of the tested log levels (a knob tested over a wider
    range looks stronger there) and, given ``onset`` (:class:`ihstats.onset.results.OnsetResults`),
    the onset model's elasticities. Columns ``scale, p_freq_larger, ratio, ratio_lo, ratio_hi``
    (``|freq| / |rel|``, median and HDI), ``reading`` and ``verdict`` (True on the verdict's row)."""
    sens = res.sensitivity(hdi_prob).set_index("quantity")
    rows = []
    for scale, suffix in ((VERDICT_SCALE, PER_LOG_UNIT), ("frontier, per sd of the tested log levels", "")):
        r = sens.loc[f"|b_freq| / |b_rel|{suffix}"]
        rows.append((scale, sens.at[f"P(|b_freq| > |b_rel|){suffix}", "value"], r["value"], r["lo"], r["hi"]))
    if onset is not None:
        d = onset.draws()
        ratio = np.abs(d["e_freq"]) / np.abs(d["e_rel"])
        lo, hi = _bayes.hdi(np.log(ratio), hdi_prob=hdi_prob)
        rows.append(("onset model, elasticity per unit log knob", onset.p_freq_larger(),
                     float(np.median(ratio)), float(np.exp(lo)), float(np.exp(hi))))
    out = pd.DataFrame(rows, columns=["scale", "p_freq_larger", "ratio", "ratio_lo", "ratio_hi"])
    out["reading"] = [_reading(p) for p in out["p_freq_larger"]]
    out["verdict"] = out["scale"] == VERDICT_SCALE
    return out.assign(hdi_prob=hdi_prob)


def knob_verdict_line(knob: pd.DataFrame) -> str:
    """The one verdict of :func:`knob_table`, with the scale it is read on."""
    v = knob[knob["verdict"]].iloc[0]
    return (f"Which knob matters more: {knob_verdict(v.p_freq_larger, quantity='P(frequency matters more)')} "
            f"(read on the {v.scale} scale, which does not depend on the tested ranges)")


def knob_lines(knob: pd.DataFrame) -> list[str]:
    """The verdict line and the table of every scale, as Markdown."""
    pct = int(round(knob["hdi_prob"].iloc[0] * 100))
    lines = [f"**{knob_verdict_line(knob)}**.", "",
             f"| scale | P(frequency matters more) | \\|freq\\| / \\|rel\\| [{pct}% HDI] | this row alone |",
             "|---|---|---|---|"]
    return lines + [f"| {r.scale}{' (the verdict)' if r.verdict else ''} | {r.p_freq_larger:.3f} | "
                    f"{r.ratio:.3g} [{r.ratio_lo:.3g}, {r.ratio_hi:.3g}] | {r.reading} |"
                    for r in knob.itertuples()]


def knob_text(knob: pd.DataFrame) -> str:
    """The verdict line and the table of every scale, as plain text for a terminal."""
    pct = int(round(knob["hdi_prob"].iloc[0] * 100))
    tab = pd.DataFrame({"scale": knob["scale"] + np.where(knob["verdict"], " (the verdict)", ""),
                        "P(freq matters more)": knob["p_freq_larger"].map("{:.3f}".format),
                        f"|freq|/|rel| [{pct}% HDI]": [f"{r.ratio:.3g} [{r.ratio_lo:.3g}, {r.ratio_hi:.3g}]"
                                                       for r in knob.itertuples()],
                        "this row alone": knob["reading"]})
    return knob_verdict_line(knob) + "\n" + tab.to_string(index=False)


def budget_lines(cmp) -> list[str]:
    """The ``## Two budgets`` section of ``summary.md`` (:class:`ihstats.frontier.budget.BudgetComparison`)."""
    tab = cmp.table()
    return ["", "## Two budgets", f"**{cmp.verdict()}**.", "",
            "| budget (updates) | runs formed | frequency boundary at max r | reliability boundary at max f |",
            "|---|---|---|---|"] + [
        f"| {r.budget:,.0f} | {r.n_formed} of {r.n_runs} | {r.frequency:.3g} | {r.reliability:.3g} |"
        for r in tab.itertuples()] + ["", "Per run and seed at both budgets: `budgets.csv`."]
