#!/usr/bin/env bash
# Several brokers on one machine's cores: does shard spinning
# (shard.spin.before.park.us) starve the other brokers? For each spin value,
# starts BROKERS brokers of 2 shards each on this machine, drives one with
# the load generator (e2e, fixed rate), and measures (a) how long another
# broker takes to start while that runs, and (b) the driven broker's
# end-to-end latency. Side by side, same run.
#
# Usage: tuning/shared-cores.sh [--brokers N] [--spins "50 0"] [--rate R] [--skip-build]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
BROKERS=3; SPINS="50 0"; RATE=20000; BUILD=1
while [ $# -gt 0 ]; do
  case $1 in
    --brokers) BROKERS=$2; shift 2 ;;
    --spins) SPINS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --skip-build) BUILD=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$BUILD" = 1 ] && (cd "$REPO" && cargo build --release -p pinlog -p pinlog-loadgen --bins >/dev/null)
BIN=$REPO/target/release/pinlog
LOADGEN=$REPO/target/release/pinlog-loadgen
WORK=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  local port=$1 start; start=$(date +%s%N)
  for _ in $(seq 600); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
    sleep 0.05
  done
  echo $(( ($(date +%s%N) - start) / 1000000 ))
}
start_broker() { # name spin -> port
  local name=$1 spin=$2 port; port=$(free_port)
  printf '"shard.spin.before.park.us" = %s\n"metrics.listen" = "127.0.0.1:0"\n' "$spin" > "$WORK/$name.toml"
  NO_COLOR=1 "$BIN" serve --data-dir "$WORK/$name" --listen "127.0.0.1:$port" --shards 2 \
    --config "$WORK/$name.toml" > "$WORK/$name.log" 2>&1 &
  pids+=($!)
  echo "$port"
}
echo "| spin (us) | brokers | start of another broker under load (ms) | e2e p50 (ms) | e2e p99 (ms) | e2e p99.9 (ms) |"
echo "|---|---|---|---|---|---|"
for spin in $SPINS; do
  ports=()
  for i in $(seq 1 $((BROKERS - 1))); do
    p=$(start_broker "s$spin-b$i" "$spin"); wait_port "$p" >/dev/null; ports+=("$p")
  done
  "$LOADGEN" e2e --bootstrap "127.0.0.1:${ports[0]}" --topic shared --partitions 6 --rate "$RATE" \
    --record-size 1024 --duration 20s --json -q > "$WORK/e2e-$spin.json" 2>/dev/null &
  lg=$!
  sleep 5
  p=$(start_broker "s$spin-late" "$spin")
  started_ms=$(wait_port "$p")
  wait "$lg"
  read -r p50 p99 p999 < <(python3 -c "
import json
l = json.load(open('$WORK/e2e-$spin.json'))['latency_us']
print(*(f'{l[k] / 1000:.1f}' for k in ('p50', 'p99', 'p999')))")
  echo "| $spin | $BROKERS | $started_ms | $p50 | $p99 | $p999 |"
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  pids=()
done
