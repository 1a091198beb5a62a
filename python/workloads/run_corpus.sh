#!/usr/bin/env bash
# Runs a plan of workloads while `vramwatch record` records each one.
#
#   run_corpus.sh BIN OUTDIR PLANFILE [TARFILE]
#   run_corpus.sh --estimate PLANFILE          # print the budget and exit
#
# BIN       the vramwatch binary
# OUTDIR    where the recordings, truths and logs go (created)
# PLANFILE  one job a line:  LANE WORKLOAD [ARGS...] [est=SECONDS] [name=NAME]
#             LANE      gpuN: the job runs on CUDA device N (NVML order)
#             WORKLOAD  a program of this folder (leak_keep, kv_plateau, ...)
#             ARGS      passed on (--speed 2 --seconds 90 --variant x ...);
#                       --device and --truth are added by the runner
#             est=S     expected wall time of the workload, for the budget
#                       (default: its --seconds, else 150)
#             name=N    job name (default NN-LANE-WORKLOAD[-VARIANT]-sSPEED)
#           '#' starts a comment. Lanes run in parallel, the jobs of a lane
#           one after another.
# TARFILE   OUTDIR is packed into this file at the end (default OUTDIR.tar.gz)
#
# Per job: the recorder starts PRE_S (3) s before the workload and is
# stopped (SIGTERM, then SIGKILL if it hangs 15 s) POST_S (5) s after the
# workload exits; then GAP_S (1) s of idle. Files, for job NAME:
#   NAME.jsonl.zst    the recording (all GPUs; the truth says which one)
#   NAME.truth.json   the ground truth the workload wrote
#   NAME.log          the workload's stdout and stderr (JSON lines)
#   NAME.record.log   the recorder's stderr
# plus jobs.tsv (one row per job: times, exit codes), machine.txt, plan.txt.
#
# Environment: PYTHON (python3), PRE_S, POST_S, GAP_S, INTERVAL (1s),
# GRACE_S (20: seconds past --seconds before a workload is killed),
# BUDGET_S (540: warn when a lane's estimate is longer), DEADLINE_S (0 =
# none: skip jobs that would end later than this many seconds after the
# start, so the tar is always made), EXTRA_ARGS (appended to every
# workload, e.g. --dry-run), WORKLOADS_DIR (this folder), FOLD_LANES=1 (run
# the jobs of a lane whose GPU does not exist on GPU N mod count).
#
# Never changes clocks, power limits, persistence, compute mode or MIG and
# never resets a GPU: nvidia-smi is only asked questions.

set -u
set -o pipefail

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_DEVICE_ORDER=PCI_BUS_ID PYTHONUNBUFFERED=1

HERE=$(cd "$(dirname "$0")" && pwd)
WORKLOADS_DIR=${WORKLOADS_DIR:-$HERE}
PYTHON=${PYTHON:-python3}
PRE_S=${PRE_S:-3}
POST_S=${POST_S:-5}
GAP_S=${GAP_S:-1}
INTERVAL=${INTERVAL:-1s}
GRACE_S=${GRACE_S:-20}
BUDGET_S=${BUDGET_S:-540}
DEADLINE_S=${DEADLINE_S:-0}
EXTRA_ARGS=${EXTRA_ARGS:-}
DEFAULT_SECONDS=150

die() { echo "run_corpus: $*" >&2; exit 2; }
now_ms() { date +%s%3N; }
log() { echo "[$(date +%H:%M:%S)] $*"; }

ESTIMATE_ONLY=0
if [ "${1:-}" = "--estimate" ]; then
  ESTIMATE_ONLY=1
  [ $# -eq 2 ] || die "usage: run_corpus.sh --estimate PLANFILE"
  PLAN=$2
else
  [ $# -ge 3 ] && [ $# -le 4 ] || die "usage: run_corpus.sh BIN OUTDIR PLANFILE [TARFILE]"
  BIN=$1
  OUTDIR=$2
  PLAN=$3
  OUTDIR=${OUTDIR%/}
  TARFILE=${4:-$OUTDIR.tar.gz}
  [ -x "$BIN" ] || die "$BIN is not an executable"
fi
[ -r "$PLAN" ] || die "cannot read the plan $PLAN"

# ---------------------------------------------------------------- the plan
# Parsed into parallel arrays, one entry per job.
J_LANE=() J_DEV=() J_WL=() J_ARGS=() J_NAME=() J_EST=() J_SECS=()

GPU_COUNT=
if [ "$ESTIMATE_ONLY" = 0 ] && command -v nvidia-smi >/dev/null 2>&1; then
  GPU_COUNT=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi

arg_value() { # arg_value --flag ARGS... : the value after --flag (or --flag=value)
  local flag=$1; shift
  local prev=
  for t in "$@"; do
    if [ "$prev" = "$flag" ]; then echo "$t"; return; fi
    case $t in "$flag="*) echo "${t#*=}"; return ;; esac
    prev=$t
  done
}

lineno=0
idx=0
declare -A SEEN=()
while IFS= read -r raw || [ -n "$raw" ]; do
  lineno=$((lineno + 1))
  line=${raw%%#*}
  read -r -a tok <<<"$line"
  [ ${#tok[@]} -eq 0 ] && continue
  [ ${#tok[@]} -ge 2 ] || die "$PLAN:$lineno: expected LANE WORKLOAD [ARGS...]"
  lane=${tok[0]}
  wl=${tok[1]}
  [[ $lane =~ ^gpu([0-9]+)$ ]] || die "$PLAN:$lineno: lane '$lane' is not gpuN"
  dev=${BASH_REMATCH[1]}
  [[ $wl =~ ^[A-Za-z0-9_]+$ ]] && [ -f "$WORKLOADS_DIR/$wl.py" ] || die "$PLAN:$lineno: no workload '$wl' in $WORKLOADS_DIR"
  args=() est= name=
  for t in "${tok[@]:2}"; do
    case $t in
      est=*) est=${t#est=} ;;
      name=*) name=${t#name=} ;;
      --device|--device=*|--truth|--truth=*) die "$PLAN:$lineno: the runner sets --device and --truth" ;;
      *) args+=("$t") ;;
    esac
  done
  secs=$(arg_value --seconds "${args[@]}")
  secs=${secs:-$DEFAULT_SECONDS}
  [[ $secs =~ ^[0-9]+([.][0-9]+)?$ ]] || die "$PLAN:$lineno: --seconds '$secs' is not a number"
  est=${est:-$secs}
  [[ $est =~ ^[0-9]+([.][0-9]+)?$ ]] || die "$PLAN:$lineno: est '$est' is not a number"
  idx=$((idx + 1))
  if [ -z "$name" ]; then
    variant=$(arg_value --variant "${args[@]}")
    speed=$(arg_value --speed "${args[@]}")
    name=$(printf '%02d' "$idx")-$lane-$wl${variant:+-$variant}-s${speed:-1.0}
  fi
  name=$(printf '%s' "$name" | tr -c 'A-Za-z0-9._-' '_')
  [ -z "${SEEN[$name]:-}" ] || die "$PLAN:$lineno: job name '$name' is used twice"
  SEEN[$name]=1
  if [ -n "$GPU_COUNT" ] && [ "$dev" -ge "$GPU_COUNT" ]; then
    if [ "${FOLD_LANES:-0}" = 1 ] && [ "$GPU_COUNT" -gt 0 ]; then
      dev=$((dev % GPU_COUNT))
      lane=gpu$dev
    else
      die "$PLAN:$lineno: $lane but this machine has $GPU_COUNT GPU(s) (FOLD_LANES=1 runs it on GPU N mod count)"
    fi
  fi
  J_LANE+=("$lane") J_DEV+=("$dev") J_WL+=("$wl") J_NAME+=("$name") J_EST+=("$est") J_SECS+=("$secs")
  J_ARGS+=("${args[*]}")
done <"$PLAN"
[ ${#J_NAME[@]} -gt 0 ] || die "$PLAN holds no jobs"
LANES=($(printf '%s\n' "${J_LANE[@]}" | sort -u -V))

# ---------------------------------------------------------------- budget
# Per job: PRE + est + POST + GAP + ~1 s to stop the recorder.
budget() {
  local worst=0 worst_lane=
  printf '%-6s %-44s %6s %6s  %s\n' lane job est max args
  for i in "${!J_NAME[@]}"; do
    printf '%-6s %-44s %6s %6s  %s\n' "${J_LANE[$i]}" "${J_NAME[$i]}" "${J_EST[$i]}" "${J_SECS[$i]}" "${J_ARGS[$i]}"
  done
  for lane in "${LANES[@]}"; do
    local e=0 m=0 n=0
    for i in "${!J_NAME[@]}"; do
      [ "${J_LANE[$i]}" = "$lane" ] || continue
      n=$((n + 1))
      e=$(awk -v a="$e" -v b="${J_EST[$i]}" -v o="$((PRE_S + POST_S + GAP_S + 1))" 'BEGIN{printf "%d", a + b + o}')
      m=$(awk -v a="$m" -v b="${J_SECS[$i]}" -v o="$((PRE_S + POST_S + GAP_S + 1 + GRACE_S))" 'BEGIN{printf "%d", a + b + o}')
    done
    printf 'budget %s: %d jobs, expected %d s (%dm%02ds), at most %d s if every job ran to its --seconds (+%d s grace)\n' \
      "$lane" "$n" "$e" $((e / 60)) $((e % 60)) "$m" "$GRACE_S"
    if [ "$e" -gt "$worst" ]; then worst=$e; worst_lane=$lane; fi
  done
  printf 'budget: expected wall time %d s (%dm%02ds, lane %s) + the tar\n' "$worst" $((worst / 60)) $((worst % 60)) "$worst_lane"
  if [ "$worst" -gt "$BUDGET_S" ]; then
    echo "budget: WARNING: longer than BUDGET_S=$BUDGET_S s" >&2
  fi
}
budget
[ "$ESTIMATE_ONLY" = 1 ] && exit 0

# ---------------------------------------------------------------- run
# A signal from here on stops the lanes (or keeps them from starting) and
# still leaves the summary and the tar.
LANE_PIDS=()
INTERRUPTED=0
on_signal() {
  INTERRUPTED=1
  log "interrupted: stopping the lanes"
  for p in "${LANE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
}
trap on_signal INT TERM

mkdir -p "$OUTDIR" || die "cannot create $OUTDIR"
T0=$(date +%s)
cp "$PLAN" "$OUTDIR/plan.txt"
{
  echo "# run_corpus.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "# plan $PLAN; PRE_S=$PRE_S POST_S=$POST_S GAP_S=$GAP_S INTERVAL=$INTERVAL EXTRA_ARGS=$EXTRA_ARGS"
  "$BIN" --version 2>&1 | head -1
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>&1
    nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,driver_version --format=csv 2>&1
  fi
  "$PYTHON" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())' 2>&1
} >"$OUTDIR/machine.txt"
printf 'name\tlane\tworkload\trc\trecorder_rc\tworkload_start_ms\tworkload_end_ms\trecord_start_ms\trecord_end_ms\targs\n' >"$OUTDIR/jobs.tsv"

# SIGTERM (vramwatch record writes what it has and exits; SIGINT would be
# ignored by a program started in the background of a script), up to 15 s
# to finish, then SIGKILL. Returns the recorder's exit status.
stop_recorder() {
  local pid=$1 k
  kill -TERM "$pid" 2>/dev/null
  for k in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    log "WARNING: recorder $pid still running 15 s after SIGTERM: SIGKILL"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
}

run_lane() {
  local lane=$1
  local stopped=0 wpid= recpid=
  trap 'stopped=1; [ -n "$wpid" ] && kill -TERM $wpid 2>/dev/null' TERM INT
  for i in "${!J_NAME[@]}"; do
    [ "${J_LANE[$i]}" = "$lane" ] || continue
    [ "$stopped" = 1 ] && break
    local name=${J_NAME[$i]} dev=${J_DEV[$i]} wl=${J_WL[$i]} est=${J_EST[$i]} secs=${J_SECS[$i]}
    local -a args
    read -r -a args <<<"${J_ARGS[$i]}"
    if [ "$DEADLINE_S" != 0 ]; then
      local end_est
      end_est=$(awk -v n="$(( $(date +%s) - T0 ))" -v e="$est" -v o="$((PRE_S + POST_S + 1))" 'BEGIN{printf "%d", n + e + o}')
      if [ "$end_est" -gt "$DEADLINE_S" ]; then
        log "$lane: SKIP $name (would end at ~${end_est}s > DEADLINE_S=$DEADLINE_S)"
        printf '%s\t%s\t%s\tskipped\t-\t-\t-\t-\t-\t%s\n' "$name" "$lane" "$wl" "${args[*]}" >>"$OUTDIR/jobs.tsv"
        continue
      fi
    fi
    local rec="$OUTDIR/$name.jsonl.zst" truth="$OUTDIR/$name.truth.json" wlog="$OUTDIR/$name.log"
    local rs re ws we rc rrc
    rs=$(now_ms)
    "$BIN" record -o "$rec" --interval "$INTERVAL" --force >"$OUTDIR/$name.record.log" 2>&1 &
    recpid=$!
    sleep "$PRE_S"
    # a signal during the pre-roll: do not start the workload
    if [ "$stopped" = 1 ]; then
      stop_recorder "$recpid"
      recpid=
      break
    fi
    kill -0 "$recpid" 2>/dev/null || log "$lane: WARNING the recorder for $name is not running (see $name.record.log)"
    log "$lane: start $name: $wl --device $dev ${args[*]} $EXTRA_ARGS"
    ws=$(now_ms)
    # shellcheck disable=SC2086
    timeout --signal=TERM --kill-after=15 "$(awk -v s="$secs" -v g="$GRACE_S" 'BEGIN{printf "%d", s + g}')" \
      "$PYTHON" "$WORKLOADS_DIR/$wl.py" --device "$dev" --truth "$truth" "${args[@]}" $EXTRA_ARGS >"$wlog" 2>&1 &
    wpid=$!
    wait "$wpid"
    rc=$?
    # a signal to the lane interrupts `wait`: wait for the workload to go
    while kill -0 "$wpid" 2>/dev/null; do wait "$wpid"; rc=$?; done
    wpid=
    we=$(now_ms)
    log "$lane: end $name: exit $rc after $(( (we - ws) / 1000 )) s$( [ -f "$truth" ] || echo ' (NO TRUTH FILE)')"
    [ "$stopped" = 1 ] || sleep "$POST_S"
    stop_recorder "$recpid"
    rrc=$?
    recpid=
    re=$(now_ms)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$lane" "$wl" "$rc" "$rrc" "$ws" "$we" "$rs" "$re" "${args[*]}" >>"$OUTDIR/jobs.tsv"
    [ "$stopped" = 1 ] || sleep "$GAP_S"
  done
}

for lane in "${LANES[@]}"; do
  [ "$INTERRUPTED" = 1 ] && break
  run_lane "$lane" &
  LANE_PIDS+=($!)
done
for p in "${LANE_PIDS[@]}"; do
  while kill -0 "$p" 2>/dev/null; do wait "$p"; done
done
trap - INT TERM

# ---------------------------------------------------------------- summary, tar
{
  printf '%-44s %-5s %-16s %-10s %-24s %s\n' job rc outcome expect oom_after_start_s growth_start_s
  "$PYTHON" - "$OUTDIR" <<'EOF' 2>&1
import csv, json, os, sys
out = sys.argv[1]
with open(os.path.join(out, "jobs.tsv")) as f:
    for r in csv.DictReader(f, delimiter="\t"):
        t = {}
        try:
            with open(os.path.join(out, r["name"] + ".truth.json")) as g:
                t = json.load(g)
        except (OSError, ValueError):
            pass
        s = t.get("start_unix_ms")
        rel = lambda k: "-" if not (s and t.get(k)) else f"{(t[k] - s) / 1000:.1f}"
        print(f'{r["name"]:<44} {r["rc"]:<5} {t.get("outcome", "-"):<16} {t.get("expect", "-"):<10} {rel("oom_unix_ms"):<24} {rel("growth_start_unix_ms")}')
EOF
} | tee "$OUTDIR/summary.txt"
log "total $(( $(date +%s) - T0 )) s; packing $OUTDIR into $TARFILE"
tar -C "$(dirname "$OUTDIR")" -czf "$TARFILE" "$(basename "$OUTDIR")" && ls -l "$TARFILE"
