# The replicated mode of tuning/compare.sh (`compare.sh --replicated`):
# 3 pinlog nodes against 3 Kafka 4.4 nodes on this machine, a topic with
# replication factor 3 and min.insync.replicas 2, produced with acks=all by
# the same load generator. Sourced by compare.sh after its plumbing (say,
# measure, lg_produce, admin, the Java helpers) is set up; writes $OUT.
#
#   R1  produce throughput, acks=all, flat out
#   R2  produce latency, acks=all, at 50% of Kafka's R1 rate
#   CPU every node's CPU seconds (user + system) per GB of record values
#       produced, summed over the three nodes of a cluster
#
# Rounds alternate between the clusters (pinlog, Kafka, pinlog, ...); both
# clusters run the whole time, the idle one waiting.

REP_RF=3
REP_MIN_ISR=2
# Three JVMs share the machine here: a smaller heap each than the
# single-broker runs' (Kafka's own start script defaults to 1 GiB).
REP_KAFKA_HEAP="${KAFKA_REP_HEAP:-1g}"

# ---------------------------------------------------------------- clusters
# The pinlog cluster (ports, voters, start_pinlog_node, wait_cluster).
# shellcheck source=tuning/pinlog_cluster.sh
source "$REPO/tuning/pinlog_cluster.sh"
declare -A KFR_PORT KFR_CTRL KFR_PID
for i in "${REP_NODES[@]}"; do
  KFR_PORT[$i]=$(free_port); KFR_CTRL[$i]=$(free_port)
done
KFR_VOTERS=""
for i in "${REP_NODES[@]}"; do
  KFR_VOTERS+="${KFR_VOTERS:+,}$i@127.0.0.1:${KFR_CTRL[$i]}"
done
KFR_BOOT="127.0.0.1:${KFR_PORT[1]},127.0.0.1:${KFR_PORT[2]},127.0.0.1:${KFR_PORT[3]}"

kafka_rep_config() {  # kafka_rep_config NODE DIR
  local i=$1
  cat <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$KFR_VOTERS
listeners=PLAINTEXT://127.0.0.1:${KFR_PORT[$i]},CONTROLLER://127.0.0.1:${KFR_CTRL[$i]}
advertised.listeners=PLAINTEXT://127.0.0.1:${KFR_PORT[$i]}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$2/data
num.partitions=$PARTS
default.replication.factor=$REP_RF
min.insync.replicas=$REP_MIN_ISR
offsets.topic.replication.factor=$REP_RF
transaction.state.log.replication.factor=$REP_RF
transaction.state.log.min.isr=$REP_MIN_ISR
group.initial.rebalance.delay.ms=0
# Deleted topics' files go after 1 s instead of 60 s (disk space between rounds).
log.segment.delete.delay.ms=1000
EOF
}

# start_kafka_node I CLUSTER_ID: formats its directory once, then starts it.
start_kafka_node() {
  local i=$1 cid=$2 dir="$WORK/kafka-rep-$1"
  mkdir -p "$dir"
  if [ ! -f "$dir/server.properties" ]; then
    kafka_rep_config "$i" "$dir" > "$dir/server.properties"
    java -cp "$KCP" kafka.tools.StorageTool format -t "$cid" -c "$dir/server.properties" \
      >> "$LOGS/kafka-rep-$i.log" 2>&1 || die "kafka-storage format of node $i failed: $(tail -5 "$LOGS/kafka-rep-$i.log")"
  fi
  local jvm=("${KAFKA_JVM[@]/-Xmx$KAFKA_HEAP/-Xmx$REP_KAFKA_HEAP}")
  jvm=("${jvm[@]/-Xms$KAFKA_HEAP/-Xms$REP_KAFKA_HEAP}")
  java "${jvm[@]}" -cp "$KCP" kafka.Kafka "$dir/server.properties" >> "$LOGS/kafka-rep-$i.log" 2>&1 &
  KFR_PID[$i]=$!; PIDS+=("${KFR_PID[$i]}")
}

say "replicated mode: starting 3 pinlog nodes and 3 Kafka $KAFKA_VERSION nodes (KRaft, -Xmx$REP_KAFKA_HEAP each)"
for i in "${REP_NODES[@]}"; do start_pinlog_node "$i"; done
KFR_CID=$(java -cp "$KCP" kafka.tools.StorageTool random-uuid 2>>"$LOGS/kafka-rep-1.log" | tail -1)
for i in "${REP_NODES[@]}"; do start_kafka_node "$i" "$KFR_CID"; done
wait_cluster pinlog PLR_PORT
wait_cluster Kafka KFR_PORT
PLR_PIDS=$(IFS=,; echo "${PLR_PID[*]}")
KFR_PIDS=$(IFS=,; echo "${KFR_PID[*]}")
say "both clusters up (pinlog pids $PLR_PIDS; Kafka pids $KFR_PIDS)"

# create_replicated BOOTSTRAP TOPIC: RF 3, min.insync.replicas 2, then wait
# until Metadata shows every partition, plus a second (as create_topic).
create_replicated() {
  admin create-replicated "$1" "$2" "$PARTS" "$REP_RF" "$REP_MIN_ISR" >/dev/null || return 1
  wait_metadata "${1%%,*}" 60 "$2" "$PARTS" || return 1
  sleep 1
}

# rep_target pinlog|kafka: sets boot (every node, for the Admin client),
# addr (node 1: the load generator bootstraps from one address and then
# talks to each partition's leader) and pid (every node's).
rep_target() {
  if [ "$1" = pinlog ]; then boot=$PLR_BOOT; pid=$PLR_PIDS; else boot=$KFR_BOOT; pid=$KFR_PIDS; fi
  addr=${boot%%,*}
}

# ---------------------------------------------------------------- R1
say "R1: produce, acks=all, RF $REP_RF, min.insync.replicas $REP_MIN_ISR, ${RECORD} B records, $PARTS partitions, ${P1_SECS}s (+${P1_WARM}s warmup), $P1_ROUNDS round(s) A/B"
say "  warm-up round (not in the results): ${P1_JIT_SECS}s on each cluster"
for b in pinlog kafka; do
  rep_target $b
  create_replicated "$boot" r1-warm || die "could not create r1-warm on $b"
  ACKS=all lg_produce "rwarm.$b" "$pid" "$addr" r1-warm "$P1_JIT_SECS" 0
  admin delete "$boot" r1-warm >/dev/null || say "  (delete of r1-warm on $b failed)"
done
for r in $(seq 1 "$P1_ROUNDS"); do
  for b in pinlog kafka; do
    rep_target $b
    create_replicated "$boot" "r1-r$r" || die "could not create r1-r$r on $b"
    ACKS=all lg_produce "r1.$b.$r" "$pid" "$addr" "r1-r$r" "$P1_SECS" "$P1_WARM"
    admin delete "$boot" "r1-r$r" >/dev/null || say "  (delete of r1-r$r on $b failed)"
  done
done

# ---------------------------------------------------------------- R2
KAFKA_R1_RPS=$( (cat "$RES"/r1.kafka.*.json 2>/dev/null || true) | jq -s '[.[] | .records_per_s // empty] | sort | if length == 0 then 0 else .[(length - 1) / 2 | floor] end')
R2_RATE=$(awk -v r="$KAFKA_R1_RPS" 'BEGIN{printf "%d", r / 2}')
[ "$R2_RATE" -gt 0 ] || die "no Kafka R1 result, cannot pace R2"
say "R2: produce latency, acks=all, at $R2_RATE records/s (50% of Kafka's R1 median), linger ${LG_P2_LINGER} ms, ${P2_SECS}s, $P2_ROUNDS round(s) A/B"
for r in $(seq 1 "$P2_ROUNDS"); do
  for b in pinlog kafka; do
    rep_target $b
    create_replicated "$boot" "r2-r$r" || die "could not create r2-r$r on $b"
    ACKS=all LINGER=$LG_P2_LINGER lg_produce "r2.$b.$r" "$pid" "$addr" "r2-r$r" "$P2_SECS" "$P2_WARM" \
      --rate "$R2_RATE" --histogram "$RES/r2.$b.$r.hgrm"
    admin delete "$boot" "r2-r$r" >/dev/null || say "  (delete of r2-r$r on $b failed)"
  done
done

# ---------------------------------------------------------------- report
write_report replicated_report.py P1_SECS P1_WARM P1_ROUNDS P2_ROUNDS R2_RATE KAFKA_VERSION \
  REP_RF REP_MIN_ISR REP_KAFKA_HEAP
