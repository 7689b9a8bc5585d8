#!/usr/bin/env bash
# pinlog-loadgen across pinlog shard counts and settings; writes a markdown
# table (default tuning/sweep-results.md) that tuning/README.md quotes.
#
# Usage: tuning/sweep.sh [--quick] [--out FILE] [--skip-build] [--keep]
#                        [--shards "1 2"] [--configs "default spin0 ..."]
#   --quick       shorter runs, one round (about 4 minutes instead of about 13)
#   --rounds N    passes over the whole matrix (default 2; 1 with --quick)
#   --out FILE    where to write the table (default tuning/sweep-results.md)
#   --skip-build  use target/release/pinlog and target/release/pinlog-loadgen as built
#   --keep        keep the work directory (broker logs, JSON of every run)
#   --shards      shard counts to sweep (default "1 2")
#   --configs     settings to sweep, among the names below (default: all)
#
# Settings (each a TOML file given to `pinlog serve --config`):
#   default    nothing set: spin before park as the broker chooses it (50 us
#              only on CPUs the kernel reserves for it, else 0), read cache
#              following the free memory, no fdatasync
#   spin0      "shard.spin.before.park.us" = 0 (what default is on shared
#              cores)
#   spin50     "shard.spin.before.park.us" = 50 (what default is on CPUs the
#              kernel reserves for the broker)
#   cache8m    "read.cache.bytes" = 8 MiB for the broker
#   cache1g    "read.cache.bytes" = 1 GiB for the broker
#   flush1     "log.flush.interval.messages" = 1 (fdatasync every append)
#
# For every (shards, setting) pair a fresh broker with its own data directory
# runs four workloads, 12 partitions, 1 KiB records, acks=1, 4 connections:
#   produce   flat out (throughput)
#   latency   produce at a fixed --rate (default 100000 records/s), open loop
#   e2e       produce at the same fixed rate with a tailing consumer
#             (produce-to-consume latency)
#   catchup   write CATCHUP_MIB (default 512 MiB) to a new topic, then read it
#             from the earliest offset (how much the read cache serves)
# Pairs run in a rotating order so that drift of the machine does not line
# up with one setting. Loopback only, free ports; every process started here
# is stopped and the work directory removed on exit.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
OUT="$REPO/tuning/sweep-results.md"
QUICK=0; SKIP_BUILD=0; KEEP=0; ROUNDS=""
SHARDS="1 2"
CONFIGS="default spin0 cache8m cache1g flush1"
ARGV_STR="$*"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --out) OUT="$2"; shift ;;
    --skip-build) SKIP_BUILD=1 ;;
    --keep) KEEP=1 ;;
    --shards) SHARDS="$2"; shift ;;
    --configs) CONFIGS="$2"; shift ;;
    --rounds) ROUNDS="$2"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "sweep.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if [ "$QUICK" = 1 ]; then
  SECS=4; WARM=1; CATCHUP_MIB=${CATCHUP_MIB:-256}; ROUNDS=${ROUNDS:-1}
else
  SECS=8; WARM=2; CATCHUP_MIB=${CATCHUP_MIB:-512}; ROUNDS=${ROUNDS:-2}
fi
RATE=${RATE:-100000}
PARTS=12; RECORD=1024; CONNS=4; BATCH=262144; LINGER=5; LAT_LINGER=1

PINLOG_BIN="$REPO/target/release/pinlog"
LOADGEN_BIN="$REPO/target/release/pinlog-loadgen"

T0=$(date +%s)
say() { printf '[sweep %4ds] %s\n' "$(( $(date +%s) - T0 ))" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

BROKER=""; FG=""; WORK=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$FG" ]; then pkill -TERM -P "$FG" 2>/dev/null || true; wait "$FG" 2>/dev/null || true; fi
  if [ -n "$BROKER" ]; then
    kill -TERM "$BROKER" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$BROKER" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$BROKER" 2>/dev/null || true
    wait "$BROKER" 2>/dev/null || true
  fi
  if [ -n "$WORK" ] && [ -d "$WORK" ]; then
    if [ "$KEEP" = 1 ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

for tool in jq python3 /usr/bin/time cargo; do
  command -v "$tool" >/dev/null 2>&1 || die "needs $tool on PATH"
done
for c in $CONFIGS; do
  case "$c" in default|spin0|spin50|cache8m|cache1g|flush1) ;; *) die "unknown setting $c" ;; esac
done
WORK_PARENT="${COMPARE_WORK_PARENT:-$REPO/target}"
mkdir -p "$WORK_PARENT"
[ "$(stat -f -c %T "$WORK_PARENT")" != tmpfs ] || die "$WORK_PARENT is tmpfs: O_DIRECT needs a real disk"
WORK="$(mktemp -d "$WORK_PARENT/sweep.XXXXXX")"
RES="$WORK/results"; mkdir -p "$RES"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
say "work directory $WORK; load average $LOAD_START"

if [ "$SKIP_BUILD" = 0 ]; then
  say "building pinlog and pinlog-loadgen (release)"
  (cd "$REPO" && cargo build --release -p pinlog -p pinlog-loadgen --bins) > "$WORK/build.log" 2>&1 \
    || { tail -30 "$WORK/build.log" >&2; die "cargo build failed"; }
fi
[ -x "$PINLOG_BIN" ] && [ -x "$LOADGEN_BIN" ] || die "missing binaries (run without --skip-build)"

config_toml() {  # config_toml NAME
  case "$1" in
    default) ;;
    spin0) echo '"shard.spin.before.park.us" = 0' ;;
    spin50) echo '"shard.spin.before.park.us" = 50' ;;
    cache8m) echo '"read.cache.bytes" = 8388608' ;;
    cache1g) echo '"read.cache.bytes" = 1073741824' ;;
    flush1) echo '"log.flush.interval.messages" = 1' ;;
  esac
}

# lg NAME -- loadgen args: one measured loadgen run; JSON in $RES/NAME.json,
# broker CPU seconds in $RES/NAME.bcpu.
lg() {
  local name=$1 b0 b1 rc=0; shift
  b0=$(cpu_ticks "$BROKER")
  timeout 300 "$LOADGEN_BIN" "$@" --json > "$RES/$name.out" 2> "$RES/$name.err" &
  FG=$!
  wait "$FG" || rc=$?
  FG=""
  b1=$(cpu_ticks "$BROKER")
  awk -v a="$b0" -v b="$b1" -v hz="$CLK_TCK" 'BEGIN{printf "%.2f\n", (b-a)/hz}' > "$RES/$name.bcpu"
  grep '^{' "$RES/$name.out" | tail -1 > "$RES/$name.json" || true
  [ -s "$RES/$name.json" ] || echo '{}' > "$RES/$name.json"
  [ $rc -eq 0 ] || { say "  $name exited $rc:"; tail -3 "$RES/$name.err" >&2; }
  return 0
}

run_pair() {  # run_pair SHARDS CONFIG ROUND
  local s=$1 c=$2 tag="s$1.$2.r$3" dir="$WORK/$1-$2-$3" port addr
  mkdir -p "$dir"
  port=$(free_port); addr="127.0.0.1:$port"
  {
    echo '"num.partitions" = '"$PARTS"
    echo '"metrics.listen" = "127.0.0.1:'"$(free_port)"'"'
    config_toml "$c"
  } > "$dir/pinlog.toml"
  "$PINLOG_BIN" serve --data-dir "$dir/data" --listen "$addr" --shards "$s" --config "$dir/pinlog.toml" \
    > "$dir/pinlog.log" 2>&1 &
  BROKER=$!
  local up=0
  for _ in $(seq 1 100); do
    if grep -q 'is serving' "$dir/pinlog.log" 2>/dev/null; then up=1; break; fi
    sleep 0.1
  done
  [ $up = 1 ] || die "pinlog --shards $s ($c) did not start: $(tail -3 "$dir/pinlog.log")"
  local common=(--bootstrap "$addr" --partitions "$PARTS" --record-size "$RECORD" --key-space none
                --batch-bytes "$BATCH" --acks 1 --compression none --producers "$CONNS")
  say "round $3, --shards $s, $c: produce"
  lg "$tag.produce" produce "${common[@]}" --topic produce --linger-ms "$LINGER" \
    --duration "$SECS" --warmup "$WARM"
  say "--shards $s, $c: latency at $RATE records/s"
  lg "$tag.latency" produce "${common[@]}" --topic latency --linger-ms "$LAT_LINGER" \
    --rate "$RATE" --duration "$SECS" --warmup "$WARM"
  say "--shards $s, $c: e2e at $RATE records/s"
  lg "$tag.e2e" e2e "${common[@]}" --topic e2e --linger-ms "$LAT_LINGER" --consumers "$CONNS" \
    --rate "$RATE" --duration "$SECS" --warmup "$WARM"
  say "--shards $s, $c: catch-up over $CATCHUP_MIB MiB"
  lg "$tag.fill" produce "${common[@]}" --topic catchup --linger-ms "$LINGER" \
    --records $((CATCHUP_MIB * 1024))
  lg "$tag.catchup" consume --bootstrap "$addr" --topic catchup --from earliest --connections "$CONNS"
  kill -TERM "$BROKER" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 "$BROKER" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$BROKER" 2>/dev/null || true
  wait "$BROKER" 2>/dev/null || true
  BROKER=""
  # Warnings, errors and panics (with the panic message) of this broker.
  sed 's/\x1b\[[0-9;]*m//g' "$dir/pinlog.log" | grep -E -A2 'panicked|WARN|ERROR' | grep -v '^--$' \
    | head -8 > "$RES/$tag.warnings" || true
  rm -rf "$dir"
}

# Rotating order: shard count alternates, settings shift by one each step,
# and each round starts one setting further on.
read -r -a CFG <<< "$CONFIGS"
read -r -a SH <<< "$SHARDS"
n=${#CFG[@]}
for r in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 $((n - 1))); do
    for j in "${!SH[@]}"; do
      c=${CFG[$(( (i + j + r - 1) % n ))]}
      run_pair "${SH[$j]}" "$c" "$r"
    done
  done
done

LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$(( $(date +%s) - T0 ))
say "writing $OUT"
export RES OUT ARGV_STR SHARDS CONFIGS SECS WARM RATE CATCHUP_MIB PARTS RECORD CONNS BATCH LINGER \
  LAT_LINGER LOAD_START LOAD_END ELAPSED QUICK ROUNDS
GIT_REV=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo '?'); export GIT_REV
python3 - > "$OUT.tmp" <<'PY'
import json, os, datetime
E = os.environ
RES = E["RES"]

def load(n):
    try:
        with open(os.path.join(RES, n + ".json")) as f:
            return json.loads(f.read().strip() or "{}")
    except (OSError, ValueError):
        return {}

def txt(n):
    try:
        with open(os.path.join(RES, n)) as f:
            return f.read().strip()
    except OSError:
        return ""

def mb(j):
    return j["bytes"] / j["duration_s"] / 1e6 if j.get("bytes") and j.get("duration_s") else None

def ms(j, k):
    v = (j.get("latency_us") or {}).get(k)
    return None if v is None else v / 1000

def f(x, d=1):
    return "n/a" if x is None else f"{x:.{d}f}"

def cores(n, j):
    try:
        b = float(txt(n + ".bcpu"))
    except ValueError:
        return None
    d = j.get("duration_s")
    w = (j.get("settings") or {}).get("warmup_s") or 0
    if not d:
        return None
    return b / (d + w)

desc = {
    "default": "defaults (spin as the broker chooses it: 50 µs only on reserved CPUs; read cache following the free memory; no fdatasync)",
    "spin0": '`"shard.spin.before.park.us" = 0`',
    "spin50": '`"shard.spin.before.park.us" = 50`',
    "cache8m": '`"read.cache.bytes" = 8388608` (8 MiB for the broker)',
    "cache1g": '`"read.cache.bytes" = 1073741824` (1 GiB for the broker)',
    "flush1": '`"log.flush.interval.messages" = 1` (fdatasync per append)',
}
L = []
w = L.append
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
w("# pinlog settings sweep")
w("")
w(f"Generated by `tuning/sweep.sh{(' ' + E['ARGV_STR']) if E['ARGV_STR'] else ''}` at {now} in "
  f"{int(E['ELAPSED']) // 60} min {int(E['ELAPSED']) % 60} s (git {E['GIT_REV']}); load average "
  f"{E['LOAD_START']} at the start, {E['LOAD_END']} at the end. One fresh broker per row; "
  f"{E['PARTS']} partitions, {E['RECORD']} B records, acks=1, {E['CONNS']} producer connections, "
  f"batches up to {int(E['BATCH']) // 1024} KiB. Throughput runs last {E['SECS']} s after {E['WARM']} s "
  f"warmup, linger {E['LINGER']} ms; latency and e2e runs produce {int(E['RATE']):,} records/s "
  f"(≈{int(E['RATE']) * int(E['RECORD']) / 1e6:.0f} MB/s) open loop with linger {E['LAT_LINGER']} ms; "
  f"catch-up reads {E['CATCHUP_MIB']} MiB that were just written. MB = 10^6 bytes. Broker CPU is in "
  "cores (CPU seconds / wall seconds of the run, warmup included) on this 2-core machine, where the "
  "client runs too.")
w("")
rounds = int(E["ROUNDS"])
def cell(vals, d=1):
    vals = [v for v in vals]
    if not vals or all(v is None for v in vals):
        return "n/a"
    return " / ".join(f(v, d) for v in vals)
w(f"Each cell lists the rounds in order ({rounds} round{'s' if rounds > 1 else ''}; the whole matrix runs once per "
  "round, in a rotating order), so that a single disturbed run shows as one odd value instead of hiding in a mean.")
w("")
w("| shards | setting | produce MB/s | produce p99 ms | broker CPU | latency p50 ms | latency p99 ms | latency p99.9 ms | broker CPU at rate | e2e p50 ms | e2e p99 ms | e2e p99.9 ms | catch-up MB/s | errors |")
w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for s in E["SHARDS"].split():
    for c in E["CONFIGS"].split():
        P, Lt, Ee, C = [], [], [], []
        errs = 0
        failed = set()
        for r in range(1, rounds + 1):
            t = f"s{s}.{c}.r{r}"
            p, l, e, cu = load(t + ".produce"), load(t + ".latency"), load(t + ".e2e"), load(t + ".catchup")
            P.append((t + ".produce", p)); Lt.append((t + ".latency", l)); Ee.append((t + ".e2e", e)); C.append(cu)
            errs += sum((j.get("errors") or 0) for j in (p, l, e, cu))
            failed |= {k for k, j in (("produce", p), ("latency", l), ("e2e", e), ("catch-up", cu)) if not j or j.get("failure")}
        w(f"| {s} | {desc.get(c, c)} | {cell([mb(j) for _, j in P])} | {cell([ms(j, 'p99') for _, j in P])} | "
          f"{cell([cores(n, j) for n, j in P], 2)} | {cell([ms(j, 'p50') for _, j in Lt], 2)} | "
          f"{cell([ms(j, 'p99') for _, j in Lt], 2)} | {cell([ms(j, 'p999') for _, j in Lt], 2)} | "
          f"{cell([cores(n, j) for n, j in Lt], 2)} | {cell([ms(j, 'p50') for _, j in Ee], 2)} | "
          f"{cell([ms(j, 'p99') for _, j in Ee], 2)} | {cell([ms(j, 'p999') for _, j in Ee], 2)} | "
          f"{cell([mb(j) for j in C])} | {errs}{' (failed: ' + ', '.join(sorted(failed)) + ')' if failed else ''} |")
w("")
warn = []
for s in E["SHARDS"].split():
    for c in E["CONFIGS"].split():
      for r in range(1, int(E["ROUNDS"]) + 1):
        t = txt(f"s{s}.{c}.r{r}.warnings")
        if t:
            warn.append(f"- `--shards {s}`, {c}, round {r}:\n\n  ```\n" + "\n".join("  " + x for x in t.splitlines()) + "\n  ```")
if warn:
    w("Broker warnings and errors during the sweep:")
    w("")
    L.extend(warn)
    w("")
print("\n".join(L))
PY
mv -f "$OUT.tmp" "$OUT"
say "done in ${ELAPSED}s: $OUT"
