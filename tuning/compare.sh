#!/usr/bin/env bash
# pinlog against Apache Kafka 4.4 on this machine, side by side, plus the raw
# produce baseline. Writes tuning/results.md (see tuning/README.md).
#
# Usage: tuning/compare.sh [--quick] [--out FILE] [--skip-build] [--keep]
#                          [--no-kafka-p4] [--report-only WORKDIR]
#                          [--replicated | --transactional | --reassign | --balance
#                           | --tls | --groups | --share]
#   --quick        about 4 minutes: one round per workload, short runs,
#                  P3 over 1 GiB instead of 2 GiB, P4 on pinlog only
#   --out FILE     where to write the report (default tuning/results.md)
#   --skip-build   use the binaries already built (target/release/pinlog,
#                  target/release/pinlog-loadgen, tuning/raw-sink/target/...)
#   --keep         keep the work directory (logs, JSON of every run)
#   --no-kafka-p4  skip Kafka in P4 (10,000 partitions)
#   --report-only WORKDIR
#                  write the report of a P1-P5 run kept with --keep again,
#                  from WORKDIR's results, with tuning/compare_report.py as
#                  it is now (to --out FILE, default tuning/results.md)
#   --throttle-mbps N
#                  a slow disk: the work directory (both brokers' data, the
#                  raw sink's) goes on an ext4 file system on a loop device
#                  whose writes are limited to N MB/s (cgroup v1 blkio
#                  throttle of the root group, so it also limits the
#                  kernel's writeback of Kafka's page cache). Needs root.
#   --p2-load PERCENT
#                  pace P2 at PERCENT of Kafka's P1 median instead of 50
#                  (the issue's second load point is 80)
#   --only "LIST"  run only these sections, among raw p1 p2 p3 p3big java p5 p4
#                  (for development: the report then has gaps; p2 needs p1,
#                  or P2_RATE=<records/s> in the environment)
#   --replicated   instead of the above: 3 pinlog nodes against 3 Kafka
#                  nodes, replication factor 3, acks=all,
#                  min.insync.replicas=2, and both clusters idle with
#                  1,000 such partitions (tuning/replicated.sh; report in
#                  tuning/results-replicated.md unless --out)
#   --transactional
#                  instead of the above: the same two 3-node clusters,
#                  transactions from 4 Java producers (tuning/TxnPerf.java):
#                  committed throughput and commit latency with 100 and
#                  1,000 records per transaction, read_committed against
#                  read_uncommitted catch-up on the same data, cluster CPU
#                  seconds per GB (tuning/transactional.sh; report in
#                  tuning/results-transactional.md unless --out; --quick:
#                  one round of short runs, about 6 minutes)
#   --reassign     instead of the above: 3 pinlog nodes; the copy rate of
#                  a reassignment with and without a replication throttle,
#                  and a paced producer's p99 before and during the copy
#                  (tuning/reassign.sh; report in
#                  tuning/results-reassign.md unless --out)
#   --balance      instead of the above: one pinlog broker of 2 shards with
#                  the core balancer on; a producer's throughput with its
#                  2 partitions on one shard, then after the balancer
#                  spread them (tuning/balance.sh; report in
#                  tuning/results-balance.md unless --out)
#   --tls          instead of the above: one pinlog broker and one Kafka
#                  broker, each with PLAINTEXT, SSL (RSA 2048), SSLEC (EC
#                  P-256) and SASL_SSL (SCRAM-SHA-512) listeners: produce
#                  and catch-up throughput over TLS against plaintext, and
#                  connection storms on every listener (tuning/tls.sh;
#                  report in tuning/results-tls.md unless --out; --quick:
#                  about 5 minutes)
#   --groups       instead of the above: one pinlog broker and one Kafka
#                  broker, a topic of 1,000 partitions and a group of 100
#                  consumers (tuning/GroupRebalance.java): the time from a
#                  member's join, or a member's crash (kill -9), until every
#                  partition is owned again, records/s consumed in that
#                  window and the longest consumption gap of the members
#                  whose partitions did not move; KIP-848 on pinlog, classic
#                  (cooperative-sticky) on pinlog, KIP-848 on Kafka
#                  (tuning/groups.sh; report in tuning/results-groups.md
#                  unless --out; --quick: one round)
#   --share        instead of the above: one pinlog broker and one Kafka
#                  broker, a topic of 6 partitions; share groups (KIP-932,
#                  implicit and explicit acknowledgement) against classic
#                  groups on the same topic, 3 and 6 consumers: records/s
#                  to drain a backlog, and produce-to-acknowledgement
#                  p50/p99 at a fixed rate (tuning/SharePerf.java,
#                  tuning/share.sh; report in tuning/results-share.md
#                  unless --out; full: about 9 minutes; --quick: one
#                  round, about 3 minutes)
#
# What runs (all on loopback, free ports, one work directory on the same
# disk as the repository, removed at the end):
#   raw   tuning/raw-sink: TCP into O_DIRECT files (the physical limit)
#   P1    produce throughput, acks=1, 1 KiB records, 12 partitions
#   P2    produce latency at a fixed 50% (--p2-load) of Kafka's P1 rate, beside the
#         disk's own latency at that byte rate (raw-sink pace)
#   P3    consume: catch-up over the data set, and tailing (e2e)
#   P3big consume from the earliest offset over a data set larger than the
#         read cache's old default (a quarter of memory) but below RAM:
#         as written and re-read warm, one broker at a time (issue 33)
#   P4    10,000 partitions: RSS per idle partition, restart time
#   P5    P1 on pinlog with --shards 1 and --shards 2
#   java  Kafka's ProducerPerformance / ConsumerPerformance on both brokers
# Workloads alternate between the brokers (pinlog, Kafka, pinlog, Kafka, ...)
# and every ratio in the report comes from this one run.
#
# Environment: PINLOG_BIN (the pinlog binary to measure; default
# target/release/pinlog, e.g. an older build to compare with), LOADGEN_BIN
# (the load generator; default target/release/pinlog-loadgen), PINLOG_KAFKA_LIBS (Kafka 4.4 jars; fetched by
# tests/kafka/fetch-kafka.sh when missing), COMPARE_WORK_PARENT (where the
# work directory goes; default target/ of the repository, which must not be
# tmpfs), KAFKA_HEAP (default 2g).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
MODE=full
OUT="$REPO/tuning/results.md"
SKIP_BUILD=0
KEEP=0
KAFKA_P4=1
ONLY=""
REPORT_ONLY=""
REPLICATED=0
TRANSACTIONAL=0
REASSIGN=0
BALANCE=0
TLS=0
GROUPS_MODE=0
SHARE_MODE=0
OUT_SET=0
THROTTLE_MBPS=0
P2_LOAD=50
ARGV_STR="$*"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) MODE=quick ;;
    --out) OUT="$2"; OUT_SET=1; shift ;;
    --skip-build) SKIP_BUILD=1 ;;
    --keep) KEEP=1 ;;
    --no-kafka-p4) KAFKA_P4=0 ;;
    --only) ONLY="$2"; shift ;;
    --p2-load) P2_LOAD="$2"; shift ;;
    --report-only) REPORT_ONLY="$2"; shift ;;
    --throttle-mbps) THROTTLE_MBPS="$2"; shift ;;
    --replicated) REPLICATED=1 ;;
    --transactional) TRANSACTIONAL=1; REPLICATED=1 ;;
    --reassign) REASSIGN=1; REPLICATED=1 ;;
    --balance) BALANCE=1; REPLICATED=1 ;;
    --tls) TLS=1; REPLICATED=1 ;;
    --groups) GROUPS_MODE=1; REPLICATED=1 ;;
    --share) SHARE_MODE=1; REPLICATED=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "compare.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if [ -n "$REPORT_ONLY" ]; then
  # The report of a run kept with --keep, written again from its results
  # with tuning/compare_report.py as it is now (P1-P5 runs only).
  env_="$REPORT_ONLY/results/report-env.sh"
  [ -f "$env_" ] || { echo "compare.sh: $env_ not found: --report-only takes the work directory of a P1-P5 run kept with --keep" >&2; exit 2; }
  out_=$OUT
  # shellcheck disable=SC1090
  . "$env_"
  export RES="$REPORT_ONLY/results" TUNING_DIR="$REPO/tuning" OUT="$out_"
  python3 "$TUNING_DIR/compare_report.py" > "$OUT.tmp" || { echo "compare.sh: the report failed" >&2; exit 1; }
  mv -f "$OUT.tmp" "$OUT"
  echo "compare.sh: wrote $OUT from $REPORT_ONLY"
  exit 0
fi

if [ "$REPLICATED" = 1 ]; then
  [ -z "$ONLY" ] || { echo "compare.sh: --replicated (and --transactional, --reassign, --balance, --tls, --groups, --share) run their own workloads; they do not take --only" >&2; exit 2; }
  ONLY="replicated"
  if [ "$TLS" = 1 ]; then
    [ "$OUT_SET" = 1 ] || OUT="$REPO/tuning/results-tls.md"
  elif [ "$GROUPS_MODE" = 1 ]; then
    [ "$OUT_SET" = 1 ] || OUT="$REPO/tuning/results-groups.md"
  elif [ "$SHARE_MODE" = 1 ]; then
    [ "$OUT_SET" = 1 ] || OUT="$REPO/tuning/results-share.md"
  elif [ "$REASSIGN" = 1 ]; then
    [ "$OUT_SET" = 1 ] || OUT="$REPO/tuning/results-reassign.md"
  elif [ "$BALANCE" = 1 ]; then
    [ "$OUT_SET" = 1 ] || OUT="$REPO/tuning/results-balance.md"
  elif [ "$TRANSACTIONAL" = 1 ]; then
    [ "$OUT_SET" = 1 ] || OUT="$REPO/tuning/results-transactional.md"
  else
    [ "$OUT_SET" = 1 ] || OUT="$REPO/tuning/results-replicated.md"
  fi
fi
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
MAIN=0   # whether the main pinlog and Kafka brokers are needed
for s_ in p1 p2 p3 p3big java p5; do if want $s_; then MAIN=1; fi; done

# ---------------------------------------------------------------- settings
RECORD=1024            # bytes per record value
PARTS=12               # partitions for P1, P2, P3
if [ "$MODE" = full ]; then
  RAW_ROUNDS=2; RAW_SECS=10
  P1_ROUNDS=3; P1_SECS=15; P1_WARM=3; P1_JIT_SECS=15
  P2_ROUNDS=2; P2_SECS=30; P2_WARM=3
  P3_BYTES=$((2 * 1024 * 1024 * 1024)); P3_ROUNDS=2
  TAIL_ROUNDS=2; TAIL_SECS=15; TAIL_WARM=3
  P4_PARTS=10000
  P5_ROUNDS=2; P5_SECS=12; P5_WARM=3
  JAVA_RECORDS=1000000
else
  RAW_ROUNDS=1; RAW_SECS=4
  P1_ROUNDS=1; P1_SECS=6; P1_WARM=2; P1_JIT_SECS=5
  P2_ROUNDS=1; P2_SECS=8; P2_WARM=2
  P3_BYTES=$((1024 * 1024 * 1024)); P3_ROUNDS=1
  TAIL_ROUNDS=1; TAIL_SECS=6; TAIL_WARM=2
  P4_PARTS=10000; KAFKA_P4=0
  P5_ROUNDS=1; P5_SECS=5; P5_WARM=1
  JAVA_RECORDS=300000
fi
P3_RECORDS=$((P3_BYTES / RECORD))
# P3big: 2.5x the read cache's old default of a quarter of memory (14 GiB
# of 24 GiB here), below RAM so that Kafka's page cache can hold all of it.
# P3BIG_BYTES in the environment sets it; the section is skipped when the
# disk or the memory cannot hold it.
MEM_BYTES=$(( $(awk '/^MemTotal:/{print $2}' /proc/meminfo) * 1024 ))
P3BIG_BYTES=${P3BIG_BYTES:-$(( MEM_BYTES / 4 * 5 / 2 / 1048576 * 1048576 ))}
P3BIG_RECORDS=$((P3BIG_BYTES / RECORD))
if [ "$MODE" = full ]; then P3BIG_ROUNDS=2; else P3BIG_ROUNDS=1; fi
P4_CHUNK=500           # P4's partitions come as topics of this many
KAFKA_P1_RPS=0; DROP_CACHES=0; P2_RATE_ENV=${P2_RATE:-}
# The client settings every loadgen run shares, whatever the broker.
LG_BATCH=262144        # bytes per partition batch
LG_LINGER=5            # ms
LG_CONNS=4             # producer connections
LG_P2_LINGER=1         # ms, for the latency workload
KAFKA_HEAP="${KAFKA_HEAP:-2g}"
KAFKA_VERSION=4.4.0
KAFKA_LIBS="${PINLOG_KAFKA_LIBS:-$HOME/.cache/pinlog/kafka-$KAFKA_VERSION/libs}"
# Every Kafka broker's JVM (the flags of Kafka's start script). Here, before
# the modes below branch off: the replicated modes' nodes take these too,
# with their own heap size.
KAFKA_JVM=(-Xmx"$KAFKA_HEAP" -Xms"$KAFKA_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
           -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent
           -Djava.awt.headless=true)

PINLOG_BIN="${PINLOG_BIN:-$REPO/target/release/pinlog}"
LOADGEN_BIN="${LOADGEN_BIN:-$REPO/target/release/pinlog-loadgen}"
RAWSINK_DIR="$REPO/tuning/raw-sink"
RAWSINK_BIN="$RAWSINK_DIR/target/release/raw-sink"

# ---------------------------------------------------------------- plumbing
T0=$(date +%s)
say() { printf '[compare %4ds] %s\n' "$(( $(date +%s) - T0 ))" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

PIDS=()          # every long-running process we started
FG=""            # the measured client running now (/usr/bin/time's pid)
WORK=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local p
  if [ -n "$FG" ]; then
    # /usr/bin/time -> timeout -> client, or timeout -> java: timeout
    # passes SIGTERM on to its child.
    pkill -TERM -P "$FG" 2>/dev/null || true
    kill -TERM "$FG" 2>/dev/null || true
    wait "$FG" 2>/dev/null || true
  fi
  for p in "${PIDS[@]}"; do
    kill -TERM "$p" 2>/dev/null || true
  done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 1 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [ -n "$WORK" ] && [ -d "$WORK" ]; then
    if [ "$rc" != 0 ] && [ "$KEEP" != 1 ]; then
      for p in "$WORK"/logs/pinlog-*.log "$WORK"/logs/kafka-*.log; do
        [ -f "$p" ] || continue
        say "last lines of $(basename "$p"):"
        tail -3 "$p" | sed 's/\x1b\[[0-9;]*m//g' >&2
      done
    fi
    if [ "$KEEP" = 1 ] && [ -n "$THR_MNT" ]; then
      # The slow disk goes with its image: keep the logs and results.
      local kept
      kept="$(mktemp -d "$WORK_PARENT/compare.kept.XXXXXX")"
      cp -a "$WORK/logs" "$WORK/results" "$kept/" 2>/dev/null || true
      say "kept the logs and results in $kept"
    elif [ "$KEEP" = 1 ]; then
      say "kept $WORK"
    else
      rm -rf "$WORK"
    fi
  fi
  release_throttled_disk
  exit "$rc"
}
# The slow disk of --throttle-mbps: an image file on the repository's disk,
# a loop device over it (direct I/O, so the loop adds no page cache of its
# own), ext4, and a write limit on the loop device in the root blkio
# cgroup. A limit there applies to every writer, the kernel's writeback
# threads included, so Kafka's page-cache writes are held to it as
# pinlog's direct writes are.
THR_IMG=""; THR_LOOP=""; THR_MNT=""; THR_DEV=""
THR_KNOB=/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device
make_throttled_disk() {  # make_throttled_disk PARENT GIB MBPS: sets THR_MNT
  local parent=$1 gib=$2 mbps=$3
  [ "$(id -u)" = 0 ] || die "--throttle-mbps needs root (a loop device and a blkio limit)"
  [ -w "$THR_KNOB" ] || die "--throttle-mbps needs cgroup v1's blkio controller ($THR_KNOB)"
  for tool in losetup mkfs.ext4 mount umount; do
    command -v "$tool" >/dev/null 2>&1 || die "--throttle-mbps needs $tool"
  done
  THR_IMG="$(mktemp "$parent/throttled.XXXXXX.img")"
  truncate -s "${gib}G" "$THR_IMG"
  mkfs.ext4 -q -F "$THR_IMG" || die "mkfs.ext4 of $THR_IMG failed"
  THR_LOOP=$(losetup --find --show --direct-io=on "$THR_IMG") || die "losetup failed"
  THR_MNT="${THR_IMG%.img}.mnt"
  mkdir -p "$THR_MNT"
  mount "$THR_LOOP" "$THR_MNT" || die "mounting $THR_LOOP failed"
  THR_DEV=$(lsblk -dno MAJ:MIN "$THR_LOOP" | tr -d ' ')
  echo "$THR_DEV $((mbps * 1000000))" > "$THR_KNOB" || die "setting the write limit failed"
}
release_throttled_disk() {
  [ -z "$THR_DEV" ] || echo "$THR_DEV 0" > "$THR_KNOB" 2>/dev/null || true
  [ -z "$THR_MNT" ] || { umount "$THR_MNT" 2>/dev/null || umount -l "$THR_MNT" 2>/dev/null || true; rmdir "$THR_MNT" 2>/dev/null || true; }
  [ -z "$THR_LOOP" ] || losetup -d "$THR_LOOP" 2>/dev/null || true
  [ -z "$THR_IMG" ] || rm -f "$THR_IMG"
  THR_DEV=""; THR_MNT=""; THR_LOOP=""; THR_IMG=""
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

forget_pid() {  # forget_pid PID: drop it from PIDS once it has exited
  local p keep=()
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# stop_pid PID SECONDS: SIGTERM, wait up to SECONDS, then SIGKILL. Prints
# the seconds it took to exit.
stop_pid() {
  local pid=$1 limit=$2 t0 t1
  t0=$(date +%s.%N)
  kill -TERM "$pid" 2>/dev/null || true
  local n=$((limit * 10))
  while kill -0 "$pid" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
  if kill -0 "$pid" 2>/dev/null; then
    say "pid $pid did not stop in ${limit}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  t1=$(date +%s.%N)
  forget_pid "$pid"
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}'
}

# settle: before every measured run, write back what earlier runs left
# dirty in the page cache (Kafka's data, deleted topics), so that no run pays
# for the writeback of the run before it. Alternating A/B would otherwise
# charge Kafka's writeback to the pinlog run that follows it.
settle() {
  sleep 1
  sync
  local n=0
  while [ "$(awk '/^Dirty:/{print $2}' /proc/meminfo)" -gt 65536 ] && [ $n -lt 30 ]; do
    sync; sleep 1; n=$((n + 1))
  done
}
CLK_TCK=$(getconf CLK_TCK)
# alive PID[,PID...]: every one of them still runs.
alive() { local p; for p in ${1//,/ }; do kill -0 "$p" 2>/dev/null || return 1; done; }
# cpu_ticks PID[,PID...]: user + system clock ticks, summed (a cluster's).
cpu_ticks() {
  local p t=0
  for p in ${1//,/ }; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
  echo "$t"
}
rss_kib() { awk '/^VmRSS:/{print $2}' "/proc/$1/status"; }

# listening HOST:PORT: whether something accepts TCP connections there.
listening() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }

# wait_metadata ADDR SECONDS [TOPIC PARTITIONS]: until a Metadata request
# succeeds (and, with TOPIC, reports PARTITIONS partitions for it).
wait_metadata() {
  local addr=$1 topic=${3:-} want=${4:-} got end=$((SECONDS + $2))
  while [ $SECONDS -lt $end ]; do
    if [ -z "$topic" ]; then
      # Only ask once the port accepts: a kcat started before the broker
      # listens backs off between connection attempts and gives up only at
      # its -m timeout, which made P4's restart read 2.1 s for a broker
      # that answered at 1.4 s.
      listening "$addr" && kcat -L -b "$addr" -m 2 >/dev/null 2>&1 && return 0
    else
      got=$(kcat -L -b "$addr" -t "$topic" -m 5 2>/dev/null \
            | sed -n 's/.*topic "'"$topic"'" with \([0-9]*\) partitions.*/\1/p' || true)
      [ "$got" = "$want" ] && return 0
    fi
    sleep 0.1
  done
  return 1
}

# wait_partitions ADDR SECONDS PREFIX TOTAL: until Metadata reports TOTAL
# partitions over the topics whose names start with PREFIX.
wait_partitions() {
  local addr=$1 limit=$2 prefix=$3 want=$4 got end=$((SECONDS + $2))
  while [ $SECONDS -lt $end ]; do
    got=$(kcat -L -b "$addr" -m 10 2>/dev/null \
          | sed -n 's/^ *topic "'"$prefix"'[0-9]*" with \([0-9]*\) partitions.*/\1/p' \
          | awk '{s += $1} END {print s + 0}' || true)
    [ "$got" = "$want" ] && return 0
    sleep 0.1
  done
  return 1
}

# ---------------------------------------------------------------- preflight
[[ "$P2_LOAD" =~ ^[1-9][0-9]?$ ]] || die "--p2-load takes a percentage of Kafka's P1 rate from 1 to 99, not $P2_LOAD"
for tool in java javac kcat jq python3 /usr/bin/time cargo; do
  command -v "$tool" >/dev/null 2>&1 || die "needs $tool on PATH"
done
WORK_PARENT="${COMPARE_WORK_PARENT:-$REPO/target}"
mkdir -p "$WORK_PARENT"
[ "$(stat -f -c %T "$WORK_PARENT")" != tmpfs ] || die "$WORK_PARENT is tmpfs: O_DIRECT needs a real disk"
need_gib=$([ "$MODE" = full ] && [ "$GROUPS_MODE" = 0 ] && [ "$SHARE_MODE" = 0 ] && echo 30 || echo 10)  # --groups and --share write little
avail_gib=$(df -P -BG "$WORK_PARENT" | awk 'NR==2{gsub("G","",$4); print $4}')
[ "$avail_gib" -ge "$need_gib" ] || die "only ${avail_gib} GiB free on the disk of $WORK_PARENT; a $MODE run needs about ${need_gib} GiB"
if [ "$THROTTLE_MBPS" != 0 ]; then
  [[ "$THROTTLE_MBPS" =~ ^[1-9][0-9]*$ ]] || die "--throttle-mbps takes a whole number of MB/s, not $THROTTLE_MBPS"
  make_throttled_disk "$WORK_PARENT" "$need_gib" "$THROTTLE_MBPS"
  WORK="$(mktemp -d "$THR_MNT/compare.XXXXXX")"
  say "slow disk: $THR_LOOP over $THR_IMG, ext4, writes limited to $THROTTLE_MBPS MB/s"
else
  WORK="$(mktemp -d "$WORK_PARENT/compare.XXXXXX")"
fi
RES="$WORK/results"; LOGS="$WORK/logs"
mkdir -p "$RES" "$LOGS"
if [ "$(ulimit -n)" -lt 65536 ]; then ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true; fi
say "mode $MODE; work directory $WORK (${avail_gib} GiB free); open files limit $(ulimit -n)"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
BUSY_START=$(ps -eo pcpu,comm --sort=-pcpu --no-headers | awk '$1 > 10 && $2 != "ps" {printf "%s%s (%s%%)", sep, $2, $1; sep=", "}')
say "load average at start: $LOAD_START${BUSY_START:+; busy: $BUSY_START}"

# ---------------------------------------------------------------- build
if [ "$SKIP_BUILD" = 0 ]; then
  say "building pinlog and pinlog-loadgen (release)"
  (cd "$REPO" && cargo build --release -p pinlog -p pinlog-loadgen --bins) > "$LOGS/build.log" 2>&1 \
    || { tail -30 "$LOGS/build.log" >&2; die "cargo build failed"; }
  if [ "$REPLICATED" = 0 ]; then
    say "building tuning/raw-sink (release)"
    cargo build --release --manifest-path "$RAWSINK_DIR/Cargo.toml" > "$LOGS/build-raw.log" 2>&1 \
      || { tail -30 "$LOGS/build-raw.log" >&2; die "raw-sink build failed"; }
  fi
fi
# The replicated modes have no raw baseline; the transactional and share
# modes' clients are Java (tuning/TxnPerf.java, tuning/SharePerf.java), not
# the load generator.
NEEDED_BINS=("$PINLOG_BIN")
[ "$TRANSACTIONAL" = 1 ] || [ "$SHARE_MODE" = 1 ] || NEEDED_BINS+=("$LOADGEN_BIN")
[ "$REPLICATED" = 1 ] || NEEDED_BINS+=("$RAWSINK_BIN")
for b in "${NEEDED_BINS[@]}"; do
  [ -x "$b" ] || die "missing $b (run without --skip-build)"
done
say "fetching Kafka $KAFKA_VERSION jars if needed"
"$REPO/tests/kafka/fetch-kafka.sh" "$KAFKA_LIBS" || die "tests/kafka/fetch-kafka.sh failed"
KCP="$KAFKA_LIBS/*"

# Two small Java programs, compiled here against kafka-clients 4.4:
# AssignConsumerPerf (ConsumerPerformance without a consumer group: the
# fetch path alone, without group coordination) and BenchAdmin
# (create/delete topics).
JAVA_DIR="$WORK/java"; mkdir -p "$JAVA_DIR"
cat > "$JAVA_DIR/AssignConsumerPerf.java" <<'EOF'
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

// ConsumerPerformance without a consumer group: assign() every partition of
// TOPIC, seek to the beginning, poll until NUM_RECORDS were read (or nothing
// arrived for TIMEOUT_MS). Same fetch settings as ConsumerPerformance's
// defaults (fetch-size 1 MiB, socket buffer 2 MiB). Prints one JSON line.
public class AssignConsumerPerf {
  public static void main(String[] a) throws Exception {
    String bootstrap = a[0], topic = a[1];
    long want = Long.parseLong(a[2]), timeoutMs = Long.parseLong(a[3]);
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    p.put("max.partition.fetch.bytes", "1048576");
    p.put("receive.buffer.bytes", "2097152");
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (PartitionInfo pi : c.partitionsFor(topic, Duration.ofSeconds(30)))
        tps.add(new TopicPartition(topic, pi.partition()));
      c.assign(tps);
      c.seekToBeginning(tps);
      long n = 0, bytes = 0, start = System.nanoTime(), last = start;
      while (n < want) {
        ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(100));
        long now = System.nanoTime();
        if (rs.isEmpty()) {
          if ((now - last) / 1_000_000 > timeoutMs) break;
          continue;
        }
        last = now;
        for (ConsumerRecord<byte[], byte[]> r : rs) {
          n++;
          bytes += (r.value() == null ? 0 : r.value().length) + (r.key() == null ? 0 : r.key().length);
        }
      }
      double s = (last - start) / 1e9;
      System.out.printf(Locale.ROOT,
          "{\"records\":%d,\"bytes\":%d,\"duration_s\":%.3f,\"records_per_s\":%.1f,\"mb_per_s\":%.2f,\"partitions\":%d}%n",
          n, bytes, s, n / s, bytes / s / 1e6, tps.size());
      if (n < want) System.exit(3);
    }
  }
}
EOF
cat > "$JAVA_DIR/BenchAdmin.java" <<'EOF'
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;

// BenchAdmin create BOOTSTRAP TOPIC PARTITIONS | delete BOOTSTRAP TOPIC
//          | create-many BOOTSTRAP PREFIX TOPICS PARTITIONS_EACH
//          | create-replicated BOOTSTRAP TOPIC PARTITIONS RF MIN_INSYNC
// Prints the milliseconds the call took. Replication factor 1 except for
// create-replicated (which sets the topic's min.insync.replicas). create-many
// creates PREFIX0, PREFIX1, ... one CreateTopics request each: Kafka's
// controller refuses a request that adds more than 10,000 metadata records
// (max.records.per.user.op), i.e. a 10,000-partition topic.
public class BenchAdmin {
  public static void main(String[] a) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", a[1]);
    p.put("request.timeout.ms", "300000");
    p.put("default.api.timeout.ms", "300000");
    try (Admin admin = Admin.create(p)) {
      long t0 = System.nanoTime();
      if (a[0].equals("create")) {
        NewTopic t = new NewTopic(a[2], Integer.parseInt(a[3]), (short) 1);
        admin.createTopics(List.of(t)).all().get(300, TimeUnit.SECONDS);
      } else if (a[0].equals("create-many")) {
        int topics = Integer.parseInt(a[3]), each = Integer.parseInt(a[4]);
        for (int i = 0; i < topics; i++) {
          admin.createTopics(List.of(new NewTopic(a[2] + i, each, (short) 1))).all().get(300, TimeUnit.SECONDS);
        }
      } else if (a[0].equals("create-replicated")) {
        NewTopic t = new NewTopic(a[2], Integer.parseInt(a[3]), Short.parseShort(a[4]))
            .configs(Map.of("min.insync.replicas", a[5]));
        admin.createTopics(List.of(t)).all().get(300, TimeUnit.SECONDS);
      } else if (a[0].equals("delete")) {
        admin.deleteTopics(List.of(a[2])).all().get(120, TimeUnit.SECONDS);
      } else {
        throw new IllegalArgumentException(a[0]);
      }
      System.out.println((System.nanoTime() - t0) / 1_000_000);
    }
  }
}
EOF
javac -d "$JAVA_DIR" -cp "$KAFKA_LIBS/kafka-clients-$KAFKA_VERSION.jar" \
  "$JAVA_DIR/AssignConsumerPerf.java" "$JAVA_DIR/BenchAdmin.java" || die "javac failed"
JCP="$JAVA_DIR:$KCP"
admin() {  # in the background and waited for, like measure(), so signals reach the trap
  local rc=0
  timeout 330 java -Xmx256m -cp "$JCP" BenchAdmin "$@" 2>>"$LOGS/admin.log" &
  FG=$!
  wait "$FG" || rc=$?
  FG=""
  return $rc
}
# create_topic ADDR TOPIC PARTITIONS: CreateTopics, then wait until Metadata
# shows every partition, plus a second: Kafka answers NOT_LEADER_OR_FOLLOWER
# to produce requests for a moment after CreateTopics returns.
create_topic() {
  admin create "$1" "$2" "$3" >/dev/null || return 1
  wait_metadata "$1" 60 "$2" "$3" || return 1
  sleep 1
}

# ---------------------------------------------------------------- machine
MACH_CPU=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
MACH_CORES=$(nproc)
MACH_RAM=$(awk '/^MemTotal:/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)
MACH_KERNEL=$(uname -r)
MACH_DEV=$(findmnt -no SOURCE -T "$WORK" | head -1)
MACH_FS=$(findmnt -no FSTYPE -T "$WORK" | head -1)
MACH_BLK=$(basename "$MACH_DEV")
MACH_DISK="$MACH_FS on $MACH_DEV ($(lsblk -dno SIZE "$MACH_DEV" 2>/dev/null | tr -d ' ' || echo '?'), scheduler $(sed -n 's/.*\[\(.*\)\].*/\1/p' "/sys/block/$MACH_BLK/queue/scheduler" 2>/dev/null || echo '?'))"
MACH_HYP=$(lscpu | sed -n 's/^Hypervisor vendor:[[:space:]]*//p' | head -1)
MACH_JAVA=$(java -version 2>&1 | head -1)
MACH_RUST=$(rustc --version 2>/dev/null || echo '?')
GIT_REV=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?')
GIT_DIRTY=$(cd "$REPO" && { git status --porcelain 2>/dev/null | grep -q . && echo " + uncommitted changes" || true; })

# ---------------------------------------------------------------- runners
# measure NAME BROKER_PID TIMEOUT -- CMD...: runs CMD in the foreground with
# its stdout in $RES/NAME.out; records wall, client CPU and broker CPU
# (BROKER_PID may be a comma-separated list: a cluster's CPU is the sum).
measure() {
  local name=$1 bpid=$2 limit=$3; shift 4
  local b0 b1 rc=0
  alive "$bpid" || die "the broker (pid $bpid) is gone before $name: see its log in the work directory (a signal from outside? ran with --keep?)"
  # The command as the reports show it: the work directory as $WORK and
  # other paths inside the repository relative to it, so that no report
  # names the machine's directories.
  local shown
  shown=$(printf '%q ' "$@"); shown=${shown% }
  shown=${shown//"$WORK"/\$WORK}
  printf '%s\n' "${shown//"$REPO"\//}" > "$RES/$name.cmd"
  settle
  b0=$(cpu_ticks "$bpid")
  # In the background and waited for, so that a signal reaches our trap at
  # once (the trap stops the client through FG).
  /usr/bin/time -f '%e %U %S' -o "$RES/$name.time" timeout "$limit" "$@" \
    > "$RES/$name.out" 2> "$LOGS/$name.err" &
  FG=$!
  wait "$FG" || rc=$?
  FG=""
  b1=$(cpu_ticks "$bpid")
  awk -v a="$b0" -v b="$b1" -v hz="$CLK_TCK" 'BEGIN{printf "%.2f\n", (b-a)/hz}' > "$RES/$name.bcpu"
  if [ $rc -ne 0 ]; then
    say "  $name exited $rc; last lines of its stderr:"
    tail -5 "$LOGS/$name.err" >&2 || true
  fi
  return 0
}

# A loadgen run whose JSON goes to $RES/NAME.json (empty object on failure).
# Its stdout must hold the --json object (the last line that starts with '{').
lg() {
  local name=$1 bpid=$2 limit=$3; shift 3
  measure "$name" "$bpid" "$limit" -- "$LOADGEN_BIN" "$@" --json
  grep '^{' "$RES/$name.out" | tail -1 > "$RES/$name.json" || true
  [ -s "$RES/$name.json" ] || echo '{}' > "$RES/$name.json"
  local mb p99
  mb=$(jq -r '.mb_per_s // "n/a"' "$RES/$name.json" 2>/dev/null || echo n/a)
  p99=$(jq -r '.latency_us.p99 // "n/a"' "$RES/$name.json" 2>/dev/null || echo n/a)
  say "  $name: $mb MB/s, p99 $p99 us, broker CPU $(cat "$RES/$name.bcpu") s, client $(tail -1 "$RES/$name.time" 2>/dev/null | cut -d' ' -f2-) s (user sys)"
}

lg_produce() {  # lg_produce NAME PID ADDR TOPIC SECS WARMUP [extra loadgen args]
  local name=$1 pid=$2 addr=$3 topic=$4 secs=$5 warm=$6; shift 6
  lg "$name" "$pid" $((secs + warm + 120)) produce --bootstrap "$addr" --topic "$topic" \
    --partitions "$PARTS" --record-size "$RECORD" --key-space none \
    --batch-bytes "$LG_BATCH" --linger-ms "${LINGER:-$LG_LINGER}" --acks "${ACKS:-1}" --compression none \
    --producers "$LG_CONNS" --duration "$secs" --warmup "$warm" "$@"
}

# ---------------------------------------------------------------- raw baseline
RAW_PORT=$(free_port)
raw_round() {
  local r=$1 dir="$WORK/raw-data" pid
  mkdir -p "$dir"
  "$RAWSINK_BIN" sink --listen "127.0.0.1:$RAW_PORT" --dir "$dir" > "$LOGS/raw-sink.$r.log" 2>&1 &
  pid=$!; PIDS+=("$pid")
  for _ in $(seq 1 50); do grep -q listening "$LOGS/raw-sink.$r.log" && break; sleep 0.1; done
  grep -q listening "$LOGS/raw-sink.$r.log" || die "raw-sink did not start: $(cat "$LOGS/raw-sink.$r.log")"
  measure "raw.$r" "$pid" $((RAW_SECS + 60)) -- "$RAWSINK_BIN" send --connect "127.0.0.1:$RAW_PORT" \
    --connections 4 --duration "$RAW_SECS" --json
  grep '^{' "$RES/raw.$r.out" | tail -1 > "$RES/raw.$r.json" || echo '{}' > "$RES/raw.$r.json"
  say "  raw.$r: $(jq -r '.mb_per_s // "n/a"' "$RES/raw.$r.json") MB/s, sink CPU $(cat "$RES/raw.$r.bcpu") s"
  stop_pid "$pid" 10 >/dev/null
  rm -rf "$dir"
}

# write_report PY [VAR...]: the report of a mode that runs its own
# workloads (tuning/PY, with the run's and the machine's variables and
# VAR... in its environment) into $OUT.
write_report() {
  local py=$1; shift
  LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
  ELAPSED=$(( $(date +%s) - T0 ))
  say "writing $OUT"
  TUNING_DIR="$REPO/tuning"
  BUSY_END=$(ps -eo pcpu,comm --sort=-pcpu --no-headers | awk '$1 > 10 && $2 != "ps" {printf "%s%s (%s%%)", sep, $2, $1; sep=", "}')
  export TUNING_DIR RES OUT MODE ARGV_STR LOAD_START LOAD_END BUSY_START BUSY_END ELAPSED MACH_CPU MACH_CORES MACH_RAM \
    MACH_KERNEL MACH_DISK MACH_HYP MACH_JAVA MACH_RUST GIT_REV GIT_DIRTY RECORD PARTS LG_BATCH LG_LINGER \
    LG_CONNS LG_P2_LINGER P2_SECS P2_WARM "$@"
  python3 "$TUNING_DIR/$py" > "$OUT.tmp" || die "the report failed"
  mv -f "$OUT.tmp" "$OUT"
  say "done in ${ELAPSED}s: $OUT"
}

if [ "$TLS" = 1 ]; then
  # The TLS mode's brokers, workloads and report.
  # shellcheck source=tuning/tls.sh
  source "$REPO/tuning/tls.sh"
  exit 0
fi
if [ "$GROUPS_MODE" = 1 ]; then
  # The consumer-group rebalance mode's brokers, workloads and report.
  # shellcheck source=tuning/groups.sh
  source "$REPO/tuning/groups.sh"
  exit 0
fi
if [ "$SHARE_MODE" = 1 ]; then
  # The share-group mode's brokers, workloads and report.
  # shellcheck source=tuning/share.sh
  source "$REPO/tuning/share.sh"
  exit 0
fi
if [ "$BALANCE" = 1 ]; then
  # The core balancer mode's broker, workloads and report.
  # shellcheck source=tuning/balance.sh
  source "$REPO/tuning/balance.sh"
  exit 0
fi
if [ "$REASSIGN" = 1 ]; then
  # The reassignment mode's cluster, workloads and report.
  # shellcheck source=tuning/reassign.sh
  source "$REPO/tuning/reassign.sh"
  exit 0
fi
if [ "$TRANSACTIONAL" = 1 ]; then
  # The transactional mode's clusters, workloads and report.
  # shellcheck source=tuning/transactional.sh
  source "$REPO/tuning/transactional.sh"
  exit 0
fi
if [ "$REPLICATED" = 1 ]; then
  # The replicated mode's clusters, workloads and report.
  # shellcheck source=tuning/replicated.sh
  source "$REPO/tuning/replicated.sh"
  exit 0
fi

if want raw; then
say "raw baseline: raw-sink (2 shards, O_DIRECT 1 MiB writes), 4 connections, ${RAW_SECS}s"
raw_round 1
fi

# ---------------------------------------------------------------- brokers
PL_PORT=$(free_port); PL_ADDR="127.0.0.1:$PL_PORT"
KF_PORT=$(free_port); KF_CTRL=$(free_port); KF_ADDR="127.0.0.1:$KF_PORT"

# start_pinlog NAME PORT SHARDS [extra TOML lines]: sets PL_PID_<NAME>
start_pinlog() {
  local name=$1 port=$2 shards=$3 extra=${4:-} dir="$WORK/pinlog-$1"
  mkdir -p "$dir"
  if [ ! -f "$dir/pinlog.toml" ]; then
    {
      echo '"num.partitions" = '"$PARTS"
      echo '"metrics.listen" = "127.0.0.1:'"$(free_port)"'"'
      # As in Kafka's config below: consumer groups form without waiting.
      echo '"group.initial.rebalance.delay.ms" = 0'
      [ -z "$extra" ] || printf '%s\n' "$extra"
    } > "$dir/pinlog.toml"
  fi
  "$PINLOG_BIN" serve --data-dir "$dir/data" --listen "127.0.0.1:$port" --shards "$shards" \
    --config "$dir/pinlog.toml" >> "$LOGS/pinlog-$name.log" 2>&1 &
  local pid=$!; PIDS+=("$pid")
  printf -v "PL_PID_$name" '%s' "$pid"
  if ! wait_metadata "127.0.0.1:$port" "${PL_START_LIMIT:-30}"; then
    [ "${PL_START_SOFT:-0}" = 1 ] && return 1
    die "pinlog $name did not come up: $(tail -5 "$LOGS/pinlog-$name.log")"
  fi
}

# The Kafka broker: KRaft, combined broker+controller, node 1, loopback.
KAFKA_DIR="$WORK/kafka"
kafka_config() {  # kafka_config DIR PORT CTRL_PORT
  cat <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$3
listeners=PLAINTEXT://127.0.0.1:$2,CONTROLLER://127.0.0.1:$3
advertised.listeners=PLAINTEXT://127.0.0.1:$2
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$1/data
num.partitions=$PARTS
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# Deleted topics' files go after 1 s instead of 60 s (disk space between rounds).
log.segment.delete.delay.ms=1000
EOF
}
# start_kafka NAME DIR PORT CTRL_PORT LIMIT_S: formats DIR once, sets KF_PID_<NAME>
start_kafka() {
  local name=$1 dir=$2 port=$3 ctrl=$4 limit=$5
  mkdir -p "$dir"
  if [ ! -f "$dir/server.properties" ]; then
    kafka_config "$dir" "$port" "$ctrl" > "$dir/server.properties"
    local cid
    cid=$(java -cp "$KCP" kafka.tools.StorageTool random-uuid 2>>"$LOGS/kafka-$name.log" | tail -1)
    java -cp "$KCP" kafka.tools.StorageTool format -t "$cid" -c "$dir/server.properties" \
      >> "$LOGS/kafka-$name.log" 2>&1 || die "kafka-storage format failed: $(tail -5 "$LOGS/kafka-$name.log")"
  fi
  java "${KAFKA_JVM[@]}" -cp "$KCP" kafka.Kafka "$dir/server.properties" >> "$LOGS/kafka-$name.log" 2>&1 &
  local pid=$!; PIDS+=("$pid")
  printf -v "KF_PID_$name" '%s' "$pid"
  if ! wait_metadata "127.0.0.1:$port" "$limit"; then
    [ "${KF_START_SOFT:-0}" = 1 ] && return 1
    die "kafka $name did not come up: $(tail -5 "$LOGS/kafka-$name.log")"
  fi
}

if [ "$MAIN" = 1 ]; then
say "starting pinlog (2 shards) on $PL_ADDR and Kafka $KAFKA_VERSION (KRaft, -Xmx$KAFKA_HEAP) on $KF_ADDR"
start_pinlog main "$PL_PORT" 2
# The spin before park the broker chose (src/shard/spin.rs), for the report.
sed 's/\x1b\[[0-9;]*m//g' "$LOGS/pinlog-main.log" | grep -o 'spin_before_park_us=[0-9]*' | head -1 \
  | tr -dc '0-9' > "$RES/pinlog.spin_us" || true
start_kafka main "$KAFKA_DIR" "$KF_PORT" "$KF_CTRL" 90
PL_PID=$PL_PID_main; KF_PID=$KF_PID_main
say "both up (pinlog pid $PL_PID, kafka pid $KF_PID)"
fi

# ---------------------------------------------------------------- P1
if want p1; then
say "P1: produce, acks=1, ${RECORD} B records, $PARTS partitions, ${P1_SECS}s (+${P1_WARM}s warmup), $P1_ROUNDS round(s) A/B"
# One untimed round first: Kafka's JIT needs more than a few seconds (its P1
# rate rose 28% from the first measured round to the third without this).
say "  warm-up round (not in the results): ${P1_JIT_SECS}s on each broker"
for b in pinlog kafka; do
  if [ $b = pinlog ]; then addr=$PL_ADDR; pid=$PL_PID; else addr=$KF_ADDR; pid=$KF_PID; fi
  create_topic "$addr" p1-warm "$PARTS" || die "could not create p1-warm on $b"
  lg_produce "warmup.$b" "$pid" "$addr" p1-warm "$P1_JIT_SECS" 0
  admin delete "$addr" p1-warm >/dev/null || say "  (delete of p1-warm on $b failed)"
done
for r in $(seq 1 "$P1_ROUNDS"); do
  for b in pinlog kafka; do
    if [ $b = pinlog ]; then addr=$PL_ADDR; pid=$PL_PID; else addr=$KF_ADDR; pid=$KF_PID; fi
    topic="p1-r$r"
    create_topic "$addr" "$topic" "$PARTS" || die "could not create $topic on $b"
    lg_produce "p1.$b.$r" "$pid" "$addr" "$topic" "$P1_SECS" "$P1_WARM"
    admin delete "$addr" "$topic" >/dev/null || say "  (delete of $topic on $b failed)"
  done
done
if [ "$MODE" = full ]; then say "raw baseline again (after P1)"; raw_round 2; fi
fi

# Kafka's P1 rate (median over rounds), records/s: P2 runs at P2_LOAD percent
# of it.
if want p2; then
# With --only and no P1 run there are no files: cat fails, which under
# pipefail would end the script without a word.
KAFKA_P1_RPS=$( (cat "$RES"/p1.kafka.*.json 2>/dev/null || true) | jq -s '[.[] | .records_per_s // empty] | sort | if length == 0 then 0 else .[(length - 1) / 2 | floor] end')
P2_RATE=${P2_RATE_ENV:-$(awk -v r="$KAFKA_P1_RPS" -v l="$P2_LOAD" 'BEGIN{printf "%d", r * l / 100}')}
[ "$P2_RATE" -gt 0 ] || die "no Kafka P1 result, cannot pace P2"

# ---------------------------------------------------------------- P2
P2_RATE_FROM="$P2_LOAD% of Kafka's P1 median"; [ -n "$P2_RATE_ENV" ] && P2_RATE_FROM="P2_RATE"
say "P2: produce latency at $P2_RATE records/s ($P2_RATE_FROM), linger ${LG_P2_LINGER} ms, ${P2_SECS}s"
P2_RAW_MB=$(awk -v r="$P2_RATE" -v s="$RECORD" 'BEGIN{printf "%.1f", r * s / 1e6}')
for r in $(seq 1 "$P2_ROUNDS"); do
  # The disk's own answer at P2's byte rate: paced direct-I/O appends into
  # $PARTS new files, no broker (raw-sink pace). No direct-I/O broker can
  # acknowledge faster than this.
  mkdir -p "$WORK/pace"
  timeout $((P2_SECS + 60)) "$RAWSINK_BIN" pace --dir "$WORK/pace" --rate-mb "$P2_RAW_MB" \
    --files "$PARTS" --duration "$P2_SECS" --json > "$RES/p2.raw.$r.out" 2> "$LOGS/p2.raw.$r.err" \
    || say "  (raw-sink pace failed: $(tail -1 "$LOGS/p2.raw.$r.err"))"
  grep '^{' "$RES/p2.raw.$r.out" | tail -1 > "$RES/p2.raw.$r.json" || echo '{}' > "$RES/p2.raw.$r.json"
  say "  p2.raw.$r: $(jq -r '.mb_per_s // "n/a"' "$RES/p2.raw.$r.json") MB/s of paced direct-I/O appends, p99 $(jq -r '.latency_us.p99 // "n/a"' "$RES/p2.raw.$r.json") us, longest write $(jq -r '.longest_write_us // "n/a"' "$RES/p2.raw.$r.json") us"
  rm -rf "$WORK/pace"
  for b in pinlog kafka; do
    if [ $b = pinlog ]; then addr=$PL_ADDR; pid=$PL_PID; else addr=$KF_ADDR; pid=$KF_PID; fi
    topic="p2-r$r"
    create_topic "$addr" "$topic" "$PARTS" || die "could not create $topic on $b"
    LINGER=$LG_P2_LINGER lg_produce "p2.$b.$r" "$pid" "$addr" "$topic" "$P2_SECS" "$P2_WARM" \
      --rate "$P2_RATE" --histogram "$RES/p2.$b.$r.hgrm"
    admin delete "$addr" "$topic" >/dev/null || say "  (delete of $topic on $b failed)"
  done
done
fi

# ---------------------------------------------------------------- P3big
# A consumer minutes behind on a data set larger than the read cache's old
# default: Kafka serves it from all the page cache the machine has, pinlog
# from its read cache, whose budget follows the free memory. One broker at
# a time holds the data set (the other's copy would not fit in memory
# beside it, and the disk holds one): fill, read as written, re-read warm,
# delete; then the other broker.
# --quick runs it only when --only names it: it takes minutes of its own.
if want p3big && { [ "$MODE" = full ] || [[ " $ONLY " == *" p3big "* ]]; }; then
disk_free=$(( $(df -Pk "$WORK" | awk 'NR==2 {print $4}') * 1024 ))
if [ "$P3BIG_BYTES" -ge $(( MEM_BYTES / 10 * 9 )) ]; then
  say "P3big skipped: $((P3BIG_BYTES / 1048576)) MiB is not below RAM ($((MEM_BYTES / 1048576)) MiB)"
elif [ "$disk_free" -le $(( P3BIG_BYTES / 10 * 13 )) ]; then
  say "P3big skipped: $((disk_free / 1048576)) MiB free on the disk, it needs $((P3BIG_BYTES / 10 * 13 / 1048576))"
else
  say "P3big: $P3BIG_RECORDS records ($((P3BIG_BYTES / 1048576)) MiB) on one broker at a time"
  for b in pinlog kafka; do
    if [ $b = pinlog ]; then addr=$PL_ADDR; pid=$PL_PID; else addr=$KF_ADDR; pid=$KF_PID; fi
    create_topic "$addr" p3big "$PARTS" || die "could not create p3big on $b"
    lg "p3bigfill.$b" "$pid" 1800 produce --bootstrap "$addr" --topic p3big --partitions "$PARTS" \
      --record-size "$RECORD" --key-space none --batch-bytes "$LG_BATCH" --linger-ms "$LG_LINGER" \
      --acks 1 --compression none --producers "$LG_CONNS" --records "$P3BIG_RECORDS"
    lg "p3big.$b.written" "$pid" 900 consume --bootstrap "$addr" --topic p3big --from earliest \
      --connections "$LG_CONNS"
    for r in $(seq 1 "$P3BIG_ROUNDS"); do
      lg "p3big.$b.warm$r" "$pid" 900 consume --bootstrap "$addr" --topic p3big --from earliest \
        --connections "$LG_CONNS"
    done
    if [ $b = pinlog ]; then
      # The read cache's footprint, budget and ceiling after the reads.
      metrics=$(sed -n 's/^"metrics.listen" = "\(.*\)"$/\1/p' "$WORK/pinlog-main/pinlog.toml")
      curl -s "http://$metrics/metrics" 2>/dev/null \
        | grep '^pinlog_read_cache_\(bytes\|capacity_bytes\|ceiling_bytes\)' > "$RES/p3big.pinlog.cache" || true
      say "  pinlog's read cache: $(tr '\n' ' ' < "$RES/p3big.pinlog.cache")"
    fi
    admin delete "$addr" p3big >/dev/null || say "  (delete of p3big on $b failed)"
  done
fi
fi

# ---------------------------------------------------------------- P3
if want p3; then
if [ -w /proc/sys/vm/drop_caches ]; then DROP_CACHES=1; fi
drop_caches() { sync; if [ "$DROP_CACHES" = 1 ]; then echo 3 > /proc/sys/vm/drop_caches; fi; }
# pinlog's read cache counters summed over its shards: "hits misses
# evictions filled_bytes used_bytes capacity_bytes" (the last two: now).
pinlog_cache_counters() {
  local metrics
  metrics=$(sed -n 's/^"metrics.listen" = "\(.*\)"$/\1/p' "$WORK/pinlog-main/pinlog.toml")
  curl -s "http://$metrics/metrics" 2>/dev/null | awk '
    /^pinlog_read_cache_hits_total\{/ { h += $2 }
    /^pinlog_read_cache_misses_total\{/ { m += $2 }
    /^pinlog_read_cache_evictions_total\{/ { e += $2 }
    /^pinlog_read_cache_filled_bytes_total\{/ { f += $2 }
    /^pinlog_read_cache_bytes\{/ { u += $2 }
    /^pinlog_read_cache_capacity_bytes\{/ { c += $2 }
    END { printf "%d %d %d %d %d %d\n", h, m, e, f, u, c }'
}
# cache_window NAME BEFORE AFTER: what pinlog's read cache did between two
# readings of pinlog_cache_counters, into $RES/NAME.cache.json.
cache_window() {
  local h0 m0 e0 f0 h1 m1 e1 f1 u1 c1
  read -r h0 m0 e0 f0 _ _ <<<"$2"
  read -r h1 m1 e1 f1 u1 c1 <<<"$3"
  jq -n --argjson h $((h1 - h0)) --argjson m $((m1 - m0)) --argjson e $((e1 - e0)) \
    --argjson f $((f1 - f0)) --argjson u "$u1" --argjson c "$c1" \
    '{hits: $h, misses: $m, evictions: $e, filled_bytes: $f, used_bytes_after: $u, capacity_bytes_after: $c}' \
    > "$RES/$1.cache.json"
}
say "P3: filling topic p3 with $P3_RECORDS records ($((P3_BYTES / 1048576)) MiB) on each broker"
for b in pinlog kafka; do
  if [ $b = pinlog ]; then addr=$PL_ADDR; pid=$PL_PID; else addr=$KF_ADDR; pid=$KF_PID; fi
  create_topic "$addr" p3 "$PARTS" || die "could not create p3 on $b"
  [ $b = pinlog ] && before=$(pinlog_cache_counters)
  lg "p3fill.$b" "$pid" 600 produce --bootstrap "$addr" --topic p3 --partitions "$PARTS" \
    --record-size "$RECORD" --key-space none --batch-bytes "$LG_BATCH" --linger-ms "$LG_LINGER" \
    --acks 1 --compression none --producers "$LG_CONNS" --records "$P3_RECORDS"
  if [ $b = pinlog ]; then
    # What the cache kept of the fill, and (below) what it lost before the
    # read as written: the evictions of a budget that fell meanwhile.
    P3_FILLED=$(pinlog_cache_counters)
    cache_window p3fill.pinlog "$before" "$P3_FILLED"
  fi
done
lg_consume() {  # lg_consume NAME PID ADDR: from the earliest offsets to the end offsets at start
  local before after
  [ "$2" = "$PL_PID" ] && before=$(pinlog_cache_counters)
  lg "$1" "$2" 300 consume --bootstrap "$3" --topic p3 --from earliest --connections "$LG_CONNS"
  if [ "$2" = "$PL_PID" ]; then
    # Which of pinlog's reads its read cache served, and what it evicted.
    after=$(pinlog_cache_counters)
    cache_window "$1" "$before" "$after"
    say "    pinlog's read cache: $(jq -r '"\(.hits) hits, \(.misses) misses, \(.evictions) evictions, \(.filled_bytes) bytes filled"' "$RES/$1.cache.json")"
  fi
}
# pinlog's read cache is its page cache: a clean restart empties it, as
# drop_caches empties Kafka's.
restart_pinlog_main() {
  kill -TERM "$PL_PID" 2>/dev/null || true
  wait "$PL_PID" 2>/dev/null || true
  start_pinlog main "$PL_PORT" 2
  PL_PID=$PL_PID_main
}
say "P3 catch-up, as written (Kafka: its page cache holds what it wrote; pinlog: its read cache does)"
cache_window p3.pinlog.before-written "$P3_FILLED" "$(pinlog_cache_counters)"
lg_consume p3.pinlog.written "$PL_PID" "$PL_ADDR"
lg_consume p3.kafka.written "$KF_PID" "$KF_ADDR"
if [ "$DROP_CACHES" = 1 ]; then
  say "P3 catch-up, cold: page cache dropped (and pinlog restarted, emptying its read cache) before each run"
  for r in $(seq 1 "$P3_ROUNDS"); do
    restart_pinlog_main; drop_caches; lg_consume "p3.pinlog.cold$r" "$PL_PID" "$PL_ADDR"
    drop_caches; lg_consume "p3.kafka.cold$r" "$KF_PID" "$KF_ADDR"
  done
else
  say "P3 cold runs skipped: cannot write /proc/sys/vm/drop_caches"
fi
say "P3 catch-up, warm (page cache holds the data for both): one untimed read each first"
# Each drop_caches above also evicted the other broker's pages, so prime
# both before the warm rounds.
lg_consume p3.pinlog.prime "$PL_PID" "$PL_ADDR"
lg_consume p3.kafka.prime "$KF_PID" "$KF_ADDR"
for r in $(seq 1 "$P3_ROUNDS"); do
  lg_consume "p3.pinlog.warm$r" "$PL_PID" "$PL_ADDR"
  lg_consume "p3.kafka.warm$r" "$KF_PID" "$KF_ADDR"
done
say "P3 tailing: e2e (producer at full speed and a tailing consumer), ${TAIL_SECS}s"
for r in $(seq 1 "$TAIL_ROUNDS"); do
  for b in pinlog kafka; do
    if [ $b = pinlog ]; then addr=$PL_ADDR; pid=$PL_PID; else addr=$KF_ADDR; pid=$KF_PID; fi
    topic="p3t-r$r"
    create_topic "$addr" "$topic" "$PARTS" || die "could not create $topic on $b"
    lg "p3tail.$b.$r" "$pid" $((TAIL_SECS + TAIL_WARM + 120)) e2e --bootstrap "$addr" --topic "$topic" \
      --partitions "$PARTS" --record-size "$RECORD" --key-space none --batch-bytes "$LG_BATCH" \
      --linger-ms "$LG_LINGER" --acks 1 --compression none --producers "$LG_CONNS" \
      --consumers "$LG_CONNS" --duration "$TAIL_SECS" --warmup "$TAIL_WARM"
    admin delete "$addr" "$topic" >/dev/null || say "  (delete of $topic on $b failed)"
  done
done
fi

# ---------------------------------------------------------------- Java tools
if want java; then
say "Kafka's ProducerPerformance ($JAVA_RECORDS records) and consumers, both brokers"
for b in pinlog kafka; do
  if [ $b = pinlog ]; then addr=$PL_ADDR; pid=$PL_PID; else addr=$KF_ADDR; pid=$KF_PID; fi
  create_topic "$addr" jperf "$PARTS" || die "could not create jperf on $b"
  measure "jprod.$b" "$pid" 600 -- java -Xmx1g -cp "$KCP" org.apache.kafka.tools.ProducerPerformance \
    --topic jperf --num-records "$JAVA_RECORDS" --record-size "$RECORD" --throughput -1 \
    --command-property bootstrap.servers="$addr" acks=1 batch.size="$LG_BATCH" linger.ms="$LG_LINGER" \
    compression.type=none
  say "  jprod.$b: $(tail -1 "$RES/jprod.$b.out")"
  measure "jcons.$b" "$pid" 300 -- java -Xmx1g -cp "$JCP" AssignConsumerPerf "$addr" jperf "$JAVA_RECORDS" 20000
  say "  jcons.$b (assign): $(tail -1 "$RES/jcons.$b.out")"
  measure "jcperf.$b" "$pid" 120 -- java -Xmx1g -cp "$KCP" org.apache.kafka.tools.ConsumerPerformance \
    --bootstrap-server "$addr" --topic jperf --num-records "$JAVA_RECORDS" --timeout 20000
  say "  jcperf.$b (ConsumerPerformance): $(tail -1 "$RES/jcperf.$b.out" 2>/dev/null) $(grep -m1 -o 'does not support [A-Z_]*' "$LOGS/jcperf.$b.err" 2>/dev/null || true)"
  admin delete "$addr" jperf >/dev/null || true
done
fi

# ---------------------------------------------------------------- P5
if want p5; then
say "P5: P1 on pinlog with --shards 1 and --shards 2, ${P5_SECS}s, $P5_ROUNDS round(s)"
PL1_PORT=$(free_port); PL1_ADDR="127.0.0.1:$PL1_PORT"
start_pinlog one "$PL1_PORT" 1
PL1_PID=$PL_PID_one
for r in $(seq 1 "$P5_ROUNDS"); do
  for s in 1 2; do
    if [ $s = 1 ]; then addr=$PL1_ADDR; pid=$PL1_PID; else addr=$PL_ADDR; pid=$PL_PID; fi
    topic="p5-r$r"
    create_topic "$addr" "$topic" "$PARTS" || die "could not create $topic on --shards $s"
    lg_produce "p5.s$s.$r" "$pid" "$addr" "$topic" "$P5_SECS" "$P5_WARM"
    admin delete "$addr" "$topic" >/dev/null || true
  done
done
stop_pid "$PL1_PID" 30 >/dev/null
fi

# The main brokers are done: stop them (P4 uses fresh ones).
if [ "$MAIN" = 1 ]; then
say "stopping the main brokers"
stop_pid "$PL_PID" 30 >/dev/null
stop_pid "$KF_PID" 60 >/dev/null
rm -rf "$WORK/pinlog-main" "$WORK/pinlog-one" "$KAFKA_DIR"
fi

# ---------------------------------------------------------------- P4
# p4 BROKER: a fresh broker. A 100-partition topic first (warms the code
# paths and gives the open files per partition), then VmRSS; then one topic
# of N partitions, VmRSS again; then a clean stop and a restart, timed until
# Metadata reports every partition. N is P4_PARTS, or less when the broker's
# open-files limit (which this sandbox does not let us raise) cannot hold
# N partitions at the measured files per partition: a broker that runs out
# of descriptors mid-CreateTopics is left in a state that is not worth
# timing (see results.md).
p4() {
  local b=$1 port ctrl pid base after create_ms stop_s t0 t1 rss2 limit fd0 fd1 fpp nofile n ok
  port=$(free_port)
  if [ "$b" = pinlog ]; then
    start_pinlog p4 "$port" 2; pid=$PL_PID_p4; limit=180
  else
    ctrl=$(free_port); start_kafka p4 "$WORK/kafka-p4" "$port" "$ctrl" 90; pid=$KF_PID_p4; limit=300
  fi
  fd0=$(ls "/proc/$pid/fd" | wc -l)
  admin create "127.0.0.1:$port" p4warm 100 >/dev/null || die "p4: could not create p4warm on $b"
  sleep 3
  fd1=$(ls "/proc/$pid/fd" | wc -l)
  fpp=$(awk -v a="$fd0" -v b="$fd1" 'BEGIN{printf "%.2f", (b-a)/100}')
  nofile=$(awk '/^Max open files/{print $4}' "/proc/$pid/limits")
  n=$P4_PARTS
  if [ "$nofile" != unlimited ]; then
    n=$(awk -v want="$P4_PARTS" -v lim="$nofile" -v used="$fd1" -v f="$fpp" 'BEGIN{
      if (f <= 0) { print want; exit }
      m = int((lim - used - 1000) / f / 500) * 500; print (m < want ? m : want) }')
  fi
  if [ "$n" -lt "$P4_PARTS" ]; then
    say "  p4.$b: $fpp open files per partition and a limit of $nofile: $P4_PARTS partitions do not fit, using $n"
  fi
  base=$(rss_kib "$pid")
  local topics=$((n / P4_CHUNK)) fd2 created=1
  if ! create_ms=$(admin create-many "127.0.0.1:$port" p4- "$topics" "$P4_CHUNK"); then
    say "  p4.$b: creating $topics topics of $P4_CHUNK partitions failed (see below)"
    tail -3 "$LOGS/admin.log" >&2
    create_ms='"failed"'; created=0
  fi
  ok=0; t0=0; t1=0; stop_s=0; after=$base; rss2=0; fd2=0
  if [ $created = 1 ]; then
    ok=1
    wait_partitions "127.0.0.1:$port" "$limit" p4- "$n" || { ok=0; say "  p4.$b: Metadata never showed $n partitions"; }
    sleep 5
    after=$(rss_kib "$pid")
    fd2=$(ls "/proc/$pid/fd" | wc -l)
    say "  p4.$b: $n partitions in $topics topics created in $create_ms ms; stopping (SIGTERM) and restarting"
    stop_s=$(stop_pid "$pid" "$limit")
    t0=$(date +%s.%N)
    if [ "$b" = pinlog ]; then
      PL_START_LIMIT=$limit PL_START_SOFT=1 start_pinlog p4 "$port" 2 || true; pid=$PL_PID_p4
    else
      KF_START_SOFT=1 start_kafka p4 "$WORK/kafka-p4" "$port" "$ctrl" "$limit" || true; pid=$KF_PID_p4
    fi
    wait_partitions "127.0.0.1:$port" "$limit" p4- "$n" || ok=0
    t1=$(date +%s.%N)
    sleep 3
    rss2=$(rss_kib "$pid" 2>/dev/null || echo 0)
  fi
  jq -n --arg b "$b" --argjson parts "$n" --argjson want "$P4_PARTS" --argjson base "$base" \
     --argjson after "$after" --argjson create_ms "$create_ms" --argjson stop_s "$stop_s" \
     --argjson ok "$ok" --argjson fpp "$fpp" --arg nofile "$nofile" --argjson fds "$fd2" \
     --argjson restart_s "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')" \
     --argjson rss_restart "${rss2:-0}" \
     '{broker:$b, partitions:$parts, partitions_wanted:$want, fds_per_partition:$fpp,
       open_files_limit:$nofile, fds_after_create:$fds,
       rss_base_kib:$base, rss_after_kib:$after,
       kib_per_partition: (($after - $base) / $parts), create_ms:$create_ms,
       stop_s:$stop_s, restart_s:$restart_s, restart_ok:($ok == 1),
       rss_after_restart_kib:$rss_restart,
       kib_per_partition_after_restart: (($rss_restart - $base) / $parts)}' > "$RES/p4.$b.json"
  say "  p4.$b: $(jq -c . "$RES/p4.$b.json")"
  stop_pid "$pid" "$limit" >/dev/null
  if [ "$b" = pinlog ]; then
    sed 's/\x1b\[[0-9;]*m//g' "$LOGS/pinlog-p4.log" | grep -o 'startup_ms=[0-9]*' | tail -1 \
      | tr -dc '0-9' > "$RES/p4.pinlog.startup_ms" || true
    rm -rf "$WORK/pinlog-p4"
  else
    rm -rf "$WORK/kafka-p4"
  fi
}
if want p4; then
say "P4: $P4_PARTS partitions, RSS per idle partition and restart after a clean shutdown"
p4 pinlog
if [ "$KAFKA_P4" = 1 ]; then p4 kafka; else say "  (Kafka skipped in P4)"; fi
fi

LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$(( $(date +%s) - T0 ))

# ---------------------------------------------------------------- report
say "writing $OUT"
P2_RATE=${P2_RATE:-0}
TUNING_DIR="$REPO/tuning"
# What tuning/compare_report.py reads from the environment; kept with the
# results too, so that --report-only can write a kept run's report again.
REPORT_VARS=(TUNING_DIR RES OUT MODE ARGV_STR LOAD_START LOAD_END BUSY_START ELAPSED MACH_CPU MACH_CORES
  MACH_RAM MACH_KERNEL MACH_DISK MACH_HYP MACH_JAVA MACH_RUST GIT_REV GIT_DIRTY RECORD PARTS LG_BATCH
  LG_LINGER LG_CONNS LG_P2_LINGER P1_SECS P1_WARM P1_ROUNDS P2_SECS P2_WARM P2_ROUNDS P2_RATE P2_LOAD
  KAFKA_P1_RPS P3_BYTES P3_RECORDS P3_ROUNDS P3BIG_BYTES P3BIG_ROUNDS MEM_BYTES TAIL_SECS TAIL_WARM
  TAIL_ROUNDS P4_PARTS P5_SECS P5_WARM P5_ROUNDS RAW_SECS RAW_ROUNDS JAVA_RECORDS KAFKA_HEAP
  DROP_CACHES KAFKA_P4 KAFKA_VERSION THROTTLE_MBPS)
export "${REPORT_VARS[@]}"
for v_ in "${REPORT_VARS[@]}"; do
  printf 'export %s=%q\n' "$v_" "${!v_-}"
done > "$RES/report-env.sh"
python3 "$TUNING_DIR/compare_report.py" > "$OUT.tmp" || die "the report failed"
mv -f "$OUT.tmp" "$OUT"
say "done in ${ELAPSED}s: $OUT"
