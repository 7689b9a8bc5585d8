#!/usr/bin/env bash
# Controller failover time: kill -9 of the active controller to the first
# successful CreateTopics through a surviving node, on a 3-node cluster of
# combined nodes on this machine. Repeats RUNS times (restarting the killed
# node and waiting until it is live again between runs) and prints each
# time and the median.
#
# The default timeouts are Kafka's (controller.quorum.fetch.timeout.ms 2000,
# controller.quorum.election.timeout.ms 1000); --fast uses the test
# clusters' (1000 and 500). --sigterm stops the active controller cleanly
# instead (a rolling restart's step): it hands the quorum's leadership to
# another voter before it goes, and the time is then SIGTERM to the first
# successful CreateTopics.
#
# Usage: tuning/failover.sh [--runs N] [--fast] [--sigterm] [--skip-build]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
RUNS=10; FETCH=2000; ELECTION=1000; BUILD=1; SIGNAL=KILL
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --fast) FETCH=1000; ELECTION=500; shift ;;
    --sigterm) SIGNAL=TERM; shift ;;
    --skip-build) BUILD=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$BUILD" = 1 ] && (cd "$REPO" && cargo build --release -p pinlog --bins >/dev/null)
BIN=$REPO/target/release/pinlog
WORK=$(mktemp -d)
declare -A pid
cleanup() { for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A client ctl
for i in 1 2 3; do client[$i]=$(free_port); ctl[$i]=$(free_port); done
VOTERS="1@127.0.0.1:${ctl[1]},2@127.0.0.1:${ctl[2]},3@127.0.0.1:${ctl[3]}"
start() { # node id
  local i=$1
  cat > "$WORK/n$i.toml" <<EOF
"shard.spin.before.park.us" = 0
"metrics.listen" = "127.0.0.1:0"
"controller.quorum.fetch.timeout.ms" = $FETCH
"controller.quorum.election.timeout.ms" = $ELECTION
EOF
  NO_COLOR=1 "$BIN" serve --node-id "$i" --controller-quorum-voters "$VOTERS" \
    --listen "127.0.0.1:${client[$i]}" --data-dir "$WORK/n$i" --shards 1 \
    --config "$WORK/n$i.toml" >> "$WORK/n$i.log" 2>&1 &
  pid[$i]=$!
  # No "Killed" line from bash when the script kills it.
  disown "${pid[$i]}"
}
describe() { "$BIN" cluster describe --json --timeout 2s --bootstrap-server "127.0.0.1:${client[$1]}" 2>/dev/null; }
# Waits until node $1 lists $2 live brokers; fails after 60 s.
wait_live() {
  for _ in $(seq 1200); do
    n=$(describe "$1" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["brokers"]))' 2>/dev/null || echo 0)
    [ "$n" = "$2" ] && return 0
    sleep 0.05
  done
  echo "node $1 did not list $2 live brokers within 60 s; logs in $WORK" >&2; trap - EXIT; exit 1
}
for i in 1 2 3; do start "$i"; done
wait_live 1 3
echo "3 nodes up (fetch timeout $FETCH ms, election timeout $ELECTION ms); $RUNS failovers by SIG$SIGNAL:" >&2
times=()
for run in $(seq 1 "$RUNS"); do
  leader=$(describe 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["quorum"]["leader"])' 2>/dev/null \
    || describe 2 | python3 -c 'import json,sys; print(json.load(sys.stdin)["quorum"]["leader"])')
  survivor=$(( leader % 3 + 1 ))
  start_ns=$(date +%s%N)
  kill -s "$SIGNAL" "${pid[$leader]}"
  ok=0
  for _ in $(seq 3000); do
    if "$BIN" topic create "failover-$run" --timeout 5s \
        --bootstrap-server "127.0.0.1:${client[$survivor]}" >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.02
  done
  end_ns=$(date +%s%N)
  [ "$ok" = 1 ] || { echo "run $run: no CreateTopics succeeded within 60 s; logs in $WORK" >&2; trap - EXIT; exit 1; }
  ms=$(( (end_ns - start_ns) / 1000000 ))
  times+=("$ms")
  echo "run $run: SIG$SIGNAL to node $leader, CreateTopics through node $survivor after $ms ms" >&2
  # A clean stop may take a moment longer than the failover (draining).
  for _ in $(seq 6000); do kill -0 "${pid[$leader]}" 2>/dev/null || break; sleep 0.01; done
  start "$leader"
  wait_live "$leader" 3
done
printf '%s\n' "${times[@]}" | sort -n | python3 -c '
import sys
t = [int(l) for l in sys.stdin]
m = (t[(len(t) - 1) // 2] + t[len(t) // 2]) / 2
print(f"failover (SIG'"$SIGNAL"' -> first CreateTopics) over {len(t)} runs: median {m:.0f} ms, min {t[0]} ms, max {t[-1]} ms")'
