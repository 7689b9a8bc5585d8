# shellcheck shell=bash
# The consumer-group rebalance mode of tuning/compare.sh (`compare.sh
# --groups`): one pinlog broker and one Kafka 4.4 broker, a topic of
# GR_PARTS partitions on each, and a group of GR_MEMBERS consumers
# (tuning/GroupRebalance.java: one JVM, one KafkaConsumer thread each, and a
# producer thread writing GR_RATE records/s round-robin over the partitions).
# Once the group is stable (every partition owned exactly once), one event:
#
#   JOIN   one more member starts in the JVM
#   CRASH  a member in a separate JVM (started here, in the group from the
#          start) is killed with SIGKILL
#
# and the figures of that window: the time from the event until every
# partition is owned exactly once again (for JOIN: with the new member
# owning its share), records/s consumed in the window, and the longest gap
# in consumption among the members whose assignment did not change.
#
# Three runs per event and round, alternating: KIP-848 on pinlog
# (group.protocol=consumer), classic on pinlog (cooperative-sticky), KIP-848
# on Kafka. Both brokers have the same consumer-group settings:
# group.consumer.session.timeout.ms = group.consumer.min.session.timeout.ms
# = GR_SESSION_MS, group.consumer.heartbeat.interval.ms = its min =
# GR_HEARTBEAT_MS; the classic members ask for the same session timeout and
# heartbeat interval.
#
# Sourced by compare.sh after its plumbing (say, measure, admin,
# create_topic, KCP, JCP); writes $OUT with tuning/groups_report.py.

GR_SESSION_MS=10000
GR_HEARTBEAT_MS=1000
GR_RATE=2000            # records/s the producer thread writes
GR_MEMBERS=${GR_MEMBERS:-100}
GR_PARTS=${GR_PARTS:-1000}
GR_EVENTS=${GR_EVENTS:-"join crash"}
GR_RUNS=${GR_RUNS:-"pinlog:consumer pinlog:classic kafka:consumer"}
if [ "$MODE" = full ]; then GR_ROUNDS=${GR_ROUNDS:-3}; else GR_ROUNDS=${GR_ROUNDS:-1}; fi
GR_JVM=(-Xmx${GR_HEAP:-1g} -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1)

javac -d "$JAVA_DIR" -cp "$KAFKA_LIBS/kafka-clients-$KAFKA_VERSION.jar" "$REPO/tuning/GroupRebalance.java" \
  2>>"$LOGS/javac.log" || die "javac of tuning/GroupRebalance.java failed: $(tail -5 "$LOGS/javac.log")"

# ---------------------------------------------------------------- brokers
GPL_PORT=$(free_port); GKF_PORT=$(free_port); GKF_CTRL=$(free_port)
GPL_ADDR="127.0.0.1:$GPL_PORT"; GKF_ADDR="127.0.0.1:$GKF_PORT"
GPL_DIR="$WORK/pinlog-groups"; mkdir -p "$GPL_DIR"
cat > "$GPL_DIR/pinlog.toml" <<TOML
"num.partitions" = $PARTS
"metrics.listen" = "127.0.0.1:$(free_port)"
"group.initial.rebalance.delay.ms" = 0
"group.consumer.session.timeout.ms" = $GR_SESSION_MS
"group.consumer.min.session.timeout.ms" = $GR_SESSION_MS
"group.consumer.heartbeat.interval.ms" = $GR_HEARTBEAT_MS
"group.consumer.min.heartbeat.interval.ms" = $GR_HEARTBEAT_MS
TOML
GKF_DIR="$WORK/kafka-groups"; mkdir -p "$GKF_DIR"
cat > "$GKF_DIR/server.properties" <<KAFKA
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$GKF_CTRL
listeners=PLAINTEXT://127.0.0.1:$GKF_PORT,CONTROLLER://127.0.0.1:$GKF_CTRL
advertised.listeners=PLAINTEXT://127.0.0.1:$GKF_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$GKF_DIR/data
num.partitions=$PARTS
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.consumer.session.timeout.ms=$GR_SESSION_MS
group.consumer.min.session.timeout.ms=$GR_SESSION_MS
group.consumer.heartbeat.interval.ms=$GR_HEARTBEAT_MS
group.consumer.min.heartbeat.interval.ms=$GR_HEARTBEAT_MS
log.segment.delete.delay.ms=1000
KAFKA

say "groups mode: pinlog (2 shards) on $GPL_ADDR and Kafka $KAFKA_VERSION (KRaft, -Xmx$KAFKA_HEAP) on $GKF_ADDR"
"$PINLOG_BIN" serve --data-dir "$GPL_DIR/data" --listen "$GPL_ADDR" --shards 2 --config "$GPL_DIR/pinlog.toml" \
  >> "$LOGS/pinlog-groups.log" 2>&1 &
GPL_PID=$!; PIDS+=("$GPL_PID")
GKF_CID=$(java -cp "$KCP" kafka.tools.StorageTool random-uuid 2>>"$LOGS/kafka-groups.log" | tail -1)
java -cp "$KCP" kafka.tools.StorageTool format -t "$GKF_CID" -c "$GKF_DIR/server.properties" \
  >> "$LOGS/kafka-groups.log" 2>&1 || die "kafka-storage format failed: $(tail -5 "$LOGS/kafka-groups.log")"
java "${KAFKA_JVM[@]}" -cp "$KCP" kafka.Kafka "$GKF_DIR/server.properties" >> "$LOGS/kafka-groups.log" 2>&1 &
GKF_PID=$!; PIDS+=("$GKF_PID")
wait_metadata "$GPL_ADDR" 30 || die "pinlog did not come up: $(tail -5 "$LOGS/pinlog-groups.log")"
wait_metadata "$GKF_ADDR" 90 || die "Kafka did not come up: $(tail -5 "$LOGS/kafka-groups.log")"
say "both up (pinlog pid $GPL_PID, Kafka pid $GKF_PID)"
gr_target() { if [ "$1" = pinlog ]; then addr=$GPL_ADDR; pid=$GPL_PID; else addr=$GKF_ADDR; pid=$GKF_PID; fi; }

for b in pinlog kafka; do
  gr_target $b
  create_topic "$addr" groups "$GR_PARTS" || die "could not create the topic groups ($GR_PARTS partitions) on $b"
done

# gr_run NAME BROKER PROTOCOL EVENT: one group, one event; NAME.json.
GR_N=0
gr_run() {
  local name=$1 b=$2 proto=$3 ev=$4 vpid="" vfile="" extra=()
  gr_target "$b"
  GR_N=$((GR_N + 1))
  local group="g$GR_N-$proto-$ev"
  if [ "$ev" = crash ]; then
    vfile="$RES/$name.victim"
    rm -f "$vfile"
    java -Xmx128m -XX:+UseSerialGC -cp "$JCP" GroupRebalance member --bootstrap "$addr" --topic groups \
      --group "$group" --protocol "$proto" --file "$vfile" --seconds 600 \
      --session-ms "$GR_SESSION_MS" --heartbeat-ms "$GR_HEARTBEAT_MS" > "$LOGS/$name.victim.log" 2>&1 &
    vpid=$!; PIDS+=("$vpid")
    disown "$vpid"   # no "Killed" notice from bash when it is killed; reaped below
    extra=(--victim-pid "$vpid" --victim-file "$vfile")
  fi
  measure "$name" "$pid" 420 -- java "${GR_JVM[@]}" -cp "$JCP" GroupRebalance run --bootstrap "$addr" \
    --topic groups --partitions "$GR_PARTS" --group "$group" --protocol "$proto" --members "$GR_MEMBERS" \
    --event "$ev" --rate "$GR_RATE" --session-ms "$GR_SESSION_MS" --heartbeat-ms "$GR_HEARTBEAT_MS" \
    --stable-timeout-s 180 --event-timeout-s 120 "${extra[@]}"
  if [ -n "$vpid" ]; then
    kill -KILL "$vpid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$vpid" 2>/dev/null || break; sleep 0.1; done
    forget_pid "$vpid"
  fi
  grep '^{' "$RES/$name.out" | tail -1 > "$RES/$name.json" || true
  [ -s "$RES/$name.json" ] || echo '{}' > "$RES/$name.json"
  say "  $name: $(jq -r '"window \(.window_ms // "n/a") ms, \(.records_per_s // "n/a") rec/s (before \(.records_per_s_before // "n/a")), max gap unmoved \(.max_gap_unmoved_ms // "n/a") ms (before \(.max_gap_unmoved_before_ms // "n/a")), unmoved \(.unmoved_members // "n/a"), stable after \(.stable_after_ms // "n/a") ms, error \(.error // "none")"' "$RES/$name.json"), broker CPU $(cat "$RES/$name.bcpu") s"
}

say "groups: $GR_MEMBERS members, $GR_PARTS partitions, $GR_RATE records/s produced, session $GR_SESSION_MS ms, heartbeat $GR_HEARTBEAT_MS ms, $GR_ROUNDS round(s) of: ${GR_RUNS}, events: $GR_EVENTS"
for r in $(seq 1 "$GR_ROUNDS"); do
  for ev in $GR_EVENTS; do
    for run in $GR_RUNS; do
      b=${run%%:*}; proto=${run#*:}
      gr_run "$ev.$b-$proto.$r" "$b" "$proto" "$ev"
    done
  done
done

sed 's/\x1b\[[0-9;]*m//g' "$LOGS/pinlog-groups.log" 2>/dev/null | grep -E '^[^ ]+ +(WARN|ERROR) ' > "$RES/broker-warn.pinlog" || true
grep -E '^\[[^]]*\] (WARN|ERROR) ' "$LOGS/kafka-groups.log" 2>/dev/null > "$RES/broker-warn.kafka" || true

# ---------------------------------------------------------------- report
export KAFKA_LIBS_DIR="$KAFKA_LIBS"
write_report groups_report.py KAFKA_VERSION KAFKA_LIBS_DIR KAFKA_HEAP GR_SESSION_MS GR_HEARTBEAT_MS GR_RATE \
  GR_MEMBERS GR_PARTS GR_EVENTS GR_RUNS GR_ROUNDS
