//! Power loss under a real broker (issue 34): one broker with its data
//! directory on the power-loss file system (`powerfs/`), flushing every
//! message (`log.flush.interval.messages=1`), takes acks=1 produce
//! requests one at a time while the test cuts the power at random moments:
//! kill -9 (the power takes the process too), forget every change no sync
//! made durable (or, half the time, all but a random prefix of each
//! file's unsynced writes, as a disk's write cache would), start again on
//! what survived. After each restart every
//! acknowledged record must be read back at its offset, and the log must
//! hold the produced records in the order they were sent, with nothing
//! that was never sent.
//!
//! A second test runs the broker under the default flush settings (no
//! flush per message: an acknowledged record may be lost, the log must
//! still be a prefix of what was written). After each cut, before the
//! restart, every checkpoint on the disk must parse (recovery points, log
//! starts, HWs, cleaner offsets, the shard placement, each partition's
//! leader epochs, producer snapshots and `partition.metadata`, the
//! metadata quorum's `quorum-state`); the restart must succeed; the log
//! must hold records in the order written from offset 0; and once the
//! broker stops cleanly, `pinlog log verify`'s checks
//! (`verify_partition_dir`) must pass on every partition directory, the
//! metadata quorum's log included.
//!
//! A fixed seed runs first, then a random one (printed). More points by
//! hand: `PINLOG_POWER_LOSS_POINTS=50 PINLOG_POWER_LOSS_SEED=<seed> cargo
//! test --release --test broker power_loss:: -- --nocapture`. Needs root and
//! /dev/fuse (and kcat); prints `NOT RUN` otherwise.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support;
use crate::support::kafka_conn::{read_frame, Conn};
use crate::support::power::{seed_from_env, PowerDisk, Rng, SEED_ENV};
use crate::support::{kcat_produce, run_command, which, Broker, BrokerOpts};
use bytes::{Bytes, BytesMut};
use pinlog::constants::{
    CLEANER_OFFSET_CHECKPOINT_FILE, LEADER_EPOCH_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE, REPLICATION_OFFSET_CHECKPOINT_FILE, SHARD_PLACEMENT_FILE,
};
use pinlog::log::batch::{self, build_batch, BatchIter, BatchSpec, CountRule};
use pinlog::log::checkpoint::{decode_epoch_checkpoint, decode_offset_checkpoint};
use pinlog::log::partition_metadata::{self, PARTITION_METADATA_FILE};
use pinlog::log::producer_state::{decode_snapshot, SNAPSHOT_FILE_SUFFIX};
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::chunks::RecordData;
use pinlog::protocol::codec::Reader;
use pinlog::protocol::header::{decode_response_header, RequestHeader};
use pinlog::protocol::messages::fetch::{FetchPartition, FetchRequest, FetchResponse, FetchTopic};
use pinlog::protocol::messages::produce::{
    PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData,
};
use pinlog::quorum::log_store::QUORUM_STATE_FILE;
use pinlog::shard::flush_policy::FLUSH_POLICY_RESCAN;
use pinlog::tools::verify::verify_partition_dir;
use pinlog_powerfs::CutMode;

const TOPIC: &str = "power";
const FIXED_SEED: u64 = 20261234;
/// The temporary directories of the mounts are named with it.
const MOUNT_PREFIX: &str = "pinlog-power-loss-";
const POINTS_ENV: &str = "PINLOG_POWER_LOSS_POINTS";
/// Cuts per seed in CI: two seeds of this many keep the test near a minute.
const POINTS_DEFAULT: usize = 3;
const PRODUCE_VERSION: i16 = 9;
const FETCH_VERSION: i16 = 12;
/// The byte limit of each Fetch of [`read_all`].
const READ_ALL_FETCH_BYTES: i32 = 8 << 20;
/// How long [`read_all`] may take.
const READ_ALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long [`read_all`] waits for the high watermark to reach the end
/// its caller expects.
const READ_SETTLE: Duration = Duration::from_secs(10);
/// How long the load runs before a cut, at most.
const LOAD_MS_MAX: u64 = 1500;
/// The default-flush test's compacted topic: each cut's round writes the
/// same keys again, so the cleaner runs and its offsets are checkpointed.
const COMPACTED: &str = "power-compacted";
/// Keys written to [`COMPACTED`] each round.
const COMPACTED_KEYS: usize = 200;
/// The cleaner's pause between passes in the default-flush test (Kafka's
/// default is 15 s).
const CLEANER_BACKOFF_MS: i64 = 100;
/// The HW checkpoint interval of both tests (the recovery points are
/// checkpointed with it): short, so that cuts land during its writes too,
/// and so that a restart recovers what came since the last checkpoint,
/// not the whole log. At Kafka's default (5 s) no checkpoint was ever
/// written between two cuts, and a long run's restarts scanned every
/// segment: 4 s a cut after 130 cuts, growing with the log.
const HW_CHECKPOINT_INTERVAL_MS: i64 = 100;

/// What the producer learnt: record number to the offset it was
/// acknowledged at.
type Acks = Arc<Mutex<BTreeMap<u64, i64>>>;

/// Record `n`'s batch: one record, value `p<n>`, padded with dots to
/// `pad_to` bytes of value when that is longer.
fn record_batch(n: u64, pad_to: usize) -> Vec<u8> {
    let mut value = format!("p{n}");
    while value.len() < pad_to {
        value.push('.');
    }
    build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: 1_700_000_000_000,
        records: &[(0, None, value.as_bytes())],
    })
}

/// Record `n`'s batch of exactly `len` bytes.
fn record_batch_of_len(n: u64, len: usize) -> Vec<u8> {
    let overhead = record_batch(n, 0).len() - format!("p{n}").len();
    // A longer value may take a longer length varint: adjust once more.
    let mut batch = record_batch(n, len.saturating_sub(overhead));
    if batch.len() != len {
        let pad = len - overhead - (batch.len() - len);
        batch = record_batch(n, pad);
    }
    assert_eq!(
        batch.len(),
        len,
        "a batch of record {n} of exactly {len} bytes"
    );
    batch
}

/// Sends record `n` as one acks=1 batch; its offset, or why not.
fn produce_one(stream: &mut TcpStream, n: u64) -> Result<i64, String> {
    produce_batch(stream, n, record_batch(n, 0))
}

/// Sends record `n`'s `batch` with acks=1; its offset, or why not.
fn produce_batch(stream: &mut TcpStream, n: u64, batch: Vec<u8>) -> Result<i64, String> {
    let mut frame = BytesMut::from(&[0u8; 4][..]);
    let correlation_id = n as i32;
    RequestHeader {
        api_key: ApiKey::Produce as i16,
        api_version: PRODUCE_VERSION,
        correlation_id,
        client_id: Some("power-loss".into()),
    }
    .encode(
        &mut frame,
        ApiKey::Produce.request_header_version(PRODUCE_VERSION),
    );
    ProduceRequest {
        transactional_id: None,
        acks: 1,
        timeout_ms: 10_000,
        topics: vec![TopicProduceData {
            name: TOPIC.into(),
            partitions: vec![PartitionProduceData {
                index: 0,
                records: Some(Bytes::from(batch)),
            }],
        }],
    }
    .encode(&mut frame, PRODUCE_VERSION);
    let size = (frame.len() - 4) as i32;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    stream.write_all(&frame).map_err(|e| e.to_string())?;
    let mut r = Reader::new(read_frame(stream).map_err(|e| e.to_string())?);
    let id = decode_response_header(
        &mut r,
        ApiKey::Produce.response_header_version(PRODUCE_VERSION),
    )
    .map_err(|e| format!("{e:?}"))?;
    if id != correlation_id {
        return Err(format!("correlation id {id}, expected {correlation_id}"));
    }
    let resp = ProduceResponse::decode(&mut r, PRODUCE_VERSION).map_err(|e| format!("{e:?}"))?;
    let p = &resp.responses[0].partition_responses[0];
    if p.error_code != 0 {
        return Err(format!("error code {}", p.error_code));
    }
    Ok(p.base_offset)
}

/// Produces records `next..` one at a time until `stop` or an error (the
/// broker's death); returns the next record number.
fn produce_until(addr: SocketAddr, mut next: u64, acks: Acks, stop: Arc<AtomicBool>) -> u64 {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else {
        return next;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(15)));
    while !stop.load(Ordering::Relaxed) {
        // A record that fails was perhaps written: never reuse its number.
        let n = next;
        next += 1;
        match produce_one(&mut stream, n) {
            Ok(offset) => {
                acks.lock().expect("acks").insert(n, offset);
            }
            Err(_) => break,
        }
    }
    next
}

/// Every record of the topic as `(offset, value)`, read with Fetch
/// requests from offset 0 to the high watermark. Faster than a client
/// that formats every record, which matters in long runs: the whole log
/// is read back after every cut. Right after a start the high watermark
/// may not have caught up with the log yet (the partition's leadership
/// is applied after the listener opens): the read goes on until it
/// reaches `expected_end` or [`READ_SETTLE`] passes, and the caller's
/// checks then say what is missing.
fn read_all(broker: &Broker, expected_end: i64) -> Vec<(i64, String)> {
    let settle_until = Instant::now() + READ_SETTLE;
    let addr: SocketAddr = broker.bootstrap().parse().expect("an address");
    let mut conn = Conn::open(addr, "power-loss-reader", Duration::from_secs(30))
        .expect("connect to the broker");
    let deadline = Instant::now() + READ_ALL_TIMEOUT;
    let mut out = Vec::new();
    let mut next = 0i64;
    loop {
        assert!(
            Instant::now() < deadline,
            "reading {TOPIC} back took over {READ_ALL_TIMEOUT:?} (at offset {next})"
        );
        let req = FetchRequest {
            max_bytes: READ_ALL_FETCH_BYTES,
            topics: vec![FetchTopic {
                topic: TOPIC.into(),
                partitions: vec![FetchPartition {
                    partition: 0,
                    fetch_offset: next,
                    partition_max_bytes: READ_ALL_FETCH_BYTES,
                    ..FetchPartition::default()
                }],
            }],
            ..FetchRequest::default()
        };
        let mut r = conn.call(ApiKey::Fetch, FETCH_VERSION, |w| {
            req.encode(w, FETCH_VERSION)
        });
        let resp = FetchResponse::decode(&mut r, FETCH_VERSION).expect("decode Fetch");
        let p = &resp.responses[0].partitions[0];
        if p.error_code != 0 {
            // Leadership or the log not open yet right after a start.
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        let bytes = match &p.records {
            Some(RecordData::Bytes(b)) => b.clone(),
            Some(RecordData::Chunks(_)) => panic!("a decoded Fetch holds bytes"),
            None => Bytes::new(),
        };
        // The last batch may be cut by the byte limit: stop at it.
        for batch in BatchIter::new(&bytes, CountRule::Exact) {
            let Ok((at, h)) = batch else { break };
            let records = batch::records(&bytes[at..at + h.size_bytes()]).expect("records");
            for record in records {
                let record = record.expect("a record");
                let offset = h.base_offset + record.offset_delta;
                let value = String::from_utf8_lossy(record.value.unwrap_or_default());
                out.push((offset, value.into_owned()));
            }
            next = h.next_offset();
        }
        if next >= p.high_watermark {
            if next >= expected_end || Instant::now() >= settle_until {
                return out;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The checks after a restart: every acknowledged record at its offset,
/// offsets dense from 0, and the producer's records in the order sent.
fn check(log: &[(i64, String)], acks: &BTreeMap<u64, i64>, point: &str) {
    for (i, (offset, _)) in log.iter().enumerate() {
        assert_eq!(*offset, i as i64, "{point}: offsets dense from 0");
    }
    let mut last = None;
    for (offset, value) in log.iter().skip(1) {
        let n: u64 = value
            .strip_prefix('p')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{point}: offset {offset} holds {value:?}, never sent"));
        assert!(
            last.is_none_or(|l| n > l),
            "{point}: p{n} at offset {offset} after p{last:?}"
        );
        last = Some(n);
    }
    for (n, offset) in acks {
        let found = log.get(*offset as usize).map(|(_, v)| v.as_str());
        assert_eq!(
            found,
            Some(format!("p{n}").as_str()),
            "{point}: acknowledged p{n} at offset {offset} lost ({} records left)",
            log.len()
        );
    }
}

/// Whether the test can run here; says why not otherwise.
fn can_run() -> bool {
    // SAFETY: geteuid(2) has no preconditions.
    let ok = unsafe { libc::geteuid() } == 0
        && Path::new("/dev/fuse").exists()
        && which("kcat").is_some();
    if !ok {
        eprintln!("power loss: NOT RUN (needs root, /dev/fuse and kcat)");
    }
    ok
}

/// The cut counts and seeds of a run: a fixed seed, then a random one.
fn points_and_random_seed() -> (usize, u64) {
    let points = std::env::var(POINTS_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(POINTS_DEFAULT);
    (points, seed_from_env())
}

fn run_seed(seed: u64, points: usize) {
    // Declared before the broker: dropped after it (the broker dies
    // first, then the mount goes).
    let disk = PowerDisk::mount(MOUNT_PREFIX);
    let mut broker = Broker::start(
        BrokerOpts::new()
            .data_dir(&disk.data)
            .setting("log.flush.interval.messages", 1)
            .setting("num.partitions", 1)
            // Small segments: rolls (new files) happen between cuts.
            .setting("log.segment.bytes", 16 * 1024)
            .setting(
                "replica.high.watermark.checkpoint.interval.ms",
                HW_CHECKPOINT_INTERVAL_MS,
            ),
    );
    assert!(kcat_produce(&broker.bootstrap(), TOPIC, 0, 1).success());
    let acks: Acks = Arc::default();
    acks.lock().expect("acks").insert(u64::MAX, 0);
    let mut rng = Rng(seed);
    let mut next = 0;
    let started = Instant::now();
    for point in 0..points {
        let stop = Arc::new(AtomicBool::new(false));
        let addr: SocketAddr = broker.bootstrap().parse().expect("an address");
        let producer = {
            let (acks, stop) = (Arc::clone(&acks), Arc::clone(&stop));
            std::thread::spawn(move || produce_until(addr, next, acks, stop))
        };
        std::thread::sleep(Duration::from_millis(50 + rng.next() % LOAD_MS_MAX));
        // The power goes: the broker dies mid-request, then the disk
        // forgets what was not synced.
        broker.kill9();
        stop.store(true, Ordering::Relaxed);
        next = producer.join().expect("the producer thread");
        let mode = rng.cut_mode();
        let report = disk.fs().power_cut(mode).expect("power cut");
        broker.restart();
        let mut expected = acks.lock().expect("acks").clone();
        // The first record came from kcat: value v0 at offset 0.
        expected.remove(&u64::MAX);
        let acknowledged_end = expected.values().max().map_or(1, |o| o + 1);
        let log = read_all(&broker, acknowledged_end);
        assert_eq!(
            log.first().map(|(_, v)| v.as_str()),
            Some("v0"),
            "seed {seed} point {point}: the first record"
        );
        check(&log, &expected, &format!("seed {seed} point {point}"));
        println!(
            "seed {seed} point {point} ({mode:?}): {} acknowledged, {} in the log; the cut undid \
             {} data and {} name changes",
            expected.len(),
            log.len(),
            report.data_undone,
            report.names_undone
        );
    }
    println!(
        "power loss, seed {seed}: {points} cuts, {} records acknowledged, none lost, in {:?}",
        acks.lock().expect("acks").len(),
        started.elapsed()
    );
    drop(broker);
    disk.unmount();
}

#[test]
fn acknowledged_records_survive_power_cuts() {
    if !can_run() {
        return;
    }
    let (points, random) = points_and_random_seed();
    println!("power loss: seeds {FIXED_SEED} then {random} (replay with {SEED_ENV}={random})");
    run_seed(FIXED_SEED, points);
    run_seed(random, points);
}

/// Bug 18 (tests/README.md): a segment whose last batch ends on a block
/// boundary leaves no direct-I/O padding to cut at its roll, and only the
/// padding cut was fdatasync'ed then. A power loss took such a segment's
/// records and kept those of the next one (whose unaligned roll was
/// synced): a hole in the offsets that recovery cannot see. Batches of
/// exactly 512 bytes fill the first 16 KiB segment to a block boundary,
/// 500-byte ones leave the second unaligned, one more starts a third; then
/// the power goes, and every record of the first two segments must be
/// there, densely from offset 0.
#[test]
fn a_roll_makes_the_segment_before_it_durable_when_it_ends_on_a_block_boundary() {
    if !can_run() {
        return;
    }
    const SEGMENT_BYTES: usize = 16 * 1024;
    const ALIGNED_BATCH: usize = 512;
    const UNALIGNED_BATCH: usize = 500;
    let disk = PowerDisk::mount(MOUNT_PREFIX);
    let (mut broker, mut stream) = broker_with_topic(
        &disk,
        BrokerOpts::new().setting("log.segment.bytes", SEGMENT_BYTES as i64),
    );
    let first = (SEGMENT_BYTES / ALIGNED_BATCH) as u64;
    let second = (SEGMENT_BYTES / UNALIGNED_BATCH) as u64;
    produce_in_order(&mut stream, 0..first, ALIGNED_BATCH);
    produce_in_order(&mut stream, first..first + second + 1, UNALIGNED_BATCH);
    let segments = std::fs::read_dir(disk.data.join(format!("{TOPIC}-0")))
        .expect("list the partition directory")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".log"))
        })
        .count();
    assert_eq!(
        segments, 3,
        "two rolls: the first segment ended on a block boundary"
    );
    broker.kill9();
    let report = disk.fs().power_cut(CutMode::DropAll).expect("power cut");
    broker.restart();
    let kept = first + second;
    let log = read_all(&broker, kept as i64);
    assert!(
        log.len() as u64 >= kept,
        "{} records after the power cut, expected at least the {kept} of the two rolled \
         segments (the cut undid {} data changes); offsets from {:?}",
        log.len(),
        report.data_undone,
        log.first().map(|(o, _)| *o)
    );
    for (i, (offset, value)) in log.iter().enumerate() {
        assert_eq!(*offset, i as i64, "offsets dense from 0");
        assert_eq!(
            value.trim_end_matches('.'),
            format!("p{i}"),
            "offset {offset}"
        );
    }
    drop(broker);
    disk.unmount();
}

/// `flush.ms` (here the broker's `log.flush.interval.ms`) makes records
/// durable that no later append flushes: the flush policy's timer
/// (src/shard/flush_policy.rs) finds the partition in its scan and syncs
/// what has waited `flush.ms`. Records appended just before the power goes
/// have not waited that long, so the cut takes them, which shows that the
/// cut really drops what was not synced.
#[test]
fn flush_ms_makes_records_durable_that_no_append_flushes() {
    if !can_run() {
        return;
    }
    const FLUSH_MS: u64 = 200;
    const RECORD_BYTES: usize = 100;
    let disk = PowerDisk::mount(MOUNT_PREFIX);
    let (mut broker, mut stream) = broker_with_topic(
        &disk,
        BrokerOpts::new().setting("log.flush.interval.ms", FLUSH_MS as i64),
    );
    produce_in_order(&mut stream, 0..3, RECORD_BYTES);
    // The timer's scan comes within FLUSH_POLICY_RESCAN, and it syncs the
    // records once they have waited FLUSH_MS.
    std::thread::sleep(FLUSH_POLICY_RESCAN + Duration::from_millis(FLUSH_MS) * 4);
    produce_in_order(&mut stream, 3..5, RECORD_BYTES);
    broker.kill9();
    let report = disk.fs().power_cut(CutMode::DropAll).expect("power cut");
    broker.restart();
    let log = read_all(&broker, 3);
    let offsets: Vec<i64> = log.iter().map(|(o, _)| *o).collect();
    assert_eq!(
        offsets,
        vec![0, 1, 2],
        "the three records flush.ms synced survive, the two after them do not (the cut \
         undid {} data changes)",
        report.data_undone
    );
    drop(broker);
    disk.unmount();
}

/// A broker on `disk` with `opts`, [`TOPIC`] created with one partition,
/// and a connection to it for [`produce_batch`].
fn broker_with_topic(disk: &PowerDisk, opts: BrokerOpts) -> (Broker, TcpStream) {
    let broker = Broker::start(opts.data_dir(&disk.data).setting("num.partitions", 1));
    let created = run_command(
        Command::new(support::PINLOG_BIN)
            .args(["topic", "create", TOPIC, "--partitions", "1"])
            .args(["--bootstrap-server", &broker.bootstrap()]),
        None,
        Duration::from_secs(60),
    );
    assert!(created.success(), "create {TOPIC}: {created}");
    let addr: SocketAddr = broker.bootstrap().parse().expect("an address");
    let stream =
        TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect to the broker");
    stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .expect("a read timeout");
    (broker, stream)
}

/// Produces records `numbers` of `len` bytes each, one batch each, and
/// checks that record n lands at offset n.
fn produce_in_order(stream: &mut TcpStream, numbers: std::ops::Range<u64>, len: usize) {
    for n in numbers {
        let offset = produce_batch(stream, n, record_batch_of_len(n, len))
            .unwrap_or_else(|e| panic!("produce record {n}: {e}"));
        assert_eq!(offset, n as i64, "record {n}'s offset");
    }
}

/// With `flush.messages=1` every byte is durable before a roll, so the
/// roll's flush has nothing to do; but the roll seals the old segment: the
/// time index gets its last entry and both indexes are cut from their
/// preallocated 10 MiB to what they use. That seal was not synced, so a
/// power loss brought the preallocated indexes back, recovery rebuilt them
/// at the next start (and, the rebuild not synced either, at every start
/// after: a long power-loss run rebuilt 20 to 30 segments per restart).
/// Now the roll syncs the seal: after a cut every rolled segment's indexes
/// have their used size, and the time index its entry.
#[test]
fn a_roll_under_flush_every_message_makes_the_sealed_indexes_durable() {
    if !can_run() {
        return;
    }
    const SEGMENT_BYTES: usize = 16 * 1024;
    const BATCH: usize = 500;
    /// Kafka's `segment.index.bytes` default: what a new index is
    /// preallocated to.
    const PREALLOCATED: u64 = 10 * 1024 * 1024;
    let disk = PowerDisk::mount(MOUNT_PREFIX);
    let (mut broker, mut stream) = broker_with_topic(
        &disk,
        BrokerOpts::new()
            .setting("log.flush.interval.messages", 1)
            .setting("log.segment.bytes", SEGMENT_BYTES as i64),
    );
    // Three segments: two rolled, one active.
    let records = (2 * SEGMENT_BYTES / BATCH + 1) as u64;
    produce_in_order(&mut stream, 0..records, BATCH);
    broker.kill9();
    disk.fs().power_cut(CutMode::DropAll).expect("power cut");
    let dir = disk.data.join(format!("{TOPIC}-0"));
    let mut bases: Vec<String> = std::fs::read_dir(&dir)
        .expect("list the partition directory")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".log").map(str::to_string)
        })
        .collect();
    bases.sort();
    assert!(bases.len() >= 3, "two rolls at least: {bases:?}");
    for base in &bases[..bases.len() - 1] {
        for (suffix, entry) in [("index", 8), ("timeindex", 12)] {
            let path = dir.join(format!("{base}.{suffix}"));
            let len = std::fs::metadata(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
                .len();
            assert!(
                len < PREALLOCATED && len >= entry && len % entry == 0,
                "{}: {len} bytes after the power cut (preallocated: {PREALLOCATED})",
                path.display()
            );
        }
    }
    broker.restart();
    let log = read_all(&broker, records as i64);
    assert_eq!(log.len() as u64, records, "every record after the cut");
    drop(broker);
    disk.unmount();
}

/// The partition directories of the data directory `data` (the metadata
/// quorum's included; those of deleted partitions not).
fn partition_dirs(data: &Path) -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir(data)
        .expect("list the data directory")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.rsplit_once('-')
                .is_some_and(|(_, n)| n.parse::<i32>().is_ok())
        })
        .collect();
    dirs.sort();
    dirs
}

/// Every checkpoint a power cut left must parse: each file is written to
/// a temporary name, synced and renamed, so a cut leaves the old or the
/// new version, whole. Returns how many files were checked.
fn check_checkpoints(data: &Path, point: &str) -> usize {
    let mut checked = 0;
    let mut parse = |path: &Path, decode: &dyn Fn(&[u8]) -> Result<(), String>| {
        if let Ok(bytes) = std::fs::read(path) {
            if let Err(e) = decode(&bytes) {
                panic!(
                    "{point}: {} does not parse after the cut: {e}",
                    path.display()
                );
            }
            checked += 1;
        }
    };
    let offsets = |bytes: &[u8]| {
        decode_offset_checkpoint(Path::new("checkpoint"), bytes)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    for name in [
        RECOVERY_POINT_CHECKPOINT_FILE,
        LOG_START_OFFSET_CHECKPOINT_FILE,
        REPLICATION_OFFSET_CHECKPOINT_FILE,
        CLEANER_OFFSET_CHECKPOINT_FILE,
        SHARD_PLACEMENT_FILE,
    ] {
        parse(&data.join(name), &offsets);
    }
    for dir in partition_dirs(data) {
        parse(&dir.join(LEADER_EPOCH_CHECKPOINT_FILE), &|bytes| {
            decode_epoch_checkpoint(Path::new("epochs"), bytes)
                .map(drop)
                .map_err(|e| e.to_string())
        });
        parse(&dir.join(PARTITION_METADATA_FILE), &|bytes| {
            partition_metadata::decode(&String::from_utf8_lossy(bytes)).map(drop)
        });
        parse(&dir.join(QUORUM_STATE_FILE), &|bytes| {
            serde_json::from_slice::<serde_json::Value>(bytes)
                .map(drop)
                .map_err(|e| e.to_string())
        });
        for entry in std::fs::read_dir(&dir).expect("list a partition directory") {
            let path = entry.expect("a directory entry").path();
            if path.extension().and_then(|e| e.to_str()) == Some(SNAPSHOT_FILE_SUFFIX) {
                parse(&path, &|bytes| decode_snapshot(bytes).map(drop));
            }
        }
    }
    checked
}

/// The default-flush checks of the log: offsets dense from 0, the first
/// record kcat's, each record at an offset below `kept` what it was after
/// the last restart, each acknowledged since then at its offset if it
/// survived, and the rest in the order sent. Returns how many acknowledged
/// records the cut took (allowed: nothing was flushed for them).
fn check_prefix(
    log: &[(i64, String)],
    kept: &[(i64, String)],
    acks: &BTreeMap<u64, i64>,
    point: &str,
) -> usize {
    for (i, (offset, _)) in log.iter().enumerate() {
        assert_eq!(*offset, i as i64, "{point}: offsets dense from 0");
    }
    assert_eq!(
        log.first().map(|(_, v)| v.as_str()),
        Some("v0"),
        "{point}: the first record"
    );
    let mut last = None;
    for (offset, value) in log.iter().skip(1) {
        let n: u64 = value
            .strip_prefix('p')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{point}: offset {offset} holds {value:?}, never sent"));
        assert!(
            last.is_none_or(|l| n > l),
            "{point}: p{n} at offset {offset} after p{last:?}"
        );
        last = Some(n);
        if let Some((_, before)) = kept.get(*offset as usize) {
            assert_eq!(value, before, "{point}: offset {offset} changed");
        }
    }
    let mut lost = 0;
    for (n, offset) in acks {
        match log.get(*offset as usize) {
            Some((_, v)) => assert_eq!(v, &format!("p{n}"), "{point}: offset {offset}"),
            None => lost += 1,
        }
    }
    lost
}

fn run_default_flush_seed(seed: u64, points: usize) {
    let disk = PowerDisk::mount(MOUNT_PREFIX);
    let data = disk.data.clone();
    let mut broker = Broker::start(
        BrokerOpts::new()
            .data_dir(&data)
            .setting("num.partitions", 1)
            .setting("log.segment.bytes", 16 * 1024)
            .setting(
                "replica.high.watermark.checkpoint.interval.ms",
                HW_CHECKPOINT_INTERVAL_MS,
            )
            .setting("log.cleaner.backoff.ms", CLEANER_BACKOFF_MS),
    );
    assert!(kcat_produce(&broker.bootstrap(), TOPIC, 0, 1).success());
    let created = run_command(
        Command::new(support::PINLOG_BIN)
            .args(["topic", "create", COMPACTED, "--partitions", "1"])
            .args(["--config", "cleanup.policy=compact"])
            .args(["--config", "segment.bytes=4096"])
            .args(["--config", "min.cleanable.dirty.ratio=0.01"])
            .args(["--bootstrap-server", &broker.bootstrap()]),
        None,
        Duration::from_secs(60),
    );
    assert!(created.success(), "create {COMPACTED}: {created}");
    let mut kept = read_all(&broker, 1);
    let mut rng = Rng(seed);
    let (mut next, mut acknowledged, mut lost, mut rebuilt, mut checkpoints) = (0, 0, 0, 0, 0);
    let started = Instant::now();
    for point in 0..points {
        let at = format!("default flush, seed {seed} point {point}");
        let rewritten = kcat_produce(&broker.bootstrap(), COMPACTED, 0, COMPACTED_KEYS);
        assert!(
            rewritten.success(),
            "{at}: produce to {COMPACTED}: {rewritten}"
        );
        let acks: Acks = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let addr: SocketAddr = broker.bootstrap().parse().expect("an address");
        let producer = {
            let (acks, stop) = (Arc::clone(&acks), Arc::clone(&stop));
            std::thread::spawn(move || produce_until(addr, next, acks, stop))
        };
        std::thread::sleep(Duration::from_millis(50 + rng.next() % LOAD_MS_MAX));
        broker.kill9();
        stop.store(true, Ordering::Relaxed);
        next = producer.join().expect("the producer thread");
        let mode = rng.cut_mode();
        disk.fs().power_cut(mode).expect("power cut");
        checkpoints += check_checkpoints(&data, &at);
        let log_before = broker.log().len();
        // A crash at start, or a refused index, fails here.
        broker.restart();
        rebuilt += broker
            .log()
            .get(log_before..)
            .unwrap_or("")
            .matches("recovered partition")
            .count();
        // What the clean stop before this point made durable must be back.
        let log = read_all(&broker, kept.len() as i64);
        let acks = acks.lock().expect("acks").clone();
        acknowledged += acks.len();
        let lost_now = check_prefix(&log, &kept, &acks, &at);
        lost += lost_now;
        // `pinlog log verify` on every partition, once the broker stopped.
        broker.stop();
        for dir in partition_dirs(&data) {
            let report = verify_partition_dir(&dir);
            assert!(report.is_ok(), "{at}: verify {}:\n{report}", dir.display());
        }
        broker.restart();
        println!(
            "{at} ({mode:?}): {} acknowledged, {lost_now} of them lost (unflushed), {} in the log",
            acks.len(),
            log.len()
        );
        kept = log;
    }
    let cleaned = std::fs::read_to_string(data.join(CLEANER_OFFSET_CHECKPOINT_FILE))
        .unwrap_or_default()
        .contains(COMPACTED);
    println!(
        "power loss under the default flush, seed {seed}: {points} cuts, {acknowledged} records \
         acknowledged, {lost} lost unflushed, {checkpoints} checkpoint files parsed, {rebuilt} \
         partition recoveries, cleaner offsets checkpointed: {cleaned}, in {:?}",
        started.elapsed()
    );
    drop(broker);
    disk.unmount();
}

/// In CI since 2026-12-05: the start that hung in 2 of 22 runs on
/// 2026-12-04 (tests/README.md, "Open: a restart on the power-loss mount
/// that hangs") did not come back in 60 runs, and a start that hangs now
/// says where (its stages every 10 s; the harness adds every thread's
/// stack).
#[test]
fn recovery_is_clean_after_power_cuts_under_the_default_flush() {
    if !can_run() {
        return;
    }
    let (points, random) = points_and_random_seed();
    println!(
        "power loss, default flush: seeds {FIXED_SEED} then {random} (replay with \
         {SEED_ENV}={random})"
    );
    run_default_flush_seed(FIXED_SEED, points);
    run_default_flush_seed(random, points);
}
