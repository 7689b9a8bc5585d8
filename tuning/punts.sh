#!/usr/bin/env bash
# io-wq punts on the append path (issue 33): how many of the broker's
# io_uring requests the kernel hands to a worker thread instead of
# submitting them inline, while one pinlog-loadgen producer writes to a
# local broker, beside its context switches, page faults, CPU time,
# throughput and latency. With --baseline, a second build runs the same load in the same
# run, alternating round by round, so that the two are compared side by
# side on this noisy machine.
#
#   tuning/punts.sh                                  # target/release, flat out and at 50,000 records/s
#   tuning/punts.sh --baseline DIR                   # DIR holds another build's pinlog and pinlog-loadgen
#   tuning/punts.sh --rates "flat 20000" --rounds 3
#   tuning/punts.sh --load "--partitions 12 --batch-bytes 262144 --linger-ms 5 --acks 1 --compression none --producers 4"
#                                                    # compare.sh's P1 client settings instead of the defaults
#
# Needs perf with the io_uring tracepoints (perf_event_paranoid <= 1, or
# root). Each run: a fresh broker in a temporary directory under target/,
# 8 partitions, 2 s of warm-up, 12 s of produce; perf counts the broker's
# events for 5 s in the middle of it. Prints a markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=target/release
baseline=""
rates="flat 50000"
rounds=2
# The producer's settings: pinlog-loadgen's defaults on 8 partitions.
load_args="--partitions 8"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --load) load_args=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "punts.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for dir in "$bin" $baseline; do
  for tool in pinlog pinlog-loadgen; do
    [ -x "$dir/$tool" ] || { echo "punts.sh: no $dir/$tool; build it first (cargo build --release)" >&2; exit 1; }
  done
done
command -v perf >/dev/null || { echo "punts.sh: perf is needed (apt-get install linux-perf)" >&2; exit 1; }

# One run: prints "punts ctxsw faults task_ms cpu_s records_per_s p99_us p999_us"
# (the first four counted by perf over its 5 s window).
run_one() {
  local dir=$1 rate=$2 work port
  work=$(mktemp -d "$PWD/target/punts-XXXXXX")
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$dir/pinlog" serve --data-dir "$work/data" --listen "127.0.0.1:$port" >"$work/broker.log" 2>&1 &
  local broker=$!
  local deadline=$((SECONDS + 30))
  until "$dir/pinlog-loadgen" produce --bootstrap "127.0.0.1:$port" --topic probe --partitions 1 \
      --records 1 -q --json >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ] || ! kill -0 $broker 2>/dev/null; then
      echo "punts.sh: the broker did not start; its log is in $work/broker.log" >&2
      kill $broker 2>/dev/null || true
      exit 1
    fi
    sleep 0.2
  done
  local args=(--bootstrap "127.0.0.1:$port" --topic punts $load_args --duration 12s --warmup 2s -q --json)
  [ "$rate" != flat ] && args+=(--rate "$rate")
  "$dir/pinlog-loadgen" produce "${args[@]}" >"$work/load.json" 2>"$work/load.err" &
  local load=$!
  sleep 6
  perf stat -x, -e io_uring:io_uring_queue_async_work,context-switches,page-faults,task-clock -p $broker -- sleep 5 \
    2>"$work/perf.csv" >/dev/null
  wait $load
  local cpu
  cpu=$(awk '{printf "%.2f", ($14 + $15) / 100}' /proc/$broker/stat)
  kill -INT $broker
  wait $broker 2>/dev/null || true
  python3 - "$work/perf.csv" "$work/load.json" "$cpu" <<'EOF'
import json, sys
counts = {}
for line in open(sys.argv[1]):
    parts = line.strip().split(",")
    if len(parts) > 2 and parts[0].isdigit():
        counts[parts[2]] = int(parts[0])
    elif len(parts) > 2 and parts[2] == "task-clock":
        counts["task-clock"] = float(parts[0])
load = json.load(open(sys.argv[2]))
lat = load["latency_us"]
print(counts.get("io_uring:io_uring_queue_async_work", -1), counts.get("context-switches", -1),
      counts.get("page-faults", -1), round(counts.get("task-clock", -1)),
      sys.argv[3], round(load["records_per_s"]), lat["p99"], lat["p999"])
EOF
  rm -rf "$work"
}

builds=("$bin")
[ -n "$baseline" ] && builds+=("$baseline")
echo "| build | rate | round | io-wq punts/s | context switches/s | page faults/s | broker CPU s per GB (perf's window) | broker CPU s (whole run) | records/s | p99 ms | p99.9 ms |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for rate in $rates; do
  for round in $(seq "$rounds"); do
    # The order alternates from one round to the next.
    order=("${builds[@]}")
    if [ $((round % 2)) -eq 0 ] && [ ${#builds[@]} -eq 2 ]; then order=("${builds[1]}" "${builds[0]}"); fi
    for dir in "${order[@]}"; do
      echo "punts.sh: $dir, rate $rate, round $round" >&2
      read -r punts ctx faults task_ms cpu rps p99 p999 < <(run_one "$dir" "$rate")
      # Records are the load generator's default 1 KiB.
      awk -v b="$dir" -v r="$rate" -v n="$round" -v p="$punts" -v c="$ctx" -v f="$faults" -v t="$task_ms" -v cpu="$cpu" -v rps="$rps" -v p99="$p99" -v p999="$p999" \
        'BEGIN { printf "| %s | %s | %d | %.0f | %.0f | %.0f | %.2f | %s | %s | %.2f | %.2f |\n", b, r, n, p / 5, c / 5, f / 5, (t / 5000) / (rps * 1024 / 1e9), cpu, rps, p99 / 1000, p999 / 1000 }'
    done
  done
done
