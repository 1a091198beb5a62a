#!/usr/bin/env bash
# Second H200 session (after h200-run.sh showed the costs): per-call NVML
# costs, the peers and vramwatch variants one at a time (no contention), a
# 10-minute recording of two busy GPUs left running for h200-collect.sh,
# snapshot/metrics vs nvidia-smi with the MiB rounding fixed, bench-sampler.
set -uo pipefail
OUT=${OUT:-$PWD/h200-out2}
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
VW=${VW:-$PWD/target/release/vramwatch}
B=${B:-$PWD/.bench}
S=$PWD/scripts
. "$S/h200-lib.sh"
printf '[sampling]\nslow_interval = "off"\n' >/tmp/noslow.toml
printf '[sampling]\nslow_interval = "off"\nproc_util_interval = "2s"\n' >/tmp/lean.toml

at "GPU 0 workload, 10-minute recording (left running)"
setsid python3 "$B/gpu_workload.py" --seconds 700 --device 0 steady leak sawtooth idle=4 >"$OUT/wl0.log" 2>&1 < /dev/null &
setsid "$VW" record -o /tmp/h200-10min.jsonl.zst --duration 10m >"$OUT/record-10min.log" 2>&1 < /dev/null &
at "per-call NVML costs"
"$VW" bench-sampler --calls >"$OUT/calls.json" 2>&1; cat "$OUT/calls.json"
sleep 5
at "phase A: one busy GPU, one program at a time, 120x40, 40 s each"
pty vramwatch 120 40 40 "$VW"
pty vramwatch-noslow 120 40 40 "$VW" --config /tmp/noslow.toml
pty vramwatch-lean 120 40 40 "$VW" --config /tmp/lean.toml
MALLOC_ARENA_MAX=2 pty vramwatch-arena2 120 40 40 "$VW"
pty nvidia-smi 120 40 40 nvidia-smi -l 1
pty nvitop 120 40 40 python3 -m nvitop --interval 1
python3 "$S/peer_table.py" "$OUT"/pty/*-120x40.json | tee "$OUT/table-A-120x40.md"
mkdir -p "$OUT/A" && mv "$OUT"/pty/* "$OUT/A/"

at "GPU 1 workload (other roles)"
setsid env STEADY_GIB=60 SAW_GIB=8 LEAK_MIB_PER_S=256 python3 "$B/gpu_workload.py" --seconds 420 --device 1 steady sawtooth leak idle=2 >"$OUT/wl1.log" 2>&1 < /dev/null &
sleep 15
at "snapshot and metrics vs nvidia-smi, both GPUs"
START_WORKLOAD=0 timeout 60 bash "$S/gpu-check.sh" "$VW" >"$OUT/gpu-check.txt" 2>&1; echo "gpu-check exit $?" >>"$OUT/gpu-check.txt"
tail -25 "$OUT/gpu-check.txt"
metrics_vs_smi
tail -3 "$OUT/metrics-check.txt"
at "bench-sampler (background), phase B: both GPUs busy"
("$VW" bench-sampler --seconds 30 >"$OUT/sampler-default.json" 2>&1; "$VW" --config /tmp/lean.toml bench-sampler --seconds 30 >"$OUT/sampler-lean.json" 2>&1) &
COST=$!
pty vramwatch 200 60 30 "$VW"
pty nvitop 200 60 30 python3 -m nvitop --interval 1
pty nvidia-smi 200 60 30 nvidia-smi -l 1
pty vramwatch 120 40 30 "$VW"
pty nvitop 120 40 30 python3 -m nvitop --interval 1
wait $COST
cat "$OUT"/sampler-*.json
python3 "$S/peer_table.py" "$OUT"/pty/*-200x60.json | tee "$OUT/table-B-200x60.md"
python3 "$S/peer_table.py" "$OUT"/pty/*-120x40.json | tee "$OUT/table-B-120x40.md"
at "screens"
for raw in "$OUT"/pty/*.raw "$OUT"/A/*.raw; do
  base=${raw%.raw}; size=${base##*-}; c=${size%x*}; r=${size#*x}
  python3 "$S/render_screen.py" "$raw" "$c" "$r" >"$base.screen.txt" 2>/dev/null
done
(cd "$OUT" && tar czf /tmp/results2.tgz --exclude='*.raw' . && mv /tmp/results2.tgz "$OUT/results2.tgz")
if [ -n "${OUT_FINAL:-}" ]; then cp "$OUT/results2.tgz" "$OUT/run.log" "$OUT_FINAL/"; fi
at "done"
