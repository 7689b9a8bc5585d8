#!/usr/bin/env bash
# Partition failover, pinlog against Kafka 4.4, side by side on this
# machine: kill -9 of a partition's leader to the next acknowledged acks=all
# write, on a 3-node cluster of combined nodes (broker and controller), each
# system at its default settings.
#
# A topic with 3 partitions, RF=3 and min.insync.replicas=2 is created; each
# run picks a partition whose leader is not the active controller (killing
# the controller adds a controller election on both systems; see
# tuning/failover.sh for that), starts tuning/failover_probe.py
# (confluent-kafka, acks=all, idempotence, a record every 5 ms to that
# partition), kills the leader, and measures from the kill to the first
# acknowledgement of a record produced after it. The killed node is then
# restarted and the script waits until every partition has 3 in-sync
# replicas again. Prints each run and the medians, and their ratio.
#
# Usage: tuning/partition-failover.sh [--runs N] [--only pinlog|kafka] [--skip-build]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
RUNS=10; BUILD=1; ONLY=""
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --skip-build) BUILD=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
KAFKA_VERSION=4.4.0
KAFKA_LIBS="${PINLOG_KAFKA_LIBS:-$HOME/.cache/pinlog/kafka-$KAFKA_VERSION/libs}"
"$REPO/tests/kafka/fetch-kafka.sh" "$KAFKA_LIBS" >/dev/null
KCP="$KAFKA_LIBS/*"
[ "$BUILD" = 1 ] && (cd "$REPO" && cargo build --release -p pinlog --bins >/dev/null)
BIN=$REPO/target/release/pinlog
WORK=$(mktemp -d)
declare -A pid
cleanup() { for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
say() { echo "[$(date +%T)] $*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now_ms() { date +%s%3N; }

SYSTEM=""
declare -A client ctl
ports() { for i in 1 2 3; do client[$i]=$(free_port); ctl[$i]=$(free_port); done; }
voters() { echo "1@127.0.0.1:${ctl[1]},2@127.0.0.1:${ctl[2]},3@127.0.0.1:${ctl[3]}"; }
bootstrap() { echo "127.0.0.1:${client[1]},127.0.0.1:${client[2]},127.0.0.1:${client[3]}"; }

start_node() { # node id
  local i=$1
  local dir="$WORK/$SYSTEM/n$i"
  mkdir -p "$dir"
  if [ "$SYSTEM" = pinlog ]; then
    printf '"metrics.listen" = "127.0.0.1:0"\n"shard.spin.before.park.us" = 0\n' > "$dir/pinlog.toml"
    NO_COLOR=1 "$BIN" serve --node-id "$i" --controller-quorum-voters "$(voters)" \
      --listen "127.0.0.1:${client[$i]}" --data-dir "$dir/data" --shards 1 \
      --config "$dir/pinlog.toml" >> "$dir/log" 2>&1 &
  else
    if [ ! -f "$dir/server.properties" ]; then
      cat > "$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$(voters)
listeners=PLAINTEXT://127.0.0.1:${client[$i]},CONTROLLER://127.0.0.1:${ctl[$i]}
advertised.listeners=PLAINTEXT://127.0.0.1:${client[$i]}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
EOF
      java -cp "$KCP" kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$dir/server.properties" >> "$dir/log" 2>&1
    fi
    java -Xmx512m -Xms512m -XX:+UseG1GC -Djava.awt.headless=true -cp "$KCP" kafka.Kafka \
      "$dir/server.properties" >> "$dir/log" 2>&1 &
  fi
  pid[$SYSTEM$i]=$!
  disown "${pid[$SYSTEM$i]}"
}

quorum_leader() {
  java -cp "$KCP" org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$(bootstrap)" \
    describe --status 2>/dev/null | awk '/^LeaderId:/ {print $2}'
}
# "partition leader isr-count" lines of topic f.
leaders() {
  kcat -L -J -b "$(bootstrap)" -t f 2>/dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin)["topics"][0]["partitions"]:
    print(p["partition"], p["leader"], len(p["isrs"]))'
}
wait_all_in_sync() {
  for _ in $(seq 600); do
    n=$(leaders | awk '$3 == 3 && $2 >= 0' | wc -l)
    [ "$n" = 3 ] && return 0
    sleep 0.2
  done
  say "$SYSTEM: partitions did not get 3 in-sync replicas within 120 s; logs in $WORK/$SYSTEM"
  trap - EXIT; exit 1
}

measure() { # sets T to one failover time in ms
  local c l part victim
  c=$(quorum_leader)
  part=""; victim=""
  while read -r p l _; do
    if [ "$l" != "$c" ] && [ -z "$part" ]; then part=$p; victim=$l; fi
  done < <(leaders)
  [ -n "$part" ] || { say "no partition led by a node other than the controller ($c)"; return 1; }
  python3 "$REPO/tuning/failover_probe.py" "$(bootstrap)" f "$part" 25 > "$WORK/probe" 2>/dev/null &
  local probe=$!
  sleep 3
  local killed; killed=$(now_ms)
  kill -9 "${pid[$SYSTEM$victim]}"
  wait "$probe" || true
  T=$(python3 - "$WORK/probe" "$killed" <<'EOF'
import sys
killed = int(sys.argv[2])
acks = [int(w[2]) for w in (l.split() for l in open(sys.argv[1])) if w[0] == "ACK" and int(w[1]) >= killed]
print(min(acks) - killed if acks else -1)
EOF
)
  start_node "$victim"
  wait_all_in_sync
}

run_system() { # sets MEDIAN
  SYSTEM=$1
  ports
  CLUSTER_ID=$(java -cp "$KCP" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)
  for i in 1 2 3; do start_node "$i"; done
  for _ in $(seq 600); do
    kcat -L -b "$(bootstrap)" 2>/dev/null | grep -q "3 brokers" && break
    sleep 0.2
  done
  java -cp "$KCP" org.apache.kafka.tools.TopicCommand --bootstrap-server "$(bootstrap)" --create \
    --topic f --partitions 3 --replication-factor 3 --config min.insync.replicas=2 >/dev/null
  wait_all_in_sync
  local times=()
  for r in $(seq "$RUNS"); do
    measure
    say "$SYSTEM run $r: $T ms"
    times+=("$T")
  done
  for p in "${!pid[@]}"; do
    if [[ $p == $SYSTEM* ]]; then kill -9 "${pid[$p]}" 2>/dev/null || true; fi
  done
  MEDIAN=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; print m}')
}

declare -A median
for s in pinlog kafka; do
  if [ -z "$ONLY" ] || [ "$ONLY" = "$s" ]; then
    say "$s: 3 combined nodes, defaults, $RUNS runs"
    run_system "$s"
    median[$s]=$MEDIAN
    say "$s: median $(printf '%s' "${median[$s]}") ms"
  fi
done
if [ -n "${median[pinlog]:-}" ] && [ -n "${median[kafka]:-}" ]; then
  python3 -c "p, k = ${median[pinlog]}, ${median[kafka]}; print(f'pinlog {p:.0f} ms, Kafka {k:.0f} ms, ratio {p / k:.3f}x')"
fi
