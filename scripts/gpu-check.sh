#!/usr/bin/env bash
# Usage: scripts/gpu-check.sh [path/to/vramwatch] [path/to/gpu_workload.py]
# On a machine with NVIDIA GPUs: start known workloads (tools/bench/
# gpu_workload.py, different roles per GPU), then check that
# `vramwatch snapshot --json` and nvidia-smi agree on memory used, reserved,
# total and free per GPU and on every process's memory (whole MiB), and that
# every PID matches. See scripts/gpu_compare.py for the rule on figures that
# move while they are read. Needs nvidia-smi, python3 and, for the workload,
# PyTorch. Works from any directory.
# Defaults: the repo's target/release/vramwatch and tools/bench/gpu_workload.py.
# Env: START_WORKLOAD=0 (check whatever already runs), SECONDS_RUN (workload
# length, default 60), SETTLE (wait before reading, default 25), STEADY_GIB
# (default 16) and the other gpu_workload.py variables.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${1:-$ROOT/target/release/vramwatch}
WORKLOAD=${2:-$ROOT/tools/bench/gpu_workload.py}
[ -x "$BIN" ] || command -v "$BIN" >/dev/null || { echo "gpu-check.sh: no vramwatch at $BIN (cargo build --release?)" >&2; exit 2; }
if [ "${START_WORKLOAD:-1}" = 1 ] && [ ! -f "$WORKLOAD" ]; then
  echo "gpu-check.sh: no workload script at $WORKLOAD" >&2; exit 2
fi
TMP=$(mktemp -d)
# Each workload runs in its own process group (setsid), so that its role
# processes end with the check, not when their --seconds run out.
WL=()
trap 'for p in ${WL[@]+"${WL[@]}"}; do kill -- "-$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

n=$(nvidia-smi -L | wc -l)
echo "== $n GPU(s); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
if [ "${START_WORKLOAD:-1}" = 1 ]; then
  roles=("steady leak sawtooth idle=2" "steady idle=3 sawtooth" "leak idle=2" "steady sawtooth")
  for ((g = 0; g < n; g++)); do
    r=${roles[$((g % ${#roles[@]}))]}
    echo "== GPU $g: $r"
    # shellcheck disable=SC2086
    STEADY_GIB=${STEADY_GIB:-16} setsid python3 "$WORKLOAD" --seconds "${SECONDS_RUN:-60}" --device "$g" $r >"$TMP/wl-$g.log" 2>&1 </dev/null &
    WL+=("$!")
  done
  sleep "${SETTLE:-25}"
  for ((g = 0; g < n; g++)); do
    kill -0 "${WL[$g]}" 2>/dev/null || { echo "== GPU $g: the workload ended early:"; tail -5 "$TMP/wl-$g.log"; }
  done
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
