"""Two budgets: read each run as if it had stopped earlier, and ask whether the frontier moves.

A frontier drawn at one budget may be an iso-onset line (heads form everywhere, only later) rather
than a boundary (below it heads do not form). The test is the budget: read the same runs at the
cap and at a fraction of it (``1/3`` by default). If cells that had not formed at the short budget
formed by the long one, the boundary moved, and the report says so, with the shift: each budget
draws its own line (as the paper's frontier is drawn at its one budget), and no budget-free limit
below which heads never form is shown.

* :func:`read_at_budget` recomputes each run's verdict from its logs truncated at a budget:
  the Bayesian onset on the max-PS curve up to that update, formed (certified) and crossed as
  :func:`ihstats.emergence.formation` defines them, each run at its own formed level
  (``formed_level`` of ``data.runs``). On logs without the general probe the comparison reads the
  crossings, and says so (:func:`ihstats.tables.outcome_basis`). A run that stopped before the budget (until-emergence stops at 1.3 x the
  crossing) is read whole, exactly as a run capped at that budget would have stopped too.
* :func:`compare_budgets` pairs the two readings run by run: ``late`` runs formed only between
  the budgets, ``lost`` ones formed at the short reading only (a detector's second opinion on
  a longer curve). The boundary "moves" when late formers outnumber lost ones beyond chance (an
  exact sign test, one-sided, ``alpha`` 0.05); beside it, the boundary along each knob at the
  other knob's highest level, from the logistic GLM (:func:`ihstats.frontier.glm.fit_glm`) at
  each budget, and their ratio (the shift).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binom

from ihstats.base import io
from ihstats.base.cli_checks import Range, check_args, check_out_file, record_written
from ihstats.certificate import GENERAL_METRIC
from ihstats.base.contract import FORMED_LEVEL
from ihstats.emergence import PS_METRICS, formation, onset_metric
from ihstats.base.fileio import atomic_write_text
from ihstats.tables import formed_column, outcome_basis, outcome_word
from ihstats.frontier.glm import fit_glm
from ihstats.frontier.model import FrontierModel
from ihstats.frontier.results import single_outcome
from ihstats.frontier.spec import FrontierSpec, KNOBS
from ihstats.base.command import run_cli

BUDGET_COLUMNS = ("run_id", "budget", "formed", "crossed", "onset_basis", "certificate", "mechanism", "onset",
                  "onset_lo", "onset_hi", "censored", "final_max_ps", "last_step")


def run_caps(data: io.GridData) -> pd.Series:
    """Each run's update cap (``train.max_steps`` in its ``config.json``), indexed by run_id."""
    caps = {}
    for rid, path in zip(data.runs["run_id"], data.runs["path"]):
        cfg = json.loads((Path(path) / "config.json").read_text()).get("config", {})
        cap = cfg.get("train", {}).get("max_steps")
        if not isinstance(cap, (int, float)) or cap <= 0:
            raise ValueError(f"{path}/config.json: train.max_steps missing or not positive ({cap!r}); "
                             "pass the budgets explicitly")
        caps[rid] = int(cap)
    return pd.Series(caps, name="cap")


def read_at_budget(data: io.GridData, budget: float, level: float = 0.9, onset: str = "auto") -> pd.DataFrame:
    """Each run's formed verdict as if it had stopped at update ``budget``.

    Parameters
    ----------
    data : ihstats.base.io.GridData
        Runs and their tidy metrics (:func:`ihstats.base.io.load_grid`).
    budget : float
        Last update read; evaluations after it are ignored.
    level : float
        The onset interval's credible level (:func:`ihstats.emergence.formation`). Each run is read
        at its own formed level (the ``formed_level`` column of ``data.runs``; the default
        ``contract.FORMED_LEVEL`` where it has none).
    onset : str
        Which PS the verdict reads (:func:`ihstats.emergence.onset_metric`): ``auto`` (default, the
        general score where the logs hold it, else the in-distribution PS), ``general``, ``ps``, ``indist``.

    Returns
    -------
    pandas.DataFrame
        One row per run: the run factors of ``data.runs`` (without ``path``), ``budget``,
        ``formed`` (certified), ``crossed``, ``onset_basis``, ``certificate``, ``mechanism``,
        ``onset``, ``onset_lo``, ``onset_hi``, ``censored``, ``final_max_ps`` and ``last_step``
        (the last evaluation read; for a censored run the censoring point).
    """
    if not budget > 0:
        raise ValueError(f"budget: must be > 0 updates, got {budget}")
    m = data.metrics
    metric = onset_metric(m, onset)
    if metric not in PS_METRICS:
        raise ValueError(f"onset: the frontier reads a formed verdict, on general, ps or indist; got {onset!r}")
    own = dict(zip(data.runs["run_id"], data.runs["formed_level"])) if "formed_level" in data.runs else {}
    rows = []
    for rid, run in m[m["step"] <= budget].groupby("run_id", sort=False):
        f = formation(run, formed_level=float(own.get(rid, FORMED_LEVEL)), level=level, metric=metric)
        rows.append({"run_id": rid, "budget": float(budget), "last_step": int(run["step"].max()),
                     **{k: f[k] for k in BUDGET_COLUMNS if k in f}})
    for rid in sorted(set(data.runs["run_id"]) - set(m.loc[m["step"] <= budget, "run_id"])):
        rows.append({"run_id": rid, "budget": float(budget), "formed": False, "crossed": False, "censored": True,
                     "onset_basis": "certified" if metric == GENERAL_METRIC else "crossing",
                     "last_step": 0})  # no evaluation before the budget: nothing formed yet
    out = pd.DataFrame(rows, columns=list(BUDGET_COLUMNS))
    out["censored"] = out["censored"].astype(bool)
    out["formed"] = out["formed"].astype(bool)
    out["crossed"] = out["crossed"].astype(bool)
    runs = data.runs.drop(columns=["path"], errors="ignore")
    trained = m.groupby("run_id")["step"].max()  # how far each run has trained, not how far it is read
    return _without_unfinished(runs.merge(out, on="run_id", how="right"), budget, trained)


def _without_unfinished(table: pd.DataFrame, budget: float, trained: pd.Series) -> pd.DataFrame:
    """Drop the runs whose verdict at ``budget`` is not known yet: not formed, trained only to an
    update before the budget (``trained``: last logged step per run_id), and not finished (running
    or interrupted). Counting them as "not
    formed" would read a grid in progress as a frontier (a run at update 300 of 12,600 is no
    evidence at 12,600); a finished run that stopped early keeps its verdict."""
    if "status" not in table:
        return table
    reached = table["run_id"].map(trained).fillna(0)
    unknown = ~budget_outcome(table) & (reached < budget) & (table["status"] != "done")
    if unknown.any():
        ids = table.loc[unknown, "run_id"].tolist()
        warnings.warn(f"{len(ids)} run(s) not finished and not formed by update {budget:g} left out of the "
                      f"verdict there (their outcome is not known yet: {', '.join(ids[:4])}"
                      f"{' ...' if len(ids) > 4 else ''}); rerun the grid command to finish them", stacklevel=3)
    return table[~unknown].reset_index(drop=True)


def budget_outcome(table: pd.DataFrame) -> np.ndarray:
    """Formed per run as the fits count it (:func:`ihstats.tables.formed_column`): certified, or on
    logs without the general probe the crossing (said by :func:`ihstats.tables.outcome_basis`)."""
    with warnings.catch_warnings():  # an uncensored rise that did not count is this reader's normal case
        warnings.simplefilter("ignore", UserWarning)
        return formed_column(table)


def boundary_levels(table: pd.DataFrame) -> dict:
    """The GLM boundary (p = 0.5) along each knob at the other knob's highest level.

    Returns ``{"frequency": f at r = max r, "reliability": r at f = max f}`` in knob units; NaN
    when the table holds a single outcome (no boundary), the contour leaves (0, 1], or the knobs
    do not vary apart (a grid that is not a frequency x reliability design, e.g. ``markov``).
    """
    out = {k: np.nan for k in KNOBS}
    try:
        model = FrontierModel.from_table(table, FrontierSpec())
        if single_outcome(model.cells) is not None:
            return out
        b = fit_glm(model.X, model.cells["n_formed"].to_numpy(), model.cells["n_runs"].to_numpy(),
                    model.terms, separation=model.separation).params
    except (ValueError, np.linalg.LinAlgError):  # knobs that do not vary, or vary together
        return out
    z = {k: (np.log(model.cells[k].max()) - mu) / sd for k, (mu, sd) in model.scale.items()}
    for i, (k, other) in enumerate(zip(KNOBS, KNOBS[::-1])):
        slope, slope_other = b[1 + i], b[2 - i]
        if slope == 0:
            continue
        mu, sd = model.scale[k]
        with np.errstate(over="ignore"):  # a contour far outside the grid: inf, reported as NaN
            level_ = float(np.exp(mu + sd * (-(b[0] + slope_other * z[other]) / slope)))
        out[k] = level_ if 0 < level_ <= 1 else np.nan
    return out


@dataclass
class BudgetComparison:
    """The same runs read at a short and a long budget (:func:`compare_budgets`)."""

    short: float
    long: float
    n_runs: int
    formed: tuple  # (formed at short, formed at long)
    late: int  # formed only by the long budget
    lost: int  # formed at the short reading, not at the long one
    p_value: float  # exact one-sided sign test of late against lost
    boundary: pd.DataFrame  # budget, frequency, reliability (GLM boundary levels)
    alpha: float = 0.05
    basis: str = "certified"  # what "formed" rests on (ihstats.tables.outcome_basis)

    @property
    def moves(self) -> bool:
        """True when more runs formed between the budgets than chance allows (``p < alpha``)."""
        return bool(self.p_value < self.alpha)

    def shift(self) -> dict:
        """Ratio long / short of the boundary level along each knob (NaN where either is)."""
        b = self.boundary.set_index("budget")
        return {k: float(b.at[self.long, k] / b.at[self.short, k]) for k in KNOBS}

    def table(self) -> pd.DataFrame:
        """One row per budget: runs formed, what that rests on, and the boundary levels."""
        return self.boundary.assign(n_runs=self.n_runs, n_formed=list(self.formed), basis=self.basis)

    def verdict(self) -> str:
        """One line: the boundary moved (with the shift), or not shown to move."""
        b = self.boundary.set_index("budget")
        where = "; ".join(f"{k} boundary {_lvl(b.at[self.short, k])} at {self.short:,.0f} updates, "
                          f"{_lvl(b.at[self.long, k])} at {self.long:,.0f}" for k in KNOBS)
        word = outcome_word(self.basis)
        counts = (f"{self.late} of {self.n_runs} runs {word} only between {self.short:,.0f} and "
                  f"{self.long:,.0f} updates, {self.lost} the other way; sign test p = {self.p_value:.3g}; "
                  f"{word}: {self.basis}")
        if self.moves:
            # the paper's frontier is drawn at one budget too: what differs is only that we read two
            return (f"the boundary moves with the budget: each budget draws its own line (a fixed-budget "
                    f"boundary, as the paper's at its budget; no budget-free limit is shown) ({counts}; {where})")
        return (f"the boundary is not shown to move between the budgets: late {word} runs within chance "
                f"({counts}; {where})")


def _lvl(x: float) -> str:
    # a GLM boundary that leaves (0, 1] or has no slope: say where it is not, not "not located"
    return "beyond the tested levels" if not np.isfinite(x) else f"{x:.3g}"


def compare_budgets(short: pd.DataFrame, long: pd.DataFrame, alpha: float = 0.05) -> BudgetComparison:
    """Compare the same runs read at two budgets (tables of :func:`read_at_budget`).

    Parameters
    ----------
    short, long : pandas.DataFrame
        One row per run with ``run_id``, ``budget``, ``frequency``, ``reliability``, ``formed``;
        the same run ids in both.
    alpha : float
        Level of the sign test below which the boundary is said to move.

    Returns
    -------
    BudgetComparison
    """
    for name, t in (("short", short), ("long", long)):
        missing = [c for c in ("run_id", "budget", *KNOBS, "formed") if c not in t]
        if missing:
            raise ValueError(f"{name}: missing columns {missing}; read it with read_at_budget")
        if t["budget"].nunique() != 1:
            raise ValueError(f"{name}: holds several budgets {sorted(t['budget'].unique())}")
    if set(short["run_id"]) != set(long["run_id"]):
        raise ValueError("short, long: not the same runs (pair the readings of one grid)")
    b_short, b_long = float(short["budget"].iloc[0]), float(long["budget"].iloc[0])
    if not b_short < b_long:
        raise ValueError(f"short budget {b_short} must be below the long one {b_long}")
    pair = pd.Series(budget_outcome(short), index=short["run_id"]).to_frame("s").join(
        pd.Series(budget_outcome(long), index=long["run_id"]).rename("l"))
    late, lost = int((pair["l"] & ~pair["s"]).sum()), int((pair["s"] & ~pair["l"]).sum())
    p = float(binom.sf(late - 1, late + lost, 0.5)) if late + lost else 1.0
    bounds = pd.DataFrame([{"budget": b, **boundary_levels(t)} for b, t in ((b_short, short), (b_long, long))])
    basis = outcome_basis(pd.concat([short, long], ignore_index=True))
    return BudgetComparison(b_short, b_long, len(pair), (int(pair["s"].sum()), int(pair["l"].sum())),
                            late, lost, p, bounds, alpha, basis)


def _within_trained(data: io.GridData, caps: pd.Series, long: float, short: float) -> None:
    """Refuse budgets the runs never trained to: a long budget past a run's own cap (its "not
    formed" would be a guess about updates it never took), a short one before any evaluation."""
    short_of = caps[caps < long]
    if len(short_of):
        raise ValueError(f"cap: {long:g} updates is past train.max_steps of {len(short_of)} run(s) (e.g. "
                         f"{short_of.index[0]} at {short_of.iloc[0]}); give --cap <= {caps.min()}")
    m = data.metrics
    first = m.loc[m["step"] > 0, "step"].min()
    if not first <= short:
        raise ValueError(f"ratio: the short budget {short:g} updates lies before the runs' first evaluation "
                         f"({first}); give a smaller --ratio")


def two_budgets(data: io.GridData, ratio: float = 3.0, cap: float | None = None, onset: str = "auto") -> tuple:
    """Read a grid at its cap (default: the largest ``train.max_steps`` of its runs) and at
    ``cap / ratio``; returns ``(long, short, comparison)``."""
    if not ratio > 1:
        raise ValueError(f"ratio: the long budget over the short one must be > 1, got {ratio}")
    caps = run_caps(data)
    cap = float(cap if cap is not None else caps.max())
    _within_trained(data, caps, cap, cap / ratio)
    long, short = read_at_budget(data, cap, onset=onset), read_at_budget(data, cap / ratio, onset=onset)
    return long, short, compare_budgets(short, long)


def per_run(long: pd.DataFrame, short: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its factors, ``formed_short``/``formed_long`` and the onsets at both."""
    keep = [c for c in long.columns if c not in BUDGET_COLUMNS or c == "run_id"]
    out = long[keep].copy()
    for name, t in (("short", short), ("long", long)):
        formed = pd.Series(budget_outcome(t), index=t["run_id"])
        t = t.set_index("run_id")
        out[f"formed_{name}"] = out["run_id"].map(formed).astype(bool)
        out[f"onset_{name}"] = out["run_id"].map(t["onset"].where(formed))
    return out.assign(basis=outcome_basis(long))


def _varying(table: pd.DataFrame) -> list:
    """The columns that take more than one value (as text, so NaN and mixed types compare)."""
    return [c for c in table.columns if table[c].astype(str).nunique() > 1]


def per_cell(runs: pd.DataFrame) -> pd.DataFrame:
    """Formed runs per cell at both budgets (rows of :func:`per_run` grouped by the factors that
    vary, seeds pooled): ``n_runs, formed_short, formed_long`` and ``late`` (formed only by the
    long budget). A cell whose count grows between the budgets is one whose verdict at the short
    budget was about speed."""
    factors = [c for c in _varying(runs) if c not in {"run_id", "seed", "cell_id"}
               and not c.startswith(("formed_", "onset_"))]
    if not factors:
        raise ValueError("per_cell: no factor varies between the runs (one cell)")
    g = runs.assign(late=runs["formed_long"] & ~runs["formed_short"]).groupby(factors, dropna=False)
    return g.agg(n_runs=("run_id", "size"), formed_short=("formed_short", "sum"),
                 formed_long=("formed_long", "sum"), late=("late", "sum")).reset_index()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ihstats.frontier.budget",
                                 description="Read a grid's runs at the cap and at cap / ratio: formed per run "
                                             "at both budgets, and whether the boundary moves.")
    ap.add_argument("grid", help="grid directory (python -m ihtrain.grid --out)")
    ap.add_argument("--ratio", type=float, default=3.0, help="long budget / short budget (default 3)")
    ap.add_argument("--cap", type=float, default=None, help="long budget in updates (default: train.max_steps)")
    ap.add_argument("-o", "--out", default=None, help="CSV of the per-run table (default: print only)")
    a = ap.parse_args(argv)
    check_args(ap, a, {"ratio": Range(1, lo_open=True), "cap": Range(1)})  # a ratio <= 1 has no short budget
    if a.out:
        check_out_file(a.out, [a.grid], "-o", parser=ap)  # before any work
    try:
        long, short, cmp = two_budgets(io.load_grid(a.grid), a.ratio, a.cap)
    except (ValueError, OSError) as e:
        print(f"error: {a.grid}: {e}", file=sys.stderr)
        return 2
    table = per_run(long, short)
    varying = ["run_id"] + [c for c in _varying(table) if c != "run_id"]
    print(table[varying].to_string(index=False))  # the factors that vary, formed at both budgets
    if "seed" in table and table["seed"].nunique() > 1:  # seeds pooled, per cell
        print(per_cell(table).to_string(index=False))
    print(cmp.table().to_string(index=False))
    print(cmp.verdict())
    if a.out:
        atomic_write_text(a.out, table.to_csv(index=False))
        record_written(a.out)
        print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    run_cli(main)
