//! Behaviour of one partition log against real files.

use crate::common::{producer_batch, run};
use pinlog::config::LogConfig;
use pinlog::error::LogError;
use pinlog::log::batch::{self, BatchIter, CountRule};
use pinlog::log::batch_cache::BatchCache;
use pinlog::log::partition_log::{OpenParams, PartitionLog};
use pinlog::topic_partition::TopicPartition;

fn params(clean: bool) -> OpenParams {
    OpenParams {
        recovery_point: 0,
        log_start_offset: 0,
        clean_shutdown: clean,
        now_ms: 1_000,
    }
}

fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 64 * 1024,
        index_interval_bytes: 1024,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    }
}

fn offsets_of(bytes: &[u8]) -> Vec<(i64, i64)> {
    BatchIter::new(bytes, CountRule::Compacted)
        .map(|r| {
            let (_, h) = r.expect("valid batch");
            (h.base_offset, h.last_offset())
        })
        .collect()
}

#[test]
fn leader_appends_assign_dense_offsets_and_roll_segments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("t", 0);
        let mut log = PartitionLog::open(&path, tp, small_config(), params(false), None)
            .await
            .unwrap();
        for i in 0..200 {
            let info = log
                .append_as_leader(producer_batch(5, 200, 1_000 + i), 3, None, 1_000)
                .await
                .unwrap();
            assert_eq!(info.first_offset, i * 5);
            assert_eq!(info.last_offset, i * 5 + 4);
        }
        assert_eq!(log.log_end_offset(), 1000);
        assert!(log.segment_count() > 2, "64 KiB segments must roll");
        let all = log.read_all().await.unwrap();
        let offsets = offsets_of(&all);
        assert_eq!(offsets.len(), 200);
        for (i, (base, last)) in offsets.iter().enumerate() {
            assert_eq!(*base, i as i64 * 5);
            assert_eq!(*last, i as i64 * 5 + 4);
        }
        for r in BatchIter::new(&all, CountRule::Exact) {
            assert_eq!(r.unwrap().1.partition_leader_epoch, 3);
        }
        assert_eq!(log.epoch_cache().entries().len(), 1);
        log.close().await.unwrap();
    });
}

#[test]
fn reads_honour_offsets_limits_and_min_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("t", 1);
        let mut log = PartitionLog::open(&path, tp, small_config(), params(false), None)
            .await
            .unwrap();
        for i in 0..100 {
            log.append_as_leader(producer_batch(2, 500, i), 0, None, 0)
                .await
                .unwrap();
        }
        log.set_high_watermark(150);
        // Middle of a batch: the read starts at that batch.
        let r = log.read(51, 1 << 20, 150, true).await.unwrap();
        let bytes = r.to_vec().await.unwrap();
        let got = offsets_of(&bytes);
        assert_eq!(got.first(), Some(&(50, 51)));
        // Like Kafka, one read serves one segment; a consumer loop reaches
        // the HW and never passes it.
        let mut next = got.last().unwrap().1 + 1;
        let mut reads = 0;
        while next < 150 {
            let r = log.read(next, 1 << 20, 150, true).await.unwrap();
            let got = offsets_of(&r.to_vec().await.unwrap());
            assert_eq!(got[0].0, next, "dense offsets across segments");
            next = got.last().unwrap().1 + 1;
            reads += 1;
            assert!(reads < 10);
        }
        assert_eq!(next, 150, "stops at the HW");
        // max_bytes smaller than one batch: min-one-message returns it whole.
        let r = log.read(0, 10, 150, true).await.unwrap();
        assert_eq!(offsets_of(&r.to_vec().await.unwrap()), vec![(0, 1)]);
        let r = log.read(0, 10, 150, false).await.unwrap();
        assert_eq!(r.len_bytes(), 0);
        // At the LEO: empty. Past it or below the start: out of range.
        let leo = log.log_end_offset();
        assert_eq!(log.read(leo, 100, leo, true).await.unwrap().len_bytes(), 0);
        assert!(matches!(
            log.read(leo + 1, 100, leo, true).await,
            Err(LogError::OffsetOutOfRange { .. })
        ));
        log.close().await.unwrap();
    });
}

#[test]
fn tail_cache_serves_recent_batches_without_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let cache = BatchCache::shared(16 * 1024);
        let tp = TopicPartition::new("t", 2);
        let mut log = PartitionLog::open(
            &path,
            tp,
            small_config(),
            params(false),
            Some(cache.clone()),
        )
        .await
        .unwrap();
        for i in 0..50 {
            log.append_as_leader(producer_batch(1, 1000, i), 0, None, 0)
                .await
                .unwrap();
        }
        log.set_high_watermark(50);
        let tail = log.read(49, 1 << 20, 50, true).await.unwrap();
        assert!(tail.from_cache);
        let old = log.read(0, 1 << 20, 50, true).await.unwrap();
        assert!(!old.from_cache, "16 KiB of cache cannot hold offset 0");
        assert_eq!(offsets_of(&old.to_vec().await.unwrap())[0], (0, 0));
        assert!(cache.borrow().used_bytes() <= 16 * 1024);
        let stats = cache.borrow().stats();
        assert_eq!((stats.hits, stats.misses), (1, 1));
        log.close().await.unwrap();
    });
}

#[test]
fn follower_appends_must_continue_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("f", 0);
        let mut log = PartitionLog::open(&path, tp, small_config(), params(false), None)
            .await
            .unwrap();
        let mut b = producer_batch(3, 10, 0);
        batch::set_base_offset(&mut b, 0);
        batch::set_partition_leader_epoch(&mut b, 4);
        log.append_as_follower(b.clone().freeze(), 0).await.unwrap();
        assert_eq!(log.log_end_offset(), 3);
        assert_eq!(log.epoch_cache().latest_epoch(), Some(4));
        // Same offsets again: not monotonic.
        assert!(matches!(
            log.append_as_follower(b.freeze(), 0).await,
            Err(LogError::NonMonotonicAppend { .. })
        ));
        log.close().await.unwrap();
    });
}

#[test]
fn clean_restart_keeps_everything_and_skips_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("r", 0);
        let mut log = PartitionLog::open(&path, tp.clone(), small_config(), params(false), None)
            .await
            .unwrap();
        for i in 0..300 {
            log.append_as_leader(producer_batch(1, 300, i), 1, None, 0)
                .await
                .unwrap();
        }
        let before = log.read_all().await.unwrap();
        log.close().await.unwrap();
        let mut log = PartitionLog::open(&path, tp, small_config(), params(true), None)
            .await
            .unwrap();
        assert_eq!(log.recovery_report().segments_recovered, 0);
        assert_eq!(log.log_end_offset(), 300);
        assert_eq!(log.read_all().await.unwrap(), before);
        // Appends continue after the restart.
        let info = log
            .append_as_leader(producer_batch(1, 300, 0), 2, None, 0)
            .await
            .unwrap();
        assert_eq!(info.first_offset, 300);
        log.close().await.unwrap();
    });
}

#[test]
fn truncate_to_removes_whole_batches_and_trims_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("tr", 0);
        let mut log = PartitionLog::open(&path, tp, small_config(), params(false), None)
            .await
            .unwrap();
        for epoch in 0..4 {
            for _ in 0..40 {
                log.append_as_leader(producer_batch(2, 400, 0), epoch, None, 0)
                    .await
                    .unwrap();
            }
        }
        assert_eq!(log.log_end_offset(), 320);
        log.set_high_watermark(320);
        // 161 is inside the batch [160, 161]: it goes whole.
        log.truncate_to(161, 0).await.unwrap();
        assert_eq!(log.log_end_offset(), 160);
        assert_eq!(log.high_watermark(), 160);
        let epochs: Vec<i32> = log
            .epoch_cache()
            .entries()
            .iter()
            .map(|e| e.epoch)
            .collect();
        assert_eq!(epochs, vec![0, 1], "epoch 2 started at 160 and is gone");
        let info = log
            .append_as_leader(producer_batch(1, 10, 0), 5, None, 0)
            .await
            .unwrap();
        assert_eq!(info.first_offset, 160);
        log.truncate_fully_and_start_at(1000, 0).await.unwrap();
        assert_eq!(log.log_start_offset(), 1000);
        assert_eq!(log.log_end_offset(), 1000);
        assert!(log.epoch_cache().is_empty());
        log.close().await.unwrap();
    });
}

/// A leader replaced before it appended anything holds an epoch entry that
/// starts at its log end. Truncating to the log end removes no batch but
/// does remove that entry (Kafka's `truncateTo`), or the follower would ask
/// the new leader about that epoch forever (found by the simulation).
#[test]
fn truncating_to_the_log_end_drops_an_epoch_that_starts_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("tr-end", 0);
        let mut log = PartitionLog::open(&path, tp.clone(), small_config(), params(false), None)
            .await
            .unwrap();
        for _ in 0..10 {
            log.append_as_leader(producer_batch(2, 100, 0), 0, None, 0)
                .await
                .unwrap();
        }
        // Became leader of epoch 2 at offset 20, then lost it at once.
        log.assign_epoch_start_offset(2, 20).await.unwrap();
        assert_eq!(log.epoch_cache().latest_epoch(), Some(2));
        assert!(!log.truncate_to(20, 0).await.unwrap(), "no batch goes");
        assert_eq!(log.log_end_offset(), 20);
        assert_eq!(log.epoch_cache().latest_epoch(), Some(0));
        log.close().await.unwrap();
        // The checkpoint says so too.
        let log = PartitionLog::open(&path, tp, small_config(), params(true), None)
            .await
            .unwrap();
        assert_eq!(log.epoch_cache().latest_epoch(), Some(0));
        log.close().await.unwrap();
    });
}

#[test]
fn retention_and_delete_records_move_the_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("ret", 0);
        let config = LogConfig {
            retention_bytes: 100 * 1024,
            ..small_config()
        };
        let mut log = PartitionLog::open(&path, tp, config, params(false), None)
            .await
            .unwrap();
        for i in 0..1000 {
            log.append_as_leader(producer_batch(1, 500, i), 0, None, 0)
                .await
                .unwrap();
        }
        log.set_high_watermark(1000);
        let deleted = log.apply_retention(2_000).await.unwrap();
        assert!(deleted > 0);
        assert!(log.size_bytes() <= 100 * 1024 + 64 * 1024);
        assert!(log.log_start_offset() > 0);
        assert_eq!(log.log_start_offset(), log.segment_base_offsets()[0]);
        let start = log.log_start_offset();
        assert!(matches!(
            log.read(start - 1, 100, 1000, true).await,
            Err(LogError::OffsetOutOfRange { .. })
        ));
        // DeleteRecords inside a segment moves the start without deleting it.
        let new_start = log.delete_records_before(start + 3).await.unwrap();
        assert_eq!(new_start, start + 3);
        assert!(
            log.delete_records_before(2000).await.is_err(),
            "beyond the HW"
        );
        // Time-based retention: everything older than retention.ms goes, the
        // active segment is rolled away too.
        let mut cfg = log.config().clone();
        cfg.retention_ms = 10;
        cfg.retention_bytes = -1;
        log.set_config(cfg);
        log.apply_retention(1_000_000).await.unwrap();
        assert_eq!(log.log_start_offset(), 1000);
        assert_eq!(log.log_end_offset(), 1000);
        log.close().await.unwrap();
    });
}

#[test]
fn offset_for_timestamp_finds_the_first_record_at_or_after() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("ts", 0);
        let mut log = PartitionLog::open(&path, tp, small_config(), params(false), None)
            .await
            .unwrap();
        // Batch i holds records at 10_000 + 10 i + {0, 1, 2}.
        for i in 0..500 {
            log.append_as_leader(producer_batch(3, 100, 10_000 + 10 * i), 0, None, 0)
                .await
                .unwrap();
        }
        let found = log
            .offset_for_timestamp(10_000 + 10 * 321 + 2)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.offset, 321 * 3 + 2);
        assert_eq!(found.timestamp, 10_000 + 10 * 321 + 2);
        let found = log
            .offset_for_timestamp(10_000 + 10 * 321 + 5)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.offset, 322 * 3);
        assert!(log.offset_for_timestamp(1 << 40).await.unwrap().is_none());
        let max = log.max_timestamp_offset().unwrap();
        assert_eq!(max.timestamp, 10_000 + 10 * 499 + 2);
        assert_eq!(max.offset, 1499);
        log.close().await.unwrap();
    });
}

#[test]
fn invalid_batches_are_rejected_with_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("bad", 0);
        let mut log = PartitionLog::open(&path, tp, small_config(), params(false), None)
            .await
            .unwrap();
        let mut b = producer_batch(2, 10, 0);
        let n = b.len();
        b[n - 1] ^= 1;
        assert!(matches!(
            log.append_as_leader(b, 0, None, 0).await,
            Err(LogError::InvalidBatch { .. })
        ));
        let mut b = producer_batch(2, 10, 0);
        b[16] = 1; // magic v1
        assert!(matches!(
            log.append_as_leader(b, 0, None, 0).await,
            Err(LogError::InvalidBatch {
                source: pinlog::error::BatchError::UnsupportedMagic { magic: 1 },
                ..
            })
        ));
        let big = producer_batch(1, 2 << 20, 0);
        assert!(
            log.append_as_leader(big, 0, None, 0).await.is_err(),
            "over max.message.bytes"
        );
        assert_eq!(log.log_end_offset(), 0);
        log.close().await.unwrap();
    });
}

#[test]
fn flush_policy_moves_the_recovery_point() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("fl", 0);
        let config = LogConfig {
            flush_messages: 10,
            flush_ms: 1_000,
            ..small_config()
        };
        let mut log = PartitionLog::open(&path, tp, config, params(false), None)
            .await
            .unwrap();
        log.append_as_leader(producer_batch(4, 10, 0), 0, None, 0)
            .await
            .unwrap();
        assert_eq!(log.recovery_point(), 0, "4 of 10 messages: no flush yet");
        log.append_as_leader(producer_batch(6, 10, 0), 0, None, 0)
            .await
            .unwrap();
        assert_eq!(log.recovery_point(), 10, "flush.messages reached");
        log.append_as_leader(producer_batch(1, 10, 0), 0, None, 5_000)
            .await
            .unwrap();
        assert_eq!(log.recovery_point(), 10);
        assert!(!log.maybe_flush(5_500).await.unwrap());
        assert!(log.maybe_flush(6_000).await.unwrap(), "flush.ms reached");
        assert_eq!(log.recovery_point(), 11);
        log.close().await.unwrap();
    });
}

#[test]
fn io_error_takes_the_partition_offline_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("io", 0);
        let mut log = PartitionLog::open(&path, tp.clone(), small_config(), params(false), None)
            .await
            .unwrap();
        log.append_as_leader(producer_batch(1, 10, 0), 0, None, 0)
            .await
            .unwrap();
        // The partition directory disappears under the broker: rolling a new
        // segment cannot create its file.
        std::fs::remove_dir_all(path.join(tp.dir_name())).unwrap();
        let err = log.roll(1, 0).await.unwrap_err();
        assert!(matches!(err, LogError::Io { .. }), "{err}");
        assert!(log.is_offline());
        let again = log
            .append_as_leader(producer_batch(1, 10, 0), 0, None, 0)
            .await;
        assert!(matches!(again, Err(LogError::Offline { .. })));
        assert!(matches!(
            log.read(0, 100, 1, true).await,
            Err(LogError::Offline { .. })
        ));
    });
}

/// An idle partition's restart writes no checkpoint and no snapshot: the
/// epoch entry at the LEO that open trims is re-added by the new leader and
/// then matches the file (P4 restart time; Kafka flushes that trim
/// asynchronously). A trim that nothing re-adds is persisted at close.
#[test]
fn idle_restart_rewrites_no_epoch_checkpoint_or_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("idle", 0);
        let pdir = path.join(tp.dir_name());
        let mut log = PartitionLog::open(&path, tp.clone(), small_config(), params(true), None)
            .await
            .unwrap();
        log.assign_epoch_start_offset(0, 0).await.unwrap();
        log.close().await.unwrap();
        let checkpoint = pdir.join("leader-epoch-checkpoint");
        let snapshot = pdir.join("00000000000000000000.snapshot");
        let stamp = |p: &std::path::Path| std::fs::metadata(p).unwrap().modified().unwrap();
        let (c0, s0) = (stamp(&checkpoint), stamp(&snapshot));
        assert_eq!(std::fs::read_to_string(&checkpoint).unwrap(), "0\n1\n0 0\n");
        std::thread::sleep(std::time::Duration::from_millis(20));

        let mut log = PartitionLog::open(&path, tp.clone(), small_config(), params(true), None)
            .await
            .unwrap();
        assert!(
            log.epoch_cache().entries().is_empty(),
            "open trims the entry at the LEO"
        );
        log.assign_epoch_start_offset(0, 0).await.unwrap();
        log.close().await.unwrap();
        assert_eq!(stamp(&checkpoint), c0, "the same entries are not rewritten");
        assert_eq!(
            stamp(&snapshot),
            s0,
            "a snapshot at this LEO exists already"
        );

        // Nobody re-adds the trimmed entry: close persists the trim.
        let log = PartitionLog::open(&path, tp, small_config(), params(true), None)
            .await
            .unwrap();
        log.close().await.unwrap();
        assert_eq!(std::fs::read_to_string(&checkpoint).unwrap(), "0\n0\n");
    });
}

/// A new leader's epoch entry is recorded in memory (a restart of many
/// idle partitions serves without creating a file each), but it is on disk
/// before any batch of its epoch is written, and a clean close writes it
/// for an epoch that saw no append.
#[test]
fn a_leaders_deferred_epoch_entry_is_durable_before_its_first_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("deferred", 0);
        let checkpoint = path.join(tp.dir_name()).join("leader-epoch-checkpoint");
        let on_disk = || std::fs::read_to_string(&checkpoint).unwrap_or_default();
        let mut log = PartitionLog::open(&path, tp.clone(), small_config(), params(true), None)
            .await
            .unwrap();
        log.assign_epoch_start_offset(0, 0).await.unwrap();
        log.append_as_leader(producer_batch(3, 10, 0), 0, None, 0)
            .await
            .unwrap();
        assert_eq!(on_disk(), "0\n1\n0 0\n");

        assert!(
            log.assign_leader_epoch_in_memory(4, 3).unwrap(),
            "the file lags"
        );
        assert_eq!(on_disk(), "0\n1\n0 0\n", "not written by the transition");
        assert_eq!(log.end_offset_for_epoch(0), (0, 3), "answered from memory");

        log.append_as_leader(producer_batch(2, 10, 0), 4, None, 0)
            .await
            .unwrap();
        assert_eq!(on_disk(), "0\n2\n0 0\n4 3\n", "written before the batch");

        assert!(log.assign_leader_epoch_in_memory(7, 5).unwrap());
        log.close().await.unwrap();
        assert_eq!(on_disk(), "0\n3\n0 0\n4 3\n7 5\n", "written at close");

        let mut log = PartitionLog::open(&path, tp, small_config(), params(true), None)
            .await
            .unwrap();
        assert!(
            !log.assign_leader_epoch_in_memory(7, 5).unwrap(),
            "already on disk"
        );
        log.persist_epoch_checkpoint().await.unwrap();
        log.close().await.unwrap();
    });
}

/// The mmap'ed indexes keep no descriptor open (Kafka closes its index
/// files after mapping them): a partition costs its active segment's two
/// descriptors, not four (P4: 10,000 partitions under a 20,000 limit).
#[test]
fn indexes_hold_no_open_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("fds", 0);
        let mut log = PartitionLog::open(&path, tp.clone(), small_config(), params(true), None)
            .await
            .unwrap();
        for i in 0..200 {
            log.append_as_leader(producer_batch(1, 300, i), 0, None, 0)
                .await
                .unwrap();
        }
        log.flush().await.unwrap();
        let pdir = std::fs::canonicalize(path.join(tp.dir_name())).unwrap();
        let open_in_dir = |suffix: &str| {
            std::fs::read_dir("/proc/self/fd")
                .unwrap()
                .filter_map(Result::ok)
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .filter(|t| t.starts_with(&pdir) && t.to_string_lossy().ends_with(suffix))
                .count()
        };
        assert!(
            log.segment_count() > 1,
            "rolled, so inactive segments exist"
        );
        assert_eq!(open_in_dir(".index"), 0);
        assert_eq!(open_in_dir(".timeindex"), 0);
        // One O_DIRECT descriptor per segment serves appends and reads.
        assert_eq!(open_in_dir(".log"), log.segment_count());
        log.close().await.unwrap();
    });
}

/// Recovery reads a segment in chunks (`RECOVERY_READ_CHUNK_BYTES`). When a
/// batch ends fewer than 12 bytes (a batch's length prefix) before a
/// chunk's end, the next batch's prefix is cut by the chunk, not damaged:
/// recovery must read on. It once truncated the segment there, dropping
/// acknowledged batches and every later segment, after any crash. Every
/// such remainder, 1 to 11 bytes, is tried.
#[test]
fn recovery_reads_past_a_batch_prefix_cut_by_its_read_chunk() {
    const CHUNK: u64 = pinlog::constants::RECOVERY_READ_CHUNK_BYTES as u64;
    const FILLER_VALUE: usize = 1000;
    let config = LogConfig {
        segment_bytes: 64 * 1024 * 1024,
        ..LogConfig::default()
    };
    // A one-record batch's size is a constant plus its value's length for
    // values of 64 to 8191 bytes (a two-byte varint).
    let overhead = producer_batch(1, FILLER_VALUE, 0).len() as u64 - FILLER_VALUE as u64;
    assert_eq!(
        producer_batch(1, 3000, 0).len() as u64,
        overhead + 3000,
        "batch sizes grow with the value"
    );
    for gap in 1..12u64 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let config = config.clone();
        run(move || async move {
            let tp = TopicPartition::new("chunks", 0);
            let mut log =
                PartitionLog::open(&path, tp.clone(), config.clone(), params(false), None)
                    .await
                    .unwrap();
            let target = CHUNK - gap;
            let filler = overhead + FILLER_VALUE as u64;
            while target - log.size_bytes() >= filler + 2000 + overhead {
                log.append_as_leader(producer_batch(1, FILLER_VALUE, 0), 1, None, 0)
                    .await
                    .unwrap();
            }
            let value = (target - log.size_bytes() - overhead) as usize;
            log.append_as_leader(producer_batch(1, value, 0), 1, None, 0)
                .await
                .unwrap();
            assert_eq!(
                log.size_bytes(),
                target,
                "a batch ends {gap} bytes before the chunk's end"
            );
            for _ in 0..5 {
                log.append_as_leader(producer_batch(1, FILLER_VALUE, 0), 1, None, 0)
                    .await
                    .unwrap();
            }
            let leo = log.log_end_offset();
            let before = log.read_all().await.unwrap();
            // A crash: no close, and the next open recovers everything.
            drop(log);
            let mut log = PartitionLog::open(&path, tp, config, params(false), None)
                .await
                .unwrap();
            let report = log.recovery_report();
            assert_eq!(report.segments_recovered, 1);
            // Only zeros past the data go: a direct-I/O write's padding and
            // the space allocated ahead of the writes.
            assert!(
                report.bytes_truncated
                    < pinlog::constants::DMA_ALIGNMENT
                        + pinlog::constants::SEGMENT_ALLOCATE_AHEAD_BYTES,
                "gap {gap}: {report:?}"
            );
            assert_eq!(log.log_end_offset(), leo, "gap {gap}");
            assert_eq!(log.read_all().await.unwrap(), before);
            log.close().await.unwrap();
        });
    }
}

/// A crash after a clean start recovers only the segments past the
/// recovery point. Opening the log once grew every sealed segment's index
/// files, and only a clean close trimmed them again; after a crash their
/// zero tails failed the sanity check, and every segment was recovered.
#[test]
fn a_crash_after_a_clean_start_recovers_only_past_the_recovery_point() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("sealed", 0);
        let mut log = PartitionLog::open(&path, tp.clone(), small_config(), params(false), None)
            .await
            .unwrap();
        for i in 0..600 {
            log.append_as_leader(producer_batch(1, 300, i), 1, None, 0)
                .await
                .unwrap();
        }
        let sealed = log.segment_count() - 1;
        assert!(sealed >= 2, "small segments roll: {sealed} sealed");
        log.close().await.unwrap();
        let mut log = PartitionLog::open(&path, tp.clone(), small_config(), params(true), None)
            .await
            .unwrap();
        let recovery_point = log.log_end_offset();
        log.append_as_leader(producer_batch(1, 300, 0), 1, None, 0)
            .await
            .unwrap();
        crash_and_recover_only_the_active_segment(log, &path, tp, recovery_point).await;
    });
}

/// Drops `log` without closing it (a crash), opens it again with
/// `recovery_point` checkpointed, and checks that only the active segment
/// was recovered and that every batch is still there.
async fn crash_and_recover_only_the_active_segment(
    mut log: PartitionLog,
    path: &std::path::Path,
    tp: TopicPartition,
    recovery_point: i64,
) {
    let before = log.read_all().await.unwrap();
    drop(log);
    let params = OpenParams {
        recovery_point,
        ..params(false)
    };
    let mut log = PartitionLog::open(path, tp, small_config(), params, None)
        .await
        .unwrap();
    assert_eq!(
        log.recovery_report().segments_recovered,
        1,
        "only the active segment holds offsets past the recovery point: {:?}",
        log.recovery_report()
    );
    assert_eq!(log.read_all().await.unwrap(), before);
    log.close().await.unwrap();
}

/// Bug 18 (tests/README.md): with the default flush settings a roll is
/// where bytes become durable, as Kafka's roll flushes up to the new
/// segment: every segment before the new one is fdatasync'ed before it
/// gets a byte, and the recovery point moves to its base. Before, nothing
/// moved the recovery point until a shutdown, so a crash rescanned every
/// segment written since the start, and a power loss could keep a new
/// segment's bytes while it took the tail of the one before (a hole in the
/// offsets that recovery cannot see).
#[test]
fn a_roll_makes_the_earlier_segments_durable_and_moves_the_recovery_point() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("rolls", 0);
        let mut log = PartitionLog::open(&path, tp.clone(), small_config(), params(false), None)
            .await
            .unwrap();
        let mut rolls = 0;
        for i in 0..600 {
            let before = log.segment_count();
            log.append_as_leader(producer_batch(1, 300, i), 1, None, 0)
                .await
                .unwrap();
            if log.segment_count() > before {
                rolls += 1;
                let active = *log.segment_base_offsets().last().unwrap();
                assert_eq!(
                    log.recovery_point(),
                    active,
                    "after roll {rolls}: everything before the new segment is durable"
                );
            }
        }
        assert!(rolls >= 2, "small segments roll: {rolls} rolls");
        // A crash with that recovery point checkpointed: only the active
        // segment is scanned.
        let recovery_point = log.recovery_point();
        crash_and_recover_only_the_active_segment(log, &path, tp, recovery_point).await;
    });
}

/// The length of segment `base`'s `.log` file in `dir` (a partition's).
fn log_file_len(dir: &std::path::Path, base: i64) -> u64 {
    let path = pinlog::log::segment::segment_file_path(dir, base, "log");
    std::fs::metadata(&path).expect("segment file").len()
}

/// Issue 33's appends that stay on the shard: the active segment's file is
/// grown ahead of its writes (zeros in its length, up to
/// `SEGMENT_ALLOCATE_AHEAD_BYTES` ahead), so that its O_DIRECT writes land inside
/// it. Appends of odd sizes cross the partial tail block again and again,
/// and each such write is split into that block and the blocks after it:
/// the file must still hold exactly the batches. A crash's recovery drops
/// the zeros and keeps every batch; a roll and a clean close cut each file
/// back to its batches, so that no sealed segment keeps the zeros.
#[test]
fn space_allocated_ahead_is_cut_at_roll_and_close_and_recovered_after_a_crash() {
    use pinlog::constants::SEGMENT_ALLOCATE_AHEAD_BYTES as AHEAD;
    use pinlog::constants::SEGMENT_ALLOCATE_AHEAD_MIN_BYTES as AHEAD_MIN;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("ahead", 0);
        let config = LogConfig {
            segment_bytes: 4 * AHEAD,
            ..LogConfig::default()
        };
        let pdir = path.join(tp.dir_name());
        let mut log = PartitionLog::open(&path, tp.clone(), config.clone(), params(false), None)
            .await
            .unwrap();
        // About 1.5 steps of odd-sized batches: 3,001 to 30,001 bytes of
        // values, so that almost every append starts inside a block.
        let mut i = 0i64;
        while log.size_bytes() < AHEAD * 3 / 2 {
            let value_len = 3_001 + (i as usize * 7_919) % 27_000;
            log.append_as_leader(producer_batch(3, value_len / 3, i), 1, None, 0)
                .await
                .unwrap();
            i += 1;
        }
        assert_eq!(log.segment_count(), 1, "no roll yet");
        let logical = log.size_bytes();
        let on_disk = log_file_len(&pdir, 0);
        assert_eq!(on_disk % AHEAD_MIN, 0, "grown in whole units: {on_disk}");
        assert!(
            on_disk > logical && on_disk - logical <= AHEAD + AHEAD_MIN,
            "allocated ahead of {logical} logical bytes, by at most a step: {on_disk}"
        );
        let file = std::fs::read(pinlog::log::segment::segment_file_path(&pdir, 0, "log")).unwrap();
        let before = log.read_all().await.unwrap();
        assert_eq!(
            batch::whole_batches_len(&file) as u64,
            logical,
            "the file's batches end at the logical size"
        );
        assert_eq!(
            &file[..logical as usize],
            &before[..],
            "the file holds the batches"
        );
        assert!(
            file[logical as usize..].iter().all(|&b| b == 0),
            "zeros after them"
        );

        // A crash: recovery keeps every batch and cuts the zeros.
        drop(log);
        let mut log = PartitionLog::open(&path, tp.clone(), config.clone(), params(false), None)
            .await
            .unwrap();
        assert_eq!(log.read_all().await.unwrap(), before);
        assert_eq!(log_file_len(&pdir, 0), logical, "recovery cut the zeros");

        // Appends go on after recovery, the file grows ahead again, and a
        // roll cuts the sealed segment back to its batches.
        for j in 0..20 {
            log.append_as_leader(producer_batch(3, 2_001, i + j), 1, None, 0)
                .await
                .unwrap();
        }
        assert!(
            log_file_len(&pdir, 0) > log.size_bytes(),
            "grown ahead again"
        );
        let sealed_size = log.size_bytes();
        let leo = log.log_end_offset();
        log.roll(leo, 0).await.unwrap();
        assert_eq!(
            log_file_len(&pdir, 0),
            sealed_size,
            "the roll cut the sealed segment"
        );
        log.append_as_leader(producer_batch(3, 2_001, 0), 1, None, 0)
            .await
            .unwrap();
        assert!(log_file_len(&pdir, leo) > log.size_bytes() - sealed_size);
        let all = log.read_all().await.unwrap();
        log.close().await.unwrap();
        assert_eq!(
            log_file_len(&pdir, leo),
            all.len() as u64 - sealed_size,
            "the close cut the active segment"
        );
        let mut log = PartitionLog::open(&path, tp, config, params(true), None)
            .await
            .unwrap();
        assert_eq!(log.read_all().await.unwrap(), all);
    });
}

/// Kafka's `preallocate`: a new segment's file is `segment.bytes` long from
/// the start (zeros until written, as Kafka's `setLength`); a crash's
/// recovery stops at the zeros and keeps every batch, and a clean close
/// cuts the file back to them.
#[test]
fn preallocate_makes_the_file_segment_bytes_long_until_it_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new("prealloc", 0);
        let config = LogConfig {
            segment_bytes: 4 * 1024 * 1024,
            preallocate: true,
            ..LogConfig::default()
        };
        let pdir = path.join(tp.dir_name());
        let mut log = PartitionLog::open(&path, tp.clone(), config.clone(), params(false), None)
            .await
            .unwrap();
        for i in 0..50 {
            log.append_as_leader(producer_batch(2, 1_500, i), 1, None, 0)
                .await
                .unwrap();
        }
        assert_eq!(log_file_len(&pdir, 0), config.segment_bytes);
        let before = log.read_all().await.unwrap();
        drop(log);
        let mut log = PartitionLog::open(&path, tp.clone(), config.clone(), params(false), None)
            .await
            .unwrap();
        assert_eq!(
            log.read_all().await.unwrap(),
            before,
            "recovery kept every batch"
        );
        assert_eq!(
            log_file_len(&pdir, 0),
            before.len() as u64,
            "and cut the zeros"
        );
        log.append_as_leader(producer_batch(2, 1_500, 50), 1, None, 0)
            .await
            .unwrap();
        let all = log.read_all().await.unwrap();
        log.close().await.unwrap();
        assert_eq!(
            log_file_len(&pdir, 0),
            all.len() as u64,
            "the close cut the file"
        );
    });
}
