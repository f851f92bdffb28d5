"""Bi-Induct claims (Sabry and Belz 2025) tested on a ``biinduct`` grid, seeds as the unit.

:func:`run_table` reads one row per run: the condition (``biinduct`` mode) and seed, formation and
onset (``summary.csv``), each signature at the last evaluation, the concentration of PS at matched
max PS (:func:`ihstats.concentration.concentration_at_level`), key -> value recall against its
controls (``ihtrain.ablate --icl``: the grid's gathered ``icl_kv.csv`` with a ``run_id``
column, or each run's own) and, given the ablation table,
each run's top-minus-random gap. :func:`claim_tests` tests each claim's measures, Bi-Induct runs
(forward, backward, balanced pooled) against natural-only with the exact two-sample permutation
over runs (:func:`ihstats.ablation.seeds.two_sample_test`; 9 vs 3 runs floor at ``1 / C(12, 3) =
0.0045`` one-sided), Holm over a claim's measures, and :func:`verdict` words it: ``agrees``, ``differs`` or ``not resolvable by
this design``. Per-curriculum contrasts (and the random-span control) are
:func:`ihstats.ablation.seeds.condition_contrasts`, Holm over the four, floor stated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ihstats.ablation.data import ablation_arrays
from ihstats.ablation.spec import PREV_TOKEN_SUFFIX
from ihstats.concentration import concentration_at_level
from ihstats.contract import max_over_heads
from ihstats.io import load_grid
from ihstats.ablation.permutation import correct_pvalues
from ihstats.ablation.seeds import two_sample_floor, two_sample_test
from ihstats.tables import matched

NATURAL, CONTROL = "none", "random"
CURRICULA = ("forward", "backward", "balanced")
#: final per-head signatures read as the max over heads at the run's last evaluation
MAX_OVER_HEADS = ("ps", "ps_nat", "dup_bwd", "anti_induction", "prev_token")
#: final model-level probes
MODEL_LEVEL = ("repeat_nat_logprob", "copy_fwd_logprob", "copy_bwd_logprob", "icl_token_index", "val_loss")


@dataclass(frozen=True)
class Claim:
    """One measure of a claim: the per-run column, what the paper predicts for Bi-Induct against
    natural-only (``greater``, ``less``, or ``not greater``: no increase, tested one-sided for
    an increase), which runs are tested, and the claim (``family``) whose measures share one
    Holm correction."""

    family: str
    name: str
    column: str
    predicts: str
    biinduct: tuple[str, ...] = CURRICULA
    baseline: str = NATURAL


CLAIMS = (
    Claim("signatures rise", "final max PS", "ps", "greater"),
    Claim("signatures rise", "final max PS on natural-stream repeats", "ps_nat", "greater"),
    Claim("earlier emergence", "onset (not formed: the cap)", "onset_or_cap", "less"),
    Claim("earlier emergence", "onset against the random-span control (same injection, nothing to copy)",
          "onset_or_cap", "less", CURRICULA, CONTROL),
    Claim("ICL not better", "token-index ICL score (late minus early loss)", "icl_token_index", "not greater"),
    Claim("ICL not better", "key -> value recall, true minus permuted log-prob", "kv_gain", "not greater"),
    Claim("ablation hurts natural-only most", "top minus mean random drop (the gap)", "ablation_gap", "less"),
    Claim("natural-only more concentrated", "top-2% share of PS in the induction layer at matched PS",
          "top_share", "less"),
    Claim("anti-induction near zero", "duplicate-token score on S SEP rev(S)", "dup_bwd", "not greater",
          ("backward", "balanced")),
    Claim("anti-induction near zero", "backward-copy log-prob on S SEP rev(S)", "copy_bwd_logprob", "not greater",
          ("backward", "balanced")),
)


def _final(m: pd.DataFrame) -> dict[str, float]:
    last = m[m["step"] == m["step"].max()]
    return {k: float(last.loc[last["metric"] == k, "value"].max()) for k in MAX_OVER_HEADS + MODEL_LEVEL
            if (last["metric"] == k).any()}


def _concentration(m: pd.DataFrame, level: float) -> dict[str, float]:
    """Top share and effective heads of the layer holding the largest PS, at matched max PS."""
    at = concentration_at_level(m, level)
    if at.empty:
        return {"top_share": np.nan, "n_eff": np.nan, "matched_step": np.nan}
    step = int(at["step"].iloc[0])
    rows = m[(m["metric"] == "ps") & (m["step"] == step)]
    layer = int(rows.loc[rows["value"].idxmax(), "layer"])
    row = at[at["layer"] == layer].iloc[0]
    return {"top_share": float(row["top_share"]), "n_eff": float(row["n_eff"]), "matched_step": step}


def _kv(kv_all: pd.DataFrame | None, run_id: str, run_dir: Path) -> dict[str, float]:
    """Key -> value recall of one run: its rows of the grid's ``icl_kv.csv`` (column ``run_id``),
    else the run's own ``icl_kv.csv``, else nothing."""
    if kv_all is not None and (kv_all["run_id"] == run_id).any():
        kv = kv_all[kv_all["run_id"] == run_id].set_index("control")
    elif (run_dir / "icl_kv.csv").is_file():
        kv = pd.read_csv(run_dir / "icl_kv.csv").set_index("control")
    else:
        return {}
    return {"kv_hits1": kv.at["true", "hits1"], "kv_logprob": kv.at["true", "mean_logprob"],
            "kv_gain": kv.at["true", "mean_logprob"] - kv.at["permuted", "mean_logprob"],
            "kv_gain_absent": kv.at["true", "mean_logprob"] - kv.at["absent", "mean_logprob"]}


#: the summary.csv column each onset kind reads (older summaries have only ``onset``, the PS probe's)
SUMMARY_ONSET = {"auto": "onset", "indist": "onset", "ps": "onset_ps", "loss": "onset_gain"}


def run_table(grid_dir: str | Path, level: float = 0.2, ablation: pd.DataFrame | None = None,
              metric: str = "repeat_nat_logprob", onset: str = "auto") -> pd.DataFrame:
    """One row per run of a biinduct grid (see the module docstring). ``onset``: the summary's onset
    (``auto``: the in-distribution one where logged), ``ps`` (the repeat probe's) or ``loss``."""
    grid = load_grid(grid_dir)
    summary = pd.read_csv(Path(grid_dir) / "summary.csv").set_index("run_id")
    if missing := sorted(set(grid.runs["run_id"]) - set(summary.index)):
        raise ValueError(f"{grid_dir}/summary.csv: no row for runs {missing[:3]}; rerun the grid command to "
                         "rewrite its summary")
    kv_path = Path(grid_dir) / "icl_kv.csv"  # every run's key -> value recall, gathered
    kv_all = pd.read_csv(kv_path) if kv_path.is_file() else None
    if ablation is not None:  # its conditions must name this grid's runs (MODE@sSEED), not another's
        labels = grid.runs["biinduct"].astype(str) + "@s" + grid.runs["seed"].astype(int).astype(str)
        matched(labels, ablation["condition"].map(lambda c: str(c).removesuffix(PREV_TOKEN_SUFFIX)),
                "the ablation table's conditions")
    rows = []
    for run in grid.runs.to_dict("records"):
        rid = run["run_id"]
        m = grid.metrics[grid.metrics["run_id"] == rid]
        s = summary.loc[rid]
        row = {"run_id": rid, "mode": run["biinduct"], "seed": int(run["seed"]), "formed": bool(s["formed"]),
               "onset": float(s[SUMMARY_ONSET[onset]] if SUMMARY_ONSET[onset] in s else s["onset"]),
               "steps": int(s["steps"]),
               "max_ps_peak": float(max_over_heads(m).max())}
        row["onset_or_cap"] = row["onset"] if row["formed"] else float(row["steps"])
        row |= _final(m) | _concentration(m, level) | _kv(kv_all, rid, Path(run["path"]))
        if ablation is not None:
            row["ablation_gap"] = _gap(ablation, f"{row['mode']}@s{row['seed']}", metric)
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["mode", "seed"], ignore_index=True)


def _gap(table: pd.DataFrame, label: str, metric: str) -> float:
    if not (table["condition"] == label).any():
        return np.nan
    d = ablation_arrays(table, label, metric)
    return float(d.top.mean() - d.random.mean())


def verdict(p_for: float, p_against: float, floor: float, predicts: str, alpha: float = 0.05) -> str:
    """Words one measure's test from its Holm-adjusted one-sided p for the predicted direction (for
    ``predicts = "not greater"``: for an increase, the direction that would refute it), for the
    opposite one, and the design's floor after the same Holm."""
    if floor > alpha:
        return "not resolvable by this design"
    if predicts == "not greater":
        if p_for <= alpha:
            return "differs"
        return "agrees (lower)" if p_against <= alpha else "agrees (no increase detected)"
    if p_for <= alpha:
        return "agrees"
    return "differs" if p_against <= alpha else "not resolvable by this design (no effect detected)"


def _measure(c: Claim, runs: pd.DataFrame) -> dict | None:
    a = runs.loc[runs["mode"].isin(c.biinduct), c.column].dropna().to_numpy(float)
    b = runs.loc[runs["mode"] == c.baseline, c.column].dropna().to_numpy(float)
    if not a.size or not b.size:
        return None
    more, less = two_sample_test(a, b, "greater").pvalue, two_sample_test(a, b, "less").pvalue
    p_for, p_against = (less, more) if c.predicts == "less" else (more, less)
    floor = two_sample_floor(a.size, b.size, "greater")[0]
    return {"claim": c.family, "measure": c.name, "column": c.column, "predicts": c.predicts,
            "runs": "+".join(c.biinduct), "baseline": c.baseline, "n": a.size, "n_baseline": b.size, "mean": a.mean(),
            "mean_baseline": b.mean(), "diff": a.mean() - b.mean(), "p_greater": more, "p_less": less,
            "p_for": p_for, "p_against": p_against, "floor": floor}


def claim_tests(runs: pd.DataFrame, claims=CLAIMS, alpha: float = 0.05) -> pd.DataFrame:
    """Each claim's measures: Bi-Induct runs against the baseline's, seeds as the unit, Holm over
    the measures of a claim; ``floor_holm`` is the floor times the claim's measures."""
    rows = [r for c in claims if c.column in runs and (r := _measure(c, runs)) is not None]
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    for col in ("p_for", "p_against"):
        out[f"{col}_holm"] = np.nan
        for _, idx in out.groupby("claim").groups.items():
            ok = out.loc[idx, col].notna()
            if ok.any():
                adj = correct_pvalues(out.loc[idx][ok][col], alpha, methods=("holm",))
                out.loc[out.loc[idx][ok].index, f"{col}_holm"] = adj["p_holm"].to_numpy()
    out["floor_holm"] = np.minimum(1.0, out["floor"] * out.groupby("claim")["claim"].transform("size"))
    out["verdict"] = [verdict(r["p_for_holm"], r["p_against_holm"], r["floor_holm"], r["predicts"], alpha)
                      for r in out.to_dict("records")]
    return out


__all__ = ["CLAIMS", "Claim", "claim_tests", "run_table", "verdict"]
