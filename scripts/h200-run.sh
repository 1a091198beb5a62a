#!/usr/bin/env bash
# The measurements on real GPUs, in one go (about 9 minutes), on a machine
# with one or two H200s, nvidia-smi and PyTorch. Writes everything under OUT
# (default ./h200-out). Needs: target/release/vramwatch, .bench/ with
# ptybench.py, gpu_workload.py and wheels/ (nvitop, pyte, wcwidth).
#
#  GPU 0: the benchmark workload (steady leak sawtooth idle=4), 11 minutes.
#  GPU 1 (if present): steady 60 GiB + sawtooth + idle=2; at 30 s a leak of
#         512 MiB/s that runs into CUDA OOM; at 210 s the `oom` role; at
#         240 s a leak of 256 MiB/s that runs into OOM again.
#  - a 10-minute `vramwatch record` of both GPUs, left running (setsid) for
#    h200-collect.sh to pick up;
#  - a 4-minute recording of the leak and OOM for test fixtures;
#  - snapshot --json and /metrics vs nvidia-smi (before/after rule);
#  - bench-sampler (sampler CPU vs the raw NVML calls), two schedules;
#  - vramwatch vs nvidia-smi -l 1 vs nvitop in ptys at 120x40 and 200x60;
#  - PyTorch allocator figures of a fragmenting process, its drill-down.
set -uo pipefail
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
VW=${VW:-$PWD/target/release/vramwatch}
B=${B:-$PWD/.bench}
S=$PWD/scripts
. "$S/h200-lib.sh"

at "machine"
nvidia-smi
n=$(nvidia-smi -L | wc -l)
python3 -c 'import torch; print("torch", torch.__version__, "cuda devices", torch.cuda.device_count())'
"$VW" --version

at "workloads"
setsid python3 "$B/gpu_workload.py" --seconds 660 --device 0 steady leak sawtooth idle=4 >"$OUT/wl0.log" 2>&1 < /dev/null &
if [ "$n" -ge 2 ]; then
  setsid env STEADY_GIB=60 SAW_GIB=8 python3 "$B/gpu_workload.py" --seconds 660 --device 1 steady sawtooth idle=2 >"$OUT/wl1.log" 2>&1 < /dev/null &
  (sleep 30; LEAK_MIB_PER_S=512 LEAK_CAP_GIB=200 python3 "$B/gpu_workload.py" --seconds 400 --device 1 leak >"$OUT/wl1-leak.log" 2>&1) &
  (sleep 210; python3 "$B/gpu_workload.py" --seconds 60 --device 1 oom >"$OUT/wl1-oom.log" 2>&1) &
  (sleep 240; LEAK_MIB_PER_S=256 LEAK_CAP_GIB=200 python3 "$B/gpu_workload.py" --seconds 400 --device 1 leak >"$OUT/wl1-leak2.log" 2>&1) &
fi
sleep 2
at "recorders"
setsid "$VW" record -o /tmp/h200-10min.jsonl.zst --duration 10m >"$OUT/record-10min.log" 2>&1 < /dev/null &
"$VW" record -o "$OUT/h200-leak-oom.jsonl.zst" --duration 250s >"$OUT/record-fixture.log" 2>&1 &
FIXTURE=$!
sleep 20

at "snapshot and metrics vs nvidia-smi"
START_WORKLOAD=0 timeout 60 bash "$S/gpu-check.sh" "$VW" >"$OUT/gpu-check.txt" 2>&1; echo "gpu-check exit $?" >>"$OUT/gpu-check.txt"
metrics_vs_smi

at "sampler cost (background)"
printf '[sampling]\nproc_util_interval = "2s"\n' >/tmp/proc2s.toml
("$VW" bench-sampler --seconds "${COST_S:-40}" >"$OUT/sampler-default.json" 2>&1; "$VW" --config /tmp/proc2s.toml bench-sampler --seconds "${COST_S:-40}" >"$OUT/sampler-proc2s.json" 2>&1) &
COST=$!

at "ptybench 120x40"
P=()
pty vramwatch 120 40 "${PTY_S:-60}" "$VW" & P+=($!)
pty vramwatch-proc2s 120 40 "${PTY_S:-60}" "$VW" --config /tmp/proc2s.toml & P+=($!)
pty nvidia-smi 120 40 "${PTY_S:-60}" nvidia-smi -l 1 & P+=($!)
pty nvitop 120 40 "${PTY_S:-60}" python3 -m nvitop --interval 1 & P+=($!)
wait "${P[@]}"
at "ptybench 200x60"
P=()
pty vramwatch 200 60 "${PTY_S:-60}" "$VW" & P+=($!)
pty nvitop 200 60 "${PTY_S:-60}" python3 -m nvitop --interval 1 & P+=($!)
pty nvidia-smi 200 60 "${PTY_S:-60}" nvidia-smi -l 1 & P+=($!)
wait "${P[@]}"
wait $COST

at "PyTorch allocator"
timeout 120 python3 python/examples/fragment.py --device 0 --cap-gib 8 --hold 40 >"$OUT/fragment.log" 2>&1 &
FRAG=$!
sleep 20
"$VW" snapshot --json >"$OUT/snapshot-torch.json"
python3 "$B/ptybench.py" --cols 120 --rows 40 --seconds 8 --warmup 3 --label drill --keys $'/fragment\r\r' --save "$OUT/pty/drilldown-120x40.raw" -- "$VW" >"$OUT/pty/drilldown.json"
wait $FRAG

at "screens"
for raw in "$OUT"/pty/*.raw; do
  base=${raw%.raw}; size=${base##*-}; c=${size%x*}; r=${size#*x}
  python3 "$S/render_screen.py" "$raw" "$c" "$r" >"$base.screen.txt" 2>/dev/null
done
python3 "$S/peer_table.py" "$OUT"/pty/*-120x40.json >"$OUT/table-120x40.md"
python3 "$S/peer_table.py" "$OUT"/pty/*-200x60.json >"$OUT/table-200x60.md"
cat "$OUT"/table-*.md "$OUT/gpu-check.txt" "$OUT/metrics-check.txt" "$OUT"/sampler-*.json
at "results packed; the 10-minute recording goes on (h200-collect.sh)"
(cd "$OUT" && tar czf /tmp/results.tgz --exclude='*.zst' . && mv /tmp/results.tgz "$OUT/results.tgz")
wait $FIXTURE
if [ -n "${OUT_FINAL:-}" ]; then
  cp "$OUT/results.tgz" "$OUT/h200-leak-oom.jsonl.zst" "$OUT/run.log" "$OUT_FINAL/" 2>/dev/null
fi
# Stay until the second leak has run into OOM, so the fixture recording of
# GPU 1 is complete, and leave the rest to the collect step.
while [ $(($(date +%s) - t0)) -lt "${STAY_S:-560}" ]; do sleep 5; done
at "done"; ls -la "$OUT"
