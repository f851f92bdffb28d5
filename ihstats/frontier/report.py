"""The frontier's report: ``summary.md`` of ``analyses/fit_frontier.py`` (one report home per fit).

:func:`write_frontier_report` writes the fit (terms, separation, boundary), which knob matters more
and the GLM cross-check; :func:`budget_lines` the section on a grid read at two budgets. The figure
is drawn by the figure home (:func:`ihstats.plots.plot_frontier`).
"""

from __future__ import annotations

from pathlib import Path

from ihstats.frontier.results import PER_LOG_UNIT, knob_verdict


def write_frontier_report(res, path: Path, source: str, hdi_prob: float, extra=()) -> None:
    """Write ``summary.md``: the fit, which knob matters more, the GLM cross-check, then ``extra``
    lines (the two budgets of :func:`budget_lines`, the onset model of :mod:`ihstats.onset.report`)."""
    s = res.summary(hdi_prob)
    sens = res.sensitivity(hdi_prob).set_index("quantity")
    cmp = res.compare_glm(hdi_prob)
    cells = res.model.cells
    note = res.boundary_note(hdi_prob)
    fmt = lambda x: f"{x:.3g}"  # noqa: E731
    lines = [
        "# Frontier fit", "",
        f"- input: {source}",
        f"- runs: {int(cells['n_runs'].sum())} in {len(cells)} cells; formed: "
        f"{int(cells['n_formed'].sum())}",
        f"- model: logit p(formed) = b0 + b_freq z(log f) + b_rel z(log r)"
        f"{' + b_int z z' if res.model.spec.interaction else ''}; Normal(0, "
        f"{res.model.spec.prior_sd}) slopes on the standardised scale",
        f"- separation in the data: **{res.separation}**"
        + (" (the MLE does not exist; the posterior is held finite by the prior, the GLM "
           "cross-check uses Firth's penalty)" if res.separation != "none" else ""),
        f"- boundary: **{note or 'inside the grid'}**",
        f"- max r_hat {s['r_hat'].max():.3f}, min bulk ESS {s['ess_bulk'].min():.0f}",
        "", f"| term | mean | sd | {int(hdi_prob * 100)}% HDI |", "|---|---|---|---|"]
    lines += [f"| {r.term} | {fmt(r.mean)} | {fmt(r.sd)} | [{fmt(r.hdi_lo)}, {fmt(r.hdi_hi)}] |"
              for r in s.itertuples()]
    lines += ["", "## Which knob matters more", *knob_lines(sens)]
    lines += ["", "## GLM cross-check",
              f"statsmodels GLM ({res.glm.method}); its contour lies inside the band at "
              f"{cmp['glm_in_band'].mean():.0%} of {len(cmp)} grid points; max |difference| "
              f"{cmp['diff_log'].abs().max():.3f} in log reliability." if len(cmp) else
              f"statsmodels GLM ({res.glm.method}); no contour inside (0, 1] to compare.",
              "", "Figure: `frontier.png` / `frontier.pdf`; data behind it: `frontier.csv`, "
              "`cells.csv`.", *extra]
    path.write_text("\n".join(lines) + "\n")


def knob_lines(sens) -> list[str]:
    """Which knob matters more on both scales (``FrontierResults.sensitivity`` indexed by
    quantity): per unit log knob, the verdict; per sd of the design's log levels, what the design
    shows over its own ranges (a knob tested over a wider range looks stronger there)."""
    out = []
    for suffix, what in ((PER_LOG_UNIT, "per unit log knob (the verdict; does not depend on the tested ranges)"),
                         ("", "standardised log knobs (per sd of the tested log levels)")):
        p, r = sens.at[f"P(|b_freq| > |b_rel|){suffix}", "value"], sens.loc[f"|b_freq| / |b_rel|{suffix}"]
        verdict = knob_verdict(p, quantity=f"P(|b_freq| > |b_rel|){suffix}")
        out.append(f"- {what}: P(|b_freq| > |b_rel|) = {p:.3f}: **{verdict}**; |b_freq| / |b_rel| = "
                   f"{r['value']:.3g} [{r['lo']:.3g}, {r['hi']:.3g}].")
    return out


def budget_lines(cmp) -> list[str]:
    """The ``## Two budgets`` section of ``summary.md`` (:class:`ihstats.frontier.budget.BudgetComparison`)."""
    tab = cmp.table()
    return ["", "## Two budgets", f"**{cmp.verdict()}**.", "",
            "| budget (updates) | runs formed | frequency boundary at max r | reliability boundary at max f |",
            "|---|---|---|---|"] + [
        f"| {r.budget:,.0f} | {r.n_formed} of {r.n_runs} | {r.frequency:.3g} | {r.reliability:.3g} |"
        for r in tab.itertuples()] + ["", "Per run and seed at both budgets: `budgets.csv`."]
