"""The frontier's report: ``summary.md`` of ``analyses/fit_frontier.py`` (one report home per fit).

:func:`write_frontier_report` writes the fit (terms, separation, boundary), which knob matters more
and the GLM cross-check; :func:`budget_lines` the section on a grid read at two budgets. The figure
is drawn by the figure home (:func:`ihstats.plots.plot_frontier`).
"""

from __future__ import annotations

from pathlib import Path

from ihstats.frontier.results import knob_verdict


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
    p = sens.at["P(|b_freq| > |b_rel|)", "value"]
    lines += ["", "## Which knob matters more",
              f"P(|b_freq| > |b_rel|) = {p:.3f} (standardised log knobs): **{knob_verdict(p)}**; "
              f"|b_freq| / |b_rel| = {fmt(sens.at['|b_freq| / |b_rel|', 'value'])} "
              f"[{fmt(sens.at['|b_freq| / |b_rel|', 'lo'])}, "
              f"{fmt(sens.at['|b_freq| / |b_rel|', 'hi'])}].",
              "", "## GLM cross-check",
              f"statsmodels GLM ({res.glm.method}); its contour lies inside the band at "
              f"{cmp['glm_in_band'].mean():.0%} of {len(cmp)} grid points; max |difference| "
              f"{cmp['diff_log'].abs().max():.3f} in log reliability." if len(cmp) else
              f"statsmodels GLM ({res.glm.method}); no contour inside (0, 1] to compare.",
              "", "Figure: `frontier.png` / `frontier.pdf`; data behind it: `frontier.csv`, "
              "`cells.csv`.", *extra]
    path.write_text("\n".join(lines) + "\n")


def budget_lines(cmp) -> list[str]:
    """The ``## Two budgets`` section of ``summary.md`` (:class:`ihstats.frontier.budget.BudgetComparison`)."""
    tab = cmp.table()
    return ["", "## Two budgets", f"**{cmp.verdict()}**.", "",
            "| budget (updates) | runs formed | frequency boundary at max r | reliability boundary at max f |",
            "|---|---|---|---|"] + [
        f"| {r.budget:,.0f} | {r.n_formed} of {r.n_runs} | {r.frequency:.3g} | {r.reliability:.3g} |"
        for r in tab.itertuples()] + ["", "Per run and seed at both budgets: `budgets.csv`."]
