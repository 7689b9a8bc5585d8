# shellcheck shell=bash
# The share-group mode of tuning/compare.sh (`compare.sh --share`): one
# pinlog broker (2 shards) and one Kafka 4.4 broker side by side, a topic of
# SH_PARTS partitions on each, and share groups (KIP-932,
# KafkaShareConsumer) against classic consumer groups (KafkaConsumer,
# group.protocol=classic) on the same topic. The client is
# tuning/SharePerf.java: one JVM per run, SH consumers as threads and a
# producer thread; records of SH_RECORD bytes.
#
#   S1  drain: N consumers (each of SH_CONSUMERS) of a fresh group are
#       warmed up, stop polling while the producer writes a backlog of
#       S1_RECORDS records as fast as it can (acks=1), then drain it:
#       records/s from the moment they poll again until the last record
#       arrived (for the explicit kinds: until the commitSync() that
#       acknowledged it returned). Kinds (SH_S1_KINDS):
#         classic         auto commit (the client's default)
#         classic-sync    commitSync() after every poll with records
#         share           implicit acknowledgement (the next poll accepts)
#         share-explicit  acknowledge(ACCEPT) every record, commitSync()
#                         after every poll with records
#       The backlog's fill rate is the max-rate producer run.
#   S2  latency: S2_CONSUMERS consumers of a fresh group while the producer
#       writes SH_RATE records/s (linger 1 ms) for S2_SECS seconds after
#       S2_WARM; produce-to-acknowledgement p50/p99 (classic-sync: the
#       commitSync() after the poll returned; share-explicit: the
#       commitSync() that acknowledged it returned) and produce-to-delivery
#       (the poll returned). Kinds: SH_S2_KINDS.
#
# Why the warm-up: a share group starts reading a partition at its end
# when a member first reads it (share.auto.offset.reset=latest: pinlog does
# not serve that group config and always starts there; Kafka's default is
# the same), and a fresh classic group with auto.offset.reset=latest does
# too. So SharePerf writes marker records to every partition until each
# partition delivered one and every member got one (classic: and every
# partition is owned exactly once) before anything is measured, on both
# brokers alike. Markers, and records of other runs, are never counted.
#
# Every run counts each measured record's deliveries by its sequence
# number: duplicates and missing records are in the report, and a run that
# stalls (no new record for 20 s) reports so instead of hanging.
#
# Both brokers: `group.share.heartbeat.interval.ms` 1000 (Kafka's minimum
# for it lowered to match; the default is 5000, which makes a share
# group's members take several seconds to get their partitions), every
# other share-group setting at its default, the same on both (record lock
# 30 s, 2,000 records in flight per share partition, delivery limit 5);
# group.initial.rebalance.delay.ms 0. Kafka 4.4's format finalizes
# share.version 2, so its share groups need no flag; the report records
# each broker's finalized share.version.
#
# Rounds alternate between the brokers (pinlog first in odd rounds, Kafka
# in even ones); each run is a fresh group; every ratio in the report is
# between runs of this one invocation.
#
# Sourced by compare.sh after its plumbing (say, measure, admin,
# create_topic, KCP, JCP); writes $OUT with tuning/share_report.py.

SH_PARTS=${SH_PARTS:-6}
SH_RECORD=${SH_RECORD:-100}
SH_CONSUMERS=${SH_CONSUMERS:-"3 6"}
SH_S1_KINDS=${SH_S1_KINDS:-"classic classic-sync share share-explicit"}
SH_S2_KINDS=${SH_S2_KINDS:-"classic-sync share-explicit"}
SH_RATE=${SH_RATE:-5000}        # records/s in S2
S2_CONSUMERS=${S2_CONSUMERS:-3}
SH_HEARTBEAT_MS=1000
if [ "$MODE" = full ]; then
  SH_ROUNDS=${SH_ROUNDS:-2}; S1_RECORDS=${S1_RECORDS:-1000000}; S2_SECS=${S2_SECS:-20}; S2_WARM=${S2_WARM:-3}
else
  SH_ROUNDS=${SH_ROUNDS:-1}; S1_RECORDS=${S1_RECORDS:-500000}; S2_SECS=${S2_SECS:-8}; S2_WARM=${S2_WARM:-2}
fi
SH_JVM=(-Xmx${SH_HEAP:-1g} -XX:+UseG1GC)

javac -d "$JAVA_DIR" -cp "$KAFKA_LIBS/kafka-clients-$KAFKA_VERSION.jar" "$REPO/tuning/SharePerf.java" \
  2>>"$LOGS/javac.log" || die "javac of tuning/SharePerf.java failed: $(tail -5 "$LOGS/javac.log")"

# ---------------------------------------------------------------- brokers
SPL_PORT=$(free_port); SKF_PORT=$(free_port); SKF_CTRL=$(free_port)
SPL_ADDR="127.0.0.1:$SPL_PORT"; SKF_ADDR="127.0.0.1:$SKF_PORT"
SPL_DIR="$WORK/pinlog-share"; mkdir -p "$SPL_DIR"
cat > "$SPL_DIR/pinlog.toml" <<TOML
"num.partitions" = $SH_PARTS
"metrics.listen" = "127.0.0.1:$(free_port)"
"group.initial.rebalance.delay.ms" = 0
"group.share.heartbeat.interval.ms" = $SH_HEARTBEAT_MS
TOML
SKF_DIR="$WORK/kafka-share"; mkdir -p "$SKF_DIR"
cat > "$SKF_DIR/server.properties" <<KAFKA
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$SKF_CTRL
listeners=PLAINTEXT://127.0.0.1:$SKF_PORT,CONTROLLER://127.0.0.1:$SKF_CTRL
advertised.listeners=PLAINTEXT://127.0.0.1:$SKF_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$SKF_DIR/data
num.partitions=$SH_PARTS
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.share.heartbeat.interval.ms=$SH_HEARTBEAT_MS
group.share.min.heartbeat.interval.ms=$SH_HEARTBEAT_MS
log.segment.delete.delay.ms=1000
KAFKA

say "share mode: pinlog (2 shards) on $SPL_ADDR and Kafka $KAFKA_VERSION (KRaft, -Xmx$KAFKA_HEAP) on $SKF_ADDR"
"$PINLOG_BIN" serve --data-dir "$SPL_DIR/data" --listen "$SPL_ADDR" --shards 2 --config "$SPL_DIR/pinlog.toml" \
  >> "$LOGS/pinlog-share.log" 2>&1 &
SPL_PID=$!; PIDS+=("$SPL_PID")
SKF_CID=$(java -cp "$KCP" kafka.tools.StorageTool random-uuid 2>>"$LOGS/kafka-share.log" | tail -1)
java -cp "$KCP" kafka.tools.StorageTool format -t "$SKF_CID" -c "$SKF_DIR/server.properties" \
  >> "$LOGS/kafka-share.log" 2>&1 || die "kafka-storage format failed: $(tail -5 "$LOGS/kafka-share.log")"
java "${KAFKA_JVM[@]}" -cp "$KCP" kafka.Kafka "$SKF_DIR/server.properties" >> "$LOGS/kafka-share.log" 2>&1 &
SKF_PID=$!; PIDS+=("$SKF_PID")
wait_metadata "$SPL_ADDR" 30 || die "pinlog did not come up: $(tail -5 "$LOGS/pinlog-share.log")"
wait_metadata "$SKF_ADDR" 90 || die "Kafka did not come up: $(tail -5 "$LOGS/kafka-share.log")"
say "both up (pinlog pid $SPL_PID, Kafka pid $SKF_PID)"
sh_target() { if [ "$1" = pinlog ]; then addr=$SPL_ADDR; pid=$SPL_PID; else addr=$SKF_ADDR; pid=$SKF_PID; fi; }
# sh_order R: the brokers in round R's order.
sh_order() { if [ $(($1 % 2)) = 1 ]; then echo "pinlog kafka"; else echo "kafka pinlog"; fi; }

for b in pinlog kafka; do
  sh_target $b
  create_topic "$addr" share "$SH_PARTS" || die "could not create the topic share ($SH_PARTS partitions) on $b"
  # The finalized share.version (Kafka 4.4: 2 after format; 0 or none: off).
  timeout 60 java -Xmx256m -cp "$JCP" SharePerf features --bootstrap "$addr" > "$RES/sv.$b" 2>>"$LOGS/admin.log" \
    || echo "?" > "$RES/sv.$b"
done
say "share.version: pinlog $(cat "$RES/sv.pinlog"), Kafka $(cat "$RES/sv.kafka")"
# Kafka's share-group settings as its broker reports them, for the report.
timeout 60 java -Xmx256m -cp "$KCP" org.apache.kafka.tools.ConfigCommand --bootstrap-server "$SKF_ADDR" \
  --describe --entity-type brokers --entity-name 1 --all 2>>"$LOGS/admin.log" \
  | sed -n 's/^ *\(group\.share\.[a-z.]*=[^ ]*\).*/\1/p' > "$RES/kafka-share-settings" || true

# sh_run NAME BROKER drain|latency KIND CONSUMERS [args]: one fresh group; NAME.json.
SH_N=0
sh_run() {
  local name=$1 b=$2 what=$3 kind=$4 n=$5; shift 5
  sh_target "$b"
  SH_N=$((SH_N + 1))
  measure "$name" "$pid" 300 -- java "${SH_JVM[@]}" -cp "$JCP" SharePerf "$what" --bootstrap "$addr" \
    --topic share --group "g$SH_N-$kind-$n" --kind "$kind" --consumers "$n" --record-bytes "$SH_RECORD" "$@"
  grep '^{' "$RES/$name.out" | tail -1 > "$RES/$name.json" || true
  [ -s "$RES/$name.json" ] || echo '{}' > "$RES/$name.json"
}

say "S1: drain a backlog of $S1_RECORDS records of $SH_RECORD B, $SH_PARTS partitions, consumers: $SH_CONSUMERS, kinds: $SH_S1_KINDS, $SH_ROUNDS round(s)"
for r in $(seq 1 "$SH_ROUNDS"); do
  for n in $SH_CONSUMERS; do
    for kind in $SH_S1_KINDS; do
      for b in $(sh_order "$r"); do
        sh_run "s1.$kind.$n.$b.$r" "$b" drain "$kind" "$n" --records "$S1_RECORDS"
        say "  s1.$kind.$n.$b.$r: $(jq -r '"\(.records_per_s // "n/a") records/s (fill \(.fill_records_per_s // "n/a")/s), duplicates \(.duplicates // "n/a"), missing \(.missing // "n/a"), warm-up \(.warmup_ms // "n/a") ms, error \(.error // "none")"' "$RES/s1.$kind.$n.$b.$r.json"), broker CPU $(cat "$RES/s1.$kind.$n.$b.$r.bcpu") s"
      done
    done
  done
done

say "S2: latency at $SH_RATE records/s, $S2_CONSUMERS consumers, ${S2_SECS}s after ${S2_WARM}s, kinds: $SH_S2_KINDS, $SH_ROUNDS round(s)"
for r in $(seq 1 "$SH_ROUNDS"); do
  for kind in $SH_S2_KINDS; do
    for b in $(sh_order "$r"); do
      sh_run "s2.$kind.$b.$r" "$b" latency "$kind" "$S2_CONSUMERS" --rate "$SH_RATE" --seconds "$S2_SECS" --warmup "$S2_WARM"
      say "  s2.$kind.$b.$r: $(jq -r '"ack p50 \(.latency_us.p50 // "n/a") us p99 \(.latency_us.p99 // "n/a") us, delivery p99 \(.delivery_latency_us.p99 // "n/a") us, producer behind by up to \(.producer_behind_max_ms // "n/a") ms, duplicates \(.duplicates // "n/a"), missing \(.missing // "n/a"), error \(.error // "none")"' "$RES/s2.$kind.$b.$r.json"), broker CPU $(cat "$RES/s2.$kind.$b.$r.bcpu") s"
    done
  done
done

sed 's/\x1b\[[0-9;]*m//g' "$LOGS/pinlog-share.log" 2>/dev/null | grep -E '^[^ ]+ +(WARN|ERROR) ' > "$RES/broker-warn.pinlog" || true
grep -E '^\[[^]]*\] (WARN|ERROR) ' "$LOGS/kafka-share.log" 2>/dev/null > "$RES/broker-warn.kafka" || true

# ---------------------------------------------------------------- report
export KAFKA_LIBS_DIR="$KAFKA_LIBS"
write_report share_report.py KAFKA_VERSION KAFKA_LIBS_DIR KAFKA_HEAP SH_PARTS SH_RECORD SH_CONSUMERS SH_S1_KINDS \
  SH_S2_KINDS SH_RATE S2_CONSUMERS SH_HEARTBEAT_MS SH_ROUNDS S1_RECORDS S2_SECS S2_WARM
