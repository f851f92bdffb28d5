"""Regenerate the paper figures (PNG + PDF + the tidy CSV behind each) from logs in one command.

    python paper_figures/make.py                               # every figure, fast, shipped examples
    python paper_figures/make.py --runs runs/bxc-text --full    # real logs, full posterior sampling
    python paper_figures/make.py --only upt_law frontier --out /tmp/figs
    python paper_figures/make.py --list

Each figure is a registry entry: an analysis function (inputs -> tidy DataFrame, built with the
package's own ``ihstats`` functions) and a plot function (tidy DataFrame -> matplotlib Figure).
Without a real input a figure falls back to the shipped *simulated* example in ``data/`` and says
so in its title and in ``INDEX.md``; ``emergence_curves`` needs ``--runs`` and is skipped without
it. A failing figure is reported and the others still run; the exit status is 1 if any failed
(2 on bad arguments). Seeds are fixed (``--seed``, default 0), so reruns give the same files.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
EXAMPLES = {"emergence": DATA / "example_emergence.csv", "frontier": DATA / "example_frontier.csv",
            "ablation": DATA / "example_ablation.csv"}
HDI = 0.9
# Sampler / resampling budgets: fast matches the analyses/ scripts' --fast, full their defaults.
BUDGET = {
    False: dict(draws=300, tune=300, chains=2, n_resamples=999, n_boot=500),
    True: dict(draws=1000, tune=1000, chains=4, n_resamples=9999, n_boot=2000),
}


class Skip(Exception):
    """A figure that cannot be drawn from the given inputs (not a failure)."""


@dataclass
class Inputs:
    """What the analyses read, from the command line."""

    runs: Path | None = None
    emergence: Path | None = None
    frontier_table: Path | None = None
    ablation_table: Path | None = None
    full: bool = False
    seed: int = 0
    cache: dict[str, Any] = field(default_factory=dict)  # shared work (the grid's emergence table)

    @property
    def budget(self) -> dict[str, int]:
        return BUDGET[self.full]


@dataclass
class FigureData:
    """An analysis' output: the tidy frame behind the figure, where it came from, extras."""

    frame: pd.DataFrame
    source: str                      # human-readable data source (real logs or shipped example)
    simulated: bool                  # True when drawn from a shipped simulated example
    extra: dict[str, pd.DataFrame] = field(default_factory=dict)  # more tidy CSVs (name -> frame)
    note: str = ""


def _read_table(path: Path, flag: str) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"{flag}: no such file: {path}")
    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


def _source(path: Path | None, key: str, flag: str) -> tuple[pd.DataFrame, str, bool]:
    """The table from ``path`` or the shipped example, with a description of which it is."""
    path = Path(path) if path is not None else EXAMPLES[key]
    simulated = path.resolve() == EXAMPLES[key].resolve()
    desc = (f"{EXAMPLES[key].relative_to(ROOT)} (shipped SIMULATED example; pass {flag} for "
            f"real data)" if simulated else str(path))
    return _read_table(path, flag), desc, simulated


def _sim_tag(d: FigureData) -> str:
    return " [simulated example data]" if d.simulated else ""


# ================================================================== 1. emergence curves
def _grid_emergence(inp: Inputs):
    """Load the grid once and detect emergence once (shared by two figures)."""
    if "grid" not in inp.cache:
        from ihstats.emergence import curve_series, emergence_table
        from ihstats.io import load_grid

        grid = load_grid(inp.runs, on_error="skip")
        if grid.runs.empty:
            raise ValueError(f"--runs: no readable run directories in {inp.runs}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # skipped curves are counted in the note instead
            table = emergence_table(grid, metric="ps", head="max", method="bayes", level=HDI,
                                    on_error="skip")
        inp.cache["grid"] = (grid, curve_series(grid.metrics, "ps", "max"), table)
    return inp.cache["grid"]


def analysis_emergence_curves(inp: Inputs) -> FigureData:
    if inp.runs is None:
        raise Skip("needs --runs GRID_DIR (run logs); no shipped example of raw curves")
    grid, curves, table = _grid_emergence(inp)
    factors = grid.runs[["run_id", *[c for c in ("cell_id", "seed", "B", "C") if c in grid.runs]]]
    if not {"B", "C"} <= set(factors):
        raise ValueError("--runs: the runs' config.json lack train.batch_size/train.context (B, C)")
    cols = ["run_id", "onset", "onset_lo", "onset_hi", "censored", "last_step", "method"]
    frame = (curves.rename(columns={"value": "max_ps"})[["run_id", "step", "max_ps"]]
             .merge(factors, on="run_id").merge(table[cols], on="run_id", how="left"))
    n_skip = grid.runs["run_id"].nunique() - table["run_id"].nunique()
    note = f"{n_skip} run(s) without an onset (detector rejected the curve)" if n_skip else ""
    return FigureData(frame.sort_values(["C", "B", "run_id", "step"]).reset_index(drop=True),
                      f"{inp.runs} (real logs; onsets by ihstats.emergence, bayes)", False,
                      note=note)


def plot_emergence_curves(d: FigureData):
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    f = d.frame[d.frame["step"] > 0]
    # seed replicates of one cell share its colour: tell them apart by line style
    rep = f.groupby("cell_id")["seed"].rank(method="dense").astype(int) - 1 if "cell_id" in f else 0
    f = f.assign(replicate=rep)
    n_rep = int(f["replicate"].max()) + 1
    cs = sorted(f["C"].unique())
    norm = LogNorm(f["B"].min(), max(f["B"].max(), f["B"].min() * 2))
    cmap = plt.get_cmap("viridis")
    fig, axes = plt.subplots(1, len(cs), figsize=(3.4 * len(cs) + 0.8, 3.2), sharey=True,
                             squeeze=False, layout="constrained")
    for ax, c in zip(axes[0], cs):
        for rid, g in f[f["C"] == c].groupby("run_id", sort=False):
            color = cmap(norm(g["B"].iloc[0]))
            ax.plot(g["step"], g["max_ps"], color=color, lw=1, alpha=0.85,
                    ls=("-", "--", ":", "-.")[g["replicate"].iloc[0] % 4])
            r = g.iloc[0]
            if pd.notna(r["onset"]) and not r["censored"]:
                y = np.interp(np.log(r["onset"]), np.log(g["step"]), g["max_ps"])
                ax.plot([r["onset"]], [y], "o", ms=5, mfc="white", mec=color, mew=1.5)
                if pd.notna(r["onset_hi"]):
                    ax.hlines(y, r["onset_lo"], r["onset_hi"], color=color, lw=3, alpha=0.35)
            elif pd.notna(r["onset"]):  # censored: no emergence by last_step
                ax.plot([r["last_step"]], [g["max_ps"].iloc[-1]], ">", ms=6, mfc=color, mec="k")
        ax.set(xscale="log", title=f"C = {c}", xlabel="step (updates)")
    axes[0][0].set_ylabel("max PS over heads")
    bs = sorted(f["B"].unique())
    cb = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes[0].tolist(), label="B")
    cb.set_ticks(bs, labels=[f"{b:g}" for b in bs])
    cb.minorticks_off()
    fig.suptitle("Emergence curves; o = Bayesian onset (bar: 90% interval), > = censored"
                 + (f"; {n_rep} seeds per cell (line style)" if n_rep > 1 else "") + _sim_tag(d), fontsize=9)
    return fig


# ====================================================================== 2. UPT law
def analysis_upt_law(inp: Inputs) -> FigureData:
    from ihstats.report import obs_vs_pred_frame
    from ihstats.upt_law import UPTLaw, UPTLawSpec

    if inp.emergence is None and inp.runs is not None:
        table = _grid_emergence(inp)[2]
        source, simulated = f"{inp.runs} (real logs; emergence detected by ihstats.emergence)", False
    else:
        table, source, simulated = _source(inp.emergence, "emergence", "--emergence")
    b = inp.budget
    res = UPTLaw(UPTLawSpec(hdi_prob=HDI)).fit(table, draws=b["draws"], tune=b["tune"],
                                                chains=b["chains"], seed=inp.seed)
    frame = obs_vs_pred_frame(res, HDI)
    frame["log_observed"], frame["log_predicted"] = np.log(frame["observed"]), np.log(frame["predicted"])
    summ = res.summary(HDI).reset_index()
    # the fitted law along B for each observed C (posterior median line and its HDI)
    Bs = np.exp(np.linspace(np.log(frame["B"].min()), np.log(frame["B"].max()), 30))
    lines = []
    for c in sorted(frame["C"].unique()):
        N = None
        if res.spec.size_term:
            N = float(np.exp(res.data.centres["N"]))  # law at the design's centre size
        p = res.predict(Bs, np.full_like(Bs, c), N, HDI)
        lines.append(p.assign(B=Bs, C=c)[["B", "C", "upt", "upt_lo", "upt_hi"]])
    diag = res.diagnostics()
    note = (f"r(pred, obs log UPT) = {res.r_obs_pred:.3f}; {b['chains']} chains x {b['draws']} "
            f"draws" + (f"; warnings: {'; '.join(diag)}" if diag else ""))
    return FigureData(frame, source, simulated, extra={"params": summ, "law": pd.concat(lines)},
                      note=note)


def plot_upt_law(d: FigureData):
    import matplotlib.pyplot as plt

    f, law = d.frame, d.extra["law"]
    s = d.extra["params"].set_index("param")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 4.0))
    unc, cen = f[~f["censored"]], f[f["censored"]]
    ax1.errorbar(unc["log_predicted"], unc["log_observed"],
                 xerr=[unc["log_predicted"] - np.log(unc["pred_lo"]),
                       np.log(unc["pred_hi"]) - unc["log_predicted"]],
                 fmt="o", ms=4, lw=0.8, color="C0", label="emerged")
    if len(cen):
        ax1.scatter(cen["log_predicted"], cen["log_observed"], marker="^", facecolors="none",
                    edgecolors="C3", label="censored (UPT > last step)")
    lo = min(f["log_observed"].min(), f["log_predicted"].min()) - 0.3
    hi = max(f["log_observed"].max(), f["log_predicted"].max()) + 0.3
    ax1.plot([lo, hi], [lo, hi], "--", color="0.5", lw=1, label="y = x")
    ax1.set(xlim=(lo, hi), ylim=(lo, hi), xlabel="predicted log UPT (posterior mean, 90% HDI)",
            ylabel="observed log UPT (updates)")
    ax1.legend(fontsize=7, frameon=False)
    cs = sorted(f["C"].unique())
    for i, c in enumerate(cs):
        col = plt.get_cmap("plasma")(i / max(1, len(cs) - 1) * 0.85)
        g, pts = law[law["C"] == c], f[f["C"] == c]
        ax2.plot(g["B"], g["upt"], color=col, lw=1.2, label=f"C = {c}")
        ax2.fill_between(g["B"], g["upt_lo"], g["upt_hi"], color=col, alpha=0.15, lw=0)
        ax2.scatter(pts["B"], pts["observed"], color=col, s=14, edgecolors="none")
    ax2.set(xscale="log", yscale="log", xlabel="B (sequences per update)", ylabel="UPT (updates)")
    bs = sorted(f["B"].unique())
    ax2.set_xticks(bs, labels=[f"{b:g}" for b in bs])
    ax2.xaxis.set_minor_locator(plt.NullLocator())
    ax2.legend(fontsize=7, frameon=False, ncol=2)

    def est(p):
        return f"{s.at[p, 'mean']:.2f} [{s.at[p, 'hdi_lo']:.2f}, {s.at[p, 'hdi_hi']:.2f}]"

    fig.suptitle(f"log UPT = log T - a log B - b log C:  a = {est('a')}, b = {est('b')}, "
                 f"log T = {est('log_T')}" + _sim_tag(d), fontsize=9)
    fig.tight_layout()
    return fig


# ====================================================================== 3. frontier
def analysis_frontier(inp: Inputs) -> FigureData:
    from ihstats.frontier import FrontierSpec

    table, source, simulated = _source(inp.frontier_table, "frontier", "--frontier-table")
    b = inp.budget
    res = FrontierSpec().build(table).fit(draws=b["draws"], tune=b["tune"], chains=b["chains"],
                                          seed=inp.seed)
    cells = res.model.cells
    p = res.sensitivity(HDI).set_index("quantity").at["P(|b_freq| > |b_rel|)", "value"]
    note = f"separation: {res.separation}; GLM: {res.glm.method}; P(|b_freq| > |b_rel|) = {p:.3f}"
    return FigureData(res.frontier(HDI), source, simulated, extra={"cells": cells}, note=note)


def plot_frontier(d: FigureData):
    import matplotlib.pyplot as plt
    from ihstats.frontier import KNOBS, _edges

    # same drawing as ihstats.frontier.plot_frontier, but from the saved tidy frames
    grid = (d.extra["cells"].groupby(list(KNOBS))[["n_formed", "n_runs"]].sum()
            .assign(frac=lambda t: t["n_formed"] / t["n_runs"])["frac"].unstack("frequency"))
    fe, re_ = (np.minimum(_edges(v.to_numpy()), 1.0) for v in (grid.columns, grid.index))
    fr = d.frame
    fig, ax = plt.subplots(figsize=(5.4, 4.4))
    mesh = ax.pcolormesh(fe, re_, grid.to_numpy(), cmap="viridis", vmin=0, vmax=1)
    fig.colorbar(mesh, ax=ax, label="fraction of runs with an induction head")
    ax.fill_between(fr["frequency"], fr["reliability_lo"], fr["reliability_hi"], color="white",
                    alpha=0.35, label=f"{HDI:.0%} HDI band")
    ax.plot(fr["frequency"], fr["reliability_median"], color="white", lw=2,
            label="frontier (posterior median, p = 0.5)")
    ax.plot(fr["frequency"], fr["glm_reliability"], color="orange", lw=1.2, ls="--", label="GLM")
    ax.set(xscale="log", yscale="log", xlim=(fe[0], fe[-1]), ylim=(re_[0], re_[-1]),
           xlabel="frequency  P(A B ... A)", ylabel="reliability  P(B | A B ... A)")
    ax.set_title("Formation frontier" + _sim_tag(d), fontsize=9)
    ax.legend(loc="lower left", fontsize=7, framealpha=0.6)
    fig.tight_layout()
    return fig


# ====================================================================== 4. ablation
def analysis_ablation(inp: Inputs) -> FigureData:
    from ihstats.permutation import ablation_arrays, run_ablation_tests

    table, source, simulated = _source(inp.ablation_table, "ablation", "--ablation-table")
    b = inp.budget
    tests, _ = run_ablation_tests(table, b["n_resamples"], b["n_boot"], 0.05, inp.seed, True)
    rows = []
    for t in tests.to_dict("records"):
        metric = t.get("metric")
        metric = None if metric is None or pd.isna(metric) else metric
        a = ablation_arrays(table, t["condition"], metric, True)
        keep = {k: t[k] for k in ("p_random", "p_random_holm", "p_sign_flip_gap") if k in t}
        rows.append({"condition": t["condition"], "metric": metric, "ablation": "top",
                     "set_id": "top", "drop": float(a.top.mean()), **keep})
        rows += [{"condition": t["condition"], "metric": metric, "ablation": "random",
                  "set_id": s, "drop": float(v), **keep}
                 for s, v in zip(a.set_ids, a.random.mean(1))]
    note = f"{b['n_resamples']} sign flips, {b['n_boot']} bootstrap draws, Holm across tests"
    return FigureData(pd.DataFrame(rows), source, simulated, extra={"tests": tests}, note=note)


def plot_ablation(d: FigureData):
    import matplotlib.pyplot as plt

    groups = list(d.frame.groupby(["condition", "metric"], dropna=False, sort=False))
    fig, axes = plt.subplots(1, len(groups), figsize=(3.2 * len(groups), 3.0), squeeze=False)
    for ax, ((cond, metric), g) in zip(axes[0], groups):
        rnd = g.loc[g["ablation"] == "random", "drop"]
        top = g.loc[g["ablation"] == "top", "drop"].iloc[0]
        ax.hist(rnd, bins=20, color="0.6", label="random-k sets")
        ax.axvline(top, color="C3", lw=2, label="top-k")
        name = cond if pd.isna(metric) else f"{cond} / {metric}"
        ax.set_title(f"{name}\np = {g['p_random'].iloc[0]:.3g} "
                     f"(Holm {g['p_random_holm'].iloc[0]:.3g})", fontsize=8)
        ax.set_xlabel("mean drop (unablated - ablated)")
    axes[0][0].set_ylabel("head sets")
    axes[0][0].legend(fontsize=7, frameon=False)
    fig.suptitle("Top-k vs random-k head ablations" + _sim_tag(d), fontsize=9)
    fig.tight_layout()
    return fig


# ====================================================================== registry
@dataclass(frozen=True)
class Figure:
    analysis: Callable[[Inputs], FigureData]
    plot: Callable[[FigureData], Any]
    description: str


REGISTRY: dict[str, Figure] = {
    "emergence_curves": Figure(analysis_emergence_curves, plot_emergence_curves,
                               "max-PS curves of every run (log steps), colour B, facet C, onsets"),
    "upt_law": Figure(analysis_upt_law, plot_upt_law,
                      "observed vs predicted log UPT and the fitted law UPT(B, C)"),
    "frontier": Figure(analysis_frontier, plot_frontier,
                       "formed fraction over frequency x reliability with the frontier band"),
    "ablation": Figure(analysis_ablation, plot_ablation,
                       "top-k vs random-k head-ablation drops with p-values"),
}


# the command-line inputs each figure reads (for its one-figure command in INDEX.md)
INPUT_FLAGS = {"emergence_curves": ("runs",), "upt_law": ("runs", "emergence"),
               "frontier": ("frontier_table",), "ablation": ("ablation_table",)}


def make_figure(name: str, inp: Inputs, out: Path) -> tuple[FigureData, list[Path]]:
    """Run one registry entry: analysis, plot, and write ``name.png/.pdf/.csv`` (+ extras)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ihstats.plots import save_figure

    np.random.seed(inp.seed)  # belt and braces: every ihstats call also takes the seed
    entry = REGISTRY[name]
    data = entry.analysis(inp)
    sns.set_theme(style="ticks", context="paper")
    fig = entry.plot(data)
    if data.note:
        fig.text(0.01, -0.01, data.note, fontsize=6, color="0.35", va="top")
    files = save_figure(fig, out / name)
    plt.close(fig)
    data.frame.to_csv(out / f"{name}.csv", index=False)
    files.append(out / f"{name}.csv")
    for k, df in data.extra.items():
        df.to_csv(out / f"{name}_{k}.csv", index=False)
        files.append(out / f"{name}_{k}.csv")
    return data, files


def _command(name: str, args: argparse.Namespace) -> str:
    parts = ["python", "paper_figures/make.py", "--only", name]
    for flag in INPUT_FLAGS[name]:
        v = getattr(args, flag)
        if v is not None:
            parts += [f"--{flag.replace('_', '-')}", str(v)]
    if args.full:
        parts.append("--full")
    if args.seed:
        parts += ["--seed", str(args.seed)]
    return shlex.join(parts + ["--out", str(args.out)])


def write_index(out: Path, results: list[dict], args: argparse.Namespace) -> Path:
    mode = "full sampling (--full)" if args.full else "fast (few draws; --full for the paper)"
    lines = ["# Paper figures", "",
             f"Regenerated by `{shlex.join(['python', 'paper_figures/make.py', *args.argv])}` "
             f"({mode}, seed {args.seed}).", "",
             "| figure | status | data | files | command | seconds |", "|---|---|---|---|---|---|"]
    for r in results:
        files = ", ".join(f"`{p.name}`" for p in r.get("files", []))
        lines.append(f"| {r['name']} | {r['status']} | {r['source']} | {files} | "
                     f"`{r['command']}` | {r['seconds']:.1f} |")
    lines += ["", "## Notes", ""]
    lines += [f"- **{r['name']}** ({REGISTRY[r['name']].description}): {r['note'] or '-'}"
              for r in results]
    path = out / "INDEX.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python paper_figures/make.py",
                                 description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--runs", type=Path, default=None,
                    help="grid directory of run logs (emergence_curves; upt_law detects onsets "
                         "from it unless --emergence is given)")
    ap.add_argument("--emergence", type=Path, default=None,
                    help=f"emergence table CSV for upt_law (default: {EXAMPLES['emergence'].name},"
                         f" simulated, when --runs is not given)")
    ap.add_argument("--frontier-table", type=Path, default=None,
                    help=f"run table for frontier (default: {EXAMPLES['frontier'].name}, simulated)")
    ap.add_argument("--ablation-table", type=Path, default=None,
                    help=f"tidy ablation table for ablation (default: {EXAMPLES['ablation'].name},"
                         f" simulated)")
    ap.add_argument("--only", nargs="+", choices=list(REGISTRY), default=None, metavar="NAME",
                    help=f"figures to make (default all): {', '.join(REGISTRY)}")
    ap.add_argument("--full", action="store_true",
                    help="paper quality: 4 chains x 1000 draws, 9999 resamples (default: fast, "
                         "2 x 300 draws, 999 resamples)")
    ap.add_argument("--seed", type=int, default=0, help="seed of every sampler (default 0)")
    ap.add_argument("--out", type=Path, default=ROOT / "paper_figures" / "out",
                    help="output folder (default paper_figures/out)")
    ap.add_argument("--list", action="store_true", help="list the figures and exit")
    args = ap.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.list:
        for name, fig in REGISTRY.items():
            print(f"{name:18s} {fig.description}")
        return 0
    if args.runs is not None and not args.runs.is_dir():
        print(f"error: --runs: not a directory: {args.runs}", file=sys.stderr)
        return 2
    inp = Inputs(args.runs, args.emergence, args.frontier_table, args.ablation_table,
                 args.full, args.seed)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.only or list(REGISTRY):
        t0 = time.perf_counter()
        r = {"name": name, "command": _command(name, args), "note": "", "source": "-"}
        try:
            data, files = make_figure(name, inp, out)
            r.update(status="ok", files=files, note=data.note,
                     source=("SIMULATED: " if data.simulated else "real: ") + data.source)
            print(f"[ok]      {name}: {', '.join(p.name for p in files)} "
                  f"({'simulated example' if data.simulated else 'real data'})")
        except Skip as e:
            r.update(status="skipped", note=str(e))
            print(f"[skipped] {name}: {e}")
        except Exception as e:  # noqa: BLE001 -- one figure's failure must not stop the others
            r.update(status="FAILED", note=f"{type(e).__name__}: {e}")
            print(f"[FAILED]  {name}: {type(e).__name__}: {e}", file=sys.stderr)
            traceback.print_exc(limit=3, file=sys.stderr)
        r["seconds"] = time.perf_counter() - t0
        results.append(r)
    index = write_index(out, results, args)
    failed = [r["name"] for r in results if r["status"] == "FAILED"]
    print(f"wrote {out}/ and {index}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    warnings.filterwarnings("ignore", message=".*BLAS.*")
    sys.exit(main())
