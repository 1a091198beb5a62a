#!/usr/bin/env bash
# Usage: scripts/bench-vs-peers.sh OUTDIR [SECONDS] [COLS] [ROWS]
# vramwatch (the dashboard, and `vramwatch record`, which has no UI) against
# `nvidia-smi -l 1`, nvitop and nvtop, in one run: each program alone in a pty
# of the same size (tools/bench/ptybench.py) for SECONDS, one after another,
# ROUNDS times (every other round in the reverse order), so that every
# program is measured under the same workload in the same stretch of time
# without competing with another for the driver and the CPU. Figures: CPU %,
# bytes/s to the terminal, peak RSS, first paint. Run it on a GPU host while
# a known workload runs (tools/bench/gpu_workload.py steady leak sawtooth
# idle=4). A run takes about ROUNDS × programs × (SECONDS + 4) seconds.
# Writes OUTDIR/rN-LABEL-COLSxROWS.{json,raw} (N: the round) and
# OUTDIR/table-COLSxROWS.md, one table per round; with pyte installed, also
# each program's last screen (.screen.txt). Works from any directory. A peer
# that is not installed is skipped with a notice.
# Env: VRAMWATCH (binary, default the repo's target/release/vramwatch),
# VRAMWATCH_ARGS (more arguments for both vramwatch runs, split on spaces:
# "--config FILE", or "--demo" to try the script without a GPU), RECORD (0:
# leave `vramwatch record` out), NVIDIA_SMI, NVITOP, NVTOP (the command of
# each peer, split on spaces; empty to skip; the defaults are skipped when
# not installed), ROUNDS (default 2), PARALLEL (1: a round's programs all at
# once, as this script used to; they then compete), PTYBENCH (ptybench.py,
# default the repo's tools/bench/ptybench.py), BENCH_TERM (TERM inside the
# pty, default xterm-256color), DRY_RUN (1: print what would run and stop).
set -uo pipefail
OUT=${1:?usage: bench-vs-peers.sh OUTDIR [SECONDS] [COLS] [ROWS]}
SECS=${2:-30}
COLS=${3:-120}
ROWS=${4:-40}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
VW=${VRAMWATCH:-$ROOT/target/release/vramwatch}
read -ra VW_ARGS <<<"${VRAMWATCH_ARGS:-}"
PTY=${PTYBENCH:-$ROOT/tools/bench/ptybench.py}
TABLE=$HERE/peer_table.py
ROUNDS=${ROUNDS:-2}
PARALLEL=${PARALLEL:-0}
DRY_RUN=${DRY_RUN:-0}
RECORD=${RECORD:-1}
NVIDIA_SMI=${NVIDIA_SMI-nvidia-smi -l 1}
NVITOP=${NVITOP-python3 -m nvitop --interval 1}
NVTOP=${NVTOP-nvtop -d 10}
say() { echo "bench-vs-peers.sh: $*" >&2; }

case $ROUNDS in '' | *[!0-9]* | 0) say "ROUNDS must be a whole number from 1, not '$ROUNDS'"; exit 2 ;; esac
[ -f "$PTY" ] || { say "no ptybench.py at $PTY"; exit 2; }
[ -f "$TABLE" ] || { say "no peer_table.py at $TABLE"; exit 2; }
[ -x "$VW" ] || command -v "$VW" >/dev/null || { say "no vramwatch at $VW (cargo build --release?)"; exit 2; }

# A peer is skipped, with a notice, when its program is not installed.
if [ "$NVITOP" = "python3 -m nvitop --interval 1" ] && ! python3 -c "import nvitop" 2>/dev/null; then
  say "nvitop is not installed (pip install nvitop); measuring without it"
  NVITOP=
fi
peer() { # label, command: the command, or nothing when it is empty or missing
  local words
  read -ra words <<<"$2"
  if [ ${#words[@]} -eq 0 ]; then
    return
  fi
  if ! command -v "${words[0]}" >/dev/null; then
    say "$1: '${words[0]}' is not installed; measuring without it"
    return
  fi
  echo "$2"
}
NVIDIA_SMI=$(peer "nvidia-smi" "$NVIDIA_SMI")
NVITOP=$(peer "nvitop" "$NVITOP")
NVTOP=$(peer "nvtop" "$NVTOP")

# The programs, vramwatch's dashboard first (peer_table.py compares it with
# each of the others).
labels=("vramwatch")
[ "$RECORD" = 0 ] || labels+=("vramwatch record")
[ -z "$NVIDIA_SMI" ] || labels+=("nvidia-smi -l 1")
[ -z "$NVITOP" ] || labels+=("nvitop")
[ -z "$NVTOP" ] || labels+=("nvtop")

tag="${COLS}x${ROWS}"
file_of() { # round, label: the path of its results, without extension
  echo "$OUT/r$1-$(echo "$2" | tr ' /' '__')-$tag"
}
command_of() { # round, label: sets CMD
  case $2 in
    "vramwatch") CMD=("$VW" "${VW_ARGS[@]}") ;;
    "vramwatch record") CMD=("$VW" record "${VW_ARGS[@]}" --force -o "$(file_of "$1" "$2").jsonl.zst") ;;
    "nvidia-smi -l 1") read -ra CMD <<<"$NVIDIA_SMI" ;;
    "nvitop") read -ra CMD <<<"$NVITOP" ;;
    "nvtop") read -ra CMD <<<"$NVTOP" ;;
  esac
}
bench() { # round, label
  local file
  file=$(file_of "$1" "$2")
  command_of "$1" "$2"
  if [ "$DRY_RUN" = 1 ]; then
    echo "round $1: ${CMD[*]}"
    return
  fi
  python3 "$PTY" --cols "$COLS" --rows "$ROWS" --seconds "$SECS" --warmup 3 \
    --label "$2" --save "$file.raw" -- "${CMD[@]}" >"$file.json"
}

[ "$DRY_RUN" = 1 ] || mkdir -p "$OUT"
for ((r = 1; r <= ROUNDS; r++)); do
  order=("${labels[@]}")
  if ((r % 2 == 0)); then
    order=()
    for ((i = ${#labels[@]} - 1; i >= 0; i--)); do order+=("${labels[i]}"); done
  fi
  [ "$DRY_RUN" = 1 ] || say "round $r of $ROUNDS: ${order[*]}"
  for label in "${order[@]}"; do
    if [ "$PARALLEL" = 1 ]; then
      bench "$r" "$label" &
    else
      bench "$r" "$label"
    fi
  done
  wait
done
[ "$DRY_RUN" = 1 ] && exit 0

{
  echo "Each program alone in a ${COLS}×${ROWS} pty for ${SECS} s, $ROUNDS rounds$([ "$PARALLEL" = 1 ] && echo ", a round's programs at once")."
  for ((r = 1; r <= ROUNDS; r++)); do
    files=()
    for label in "${labels[@]}"; do files+=("$(file_of "$r" "$label").json"); done
    echo
    echo "### Round $r"
    echo
    python3 "$TABLE" "${files[@]}"
  done
} | tee "$OUT/table-$tag.md"
if python3 -c "import pyte" 2>/dev/null; then
  for raw in "$OUT"/r*-"$tag".raw; do
    python3 "$HERE/render_screen.py" "$raw" "$COLS" "$ROWS" >"${raw%.raw}.screen.txt"
  done
fi
