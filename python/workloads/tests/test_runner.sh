#!/usr/bin/env bash
# Tests run_corpus.sh with a fake vramwatch and fake workloads (no GPU, no
# torch): two lanes in parallel, the files of every job, the recorder
# started before and stopped after each workload, names, the budget, the
# deadline, bad plans, and an interrupted run that still makes its tar.
#   bash python/workloads/tests/test_runner.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
RUNNER=$HERE/../run_corpus.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }

# a fake recorder: writes start/stop lines with times, stops on SIGTERM
cat >"$T/vramwatch" <<'SH'
#!/usr/bin/env bash
[ "${1:-}" = --version ] && { echo "vramwatch 0.0.0-fake"; exit 0; }
[ "${1:-}" = record ] || exit 2
shift; out=
while [ $# -gt 0 ]; do
  case $1 in -o) out=$2; shift 2 ;; --interval) [ "$2" = 1s ] || exit 3; shift 2 ;; --force) shift ;; *) exit 4 ;; esac
done
echo "start $(date +%s%3N)" >"$out"
trap 'echo "stop TERM $(date +%s%3N)" >>"$out"; exit 0' TERM
while :; do sleep 0.05; done
SH
chmod +x "$T/vramwatch"

# fake workloads: record argv and times, write a truth file, exit as told
mkdir -p "$T/wl"
for w in leak_keep kv_plateau two_proc; do
cat >"$T/wl/$w.py" <<'PY'
import json, os, sys, time
a = sys.argv[1:]
def val(f, d=None):
    return a[a.index(f) + 1] if f in a else d
t0 = int(time.time() * 1000)
time.sleep(float(val("--sleep", "1")))
if "--hang" in a:
    time.sleep(1000)
truth = {"workload": os.path.basename(sys.argv[0])[:-3], "argv": a, "start_unix_ms": t0,
         "end_unix_ms": int(time.time() * 1000), "device": int(val("--device")), "outcome": "oom",
         "expect": "oom", "oom_unix_ms": int(time.time() * 1000), "growth_start_unix_ms": t0 + 100,
         "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS", "CUDA_DEVICE_ORDER")}}
json.dump(truth, open(val("--truth"), "w"))
print(json.dumps({"kind": "truth", **truth}))
sys.exit(int(val("--exit", "3")))
PY
done

cat >"$T/plan" <<'PLAN'
# comment line
gpu0 leak_keep --speed 1.0 --sleep 2 --seconds 30 est=2
gpu0 kv_plateau --sleep 1 --exit 0 --seconds 30   # trailing comment
gpu1 two_proc --speed 2 --sleep 2 --seconds 30 name=custom.name_1
gpu1 leak_keep --variant loss_graph --sleep 1 --seconds 30
PLAN
export WORKLOADS_DIR=$T/wl PRE_S=1 POST_S=1 GAP_S=0 PYTHON=${PYTHON:-python3}

out=$("$RUNNER" --estimate "$T/plan" 2>&1)
check "estimate lists 4 jobs" '[ "$(grep -c "^gpu" <<<"$out")" = 4 ]'
check "estimate per lane" 'grep -q "budget gpu0: 2 jobs, expected 38 s" <<<"$out" && grep -q "budget gpu1: 2 jobs" <<<"$out"'
check "default names" 'grep -q "01-gpu0-leak_keep-s1.0" <<<"$out" && grep -q "04-gpu1-leak_keep-loss_graph-s1.0" <<<"$out" && grep -q "custom.name_1" <<<"$out"'

"$RUNNER" "$T/vramwatch" "$T/out" "$T/plan" "$T/corpus.tar.gz" >"$T/run.log" 2>&1
rc=$?
check "runner exit 0" '[ $rc = 0 ]'
for n in 01-gpu0-leak_keep-s1.0 02-gpu0-kv_plateau-s1.0 custom.name_1 04-gpu1-leak_keep-loss_graph-s1.0; do
  check "$n: recording, truth, log, record log" '[ -s "$T/out/$n.jsonl.zst" ] && [ -s "$T/out/$n.truth.json" ] && [ -s "$T/out/$n.log" ] && [ -e "$T/out/$n.record.log" ]'
  check "$n: recorder stopped by SIGTERM" 'grep -q "^stop TERM" "$T/out/$n.jsonl.zst"'
  check "$n: recorder started >=1 s before the workload, stopped >=1 s after" '"$PYTHON" - "$T/out/$n" <<PY
import json, sys
p = sys.argv[1]
rec = dict(l.split(" ", 1) for l in open(p + ".jsonl.zst").read().split("\n") if l)
start = int(rec["start"]); stop = int(rec["stop"].split()[1])
t = json.load(open(p + ".truth.json"))
assert t["start_unix_ms"] - start >= 900, (t["start_unix_ms"], start)
assert stop - t["end_unix_ms"] >= 900, (stop, t["end_unix_ms"])
PY'
done
check "--device from the lane" '"$PYTHON" -c "import json,sys; assert json.load(open(sys.argv[1]))[\"device\"] == 1" "$T/out/custom.name_1.truth.json"'
check "NVLink multicast off, PCI order in the workload env" '"$PYTHON" -c "
import json,sys; e = json.load(open(sys.argv[1]))[\"env\"]
assert e == {\"NCCL_NVLS_ENABLE\": \"0\", \"TORCH_SYMM_MEM_DISABLE_MULTICAST\": \"1\", \"NVSHMEM_DISABLE_NVLS\": \"1\", \"CUDA_DEVICE_ORDER\": \"PCI_BUS_ID\"}, e" "$T/out/01-gpu0-leak_keep-s1.0.truth.json"'
check "jobs.tsv: 4 rows with exit codes 3,0,3,3" '[ "$(tail -n +2 "$T/out/jobs.tsv" | cut -f1,4 | sort | tr "\n" " ")" = "01-gpu0-leak_keep-s1.0	3 02-gpu0-kv_plateau-s1.0	0 04-gpu1-leak_keep-loss_graph-s1.0	3 custom.name_1	3 " ]'
# (Parallel lanes: the last check below, from the jobs' own times; the
# run's wall time was checked here once, and a loaded CI machine broke it.)
check "gpu1 lane jobs one after another, the lanes side by side" '"$PYTHON" - "$T/out/jobs.tsv" <<PY
import csv, sys
r = {x["name"]: x for x in csv.DictReader(open(sys.argv[1]), delimiter="\t")}
a, b = r["custom.name_1"], r["04-gpu1-leak_keep-loss_graph-s1.0"]
assert int(a["record_end_ms"]) <= int(b["record_start_ms"]), (a, b)
g0, g1 = r["01-gpu0-leak_keep-s1.0"], r["custom.name_1"]
assert int(g0["workload_start_ms"]) < int(g1["workload_end_ms"]) and int(g1["workload_start_ms"]) < int(g0["workload_end_ms"])
PY'
check "tar holds the output folder" 'tar -tzf "$T/corpus.tar.gz" | grep -q "^out/custom.name_1.truth.json$" && tar -tzf "$T/corpus.tar.gz" | grep -q "^out/summary.txt$"'
check "summary lists jobs" 'grep -q "custom.name_1 *3 *oom" "$T/out/summary.txt"'
check "machine.txt and plan.txt" '[ -s "$T/out/machine.txt" ] && cmp -s "$T/out/plan.txt" "$T/plan"'

# bad plans
bad() { printf '%s\n' "$2" >"$T/bad"; "$RUNNER" --estimate "$T/bad" >"$T/bad.out" 2>&1; r=$? want=$3; check "$1" '[ $r = 2 ] && grep -q "$want" "$T/bad.out"'; }
bad "unknown workload" "gpu0 nosuch --speed 1" "no workload"
bad "bad lane" "cpu0 leak_keep" "is not gpuN"
bad "duplicate name" $'gpu0 leak_keep name=a\ngpu1 kv_plateau name=a' "used twice"
bad "runner owns --truth" "gpu0 leak_keep --truth x" "sets --device and --truth"
bad "empty plan" "# nothing" "no jobs"

# deadline: the second job of each lane would end too late and is skipped
cat >"$T/plan2" <<'PLAN'
gpu0 leak_keep --sleep 1 --seconds 30 est=1
gpu0 kv_plateau --sleep 1 --seconds 30 est=60
PLAN
DEADLINE_S=20 "$RUNNER" "$T/vramwatch" "$T/out2" "$T/plan2" >"$T/run2.log" 2>&1
check "deadline skips a job, still tars" 'grep -q "SKIP 02-gpu0-kv_plateau" "$T/run2.log" && grep -q "skipped" "$T/out2/jobs.tsv" && [ -s "$T/out2.tar.gz" ]'

# Runs the runner on PLAN into OUT in the background, then the shell
# command WAIT, then sends it SIGTERM and gives it 20 s to end; sets rp.
interrupt() {
  local out=$1 plan=$2 wait=$3
  "$RUNNER" "$T/vramwatch" "$out" "$plan" >"$out.log" 2>&1 &
  rp=$!
  eval "$wait"
  kill -TERM $rp
  for _ in $(seq 1 100); do kill -0 $rp 2>/dev/null || break; sleep 0.2; done
}

# interrupted: a hanging workload, SIGTERM to the runner: the workload and
# the recorder are stopped, the tar is made
cat >"$T/plan3" <<'PLAN'
gpu0 leak_keep --hang --seconds 300
gpu0 kv_plateau --sleep 1 --seconds 30
PLAN
interrupt "$T/out3" "$T/plan3" \
  'for _ in $(seq 1 200); do [ -e "$T/out3/01-gpu0-leak_keep-s1.0.log" ] && break; sleep 0.1; done; sleep 1'
check "interrupted run ends" '! kill -0 $rp 2>/dev/null'
check "interrupted run: recorder stopped, tar made, second job not run" 'grep -q "^stop TERM" "$T/out3/01-gpu0-leak_keep-s1.0.jsonl.zst" && [ -s "$T/out3.tar.gz" ] && [ ! -e "$T/out3/02-gpu0-kv_plateau-s1.0.log" ]'
check "interrupted run: no process left" '! pgrep -f "$T/" >/dev/null'

# interrupted in the pre-roll (the recorder started, the workload not yet):
# the workload is never started
cat >"$T/plan4" <<'PLAN'
gpu0 leak_keep --hang --seconds 300
PLAN
PRE_S=4 interrupt "$T/out4" "$T/plan4" \
  'for _ in $(seq 1 200); do [ -s "$T/out4/01-gpu0-leak_keep-s1.0.jsonl.zst" ] && break; sleep 0.1; done'
check "interrupted in the pre-roll: ends, workload never started, tar made" '! kill -0 $rp 2>/dev/null && [ ! -e "$T/out4/01-gpu0-leak_keep-s1.0.log" ] && [ -s "$T/out4.tar.gz" ]'
check "interrupted in the pre-roll: no process left" '! pgrep -f "$T/" >/dev/null'

# interrupted while it starts (before any lane): no lane starts, the tar
# is still made
interrupt "$T/out5" "$T/plan4" "sleep 0.3"
check "interrupted while starting: ends, no workload, tar made" '! kill -0 $rp 2>/dev/null && [ ! -e "$T/out5/01-gpu0-leak_keep-s1.0.log" ] && [ -s "$T/out5.tar.gz" ]'

[ $fail = 0 ] && echo "all runner tests passed" || { echo "runner tests FAILED"; cat "$T/run.log"; }
exit $fail
