#!/usr/bin/env bash
# Usage: scripts/bench-vs-peers.sh OUTDIR [SECONDS] [COLS] [ROWS]
# vramwatch, `nvidia-smi -l 1` and nvitop side by side, in one run, each in a
# pty of the same size (tools/bench/ptybench.py): CPU %, bytes/s written to
# the terminal, peak RSS, first paint. Run it on a GPU host while a known
# workload runs (tools/bench/gpu_workload.py steady leak sawtooth idle=4).
# Writes OUTDIR/LABEL-COLSxROWS.{json,raw} and OUTDIR/table-COLSxROWS.md;
# with pyte installed, also each program's last screen (.screen.txt).
# Works from any directory.
# Env: VRAMWATCH (binary, default the repo's target/release/vramwatch),
# PTYBENCH (ptybench.py, default the repo's tools/bench/ptybench.py), NVITOP
# (command; empty to skip; the default is skipped when nvitop is not
# installed), BENCH_TERM (TERM inside the pty, default xterm-256color).
set -uo pipefail
OUT=${1:?usage: bench-vs-peers.sh OUTDIR [SECONDS] [COLS] [ROWS]}
SECS=${2:-30}
COLS=${3:-120}
ROWS=${4:-40}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
VW=${VRAMWATCH:-$ROOT/target/release/vramwatch}
PTY=${PTYBENCH:-$ROOT/tools/bench/ptybench.py}
NVITOP=${NVITOP-python3 -m nvitop --interval 1}
if [ "$NVITOP" = "python3 -m nvitop --interval 1" ] && ! python3 -c "import nvitop" 2>/dev/null; then
  echo "bench-vs-peers.sh: nvitop is not installed (pip install nvitop); measuring without it" >&2
  NVITOP=
fi
[ -f "$PTY" ] || { echo "bench-vs-peers.sh: no ptybench.py at $PTY" >&2; exit 2; }
[ -x "$VW" ] || command -v "$VW" >/dev/null || { echo "bench-vs-peers.sh: no vramwatch at $VW (cargo build --release?)" >&2; exit 2; }
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
