#!/usr/bin/env bash
# Second step of h200-run.sh: waits for the 10-minute recording to finish and
# reports the per-GPU sample timing (max lag of one GPU behind the round).
set -uo pipefail
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
VW=$PWD/target/release/vramwatch
for _ in $(seq 1 120); do
  pgrep -f "vramwatch record -o /tmp/h200-10min" >/dev/null || break
  sleep 2
done
ls -la /tmp/h200-10min* 2>&1
cp /tmp/h200-10min.jsonl.zst "$OUT/" 2>/dev/null
"$VW" report /tmp/h200-10min.jsonl.zst >"$OUT/report-10min.txt" 2>&1
"$VW" export /tmp/h200-10min.jsonl.zst --csv -o "$OUT/gpus-10min.csv" 2>&1
python3 - "$OUT/gpus-10min.csv" <<'PY' | tee "$OUT/lag-10min.txt"
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
lag = collections.defaultdict(list)
for r in rows:
    if r.get("lag_ms") not in (None, ""):
        lag[r["gpu"]].append(int(r["lag_ms"]))
for g, v in sorted(lag.items()):
    v.sort()
    print(f"GPU {g}: {len(v)} samples, lag ms p50 {v[len(v)//2]}, p99 {v[int(len(v)*0.99)]}, max {v[-1]}")
PY
cat "$OUT/report-10min.txt"
