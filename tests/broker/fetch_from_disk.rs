//! Fetches served from the segment files rather than from appends in the
//! read cache. With the cache off, every byte kcat consumes was read from
//! disk with O_DIRECT on the connection's shard
//! (`src/server/network/response_writer.rs`). With a small cache, reads go through
//! it (`src/log/read_through.rs`) on the partition's shard, filling and
//! evicting it all the time. Either way, partition reads larger than one
//! read piece, ranges in rolled and active segments, and reads after a
//! kill -9 and restart must all return exactly what was produced, in
//! order, with dense offsets; and the cache must stay within its bound.
//!
//! Needs kcat (`apt-get install kcat`); CI installs it.
//! `PINLOG_SKIP_CLIENT_TESTS=1` skips it, as it skips the client tests.

use crate::support;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use support::{run_command, which, Broker, BrokerOpts, PINLOG_BIN};

const TOPIC: &str = "from-disk";
const PARTITIONS: usize = 3;
const RECORDS: usize = 9_000;
/// Records written by the second producer, while a consumer reads.
const MORE_RECORDS: usize = 9_000;
const VALUE_BYTES: usize = 1_000;
/// Small segments, so the 3 MB per partition spans rolled segments too.
const SEGMENT_BYTES: i64 = 2 * 1024 * 1024;
/// Larger than `FILE_READ_PIECE_BYTES` (1 MiB), so one partition's range is
/// read in several pieces kept in flight together.
const PARTITION_FETCH_BYTES: &str = "4194304";
/// Below what a partition holds, so every fetch stops short of the data
/// and the next one starts inside a batch the last one cut.
const SHORT_FETCH_BYTES: &str = "700000";
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

fn skip() -> bool {
    std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1")
}

fn kcat(broker: &Broker) -> Command {
    let mut cmd = Command::new("kcat");
    cmd.args(["-b", &broker.bootstrap()]);
    cmd
}

/// A value that differs in every byte position from its neighbours', so a
/// piece read from the wrong place or in the wrong order cannot pass.
fn value(i: usize) -> String {
    let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..VALUE_BYTES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect()
}

fn producer_input(records: std::ops::Range<usize>) -> String {
    let mut input = String::with_capacity(records.len() * (VALUE_BYTES + 16));
    for i in records {
        input.push_str(&format!("k{i}\t{}\n", value(i)));
    }
    input
}

fn produce(broker: &Broker, records: std::ops::Range<usize>) {
    let input = producer_input(records);
    let out = run_command(
        kcat(broker).args([
            "-P",
            "-t",
            TOPIC,
            "-K",
            "\t",
            "-X",
            "linger.ms=5",
            "-X",
            "acks=all",
        ]),
        Some(input.as_bytes()),
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        broker.fail(&format!("kcat -P failed: {out}"));
    }
}

/// Reads the whole topic and checks every record against what was written;
/// `expected` is the exact count, or `None` while a producer still writes
/// (then every record read must still be right, and offsets dense).
fn consume_and_check(broker: &Broker, stage: &str, expected: Option<usize>, fetch_bytes: &str) {
    let out = run_command(
        kcat(broker).args([
            "-C",
            "-t",
            TOPIC,
            "-o",
            "beginning",
            "-e",
            "-X",
            &format!("fetch.message.max.bytes={fetch_bytes}"),
            "-f",
            "%p\t%o\t%k\t%s\n",
        ]),
        None,
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        broker.fail(&format!("{stage}: kcat -C failed: {out}"));
    }
    let mut next_offset: BTreeMap<usize, i64> = BTreeMap::new();
    let mut seen = 0usize;
    for line in out.stdout.lines() {
        let mut f = line.splitn(4, '\t');
        let (Some(p), Some(o), Some(k), Some(v)) = (f.next(), f.next(), f.next(), f.next()) else {
            broker.fail(&format!("{stage}: unexpected kcat line {line:?}"));
        };
        let p: usize = p.parse().unwrap();
        let o: i64 = o.parse().unwrap();
        let expected_offset = next_offset.entry(p).or_insert(0);
        assert_eq!(
            o, *expected_offset,
            "{stage}: partition {p} offsets are dense"
        );
        *expected_offset += 1;
        let i: usize = k.strip_prefix('k').and_then(|n| n.parse().ok()).unwrap();
        assert!(
            v == value(i),
            "{stage}: record {i} at {p}/{o} reads back different bytes"
        );
        seen += 1;
    }
    if let Some(expected) = expected {
        assert_eq!(seen, expected, "{stage}: every record read back");
        assert_eq!(
            next_offset.len(),
            PARTITIONS,
            "{stage}: every partition served"
        );
    }
}

fn need_kcat() {
    assert!(
        which("kcat").is_some(),
        "kcat is not available; install it with `apt-get install kcat` (CI does), \
         or set PINLOG_SKIP_CLIENT_TESTS=1"
    );
}

#[test]
fn fetches_read_from_segment_files_return_exactly_what_was_written() {
    if skip() {
        return;
    }
    need_kcat();
    let mut broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .setting("read.cache.bytes", 0)
            .setting("log.segment.bytes", SEGMENT_BYTES),
    );
    consume_while_appending_and_after_a_crash(&mut broker);
    broker.stop();
}

/// The read cache of the whole broker in the cached case: far below what
/// the topic holds, so reads keep filling it and evicting from it.
const SMALL_READ_CACHE_BYTES: i64 = 4 * 1024 * 1024;
/// Records produced after the restart in the cached case: about 48 MB, 12
/// times the cache, so that a cache that outgrew its bound would show in
/// the broker's resident memory.
const BULK_RECORDS: usize = 48_000;
/// Growth of the broker's resident memory allowed while the bulk is read
/// twice: the cache's bound plus room for the allocator and in-flight
/// fetch buffers, well below the 96 MB read.
const RSS_GROWTH_MAX_KIB: u64 = 40 * 1024;

#[test]
fn reads_through_a_small_cache_return_exactly_what_was_written_within_its_bound() {
    if skip() {
        return;
    }
    need_kcat();
    let metrics = format!("127.0.0.1:{}", support::free_port());
    let mut broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .setting("read.cache.bytes", SMALL_READ_CACHE_BYTES)
            .setting("metrics.listen", metrics)
            .setting("log.segment.bytes", SEGMENT_BYTES),
    );
    consume_while_appending_and_after_a_crash(&mut broker);
    let metric = |name: &str| {
        broker
            .metric_total(name)
            .unwrap_or_else(|| broker.fail(&format!("no {name} in /metrics")))
    };
    // After the restart, the consume read everything from disk, through
    // the cache.
    assert!(metric("pinlog_read_cache_filled_bytes_total") > 0.0);
    assert!(metric("pinlog_read_cache_evictions_total") > 0.0);
    assert!(metric("pinlog_read_cache_capacity_bytes") == SMALL_READ_CACHE_BYTES as f64);

    let total = RECORDS + MORE_RECORDS;
    produce(&broker, total..total + BULK_RECORDS);
    // Measured after the produce: what the bound is about is the reads.
    // The produce's own peak (up to IN_FLIGHT_REQUESTS_MAX pipelined
    // batches per connection while a slow disk holds their writes) stays
    // in the allocator and would show here on a machine whose disk
    // stalls, whatever the cache does.
    let rss_before = broker.rss_kib().expect("broker RSS");
    for round in 0..2 {
        consume_and_check(
            &broker,
            &format!("bulk, round {round}"),
            Some(total + BULK_RECORDS),
            PARTITION_FETCH_BYTES,
        );
    }
    let rss_after = broker.rss_kib().expect("broker RSS");
    let cached = metric("pinlog_read_cache_bytes");
    assert!(
        cached <= SMALL_READ_CACHE_BYTES as f64,
        "the cache holds {cached} bytes, past read.cache.bytes"
    );
    assert!(
        rss_after.saturating_sub(rss_before) < RSS_GROWTH_MAX_KIB,
        "resident memory grew from {rss_before} KiB to {rss_after} KiB while ~96 MB \
         were read through a {SMALL_READ_CACHE_BYTES}-byte cache"
    );
    broker.stop();
}

/// Produces, consumes while producing, then kill -9s and restarts the
/// broker and consumes again, checking every record each time.
fn consume_while_appending_and_after_a_crash(broker: &mut Broker) {
    let create = run_command(
        Command::new(PINLOG_BIN).args([
            "topic",
            "create",
            TOPIC,
            "--partitions",
            &PARTITIONS.to_string(),
            "--bootstrap-server",
            &broker.bootstrap(),
        ]),
        None,
        CLIENT_TIMEOUT,
    );
    if !create.success() {
        broker.fail(&format!("topic create failed: {create}"));
    }
    produce(broker, 0..RECORDS);
    consume_and_check(broker, "served live", Some(RECORDS), PARTITION_FETCH_BYTES);

    // A catch-up consumer whose fetches stop short of the data, while a
    // producer appends to the very segments (and partial last blocks)
    // being read: every record read must still be exactly what was
    // written.
    let mut producer = kcat(broker)
        .args(["-P", "-t", TOPIC, "-K", "\t", "-X", "linger.ms=1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start kcat -P");
    let input = producer_input(RECORDS..RECORDS + MORE_RECORDS);
    let mut stdin = producer.stdin.take().expect("kcat stdin");
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        for line in input.lines() {
            if stdin.write_all(line.as_bytes()).is_err() || stdin.write_all(b"\n").is_err() {
                break;
            }
        }
    });
    for round in 0..3 {
        consume_and_check(
            broker,
            &format!("while appending, round {round}"),
            None,
            SHORT_FETCH_BYTES,
        );
    }
    writer.join().expect("producer input thread");
    match support::wait_timeout(&mut producer, CLIENT_TIMEOUT) {
        Some(status) if status.success() => {}
        other => broker.fail(&format!("kcat -P ended with {other:?}")),
    }
    let total = RECORDS + MORE_RECORDS;
    consume_and_check(broker, "after appending", Some(total), SHORT_FETCH_BYTES);

    broker.kill9();
    broker.restart();
    consume_and_check(
        broker,
        "after kill -9 and restart",
        Some(total),
        PARTITION_FETCH_BYTES,
    );

    let log = broker.log();
    assert!(!log.contains("panicked"), "no panic: {log}");
}
