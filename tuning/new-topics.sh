#!/usr/bin/env bash
# New topics' first seconds under produce load on a 3-node cluster: creates
# TOPICS topics one after another (12 partitions, RF 3, min.insync.replicas
# 2) and runs pinlog-loadgen produce on each at once, from its first record
# (no warm-up), printing each run's latency line. A new topic's first
# produces wait for its followers to start fetching it, so this is where a
# follower's fetch parked at the leader shows (tuning/results-replicated.md,
# "A new topic's first second").
#
# Usage: tuning/new-topics.sh [--bin DIR] [--topics N] [--rate R]
#                             [--acks all|1] [--seconds S]
#   --bin      where pinlog and pinlog-loadgen are (default target/release)
#   --topics   topics created one after another (default 3)
#   --rate     records/s of 1 KiB (default 20000)
#   --acks     the producer's acks (default all)
#   --seconds  each run's length (default 5)
# The nodes run one shard each, pinned round-robin over the CPUs this
# script may use, as tuning/pinlog_cluster.sh does. Everything is removed
# on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=target/release TOPICS=3 RATE=20000 ACKS=all SECS=5
while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --topics) TOPICS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --acks) ACKS=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    *) echo "new-topics.sh: unknown argument $1 (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done
for b in pinlog pinlog-loadgen; do
  [ -x "$BIN/$b" ] || { echo "new-topics.sh: $BIN/$b not found: run cargo build --release first, or pass --bin" >&2; exit 2; }
done

WORK=$(mktemp -d -t pinlog-new-topics.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 1
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

declare -A PORT CTRL
VOTERS=""
for i in 1 2 3; do
  PORT[$i]=$(free_port); CTRL[$i]=$(free_port)
  VOTERS+="${VOTERS:+,}$i@127.0.0.1:${CTRL[$i]}"
done
read -r -a CPUS <<< "$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))')"
for i in 1 2 3; do
  mkdir -p "$WORK/n$i"
  printf '"shard.spin.before.park.us" = 0\n"metrics.listen" = "127.0.0.1:%s"\n' "$(free_port)" > "$WORK/n$i.toml"
  taskset -c "${CPUS[$(( (i - 1) % ${#CPUS[@]} ))]}" "$BIN/pinlog" serve --node-id "$i" \
    --controller-quorum-voters "$VOTERS" --shards 1 --listen "127.0.0.1:${PORT[$i]}" \
    --data-dir "$WORK/n$i" --config "$WORK/n$i.toml" > "$WORK/n$i.log" 2>&1 &
  PIDS+=($!)
done
BOOT="127.0.0.1:${PORT[1]}"
for n in $(seq 1 120); do
  "$BIN/pinlog" topic list --bootstrap-server "$BOOT" > /dev/null 2>&1 && break
  [ "$n" = 120 ] && { echo "new-topics.sh: the cluster did not come up in 60 s; node 1's log: $WORK/n1.log" >&2; tail -20 "$WORK/n1.log" >&2; exit 1; }
  sleep 0.5
done
echo "3 nodes up; $TOPICS topics, acks=$ACKS, $RATE records/s for ${SECS}s each" >&2
for t in $(seq 1 "$TOPICS"); do
  "$BIN/pinlog" topic create "new-$t" --partitions 12 --replication-factor 3 \
    --config min.insync.replicas=2 --bootstrap-server "$BOOT" > /dev/null
  line=$("$BIN/pinlog-loadgen" produce --bootstrap "$BOOT" --topic "new-$t" --acks "$ACKS" \
    --linger-ms 1 --rate "$RATE" --warmup 0 --duration "$SECS" --producers 3 2>&1 | grep '^latency:') ||
    { echo "new-topics.sh: the producer on new-$t failed" >&2; exit 1; }
  echo "topic $t: $line"
done
