#!/usr/bin/env bash
# Usage: tools/bench/ab_peers.sh OUTDIR OLD_BINARY NEW_BINARY "LABEL:PROGRAM:COLS:ROWS:SECONDS ..."
# Two vramwatch builds against `nvidia-smi -l 1` and nvitop in one run on a
# GPU host, each program alone in a pty (tools/bench/ptybench.py), in the
# order given: PROGRAM is old, new, smi or nvitop; a LABEL starting with
# "save" also keeps every byte the program wrote (OUTDIR/LABEL-PROGRAM-
# COLSxROWS.raw). Starts the benchmark workload (tools/bench/gpu_workload.py
# steady leak sawtooth idle=4, torch needed) 25 s before the first program
# and stops it at the end. nvitop: `python3 -m nvitop`, with NVITOP_PATH
# (a folder nvitop and its dependencies were pip-installed into with
# --target) put on PYTHONPATH when set. Writes OUTDIR/peers.jsonl (one
# ptybench result a line), machine.txt, start.txt, end.txt and prints one
# line a program: label, CPU %, bytes/s, peak RSS MiB, first paint s.
# Used for docs/benchmarks.md, "An eleventh session".
set -u
OUT=${1:?usage: ab_peers.sh OUTDIR OLD NEW SPECS}
OLD=${2:?usage: ab_peers.sh OUTDIR OLD NEW SPECS}
NEW=${3:?usage: ab_peers.sh OUTDIR OLD NEW SPECS}
SPECS=${4:?usage: ab_peers.sh OUTDIR OLD NEW SPECS}
HERE=$(cd "$(dirname "$0")" && pwd)
for b in "$OLD" "$NEW"; do
  [ -x "$b" ] || { echo "ab_peers.sh: $b is not an executable" >&2; exit 2; }
done
for spec in $SPECS; do
  case $spec in
    *:old:*:*:* | *:new:*:*:* | *:smi:*:*:* | *:nvitop:*:*:*) ;;
    *) echo "ab_peers.sh: $spec: not LABEL:PROGRAM:COLS:ROWS:SECONDS with PROGRAM old, new, smi or nvitop" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT" || exit 2
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/machine.txt" 2>&1
date -u +%FT%TZ > "$OUT/start.txt"
python3 "$HERE/gpu_workload.py" --seconds 600 steady leak sawtooth idle=4 > "$OUT/workload.log" 2>&1 &
W=$!
trap 'kill $W 2>/dev/null' EXIT
sleep 25
for spec in $SPECS; do
  IFS=: read -r l p c r s <<<"$spec"
  case $p in
    old) CMD=("$OLD") ;;
    new) CMD=("$NEW") ;;
    smi) CMD=(nvidia-smi -l 1) ;;
    nvitop) CMD=(env "PYTHONPATH=${NVITOP_PATH:-}" python3 -m nvitop --interval 1) ;;
  esac
  SAVE=()
  case $l in save*) SAVE=(--save "$OUT/$l-$p-${c}x$r.raw") ;; esac
  TERM=xterm-256color timeout $((s + 20)) python3 "$HERE/ptybench.py" --cols "$c" --rows "$r" \
    --seconds "$s" --label "$l-$p-${c}x$r" "${SAVE[@]}" -- "${CMD[@]}" >> "$OUT/peers.jsonl" 2>> "$OUT/err.log"
done
date -u +%FT%TZ > "$OUT/end.txt"
python3 - "$OUT/peers.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    print(d.get("label"), d.get("cpu_pct"), d.get("bytes_per_s"), d.get("rss_mib"), d.get("first_paint_s"))
PY
