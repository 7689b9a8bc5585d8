//! A model-checked property test of the partition log, in the manner of
//! sled's failpoint tests: proptest generates random sequences of appends,
//! rolls, flushes, truncations, clean restarts and crashes, runs them against
//! a real `PartitionLog` on disk, and after every step compares the log with
//! a small in-memory reference model.
//!
//! The model is the list of batches the log must hold, each with its offsets,
//! leader epoch and exact stored bytes, plus the *durable end*: the offset
//! below which everything has been fdatasync'ed. Crashes damage only bytes at
//! or past the durable end, because that is all a real crash can damage:
//! recovery must then drop exactly the batches from the first damaged one on,
//! and never anything below the durable end.
//!
//! The number of cases defaults to 48 and follows `PROPTEST_CASES`.
//! `PINLOG_MODEL_TRACE=1` prints every step as it runs.

use std::fmt;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config as ProptestConfig;

use crate::common::run;
use pinlog::config::LogConfig;
use pinlog::error::LogError;
use pinlog::log::batch::{
    self, build_batch, BatchHeader, BatchIter, BatchSpec, CountRule, RecordSpec,
};
use pinlog::log::batch_cache::BatchCache;
use pinlog::log::epoch_cache::EpochEntry;
use pinlog::log::partition_log::{
    AppendInfo, AppendOrigin, LeaderAppend, OpenParams, PartitionLog,
};
use pinlog::log::read_through;
use pinlog::log::segment::segment_file_path;
use pinlog::topic_partition::TopicPartition;

/// Cases when `PROPTEST_CASES` does not say otherwise: enough to cover every
/// crash kind many times while the file stays well under a minute.
const DEFAULT_CASES: u32 = 48;

/// Steps per case, at most.
const STEPS_MAX: usize = 40;

/// `index.interval.bytes` for every case: small, so indexes get many entries
/// and fill up.
const INDEX_INTERVAL_BYTES: u64 = 512;

/// Capacity of the read cache when a case uses one: a few batches, so reads
/// are served from both the cache and the files, and fills evict.
const CACHE_BYTES: usize = 64 * 1024;

/// RecordBatch v2 fields outside the CRC: base offset (bytes 0..8) and
/// partition leader epoch (bytes 12..16). Kafka's format leaves them
/// unprotected so that the leader can assign them in place; a flip there
/// cannot be detected by anyone, so the flip crash kind moves such flips into
/// the CRC field instead (see `crash`).
const UNPROTECTED_FIELDS: [std::ops::Range<usize>; 2] = [0..8, 12..16];
const CRC_AT: usize = 17;

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

/// The shape of one producer batch.
#[derive(Debug, Clone)]
struct BatchShape {
    records: usize,
    value_len: usize,
}

/// How a crash damages the files before the log is reopened.
#[derive(Debug, Clone)]
enum CrashKind {
    /// The process dies; every byte it wrote is still in the files.
    Plain,
    /// The active segment's `.log` file loses everything from a position at
    /// or after its flushed size (a power loss that kept only a prefix of
    /// the unflushed tail).
    CutActive { at: Index },
    /// Bytes in the unflushed tail of the active segment (DMA padding
    /// included) come back as garbage: `(position, xor mask)`.
    FlipTail { flips: Vec<(Index, u8)> },
    /// Index files of one segment (`Some`) or of all segments go missing.
    DeleteIndexes {
        segment: Option<Index>,
        offset_index: bool,
        time_index: bool,
    },
}

#[derive(Debug, Clone)]
enum Op {
    /// One append call of several batches, by the leader (offsets and epoch
    /// assigned by the log) or by a follower (bytes already carry them). A
    /// `new_epoch` append is the first of a newly elected leader. A
    /// `grouped` leader append is a group commit with one request per batch.
    Append {
        batches: Vec<BatchShape>,
        new_epoch: bool,
        as_follower: bool,
        grouped: bool,
    },
    Roll,
    Flush,
    /// Truncate to an offset in `[log start, LEO]`.
    Truncate {
        to: Index,
    },
    /// `close()` and reopen with the clean-shutdown marker.
    CleanRestart,
    /// Drop without `close()`, damage the files, reopen without the marker.
    Crash(CrashKind),
}

/// A read issued after a step: from an offset in `[0, LEO)`, at most
/// `max_bytes`, below either the LEO or (with `bound`) a batch boundary, as a
/// consumer reading below the high watermark would.
#[derive(Debug, Clone)]
struct Probe {
    offset: Index,
    max_bytes: usize,
    bound: Option<Index>,
}

#[derive(Debug, Clone)]
struct Step {
    op: Op,
    probes: Vec<Probe>,
}

/// Log settings of one case.
#[derive(Debug, Clone)]
struct Setup {
    segment_bytes: u64,
    segment_index_bytes: u64,
    flush_messages: u64,
    cache: bool,
}

#[derive(Debug, Clone)]
struct Case {
    setup: Setup,
    steps: Vec<Step>,
}

fn batch_shape() -> impl Strategy<Value = BatchShape> {
    // Mostly small values, so that many batches share a segment and index
    // entries are dense; medium ones, whose batches are each about one
    // index interval long; and large ones that fill segments quickly.
    let value_len = prop_oneof![3 => 0usize..64, 1 => 100usize..200, 2 => 0usize..=3000];
    (1usize..=5, value_len).prop_map(|(records, value_len)| BatchShape { records, value_len })
}

fn crash_kind() -> impl Strategy<Value = CrashKind> {
    prop_oneof![
        Just(CrashKind::Plain),
        any::<Index>().prop_map(|at| CrashKind::CutActive { at }),
        prop::collection::vec((any::<Index>(), 1u8..=255), 1..=3)
            .prop_map(|flips| CrashKind::FlipTail { flips }),
        (
            prop::option::of(any::<Index>()),
            prop_oneof![Just((true, false)), Just((false, true)), Just((true, true))],
        )
            .prop_map(|(segment, (offset_index, time_index))| {
                CrashKind::DeleteIndexes {
                    segment,
                    offset_index,
                    time_index,
                }
            }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (
            prop::collection::vec(batch_shape(), 1..=3),
            prop::bool::weighted(0.15),
            prop::bool::weighted(0.25),
            prop::bool::weighted(0.4),
        )
            .prop_map(|(batches, new_epoch, as_follower, grouped)| Op::Append {
                batches,
                new_epoch,
                as_follower,
                grouped,
            }),
        1 => Just(Op::Roll),
        2 => Just(Op::Flush),
        1 => any::<Index>().prop_map(|to| Op::Truncate { to }),
        1 => Just(Op::CleanRestart),
        3 => crash_kind().prop_map(Op::Crash),
    ]
}

fn probe() -> impl Strategy<Value = Probe> {
    (
        any::<Index>(),
        prop_oneof![Just(1usize), 1usize..20_000, Just(1 << 20)],
        prop::option::of(any::<Index>()),
    )
        .prop_map(|(offset, max_bytes, bound)| Probe {
            offset,
            max_bytes,
            bound,
        })
}

fn step() -> impl Strategy<Value = Step> {
    (op(), prop::collection::vec(probe(), 1..=2)).prop_map(|(op, probes)| Step { op, probes })
}

fn case() -> impl Strategy<Value = Case> {
    let setup = (
        prop::sample::select(vec![16 * 1024u64, 32 * 1024, 64 * 1024]),
        prop::sample::select(vec![1024u64, 2048, 4096]),
        prop::sample::select(vec![u64::MAX, 8, 25]),
        any::<bool>(),
    )
        .prop_map(
            |(segment_bytes, segment_index_bytes, flush_messages, cache)| Setup {
                segment_bytes,
                segment_index_bytes,
                flush_messages,
                cache,
            },
        );
    (setup, prop::collection::vec(step(), 1..=STEPS_MAX))
        .prop_map(|(setup, steps)| Case { setup, steps })
}

// ---------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------

/// One batch the log must hold, with the exact bytes it must store.
#[derive(Clone)]
struct ModelBatch {
    base: i64,
    last: i64,
    epoch: i32,
    bytes: Vec<u8>,
}

impl fmt::Debug for ModelBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}..={} e{} {}B]",
            self.base,
            self.last,
            self.epoch,
            self.bytes.len()
        )
    }
}

#[derive(Debug, Default)]
struct Model {
    batches: Vec<ModelBatch>,
    /// Everything below this offset has been fdatasync'ed: a crash may not
    /// touch it.
    durable_end: i64,
    /// Records appended since the last flush, which `flush.messages` counts.
    unflushed_records: u64,
    /// The leader epoch of the next append.
    epoch: i32,
    /// Distinguishes the payload of every batch ever built.
    next_seq: u64,
}

impl Model {
    fn leo(&self) -> i64 {
        self.batches.last().map_or(0, |b| b.last + 1)
    }

    /// Index of the batch holding `offset`, or `batches.len()` past the end.
    fn batch_index_of(&self, offset: i64) -> usize {
        self.batches.partition_point(|b| b.last < offset)
    }

    /// Kafka's truncation: the batch holding `offset` goes whole.
    fn truncate_to(&mut self, offset: i64) {
        let keep = self.batch_index_of(offset);
        self.batches.truncate(keep);
        self.durable_end = self.durable_end.min(self.leo());
    }

    fn flushed(&mut self) {
        self.durable_end = self.leo();
        self.unflushed_records = 0;
    }

    /// A roll (asked for, or a full segment's) flushes every segment
    /// before the new active one, as Kafka's flush up to its base offset.
    fn rolled_to(&mut self, active_base: i64) {
        self.durable_end = self.durable_end.max(active_base);
    }

    /// The epoch cache the batches imply: each epoch starts at its first
    /// batch. Epochs in the model only grow, so this is exactly what the
    /// log's cache must hold.
    fn epoch_entries(&self) -> Vec<EpochEntry> {
        let mut entries: Vec<EpochEntry> = Vec::new();
        for b in &self.batches {
            if entries.last().is_none_or(|e| e.epoch != b.epoch) {
                entries.push(EpochEntry {
                    epoch: b.epoch,
                    start_offset: b.base,
                });
            }
        }
        entries
    }
}

/// Record values that differ from batch to batch and record to record, so a
/// misplaced byte range can never compare equal by accident.
fn value_bytes(seq: u64, record: usize, len: usize) -> Vec<u8> {
    let mut x = seq
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(record as u64 + 1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A producer batch (offset 0, no epoch) with distinct payload `seq`.
fn producer_batch(seq: u64, shape: &BatchShape) -> Vec<u8> {
    let key = seq.to_be_bytes();
    let values: Vec<Vec<u8>> = (0..shape.records)
        .map(|i| value_bytes(seq, i, shape.value_len))
        .collect();
    let records: Vec<RecordSpec<'_>> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (i as i64, Some(&key[..]), &v[..]))
        .collect();
    build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: 1_000_000 + seq as i64 * 10,
        records: &records,
    })
}

// ---------------------------------------------------------------------------
// Running a case
// ---------------------------------------------------------------------------

struct Harness {
    data_dir: PathBuf,
    tp: TopicPartition,
    config: LogConfig,
    cache: bool,
    now_ms: i64,
    trace: bool,
}

impl Harness {
    async fn open(&self, recovery_point: i64, clean_shutdown: bool) -> PartitionLog {
        // A restart starts with an empty cache, as a new process would.
        let cache = self.cache.then(|| BatchCache::shared(CACHE_BYTES));
        PartitionLog::open(
            &self.data_dir,
            self.tp.clone(),
            self.config.clone(),
            OpenParams {
                recovery_point,
                log_start_offset: 0,
                clean_shutdown,
                now_ms: self.now_ms,
            },
            cache,
        )
        .await
        .unwrap_or_else(|e| panic!("open (clean={clean_shutdown}, rp={recovery_point}): {e}"))
    }
}

async fn run_case(data_dir: PathBuf, case: Case) {
    let setup = &case.setup;
    let mut h = Harness {
        data_dir,
        tp: TopicPartition::new("model", 0),
        config: LogConfig {
            segment_bytes: setup.segment_bytes,
            segment_index_bytes: setup.segment_index_bytes,
            index_interval_bytes: INDEX_INTERVAL_BYTES,
            flush_messages: setup.flush_messages,
            ..LogConfig::default()
        },
        cache: setup.cache,
        now_ms: 1_000_000,
        trace: std::env::var_os("PINLOG_MODEL_TRACE").is_some(),
    };
    if h.trace {
        eprintln!("--- case {setup:?}");
    }
    let mut model = Model::default();
    let mut log = h.open(0, false).await;
    check(&mut log, &model, &[], "open of an empty directory").await;
    for (i, step) in case.steps.iter().enumerate() {
        h.now_ms += 10;
        let ctx = format!("step {i}: {:?}", step.op);
        if h.trace {
            eprintln!(
                "{ctx} (model LEO {}, durable {})",
                model.leo(),
                model.durable_end
            );
        }
        log = apply(&h, log, &mut model, &step.op, &ctx).await;
        check(&mut log, &model, &step.probes, &ctx).await;
    }
    log.close().await.expect("final close");
}

/// The base offset of the log's active segment.
fn active_base(log: &PartitionLog) -> i64 {
    *log.segment_base_offsets()
        .last()
        .expect("a log has an active segment")
}

async fn apply(
    h: &Harness,
    mut log: PartitionLog,
    model: &mut Model,
    op: &Op,
    ctx: &str,
) -> PartitionLog {
    match op {
        Op::Append {
            batches,
            new_epoch,
            as_follower,
            grouped,
        } => {
            if *new_epoch {
                model.epoch += 1;
            }
            let first = model.leo();
            let mut next = first;
            let mut producer = BytesMut::new();
            let mut requests = Vec::new();
            let mut stored = Vec::new();
            let mut records = 0u64;
            for shape in batches {
                let seq = model.next_seq;
                model.next_seq += 1;
                let bytes = producer_batch(seq, shape);
                producer.extend_from_slice(&bytes);
                requests.push(LeaderAppend {
                    batches: BytesMut::from(&bytes[..]).into(),
                    log_append_time_ms: None,
                    origin: AppendOrigin::Client,
                    verification: Default::default(),
                });
                // What the log must store: the producer's bytes with the
                // offset and epoch patched in, nothing else changed.
                let mut patched = bytes;
                batch::set_base_offset(&mut patched, next);
                batch::set_partition_leader_epoch(&mut patched, model.epoch);
                let header = batch::validate(&patched, CountRule::Exact).expect("built batch");
                stored.push(ModelBatch {
                    base: next,
                    last: header.last_offset(),
                    epoch: model.epoch,
                    bytes: patched,
                });
                next = header.next_offset();
                records += shape.records as u64;
            }
            let info = if *as_follower {
                let fetched: Vec<u8> = stored.iter().flat_map(|b| b.bytes.clone()).collect();
                log.append_as_follower(Bytes::from(fetched), h.now_ms).await
            } else if *grouped {
                let results = log
                    .append_many_as_leader(requests, model.epoch, h.now_ms)
                    .await;
                let mut infos = Vec::new();
                for (r, b) in results.into_iter().zip(&stored) {
                    let info = r.unwrap_or_else(|e| panic!("{ctx}: grouped append failed: {e}"));
                    assert_eq!(
                        (info.first_offset, info.last_offset, info.batch_count),
                        (b.base, b.last, 1),
                        "{ctx}: grouped append info"
                    );
                    infos.push(info);
                }
                Ok(AppendInfo {
                    first_offset: infos[0].first_offset,
                    last_offset: infos[infos.len() - 1].last_offset,
                    batch_count: infos.len(),
                    ..infos[0]
                })
            } else {
                log.append_as_leader(producer, model.epoch, None, h.now_ms)
                    .await
            }
            .unwrap_or_else(|e| panic!("{ctx}: append failed: {e}"));
            assert_eq!(
                (info.first_offset, info.last_offset, info.batch_count),
                (first, next - 1, stored.len()),
                "{ctx}: append info"
            );
            model.batches.extend(stored);
            // `flush.messages` flushes once enough records are unflushed.
            model.unflushed_records += records;
            if model.unflushed_records >= h.config.flush_messages {
                model.flushed();
            }
            model.rolled_to(active_base(&log));
        }
        Op::Roll => {
            let leo = log.log_end_offset();
            log.roll(leo, h.now_ms)
                .await
                .unwrap_or_else(|e| panic!("{ctx}: roll failed: {e}"));
            model.rolled_to(active_base(&log));
        }
        Op::Flush => {
            log.flush()
                .await
                .unwrap_or_else(|e| panic!("{ctx}: flush failed: {e}"));
            model.flushed();
            assert_eq!(
                log.recovery_point(),
                model.leo(),
                "{ctx}: a flush makes everything durable"
            );
        }
        Op::Truncate { to } => {
            let to = to.index(model.leo() as usize + 1) as i64;
            let removed = log
                .truncate_to(to, h.now_ms)
                .await
                .unwrap_or_else(|e| panic!("{ctx}: truncate_to({to}) failed: {e}"));
            assert_eq!(removed, to < model.leo(), "{ctx}: truncate_to({to}) result");
            model.truncate_to(to);
        }
        Op::CleanRestart => {
            // `close` flushes, so the recovery point a broker would
            // checkpoint at shutdown is the LEO.
            let recovery_point = log.log_end_offset();
            log.close()
                .await
                .unwrap_or_else(|e| panic!("{ctx}: close failed: {e}"));
            log = h.open(recovery_point, true).await;
            model.flushed();
            let report = log.recovery_report().clone();
            assert_eq!(
                report.segments_recovered, 0,
                "{ctx}: a clean shutdown must not need recovery: {report:?}"
            );
        }
        Op::Crash(kind) => {
            log = crash(h, log, model, kind, ctx).await;
        }
    }
    log
}

/// Drops the log without closing it, damages the files as `kind` says, and
/// reopens it as after an unclean shutdown, with the durable end as the
/// recovery point. Updates the model to what recovery must keep.
async fn crash(
    h: &Harness,
    log: PartitionLog,
    model: &mut Model,
    kind: &CrashKind,
    ctx: &str,
) -> PartitionLog {
    let dir = log.dir().to_path_buf();
    let bases = log.segment_base_offsets();
    let active_base = *bases.last().expect("a log has an active segment");
    drop(log);

    let active_path = segment_file_path(&dir, active_base, "log");
    let mut file_bytes = std::fs::read(&active_path).expect("read active segment");
    let file_len = file_bytes.len();
    let scanned: Vec<(usize, BatchHeader)> = BatchIter::new(&file_bytes, CountRule::Compacted)
        .map_while(Result::ok)
        .collect();
    // The active file must hold exactly the model's batches from its base on:
    // everything else below depends on it.
    let in_model: Vec<&ModelBatch> = model
        .batches
        .iter()
        .filter(|b| b.base >= active_base)
        .collect();
    assert_eq!(
        scanned.len(),
        in_model.len(),
        "{ctx}: batches in the active segment file before the crash"
    );
    for ((position, header), expected) in scanned.iter().zip(&in_model) {
        assert_eq!(
            &file_bytes[*position..position + header.size_bytes()],
            &expected.bytes[..],
            "{ctx}: bytes of batch {} in the active segment file",
            expected.base
        );
    }
    let logical_end = scanned
        .last()
        .map_or(0, |(position, header)| position + header.size_bytes());
    // Bytes before the first batch at or past the durable end were
    // fdatasync'ed; a crash cannot touch them.
    let flushed_position = scanned
        .iter()
        .find(|(_, header)| header.base_offset >= model.durable_end)
        .map_or(logical_end, |(position, _)| *position);
    assert!(flushed_position <= file_len);

    // The first byte position the damage reaches, if any.
    let damaged_from: Option<usize> = match kind {
        CrashKind::Plain => None,
        CrashKind::CutActive { at } => {
            let cut = flushed_position + at.index(file_len - flushed_position + 1);
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&active_path)
                .expect("open active segment for the cut");
            file.set_len(cut as u64).expect("cut the active segment");
            Some(cut)
        }
        CrashKind::FlipTail { flips } => {
            if file_len == flushed_position {
                None
            } else {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&active_path)
                    .expect("open active segment for the flips");
                let mut first: Option<usize> = None;
                for (at, mask) in flips {
                    let mut position = flushed_position + at.index(file_len - flushed_position);
                    if let Some((start, _)) = scanned
                        .iter()
                        .find(|(p, hd)| *p <= position && position < p + hd.size_bytes())
                    {
                        let relative = position - start;
                        if UNPROTECTED_FIELDS.iter().any(|f| f.contains(&relative)) {
                            position = start + CRC_AT + relative % 4;
                        }
                    }
                    file_bytes[position] ^= mask;
                    file.write_all_at(&file_bytes[position..position + 1], position as u64)
                        .expect("flip a byte");
                    first = Some(first.map_or(position, |f| f.min(position)));
                }
                first
            }
        }
        CrashKind::DeleteIndexes {
            segment,
            offset_index,
            time_index,
        } => {
            let victims: Vec<i64> = match segment {
                Some(i) => vec![bases[i.index(bases.len())]],
                None => bases.clone(),
            };
            for base in victims {
                for (wanted, suffix) in [(*offset_index, "index"), (*time_index, "timeindex")] {
                    let path = segment_file_path(&dir, base, suffix);
                    if wanted && path.exists() {
                        std::fs::remove_file(&path).expect("delete index file");
                    }
                }
            }
            None
        }
    };

    // Recovery keeps every batch before the first damaged one, and nothing
    // from it on: a batch that lost a byte or was cut short fails its CRC or
    // its length check, and what follows it no longer continues the log.
    let first_lost: Option<i64> = damaged_from.and_then(|position| {
        scanned
            .iter()
            .find(|(p, hd)| p + hd.size_bytes() > position)
            .map(|(_, hd)| hd.base_offset)
    });
    let recovery_point = model.durable_end;
    if let Some(offset) = first_lost {
        assert!(
            offset >= model.durable_end,
            "test harness damaged durable data: batch {offset} below {}",
            model.durable_end
        );
        model.truncate_to(offset);
    }
    model.unflushed_records = 0;
    if h.trace {
        eprintln!(
            "    crash: active {active_base} flushed@{flushed_position} logical_end {logical_end} \
             file_len {file_len} damaged_from {damaged_from:?} first_lost {first_lost:?}"
        );
    }
    let log = h.open(recovery_point, false).await;
    let report = log.recovery_report().clone();
    assert_eq!(
        report.segments_deleted, 0,
        "{ctx}: damage was confined to the last segment: {report:?}"
    );
    log
}

// ---------------------------------------------------------------------------
// Checks after every step
// ---------------------------------------------------------------------------

/// `(base, last, size)` of every batch in `bytes`, which must decode whole.
fn decode(bytes: &[u8], what: &str) -> Vec<(i64, i64, usize)> {
    BatchIter::new(bytes, CountRule::Compacted)
        .map(|r| {
            let (_, h) = r.unwrap_or_else(|(p, e)| panic!("{what}: bad batch at byte {p}: {e}"));
            (h.base_offset, h.last_offset(), h.size_bytes())
        })
        .collect()
}

async fn check(log: &mut PartitionLog, model: &Model, probes: &[Probe], ctx: &str) {
    let leo = model.leo();
    assert_eq!(log.log_end_offset(), leo, "{ctx}: LEO; model {model:?}");
    assert_eq!(log.log_start_offset(), 0, "{ctx}: log start offset");
    assert!(log.high_watermark() <= leo, "{ctx}: HW past the LEO");
    // The log may be more cautious than the model but must never claim that
    // unsynced bytes are durable: a broker checkpoints this value, and the
    // next recovery skips every segment below it.
    assert!(
        log.recovery_point() <= model.durable_end,
        "{ctx}: recovery point {} claims more than the {} offsets fdatasync'ed",
        log.recovery_point(),
        model.durable_end
    );

    // The whole log: dense, increasing, byte for byte the model's batches.
    let all = log
        .read_all()
        .await
        .unwrap_or_else(|e| panic!("{ctx}: read_all: {e}"));
    let got = decode(&all, &format!("{ctx}: read_all"));
    let expected: Vec<(i64, i64, usize)> = model
        .batches
        .iter()
        .map(|b| (b.base, b.last, b.bytes.len()))
        .collect();
    assert_eq!(got, expected, "{ctx}: batches in the log");
    let mut next = 0;
    for (base, last, _) in &got {
        assert_eq!(*base, next, "{ctx}: offsets must be dense");
        assert!(last >= base);
        next = last + 1;
    }
    let mut at = 0;
    for b in &model.batches {
        assert!(
            all[at..at + b.bytes.len()] == b.bytes[..],
            "{ctx}: stored bytes of batch {} differ from what was appended",
            b.base
        );
        at += b.bytes.len();
    }

    assert_eq!(
        log.epoch_cache().entries(),
        &model.epoch_entries()[..],
        "{ctx}: leader epoch cache"
    );

    // Reads from random offsets start with the batch holding that offset and
    // continue with the batches after it, never past the bound.
    if leo > 0 {
        for probe in probes {
            let offset = probe.offset.index(leo as usize) as i64;
            let first = model.batch_index_of(offset);
            let bound_index = match &probe.bound {
                // A batch boundary past the first batch, as a high watermark is.
                Some(i) => first + 1 + i.index(model.batches.len() - first),
                None => model.batches.len(),
            };
            let max_offset = model.batches.get(bound_index).map_or(leo, |b| b.base);
            let read = log
                .read(offset, probe.max_bytes, max_offset, true)
                .await
                .unwrap_or_else(|e| panic!("{ctx}: read({offset}): {e}"));
            let from_cache = read.from_cache;
            // As the fetch path reads: a miss is read through the cache, so
            // later probes and steps are served from what it filled.
            let bytes = read_through::into_memory(read)
                .await
                .unwrap_or_else(|e| panic!("{ctx}: read({offset}) bytes: {e}"))
                .concat();
            let allowed: Vec<u8> = model.batches[first..bound_index]
                .iter()
                .flat_map(|b| b.bytes.iter().copied())
                .collect();
            let first_len = model.batches[first].bytes.len();
            let what = format!(
                "{ctx}: read({offset}, max_bytes {}, max_offset {max_offset}) from cache {}",
                probe.max_bytes, from_cache
            );
            assert!(
                bytes.len() >= first_len,
                "{what}: got {} bytes, less than the whole first batch ({first_len})",
                bytes.len()
            );
            assert!(
                bytes.len() <= allowed.len(),
                "{what}: got {} bytes, past the bound ({})",
                bytes.len(),
                allowed.len()
            );
            assert!(
                bytes.len() <= probe.max_bytes.max(first_len),
                "{what}: got {} bytes, more than max_bytes",
                bytes.len()
            );
            assert!(
                bytes[..] == allowed[..bytes.len()],
                "{what}: bytes differ from the model's batches from {}",
                model.batches[first].base
            );
        }
    }
    // At the LEO a read is empty; past it, out of range.
    let at_end = log
        .read(leo, 1 << 20, leo, true)
        .await
        .unwrap_or_else(|e| panic!("{ctx}: read at the LEO: {e}"));
    assert_eq!(at_end.len_bytes(), 0, "{ctx}: read at the LEO");
    assert!(
        matches!(
            log.read(leo + 1, 1 << 20, leo + 1, true).await,
            Err(LogError::OffsetOutOfRange { .. })
        ),
        "{ctx}: read past the LEO must be out of range"
    );
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

fn run_in_tempdir(case: Case) {
    // A real disk, not tmpfs: the log uses O_DIRECT.
    let dir = tempfile::tempdir().expect("tempdir");
    let path: PathBuf = dir.path().to_path_buf();
    run(move || async move { run_case(path, case).await });
    drop(dir);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // Regression files would land next to this file, which other people
        // own; a failing case is printed in full instead.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn partition_log_matches_the_model(case in case()) {
        run_in_tempdir(case);
    }
}

// ---------------------------------------------------------------------------
// Deterministic regressions for what the model found
// ---------------------------------------------------------------------------

fn regression_config(segment_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        segment_index_bytes: 1024,
        index_interval_bytes: INDEX_INTERVAL_BYTES,
        ..LogConfig::default()
    }
}

async fn open_regression_log(
    data_dir: &std::path::Path,
    config: LogConfig,
    recovery_point: i64,
    clean_shutdown: bool,
) -> PartitionLog {
    PartitionLog::open(
        data_dir,
        TopicPartition::new("regression", 0),
        config,
        OpenParams {
            recovery_point,
            log_start_offset: 0,
            clean_shutdown,
            now_ms: 0,
        },
        None,
    )
    .await
    .expect("open")
}

/// Producer batches of one record each, `value_len` bytes apiece.
fn producer_batches(count: usize, value_len: usize, seq: u64) -> BytesMut {
    let mut out = BytesMut::new();
    for i in 0..count {
        out.extend_from_slice(&producer_batch(
            seq * 16 + i as u64,
            &BatchShape {
                records: 1,
                value_len,
            },
        ));
    }
    out
}

/// After a crash only what was fdatasync'ed is durable, whatever recovery
/// found in the files: the recovery point must stay at the last flush, as
/// Kafka's `LogLoader.recoverLog` keeps it (`min(recoveryPointCheckpoint,
/// logEndOffset)`). Claiming the LEO would let the next checkpoint skip
/// recovery of bytes that were never synced, and `flush()` starts at the
/// recovery point's segment, so those bytes would never be synced either.
#[test]
fn unclean_open_keeps_the_recovery_point_at_the_last_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open_regression_log(&path, regression_config(1 << 20), 0, false).await;
        log.append_as_leader(producer_batches(1, 10, 0), 0, None, 0)
            .await
            .unwrap();
        log.flush().await.unwrap();
        log.append_as_leader(producer_batches(1, 10, 1), 0, None, 0)
            .await
            .unwrap();
        assert_eq!(log.recovery_point(), 1);
        drop(log);
        let log = open_regression_log(&path, regression_config(1 << 20), 1, false).await;
        assert_eq!(
            log.log_end_offset(),
            2,
            "the unsynced batch survived the crash"
        );
        assert_eq!(
            log.recovery_point(),
            1,
            "offset 1 was never fdatasync'ed, so it is not recovered-and-durable"
        );
    });
}

/// Kafka's `LogSegment.truncateTo` resizes both indexes back to
/// `segment.index.bytes`, because a truncation can make a rolled segment,
/// whose indexes were trimmed to their entries, the active one again.
/// Without that the next append that needs an index entry finds the index
/// full, and the I/O error takes the partition offline.
#[test]
fn truncating_into_a_rolled_segment_leaves_room_in_its_indexes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open_regression_log(&path, regression_config(1 << 20), 0, false).await;
        log.append_as_leader(producer_batches(1, 600, 0), 0, None, 0)
            .await
            .unwrap();
        log.roll(1, 0).await.unwrap();
        log.append_as_leader(producer_batches(1, 600, 1), 0, None, 0)
            .await
            .unwrap();
        // Back into segment 0, whose indexes were trimmed at the roll.
        log.truncate_to(0, 0).await.unwrap();
        let appended = log
            .append_as_leader(producer_batches(2, 600, 2), 0, None, 0)
            .await;
        assert!(
            appended.is_ok(),
            "append after truncation: {:?}",
            appended.err()
        );
        assert!(!log.is_offline());
        assert_eq!(log.log_end_offset(), 2);
    });
}

/// Kafka's `LogSegment.append` adds at most one index entry per append, so
/// checking `isFull` before the append is enough. pinlog indexes every batch
/// of a multi-batch append (and a follower appends many batches at once), so
/// an append can need more free slots than the roll check guaranteed.
#[test]
fn one_append_of_many_batches_never_overflows_the_indexes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        // A 1 KiB time index has 85 slots; with one entry per 700-byte batch
        // it fills long before the 1 MiB segment does.
        let mut log = open_regression_log(&path, regression_config(1 << 20), 0, false).await;
        for i in 0..60 {
            let appended = log
                .append_as_leader(producer_batches(3, 700, i), 0, None, 0)
                .await;
            assert!(
                appended.is_ok(),
                "append {i} at LEO {}: {:?}",
                log.log_end_offset(),
                appended.err()
            );
        }
        assert_eq!(log.log_end_offset(), 180);
        assert!(log.segment_count() > 1, "the full index rolled the segment");
    });
}
