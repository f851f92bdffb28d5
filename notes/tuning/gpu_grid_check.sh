#!/usr/bin/env bash
# The default grid (bxc-cpu) on one CUDA GPU, runs packed per device, plus the CUDA unit test.
#
#   OUT=some/dir bash notes/tuning/gpu_grid_check.sh [grid seconds, default 420] [runs per GPU, default 8]
#
# GRID_ARGS (e.g. "--spec notes/tuning/specs/bxc-cpu-d160-lr15e3-probe.toml", or "--only ID,ID")
# runs another grid, or some runs of the preset; GRID_DIR names its directory. The grid builds the
# corpus, tokenizer and token stream once before its workers start (its log says how long).
# Written for a lent GPU machine with torch but without this package installed (PYTHONPATH=.)
# and without pymc/arviz/ruptures (training needs none of them). It leaves in $OUT: the log, GPU
# utilisation samples (nvidia-smi dmon) and the grid directory without checkpoints as a tarball;
# onsets and the UPT fit are computed afterwards from that tarball with ihstats.
set -u
GRID_S=${1:-420}
PER_GPU=${2:-8}
GRID=${GRID_DIR:-/tmp/bxc-cpu-gpu}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 MPLBACKEND=Agg HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
export IHLAW_CACHE=${IHLAW_CACHE:-/tmp/ihlaw-cache}
mkdir -p "$OUT"
pack() {  # the grid directory without checkpoints -> tarball $1
  tar czf "$1" --exclude=checkpoints -C "$(dirname "$GRID")" "$(basename "$GRID")"
}
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  echo "cpus: $(nproc)"
  python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available())"
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/ihtrain/test_model.py
  nvidia-smi dmon -s u -d 5 > "$OUT/dmon.txt" 2>&1 &
  DMON=$!
  # A snapshot of the grid every 60 s, so that the logs come back even if this script is cut off.
  (while sleep 60; do pack "$OUT/snapshot.tgz.tmp" 2>/dev/null && mv "$OUT/snapshot.tgz.tmp" "$OUT/snapshot.tgz"; done) &
  SNAP=$!
  # SIGINT: the grid stops its workers, which checkpoint; a rerun of the same command resumes.
  time timeout -s INT -k 60 "$GRID_S" python3 -m ihtrain.grid ${GRID_ARGS:-} --out "$GRID" --runs-per-gpu "$PER_GPU" --no-progress
  echo "grid exit code: $?"
  kill $DMON $SNAP
  python3 -m ihtrain.grid ${GRID_ARGS:-} --out "$GRID" --status
  python3 -m ihstats.base.schema "$GRID" && echo "schema check: ok"
} 2>&1 | tee "$OUT/gpu_check.log"
pack "$OUT/bxc-cpu-gpu.tgz"
rm -f "$OUT/snapshot.tgz" "$OUT/snapshot.tgz.tmp"
ls -la "$OUT"
