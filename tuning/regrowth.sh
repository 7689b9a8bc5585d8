#!/usr/bin/env bash
# What the read cache pays to grow again after it let go of its memory
# (issue 33): a topic the cache was full of is deleted, and produce goes on
# to another topic at a steady rate, as after a test run's clean-up or a
# retention pass. The cache's blocks then come back as kept spares (at most
# READ_CACHE_SPARE_BLOCKS) or as fresh mappings, whose every page is taken
# anew (tuning/README.md, "Lazily freed spares", measured the alternative
# with this script). With --baseline, a second build runs the same rounds,
# alternating with this one, so that the two are compared side by side in
# one run.
#
#   tuning/regrowth.sh                          # target/release, 2 rounds
#   tuning/regrowth.sh --bin DIR                # DIR holds the build to measure
#   tuning/regrowth.sh --baseline DIR --rounds 3
#                                               # DIR holds another build's pinlog
#   tuning/regrowth.sh --rate 200000 --fill-s 10 --measure-s 20
#
# Each round: a fresh broker (compare.sh's: 2 shards, everything else
# default) in a temporary directory under target/; pinlog-loadgen produces
# flat out for --fill-s seconds to a topic of 12 partitions (256 KiB
# batches, linger 5 ms), the topic is deleted and the cache's bytes drop;
# then --measure-s seconds at --rate records/s (1 KiB records, linger 1 ms,
# compare.sh's P2 settings) to a second topic. Printed per round: the
# broker's CPU seconds per GB and page faults per MB over the second
# phase, the produce p99, and the blocks the cache mapped and reused in it.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$REPO"

bin=target/release
baseline=""
rounds=2
rate=200000
fill_s=10
measure_s=20
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --fill-s) fill_s=$2; shift 2 ;;
    --measure-s) measure_s=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "regrowth.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
builds=("$bin")
[ -z "$baseline" ] || builds+=("$baseline")
for dir in "${builds[@]}"; do
  [ -x "$dir/pinlog" ] || { echo "regrowth.sh: no $dir/pinlog; build it first (cargo build --release)" >&2; exit 1; }
done
LOADGEN=target/release/pinlog-loadgen
[ -x "$LOADGEN" ] || { echo "regrowth.sh: no $LOADGEN; build it first (cargo build --release)" >&2; exit 1; }
for tool in kcat curl jq python3; do
  command -v $tool >/dev/null || { echo "regrowth.sh: $tool is needed" >&2; exit 1; }
done

PARTS=12
# The deleted topic's cached bytes are gone when the cache holds less than this.
DRAINED_BYTES=$((64 << 20))
PID=""
WORK=""
cleanup() {
  [ -z "$PID" ] || kill -KILL "$PID" 2>/dev/null || true
  wait 2>/dev/null || true
  [ -z "$WORK" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# stat_fields PID: minor faults + major faults, then user + system ticks.
stat_fields() { awk '{print $10 + $12, $14 + $15}' "/proc/$1/stat"; }
# metric PORT FAMILY: a family's value summed over the shards; fails when
# the broker does not answer or has no such family.
metric() {
  curl -sf --max-time 5 "http://127.0.0.1:$1/metrics" \
    | awk -v f="$2" '$1 == f || index($1, f "{") == 1 {s += $2; n++} END {if (!n) exit 1; print s}'
}
# stop PID: SIGTERM, then SIGKILL if it has not stopped within 30 s.
stop() {
  local end=$((SECONDS + 30))
  kill -TERM "$1" 2>/dev/null || return 0
  while kill -0 "$1" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
lg() {  # lg TOPIC SECONDS [extra args]: one produce run's JSON
  local topic=$1 secs=$2; shift 2
  timeout $((secs + 60)) "$LOADGEN" produce --bootstrap "127.0.0.1:$PORT" --topic "$topic" \
    --partitions $PARTS --record-size 1024 --key-space none --acks 1 --compression none \
    --producers 4 --duration "${secs}s" --warmup 2s --json --quiet "$@" | grep '^{' | tail -1
}

TICK=$(getconf CLK_TCK)
echo "| round | build | MB/s | p99 ms | CPU s per GB | faults per MB | blocks mapped | blocks reused |"
echo "|---|---|---|---|---|---|---|---|"
for round in $(seq 1 "$rounds"); do
  for dir in "${builds[@]}"; do
    WORK=$(mktemp -d "$REPO/target/regrowth.XXXXXX")
    PORT=$(free_port); MPORT=$(free_port)
    printf '"metrics.listen" = "127.0.0.1:%s"\n' "$MPORT" > "$WORK/pinlog.toml"
    "$dir/pinlog" serve --data-dir "$WORK/data" --listen "127.0.0.1:$PORT" --shards 2 \
      --config "$WORK/pinlog.toml" > "$WORK/broker.log" 2>&1 &
    PID=$!
    end=$((SECONDS + 30))
    until listening "$PORT" && kcat -L -b "127.0.0.1:$PORT" -m 2 >/dev/null 2>&1; do
      [ $SECONDS -lt $end ] || { echo "regrowth.sh: $dir/pinlog did not start: $(tail -3 "$WORK/broker.log")" >&2; exit 1; }
      sleep 0.1
    done
    lg fill "$fill_s" --batch-bytes 262144 --linger-ms 5 > /dev/null
    "$dir/pinlog" topic delete fill --bootstrap-server "127.0.0.1:$PORT" > /dev/null
    end=$((SECONDS + 30))
    until used=$(metric "$MPORT" pinlog_read_cache_bytes) && [ "$used" -lt $DRAINED_BYTES ]; do
      [ $SECONDS -lt $end ] || { echo "regrowth.sh: the deleted topic's cache did not drain in 30 s (read: ${used:-no answer})" >&2; exit 1; }
      sleep 0.2
    done
    mapped0=$(metric "$MPORT" pinlog_read_cache_blocks_mapped_total)
    reused0=$(metric "$MPORT" pinlog_read_cache_blocks_reused_total)
    read -r faults0 ticks0 < <(stat_fields "$PID")
    out=$(lg steady "$measure_s" --batch-bytes 262144 --linger-ms 1 --rate "$rate")
    read -r faults1 ticks1 < <(stat_fields "$PID")
    mapped1=$(metric "$MPORT" pinlog_read_cache_blocks_mapped_total)
    reused1=$(metric "$MPORT" pinlog_read_cache_blocks_reused_total)
    # The CPU and faults span the warm-up too: its bytes count with the run's.
    build=$([ "$dir" = "${builds[0]}" ] && echo this || echo baseline)
    jq -r --arg r "$round" --arg build "$build" --argjson ticks $((ticks1 - ticks0)) --argjson tck "$TICK" \
      --argjson faults $((faults1 - faults0)) --argjson warm_s 2 \
      --argjson mapped $((mapped1 - mapped0)) --argjson reused $((reused1 - reused0)) '
      (.bytes * (1 + $warm_s / .duration_s)) as $bytes
      | "| \($r) | \($build) | \(.mb_per_s * 10 | round / 10) | \(.latency_us.p99 / 100 | round / 10) | \(($ticks / $tck) / ($bytes / 1e9) * 100 | round / 100) | \($faults / ($bytes / 1e6) * 10 | round / 10) | \($mapped) | \($reused) |"' <<< "$out"
    stop "$PID"; PID=""
    rm -rf "$WORK"; WORK=""
  done
done
