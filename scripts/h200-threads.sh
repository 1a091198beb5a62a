#!/usr/bin/env bash
# Where vramwatch's CPU goes on real GPUs: CPU seconds per thread after 20 s
# of `vramwatch record`, for three schedules, with a busy GPU 0.
set -uo pipefail
VW=${VW:-$PWD/target/release/vramwatch}
B=${B:-$PWD/.bench}
setsid python3 "$B/gpu_workload.py" --seconds 200 --device 0 steady leak sawtooth idle=4 >/tmp/wl.log 2>&1 < /dev/null &
sleep 15
printf '' >/tmp/default.toml
printf '[sampling]\nfast_interval = "off"\n' >/tmp/nofast.toml
printf '[sampling]\nfast_interval = "off"\nslow_interval = "off"\nproc_util_interval = "1m"\n' >/tmp/minimal.toml
threads() { # pid
  local tck; tck=$(getconf CLK_TCK)
  for t in /proc/$1/task/*; do
    local comm stat
    comm=$(cat "$t/comm" 2>/dev/null)
    stat=$(cat "$t/stat" 2>/dev/null)
    stat=${stat##*) }
    set -- $stat
    echo "  $(awk -v u="${12}" -v s="${13}" -v k="$tck" 'BEGIN{printf "%7.3f", (u+s)/k}') s  $comm"
  done | sort -rn
}
for v in default nofast minimal; do
  "$VW" --config /tmp/$v.toml record -o /tmp/t-$v.jsonl --duration 25s --force >/dev/null 2>&1 &
  pid=$!
  sleep 22
  echo "== $v: CPU seconds per thread after 22 s"
  threads $pid
  wait $pid
done
echo "== nvidia-smi -l 1 for 22 s"
nvidia-smi -l 1 >/dev/null 2>&1 &
pid=$!; sleep 22; threads $pid; kill $pid
