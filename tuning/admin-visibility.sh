#!/usr/bin/env bash
# Admin visibility, pinlog against Kafka 4.4, side by side on this machine:
# the time from an admin answer (CreateTopics, DeleteTopics) until every
# broker of a 3-node cluster of combined nodes shows the change in its
# Metadata, p50 and p99, idle and under load. Each system runs at its
# default settings.
#
# The probe (tuning/visibility_probe.py, kafka-python) runs WORKERS admin
# clients in parallel, each sending its requests to node 2 (a node that may
# or may not be the active controller) and asking each broker alone for
# Metadata until it shows the change. Under load, tuning/visibility_load.py
# (confluent-kafka) produces RATE records/s of 512 bytes with acks=all to a
# 6-partition RF=3 topic and consumes them while the probe runs.
#
# Usage: tuning/admin-visibility.sh [--rounds N] [--workers N] [--rate N] [--only pinlog|kafka] [--skip-build]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=25; WORKERS=4; RATE=5000; BUILD=1; ONLY=""
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
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
    cat > "$dir/server.properties" <<EOP
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$(voters)
listeners=PLAINTEXT://127.0.0.1:${client[$i]},CONTROLLER://127.0.0.1:${ctl[$i]}
advertised.listeners=PLAINTEXT://127.0.0.1:${client[$i]}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
offsets.topic.replication.factor=3
EOP
    java -cp "$KCP" kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$dir/server.properties" >> "$dir/log" 2>&1
    java -Xmx512m -Xms512m -XX:+UseG1GC -Djava.awt.headless=true -cp "$KCP" kafka.Kafka \
      "$dir/server.properties" >> "$dir/log" 2>&1 &
  fi
  pid[$SYSTEM$i]=$!
  disown "${pid[$SYSTEM$i]}"
}

run_system() { # SYSTEM; writes $WORK/$SYSTEM-{idle,load}.json
  SYSTEM=$1
  ports
  CLUSTER_ID=$(java -cp "$KCP" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)
  for i in 1 2 3; do start_node "$i"; done
  for n in $(seq 600); do
    kcat -L -b "$(bootstrap)" 2>/dev/null | grep -q "3 brokers" && break
    [ "$n" = 600 ] && { say "$SYSTEM did not list 3 brokers within 120 s; logs in $WORK/$SYSTEM"; trap - EXIT; exit 1; }
    sleep 0.2
  done
  java -cp "$KCP" org.apache.kafka.tools.TopicCommand --bootstrap-server "$(bootstrap)" --create \
    --topic load --partitions 6 --replication-factor 3 >/dev/null
  local admin="127.0.0.1:${client[2]}"
  say "$SYSTEM: idle, $WORKERS workers x $ROUNDS rounds"
  python3 "$REPO/tuning/visibility_probe.py" "$admin" "$ROUNDS" "$WORKERS" idle > "$WORK/$SYSTEM-idle.json"
  say "$SYSTEM: under load ($RATE records/s, acks=all)"
  python3 "$REPO/tuning/visibility_load.py" "$(bootstrap)" load "$RATE" 600 > "$WORK/$SYSTEM-load.txt" &
  local load=$!
  sleep 3
  python3 "$REPO/tuning/visibility_probe.py" "$admin" "$ROUNDS" "$WORKERS" loaded > "$WORK/$SYSTEM-load.json"
  kill "$load" 2>/dev/null || true; wait "$load" 2>/dev/null || true
  for i in 1 2 3; do kill -9 "${pid[$SYSTEM$i]}" 2>/dev/null || true; done
  sleep 1
}

for s in pinlog kafka; do
  [ -z "$ONLY" ] || [ "$ONLY" = "$s" ] && run_system "$s"
done

python3 - "$WORK" "$ONLY" <<'EOF'
import json, os, sys
work, only = sys.argv[1], sys.argv[2]
systems = [s for s in ("pinlog", "kafka") if not only or only == s]

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))] if xs else float("nan")

def figures(path):
    rows = json.load(open(path))
    out = {}
    for op in ("create", "delete"):
        rs = [r for r in rows if r["op"] == op]
        answer = [r["answer_ms"] for r in rs]
        everywhere = [max(v for v in r["delays"].values()) if None not in r["delays"].values() else 30000 for r in rs]
        here = [r["delays"][str(r["answering"])] for r in rs if str(r["answering"]) in r["delays"]]
        # The answering broker's first Metadata after the answer did not
        # show the change yet: the defect this measures.
        stale = sum(1 for r in rs if r["stale"])
        out[op] = {"n": len(rs), "answer": answer, "everywhere": everywhere, "answering": here,
                   "stale": stale}
    return out

data = {s: {m: figures(os.path.join(work, "%s-%s.json" % (s, m))) for m in ("idle", "load")} for s in systems}
print("| mode | op | what | " + " | ".join("%s p50 / p99 (ms)" % s for s in systems) + (" | ratio p50 / p99" if len(systems) == 2 else "") + " |")
print("|---|---|---|" + "---|" * len(systems) + ("---|" if len(systems) == 2 else ""))
for m in ("idle", "load"):
    for op in ("create", "delete"):
        for what, label in (("answer", "request to answer"), ("answering", "answer to visible on the answering broker"), ("everywhere", "answer to visible on all 3 brokers")):
            cells, vals = [], []
            for s in systems:
                xs = data[s][m][op][what]
                a, b = pct(xs, 50), pct(xs, 99)
                vals.append((a, b))
                cells.append("%.1f / %.1f" % (a, b))
            ratio = ""
            if len(systems) == 2:
                (a1, b1), (a2, b2) = vals
                ratio = " | %s / %s" % ("%.2fx" % (a1 / a2) if a2 else "-", "%.2fx" % (b1 / b2) if b2 else "-")
            print("| %s | %s | %s | %s%s |" % (m, op, label, " | ".join(cells), ratio))
        print("| %s | %s | answering broker's first Metadata still stale | %s |%s" % (
            m, op, " | ".join("%d of %d" % (data[s][m][op]["stale"], data[s][m][op]["n"]) for s in systems),
            " |" if len(systems) == 2 else ""))
EOF
for s in pinlog kafka; do [ -f "$WORK/$s-load.txt" ] && say "$s load: $(cat "$WORK/$s-load.txt")"; done
