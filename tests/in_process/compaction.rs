//! Log compaction (`cleanup.policy=compact`) against real files: what a
//! clean keeps, tombstones and their delete horizon, the active segment,
//! offsets, reopening, crashes at every step of the segment swap, races
//! with retention, and a property test against an in-memory model.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::common::run;
use bytes::BytesMut;
use glommio::sync::RwLock;
use pinlog::config::{CleanupPolicy, LogConfig};
use pinlog::log::batch::{self, build_keyed_batch, BatchIter, CountRule, KeyedRecordSpec};
use pinlog::log::cleaner::{self, CleanOutcome, CleanStats, CleanerOptions};
use pinlog::log::compression;
use pinlog::log::control_batch::MarkerSpec;
use pinlog::log::partition_log::{OpenParams, PartitionLog, SwapFailpoint};
use pinlog::topic_partition::TopicPartition;
use pinlog::transaction::marker::{MarkerKind, TxnMarker};
use proptest::prelude::*;

const T0: i64 = 1_700_000_000_000;
const DELETE_RETENTION_MS: i64 = 1_000;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 2048,
        index_interval_bytes: 256,
        segment_index_bytes: 4096,
        cleanup_policy: CleanupPolicy::COMPACT,
        delete_retention_ms: DELETE_RETENTION_MS,
        ..LogConfig::default()
    }
}

fn options(failpoint: Option<SwapFailpoint>) -> CleanerOptions {
    CleanerOptions {
        dedupe_buffer_bytes: 1 << 20,
        io_buffer_bytes: 4096,
        failpoint,
    }
}

fn tp() -> TopicPartition {
    TopicPartition::new("compacted", 0)
}

async fn open(dir: &Path, clean_shutdown: bool, now_ms: i64) -> PartitionLog {
    let params = OpenParams {
        recovery_point: 0,
        log_start_offset: 0,
        clean_shutdown,
        now_ms,
    };
    let mut log = PartitionLog::open(dir, tp(), config(), params, None)
        .await
        .unwrap();
    let leo = log.log_end_offset();
    log.set_high_watermark(leo);
    log
}

/// One record as read back: (offset, key, value; `None` is a tombstone).
type Rec = (i64, String, Option<String>);

async fn append(log: &mut PartitionLog, records: &[(String, Option<String>)], now_ms: i64) {
    let specs: Vec<KeyedRecordSpec> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| {
            (
                i as i64,
                Some(k.as_bytes()),
                v.as_deref().map(str::as_bytes),
            )
        })
        .collect();
    let b = build_keyed_batch(0, -1, now_ms, &specs);
    log.append_as_leader(BytesMut::from(&b[..]), 0, None, now_ms)
        .await
        .unwrap();
    let leo = log.log_end_offset();
    log.set_high_watermark(leo);
}

fn decode(bytes: &[u8]) -> Vec<Rec> {
    let mut out = Vec::new();
    for item in BatchIter::new(bytes, CountRule::Compacted) {
        let (at, h) = item.expect("valid batch");
        let body =
            compression::decompress_records(h.compression(), &bytes[at + 61..at + h.size_bytes()])
                .unwrap();
        for r in batch::records_of_body(&body, h.record_count) {
            let r = r.unwrap();
            let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
            out.push((
                h.base_offset + r.offset_delta,
                s(r.key.unwrap()),
                r.value.map(s),
            ));
        }
    }
    out
}

async fn read(log: &mut PartitionLog) -> Vec<Rec> {
    decode(&log.read_all().await.unwrap())
}

async fn clean(
    log: PartitionLog,
    now_ms: i64,
    failpoint: Option<SwapFailpoint>,
) -> (PartitionLog, Result<CleanOutcome, String>) {
    let lock = RwLock::new(log);
    let r = cleaner::clean_log(&lock, &options(failpoint), now_ms, &|| false).await;
    let log = lock.into_inner().unwrap_or_else(|_| panic!("lock"));
    (log, r.map_err(|e| e.to_string()))
}

fn stats(outcome: Result<CleanOutcome, String>) -> CleanStats {
    match outcome {
        Ok(CleanOutcome::Cleaned(s)) => s,
        other => panic!("expected a clean, got {other:?}"),
    }
}

/// Latest record per key among `records`.
fn latest(records: &[Rec]) -> BTreeMap<String, Rec> {
    let mut m = BTreeMap::new();
    for r in records {
        m.insert(r.1.clone(), r.clone());
    }
    m
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap") || n.ends_with(".deleted"))
        .collect()
}

fn assert_verified(dir: &Path) {
    let report = pinlog::tools::verify::verify_partition_dir(dir);
    let errors: Vec<String> = report.errors().map(|p| format!("{p:?}")).collect();
    assert!(report.is_ok(), "log verify found problems: {errors:#?}");
}

fn kv(key: usize, value: Option<String>) -> (String, Option<String>) {
    (format!("key-{key:02}"), value)
}

/// Writes `rounds` rounds over `keys` keys (a batch of 5 records each),
/// deleting every fifth key in the last round, then rolls so everything
/// but an empty active segment is cleanable.
async fn fill(log: &mut PartitionLog, keys: usize, rounds: usize) -> Vec<Rec> {
    let mut written = Vec::new();
    let mut batch = Vec::new();
    for round in 0..rounds {
        for k in 0..keys {
            let value = if round + 1 == rounds && k % 5 == 0 {
                None
            } else {
                Some(format!("value-{k}-{round}-{}", "x".repeat(k % 7)))
            };
            batch.push(kv(k, value));
            if batch.len() == 5 {
                let first = log.log_end_offset();
                append(log, &batch, T0).await;
                for (i, (key, v)) in batch.drain(..).enumerate() {
                    written.push((first + i as i64, key, v));
                }
            }
        }
    }
    let leo = log.log_end_offset();
    log.roll(leo, T0).await.unwrap();
    written
}

#[test]
fn cleaning_keeps_the_latest_record_of_each_key_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, false, T0).await;
        let written = fill(&mut log, 20, 6).await;
        let segments_before = log.segment_count();
        let size_before = log.size_bytes();
        assert!(
            segments_before > 3,
            "small segments roll: {segments_before}"
        );
        let (log, outcome) = clean(log, T0 + 10, None).await;
        assert!(log.size_bytes() < size_before);
        stats(outcome);
        // The next clean merges the shrunken segments into fewer ones.
        let (mut log, outcome) = clean(log, T0 + 10, None).await;
        let s = stats(outcome);
        assert!(s.segments_out < s.segments_in, "{s:?}");
        let after = read(&mut log).await;
        let want = latest(&written);
        // Exactly one record per key, the latest (tombstones stay for now).
        assert_eq!(latest(&after), want);
        assert_eq!(after.len(), want.len(), "{after:#?}");
        // Offsets strictly increase and are the ones they were written at.
        assert!(after.windows(2).all(|w| w[0].0 < w[1].0));
        let written_at: HashMap<i64, &Rec> = written.iter().map(|r| (r.0, r)).collect();
        assert!(after.iter().all(|r| written_at.get(&r.0) == Some(&r)));
        assert!(log.segment_count() < segments_before);
        assert_eq!(log.cleaner_checkpoint(), Some(written.len() as i64));
        assert_eq!(log.log_end_offset(), written.len() as i64);
        // Both reopen paths see the same log, and Kafka-sane indexes.
        log.close().await.unwrap();
        assert!(leftovers(&path.join(tp().dir_name())).is_empty());
        assert_verified(&path.join(tp().dir_name()));
        for clean_shutdown in [true, false] {
            let mut log = open(&path, clean_shutdown, T0 + 20).await;
            assert_eq!(read(&mut log).await, after);
            let r = log
                .read(0, 1 << 20, log.log_end_offset(), true)
                .await
                .unwrap();
            assert_eq!(decode(&r.to_vec().await.unwrap())[0], after[0]);
            log.close().await.unwrap();
        }
    });
}

#[test]
fn the_active_segment_and_the_dirty_tail_past_the_hw_are_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, false, T0).await;
        let written = fill(&mut log, 10, 4).await;
        // Overwrites in the active segment stay as written.
        let tail: Vec<_> = (0..5).map(|k| kv(k, Some(format!("tail-{k}")))).collect();
        append(&mut log, &tail, T0).await;
        append(&mut log, &tail, T0).await;
        let active = *log.segment_base_offsets().last().unwrap();
        let (mut log, outcome) = clean(log, T0 + 10, None).await;
        stats(outcome);
        let after = read(&mut log).await;
        let in_active: Vec<_> = after.iter().filter(|r| r.0 >= active).cloned().collect();
        assert_eq!(in_active.len(), 10, "{in_active:?}");
        assert_eq!(log.cleaner_checkpoint(), Some(written.len() as i64));
        log.close().await.unwrap();
    });
}

#[test]
fn tombstones_vanish_only_after_delete_retention() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, false, T0).await;
        let written = fill(&mut log, 10, 3).await;
        let deleted: Vec<String> = latest(&written)
            .values()
            .filter(|r| r.2.is_none())
            .map(|r| r.1.clone())
            .collect();
        assert_eq!(deleted.len(), 2);
        let (mut log, outcome) = clean(log, T0, None).await;
        stats(outcome);
        let tombstones = |recs: &[Rec]| recs.iter().filter(|r| r.2.is_none()).count();
        assert_eq!(
            tombstones(&read(&mut log).await),
            2,
            "kept by the first clean"
        );
        // Nothing dirty and the horizon not passed: no clean is due.
        let view = log.cleaner_view();
        assert!(!cleaner::view_to_clean(&view, T0 + DELETE_RETENTION_MS - 1).should_clean(0.5));
        let due = cleaner::view_to_clean(&view, T0 + DELETE_RETENTION_MS);
        assert!(due.tombstones_expired && due.should_clean(0.5), "{due:?}");
        // A clean before the horizon keeps them, even one that reopened.
        log.close().await.unwrap();
        let mut log = open(&path, true, T0).await;
        log.set_cleaner_checkpoint(written.len() as i64);
        let (mut log, _) = clean(log, T0 + DELETE_RETENTION_MS - 1, None).await;
        assert_eq!(tombstones(&read(&mut log).await), 2);
        // At the horizon they go; every other key keeps its latest value.
        let (mut log, outcome) = clean(log, T0 + DELETE_RETENTION_MS, None).await;
        stats(outcome);
        let after = read(&mut log).await;
        assert_eq!(tombstones(&after), 0, "{after:?}");
        let mut want = latest(&written);
        want.retain(|_, r| r.2.is_some());
        assert_eq!(latest(&after), want);
        log.close().await.unwrap();
        assert_verified(&path.join(tp().dir_name()));
    });
}

/// A fetch holds a file range (the DMA file and the buffered descriptor
/// that sendfile uses) of a segment the swap then deletes: the range keeps
/// reading the old bytes, because deleting unlinks the file and the open
/// descriptors keep it.
#[test]
fn a_read_taken_before_a_swap_still_reads_the_old_segment() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, false, T0).await;
        let written = fill(&mut log, 20, 6).await;
        let held = log
            .read(0, 1 << 20, log.high_watermark(), true)
            .await
            .unwrap();
        let before = held.to_vec().await.unwrap();
        let (mut log, outcome) = clean(log, T0, None).await;
        stats(outcome);
        assert!(read(&mut log).await.len() < written.len());
        // Through the DMA file...
        assert_eq!(held.to_vec().await.unwrap(), before);
        // ...and through the descriptor a fetch response takes to the
        // connection's shard.
        let Some(pinlog::log::partition_log::ReadSlice::File {
            file,
            position,
            len,
        }) = held.slices.first()
        else {
            panic!("expected a file range");
        };
        let shared = pinlog::log::segment_file::SegmentFile::dup_of(file).unwrap();
        let dup = shared.take_for_this_shard().unwrap();
        let buf = dup.read_at(*position, *len as usize).await.unwrap();
        assert_eq!(&buf[..], &before[..]);
        dup.close().await.unwrap();
        let recs = decode(&before);
        assert_eq!(recs[..], written[..recs.len()]);
        drop(held);
        log.close().await.unwrap();
    });
}

/// Under `compact,delete` retention also removes the empty segments a clean
/// leaves (every record in them was overwritten), and nothing else that is
/// young.
#[test]
fn retention_removes_segments_a_clean_emptied() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, false, T0).await;
        let mut c = config();
        c.cleanup_policy = CleanupPolicy {
            delete: true,
            compact: true,
        };
        c.retention_ms = 7 * 24 * 3600 * 1000;
        log.set_config(c);
        let written = fill(&mut log, 20, 6).await;
        let (mut log, outcome) = clean(log, T0, None).await;
        stats(outcome);
        let after = read(&mut log).await;
        let segments = log.segment_count();
        let deleted = log.apply_retention(T0 + 1).await.unwrap();
        assert!(deleted > 0, "empty segments go");
        assert_eq!(log.segment_count(), segments - deleted);
        assert!(log.log_start_offset() > 0);
        assert_eq!(read(&mut log).await, after, "nothing with data went");
        assert_eq!(latest(&after), latest(&written));
        log.close().await.unwrap();
    });
}

#[test]
fn compaction_policy_is_enforced_on_produce() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, false, T0).await;
        let b = build_keyed_batch(
            0,
            -1,
            T0,
            &[(0, Some(b"k"), Some(b"v")), (1, None, Some(b"v"))],
        );
        let e = log
            .append_as_leader(BytesMut::from(&b[..]), 0, None, T0)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("without a key"), "{e}");
        assert_eq!(log.log_end_offset(), 0);
        // A delete-policy log takes keyless records, as Kafka does.
        let mut c = config();
        c.cleanup_policy = CleanupPolicy::DELETE;
        log.set_config(c);
        log.append_as_leader(BytesMut::from(&b[..]), 0, None, T0)
            .await
            .unwrap();
        log.close().await.unwrap();
    });
}

#[test]
fn a_clean_abandons_its_work_when_retention_removed_a_segment_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, false, T0).await;
        fill(&mut log, 10, 6).await;
        let view = log.cleaner_view();
        assert!(log.segments_unchanged(&view.segments));
        let second = view.segments[1].stats.base_offset;
        log.delete_records_before(second).await.unwrap();
        assert!(!log.segments_unchanged(&view.segments));
        // The swap refuses and changes nothing.
        let before = read(&mut log).await;
        assert!(!log
            .replace_segments(&view.segments[..2], T0, None)
            .await
            .unwrap());
        assert_eq!(read(&mut log).await, before);
        log.close().await.unwrap();
    });
}

/// A follower's truncation cuts the last sealed segment the cleaner read,
/// making it active again; the new leader's batches refill it to the very
/// size the cleaner saw, and it rolls. Same base, same file, same size: the
/// swap must still refuse, or it would write back the records the
/// truncation removed (Kafka pauses cleaning while it truncates).
#[test]
fn a_clean_abandons_its_work_when_a_truncation_cut_a_segment_that_refilled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, false, T0).await;
        let written = fill(&mut log, 10, 6).await;
        let view = log.cleaner_view();
        let last = view.segments.last().expect("sealed segments").stats;
        let cut = last.base_offset + 5;
        assert!(
            cut < last.next_offset,
            "the segment holds more than a batch"
        );
        log.truncate_to(cut, T0).await.unwrap();
        assert!(!log.segments_unchanged(&view.segments));
        // The new leader's records: the same keys and value lengths, so the
        // same batch sizes, but different values.
        let divergent: Vec<(String, Option<String>)> = written
            .iter()
            .filter(|r| r.0 >= cut && r.0 < last.next_offset)
            .map(|r| (r.1.clone(), r.2.as_ref().map(|v| v.to_uppercase())))
            .collect();
        for batch in divergent.chunks(5) {
            append(&mut log, batch, T0).await;
        }
        let leo = log.log_end_offset();
        log.roll(leo, T0).await.unwrap();
        let refilled = log.cleaner_view();
        let again = refilled
            .segments
            .iter()
            .find(|s| s.stats.base_offset == last.base_offset)
            .expect("the cut segment is sealed again");
        assert_eq!(
            again.stats.size_bytes, last.size_bytes,
            "the test needs the segment refilled to the size the cleaner saw"
        );
        assert!(!log.segments_unchanged(&view.segments));
        let before = read(&mut log).await;
        assert!(!log
            .replace_segments(&view.segments, T0, None)
            .await
            .unwrap());
        assert_eq!(read(&mut log).await, before);
        log.close().await.unwrap();
    });
}

/// Crash at each step of the swap, reopen as after a crash, and check that
/// nothing was lost: before the commit point the old segments are back,
/// after it the clean is finished.
#[test]
fn recovery_finishes_or_undoes_a_swap_interrupted_at_any_step() {
    for failpoint in [
        SwapFailpoint::BeforeSwap,
        SwapFailpoint::AfterSwapCommitted,
        SwapFailpoint::AfterFirstOldDeleted,
        SwapFailpoint::AfterOldDeleted,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        run(move || async move {
            let mut log = open(&path, false, T0).await;
            let mut written = fill(&mut log, 20, 6).await;
            // A first clean shrinks the segments, so that the interrupted
            // one merges several into each group.
            let (mut log, outcome) = clean(log, T0, None).await;
            stats(outcome);
            written.extend(fill(&mut log, 20, 2).await);
            let segments_before = log.segment_count();
            let before = read(&mut log).await;
            let part = path.join(tp().dir_name());
            let (log, outcome) = clean(log, T0, Some(failpoint)).await;
            assert!(outcome.is_err(), "{failpoint:?}: {outcome:?}");
            assert!(log.is_offline());
            let left = leftovers(&part);
            match failpoint {
                SwapFailpoint::BeforeSwap => {
                    assert!(left.iter().all(|n| n.ends_with(".cleaned")), "{left:?}")
                }
                _ => assert!(left.iter().any(|n| n.ends_with(".log.swap")), "{left:?}"),
            }
            drop(log); // a crash: nothing closed, no checkpoint written
            let mut log = open(&path, false, T0 + 1).await;
            assert!(
                leftovers(&part).is_empty(),
                "{failpoint:?}: {:?}",
                leftovers(&part)
            );
            let after = read(&mut log).await;
            assert_eq!(latest(&after), latest(&written), "{failpoint:?}");
            assert!(after.windows(2).all(|w| w[0].0 < w[1].0), "{failpoint:?}");
            if failpoint == SwapFailpoint::BeforeSwap {
                assert_eq!(
                    log.segment_count(),
                    segments_before,
                    "the old segments are intact"
                );
                assert_eq!(after.len(), before.len());
            } else {
                // The first group's clean is installed. Old segments of the
                // group past the cleaned segment's last offset may survive
                // (see log/swap.rs): here the group's output is empty, its
                // records all overwritten, and until the old segments are
                // gone they come back. The reads above show they are
                // harmless.
                assert!(after.len() <= before.len(), "{failpoint:?}");
                if failpoint == SwapFailpoint::AfterOldDeleted {
                    assert!(after.len() < before.len(), "{failpoint:?}: the swap stays");
                }
            }
            assert_eq!(log.log_end_offset(), written.len() as i64);
            // The checkpoint was lost with the crash: the next clean redoes
            // the work and ends with one record per key.
            let (mut log, outcome) = clean(log, T0 + 2, None).await;
            stats(outcome);
            let again = read(&mut log).await;
            assert_eq!(again.len(), latest(&written).len(), "{failpoint:?}");
            log.close().await.unwrap();
            assert_verified(&part);
        });
    }
}

#[test]
fn producer_state_survives_cleaning_away_a_producers_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, false, T0).await;
        // An idempotent producer writes key "p" once; later plain writes
        // overwrite it, so the clean empties the producer's batch.
        let b = build_keyed_batch(0, -1, T0, &[(0, Some(b"p"), Some(b"1"))]);
        let h = batch::validate(&b, CountRule::Exact).unwrap();
        let mut f = batch::BatchFields::of(&h);
        f.producer_id = 42;
        f.producer_epoch = 3;
        f.base_sequence = 0;
        let b = batch::encode_batch(&f, 1, &b[61..]);
        log.append_as_leader(BytesMut::from(&b[..]), 0, None, T0)
            .await
            .unwrap();
        for _ in 0..40 {
            append(&mut log, &[("p".to_string(), Some("later".repeat(20)))], T0).await;
        }
        let leo = log.log_end_offset();
        log.roll(leo, T0).await.unwrap();
        let (mut log, outcome) = clean(log, T0, None).await;
        stats(outcome);
        let after = read(&mut log).await;
        assert_eq!(after.len(), 1);
        assert!(after[0].0 > 0, "the producer's record went: {after:?}");
        log.close().await.unwrap();
        // Reopen without snapshots: the empty batch rebuilds the state.
        for e in std::fs::read_dir(path.join(tp().dir_name())).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "snapshot") {
                std::fs::remove_file(p).unwrap();
            }
        }
        let log = open(&path, false, T0).await;
        let entry = log
            .producer_state()
            .entry(42)
            .expect("producer 42 survives");
        assert_eq!((entry.producer_epoch, entry.last_seq()), (3, 0));
        log.close().await.unwrap();
    });
}

/// A transactional batch of `records` from `producer_id`.
fn txn_batch(producer_id: i64, seq: i32, records: &[(&str, &str)]) -> BytesMut {
    let specs: Vec<KeyedRecordSpec> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| (i as i64, Some(k.as_bytes()), Some(v.as_bytes())))
        .collect();
    let b = build_keyed_batch(0, -1, T0, &specs);
    let h = batch::validate(&b, CountRule::Exact).unwrap();
    let mut f = batch::BatchFields::of(&h);
    f.producer_id = producer_id;
    f.producer_epoch = 0;
    f.base_sequence = seq;
    f.attributes |= 0x10;
    BytesMut::from(&batch::encode_batch(&f, h.record_count, &b[61..])[..])
}

async fn end_txn(log: &mut PartitionLog, producer_id: i64, kind: MarkerKind) {
    let spec = MarkerSpec {
        producer_id,
        producer_epoch: 0,
        marker: TxnMarker {
            kind,
            coordinator_epoch: 0,
        },
        timestamp_ms: T0,
    };
    let r = log.append_markers_as_leader(&[spec], 1, 0, T0).await;
    r.into_iter().next().unwrap().unwrap();
    let leo = log.log_end_offset();
    log.set_high_watermark(leo);
}

/// Data records and the number of markers of a log.
fn data_and_markers(bytes: &[u8]) -> (Vec<Rec>, usize) {
    let mut data = Vec::new();
    let mut markers = 0;
    for item in BatchIter::new(bytes, CountRule::Compacted) {
        let (at, h) = item.expect("valid batch");
        if h.is_control() {
            markers += 1;
        } else {
            data.extend(decode(&bytes[at..at + h.size_bytes()]));
        }
    }
    (data, markers)
}

#[test]
fn transactions_are_cleaned_by_kafkas_rules() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, false, T0).await;
        append(&mut log, &[kv(1, Some("committed".into()))], T0).await;
        // Producer 7 aborts a newer value of key 1: it must not hide the
        // committed one. Producer 8 commits key 2.
        log.append_as_leader(
            txn_batch(7, 0, &[("key-01", "aborted"), ("key-03", "aborted")]),
            0,
            None,
            T0,
        )
        .await
        .unwrap();
        log.append_as_leader(txn_batch(8, 0, &[("key-02", "in-txn")]), 0, None, T0)
            .await
            .unwrap();
        end_txn(&mut log, 7, MarkerKind::Abort).await;
        end_txn(&mut log, 8, MarkerKind::Commit).await;
        for round in 0..30 {
            append(&mut log, &[kv(10 + round % 3, Some("x".repeat(80)))], T0).await;
        }
        // Producer 9's transaction stays open: nothing from its first
        // offset on may be cleaned.
        let open_at = log.log_end_offset();
        log.append_as_leader(txn_batch(9, 0, &[("key-01", "open")]), 0, None, T0)
            .await
            .unwrap();
        for round in 0..30 {
            append(&mut log, &[kv(10 + round % 3, Some("y".repeat(80)))], T0).await;
        }
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        log.roll(leo, T0).await.unwrap();
        assert_eq!(log.last_stable_offset(), open_at);
        let aborted_before = log.aborted_txns(0, leo);
        assert_eq!(aborted_before.len(), 1);

        let (mut log, outcome) = clean(log, T0, None).await;
        let s = stats(outcome);
        assert!(s.end_offset <= open_at, "cleaned past the LSO: {s:?}");
        let (data, markers) = data_and_markers(&log.read_all().await.unwrap());
        let values: Vec<(String, String)> = data
            .iter()
            .filter(|r| r.0 < open_at)
            .map(|r| (r.1.clone(), r.2.clone().unwrap()))
            .filter(|(k, _)| k.as_str() < "key-10")
            .collect();
        assert_eq!(
            values,
            vec![
                ("key-01".to_string(), "committed".to_string()),
                ("key-02".to_string(), "in-txn".to_string()),
            ],
            "the aborted records go, the committed ones stay"
        );
        assert_eq!(markers, 2, "markers stay");
        assert!(
            data.iter().any(|r| r.0 == open_at),
            "the open transaction is untouched"
        );
        assert_eq!(
            log.aborted_txns(0, leo),
            aborted_before,
            "the index entry moves to the cleaned segment"
        );
        assert!(leftovers(&path.join(tp().dir_name())).is_empty());
        log.close().await.unwrap();
        assert_verified(&path.join(tp().dir_name()));
        // A full recovery (every segment, as after a crash) finds the same.
        let log = open(&path, false, T0).await;
        assert_eq!(log.aborted_txns(0, leo), aborted_before);
        assert_eq!(log.last_stable_offset(), open_at);
        log.close().await.unwrap();
    });
}

/// Kafka's rule for markers: one stays while any batch of its transaction
/// does; then a clean stamps it with a delete horizon, and a clean after
/// the horizon drops it, with its `.txnindex` entry. A producer's last
/// batch (here its last marker) stays.
#[test]
fn markers_go_once_their_data_is_gone_and_delete_retention_passed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, false, T0).await;
        append(&mut log, &[kv(1, Some("plain".into()))], T0).await;
        // Producer 7 aborts key-01; producer 8 commits key-02, which a
        // plain record then replaces.
        log.append_as_leader(txn_batch(7, 0, &[("key-01", "aborted")]), 0, None, T0)
            .await
            .unwrap();
        end_txn(&mut log, 7, MarkerKind::Abort).await;
        log.append_as_leader(txn_batch(8, 0, &[("key-02", "replaced")]), 0, None, T0)
            .await
            .unwrap();
        end_txn(&mut log, 8, MarkerKind::Commit).await;
        append(&mut log, &[kv(2, Some("newer".into()))], T0).await;
        // Each producer's next transaction commits and stays: its marker is
        // the producer's last batch.
        log.append_as_leader(txn_batch(7, 1, &[("key-03", "kept")]), 0, None, T0)
            .await
            .unwrap();
        end_txn(&mut log, 7, MarkerKind::Commit).await;
        log.append_as_leader(txn_batch(8, 1, &[("key-04", "kept")]), 0, None, T0)
            .await
            .unwrap();
        end_txn(&mut log, 8, MarkerKind::Commit).await;
        for round in 0..30 {
            append(&mut log, &[kv(10 + round % 3, Some("x".repeat(80)))], T0).await;
        }
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        log.roll(leo, T0).await.unwrap();
        assert_eq!(log.aborted_txns(0, leo).len(), 1);

        // 1: the aborted record and the replaced one go; their batches were
        // still there, so their markers stay.
        let (mut log, outcome) = clean(log, T0, None).await;
        assert_eq!(stats(outcome).markers_removed, 0);
        assert_eq!(data_and_markers(&log.read_all().await.unwrap()).1, 4);
        // 2: nothing of those transactions is left: the markers get a
        // delete horizon, and stay until it.
        let (mut log, outcome) = clean(log, T0, None).await;
        assert_eq!(stats(outcome).markers_removed, 0);
        assert_eq!(data_and_markers(&log.read_all().await.unwrap()).1, 4);
        assert_eq!(log.aborted_txns(0, leo).len(), 1, "the entry stays too");
        let (log, outcome) = clean(log, T0 + DELETE_RETENTION_MS - 1, None).await;
        assert_eq!(stats(outcome).markers_removed, 0, "before the horizon");
        // 3: after the horizon they go, with the abort's index entry.
        let (mut log, outcome) = clean(log, T0 + DELETE_RETENTION_MS, None).await;
        assert_eq!(stats(outcome).markers_removed, 2);
        let (data, markers) = data_and_markers(&log.read_all().await.unwrap());
        assert_eq!(markers, 2, "each producer's last marker stays");
        let kept: Vec<(String, String)> = data
            .iter()
            .map(|r| (r.1.clone(), r.2.clone().unwrap_or_default()))
            .filter(|(k, _)| k.as_str() < "key-10")
            .collect();
        assert_eq!(
            kept,
            vec![
                ("key-01".to_string(), "plain".to_string()),
                ("key-02".to_string(), "newer".to_string()),
                ("key-03".to_string(), "kept".to_string()),
                ("key-04".to_string(), "kept".to_string()),
            ]
        );
        assert!(log.aborted_txns(0, leo).is_empty());
        assert_eq!(log.last_stable_offset(), leo);
        log.close().await.unwrap();
        assert_verified(&path.join(tp().dir_name()));
        // A full recovery agrees: no aborted transaction, nothing open.
        let log = open(&path, false, T0 + DELETE_RETENTION_MS).await;
        assert!(log.aborted_txns(0, leo).is_empty());
        assert_eq!(log.last_stable_offset(), leo);
        log.close().await.unwrap();
    });
}

// ---------------------------------------------------------------------------
// Property test against a model
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    /// A batch of (key, value or tombstone).
    Append(Vec<(u8, Option<u8>)>),
    Roll,
    /// A clean after time moved on by this much.
    Clean(i64),
    /// Close and reopen; `crash` drops the log without closing and loses
    /// the cleaner checkpoint.
    Reopen {
        crash: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec((0u8..8, prop::option::weighted(0.8, 0u8..50)), 1..6)
            .prop_map(Op::Append),
        2 => Just(Op::Roll),
        2 => (0i64..700).prop_map(Op::Clean),
        1 => any::<bool>().prop_map(|crash| Op::Reopen { crash }),
    ]
}

fn run_model(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().to_path_buf();
    run(move || async move {
        let mut now = T0;
        let mut log = open(&path, false, now).await;
        let mut written: Vec<Rec> = Vec::new();
        // How far cleans have reached: a crash loses the checkpoint, not
        // the cleaning.
        let mut cleaned_upto = 0;
        for op in ops {
            match op {
                Op::Append(recs) => {
                    let recs: Vec<_> = recs
                        .into_iter()
                        .map(|(k, v)| {
                            (
                                format!("k{k}"),
                                v.map(|v| format!("v{v}-{}", "y".repeat(v as usize))),
                            )
                        })
                        .collect();
                    let first = log.log_end_offset();
                    append(&mut log, &recs, now).await;
                    for (i, (k, v)) in recs.into_iter().enumerate() {
                        written.push((first + i as i64, k, v));
                    }
                }
                Op::Roll => {
                    let leo = log.log_end_offset();
                    log.roll(leo, now).await.unwrap();
                }
                Op::Clean(advance) => {
                    now += advance;
                    let (l, outcome) = clean(log, now, None).await;
                    log = l;
                    prop_assert!(outcome.is_ok(), "{outcome:?}");
                }
                Op::Reopen { crash } => {
                    let checkpoint = log.cleaner_checkpoint();
                    if crash {
                        drop(log);
                    } else {
                        log.close().await.unwrap();
                    }
                    log = open(&path, !crash, now).await;
                    if let (false, Some(c)) = (crash, checkpoint) {
                        log.set_cleaner_checkpoint(c);
                    }
                }
            }
            let after = read(&mut log).await;
            // Offsets strictly increase and each record is exactly what
            // was written at its offset.
            prop_assert!(after.windows(2).all(|w| w[0].0 < w[1].0));
            let at: HashMap<i64, &Rec> = written.iter().map(|r| (r.0, r)).collect();
            for r in &after {
                prop_assert_eq!(at.get(&r.0).copied(), Some(r));
            }
            // Each key reads as its latest write; a deleted key reads as a
            // tombstone or not at all.
            let got = latest(&after);
            for (key, want) in latest(&written) {
                match (&want.2, got.get(&key)) {
                    (Some(_), Some(r)) => prop_assert_eq!(r, &want),
                    (Some(_), None) => prop_assert!(false, "{key} lost: want {want:?}"),
                    (None, Some(r)) => prop_assert_eq!(r, &want),
                    (None, None) => {}
                }
            }
            // The part no clean reached is exactly as written.
            cleaned_upto = cleaned_upto.max(log.cleaner_checkpoint().unwrap_or(0));
            let from = cleaned_upto;
            let tail: Vec<_> = written.iter().filter(|r| r.0 >= from).cloned().collect();
            let got_tail: Vec<_> = after.iter().filter(|r| r.0 >= from).cloned().collect();
            prop_assert_eq!(got_tail, tail);
            // Below it, no key appears twice.
            let mut seen = std::collections::HashSet::new();
            for r in after.iter().filter(|r| r.0 < from) {
                prop_assert!(seen.insert(r.1.clone()), "{} twice below {}", r.1, from);
            }
        }
        log.close().await.unwrap();
        let report = pinlog::tools::verify::verify_partition_dir(&path.join(tp().dir_name()));
        prop_assert!(report.is_ok(), "{:?}", report.errors().collect::<Vec<_>>());
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    })]

    #[test]
    fn compaction_matches_the_model(ops in prop::collection::vec(op(), 1..60)) {
        run_model(ops)?;
    }
}
