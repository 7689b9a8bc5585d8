# shellcheck shell=bash
# The transactional mode of tuning/compare.sh (`compare.sh --transactional`):
# 3 pinlog nodes against 3 Kafka 4.4 nodes on this machine (the clusters of
# the replicated mode, tuning/rep_clusters.sh), loaded by transactional
# producers. Sourced by compare.sh after its plumbing (say, measure, admin,
# the Java helpers) is set up; writes $OUT with
# tuning/transactional_report.py.
#
#   T1  committed throughput and commit latency: TXN_PRODUCERS producers,
#       each with its own transactional.id, in a loop of begin, K sends,
#       commit, for K = 100 and K = 1,000 records of 1 KiB; each
#       transaction spans TXN_SPAN of the topic's TXN_PARTS partitions
#       (RF 3, min.insync.replicas 2; acks=all, as transactions require)
#   T2  read_committed against read_uncommitted: one data set per cluster
#       (transactions of 100 records, every 10th aborted after its records
#       were sent), read from the
#       beginning to the end by one consumer with each isolation level
#   CPU every node's CPU seconds per GB of committed record values,
#       summed over the three nodes of a cluster (T1)
#
# The client is tuning/TxnPerf.java (Kafka's Java client: the load
# generator has no transactional producer), compiled here against
# kafka-clients. Rounds alternate between the clusters (pinlog, Kafka,
# pinlog, ...); both clusters run the whole time, the idle one waiting.
# Both use their defaults for the transaction coordinator: 50 partitions of
# __transaction_state, replication factor 3, min.insync.replicas 2.

TXN_PARTS=6            # partitions of the T1 and T2 topics
TXN_SPAN=3             # partitions each transaction writes to
TXN_PRODUCERS=4        # producer threads, one transactional.id each
TXN_SIZES="100 1000"   # records per transaction in T1
TXN_LINGER=5           # ms
TXN_BATCH=65536        # batch.size, bytes
TXN_ABORT_EVERY=10     # T2's data: every 10th transaction aborted
if [ "$MODE" = full ]; then
  T1_ROUNDS=3; T1_SECS=15; T1_WARM=3; T1_JIT_SECS=15
  T2_ROUNDS=2; T2_RECORDS=400000
else
  T1_ROUNDS=1; T1_SECS=6; T1_WARM=2; T1_JIT_SECS=5
  T2_ROUNDS=1; T2_RECORDS=100000
fi

javac -d "$JAVA_DIR" -cp "$KAFKA_LIBS/kafka-clients-$KAFKA_VERSION.jar" "$REPO/tuning/TxnPerf.java" \
  || die "javac of tuning/TxnPerf.java failed"

# shellcheck source=tuning/rep_clusters.sh
source "$REPO/tuning/rep_clusters.sh"
start_rep_clusters transactional

# The finalized transaction.version of each cluster (2 is KIP-890's
# transactions: partitions join a transaction with their first produce).
for b in pinlog kafka; do
  rep_target $b
  timeout 60 java -Xmx256m -cp "$JCP" TxnPerf features --bootstrap "$boot" > "$RES/tv.$b" 2>>"$LOGS/admin.log" \
    || echo "?" > "$RES/tv.$b"
done
say "transaction.version: pinlog $(cat "$RES/tv.pinlog"), Kafka $(cat "$RES/tv.kafka")"

# txn_json NAME: the last JSON line of NAME's output into NAME.json ({} if
# none), so that the report sees a failed run as one.
txn_json() {
  grep '^{' "$RES/$1.out" | tail -1 > "$RES/$1.json" || true
  [ -s "$RES/$1.json" ] || echo '{}' > "$RES/$1.json"
}

# txn_produce NAME PID BOOT TOPIC K [--seconds D --warmup W | --records R] [...]
txn_produce() {
  local name=$1 pid=$2 boot=$3 topic=$4 k=$5; shift 5
  measure "$name" "$pid" 600 -- java -Xmx1g -cp "$JCP" TxnPerf produce --bootstrap "$boot" \
    --topic "$topic" --producers "$TXN_PRODUCERS" --txn-records "$k" --record-bytes "$RECORD" \
    --span "$TXN_SPAN" --linger-ms "$TXN_LINGER" --batch-bytes "$TXN_BATCH" --id-prefix "$name" "$@"
  txn_json "$name"
  say "  $name: $(jq -r '"\(.mb_per_s // "n/a") MB/s committed, \(.txn_per_s // "n/a") txn/s, commit p50 \(.latency_us.p50 // "n/a") us p99 \(.latency_us.p99 // "n/a") us, errors \(.errors // "n/a") \(.error_kinds // "")"' "$RES/$name.json"), cluster CPU $(cat "$RES/$name.bcpu") s"
}

# ---------------------------------------------------------------- T1
say "T1: $TXN_PRODUCERS transactional producers, ${RECORD} B records, transactions of ${TXN_SIZES// / and } records over $TXN_SPAN of $TXN_PARTS partitions, RF $REP_RF, min.insync.replicas $REP_MIN_ISR, ${T1_SECS}s (+${T1_WARM}s warmup), $T1_ROUNDS round(s) A/B"
# One untimed round first: Kafka's JIT, and each cluster's first
# transactions (which create __transaction_state).
say "  warm-up round (not in the results): ${T1_JIT_SECS}s on each cluster"
for b in pinlog kafka; do
  rep_target $b
  create_replicated "$boot" t1-warm "$TXN_PARTS" || die "could not create t1-warm on $b"
  txn_produce "t1warm.$b" "$pid" "$boot" t1-warm 100 --seconds "$T1_JIT_SECS" --warmup 0
  admin delete "$boot" t1-warm >/dev/null || say "  (delete of t1-warm on $b failed)"
  # How many partitions __transaction_state has, for the report.
  kcat -L -b "$addr" -t __transaction_state -m 10 2>/dev/null \
    | sed -n 's/.*topic "__transaction_state" with \([0-9]*\) partitions.*/\1/p' > "$RES/tsl.$b" || true
done
for r in $(seq 1 "$T1_ROUNDS"); do
  for k in $TXN_SIZES; do
    for b in pinlog kafka; do
      rep_target $b
      topic="t1-$k-r$r"
      create_replicated "$boot" "$topic" "$TXN_PARTS" || die "could not create $topic on $b"
      txn_produce "t1.$k.$b.$r" "$pid" "$boot" "$topic" "$k" --seconds "$T1_SECS" --warmup "$T1_WARM"
      admin delete "$boot" "$topic" >/dev/null || say "  (delete of $topic on $b failed)"
    done
  done
done

# ---------------------------------------------------------------- T2
say "T2: $T2_RECORDS records per cluster in transactions of 100 (every ${TXN_ABORT_EVERY}th aborted), then read_committed against read_uncommitted, $T2_ROUNDS round(s)"
for b in pinlog kafka; do
  rep_target $b
  create_replicated "$boot" t2 "$TXN_PARTS" || die "could not create t2 on $b"
  txn_produce "t2fill.$b" "$pid" "$boot" t2 100 --records "$T2_RECORDS" --abort-every "$TXN_ABORT_EVERY"
done
# txn_consume NAME PID BOOT ISOLATION: topic t2 from the beginning to its end.
txn_consume() {
  measure "$1" "$2" 300 -- java -Xmx1g -cp "$JCP" TxnPerf consume --bootstrap "$3" --topic t2 --isolation "$4"
  txn_json "$1"
  say "  $1: $(jq -r '"\(.records // "n/a") records in \(.duration_s // "n/a") s, \(.mb_per_s // "n/a") MB/s"' "$RES/$1.json"), cluster CPU $(cat "$RES/$1.bcpu") s"
}
# One untimed read each first, so that both levels find the data where the
# broker keeps it after a read (Kafka's page cache, pinlog's read cache).
for b in pinlog kafka; do
  rep_target $b
  txn_consume "t2prime.$b" "$pid" "$boot" read_uncommitted
done
# The order of the two levels alternates from round to round.
for r in $(seq 1 "$T2_ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then levels="read_committed read_uncommitted"; else levels="read_uncommitted read_committed"; fi
  for b in pinlog kafka; do
    rep_target $b
    for iso in $levels; do
      txn_consume "t2.$b.$iso.$r" "$pid" "$boot" "$iso"
    done
  done
done

# ---------------------------------------------------------------- report
# What the brokers logged at WARN or ERROR during the run (before the
# clusters stop; their logs go with the work directory), for the report;
# and pinlog's INFO lines of refused requests and fenced producers (it logs
# a refused produce at INFO).
for i in "${REP_NODES[@]}"; do
  sed 's/\x1b\[[0-9;]*m//g' "$LOGS/pinlog-rep-$i.log" 2>/dev/null \
    | grep -E '^[^ ]+ +(WARN|ERROR) |^[^ ]+ +INFO .*(refused|fences )' \
    | sed "s/^/node $i: /" >> "$RES/broker-warn.pinlog" || true
  grep -E '^\[[^]]*\] (WARN|ERROR) ' "$LOGS/kafka-rep-$i.log" 2>/dev/null \
    | sed "s/^/node $i: /" >> "$RES/broker-warn.kafka" || true
done
# The report names Kafka's jars $KAFKA_LIBS in the commands it quotes.
export KAFKA_LIBS_DIR="$KAFKA_LIBS"
write_report transactional_report.py KAFKA_VERSION KAFKA_LIBS_DIR REP_RF REP_MIN_ISR REP_KAFKA_HEAP TXN_PARTS TXN_SPAN \
  TXN_PRODUCERS TXN_SIZES TXN_LINGER TXN_BATCH TXN_ABORT_EVERY T1_ROUNDS T1_SECS T1_WARM T1_JIT_SECS \
  T2_ROUNDS T2_RECORDS
