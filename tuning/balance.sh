# The core balancer mode of tuning/compare.sh (`compare.sh --balance`):
# what balancing the shards of one broker buys a skewed load. pinlog only;
# the figure is a ratio within one run: the same producer's throughput
# with both of its partitions on one shard, against after the balancer
# (shard.balancer.enable) spread them. Sourced by compare.sh after its
# plumbing; writes $OUT.
#
# One pinlog broker with 2 shards and the balancer on (measured every
# second, moving after BALANCE_SUSTAIN_MS of imbalance). Topic `skew` has
# 2 partitions, both put on shard 0 with `pinlog partition move`. Each
# round:
#   skewed    the producer (P1's settings, unpaced) for BAL_SECS, shorter
#             than the sustain time, so nothing moves during it
#   balancing the same producer in 5 s runs until the balancer has moved
#             one partition to shard 1 (topic describe's SHARD column)
#   balanced  the producer again for BAL_SECS
# and the next round moves the partition back to shard 0 by hand.

BAL_ROUNDS=${BAL_ROUNDS:-$([ "$MODE" = quick ] && echo 1 || echo 3)}
BAL_SECS=${BAL_SECS:-$([ "$MODE" = quick ] && echo 6 || echo 10)}
BAL_WARM=2
BALANCE_SUSTAIN_MS=${BALANCE_SUSTAIN_MS:-20000}
PARTS=2
# P1's batches by default; BAL_BATCH=16384 makes many more appends per
# second, so that the owning shard's CPU matters more than the disk.
LG_BATCH=${BAL_BATCH:-$LG_BATCH}

dir="$WORK/pinlog-balance"
mkdir -p "$dir"
cat > "$dir/pinlog.toml" <<TOML
"metrics.listen" = "127.0.0.1:$(free_port)"
"shard.balancer.enable" = true
"shard.balancer.interval.ms" = 1000
"shard.balancer.sustain.ms" = $BALANCE_SUSTAIN_MS
# The producer is unpaced for minutes: retention keeps the disk from
# filling (2 GiB per partition, checked every second).
"log.segment.bytes" = 268435456
"log.retention.bytes" = 2147483648
"log.retention.check.interval.ms" = 1000
TOML
BAL_PORT=$(free_port); ADDR="127.0.0.1:$BAL_PORT"
say "balance mode: one pinlog broker, 2 shards, the core balancer on (sustain ${BALANCE_SUSTAIN_MS} ms)"
"$PINLOG_BIN" serve --data-dir "$dir/data" --listen "$ADDR" --shards 2 --config "$dir/pinlog.toml" \
  >> "$LOGS/pinlog-balance.log" 2>&1 &
BAL_PID=$!; PIDS+=("$BAL_PID")
wait_metadata "$ADDR" 30 || die "pinlog did not come up: $(tail -5 "$LOGS/pinlog-balance.log")"

pl() { "$PINLOG_BIN" "$@" --bootstrap-server "$ADDR"; }
shard_of() {  # shard_of P: the shard that owns skew-P
  pl topic describe skew --json | jq -r ".topics[0].partitions[] | select(.partition == $1) | .leader_shard"
}
pl topic create skew --partitions 2 >/dev/null || die "could not create skew"
wait_metadata "$ADDR" 60 skew 2 || die "skew did not appear"

for r in $(seq 1 "$BAL_ROUNDS"); do
  for p in 0 1; do
    [ "$(shard_of $p)" = 0 ] || pl partition move "skew-$p" --shard 0 >/dev/null \
      || die "could not move skew-$p to shard 0"
  done
  say "round $r: both partitions on shard 0"
  lg_produce "balance.skewed.$r" "$BAL_PID" "$ADDR" skew "$BAL_SECS" "$BAL_WARM"
  [ "$(shard_of 0)" = 0 ] && [ "$(shard_of 1)" = 0 ] \
    || die "the balancer moved during the skewed run: raise BALANCE_SUSTAIN_MS above $((BAL_SECS + BAL_WARM)) s"
  t0=$(date +%s.%N)
  k=0
  while [ "$(shard_of 0)" = "$(shard_of 1)" ]; do
    k=$((k + 1))
    [ $k -le 12 ] || die "the balancer did not move a partition within 12 runs of 5 s"
    lg_produce "balance.moving.$r.$k" "$BAL_PID" "$ADDR" skew 5 0
  done
  t1=$(date +%s.%N)
  jq -n --argjson s "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" --argjson runs "$k" \
    --arg shards "skew-0 on $(shard_of 0), skew-1 on $(shard_of 1)" \
    '{seconds: $s, runs: $runs, placement: $shards}' > "$RES/balance.moved.$r.json"
  say "  balanced after $k run(s): $(jq -c . "$RES/balance.moved.$r.json")"
  lg_produce "balance.balanced.$r" "$BAL_PID" "$ADDR" skew "$BAL_SECS" "$BAL_WARM"
done
grep -h "balancing the shards" "$LOGS/pinlog-balance.log" | sed 's/\x1b\[[0-9;]*m//g' \
  > "$RES/balance.decisions.txt" || true

# ---------------------------------------------------------------- report
write_report balance_report.py BAL_ROUNDS BAL_SECS BAL_WARM BALANCE_SUSTAIN_MS
