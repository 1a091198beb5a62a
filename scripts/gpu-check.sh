#!/usr/bin/env bash
# On a machine with NVIDIA GPUs: start known workloads (../shared/bench/
# gpu_workload.py, different roles per GPU), then check that
# `vramwatch snapshot --json` and nvidia-smi agree on memory used, reserved,
# total and free per GPU and on every process's memory (whole MiB), and that
# every PID matches. See scripts/gpu_compare.py for the rule on figures that
# move while they are read.
# Usage: scripts/gpu-check.sh [path/to/vramwatch] [path/to/gpu_workload.py]
set -euo pipefail
BIN=${1:-target/release/vramwatch}
WORKLOAD=${2:-../shared/bench/gpu_workload.py}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT

n=$(nvidia-smi -L | wc -l)
echo "== $n GPU(s); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
if [ "${START_WORKLOAD:-1}" = 1 ]; then
  roles=("steady leak sawtooth idle=2" "steady idle=3 sawtooth" "leak idle=2" "steady sawtooth")
  for ((g = 0; g < n; g++)); do
    r=${roles[$((g % ${#roles[@]}))]}
    echo "== GPU $g: $r"
    # shellcheck disable=SC2086
    STEADY_GIB=${STEADY_GIB:-16} python3 "$WORKLOAD" --seconds "${SECONDS_RUN:-60}" --device "$g" $r >"$TMP/wl-$g.log" 2>&1 &
  done
  sleep "${SETTLE:-25}"
fi

smi() {
  echo "#gpus"
  nvidia-smi --query-gpu=index,uuid,memory.used,memory.reserved,memory.total,memory.free --format=csv,noheader,nounits
  echo "#apps"
  nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits
}
smi >"$TMP/a.csv"
"$BIN" snapshot --json >"$TMP/snap.json"
smi >"$TMP/b.csv"

echo "== nvidia-smi (before vramwatch):"; cat "$TMP/a.csv"
echo "== vramwatch snapshot (table):"; "$BIN" snapshot | cat
echo "== comparison:"
python3 "$HERE/gpu_compare.py" "$TMP/a.csv" "$TMP/snap.json" "$TMP/b.csv"
