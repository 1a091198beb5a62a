#!/usr/bin/env bash
# After moving the process lists out of the fast lane: per-thread CPU of the
# default schedule, and vramwatch vs nvidia-smi -l 1 vs nvitop one at a time
# at 120x40 with GPU 0 busy (steady leak sawtooth idle=4).
set -uo pipefail
VW=${VW:-$PWD/target/release/vramwatch}
B=${B:-$PWD/.bench}
OUT=${OUT:-/tmp/final}
S=$PWD/scripts
mkdir -p "$OUT"
. "$S/h200-lib.sh"
setsid python3 "$B/gpu_workload.py" --seconds 200 --device 0 steady leak sawtooth idle=4 >/tmp/wl.log 2>&1 < /dev/null &
sleep 15
threads() {
  local tck; tck=$(getconf CLK_TCK)
  for t in /proc/$1/task/*; do
    local stat; stat=$(cat "$t/stat" 2>/dev/null); stat=${stat##*) }
    set -- $stat
    echo "  $(awk -v u="${12}" -v s="${13}" -v k="$tck" 'BEGIN{printf "%7.3f", (u+s)/k}') s  $(cat $t/comm)"
  done | sort -rn
}
"$VW" record -o /tmp/t.jsonl --duration 25s --force >/dev/null 2>&1 &
pid=$!; sleep 22; echo "== default schedule: CPU seconds per thread after 22 s"; threads $pid; wait $pid
pty vramwatch 120 40 30 "$VW"
pty nvidia-smi 120 40 30 nvidia-smi -l 1
pty nvitop 120 40 30 python3 -m nvitop --interval 1
python3 "$S/peer_table.py" "$OUT"/pty/*.json
python3 "$S/render_screen.py" "$OUT/pty/vramwatch-120x40.raw" 120 40 > "$OUT/vramwatch.screen.txt"
cat "$OUT/vramwatch.screen.txt"
