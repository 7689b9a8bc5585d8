# shellcheck shell=bash
# The replicated mode of tuning/compare.sh (`compare.sh --replicated`):
# 3 pinlog nodes against 3 Kafka 4.4 nodes on this machine, a topic with
# replication factor 3 and min.insync.replicas 2, produced with acks=all by
# the same load generator. Sourced by compare.sh after its plumbing (say,
# measure, lg_produce, admin, the Java helpers) is set up; writes $OUT.
#
#   R1  produce throughput, acks=all, flat out
#   R2  produce latency, acks=all, at 50% of Kafka's R1 rate
#   R3  idle: R3_PARTS partitions (default 1,000) of RF 3 on each cluster,
#       nothing produced or consumed; each cluster's CPU over the same
#       R3_SECS window, both idle at once
#   CPU every node's CPU seconds (user + system) per GB of record values
#       produced, summed over the three nodes of a cluster
#
# Rounds alternate between the clusters (pinlog, Kafka, pinlog, ...); both
# clusters run the whole time, the idle one waiting.

# The clusters (start_rep_clusters, create_replicated, rep_target).
# shellcheck source=tuning/rep_clusters.sh
source "$REPO/tuning/rep_clusters.sh"
start_rep_clusters replicated

# ---------------------------------------------------------------- R3
# First, while no deleted topic is left to clean up on either cluster.
R3_PARTS=${R3_PARTS:-1000}
R3_SECS=${R3_SECS:-$([ "$MODE" = quick ] && echo 15 || echo 30)}
# After the topic appears: Kafka's followers join the ISR, pinlog's new
# leaders write their epoch checkpoints; neither belongs to idle.
R3_SETTLE=${R3_SETTLE:-20}
say "R3: idle, $R3_PARTS partitions of RF $REP_RF on each cluster, CPU over ${R3_SECS}s (after ${R3_SETTLE}s)"
for b in pinlog kafka; do
  rep_target $b
  admin create-replicated "$boot" r3-idle "$R3_PARTS" "$REP_RF" "$REP_MIN_ISR" >/dev/null \
    || die "could not create r3-idle on $b"
done
for b in pinlog kafka; do
  rep_target $b
  wait_metadata "$addr" 120 r3-idle "$R3_PARTS" || die "r3-idle's $R3_PARTS partitions did not appear on $b"
done
sleep "$R3_SETTLE"
r3_p0=$(cpu_ticks "$PLR_PIDS"); r3_k0=$(cpu_ticks "$KFR_PIDS")
sleep "$R3_SECS"
r3_p1=$(cpu_ticks "$PLR_PIDS"); r3_k1=$(cpu_ticks "$KFR_PIDS")
alive "$PLR_PIDS" && alive "$KFR_PIDS" || die "a node exited during R3 (see the logs in $LOGS)"
jq -n --argjson secs "$R3_SECS" --argjson parts "$R3_PARTS" \
  --argjson p "$(awk -v a="$r3_p0" -v b="$r3_p1" -v t="$CLK_TCK" 'BEGIN{print (b - a) / t}')" \
  --argjson k "$(awk -v a="$r3_k0" -v b="$r3_k1" -v t="$CLK_TCK" 'BEGIN{print (b - a) / t}')" \
  '{secs: $secs, partitions: $parts, pinlog_cpu_s: $p, kafka_cpu_s: $k}' > "$RES/r3.json"
say "  pinlog $(jq .pinlog_cpu_s "$RES/r3.json") CPU s, Kafka $(jq .kafka_cpu_s "$RES/r3.json") CPU s"
for b in pinlog kafka; do
  rep_target $b
  admin delete "$boot" r3-idle >/dev/null || say "  (delete of r3-idle on $b failed)"
done

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
