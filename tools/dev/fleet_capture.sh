#!/usr/bin/env bash
# Captures the `vramwatch fleet` screens of assets/fleet-*-120x40.txt from
# real processes: three `vramwatch serve --demo SCENARIO` targets, a real
# Prometheus scraping them every second, and `vramwatch fleet` in a 120x40
# tmux pane (`tmux capture-pane -p`, so plain text, trailing blanks trimmed).
#
#   cargo build --release && tools/dev/fleet_capture.sh
#
# Needs `prometheus` (Debian's package: 2.42) and `tmux` on PATH, plus curl
# and python3 (a free port). Environment:
#   VRAMWATCH  the binary (default target/release/vramwatch)
#   OUT_DIR    where the captures go (default assets/)
#   WARMUP     seconds of scraping before the first capture (default 240:
#              the drill-down's sparklines span ten minutes, 60 steps of
#              10 s in about 22 columns at 120 wide, so 240 s fills about 9)
#
# The targets are the same as in tests/it/fleet.rs: `serve --demo` on
# 127.0.0.1:0 (the address is read from its first line on stderr). Every
# demo target names itself `Hostname="sim-node"` (`serve` has no option for
# the host name, only for the label's name: `[serve] hostname_label`), so,
# as docs/fleet.md advises, Prometheus gives each target a `host` label:
#
#   gpu-node-1  --demo demo      4 GPUs, training, a leak, inference, spikes
#   gpu-node-2  --demo training  1 GPU, data-parallel training
#   gpu-node-3  --demo crowded   8 GPUs, 300 processes of many users
#
# Then: the hosts (hosts), Enter on gpu-node-1 (drilldown), Tab to the
# processes (processes); back to the hosts, Prometheus stopped (SIGTERM) and
# the fleet captured 12 s later (prometheus-gone); Prometheus started again
# on the same port and data dir, `r`, and the fleet captured as soon as its
# status line has no failure any more (prometheus-back). Every process
# started here is stopped on exit (trap), and the scratch dir removed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${VRAMWATCH:-$ROOT/target/release/vramwatch}
OUT_DIR=${OUT_DIR:-$ROOT/assets}
WARMUP=${WARMUP:-240}
COLS=120
ROWS=40

for tool in prometheus tmux curl python3; do
    command -v "$tool" >/dev/null || { echo "fleet_capture: needs $tool" >&2; exit 1; }
done
[ -x "$BIN" ] || { echo "fleet_capture: no $BIN (cargo build --release)" >&2; exit 1; }
mkdir -p "$OUT_DIR"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vw-fleet-capture.XXXXXX")
SOCK="vw-fleet-capture-$$"
TARGET_PIDS=()
PROM_PID=

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    tmux -L "$SOCK" kill-server 2>/dev/null || true
    [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null || true
    for p in "${TARGET_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -n "$PROM_PID" ] && wait "$PROM_PID" 2>/dev/null || true
    for p in "${TARGET_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    if [ "$rc" -ne 0 ] && [ -f "$WORK/prometheus.log" ]; then
        echo "fleet_capture: failed; Prometheus's log ends:" >&2
        tail -n 5 "$WORK/prometheus.log" >&2
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say() { printf '%s fleet_capture: %s\n' "$(date +%T)" "$*" >&2; }

# No user config anywhere: the default keys, thresholds and theme.
export HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/.config"
mkdir -p "$HOME"

# `serve --demo SCENARIO` on a free port; its address in $ADDR.
start_target() {
    local scenario=$1 err="$WORK/serve-$1.err"
    : >"$err"
    "$BIN" serve --demo "$scenario" --interval 1s --listen 127.0.0.1:0 \
        </dev/null >/dev/null 2>>"$err" &
    TARGET_PIDS+=("$!")
    local i addr=
    for ((i = 0; i < 100; i++)); do
        addr=$(sed -n 's|.*http://\([^/ ]*\).*|\1|p' "$err" | head -n 1)
        [ -n "$addr" ] && break
        sleep 0.1
    done
    [ -n "$addr" ] || { echo "fleet_capture: serve --demo $scenario: $(cat "$err")" >&2; exit 1; }
    ADDR=$addr
}

start_target demo; A=$ADDR
start_target training; B=$ADDR
start_target crowded; C=$ADDR
say "targets: gpu-node-1 $A (demo), gpu-node-2 $B (training), gpu-node-3 $C (crowded)"

PROM_ADDR="127.0.0.1:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat >"$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gpu
    static_configs:
      - targets: ['$A']
        labels: {host: gpu-node-1}
      - targets: ['$B']
        labels: {host: gpu-node-2}
      - targets: ['$C']
        labels: {host: gpu-node-3}
EOF

start_prometheus() {
    prometheus --config.file="$WORK/prometheus.yml" \
        --storage.tsdb.path="$WORK/data" \
        --web.listen-address="$PROM_ADDR" \
        </dev/null >/dev/null 2>>"$WORK/prometheus.log" &
    PROM_PID=$!
    local i
    for ((i = 0; i < 300; i++)); do
        curl -sf "http://$PROM_ADDR/-/ready" >/dev/null 2>&1 && return 0
        kill -0 "$PROM_PID" 2>/dev/null || { echo "fleet_capture: Prometheus exited" >&2; exit 1; }
        sleep 0.1
    done
    echo "fleet_capture: Prometheus not ready in 30 s" >&2
    exit 1
}

stop_prometheus() {
    kill "$PROM_PID"
    wait "$PROM_PID" 2>/dev/null || true
    PROM_PID=
}

start_prometheus
say "Prometheus on $PROM_ADDR"

# Until the fleet itself sees the three hosts up.
for ((i = 0; ; i++)); do
    up=$("$BIN" fleet --prometheus "http://$PROM_ADDR" --selector '{job="gpu"}' --once --json 2>/dev/null \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["summary"]["hosts_up"])' 2>/dev/null || true)
    [ "$up" = 3 ] && break
    [ "$i" -lt 60 ] || { echo "fleet_capture: the three hosts are not up after 30 s" >&2; exit 1; }
    sleep 0.5
done
say "three hosts up; scraping for ${WARMUP}s"
sleep "$WARMUP"

# The fleet in a 120x40 pane, with a clean environment.
cat >"$WORK/fleet.sh" <<EOF
#!/bin/sh
exec env -i PATH="$PATH" HOME="$HOME" XDG_CONFIG_HOME="$XDG_CONFIG_HOME" TERM=xterm-256color \\
    "$BIN" fleet --prometheus "http://$PROM_ADDR" --selector '{job="gpu"}' --interval 2s
EOF
chmod +x "$WORK/fleet.sh"
tmux -L "$SOCK" -f /dev/null new-session -d -s fleet -x "$COLS" -y "$ROWS" "$WORK/fleet.sh; sleep 600"

pane() { tmux -L "$SOCK" capture-pane -p -t fleet; }
keys() { tmux -L "$SOCK" send-keys -t fleet "$@"; }

# Waits (up to $2 s, default 20) until the pane matches the regex $1.
wait_for() {
    local re=$1 limit=$(( ${2:-20} * 10 )) i
    for ((i = 0; i < limit; i++)); do
        pane | grep -Eq -- "$re" && return 0
        sleep 0.1
    done
    echo "fleet_capture: no /$re/ on screen:" >&2
    pane >&2
    exit 1
}

# Saves the pane as $OUT_DIR/fleet-$1-120x40.txt.
capture() {
    pane >"$OUT_DIR/fleet-$1-${COLS}x${ROWS}.txt"
    say "captured fleet-$1-${COLS}x${ROWS}.txt"
}

# Each screen after two refreshes of it (the interval is 2 s).
wait_for 'gpu-node-3'
sleep 5
capture hosts

# Enter on gpu-node-1: filter the hosts to it (`/`), open it; then Esc
# closes it and Esc clears the filter.
keys / g p u - n o d e - 1 Enter
sleep 1
keys Enter
wait_for '^ +3 H200 '
sleep 5
capture drilldown

keys Escape
sleep 0.5
keys Escape
sleep 0.5
keys Tab
wait_for '^HOST +GPU +PID '
sleep 5
capture processes

# Back to the hosts (Tab: processes, events, hosts).
keys Tab
sleep 0.5
keys Tab
sleep 3
stop_prometheus
say "Prometheus stopped"
sleep 12
capture prometheus-gone

# `r` rather than waiting out the fleet's backoff; the first good refresh
# is captured at once: Prometheus is back, but it scrapes again only ~5 s
# after it is ready, so the hosts still show the gap (`stale 20s`).
start_prometheus
say "Prometheus started again"
keys r
wait_for 'data [0-9.]+[a-z]+ ago \(' 30
capture prometheus-back
keys q
