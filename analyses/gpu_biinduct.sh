#!/usr/bin/env bash
# Bi-Induct on a base where copies are scarce (issue 54), one command on one GPU: the
# biinduct-text grid (5 conditions x 3 seeds, builtin natural text, 2 layers x 8 heads d128,
# 5,000 updates each), every run's ablations (top 2% PS per layer without the shared
# previous-token head, against all its same-count sets; the previous-token set beside) and key ->
# value recall, the pooled ablation tests, then the verdicts with every measure's chance level.
#
#     bash analyses/gpu_biinduct.sh [GRID_DIR] [RESULTS_DIR]
#
# Defaults: runs/biinduct-text and results/biinduct/biinduct-text. Resumable: a rerun skips finished
# runs and ablations already written. Budget: <= 10 minutes of one H100-class GPU (estimate, not
# yet measured: the bxc-cpu-h200-bf16 d128 runs at B 64, C 128 took 35 s per 3,646 updates at 8
# runs per GPU; here 15 runs at once, 5,000 updates, 200 evaluations each). On a machine without
# the builtin corpus cached (~/.cache/ihlaw or $IHLAW_CACHE) the first run builds corpus and
# tokenizer (~1 min); its fingerprint is recorded in every config.json.
#
# CPU version (the biinduct-text-cpu preset: width 64, B 32, 6,000 updates; <= 3 h of both cores,
# an estimate: notes/presets.md#biinduct-text), in resumable pieces (rerun the same command):
#     PRESET=biinduct-text-cpu DEVICE=cpu bash analyses/gpu_biinduct.sh runs/biinduct-text-cpu \
#         results/biinduct/biinduct-text-cpu
set -euo pipefail
GRID=${1:-runs/biinduct-text}
RESULTS=${2:-results/biinduct/biinduct-text}
PY=${PYTHON:-python}
DEVICE=${DEVICE:-cuda}
PRESET=${PRESET:-biinduct-text}
SETS=${SETS:-}   # extra --set FIELD=VALUE overrides for every run (they change the run ids)
JOBS=${JOBS:-8}   # ablations in parallel (each loads its run once)
EXAMPLES=${EXAMPLES:-50}   # examples per ablation metric and key -> value prompts

if [ "$DEVICE" = cpu ]; then
    # two workers x one thread: both cores, one run each
    # shellcheck disable=SC2086
    "$PY" -m ihtrain.grid --preset "$PRESET" --out "$GRID" --workers 2 --threads-per-run 1 $SETS --no-figures
    JOBS=2
else
    # shellcheck disable=SC2086
    "$PY" -m ihtrain.grid --preset "$PRESET" --out "$GRID" --runs-per-gpu 15 $SETS --no-figures
fi

ablate_run() {  # one run: the two ablation families, then key -> value recall (written beside the run)
    local run=$1 label
    label=$("$PY" - "$run" <<'PY'
import json, sys
c = json.load(open(sys.argv[1] + "/config.json"))
print(f"{c['config']['data']['biinduct']['mode']}@s{c['seed']}")
PY
)
    if [ ! -s "$run/ablation.csv" ]; then
        "$PY" -m ihtrain.ablate "$run" --top-frac 0.02 --per-layer --exclude-prev-token --random-sets 199 \
            --examples "$EXAMPLES" --metrics repeat,repeat_nat,val,kv --prev-token-set --condition "$label" \
            --device "$DEVICE" --threads 1 > "$run/ablation.log" 2>&1
    fi
    if [ ! -s "$run/icl_kv.csv" ]; then
        "$PY" -m ihtrain.ablate "$run" --icl --examples "$EXAMPLES" --device "$DEVICE" --threads 1 \
            > "$run/icl.log" 2>&1
    fi
}
export -f ablate_run
export PY DEVICE EXAMPLES
find "$GRID" -mindepth 2 -maxdepth 2 -name config.json -printf '%h\n' | sort \
    | xargs -P "$JOBS" -I{} bash -c 'ablate_run {}'

mkdir -p "$RESULTS"
"$PY" - "$GRID" "$RESULTS/all_runs_ablation.csv" <<'PY'
import sys
from pathlib import Path

import pandas as pd

from ihstats.base.fileio import atomic_write_text

tables = [pd.read_csv(p) for p in sorted(Path(sys.argv[1]).glob("*/ablation.csv"))]
atomic_write_text(sys.argv[2], pd.concat(tables, ignore_index=True).to_csv(index=False))
print(f"gathered {len(tables)} ablation tables into {sys.argv[2]}")
PY
# 2 x 8 heads, one per layer: the top-PS family (the shared previous-token head left out) has
# 7 x 8 = 56 possible sets, the previous-token family 8 x 8 = 64; --random-sets 199 enumerates all
# the others of each (the p-value formula is the exact one either way, so no --n-possible)
"$PY" analyses/ablation_tests.py --table "$RESULTS/all_runs_ablation.csv" --fast --out "$RESULTS/ablation"
"$PY" analyses/biinduct_verdicts.py "$GRID" --ablation "$RESULTS/all_runs_ablation.csv" --out "$RESULTS/verdicts"
