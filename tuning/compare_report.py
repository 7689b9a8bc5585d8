"""The report of `tuning/compare.sh` (P1-P5 against Kafka and the raw
baseline): reads the run's result files in $RES and the settings in the
environment, and prints markdown on stdout. The section between the notes
markers of the previous report in $OUT is kept.

The script exports the environment and writes it to
$RES/report-env.sh, so that `tuning/compare.sh --report-only WORKDIR`
rewrites a kept run's report with this file as it is now.
"""
import glob, json, os, re, sys, datetime

E = os.environ
RES = E["RES"]
OUT = E["OUT"]
sys.path.insert(0, E["TUNING_DIR"])
from report_helpers import *  # noqa: E402,F403  (load, runs, med, ratio, ...)


lines = []
w = lines.append
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
mode = E["MODE"]

# ------------------------------------------------------------ numbers
raw = [mbps(load(n + ".json")) for n in runs("raw").values()]
raw_med = med(raw)


p1p = [mbps(load(n + ".json")) for n in runs("p1.pinlog").values()]
p1k = [mbps(load(n + ".json")) for n in runs("p1.kafka").values()]
p1_ratios = pair_ratios("p1.pinlog", "p1.kafka", mbps)
p1_ratio = med(p1_ratios)
p1_raw = ratio(med(p1p), raw_med)

p2 = {}
for b in ("pinlog", "kafka"):
    js = [load(n + ".json") for n in runs("p2." + b).values()]
    p2[b] = {k: med([lat(j, k) for j in js]) for k in ("p50", "p99", "p999", "max")}
    p2[b]["rate"] = med([j.get("records_per_s") for j in js if j])
p2_99 = med(pair_ratios("p2.pinlog", "p2.kafka", lambda j: lat(j, "p99")))
p2_raw = {k: med([lat(load(n + ".json"), k) for n in runs("p2.raw").values()]) for k in ("p50", "p99", "p999", "max")}
p2_vs_raw = med(pair_ratios("p2.pinlog", "p2.raw", lambda j: lat(j, "p99")))
p2_999 = med(pair_ratios("p2.pinlog", "p2.kafka", lambda j: lat(j, "p999")))

p3w = ratio(mbps(load("p3.pinlog.written.json")), mbps(load("p3.kafka.written.json")))


def cpu_gb(prefix):
    """(pinlog's, Kafka's, the median per-round ratio) of broker CPU
    seconds per GB over the runs PREFIX.pinlog.* and PREFIX.kafka.*."""
    rec = int(E["RECORD"])
    a = [cpu_s_per_gb(n, rec) for n in runs(prefix + ".pinlog").values()]
    b = [cpu_s_per_gb(n, rec) for n in runs(prefix + ".kafka").values()]
    rs = [ratio(x, y) for x, y in zip(a, b)]
    return a, b, med([r for r in rs if r is not None])


p1_cpu = cpu_gb("p1")
p2_cpu = cpu_gb("p2")
p3t_cpu = cpu_gb("p3tail")
p5_cpu = (
    [cpu_s_per_gb(n, int(E["RECORD"])) for n in runs("p5.s2").values()],
    [cpu_s_per_gb(n, int(E["RECORD"])) for n in runs("p5.s1").values()],
)
p5_cpu = (*p5_cpu, med([r for r in (ratio(x, y) for x, y in zip(*p5_cpu)) if r is not None]))


def cpu_gb_of(kind_pinlog, kind_kafka):
    """cpu_gb for runs named KIND1, KIND2, ... of each broker (the P3 and
    P3big rounds), or a single run named KIND."""
    def of(kind):
        names = [kind] if os.path.exists(os.path.join(RES, kind + ".json")) else [
            f"{kind}{r}" for r in range(1, 10) if os.path.exists(os.path.join(RES, f"{kind}{r}.json"))]
        return [cpu_s_per_gb(n, int(E["RECORD"])) for n in names]
    a, b = of(kind_pinlog), of(kind_kafka)
    return a, b, med([r for r in (ratio(x, y) for x, y in zip(a, b)) if r is not None])


p3w_cpu = cpu_gb_of("p3.pinlog.written", "p3.kafka.written")
p3h_cpu = cpu_gb_of("p3.pinlog.warm", "p3.kafka.warm")
p3bh_cpu = cpu_gb_of("p3big.pinlog.warm", "p3big.kafka.warm")
# The catch-up reads are a fraction of a second each at memory speed, so
# the broker's CPU ticks (10 ms) make these coarse; the cold rounds are the
# longest.
p3_cpu = cpu_gb_of("p3.pinlog.cold", "p3.kafka.cold")


def p3_kind(kind):
    a = [mbps(load(f"p3.pinlog.{kind}{r}.json")) for r in range(1, 10) if os.path.exists(os.path.join(RES, f"p3.pinlog.{kind}{r}.json"))]
    b = [mbps(load(f"p3.kafka.{kind}{r}.json")) for r in range(1, 10) if os.path.exists(os.path.join(RES, f"p3.kafka.{kind}{r}.json"))]
    rs = [ratio(x, y) for x, y in zip(a, b)]
    return a, b, med([r for r in rs if r is not None])


p3c = p3_kind("cold")
p3h = p3_kind("warm")


def p3big_kind(kind):
    a = mbps(load(f"p3big.pinlog.{kind}.json"))
    b = mbps(load(f"p3big.kafka.{kind}.json"))
    return a, b, ratio(a, b)


p3bw = p3big_kind("written")
p3bh = (
    [mbps(load(n + ".json")) for k, n in runs("p3big.pinlog").items() if k.startswith("warm")],
    [mbps(load(n + ".json")) for k, n in runs("p3big.kafka").items() if k.startswith("warm")],
)
p3bh = (*p3bh, med([r for r in (ratio(x, y) for x, y in zip(*p3bh)) if r is not None]))
p3b_cpu = (
    cpu_s_per_gb("p3big.pinlog.written", int(E["RECORD"])),
    cpu_s_per_gb("p3big.kafka.written", int(E["RECORD"])),
)
p3b_cpu = (*p3b_cpu, ratio(*p3b_cpu))
p3t_ratios = pair_ratios("p3tail.pinlog", "p3tail.kafka", mbps)
p3t = med(p3t_ratios)
p3t_p = [mbps(load(n + ".json")) for n in runs("p3tail.pinlog").values()]
p3t_k = [mbps(load(n + ".json")) for n in runs("p3tail.kafka").values()]

p4p = load("p4.pinlog.json")
p4k = load("p4.kafka.json")

p5_1 = [mbps(load(n + ".json")) for n in runs("p5.s1").values()]
p5_2 = [mbps(load(n + ".json")) for n in runs("p5.s2").values()]
p5_ratio = med(pair_ratios("p5.s2", "p5.s1", mbps))


# ------------------------------------------------------------ header
w("# pinlog against Apache Kafka 4.4: side-by-side results")
w("")
w(f"Generated by `tuning/compare.sh{(' ' + E['ARGV_STR']) if E['ARGV_STR'] else ''}` ({mode} mode) at {now}, "
  f"in {int(E['ELAPSED']) // 60} min {int(E['ELAPSED']) % 60} s. Code: git {E['GIT_REV']}{E['GIT_DIRTY']}. "
  "Every number below comes from that one run; the brokers ran on the same machine, "
  "one after the other (A/B/A/B), never at the same time under load. Re-running the script "
  "rewrites this file except the section between the `notes` markers at the end.")
w("")
w(f"Load average (1, 5, 15 min) at the start: {E['LOAD_START']}; at the end: {E['LOAD_END']}."
  + (f" Processes above 10% CPU at the start: {E['BUSY_START']}." if E.get('BUSY_START') else ""))
w("")
w("## Against the targets")
w("")
w("Ratios are pinlog / Kafka, the median of per-round ratios (each round runs both brokers back to back). "
  "MB/s are 10^6 bytes of record values per second.")
w("")
w("| id | workload | pinlog | Kafka | ratio | target | met |")
w("|---|---|---|---|---|---|---|")
w(f"| P1 | produce, acks=1, {E['RECORD']} B records, {E['PARTS']} partitions (MB/s) | {rng(p1p)} | {rng(p1k)} | {xr(p1_ratio)} | ≥ 2.0x Kafka | {met(p1_ratio, '>=', 2.0)} |")
w(f"| P1 | the same against the raw baseline (MB/s) | {rng(p1p)} | raw {rng(raw)} | {'n/a' if p1_raw is None else f'{p1_raw * 100:.0f}%'} of raw | ≥ 80% of raw | {met(p1_raw, '>=', 0.8)} |")
w(f"| P2 | produce latency at {E['P2_RATE']} records/s, p99 (ms) | {f1(p2['pinlog']['p99'] and p2['pinlog']['p99'] / 1000)} | {f1(p2['kafka']['p99'] and p2['kafka']['p99'] / 1000)} | {xr(p2_99)} | ≤ 0.2x | {met(p2_99, '<=', 0.2)} |")
w(f"| P2 | the same against paced direct-I/O appends at that byte rate, no broker, p99 (ms) | {f1(p2['pinlog']['p99'] and p2['pinlog']['p99'] / 1000)} | raw {f1(p2_raw['p99'] and p2_raw['p99'] / 1000)} | {xr(p2_vs_raw)} of raw | – | – |")
w(f"| P2 | the same, p99.9 (ms) | {f1(p2['pinlog']['p999'] and p2['pinlog']['p999'] / 1000)} | {f1(p2['kafka']['p999'] and p2['kafka']['p999'] / 1000)} | {xr(p2_999)} | ≤ 0.2x | {met(p2_999, '<=', 0.2)} |")
if p2_cpu[0]:
    w(f"| P2 | broker CPU seconds per GB produced at that rate | {rng(p2_cpu[0], 2)} | {rng(p2_cpu[1], 2)} | {xr(p2_cpu[2])} | – | – |")
mib = int(E['P3_BYTES']) // 1048576
if p1_cpu[0]:
    w(f"| P1 | broker CPU seconds per GB produced | {rng(p1_cpu[0])} | {rng(p1_cpu[1])} | {xr(p1_cpu[2])} | ≤ 0.4x | {met(p1_cpu[2], '<=', 0.4)} |")
w(f"| P3 | consume catch-up over {mib} MiB, as written (MB/s) | {f1(mbps(load('p3.pinlog.written.json')))} | {f1(mbps(load('p3.kafka.written.json')))} | {xr(p3w)} | ≥ 1.5x | {met(p3w, '>=', 1.5)} |")
if p3w_cpu[0]:
    w(f"| P3 | broker CPU seconds per GB consumed, as written | {rng(p3w_cpu[0], 2)} | {rng(p3w_cpu[1], 2)} | {xr(p3w_cpu[2])} | – | – |")
if p3c[0]:
    w(f"| P3 | catch-up, page cache dropped before each run (MB/s) | {rng(p3c[0])} | {rng(p3c[1])} | {xr(p3c[2])} | ≥ 1.5x | {met(p3c[2], '>=', 1.5)} |")
w(f"| P3 | catch-up, page cache warm for both (MB/s) | {rng(p3h[0])} | {rng(p3h[1])} | {xr(p3h[2])} | ≥ 1.5x | {met(p3h[2], '>=', 1.5)} |")
if p3h_cpu[0]:
    w(f"| P3 | broker CPU seconds per GB consumed, warm | {rng(p3h_cpu[0], 2)} | {rng(p3h_cpu[1], 2)} | {xr(p3h_cpu[2])} | – | – |")
if p3_cpu[0]:
    w(f"| P3 | broker CPU seconds per GB consumed, cold catch-up | {rng(p3_cpu[0])} | {rng(p3_cpu[1])} | {xr(p3_cpu[2])} | – | – |")
w(f"| P3 | tailing: e2e, producer at full speed, consumed (MB/s) | {rng(p3t_p)} | {rng(p3t_k)} | {xr(p3t)} | ≥ 1.5x | {met(p3t, '>=', 1.5)} |")
if p3t_cpu[0]:
    w(f"| P3 | broker CPU seconds per GB, tailing (produced and consumed) | {rng(p3t_cpu[0], 2)} | {rng(p3t_cpu[1], 2)} | {xr(p3t_cpu[2])} | – | – |")
if p3bw[0] is not None or p3bw[1] is not None:
    gib = int(E['P3BIG_BYTES']) / 2**30
    share = int(E['P3BIG_BYTES']) / (int(E['MEM_BYTES']) / 4)
    w(f"| P3big | catch-up over {gib:.1f} GiB ({share:.1f}x a quarter of RAM), as written, one broker at a time (MB/s) | {f1(p3bw[0])} | {f1(p3bw[1])} | {xr(p3bw[2])} | ≥ 1.2x | {met(p3bw[2], '>=', 1.2)} |")
    w(f"| P3big | the same, re-read warm (MB/s) | {rng(p3bh[0])} | {rng(p3bh[1])} | {xr(p3bh[2])} | ≥ 1.2x | {met(p3bh[2], '>=', 1.2)} |")
    if p3bh_cpu[0]:
        w(f"| P3big | broker CPU seconds per GB consumed, re-read warm | {rng(p3bh_cpu[0], 2)} | {rng(p3bh_cpu[1], 2)} | {xr(p3bh_cpu[2])} | – | – |")
    w(f"| P3big | broker CPU seconds per GB consumed, as written | {f2(p3b_cpu[0])} | {f2(p3b_cpu[1])} | {xr(p3b_cpu[2])} | – | – |")
parts = int((p4p or {}).get('partitions') or E['P4_PARTS'])
def p4v(j, k, d=1):
    v = j.get(k) if j else None
    if j and j.get("create_ms") == "failed":
        return "create failed"
    if j and k == "restart_s" and not j.get("restart_ok"):
        return f"did not finish in {v:.0f}"
    return "not run" if not j else ("n/a" if v is None else f"{v:.{d}f}")
w(f"| P4 | {parts:,} partitions{'' if parts == int(E['P4_PARTS']) else ' (not ' + format(int(E['P4_PARTS']), ',') + ': see P4)'}: RSS per idle partition (KiB) | {p4v(p4p, 'kib_per_partition')} | {p4v(p4k, 'kib_per_partition')} | - | ≤ 50 KiB (pinlog) | {met(p4p.get('kib_per_partition') if p4p else None, '<=', 50)} |")
w(f"| P4 | restart after a clean shutdown, to Metadata with all {parts:,} partitions (s) | {p4v(p4p, 'restart_s', 2)} | {p4v(p4k, 'restart_s', 2)} | - | ≤ 2 s (pinlog) | {met(p4p.get('restart_s') if p4p and p4p.get('restart_ok') else None, '<=', 2.0)} |")
w(f"| P5 | P1 on pinlog, --shards 2 / --shards 1 (MB/s) | 2 shards: {rng(p5_2)} | 1 shard: {rng(p5_1)} | {xr(p5_ratio)} | ≥ 1.7x | {met(p5_ratio, '>=', 1.7)} |")
if p5_cpu[0]:
    w(f"| P5 | broker CPU seconds per GB produced, --shards 2 / --shards 1 | 2 shards: {rng(p5_cpu[0], 2)} | 1 shard: {rng(p5_cpu[1], 2)} | {xr(p5_cpu[2])} | – | – |")
w("")

# ------------------------------------------------------------ setup
def sysctl(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "?"


w("## Setup")
w("")
if int(E.get('THROTTLE_MBPS') or 0):
    w(f"- **Same disk, throttled to {E['THROTTLE_MBPS']} MB/s of writes.** Both brokers, the raw sink and all "
      "their data live in one work directory on an ext4 file system on a loop device (direct I/O to an image "
      "file under the repository's `target/`), whose writes the root blkio cgroup limits to "
      f"{E['THROTTLE_MBPS']} MB/s (`blkio.throttle.write_bps_device`). The limit holds every writer, the "
      "kernel's writeback of Kafka's page cache as well as pinlog's direct writes.")
else:
    w("- **Same disk.** Both brokers, the raw sink and all their data live in one work directory under the "
      "repository's `target/`, on the disk described under Machine.")
w("- **Replication factor 1** on both; one broker each; loopback only.")
w("- **No run pays for the one before it.** Before every measured run the script runs `sync` and waits until "
  "the page cache holds less than 64 MiB of dirty data; without that, the kernel's writeback of Kafka's data "
  "lands on the pinlog run that follows (in trial runs without it, pinlog's P2 p99 was 4–70 ms; with it, 2–6 ms).")
w("- **Durability: neither broker fsyncs per batch; both leave it to a timer.** Kafka runs with its defaults "
  "(`log.flush.interval.messages` and `log.flush.interval.ms` unset, so it never fsyncs on its own): appends "
  "go to the OS page cache, and the kernel's writeback timer writes them out (`vm.dirty_expire_centisecs` = "
  f"{sysctl('/proc/sys/vm/dirty_expire_centisecs')}, `vm.dirty_writeback_centisecs` = "
  f"{sysctl('/proc/sys/vm/dirty_writeback_centisecs')}). pinlog runs with its defaults too (no fdatasync: "
  "`log.flush.interval.*` unset): each append is an O_DIRECT write, so it is in the file (and past the page "
  "cache) when acknowledged, but not fdatasync'ed. acks=1 on every produce. Neither survives a power loss "
  "of the last seconds; both survive a process crash.")
spin_us = text("pinlog.spin_us") or "(not logged)"
w(f"- **pinlog**: release build, `pinlog serve --shards 2` (one shard pinned per core), config file with "
  f"`num.partitions = {E['PARTS']}`, `group.initial.rebalance.delay.ms = 0` and a free `metrics.listen` port; everything else default (read cache "
  f"up to three quarters of the machine's memory, following the free memory; spin before park {spin_us} µs, as the broker "
  "chose it: 50 only on CPUs the kernel reserves for it; segments 1 GiB).")
w(f"- **Kafka {E.get('KAFKA_VERSION', '4.4.0')}**: `kafka.Kafka` from Maven Central's jars, KRaft combined "
  f"broker+controller, node.id 1, heap -Xms/-Xmx{E['KAFKA_HEAP']}, G1 (the flags of Kafka's start script), "
  f"num.partitions {E['PARTS']}, `group.initial.rebalance.delay.ms=0`, `log.segment.delete.delay.ms=1000` (so deleted topics free the disk between "
  "rounds); everything else default (3 network threads, 8 I/O threads, segments 1 GiB). Storage formatted with "
  "`kafka.tools.StorageTool format` and a fresh `random-uuid` cluster id.")
w("- **Both brokers run during P1–P3** (the idle one costs next to nothing); P4 and P5 use their own "
  "broker processes. The brokers and the client share the machine's cores: pinlog pins its shards to "
  "CPUs 0 and 1, Kafka and the client float.")
w(f"- **Client settings, the same for both brokers:** pinlog-loadgen, {E['LG_CONNS']} producer connections, "
  f"batches up to {int(E['LG_BATCH']) // 1024} KiB per partition, linger {E['LG_LINGER']} ms "
  f"({E['LG_P2_LINGER']} ms for P2), no compression, no keys, acks=1. Each topic is created before its run "
  "(CreateTopics through the Java Admin client) and deleted after it.")
w("")

# ------------------------------------------------------------ details
w("## Raw baseline")
w("")
w("`tuning/raw-sink`: a glommio TCP sink with one shard per core (SO_REUSEPORT), each writing what it "
  "receives into its own O_DIRECT file in aligned 1 MiB DMA writes (up to 4 in flight per connection, no "
  "fdatasync), against its sender mode: 4 blocking connections writing 1 MiB buffers for "
  f"{E['RAW_SECS']} s. The clock stops when the sink has confirmed that every byte was written. "
  + ("Run before P1 and again after it." if len(raw) > 1 else "Run once, before P1."))
w("")
w("| run | MB/s | sink CPU (cores) | sender CPU (cores) |")
w("|---|---|---|---|")
for k, n in runs("raw").items():
    bc, cc = cores(n)
    w(f"| raw {k} | {f1(mbps(load(n + '.json')))} | {f2(bc)} | {f2(cc)} |")
w("")

w(f"## P1: produce throughput ({E['P1_SECS']} s measured after {E['P1_WARM']} s warmup, per run)")
w("")
w("An untimed warm-up round on each broker comes first (the `warmup` rows), so that Kafka's JIT has "
  "compiled its hot paths before the measured rounds.")
w("")
w(RUN_HDR)
for b in ("pinlog", "kafka"):
    if os.path.exists(os.path.join(RES, f"warmup.{b}.json")):
        w(run_row(f"{b} warmup (untimed)", f"warmup.{b}"))
for b in ("pinlog", "kafka"):
    for k, n in runs("p1." + b).items():
        w(run_row(f"{b} round {k}", n))
w("")
w("Per-round ratios pinlog/Kafka: " + (", ".join(f"{x:.2f}" for x in p1_ratios) or "n/a") + ".")
w("")

w(f"## P2: produce latency at {E['P2_RATE']} records/s")
w("")
w(f"The rate is {E.get('P2_LOAD') or 50}% of Kafka's P1 median ({float(E['KAFKA_P1_RPS']):.0f} records/s), open loop: latency is "
  "measured from each record's intended send time, so stalls are not hidden. "
  f"{E['P2_SECS']} s measured after {E['P2_WARM']} s warmup.")
w("")
w(RUN_HDR)
for b in ("pinlog", "kafka"):
    for k, n in runs("p2." + b).items():
        w(run_row(f"{b} round {k}", n))
w("")

w(f"## P3: consume throughput over {mib} MiB ({E['P3_RECORDS']} records in {E['PARTS']} partitions)")
w("")
w("The same data set is written once to each broker (fill rows), then read from the earliest offset to the "
  "end, first as written, then with the page cache dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) before "
  "each run, then with the page cache warm for both (after one untimed read by each, the prime rows). Kafka writes through the page cache, so 'as written' "
  "reads hit memory on Kafka; pinlog writes with O_DIRECT and keeps what it wrote in its read cache "
  "(`read.cache.bytes`, a quarter of memory by default), so they hit memory on pinlog too. Before each cold "
  "pinlog run the broker is also restarted, which empties its read cache; its reads then go to the disk and "
  "fill the cache (read-through). Tailing is `e2e` mode: a producer at full speed and a "
  f"consumer at the log end, {E['TAIL_SECS']} s after {E['TAIL_WARM']} s warmup; its latency is produce-to-consume.")
w("")
w(RUN_HDR)
for n in ["p3fill.pinlog", "p3fill.kafka", "p3.pinlog.written", "p3.kafka.written"]:
    w(run_row(n, n))
prime_rows = ["p3.pinlog.prime", "p3.kafka.prime"]
for kind in ("cold", "prime", "warm"):
    if kind == "prime":
        for n in prime_rows:
            if os.path.exists(os.path.join(RES, n + ".json")):
                w(run_row(n + " (untimed for the ratio)", n))
        continue
    for r in range(1, 10):
        for b in ("pinlog", "kafka"):
            n = f"p3.{b}.{kind}{r}"
            if os.path.exists(os.path.join(RES, n + ".json")):
                w(run_row(n, n))
for b in ("pinlog", "kafka"):
    for k, n in runs("p3tail." + b).items():
        w(run_row(f"p3tail.{b} round {k}", n))
w("")
cache_rows = []
windows = ["p3fill.pinlog", "p3.pinlog.before-written", "p3.pinlog.written"]
for n in windows + [f"p3.pinlog.{k}{r}" for k in ("cold", "warm") for r in range(1, 10)]:
    path = os.path.join(RES, n + ".cache.json")
    if os.path.exists(path):
        c = json.load(open(path))
        mb = lambda k: f"{c[k] / 1e6:.0f}" if k in c else "–"
        cache_rows.append(f"| {n} | {c['hits']} | {c['misses']} | {c['evictions']} | "
                          f"{c['filled_bytes'] / 1e6:.1f} | {mb('used_bytes_after')} | {mb('capacity_bytes_after')} |")
if cache_rows:
    w("pinlog's read cache during the fill, between the fill and the read as written (while Kafka's fill ran), "
      "and during each of its reads (all shards; a hit serves a fetch's partition from memory, "
      "a miss reads it from the file and fills the cache; used and budget at the window's end):")
    w("")
    w("| window | hits | misses | evictions | filled (MB) | used after (MB) | budget after (MB) |")
    w("|---|---|---|---|---|---|---|")
    for row in cache_rows:
        w(row)
    w("")
if E.get("DROP_CACHES") != "1":
    w("The cold runs were skipped: /proc/sys/vm/drop_caches was not writable.")
    w("")

w(f"## P4: {int(E['P4_PARTS']):,} partitions on one broker")
w("")
w("A fresh broker; a 100-partition topic first (warms the code paths and gives the open files per partition), "
  "then VmRSS from /proc/<pid>/status; then N more partitions through CreateTopics; 5 s after Metadata "
  "shows them all, VmRSS again. Per partition = the difference / N. Then SIGTERM (clean shutdown), start again, "
  "and time from the start of the process until a Metadata request reports all N partitions. The N "
  "partitions come as topics of 500 partitions, created one CreateTopics request each: Kafka's controller "
  "refuses a request that adds more than 10,000 metadata records (`max.records.per.user.op`), so one "
  "10,000-partition topic cannot be created on Kafka at all. N is "
  f"{int(E['P4_PARTS']):,} unless the broker's open-files limit cannot hold that many at the open files per "
  "partition measured on the 100-partition topic; then N is the largest multiple of 500 that leaves 1,000 "
  "descriptors spare.")
w("")
w("| broker | N | open files per partition | open-files limit | RSS before (MiB) | RSS after create (MiB) | KiB per partition | create (ms) | clean stop (s) | restart (s) | RSS after restart (MiB) | KiB per partition after restart |")
w("|---|---|---|---|---|---|---|---|---|---|---|---|")
for b, j in (("pinlog", p4p), ("kafka", p4k)):
    if not j:
        w(f"| {b} | not run | | | | | | | | | | |")
        continue
    if j.get("create_ms") == "failed":
        w(f"| {b} | {j['partitions']:,} | {j['fds_per_partition']:.2f} | {j['open_files_limit']} | "
          f"{j['rss_base_kib'] / 1024:.1f} | creating the partitions failed | | | | | | |")
        continue
    w(f"| {b} | {j['partitions']:,} | {j['fds_per_partition']:.2f} | {j['open_files_limit']} | {j['rss_base_kib'] / 1024:.1f} | "
      f"{j['rss_after_kib'] / 1024:.1f} | {j['kib_per_partition']:.1f} | "
      f"{j['create_ms']} | {j['stop_s']:.2f} | {j['restart_s']:.2f}{'' if j['restart_ok'] else ' (did not finish)'} | "
      f"{j['rss_after_restart_kib'] / 1024:.1f} | {j['kib_per_partition_after_restart']:.1f} |")
w("")
su = text("p4.pinlog.startup_ms")
if su:
    w(f"pinlog's own log reported `startup_ms={su}` for the restart (from process start to serving).")
    w("")
if E.get("KAFKA_P4") != "1":
    w("Kafka was not run in P4 in this mode (`--quick` or `--no-kafka-p4`): only pinlog has a target here.")
    w("")

w(f"## P5: shard count (P1 on pinlog, {E['P5_SECS']} s after {E['P5_WARM']} s warmup)")
w("")
w(RUN_HDR)
for s in ("s1", "s2"):
    for k, n in runs("p5." + s).items():
        w(run_row(f"--shards {s[1:]} round {k}", n))
w("")

# ------------------------------------------------------------ java
w("## Cross-check with Kafka's own tools")
w("")
w(f"`org.apache.kafka.tools.ProducerPerformance` ({E['JAVA_RECORDS']} records of {E['RECORD']} B, "
  f"acks=1, batch.size {E['LG_BATCH']}, linger.ms {E['LG_LINGER']}, 12 partitions) and consumers reading "
  "the same topic back. `ConsumerPerformance` subscribes with a consumer group (join, sync, offset commits); "
  "`AssignConsumerPerf` (compiled by the script: the same consumer settings, `assign()` instead of "
  "`subscribe()`) measures the fetch path alone.")
w("")
w("| tool | pinlog | Kafka | ratio |")
w("|---|---|---|---|")
def jprod(b):
    t = text(f"jprod.{b}.out").splitlines()
    m = [l for l in t if "records sent" in l]
    if not m:
        return None, "failed"
    l = m[-1]
    mm = re.search(r"\(([\d.]+) MB/sec\)", l)
    p99 = re.search(r"([\d.]+) ms 99th", l)
    v = float(mm.group(1)) * 1048576 / 1e6 if mm else None  # ProducerPerformance's MB is MiB
    return v, (f"{v:.1f} MB/s, p99 {p99.group(1)} ms" if v else l)
def jcons(b):
    j = None
    for l in reversed(text(f"jcons.{b}.out").splitlines()):
        if l.startswith("{"):
            try:
                j = json.loads(l)
            except ValueError:
                pass
            break
    v = mbps(j) if j else None
    return v, ("failed" if v is None else f"{v:.1f} MB/s")
def jcperf(b):
    t = [l for l in text(f"jcperf.{b}.out").splitlines() if l and not l.startswith("start.time")]
    err = ""
    try:
        with open(os.path.join(os.path.dirname(RES), "logs", f"jcperf.{b}.err")) as f:
            m = re.search(r"does not support [A-Z_]+", f.read())
            err = m.group(0) if m else ""
    except OSError:
        pass
    if t:
        cols = [c.strip() for c in t[-1].split(",")]
        try:
            mb = float(cols[3]) * 1048576 / 1e6
            return mb, f"{mb:.1f} MB/s (fetch only: {float(cols[8]) * 1048576 / 1e6:.1f} MB/s)"
        except (IndexError, ValueError):
            pass
    return None, ("fails: " + err) if err else "failed"
for label, fn in (("ProducerPerformance", jprod), ("AssignConsumerPerf", jcons), ("ConsumerPerformance", jcperf)):
    a, at = fn("pinlog")
    b, bt = fn("kafka")
    w(f"| {label} | {at} | {bt} | {xr(ratio(a, b))} |")
w("")
w("ProducerPerformance and ConsumerPerformance print MB as MiB; they are converted to 10^6 bytes here. "
  "The Java client costs more CPU per record than pinlog-loadgen, so on 2 cores it saturates the machine "
  "earlier; read its ratios as a check of direction, not of the size of the gap.")
w("")

# ------------------------------------------------------------ machine
lines.extend(machine_lines(E))

# ------------------------------------------------------------ commands
w("## Commands")
w("")
w("The whole run:")
w("")
w("```sh")
w(f"tuning/compare.sh{(' ' + E['ARGV_STR']) if E['ARGV_STR'] else ''}")
w("```")
w("")
w("The first command of each kind, exactly as run (ports are free ports the script picked; the Kafka "
  "runs are the same commands with Kafka's address):")
w("")
w("```sh")
order = ["raw", "p1", "p2", "p3fill", "p3", "p3tail", "p3bigfill", "p3big", "jprod", "jcons", "jcperf", "p5"]
cmds = {}
for p in sorted(glob.glob(os.path.join(RES, "*.cmd"))):
    n = os.path.basename(p)[:-4]
    parts_ = n.split(".")
    if "kafka" in parts_:
        continue
    key = parts_[0] + ("." + parts_[1] if parts_[0] == "p5" else "")
    cmds.setdefault(key, n)
for key in sorted(cmds, key=lambda k: (order.index(k.split(".")[0]) if k.split(".")[0] in order else 99, k)):
    n = cmds[key]
    w(f"# {n}")
    w(text(n + ".cmd").replace(os.path.dirname(RES), "$WORK"))
w("```")
w("")
w("Brokers: `target/release/pinlog serve --data-dir $WORK/pinlog-main/data --listen 127.0.0.1:PORT --shards 2 "
  "--config $WORK/pinlog-main/pinlog.toml`; Kafka: `java -Xmx2g -Xms2g -XX:+UseG1GC -XX:MaxGCPauseMillis=20 "
  "-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -cp \"$KAFKA_LIBS/*\" kafka.Kafka "
  "$WORK/kafka/server.properties` after `kafka.tools.StorageTool format -t $(random-uuid) -c server.properties`. "
  "The properties are written by `kafka_config` in `tuning/compare.sh`.")
w("")
w("Raw sink: `tuning/raw-sink/target/release/raw-sink sink --listen 127.0.0.1:PORT --dir $WORK/raw-data` "
  "(one shard per core), fed by the `send` command above. Topics: `java -cp $WORK/java:$KAFKA_LIBS/* BenchAdmin "
  "create ADDR TOPIC 12` before each run and `BenchAdmin delete ADDR TOPIC` after it; P4 uses `BenchAdmin "
  "create-many ADDR p4- TOPICS 500`, VmRSS from `/proc/<pid>/status` and `kcat -L` for the partition count. "
  "Before each measured run: `sync`, then wait until `Dirty:` in /proc/meminfo is under 64 MiB.")
w("")

# ------------------------------------------------------------ notes
lines.extend(notes_lines(OUT))
print("\n".join(lines))
