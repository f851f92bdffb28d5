"""The run-directory contract (docs/DESIGN.md, "Data contracts") in one place, torch-free.

Both halves import it: the trainer (``ihtrain.run.train``, ``ihtrain.metrics``, ``ihtrain.grid``,
``ihtrain.grid.executors``) writes what it fixes, the statistics (``ihstats.base.io``, ``ihstats.base.schema``,
``ihstats.emergence``) read it. It holds

- the metric names and whether each is per head (``METRICS``; the torch functions behind the
  names are ``ihtrain.metrics.REGISTRY``),
- the column types of ``metrics.parquet`` and ``train.parquet``, the keys of ``config.json``, the
  required columns of ``manifest.parquet``,
- the short factor names the statistics give config fields,
- the status values and the one reader / writer of ``status.json``,
- the max-over-heads curve and its threshold crossing (:func:`max_over_heads`,
  :func:`ps_crossing`, :func:`run_crossing`), the one formed level (:data:`FORMED_LEVEL`, a run's own:
  :func:`formed_level`),
- :class:`SchemaError`, raised by every reader when a file breaks the contract.

Names and values here are fixed strings: add new ones, never rename (old run directories must
still read).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ihstats.base.fileio import UnreadableFile, atomic_write_json, read_json, read_parquet


class SchemaError(ValueError):
    """A run or grid directory does not follow the docs/DESIGN.md layout (message names file/column)."""


# ----------------------------------------------------------------------------- metrics
# name -> per head? (an (L, H) array, one row per head; else one model-level row with
# layer = head = -1). The order is the registry's: evaluation order and metrics.parquet row order.
METRICS: dict[str, bool] = {
    "ps": True, "prev_token": True, "la": True, "copy_fwd": True, "anti_induction": True, "ov_copy": True,
    "ar_acc": False, "ar_rank": False, "val_loss": False,
    # issue 42: anti-induction that can be non-zero, probes in distribution, token-index ICL
    "dup_bwd": True, "ps_nat": True, "repeat_nat_logprob": False, "copy_fwd_logprob": False,
    "copy_bwd_logprob": False, "icl_token_index": False,
    # issue 52: in-distribution measures on held-out training-distribution sequences, at the copies
    # the data itself holds (ihtrain.data.repeats.copy_labels)
    "ps_indist": True, "indist_gain": False,
    # issue 54: the copy half of Sabry and Belz's anti-induction score (logit attribution to the
    # reversed continuation on S SEP rev(S)); opt-in, like the other Bi-Induct probes
    "anti_copy": True,
    # issue 65: what certifies induction. PS on the general probe (random spans repeated at three
    # copy distances after in-distribution filler, general_probe_layout), ps_indist restricted to
    # copies whose token is not a likely successor (ihstats.base.chance.likely_successor), and per run
    # the chance levels and non-induction ceilings those scores are read against (model level,
    # constant per run, logged at every evaluation)
    "ps_gen_near": True, "ps_gen_mid": True, "ps_gen_far": True, "ps_indist_ctrl": True,
    "chance_indist": False, "chance_ctrl": False, "ceil_succ_indist": False, "ceil_succ_pmi_indist": False,
    "ceil_succ_ctrl": False, "ceil_offset_gen": False,
}
#: the per-run constants of the data (chance levels and non-induction ceilings): a property of the
#: source's sequences, not of the model, so they stay finite when the model's outputs are not
DATA_CONSTANTS: tuple[str, ...] = ("chance_indist", "chance_ctrl", "ceil_succ_indist", "ceil_succ_pmi_indist",
                                   "ceil_succ_ctrl", "ceil_offset_gen")
#: the general probe's per-head scores, near to far copy distance (general_probe_layout's slots)
GENERAL_PROBE_METRICS: tuple[str, ...] = ("ps_gen_near", "ps_gen_mid", "ps_gen_far")
#: a head's general score, its weakest general-probe distance (:func:`max_over_heads`): not logged,
#: derived from the three; a run's until-emergence budget may watch it (``train.emergence_metric``)
GENERAL_SCORE = "ps_gen"
#: the PS curves a run's budget may watch: the repeat probe, the data's own copies, the general score
WATCHED_METRICS: tuple[str, ...] = ("ps", "ps_indist", GENERAL_SCORE)
#: the metric each onset kind reads (``--onset``): the repeat probe's PS, in-distribution PS at the
#: data's own copies, and the probe-free in-distribution loss gain (copy vs other positions, nats)
ONSET_METRICS: dict[str, str] = {"ps": "ps", "indist": "ps_indist", "loss": "indist_gain",
                                  "general": "ps_gen"}  # ps_gen: ihstats.certificate.GENERAL_METRIC
METRIC_NAMES: tuple[str, ...] = tuple(METRICS)
# Logged only when named in ``metrics.include`` (each costs extra forward passes per evaluation;
# the Bi-Induct presets name them): the default is every other metric.
OPT_IN_METRICS: tuple[str, ...] = ("ps_nat", "repeat_nat_logprob", "copy_fwd_logprob", "copy_bwd_logprob",
                                   "icl_token_index", "anti_copy")
PER_HEAD: tuple[str, ...] = tuple(m for m, per_head in METRICS.items() if per_head)
MODEL_LEVEL: tuple[str, ...] = tuple(m for m, per_head in METRICS.items() if not per_head)

# ----------------------------------------------------------------------------- files
# column -> kind ("integer", "float", "string"); ihstats.base.io.check_frame checks and casts them
METRICS_COLUMNS = {"step": "integer", "tokens": "integer", "metric": "string", "layer": "integer",
                   "head": "integer", "value": "float"}
TRAIN_COLUMNS = {"step": "integer", "tokens": "integer", "loss": "float", "lr": "float", "grad_norm": "float",
                 "tokens_per_s": "float", "wall_s": "float"}
METRICS_KEY = ("step", "metric", "layer", "head")  # one metrics.parquet row per key
CONFIG_KEYS = ("run_id", "config", "seed", "versions", "n_params", "n_params_non_embedding", "vocab_size")
MANIFEST_COLUMNS = ("run_id", "status", "stop_reason", "steps")
# Also in every manifest, summary.csv and --status/--dry-run table written since grids had seeds
# (their grid.json has a "seeds" key): cell_id (RunConfig.cell_id, the run_id hash without the
# seed, shared by a cell's replicates) and the run's seed. Older grids may lack them.
MANIFEST_KEY_COLUMNS = ("cell_id", "seed")

# ----------------------------------------------------------------------------- factors
# Short factor name -> dotted config field (under config.json["config"]); ihstats.base.io.config_factors.
FACTOR_FIELDS = {"B": "train.batch_size", "C": "train.context", "n_layer": "model.n_layer",
                 "n_head": "model.n_head", "d_model": "model.d_model", "lr": "train.lr"}
# Data knobs by leaf name; filled only when the knob is active (else missing).
MARKOV_KNOBS = ("dependency", "marginal", "zipf_alpha", "n_groups", "within_similarity",
                "across_similarity", "entropy_rate")
BIINDUCT_KNOBS = ("span_len", "mix_start", "span_source")
# The shipped sources' factor rules (ihstats.base.sources.source_factors), by source name: the knobs
# reported as they are, and those reported only when imposed (>= 0). Part of the contract: the
# factor columns of every shipped grid's summary.csv. Another source's factors are every scalar
# field of its section, or the rule its trainer module registers.
SHIPPED_SOURCE_FACTORS = {
    "seminatural": {"knobs": ("frequency", "reliability")},
    "markov": {"knobs": MARKOV_KNOBS, "imposed": ("frequency", "reliability")},
}
# The shipped wrappers' factor rules (ihstats.base.sources.wrapper_factors): a wrapper is a config section
# a run may wear over any source; its factor (named like the section) is its mode, and its knobs
# are reported only when the mode is not ``off`` (else missing). Part of the contract as above.
SHIPPED_WRAPPER_FACTORS = {
    "biinduct": {"mode": "mode", "off": "none", "knobs": BIINDUCT_KNOBS},
}
# Config fields added after runs were shipped, with the default that reproduces those runs
# (ihstats.base.ids.config_hash hashes them only when set otherwise, so every shipped run keeps its id).
LATE_FIELDS = {("weight_seed",): -1, ("data_seed",): -1,  # seeds by kind (issue 66); -1: the run's seed
               ("data", "markov", "repeat_start"): 0, ("train", "emergence_metric"): "ps",
               # the generators' mechanism knobs (issue 53), in both repeat-planting sources
               **{("data", sect, leaf): default for sect in ("markov", "seminatural")
                  for leaf, default in (("repeat_distance", "uniform"), ("max_distance", 0),
                                        ("frequency_exponent", 0.0), ("frequency_ref_context", 64),
                                        # the decoupled setting (issue 66)
                                        ("min_distance", 0), ("copies_per_token", -1.0))},
               ("data", "seminatural", "repeat_start"): 0}
# Every factor name config_factors can give, in its order.
FACTORS = ("cell_id", "seed", "weight_seed", "data_seed", *FACTOR_FIELDS, "N", "n_params", "source", "frequency", "reliability",
           *MARKOV_KNOBS, "biinduct", *BIINDUCT_KNOBS)

# ----------------------------------------------------------------------------- status values
STATUSES = ("running", "done", "failed")  # what status.json says
# What grids report beside them (manifest, summary, --status): not started; running with no grid on
# it (a rerun resumes it); a status.json or log that cannot be read (never trained over).
GRID_STATUSES = ("pending", "interrupted", "unreadable")
UNKNOWN_STATUS = "unknown"  # ihstats.base.io: a run directory without status.json
# Why a run stopped: "" while it trains or when it failed; the budget that ended a done run
# (emerged: until-emergence; max_steps, max_tokens: the cap); interrupted: stopped, resumable.
STOP_REASONS = ("", "emerged", "max_steps", "max_tokens", "interrupted")

# ----------------------------------------------------------------------------- status.json
STATUS_FILE = "status.json"
METRICS_FILE = "metrics.parquet"
STATUS_REMEDY = ("the run's state is unknown: delete this file and rerun the same command (the run resumes "
                 "from its last checkpoint; a finished run just finishes again), or delete the run directory "
                 "to train it from the start")


def status_record(status: str, step: int, reason: str = "", stop_reason: str = "", *,
                  crossing: int | None = None, **extra: Any) -> dict[str, Any]:
    """The one shape of ``status.json`` (docs/DESIGN.md, run directory), stamped now.

    ``crossing``: the first evaluated update at which max PS over heads reached the run's
    ``train.emergence_threshold`` (:func:`ps_crossing`), None while it has not. ``extra`` keys
    (``io_error``) are added as they are.
    """
    return {"status": status, "reason": reason, "step": int(step), "stop_reason": stop_reason,
            "crossing": None if crossing is None else int(crossing),
            "updated": datetime.now(timezone.utc).isoformat(timespec="seconds"), **extra}


def write_status(run_dir: str | Path, status: str, step: int, reason: str = "", stop_reason: str = "", *,
                 crossing: int | None = None, **extra: Any) -> dict[str, Any]:
    """Write ``status.json`` atomically (:func:`status_record`); returns what was written."""
    record = status_record(status, step, reason, stop_reason, crossing=crossing, **extra)
    atomic_write_json(Path(run_dir) / STATUS_FILE, record)
    return record


def read_status(run_dir: str | Path) -> dict[str, Any] | None:
    """A run's ``status.json`` as written (None when the run has none yet); ``UnreadableFile`` when
    it is damaged or lacks its ``status``: the caller must not guess the state (a finished run read
    as new would be trained again, or overwritten as failed). Files written before ``crossing``
    existed lack that key: read it with :func:`run_crossing`."""
    path = Path(run_dir) / STATUS_FILE
    if not path.is_file():
        return None
    st = read_json(path, "status", STATUS_REMEDY)
    if not isinstance(st.get("status"), str):
        raise UnreadableFile(path, "has no 'status' key", STATUS_REMEDY)
    return st


# ----------------------------------------------------------------------------- the circuit of a run
#: A run's induction head counts as built on a previous-token head (circuit ``prev-token``) when it
#: sits above layer 0 and the best layer-0 previous-token score, at the PS crossing or at the last
#: evaluation, is at least this; else ``no-prev-token``. From bxc-markov's logs (issue 39): runs
#: without one end at <= 0.15 (uniform causal attention at the probe's queries s in [n, 2n - 1]
#: alone gives 1/(s+1): 0.06-0.11 at n = 8), runs with one at >= 0.22.
CIRCUIT_PREV_TOKEN_MIN = 0.2
CIRCUITS = ("prev-token", "no-prev-token")  # "" when max PS never crossed (or no prev_token log)
#: the circuit columns of the grid summary and the emergence table (ihstats.emergence.circuit)
CIRCUIT_COLUMNS = ("ih_head_crossing", "prev_token_l0_crossing", "prev_token_l0_end", "circuit")


# ----------------------------------------------------------------------------- max PS and its crossing
def max_over_heads(metrics: pd.DataFrame, metric: str = "ps") -> pd.Series:
    """The max-over-heads curve of one run's per-head ``metric``: value by step, steps ascending
    (empty when the metric has no rows). NaN heads are skipped, a step of only NaN is NaN.
    ``metric = GENERAL_SCORE`` (``ps_gen``): each head's weakest general-probe distance (min over
    :data:`GENERAL_PROBE_METRICS`, a head missing one counts NaN), the score the certificate asks of a head;
    rows already derived (``ihstats.certificate.general_rows``) are read as they are.

    ``metrics``: tidy rows of one run (``step, metric, layer, head, value``)."""
    if metric == GENERAL_SCORE and not (metrics["metric"] == GENERAL_SCORE).any():  # not derived yet
        metrics = general_rows(metrics)
    rows = metrics.loc[metrics["metric"] == metric, ["step", "value"]]
    return rows.groupby("step")["value"].max().sort_index()


def general_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per-head general score rows (``metric = ps_gen``): each head's min over the three distances at
    each step (NaN when a distance is missing there). Same columns as ``metrics``; empty without the probe."""
    gen = metrics[metrics["metric"].isin(GENERAL_PROBE_METRICS)]
    keys = [c for c in ("run_id", "step", "tokens", "layer", "head") if c in gen.columns]
    if gen.empty:
        return metrics.iloc[0:0]
    # the observed (step, head) rows only: a pivot over every combination of the keys would add
    # rows for steps paired with other steps' token counts, all NaN
    wide = gen.groupby([*keys, "metric"], sort=True)["value"].first().unstack("metric")
    score = wide.reindex(columns=list(GENERAL_PROBE_METRICS)).min(axis=1, skipna=False)
    return score.rename("value").reset_index().assign(metric=GENERAL_SCORE)[[*keys, "metric", "value"]]


def ps_crossing(metrics: pd.DataFrame, threshold: float, metric: str = "ps") -> int | None:
    """The first evaluated step at which max PS over heads is at least ``threshold``, or None
    (``metric``: the PS the run's ``train.emergence_metric`` names, ``ps`` or ``ps_indist``).

    The trainer applies it to each evaluation's rows as they come (the until-emergence stop rule)
    and records the result in ``status.json``; readers apply it to a whole ``metrics.parquet``
    when the run's status.json predates the record (:func:`run_crossing`)."""
    curve = max_over_heads(metrics, metric)
    hit = curve.index[curve.to_numpy() >= threshold]
    return int(hit[0]) if len(hit) else None


def run_crossing(status: dict[str, Any] | None, metrics: pd.DataFrame | None, threshold: float,
                 metric: str = "ps") -> int | None:
    """A run's threshold crossing: the one its ``status.json`` records, else computed from its
    metrics with :func:`ps_crossing` (run directories written before the record, and a ``null``
    carried over by a status write that did not know it; a recorded step never changes, since
    logs are only appended). ``metrics`` None: no log to compute from."""
    recorded = (status or {}).get("crossing")
    if isinstance(recorded, (int, np.integer)) and not isinstance(recorded, bool):
        return int(recorded)
    return ps_crossing(metrics, threshold, metric) if metrics is not None and len(metrics) else None


def read_crossing(run_dir: str | Path, threshold: float, metric: str = "ps") -> int | None:
    """:func:`run_crossing` of a run directory: its status.json's record, else its metrics.parquet's
    (read only then); None before any evaluation. A damaged file raises ``UnreadableFile``."""
    rd = Path(run_dir)
    recorded = run_crossing(read_status(rd), None, threshold)
    if recorded is not None or not (rd / METRICS_FILE).is_file():
        return recorded
    return ps_crossing(read_parquet(rd / METRICS_FILE, ["step", "metric", "layer", "head", "value"], "metric log"), threshold, metric)


#: The one formed level: the general score a head must reach at every probed distance for its run to
#: be certified (ihstats.certificate), and the max-PS level whose crossing the until-emergence budget
#: watches. ``train.emergence_threshold`` (the hashed config field, whose name stays for run-id
#: stability) sets a run's own level; this is its default and the level of runs whose config predates
#: the field. Read a run's level with :func:`formed_level`, never from the config directly.
FORMED_LEVEL = 0.3

#: the repeat probe's longest half-length: ``metrics.probe_len = 0`` measures with ``min(this, C // 2)``
MAX_PROBE_LEN = 50


def probe_len_of(metrics_probe_len: int, context: int) -> int:
    """The repeat probe's half-length n a run is measured with: ``metrics.probe_len``, or
    ``min(MAX_PROBE_LEN, C // 2)`` when it is 0 (so by default PS is measured differently per C)."""
    return metrics_probe_len or min(MAX_PROBE_LEN, context // 2)


#: the general probe's longest span (tokens repeated); shorter where the repeat region or C is short
GENERAL_SPAN_MAX = 8


def general_probe_layout(context: int, repeat_start: int, band: tuple[int, int] | None = None) -> dict[str, Any]:
    """Where the general induction probe puts its spans in a context of ``C = context`` positions
    whose training data holds copies only in ``[repeat_start, C - 1]`` (docs/DESIGN.md, "General
    induction probe"). A pure function of (C, repeat start, copy band), so a reader recomputes it
    from the hashed config.

    The span of ``k = max(2, min(GENERAL_SPAN_MAX, (C - repeat_start) // 2, C // 4))`` tokens
    occurs a second time at the end of the context, ``[C - k, C - 1]`` (inside the repeat region),
    and first ``d`` positions earlier; the distances spread over ``[C / 4, C - k]``: ``near =
    max(k, C // 4)``, ``far = C - k`` (a first span at position 0), ``mid`` halfway. Near is not
    the adjacent-spans distance ``k``: trained induction heads of the default grid at C 64-128 copy
    random tokens from 24 positions back on (0.44-0.82) but not from 8-12 (0.01-0.02), a range
    limit, not another mechanism; the certificate asks for copying over a quarter to all of the context.

    ``band = (min, max)``: the data's copies sit only ``min``-``max`` tokens apart (the decoupled
    setting, ``data.<source>.min_distance`` and ``max_distance``: :func:`ihtrain.data.copy_band_of`).
    The distances then spread over the band (``near = min``, ``far = max``, ``k <= min``): a head
    trained on copies 8-12 apart never saw 16 and is asked about 8, 10 and 12, where a band of
    positional copiers reads at most 1/3 (one of three offsets) and an induction head about 1.
    Returns ``{"span": k, "second": C - k, "distances": (near, mid, far), "slots":
    GENERAL_PROBE_METRICS}``; raises ``ValueError`` where no three distinct distances fit.
    """
    C, start = int(context), int(repeat_start)
    if not 0 <= start <= C - 2:
        raise ValueError(f"repeat_start: must be in [0, C - 2] = [0, {C - 2}], got {repeat_start}")
    k = max(2, min(GENERAL_SPAN_MAX, (C - start) // 2, C // 4))
    near, far = max(k, C // 4), C - k
    if band is not None:
        k = max(2, min(k, int(band[0])))
        near, far = int(band[0]), int(band[1])
        if near < k or far > C - k:
            raise ValueError(f"copy band [{near}, {far}]: the general probe's spans of {k} tokens need "
                             f"distances in [{k}, C - {k} = {C - k}]; narrow the band or lengthen the context")
    if far - near < 2:
        raise ValueError(f"context: the general probe needs three distinct copy distances in [{near}, {far}] "
                         f"(k = {k}); C = {C} (or the copy band) is too short (use C >= 6, a band of >= 3 distances)")
    return {"span": k, "second": C - k, "distances": (near, (near + far) // 2, far), "slots": GENERAL_PROBE_METRICS}


def formed_level(meta: dict[str, Any]) -> float:
    """A run's own formed level (:data:`FORMED_LEVEL` when its config predates the field) from its
    ``config.json`` dict (``train.emergence_threshold``): the one reader, used by the trainer's
    budget, the summary, the emergence table, the certificate and every fit.

    Raises SchemaError (a ValueError) naming the run when the value is not a finite number in (0, 1).
    """
    value = meta.get("config", {}).get("train", {}).get("emergence_threshold")
    if value is None:
        return FORMED_LEVEL
    level = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else float("nan")
    if not (np.isfinite(level) and 0 < level < 1):
        raise SchemaError(f"run {meta.get('run_id', '?')}: config.json train.emergence_threshold is {value!r}; "
                          f"the formed level must be a number in (0, 1) (default {FORMED_LEVEL})")
    return level


def emergence_metric(meta: dict[str, Any]) -> str:
    """A run's ``train.emergence_metric`` (the PS its crossing reads) from its ``config.json`` dict;
    ``ps`` when the config predates the field (issue 52)."""
    return str(meta.get("config", {}).get("train", {}).get("emergence_metric") or "ps")


__all__ = [
    "BIINDUCT_KNOBS", "CIRCUITS", "DATA_CONSTANTS", "CIRCUIT_COLUMNS", "CIRCUIT_PREV_TOKEN_MIN", "CONFIG_KEYS", "FORMED_LEVEL",
    "FACTORS", "FACTOR_FIELDS", "GENERAL_PROBE_METRICS", "GENERAL_SPAN_MAX", "GRID_STATUSES", "LATE_FIELDS", "MANIFEST_COLUMNS",
    "MANIFEST_KEY_COLUMNS", "MARKOV_KNOBS", "METRICS", "METRICS_COLUMNS", "METRICS_FILE", "METRICS_KEY", "METRIC_NAMES",
    "MAX_PROBE_LEN", "MODEL_LEVEL", "ONSET_METRICS", "OPT_IN_METRICS", "PER_HEAD", "SHIPPED_SOURCE_FACTORS", "SHIPPED_WRAPPER_FACTORS", "STATUSES", "STATUS_FILE", "STATUS_REMEDY", "STOP_REASONS", "SchemaError",
    "TRAIN_COLUMNS", "UNKNOWN_STATUS", "WATCHED_METRICS", "GENERAL_SCORE", "emergence_metric", "general_rows", "formed_level", "general_probe_layout", "max_over_heads", "probe_len_of", "ps_crossing", "read_crossing",
    "read_status", "run_crossing", "status_record", "write_status",
]
