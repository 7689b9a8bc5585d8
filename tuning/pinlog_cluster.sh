# shellcheck shell=bash
# A 3-node pinlog cluster for the tuning scripts: combined nodes (broker
# and controller voter) on loopback, one shard each. Sourced by
# tuning/rep_clusters.sh and tuning/reassign.sh after compare.sh's plumbing
# (free_port, die, wait_metadata, WORK, LOGS, PIDS, PINLOG_BIN, PARTS).
# Sets PLR_PORT, PLR_CTRL, PLR_VOTERS, PLR_BOOT; start_pinlog_node I starts
# node I and sets PLR_PID[I]; wait_cluster NAME PORT_ARRAY_NAME waits
# until every node answers Metadata and lists all three brokers.

REP_NODES=(1 2 3)
declare -A PLR_PORT PLR_CTRL PLR_PID
for i in "${REP_NODES[@]}"; do
  PLR_PORT[$i]=$(free_port); PLR_CTRL[$i]=$(free_port)
done
PLR_VOTERS=""
for i in "${REP_NODES[@]}"; do
  PLR_VOTERS+="${PLR_VOTERS:+,}$i@127.0.0.1:${PLR_CTRL[$i]}"
done
# shellcheck disable=SC2034  # for the scripts that source this one
PLR_BOOT="127.0.0.1:${PLR_PORT[1]},127.0.0.1:${PLR_PORT[2]},127.0.0.1:${PLR_PORT[3]}"

# start_pinlog_node I: one combined node (broker and controller voter).
# Three brokers share this machine's cores, so each runs one shard, and the
# nodes' shards go round-robin over the CPUs (taskset: a shard pins itself
# to the first CPU it may run on). The default, a shard per CPU in every
# node, put six pinned threads on two cores: measured with this script's
# R2 load, acks=all p50 13 ms against 9 ms with one shard per node. Spin
# before park 0, as tuning/README.md advises for cores shared with other
# processes.
read -r -a REP_CPUS <<< "$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))')"
start_pinlog_node() {
  local i=$1 dir="$WORK/pinlog-rep-$1"
  mkdir -p "$dir"
  cat > "$dir/pinlog.toml" <<EOF
"num.partitions" = $PARTS
"metrics.listen" = "127.0.0.1:$(free_port)"
"group.initial.rebalance.delay.ms" = 0
"shard.spin.before.park.us" = 0
EOF
  local cpu=${REP_CPUS[$(( (i - 1) % ${#REP_CPUS[@]} ))]}
  taskset -c "$cpu" "$PINLOG_BIN" serve --node-id "$i" --controller-quorum-voters "$PLR_VOTERS" \
    --shards 1 --listen "127.0.0.1:${PLR_PORT[$i]}" --data-dir "$dir/data" --config "$dir/pinlog.toml" \
    >> "$LOGS/pinlog-rep-$i.log" 2>&1 &
  PLR_PID[$i]=$!; PIDS+=("${PLR_PID[$i]}")
}

# wait_cluster NAME PORT_ARRAY_NAME: until every node answers Metadata and
# lists all three brokers.
wait_cluster() {
  local name=$1 i port n
  local -n ports=$2
  for i in "${REP_NODES[@]}"; do
    port=${ports[$i]}
    wait_metadata "127.0.0.1:$port" 120 || die "$name node $i did not come up (see its log in $LOGS)"
    for n in $(seq 1 600); do
      [ "$(kcat -L -b "127.0.0.1:$port" -m 5 2>/dev/null | sed -n 's/^ *\([0-9]*\) brokers:.*/\1/p')" = 3 ] && break
      [ "$n" = 600 ] && die "$name node $i does not list 3 brokers after 60 s"
      sleep 0.1
    done
  done
}

