#!/usr/bin/env bash
# Wake-ups per acknowledged batch at moderate load (issue 33, direction 5):
# what a 3-node cluster spends, in CPU, context switches, io_uring_enter
# calls and io_uring submissions, for each acks=all produce request it
# acknowledges, with the fetch requests the followers sent meanwhile.
# With --baseline, a second build runs the same load in the same run,
# alternating round by round, so that the two are compared side by side on
# this noisy machine.
#
#   tuning/wakeups.sh                                # target/release, at 20,000 and 50,000 records/s
#   tuning/wakeups.sh --baseline DIR                 # DIR holds another build's pinlog and pinlog-loadgen
#   tuning/wakeups.sh --rates "50000" --rounds 3
#   tuning/wakeups.sh --rates "flat" --load "--partitions 12 --batch-bytes 262144 --linger-ms 5 --compression none"
#                                                    # flat out, with compare.sh's R1 client settings
#
# The cluster is tuning/pinlog_cluster.sh's (one shard per node, spin before
# park 0, the nodes spread over the CPUs); a topic of 12 partitions, RF 3,
# min.insync.replicas 2; pinlog-loadgen with 3 connections, acks=all, 1 KiB
# records. Each run: a fresh cluster in a temporary directory under
# target/, 2 s of warm-up and 12 s of produce; perf counts the three
# brokers' events for 5 s in the middle of it, and their metrics are read
# before and after that window. Needs perf with the syscalls and io_uring
# tracepoints (perf_event_paranoid <= 1, or root), and kcat. Prints a
# markdown table: records/s, p99, the nodes' CPU seconds per GB of
# records, and per acknowledged produce request (all nodes together) CPU,
# context switches, io_uring calls and submissions, io-wq punts, follower
# fetches and page faults.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$REPO"

bin=target/release
baseline=""
rates="20000 50000"
rounds=2
load_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --load) load_args=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "wakeups.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for dir in "$bin" $baseline; do
  for tool in pinlog pinlog-loadgen; do
    [ -x "$dir/$tool" ] || { echo "wakeups.sh: no $dir/$tool; build it first (cargo build --release)" >&2; exit 1; }
  done
done
for tool in perf kcat taskset; do
  command -v $tool >/dev/null || { echo "wakeups.sh: $tool is needed" >&2; exit 1; }
done

PARTS=12
WINDOW_S=5
EVENTS=cpu-clock,context-switches,page-faults,syscalls:sys_enter_io_uring_enter,io_uring:io_uring_submit_req,io_uring:io_uring_queue_async_work
PIDS=()
WORK=""
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "$WORK" ] && rm -rf "$WORK"
  rm -f "$REPO/target/wakeups-run.txt"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# What tuning/pinlog_cluster.sh expects of its caller.
die() { echo "wakeups.sh: $*" >&2; exit 1; }
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_metadata() {  # wait_metadata ADDR SECONDS
  local n=$(($2 * 10))
  while [ $n -gt 0 ]; do
    kcat -L -b "$1" -m 2 >/dev/null 2>&1 && return 0
    sleep 0.1; n=$((n - 1))
  done
  return 1
}

# scrape: every node's request counts, one "node api count" line each.
scrape() {
  local i port
  for i in 1 2 3; do
    port=$(sed -n 's/^"metrics.listen" = "127.0.0.1:\([0-9]*\)"/\1/p' "$WORK/pinlog-rep-$i/pinlog.toml")
    curl -s "http://127.0.0.1:$port/metrics" \
      | sed -n 's/^pinlog_requests_total{shard="[0-9]*",api="\([A-Za-z]*\)"} \([0-9]*\)$/'"$i"' \1 \2/p'
  done
}

# One run: prints "cpu_ms ctxsw enters sqes punts produces fetches faults records_per_s p99_us".
run_one() {
  local dir=$1 rate=$2
  WORK=$(mktemp -d "$REPO/target/wakeups-XXXXXX")
  LOGS=$WORK
  PINLOG_BIN=$dir/pinlog
  PIDS=()
  # shellcheck source=tuning/pinlog_cluster.sh
  source "$REPO/tuning/pinlog_cluster.sh"
  for i in "${REP_NODES[@]}"; do start_pinlog_node "$i"; done
  wait_cluster pinlog PLR_PORT
  "$dir/pinlog" topic create --bootstrap-server "$PLR_BOOT" wake --partitions $PARTS \
    --replication-factor 3 --config min.insync.replicas=2 >/dev/null
  sleep 2
  local pace=()
  [ "$rate" != flat ] && pace=(--rate "$rate")
  # shellcheck disable=SC2086 # --load is a list of arguments
  "$dir/pinlog-loadgen" produce --bootstrap "${PLR_BOOT%%,*}" --topic wake --acks all --producers 3 "${pace[@]}" \
    $load_args --duration 12s --warmup 2s -q --json >"$WORK/load.json" 2>"$WORK/load.err" &
  local load=$!
  sleep 6
  scrape >"$WORK/before.txt"
  local pids
  pids=$(IFS=,; echo "${PLR_PID[*]}")
  perf stat -x, -e "$EVENTS" -p "$pids" -- sleep $WINDOW_S 2>"$WORK/perf.csv" >/dev/null
  scrape >"$WORK/after.txt"
  wait $load || die "the load generator failed: $(tail -3 "$WORK/load.err")"
  python3 - "$WORK/perf.csv" "$WORK/before.txt" "$WORK/after.txt" "$WORK/load.json" <<'EOF'
import json, sys
counts = {}
for line in open(sys.argv[1]):
    parts = line.strip().split(",")
    if len(parts) > 2:
        try:
            counts[parts[2]] = float(parts[0])
        except ValueError:
            pass
def requests(path):
    by_api = {}
    for line in open(path):
        node, api, n = line.split()
        by_api[api] = by_api.get(api, 0) + int(n)
    return by_api
before, after = requests(sys.argv[2]), requests(sys.argv[3])
delta = lambda api: after.get(api, 0) - before.get(api, 0)
load = json.load(open(sys.argv[4]))
print(counts.get("cpu-clock", -1), counts.get("context-switches", -1),
      counts.get("syscalls:sys_enter_io_uring_enter", -1), counts.get("io_uring:io_uring_submit_req", -1),
      counts.get("io_uring:io_uring_queue_async_work", -1), delta("Produce"), delta("Fetch"),
      counts.get("page-faults", -1),
      round(load["records_per_s"]), load["latency_us"]["p99"])
EOF
  local p
  for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
  rm -rf "$WORK"
  WORK=""
}

builds=("$bin")
[ -n "$baseline" ] && builds+=("$baseline")
echo "| build | rate | round | records/s | p99 ms | produce requests/s | CPU s per GB | per produce request: CPU µs | context switches | io_uring_enter | submissions | io-wq punts | fetch requests | page faults |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for rate in $rates; do
  for round in $(seq "$rounds"); do
    # The order alternates from one round to the next.
    order=("${builds[@]}")
    if [ $((round % 2)) -eq 0 ] && [ ${#builds[@]} -eq 2 ]; then order=("${builds[1]}" "${builds[0]}"); fi
    for dir in "${order[@]}"; do
      echo "wakeups.sh: $dir, rate $rate, round $round" >&2
      # Not in a subshell, so that the trap stops the nodes of a run cut short.
      run_one "$dir" "$rate" >"$REPO/target/wakeups-run.txt"
      read -r cpu ctx enters sqes punts produces fetches faults rps p99 <"$REPO/target/wakeups-run.txt"
      awk -v b="$dir" -v r="$rate" -v n="$round" -v cpu="$cpu" -v c="$ctx" -v e="$enters" -v s="$sqes" \
        -v pu="$punts" -v pr="$produces" -v f="$fetches" -v pf="$faults" -v rps="$rps" -v p99="$p99" -v w="$WINDOW_S" \
        'BEGIN { if (pr <= 0) pr = 1;
                 printf "| %s | %s | %d | %s | %.2f | %.0f | %.2f | %.0f | %.2f | %.2f | %.2f | %.3f | %.2f | %.2f |\n",
                   b, r, n, rps, p99 / 1000, pr / w, cpu / 1000 / (rps * 1024 * w / 1e9), cpu * 1000 / pr, c / pr, e / pr, s / pr, pu / pr, f / pr, pf / pr }'
    done
  done
done
