# Shared by the h200-*.sh scripts; sourced once OUT, VW, B (the copy of
# ../shared/bench with wheels/) and S (this folder) are set.

export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site "$B"/wheels/*.whl
export PYTHONPATH=/tmp/site:$PWD/python
mkdir -p "$OUT/pty"
t0=$(date +%s)

# A timestamped heading in the log.
at() { echo "== [$(($(date +%s) - t0))s] $*"; }

# label cols rows seconds cmd...: one program in a pty of that size for that
# long; its figures in $OUT/pty/LABEL-COLSxROWS.json (also printed) and its
# raw terminal output beside them (.raw).
pty() {
  local label=$1 c=$2 r=$3 s=$4; shift 4
  python3 "$B/ptybench.py" --cols "$c" --rows "$r" --seconds "$s" --warmup 3 --label "$label" \
    --save "$OUT/pty/$label-${c}x$r.raw" -- "$@" >"$OUT/pty/$label-${c}x$r.json"
  cat "$OUT/pty/$label-${c}x$r.json"
}

# nvidia-smi's view of memory, per GPU and per process.
smi() {
  echo "#gpus"
  nvidia-smi --query-gpu=index,uuid,memory.used,memory.reserved,memory.total,memory.free --format=csv,noheader,nounits
  echo "#apps"
  nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits
}

# `vramwatch serve`'s /metrics between two nvidia-smi reads, compared by
# gpu_compare.py (before/after rule) into $OUT/metrics-check.txt.
metrics_vs_smi() {
  "$VW" serve --listen 127.0.0.1:9400 >"$OUT/serve.log" 2>&1 &
  local serve=$!
  sleep 3
  smi >"$OUT/m-a.csv"
  python3 -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:9400/metrics").read().decode())' >"$OUT/metrics.txt"
  smi >"$OUT/m-b.csv"
  python3 "$S/gpu_compare.py" "$OUT/m-a.csv" "$OUT/metrics.txt" "$OUT/m-b.csv" >"$OUT/metrics-check.txt" 2>&1
  echo "exit $?" >>"$OUT/metrics-check.txt"
  kill "$serve"
}
