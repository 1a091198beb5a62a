#!/usr/bin/env bash
# vramwatch, `nvidia-smi -l 1` and nvitop side by side, in one run, each in a
# pty of the same size (../shared/bench/ptybench.py): CPU %, bytes/s written
# to the terminal, peak RSS, first paint. Run it on a GPU host while a known
# workload runs (../shared/bench/gpu_workload.py steady leak sawtooth idle=4).
# Usage: scripts/bench-vs-peers.sh OUTDIR [SECONDS] [COLS] [ROWS]
# Env: VRAMWATCH (binary), PTYBENCH (ptybench.py), NVITOP (command; empty to
# skip), BENCH_TERM (TERM inside the pty, default xterm-256color).
set -uo pipefail
OUT=${1:?usage: bench-vs-peers.sh OUTDIR [SECONDS] [COLS] [ROWS]}
SECS=${2:-30}
COLS=${3:-120}
ROWS=${4:-40}
VW=${VRAMWATCH:-target/release/vramwatch}
PTY=${PTYBENCH:-../shared/bench/ptybench.py}
NVITOP=${NVITOP-python3 -m nvitop --interval 1}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
tag="${COLS}x${ROWS}"
bench() { # label, then the command
  local label=$1; shift
  local file="$OUT/$(echo "$label" | tr ' /' '__')-$tag"
  python3 "$PTY" --cols "$COLS" --rows "$ROWS" --seconds "$SECS" --warmup 3 \
    --label "$label" --save "$file.raw" -- "$@" >"$file.json"
}
bench "vramwatch" "$VW" &
bench "nvidia-smi -l 1" nvidia-smi -l 1 &
if [ -n "$NVITOP" ]; then
  # shellcheck disable=SC2086
  bench "nvitop" $NVITOP &
fi
wait
python3 "$HERE/peer_table.py" "$OUT"/*-"$tag".json | tee "$OUT/table-$tag.md"
if python3 -c "import pyte" 2>/dev/null; then
  for raw in "$OUT"/*-"$tag".raw; do
    python3 "$HERE/render_screen.py" "$raw" "$COLS" "$ROWS" >"${raw%.raw}.screen.txt"
  done
fi
