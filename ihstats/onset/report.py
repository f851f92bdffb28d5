"""The onset model's report: its section of the frontier's ``summary.md`` (one report home per fit)."""

from __future__ import annotations

import numpy as np


def not_fitted_lines(why: str) -> list[str]:
    """The section when the onset model was not fitted, and why."""
    return ["", "## Time to onset", f"not fitted: {why}."]


def onset_report_lines(res, designs, hdi_prob: float) -> list[str]:
    """The ``## Time to onset`` section: elasticities with the MLE beside them, the iso-onset line,
    the sampler's warnings, which knob moves the onset more and, when that is not resolved, the
    designs (:func:`ihstats.onset.design.resolving_designs`) that would resolve it."""
    el = res.elasticities(hdi_prob)
    lines = ["", "## Time to onset",
             f"log onset = a + e_f log f + e_r log r + seed scatter, right-censored at each run's last "
             f"step ({int(res.model.censored.sum())} of {len(res.model.runs)} runs censored).", "",
             f"| elasticity | median | {int(hdi_prob * 100)}% HDI | MLE (se) |", "|---|---|---|---|"]
    lines += [f"| {r.term} | {r.median:.3g} | [{r.lo:.3g}, {r.hi:.3g}] | {r.mle:.3g} ({r.mle_se:.2g}) |"
              for r in el.itertuples()]
    diag = res.diagnostics()
    runs = res.model.runs
    cap, f_top = float(runs["time"].max()), float(runs["frequency"].max())
    r_iso = res.iso_onset(cap, [f_top])["reliability"].iloc[0]
    lines += ["", f"Median onset reaches the longest run ({cap:,.0f} updates) at f = {f_top:g}, "
              f"r = {r_iso:.3g}: where the logistic frontier lies near it, that frontier is a line of "
              "equal onset at the budget." if np.isfinite(r_iso) else
              f"Median onset does not reach {cap:,.0f} updates inside (0, 1] at f = {f_top:g}.",
              "", f"Sampler: {'; '.join(diag) if diag else 'no warnings'}.",
              "", f"Which knob moves the onset more, on this model alone: {res.verdict()} (its row of the "
              "knob table above; the report's verdict is the frontier's)."]
    if designs is not None:
        ok = designs[designs["enough"]]
        lines.append(
            "A simulation from the fitted posterior resolves it (P >= 0.95 either way in "
            f"{ok.iloc[0].resolution_rate:.0%} of experiments) with {ok.iloc[0].n_seeds} seeds per cell, "
            f"{ok.iloc[0].levels}, cap {ok.iloc[0].cap:,.0f} updates ({ok.iloc[0].n_runs} runs)."
            if len(ok) else
            f"No design tried (up to {designs['n_seeds'].max()} seeds per cell, one level lower, 3 x the "
            f"cap) resolves it in 80% of simulated experiments; best "
            f"{designs['resolution_rate'].max():.0%}.")
        lines.append("Designs tried: `onset/designs.csv`.")
    return lines
