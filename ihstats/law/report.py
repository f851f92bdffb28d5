"""The law's report home: posterior reports (Markdown + HTML, figures as PNG and PDF) for fitted
UPT laws, and the figure of its out-of-sample validation.

``write_upt_report(results, out_dir)`` writes::

    out_dir/report.md, report.html       summary, diagnostics, LOO, OLS cross-check, versions
    out_dir/figures/*.png, *.pdf         trace, rank, posterior of a and b vs published values,
                                         observed vs predicted UPT (log axes), ArviZ's PPC
                                         (ppc, from idata.nc's posterior_predictive group) and
                                         one predictive band per run, labelled B x C (ppc_runs)
    out_dir/figures/obs_vs_pred.csv      the tidy data behind the observed-vs-predicted figure
    out_dir/figures/ppc_runs.csv         ... and behind the per-run bands

Diagnostics (divergences, r_hat, ESS) are printed at the top of the report, never dropped.
``write_validation_figure(validation_results, out_dir)`` writes ``figures/validation.png|pdf``
beside what :meth:`ihstats.law.validation.ValidationResults.save` wrote.
"""

from __future__ import annotations

import datetime as _dt
import html
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.base.contract import CIRCUIT_PREV_TOKEN_MIN
from ihstats.law.forms import FORM_TEXT
from ihstats.law.references import reference_table
from ihstats.law.results import UPTLawResults
from ihstats.law.scoring import LAW
from ihstats.law.sensitivity import (PUBLISHED_FORMS, circuit_table, circuit_warning, closeness,
                                     influence_table, sigma_text)
from ihstats.law.spec import OBS, PUBLISHED
from ihstats.figures.law import plot_obs_vs_pred, plot_ppc_bands
from ihstats.figures.posterior import plot_posterior, plot_ppc, plot_rank, plot_trace
from ihstats.figures.save import save_figure
from ihstats.figures.plots_paper import plot_law_validation
from ihstats.base.display import CSV_FLOAT_FORMAT
from ihstats.base.fileio import atomic_write_csv, atomic_write_text
from ihstats.tables import outcome_basis


def _save(fig, figdir: Path, name: str) -> str:
    """Write one report figure and return its path relative to the report."""
    save_figure(fig, figdir / name, dpi=110, close=True)
    return f"figures/{name}.png"


def obs_vs_pred_frame(res: UPTLawResults, hdi_prob: float) -> pd.DataFrame:
    """Tidy data behind the observed-vs-predicted plot (one row per run, UPT in updates)."""
    mu = res.mu_draws()
    t = res.data.table
    iv = np.array([_bayes.hdi(mu[:, j], hdi_prob=hdi_prob) for j in range(mu.shape[1])])
    return pd.DataFrame({
        "run_id": t["run_id"].astype(str), "B": t["B"], "C": t["C"],
        "observed": np.exp(res.data.y), "censored": res.data.censored,
        "obs_lo": t["onset_lo"] if "onset_lo" in t else np.nan,
        "obs_hi": t["onset_hi"] if "onset_hi" in t else np.nan,
        "predicted": np.exp(mu.mean(axis=0)), "pred_lo": np.exp(iv[:, 0]),
        "pred_hi": np.exp(iv[:, 1]),
    })


def _seed_spread_text(res: UPTLawResults, summ: pd.DataFrame) -> str:
    """Replicates: the cell effect's two scales, and the observed seed spread of UPT per cell."""
    d = res.data
    obs = pd.DataFrame({"cell": d.cell_idx, "y": d.y})[~d.censored]
    spread = obs.groupby("cell")["y"].agg(lambda v: np.exp(v.max() - v.min()))[obs.groupby("cell").size() > 1]
    seen = (f"observed max/min UPT over seeds within a cell: median {spread.median():.2f}x, largest "
            f"{spread.max():.2f}x over {len(spread)} cells with several uncensored seeds"
            if len(spread) else "no cell has two uncensored seeds")

    def iv(p):
        return f"{summ.at[p, 'mean']:.3f} [{summ.at[p, 'hdi_lo']:.3f}, {summ.at[p, 'hdi_hi']:.3f}]"
    sigma = iv("sigma") if "sigma" in summ.index else f"{sigma_text(summ)} by {res.spec.sigma_by}"
    return (f"Replicates: a cell effect (`cell_sd * z_cell`, {len(d.cells)} cells) separates the law's "
            f"residual, cell_sd = {iv('cell_sd')}, from the seed-to-seed scatter within a cell, sigma = "
            f"{sigma} (log UPT); {seen}. `ihstats.law.predict` gives intervals for a new cell "
            f"(cell_lo/cell_hi) and a new run in it (pred_lo/pred_hi).")


def _seed_effect_text(res: UPTLawResults, summ: pd.DataFrame) -> str:
    """The crossed seed effect: its scale, each seed's offset, and what the two mean."""
    post, hdi = res.idata.posterior, res.spec.hdi_prob
    offsets = np.asarray(post["seed_offset"].values, dtype=float).reshape(-1, len(res.data.seeds))
    each = "; ".join(f"seed {s}: {offsets[:, k].mean():+.2f} [{lo:+.2f}, {hi:+.2f}] (x{np.exp(offsets[:, k].mean()):.2f})"
                     for k, s in enumerate(res.data.seeds)
                     for lo, hi in [_bayes.hdi(offsets[:, k], hdi_prob=hdi)])
    sd = f"{summ.at['seed_sd', 'mean']:.3f} [{summ.at['seed_sd', 'hdi_lo']:.3f}, {summ.at['seed_sd', 'hdi_hi']:.3f}]"
    scope = (f"per training seed and {res.spec.seed_within}, shared by that seed's runs in every cell at "
             f"that {res.spec.seed_within}" if res.spec.seed_within else
             "per training seed, shared by that seed's runs in every cell")
    return (f"Seed effect: one offset {scope} "
            f"(`seed_sd * z_seed`, seed_sd ~ HalfNormal({res.spec.resolved_priors['seed_sd']}), "
            f"{len(res.data.seeds)} offsets), seed_sd = {sd} (log UPT). Offsets ({hdi:.0%} HDI; the factor on "
            f"UPT): {each}. It is the seed lottery: a seed that starts every cell from the same weights and "
            f"data order is slow or fast in all of them, and sigma is the scatter left after it. A planned "
            f"run at a seed the fit saw is predicted with its offset (`predict(..., run_seed=s)`); at a new "
            f"seed a new offset is drawn, so its interval is wider.")


def run_labels(table: pd.DataFrame) -> list[str]:
    """Each run by its factors, ``B 16 x C 64 s0`` (N and the seed when the table has them), for
    axes a reader can read; the run id only when the table has no B / C."""
    if not {"B", "C"} <= set(table.columns):
        return table["run_id"].astype(str).str[:6].tolist()
    parts = [("B ", table["B"]), (" x C ", table["C"])]
    if "N" in table and table["N"].nunique() > 1:
        parts.append((" N ", table["N"]))
    if "seed" in table:
        parts.append((" s", table["seed"]))
    return ["".join(f"{p}{v:g}" if isinstance(v, (int, float, np.number)) else f"{p}{v}" for p, v in row)
            for row in zip(*[[(p, v) for v in col] for p, col in parts])]


def ppc_frame(res: UPTLawResults, hdi_prob: float) -> pd.DataFrame:
    """Per run: observed log UPT (log last step when censored) and quantiles of its posterior
    predictive (the tidy data behind ``ihstats.figures.law.plot_ppc_bands``)."""
    rep = np.asarray(res.ppc()[OBS]).reshape(-1, len(res.data.y))
    q = np.quantile(rep, [(1 - hdi_prob) / 2, 0.25, 0.5, 0.75, (1 + hdi_prob) / 2], axis=0)
    return pd.DataFrame({"run_id": res.data.table["run_id"].astype(str).to_numpy(),
                         "label": run_labels(res.data.table),
                         "observed": np.where(res.data.censored, res.data.upper, res.data.y),
                         "censored": res.data.censored, "q_lo": q[0], "q25": q[1], "q50": q[2],
                         "q75": q[3], "q_hi": q[4]})


def _md_table(df: pd.DataFrame, digits: int = 3) -> str:
    # a default 0..n-1 index is no data (it printed as a stray "index" column); an unnamed label index
    # keeps its labels under an empty header
    if isinstance(df.index, pd.RangeIndex):
        df = df.reset_index(drop=True)
    elif isinstance(df.index, pd.MultiIndex):  # (B, C) and the like: one column per level
        df = df.rename_axis([n or "" for n in df.index.names]).reset_index()
    else:
        df = df.rename_axis(df.index.name or "").reset_index()
    fmt = [[(f"{v:.{digits}g}" if abs(v) >= 1e4 else f"{v:.{digits}f}")
            if isinstance(v, (float, np.floating)) and np.isfinite(v) else str(v) for v in row]
           for row in df.itertuples(index=False)]
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "---|" * len(df.columns)
    return "\n".join([head, sep] + ["| " + " | ".join(r) + " |" for r in fmt])


PUBLISHED_TEXT = ("Aoyama et al.: `ln UPT = 13.26 - 0.37 ln B - 0.62 ln C`; tokens form `N = T sqrt(B C)` "
                  "(T about 10^5.7), a = b = 0.5 in UPT form. Probabilities of each exponent within +-0.05.")


REFERENCE_TEXT = ("The seed papers' lines fitted like for like (`ihstats.law.references`: maximum likelihood, "
                  "Gaussian scatter, the same censoring and measurement error), each with only the parameters "
                  "it leaves open. `loglik_diff` is the fit (maximised log-likelihood minus the free power "
                  "line's) and `penalty_diff` AIC's parameter penalty, apart: a form ahead on `aic_diff` "
                  "only through the penalty fits no better. `reference_forms.csv`.")


CIRCUIT_TEXT = ("Runs per circuit (`ihstats.emergence.circuit`): `prev-token`, the induction head sits above "
                f"a layer-0 previous-token head (score >= {CIRCUIT_PREV_TOKEN_MIN} at the PS crossing or the "
                "end); `no-prev-token`, "
                "without one (at short C a head attending a fixed offset back can pass the repeat probe); "
                "`none`, max PS never crossed. A law fitted across both circuits is flagged under Diagnostics.")


def _bayes_vs_ols(summ: pd.DataFrame, ols: pd.DataFrame) -> pd.DataFrame:
    """The posterior summary beside the OLS cross-check and the published value, per parameter."""
    side = pd.DataFrame({
        "bayes_mean": summ["mean"], "bayes_hdi_lo": summ["hdi_lo"], "bayes_hdi_hi": summ["hdi_hi"],
    }).join(ols[["estimate", "ci_lo", "ci_hi"]].rename(
        columns={"estimate": "ols", "ci_lo": "ols_ci_lo", "ci_hi": "ols_ci_hi"}), how="inner")
    side["published"] = [PUBLISHED.get(p, np.nan) for p in side.index]
    return side


def _diagnostics(res: UPTLawResults) -> tuple[list[str], pd.DataFrame]:
    """The fit's warnings (sampler, LOO's influential runs, too few draws) and the LOO table."""
    diag = res.diagnostics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ's Pareto-k warning is reported below instead
        loo_tab = _bayes.loo_table(res.loo())
    n_bad = int(loo_tab["pareto_k_gt_0.7"].item())
    if n_bad:
        diag = diag + [f"LOO: {n_bad} run(s) with Pareto k > 0.7: PSIS-LOO is unreliable there "
                       f"(influential runs)"]
    n_draws = res.sampler["chains"] * res.sampler["draws"]
    if n_draws < 2000:
        diag = diag + [f"Intervals come from few draws ({res.sampler['chains']} chains x {res.sampler['draws']}; "
                       f"--fast): tail quantiles are rough; rerun without --fast for reported numbers"]
    return diag, loo_tab


def _figures(res: UPTLawResults, figdir: Path, hdi_prob: float) -> dict[str, str]:
    """Draw and write the report's figures (and the CSVs behind two of them); name -> PNG path."""
    plot_vars = [p for p in res.params if p != "T"]
    frame = obs_vs_pred_frame(res, hdi_prob)
    atomic_write_csv(figdir / "obs_vs_pred.csv", frame, index=False, float_format=CSV_FLOAT_FORMAT)
    ppc = ppc_frame(res, hdi_prob)
    atomic_write_csv(figdir / "ppc_runs.csv", ppc, index=False, float_format=CSV_FLOAT_FORMAT)
    return {
        "trace": _save(plot_trace(res.idata, plot_vars), figdir, "trace"),
        "rank": _save(plot_rank(res.idata, plot_vars), figdir, "rank"),
        # the second published form: tokens N = T sqrt(B C), a = b = 0.5, dotted
        "posterior_ab": _save(plot_posterior(res.idata, ["a", "b"], hdi_prob=hdi_prob,
                                             ref_val={"a": PUBLISHED["a"], "b": PUBLISHED["b"]},
                                             extra_ref=(PUBLISHED_FORMS["tokens"]["a"], "tokens form 0.5")),
                              figdir, "posterior_ab"),
        "obs_vs_pred": _save(plot_obs_vs_pred(frame, res.r_obs_pred, hdi_prob), figdir, "obs_vs_pred"),
        # ArviZ's own check from the saved posterior_predictive group, then one band per run
        "ppc": _save(plot_ppc(res.idata, OBS), figdir, "ppc"),
        "ppc_runs": _save(plot_ppc_bands(ppc, hdi_prob=hdi_prob), figdir, "ppc_runs"),
    }


def _model_text(res: UPTLawResults, summ: pd.DataFrame, source: str, runtime_s: float | None) -> list[str]:
    """The report's "Model" section: the law, priors, replicates, data and sampler."""
    d = res.data
    spec = res.spec
    pr = spec.resolved_priors
    law = FORM_TEXT[spec.form] + (" - c log N" if spec.size_term else "")
    line = {"power": f"a ~ Normal{pr['a']}, b ~ Normal{pr['b']}" + (f", c ~ Normal{pr['c']}" if spec.size_term else ""),
            "tokens": f"g ~ Normal{pr['g']} (a = b = g)",
            "critical_batch": f"b ~ Normal{pr['b']}, log B_noise ~ Normal(mean log B, {pr['log_B_noise_sd']}); "
                              f"a is the local B exponent B_noise / (B + B_noise) at the centre B"}[spec.form]
    return [f"`{law}` ({spec.form} form, ihstats.law.forms) on centred log predictors; likelihood "
            f"**{spec.likelihood}**; measurement "
            f"error from onset intervals: **{spec.measurement_error}** (added in quadrature to "
            f"the scale); right-censored runs enter through their log survival at `last_step`. "
            f"Formed (uncensored) runs: **{outcome_basis(d.table)}**.",
            f"Priors (centred log scale): {line}"
            + f", intercept ~ Normal(mean observed log onset, {pr['alpha_sd']}), "
            + (f"sigma ~ HalfNormal({pr['sigma']})" if not spec.sigma_by else
               f"sigma per level of {spec.sigma_by}: log sigma_k = log_sigma_mu + log_sigma_sd z_k, "
               f"log_sigma_mu ~ Normal{pr['log_sigma_mu']}, log_sigma_sd ~ HalfNormal({pr['log_sigma_sd']}), "
               f"z_k ~ Normal(0, 1) (partial pooling)")
            + (f", nu ~ Gamma{pr['nu']}" if spec.likelihood == "student_t" else "") + ".",
            *([_seed_spread_text(res, summ)] if spec.cell_effect else []),
            *([_seed_effect_text(res, summ)] if spec.seed_effect else []),
            f"Data: {len(d.y)} runs ({int(d.censored.sum())} censored){', from ' + source if source else ''}; "
            f"B in {sorted(set(d.table['B'].tolist()))}, C in {sorted(set(d.table['C'].tolist()))}.",
            f"Sampler: NUTS, {res.sampler['chains']} chains x {res.sampler['draws']} draws "
            f"({res.sampler['tune']} tune), target_accept {res.sampler['target_accept']}, "
            f"seed {res.sampler['seed']}; compile+sample {res.timings['sample_call_s']:.1f} s "
            f"(sampling {res.timings['sampling_s']:.1f} s)"
            + (f"; whole analysis {runtime_s:.1f} s" if runtime_s else "") + "."]


def _what_it_depends_on(res: UPTLawResults, sensitivity: pd.DataFrame | None, sensitivity_note: str,
                        sigma_compare: pd.DataFrame | None) -> list[tuple[str, list[str]]]:
    """The report's sections on robustness: the sensitivity table, the circuits per cell and, with
    ``sigma_by``, the LOO comparison of the scatter per level with one shared sigma."""
    circuits = circuit_table(res.data.table)
    out = [("What the answer depends on", [
        _md_table(sensitivity.set_index("variant")) + "\n\nRows: the base fit; the other likelihood (compare `elpd_loo`, "
        "higher is better); exponent priors centred on the published values (Normal(0.37, 0.1), "
        "Normal(0.62, 0.1)): where a and b move with the prior, the data do not decide them; with "
        "a scatter per level (`sigma_by`), one shared sigma (compare `elpd_loo`)."
        if sensitivity is not None else (sensitivity_note or "Not run.")]),
        ("Circuits per cell", [_md_table(circuits.set_index(["B", "C"])) + "\n\n" + CIRCUIT_TEXT
                               if circuits is not None else "No `circuit` column in the table (an emergence "
                               "table written before issue 39): rerun detection from the run directories."])]
    if sigma_compare is not None:
        out.append((f"Scatter by {res.spec.sigma_by} (LOO comparison)", [
            _md_table(sigma_compare) + "\n\nA scatter per level against one shared sigma; the per-level "
            "sigmas are in the posterior summary."]))
    return out


def write_upt_report(res: UPTLawResults, out_dir, *, hdi_prob: float | None = None,
                     compare: pd.DataFrame | None = None, compare_note: str = "",
                     title: str = "UPT law: posterior report", source: str = "",
                     runtime_s: float | None = None, sensitivity: pd.DataFrame | None = None,
                     sensitivity_note: str = "", sigma_compare: pd.DataFrame | None = None) -> dict:
    """Write the Markdown/HTML report and figures for a fitted UPT law.

    Parameters
    ----------
    res : UPTLawResults
        The fit (its posterior predictive is drawn here if missing).
    out_dir : path
        Output directory (created).
    hdi_prob : float, optional
        Interval width of every interval in the report (default: the spec's).
    compare : pandas.DataFrame, optional
        LOO comparison with / without the size term (``compare_size_term``).
    compare_note : str
        Shown instead when no comparison was run (e.g. a single model size).
    source : str
        Where the emergence table came from (shown in the header).
    sensitivity : pandas.DataFrame, optional
        ``ihstats.law.sensitivity.sensitivity_table`` (refits under the other likelihood and centred
        priors); ``sensitivity_note`` is shown instead when it was not run.
    sigma_compare : pandas.DataFrame, optional
        LOO comparison of the scatter per ``sigma_by`` level with one shared sigma
        (``compare_sigma_by``); a section of its own when given.

    Returns
    -------
    dict
        Paths of ``report.md``, ``report.html`` and each figure (PNG).
    """
    hdi_prob = hdi_prob or res.spec.hdi_prob
    out = Path(out_dir)
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    res.ppc()
    summ = res.summary(hdi_prob)
    ols = res.ols(hdi_prob)
    diag, loo_tab = _diagnostics(res)
    diag = diag + [w for w in [circuit_warning(res.data.table)] if w]  # one law across two circuits
    influence = influence_table(res)
    atomic_write_csv(out / "influence.csv", influence, index=False, float_format=CSV_FLOAT_FORMAT)
    heavy = influence.loc[influence["pareto_k"] > 0.7, "run_id"].tolist()
    r = res.r_obs_pred
    figs = _figures(res, figdir, hdi_prob)
    side = _bayes_vs_ols(summ, ols)
    versions = _bayes.versions()
    sections = [
        ("Model", _model_text(res, summ, source, runtime_s)),
        ("Diagnostics", ["**Warnings:**\n\n" + "\n".join(f"- {w}" for w in diag)] if diag
         else ["All checks passed: no divergences, r_hat <= 1.01, bulk ESS >= 400."]),
        (f"Posterior summary ({hdi_prob:.0%} HDI)", [_md_table(summ),
            f"Pearson r between posterior-mean predicted and observed log UPT (uncensored runs): "
            f"**{r:.3f}** (published: 0.98)."]),
        (f"Bayesian vs OLS cross-check ({hdi_prob:.0%} intervals)", [_md_table(side),
            f"OLS (statsmodels) on the {ols.attrs['n_obs']} uncensored runs only, without "
            f"measurement error: with censored runs the two can differ by design."]),
        ("Figures", [f"![{k}]({v})" for k, v in figs.items()]),
        ("Leave-one-out (PSIS-LOO)", [_md_table(loo_tab)]),
        *_what_it_depends_on(res, sensitivity, sensitivity_note, sigma_compare),
        ("Published forms", _published_forms(res, out)),
        ("Influence (per run)", [_md_table(influence.head(10).set_index("run_id")) + "\n\n"
                                 + (f"Runs with Pareto k > 0.7 (the fit leans on them): {', '.join(heavy)}."
                                    if heavy else "No run has Pareto k > 0.7.")
                                 + " All runs: `influence.csv`."]),
        ("Model-size term (LOO comparison)", [_md_table(compare) if compare is not None
                                              else (compare_note or "Not run.")]),
        ("Versions", [", ".join(f"{k} {v}" for k, v in versions.items())
                      + f"; written {_dt.datetime.now().isoformat(timespec='seconds')}."]),
    ]
    md = [f"# {title}", ""]
    for head, parts in sections:
        md += [f"## {head}", ""] + [p + "\n" for p in parts]
    atomic_write_text(out / "report.md", "\n".join(md))
    atomic_write_text(out / "report.html", _html(title, sections, summ, side, loo_tab, compare, diag))
    return {"markdown": str(out / "report.md"), "html": str(out / "report.html"),
            **{k: str(out / v) for k, v in figs.items()}}


def _published_forms(res: UPTLawResults, out: Path) -> list[str]:
    """The posterior's closeness to the published exponents, and the published lines fitted like for
    like (written to ``reference_forms.csv``)."""
    near = pd.DataFrame([closeness(res)]).T.rename(columns={0: "posterior probability"})
    refs = reference_table(res.data)
    atomic_write_csv(out / "reference_forms.csv", refs, float_format=CSV_FLOAT_FORMAT)
    return [_md_table(near) + "\n\n" + PUBLISHED_TEXT, _md_table(refs.round(3)) + "\n\n" + REFERENCE_TEXT]


def _html(title, sections, summ, side, loo_tab, compare, diag) -> str:
    tables = {"Posterior summary": summ, "Bayesian vs OLS": side,
              "Leave-one-out": loo_tab, "Model-size term": compare}
    body = [f"<h1>{html.escape(title)}</h1>"]
    for head, parts in sections:
        body.append(f"<h2>{html.escape(head)}</h2>")
        table = next((t for k, t in tables.items() if head.startswith(k)), None)
        for p in parts:
            if p.startswith("|") and table is not None:
                body.append(table.to_html(float_format=lambda v: f"{v:.4g}", border=0))
            elif p.startswith("!["):
                src = p[p.index("(") + 1:-1]
                body.append(f'<figure><img src="{src}" style="max-width:720px"></figure>')
            elif head == "Diagnostics" and diag:
                body.append('<ul class="warn">' + "".join(
                    f"<li>{html.escape(w)}</li>" for w in diag) + "</ul>")
            else:
                body.append(f"<p>{html.escape(p).replace('**', '')}</p>")
    style = ("body{font-family:sans-serif;max-width:900px;margin:2em auto}table{border-collapse:"
             "collapse}td,th{padding:2px 8px;text-align:right}.warn{color:#b00}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{style}</style></head><body>{''.join(body)}</body></html>")


def write_validation_figure(res, out_dir) -> Path:
    """Observed vs predicted log UPT with the law's 90% intervals, and the PIT histogram, of a
    :class:`~ihstats.law.validation.ValidationResults`: ``out_dir/figures/validation.png|pdf``;
    returns the PNG path."""
    fig = plot_law_validation(res.runs[res.runs["model"] == LAW], title=res.meta["source"])
    return save_figure(fig, Path(out_dir) / "figures" / "validation", close=True)[0]
