# The reassignment mode of tuning/compare.sh (`compare.sh --reassign`): how
# fast a reassignment copies a partition's data, with and without a
# replication throttle, and what the copy costs the producers meanwhile.
# pinlog only (the figures are ratios within one run: the copy's rate
# against the throttle, the producers' p99 during the copy against before
# it). Sourced by compare.sh after its plumbing; writes $OUT.
#
# Three pinlog nodes (tuning/pinlog_cluster.sh). Topic `bulk` (RF 1, on
# broker 1 only) is filled with REASSIGN_BYTES; topic `live` (RF 3,
# min.insync.replicas 2) takes a paced acks=all producer. For each case
# (unthrottled, then --throttle REASSIGN_THROTTLE):
#   before  the live producer alone, P2_SECS
#   copy    kafka-reassign-partitions.sh --execute adds broker 2 to every
#           partition of bulk; the live producer runs the whole time;
#           --verify is polled until every move is complete
#   reset   a second reassignment takes broker 2 off again
# Copy rate = the bytes broker 2 received / the time from --execute until
# --verify said complete (polled every 0.2 s).

REASSIGN_BYTES=${REASSIGN_BYTES:-$([ "$MODE" = quick ] && echo $((256 * 1048576)) || echo $((1024 * 1048576)))}
# Bytes per second; the tool sets it on both sides of the move.
REASSIGN_THROTTLE=${REASSIGN_THROTTLE:-20000000}
# The live producer's pace, records/s of RECORD bytes.
REASSIGN_LIVE_RATE=${REASSIGN_LIVE_RATE:-10000}

# shellcheck source=tuning/pinlog_cluster.sh
source "$REPO/tuning/pinlog_cluster.sh"

say "reassign mode: starting 3 pinlog nodes"
for i in "${REP_NODES[@]}"; do start_pinlog_node "$i"; done
wait_cluster pinlog PLR_PORT
PLR_PIDS=$(IFS=,; echo "${PLR_PID[*]}")
ADDR=${PLR_BOOT%%,*}
say "cluster up (pids $PLR_PIDS)"

reassign() {  # reassign ARGS...: Kafka's kafka-reassign-partitions.sh
  timeout 120 java -Xmx256m -cp "$KCP" org.apache.kafka.tools.reassign.ReassignPartitionsCommand \
    --bootstrap-server "$PLR_BOOT" "$@" 2>>"$LOGS/reassign.log"
}
# plan_json REPLICAS: every partition of bulk onto REPLICAS (a JSON list).
plan_json() {
  python3 -c 'import json, sys
n, replicas = int(sys.argv[1]), json.loads(sys.argv[2])
print(json.dumps({"version": 1, "partitions": [
    {"topic": "bulk", "partition": p, "replicas": replicas} for p in range(n)]}))' "$PARTS" "$1"
}
plan_json '[1]' > "$WORK/bulk-on-1.json"
plan_json '[1,2]' > "$WORK/bulk-on-1-2.json"
# wait_moves JSON LIMIT_S: until --verify says every move of JSON is done.
wait_moves() {
  local n
  for n in $(seq 1 $(($2 * 5))); do
    [ "$(reassign --verify --preserve-throttles --reassignment-json-file "$1" | grep -c 'is completed')" = "$PARTS" ] && return 0
    sleep 0.2
  done
  return 1
}

say "creating bulk ($PARTS partitions on broker 1) and live (RF 3)"
admin create "$ADDR" bulk "$PARTS" >/dev/null || die "could not create bulk"
wait_metadata "$ADDR" 60 bulk "$PARTS" || die "bulk did not appear"
reassign --execute --reassignment-json-file "$WORK/bulk-on-1.json" >/dev/null || die "could not place bulk on broker 1"
wait_moves "$WORK/bulk-on-1.json" 120 || die "bulk did not move onto broker 1"
reassign --verify --reassignment-json-file "$WORK/bulk-on-1.json" >/dev/null || true
admin create-replicated "$PLR_BOOT" live "$PARTS" 3 2 >/dev/null || die "could not create live"
wait_metadata "$ADDR" 60 live "$PARTS" || die "live did not appear"
sleep 1
say "filling bulk with $((REASSIGN_BYTES / 1048576)) MiB"
lg "reassign.fill" "$PLR_PIDS" 600 produce --bootstrap "$ADDR" --topic bulk --partitions "$PARTS" \
  --record-size "$RECORD" --key-space none --batch-bytes "$LG_BATCH" --linger-ms "$LG_LINGER" \
  --acks 1 --compression none --producers "$LG_CONNS" --records $((REASSIGN_BYTES / RECORD))

received_bytes() {  # the bytes of bulk's segment files on broker 2 (not its indexes)
  find "$WORK"/pinlog-rep-2/data -path '*/bulk-*' -name '*.log' -printf '%s\n' 2>/dev/null \
    | awk '{s += $1} END {print s + 0}'
}

for case_ in unthrottled throttled; do
  throttle=()
  [ "$case_" = throttled ] && throttle=(--throttle "$REASSIGN_THROTTLE")
  say "$case_: the live producer alone, ${P2_SECS}s at $REASSIGN_LIVE_RATE records/s"
  ACKS=all LINGER=$LG_P2_LINGER lg_produce "reassign.before.$case_" "$PLR_PIDS" "$ADDR" live \
    "$P2_SECS" "$P2_WARM" --rate "$REASSIGN_LIVE_RATE"
  say "$case_: adding broker 2 to every partition of bulk${throttle:+ (throttle ${REASSIGN_THROTTLE} B/s)}"
  # The live producer runs for the longest the copy may take.
  ACKS=all LINGER=$LG_P2_LINGER lg_produce "reassign.during.$case_" "$PLR_PIDS" "$ADDR" live \
    "${REASSIGN_LIVE_SECS:-30}" 0 --rate "$REASSIGN_LIVE_RATE" &
  live_pid=$!
  sleep 1
  t0=$(date +%s.%N)
  reassign --execute "${throttle[@]}" --reassignment-json-file "$WORK/bulk-on-1-2.json" \
    > "$RES/reassign.execute.$case_.out" || die "--execute failed: $(tail -3 "$LOGS/reassign.log")"
  wait_moves "$WORK/bulk-on-1-2.json" 600 || die "the $case_ copy did not complete in 600 s"
  t1=$(date +%s.%N)
  bytes=$(received_bytes)
  wait "$live_pid" || true
  # --verify of the completed moves removes the throttles.
  reassign --verify --reassignment-json-file "$WORK/bulk-on-1-2.json" > "$RES/reassign.verify.$case_.out" || true
  jq -n --arg c "$case_" --argjson bytes "$bytes" --argjson t0 "$t0" --argjson t1 "$t1" \
    --argjson throttle "$([ "$case_" = throttled ] && echo "$REASSIGN_THROTTLE" || echo null)" \
    '{case: $c, bytes: $bytes, seconds: ($t1 - $t0), mb_per_s: ($bytes / ($t1 - $t0) / 1e6), throttle: $throttle}' \
    > "$RES/reassign.copy.$case_.json"
  say "  copy ($case_): $(jq -c . "$RES/reassign.copy.$case_.json")"
  say "$case_: taking broker 2 off bulk again"
  reassign --execute --reassignment-json-file "$WORK/bulk-on-1.json" >/dev/null || die "could not take broker 2 off"
  wait_moves "$WORK/bulk-on-1.json" 120 || die "broker 2 did not leave bulk"
  reassign --verify --reassignment-json-file "$WORK/bulk-on-1.json" >/dev/null || true
  for _ in $(seq 1 100); do [ "$(received_bytes)" = 0 ] && break; sleep 0.2; done
done

# ---------------------------------------------------------------- report
write_report reassign_report.py REASSIGN_BYTES REASSIGN_THROTTLE REASSIGN_LIVE_RATE
