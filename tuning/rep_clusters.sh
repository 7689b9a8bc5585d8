# shellcheck shell=bash
# The two 3-node clusters of compare.sh's side-by-side replicated modes
# (tuning/replicated.sh, tuning/transactional.sh): 3 pinlog nodes
# (tuning/pinlog_cluster.sh) and 3 Kafka 4.4 nodes, every node a combined
# broker and controller voter, on loopback. Sourced after compare.sh's
# plumbing (free_port, die, say, admin, wait_metadata, KCP, KAFKA_JVM, WORK,
# LOGS, PIDS, PARTS).
#
# start_rep_clusters starts both and waits for them; it sets PLR_PIDS and
# KFR_PIDS (each cluster's pids, comma-separated, for measure's CPU sum).
# create_replicated and rep_target then serve the workloads.

REP_RF=3
REP_MIN_ISR=2
# Three JVMs share the machine here: a smaller heap each than the
# single-broker runs' (Kafka's own start script defaults to 1 GiB).
REP_KAFKA_HEAP="${KAFKA_REP_HEAP:-1g}"

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
  cat <<KAFKA
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
KAFKA
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

# start_rep_clusters MODE_NAME: both clusters, up and listing 3 brokers.
start_rep_clusters() {
  say "$1 mode: starting 3 pinlog nodes and 3 Kafka $KAFKA_VERSION nodes (KRaft, -Xmx$REP_KAFKA_HEAP each)"
  local i cid
  for i in "${REP_NODES[@]}"; do start_pinlog_node "$i"; done
  cid=$(java -cp "$KCP" kafka.tools.StorageTool random-uuid 2>>"$LOGS/kafka-rep-1.log" | tail -1)
  for i in "${REP_NODES[@]}"; do start_kafka_node "$i" "$cid"; done
  wait_cluster pinlog PLR_PORT
  wait_cluster Kafka KFR_PORT
  PLR_PIDS=$(IFS=,; echo "${PLR_PID[*]}")
  KFR_PIDS=$(IFS=,; echo "${KFR_PID[*]}")
  say "both clusters up (pinlog pids $PLR_PIDS; Kafka pids $KFR_PIDS)"
}

# create_replicated BOOTSTRAP TOPIC [PARTITIONS]: RF 3, min.insync.replicas
# 2, PARTITIONS (default $PARTS), then wait until Metadata shows every
# partition, plus a second (as create_topic).
create_replicated() {
  local n=${3:-$PARTS}
  admin create-replicated "$1" "$2" "$n" "$REP_RF" "$REP_MIN_ISR" >/dev/null || return 1
  wait_metadata "${1%%,*}" 60 "$2" "$n" || return 1
  sleep 1
}

# rep_target pinlog|kafka: sets boot (every node, for the Admin client),
# addr (node 1: the load generator bootstraps from one address and then
# talks to each partition's leader) and pid (every node's).
# shellcheck disable=SC2034  # boot, addr and pid are for the caller
rep_target() {
  if [ "$1" = pinlog ]; then boot=$PLR_BOOT; pid=$PLR_PIDS; else boot=$KFR_BOOT; pid=$KFR_PIDS; fi
  addr=${boot%%,*}
}
