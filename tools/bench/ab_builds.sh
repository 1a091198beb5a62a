#!/usr/bin/env bash
# Usage: tools/bench/ab_builds.sh OUTDIR OLD_BINARY NEW_BINARY
# Two vramwatch builds and `nvidia-smi -l 1` in one run on a GPU host, each
# program alone in a pty (tools/bench/ptybench.py): three rounds of 20 s at
# 120x40 in rotating order (old, new, smi / new, smi, old / smi, old, new),
# one round of both builds at 200x60, then first paint, six more 1 s runs
# of each in the order old, new, smi. Starts the benchmark workload
# (tools/bench/gpu_workload.py steady leak sawtooth idle=4, torch needed)
# itself and stops it at the end. Writes OUTDIR/peers.jsonl (one ptybench
# result a line), machine.txt, start.txt, end.txt. About 6 minutes.
# Used for docs/benchmarks.md, "A ninth session".
set -u
OUT=${1:?usage: ab_builds.sh OUTDIR OLD NEW}
OLD=${2:?usage: ab_builds.sh OUTDIR OLD NEW}
NEW=${3:?usage: ab_builds.sh OUTDIR OLD NEW}
HERE=$(cd "$(dirname "$0")" && pwd)
for b in "$OLD" "$NEW"; do
  [ -x "$b" ] || { echo "ab_builds.sh: $b is not an executable" >&2; exit 2; }
done
mkdir -p "$OUT" || exit 2
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/machine.txt" 2>&1
date -u +%FT%TZ > "$OUT/start.txt"
python3 "$HERE/gpu_workload.py" --seconds 540 steady leak sawtooth idle=4 > "$OUT/workload.log" 2>&1 &
W=$!
trap 'kill $W 2>/dev/null' EXIT
sleep 25
run() { # label cols rows seconds command...
  local l=$1 c=$2 r=$3 s=$4
  shift 4
  TERM=xterm-256color timeout $((s + 20)) python3 "$HERE/ptybench.py" --cols "$c" --rows "$r" \
    --seconds "$s" --label "$l" -- "$@" >> "$OUT/peers.jsonl" 2>> "$OUT/err.log"
}
one() { # label-prefix program cols rows seconds
  case $2 in
    old) run "$1-old-$3x$4" "$3" "$4" "$5" "$OLD" ;;
    new) run "$1-new-$3x$4" "$3" "$4" "$5" "$NEW" ;;
    smi) run "$1-smi-$3x$4" "$3" "$4" "$5" nvidia-smi -l 1 ;;
  esac
}
for p in old new smi; do one r1 $p 120 40 20; done
for p in new smi old; do one r2 $p 120 40 20; done
for p in smi old new; do one r3 $p 120 40 20; done
for p in new old; do one r4 $p 200 60 20; done
for i in 1 2 3 4 5 6; do
  for p in old new smi; do one "fp$i" $p 120 40 1; done
done
date -u +%FT%TZ > "$OUT/end.txt"
cat "$OUT/peers.jsonl"
