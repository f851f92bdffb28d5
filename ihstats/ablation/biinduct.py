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
this design``. A measure with a chance level (:class:`ihstats.base.chance.Floor`: uniform attention,
uniform log-prob, HITS@1 of copying any shown value, the top share of equal heads) is first
checked against it: when both groups sit at it (:func:`ihstats.base.chance.at_floor`), the verdict is
``not testable by this design`` with the chance level and the observed means, whatever the p.
Each measure also names the design's confound where one is known (``confound``).
Per-curriculum contrasts (and the random-span control) are
:func:`ihstats.ablation.seeds.condition_contrasts`, Holm over the four, floor stated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ihstats.ablation.data import prepare
from ihstats.ablation.spec import PREV_TOKEN_SUFFIX, AblationSpec
from ihstats.base.chance import (CHANCE_FACTOR, Floor, at_floor, copy_probe_floors, copy_probe_len, floor_note,
                            repeat_probe_floor, top_share_floor)
from ihstats.concentration import concentration_at_level
from ihstats.base.contract import max_over_heads
from ihstats.base.fileio import read_json
from ihstats.base.io import load_grid
from ihstats.ablation.permutation import correct_pvalues
from ihstats.ablation.seeds import two_sample_floor, two_sample_test
from ihstats.tables import matched, summary_formed

NATURAL, CONTROL = "none", "random"
CURRICULA = ("forward", "backward", "balanced")
#: final per-head signatures read as the max over heads at the run's last evaluation
MAX_OVER_HEADS = ("ps", "ps_nat", "dup_bwd", "anti_induction", "anti_copy", "prev_token")
#: final model-level probes
MODEL_LEVEL = ("repeat_nat_logprob", "copy_fwd_logprob", "copy_bwd_logprob", "icl_token_index", "val_loss")


@dataclass(frozen=True)
class Claim:
    """One measure of a claim: the per-run column, what the paper predicts for Bi-Induct against
    natural-only (``greater``, ``less``; ``not greater``: no increase, tested one-sided for the
    increase that would refute it; ``not less``: no decrease, for a measure where lower is better,
    e.g. a loss difference), which runs are tested, the claim (``family``) whose measures share one
    Holm correction, the measure's chance level (``floor``; None: it has none, e.g. an onset)
    and the design's known confound (``confound``, words for the verdict table)."""

    family: str
    name: str
    column: str
    predicts: str
    biinduct: tuple[str, ...] = CURRICULA
    baseline: str = NATURAL
    floor: Floor | None = None
    confound: str = ""


ATTENTION_FLOOR = "uniform attention, mean 1/(q + 1) over the probe's queries"
_BWD = ("backward", "balanced")
#: the previous-token head sits in random sets too unless the ablation leaves it out
SHARED_PREV_TOKEN = ("random sets that hold the previous-token head drop as much as any top set "
                     "(ablate with --exclude-prev-token to leave it out of both)")

PS_FLOOR = "uniform attention, mean 1/(s + 1) over the repeat probe's queries"
CLAIMS = (
    Claim("signatures rise", "final max PS", "ps", "greater", floor=Floor("ps_floor", PS_FLOOR)),
    Claim("signatures rise", "final max PS on natural-stream repeats", "ps_nat", "greater",
          floor=Floor("ps_nat_floor", PS_FLOOR)),
    Claim("earlier emergence", "onset (not formed: the cap)", "onset_or_cap", "less",
          confound="snippets displace base tokens (iso-token), so the injection's cost is in the onset"),
    Claim("earlier emergence", "onset against the random-span control (same injection, nothing to copy)",
          "onset_or_cap", "less", CURRICULA, CONTROL),
    # lower is better here (later tokens easier): "not better" is refuted by a decrease
    Claim("ICL not better", "token-index ICL score (late minus early loss)", "icl_token_index", "not less",
          floor=Floor("icl_token_index_floor", "no context use, late = early loss", "log", higher=False),
          confound="reads where the base stream puts its repeats (a generator that plants copies only late "
                   "in the context scores it without in-context learning)"),
    Claim("ICL not better", "key -> value recall HITS@1", "kv_hits1", "not greater",
          floor=Floor("kv_hits1_floor", "copying any shown value, 1 / pairs")),
    Claim("ICL not better", "key -> value recall, true minus permuted log-prob", "kv_gain", "not greater",
          floor=Floor("kv_gain_floor", "no key binding, true = permuted", "log")),
    Claim("ablation hurts natural-only most", "top minus mean random drop (the gap)", "ablation_gap", "less",
          floor=Floor("ablation_gap_floor", "top set drops like random sets, gap 0", "log"),
          confound=SHARED_PREV_TOKEN),
    Claim("natural-only more concentrated", "top-2% share of PS in the induction layer at matched PS",
          "top_share", "less", floor=Floor("top_share_floor", "equal PS on every head, k / heads per layer"),
          confound="with few heads a layer the share is 1 / (heads carrying PS): a head count"),
    Claim("anti-induction near zero", "anti-induction attention on S SEP rev(S) (query -> before its source)",
          "anti_induction", "not greater", _BWD, floor=Floor("anti_induction_floor", ATTENTION_FLOOR)),
    Claim("anti-induction near zero", "anti-induction copy: logit-attribution share on the reversed continuation",
          "anti_copy", "not greater", _BWD,
          floor=Floor("anti_copy_floor", "no preference among the m tokens of S, 1 / m")),
    Claim("anti-induction near zero", "backward-copy log-prob on S SEP rev(S)", "copy_bwd_logprob", "not greater",
          _BWD, floor=Floor("copy_bwd_logprob_floor", "uniform guessing, -ln V", "log")),
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
    heads = int((rows["layer"] == layer).sum())
    return {"top_share": float(row["top_share"]), "n_eff": float(row["n_eff"]), "matched_step": step,
            "heads_per_layer": heads, "top_share_floor": top_share_floor(heads)}


def _probe_floors(run_dir: Path) -> dict[str, float]:
    """The copy-probe measures' chance levels of one run (:func:`ihstats.base.chance.copy_probe_floors`)
    from its ``config.json``: context, ``metrics.probe_len`` and the vocabulary size; the
    anti-induction copy share's ``1 / m``."""
    cfg = read_json(run_dir / "config.json", "run config", "the run directory is damaged: train it again")
    try:
        context, probe_len = int(cfg["config"]["train"]["context"]), int(cfg["config"]["metrics"]["probe_len"])
        floors = copy_probe_floors(context, probe_len, int(cfg["vocab_size"]))
    except (KeyError, TypeError) as e:
        raise ValueError(f"{run_dir}/config.json: no {e} (train.context, metrics.probe_len, vocab_size)") from None
    m, ps_floor = copy_probe_len(context, probe_len), repeat_probe_floor(context, probe_len)
    return ({f"{k}_floor": v for k, v in floors.items()}
            | {"anti_copy_floor": 1.0 / m, "ps_floor": ps_floor, "ps_nat_floor": ps_floor,
               "icl_token_index_floor": 0.0, "ablation_gap_floor": 0.0})


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
            # older tables lack the pair count: no HITS@1 chance level then
            "kv_hits1_floor": 1.0 / kv.at["true", "shots_mean"] if "shots_mean" in kv else np.nan,
            "kv_gain_floor": 0.0,
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
    formed, basis = summary_formed(summary)  # certified, or on logs without the general probe the crossing
    formed = dict(zip(summary.index, formed))
    rows = []
    for run in grid.runs.to_dict("records"):
        rid = run["run_id"]
        m = grid.metrics[grid.metrics["run_id"] == rid]
        s = summary.loc[rid]
        row = {"run_id": rid, "mode": run["biinduct"], "seed": int(run["seed"]), "formed": bool(formed[rid]),
               "basis": basis,
               "onset": float(s[SUMMARY_ONSET[onset]] if SUMMARY_ONSET[onset] in s else s["onset"]),
               "steps": int(s["steps"]),
               "max_ps_peak": float(max_over_heads(m).max())}
        row["onset_or_cap"] = row["onset"] if row["formed"] else float(row["steps"])
        row |= (_final(m) | _concentration(m, level) | _kv(kv_all, rid, Path(run["path"]))
                | _probe_floors(Path(run["path"])))
        if ablation is not None:
            row["ablation_gap"] = _gap(ablation, f"{row['mode']}@s{row['seed']}", metric)
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["mode", "seed"], ignore_index=True)


def curves_frame(grid, metrics) -> pd.DataFrame:
    """Every run's curves of ``metrics`` from a loaded biinduct grid (:func:`ihstats.base.io.load_grid`):
    ``run_id, metric, step, value, mode``, a per-head score as its best head at each step (a
    model-level one, e.g. ``val_loss``, is one number per step already)."""
    m = grid.metrics[grid.metrics["metric"].isin(list(metrics))]
    best = m.groupby(["run_id", "metric", "step"])["value"].max().reset_index()
    modes = grid.runs[["run_id", "biinduct"]].rename(columns={"biinduct": "mode"})
    return best.merge(modes, on="run_id").sort_values(["mode", "metric", "step"], ignore_index=True)


def _gap(table: pd.DataFrame, label: str, metric: str) -> float:
    if not (table["condition"] == label).any():
        return np.nan
    d = prepare(table, AblationSpec(label, metric))
    return float(d.top.mean() - d.random.mean())


def verdict(p_for: float, p_against: float, floor: float, predicts: str, alpha: float = 0.05,
            at_chance: str = "") -> str:
    """Words one measure's test from its Holm-adjusted one-sided p for the predicted direction (for
    ``predicts = "not greater"``: for an increase, the direction that would refute it; ``"not
    less"``: for a decrease), for the
    opposite one, and the design's floor after the same Holm. ``at_chance``: when both groups sit
    at the measure's chance level (:func:`ihstats.base.chance.at_floor`), the note saying so; the
    verdict is then ``not testable by this design`` whatever the p (two absences compared)."""
    if at_chance:
        return f"not testable by this design (at chance: {at_chance})"
    if floor > alpha:
        return "not resolvable by this design"
    if predicts in ("not greater", "not less"):
        if p_for <= alpha:
            return "differs"
        side, change = ("lower", "increase") if predicts == "not greater" else ("higher", "decrease")
        return f"agrees ({side})" if p_against <= alpha else f"agrees (no {change} detected)"
    if p_for <= alpha:
        return "agrees"
    return "differs" if p_against <= alpha else "not resolvable by this design (no effect detected)"


def chance_check(c: Claim, runs: pd.DataFrame, factor: float = CHANCE_FACTOR) -> dict:
    """Where ``c``'s two groups sit against the measure's chance level: ``chance`` (the mean floor
    over the runs compared), ``at_chance`` (both groups at it) and ``chance_note`` (the floor, its
    band and each group's mean). Empty without a floor, or a floor column the runs lack."""
    if c.floor is None or c.floor.column not in runs:
        return {}
    groups = {"Bi-Induct": runs["mode"].isin(c.biinduct), c.baseline: runs["mode"] == c.baseline}
    means, at = {}, []
    for name, mask in groups.items():
        sel = runs.loc[mask, [c.column, c.floor.column]].dropna()
        if sel.empty:
            return {}
        means[name] = float(sel[c.column].mean())
        at.append(at_floor(sel[c.column], float(sel[c.floor.column].mean()), c.floor.scale, factor, c.floor.higher))
    chance = float(runs.loc[groups["Bi-Induct"] | groups[c.baseline], c.floor.column].mean())
    return {"chance": chance, "chance_what": c.floor.what, "at_chance": all(at),
            "chance_note": floor_note(c.floor, chance, means, factor)}


def _measure(c: Claim, runs: pd.DataFrame) -> dict | None:
    a = runs.loc[runs["mode"].isin(c.biinduct), c.column].dropna().to_numpy(float)
    b = runs.loc[runs["mode"] == c.baseline, c.column].dropna().to_numpy(float)
    if not a.size or not b.size:  # e.g. a measure read at a PS level one group never reached: said, not dropped
        empty = " and ".join(g for g, v in (("+".join(c.biinduct), a), (c.baseline, b)) if not v.size)
        return {"claim": c.family, "measure": c.name, "column": c.column, "predicts": c.predicts,
                "runs": "+".join(c.biinduct), "baseline": c.baseline, "n": a.size, "n_baseline": b.size,
                "p_for": np.nan, "p_against": np.nan, "floor": np.nan, "at_chance": False, "confound": c.confound,
                "chance_note": "", "no_value": f"no {empty} run has a value"}
    more, less = two_sample_test(a, b, "greater").pvalue, two_sample_test(a, b, "less").pvalue
    p_for, p_against = (less, more) if c.predicts in ("less", "not less") else (more, less)
    floor = two_sample_floor(a.size, b.size, "greater")[0]
    return {"claim": c.family, "measure": c.name, "column": c.column, "predicts": c.predicts,
            "runs": "+".join(c.biinduct), "baseline": c.baseline, "n": a.size, "n_baseline": b.size, "mean": a.mean(),
            "mean_baseline": b.mean(), "diff": a.mean() - b.mean(), "p_greater": more, "p_less": less,
            "p_for": p_for, "p_against": p_against, "floor": floor, "chance": np.nan, "chance_what": "",
            "at_chance": False, "chance_note": "", "confound": c.confound} | chance_check(c, runs)


def claim_tests(runs: pd.DataFrame, claims=CLAIMS, alpha: float = 0.05) -> pd.DataFrame:
    """Each claim's measures: Bi-Induct runs against the baseline's, seeds as the unit, Holm over
    the measures of a claim; ``floor_holm`` is the floor times the claim's measures. A measure one
    group has no value of (``no_value``, e.g. concentration at a PS level natural-only never
    reached) keeps its row, untested: "not testable by this design"."""
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
    out["verdict"] = [f"not testable by this design ({r['no_value']})" if isinstance(r.get("no_value"), str)
                      else verdict(r["p_for_holm"], r["p_against_holm"], r["floor_holm"], r["predicts"], alpha,
                                   r["chance_note"] if r["at_chance"] else "") for r in out.to_dict("records")]
    return out


__all__ = ["CLAIMS", "Claim", "chance_check", "claim_tests", "curves_frame", "run_table", "verdict"]
