//! Idempotent-producer state of a partition log against real files:
//! duplicate detection, sequence and epoch checks, snapshots, recovery and
//! truncation.

use std::path::{Path, PathBuf};

use crate::common::{producer_batch, run};
use bytes::BytesMut;
use pinlog::config::LogConfig;
use pinlog::error::{BatchError, LogError};
use pinlog::log::batch;
use pinlog::log::partition_log::{
    AppendInfo, AppendOrigin, LeaderAppend, OpenParams, PartitionLog,
};
use pinlog::log::producer_state::{
    snapshot_path, EXPIRATION_CHECK_INTERVAL_MS, NO_SEQUENCE, SNAPSHOTS_RETAINED_MAX,
};
use pinlog::topic_partition::TopicPartition;

/// Where the producer fields lie in a RecordBatch v2 header (Kafka's
/// `DefaultRecordBatch`); all three are covered by the CRC at byte 17.
const CRC_AT: usize = 17;
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const BASE_SEQUENCE_AT: usize = 53;

const PID: i64 = 4242;
const OTHER_PID: i64 = 77;
const NOW_MS: i64 = 1_000;

fn params(clean: bool) -> OpenParams {
    OpenParams {
        recovery_point: 0,
        log_start_offset: 0,
        clean_shutdown: clean,
        now_ms: NOW_MS,
    }
}

fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 16 * 1024,
        index_interval_bytes: 1024,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    }
}

/// A batch of `n` records from an idempotent producer: a plain test batch
/// with the producer fields patched in and the CRC recomputed.
fn idempotent_batch(producer_id: i64, epoch: i16, base_sequence: i32, n: usize) -> BytesMut {
    let mut b = producer_batch(n, 200, NOW_MS);
    b[PRODUCER_ID_AT..PRODUCER_ID_AT + 8].copy_from_slice(&producer_id.to_be_bytes());
    b[PRODUCER_EPOCH_AT..PRODUCER_EPOCH_AT + 2].copy_from_slice(&epoch.to_be_bytes());
    b[BASE_SEQUENCE_AT..BASE_SEQUENCE_AT + 4].copy_from_slice(&base_sequence.to_be_bytes());
    let crc = batch::compute_crc(&b);
    b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

async fn open(path: &Path, config: LogConfig, clean: bool) -> PartitionLog {
    PartitionLog::open(
        path,
        TopicPartition::new("idem", 0),
        config,
        params(clean),
        None,
    )
    .await
    .expect("open partition log")
}

async fn append(
    log: &mut PartitionLog,
    producer_id: i64,
    epoch: i16,
    seq: i32,
    n: usize,
) -> Result<AppendInfo, LogError> {
    log.append_as_leader(
        idempotent_batch(producer_id, epoch, seq, n),
        0,
        None,
        NOW_MS,
    )
    .await
}

/// Offsets of the snapshot files in a partition directory, ascending.
fn snapshot_files(dir: &Path) -> Vec<i64> {
    let mut offsets: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".snapshot")?.parse().ok()
        })
        .collect();
    offsets.sort_unstable();
    offsets
}

fn partition_dir(root: &Path) -> PathBuf {
    root.join(TopicPartition::new("idem", 0).dir_name())
}

#[test]
fn a_retried_batch_returns_its_original_offsets_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, small_config(), false).await;
        let first = append(&mut log, PID, 0, 0, 5).await.unwrap();
        assert_eq!((first.first_offset, first.last_offset), (0, 4));
        assert!(!first.duplicate);
        // A producer without idempotence in between is never checked.
        log.append_as_leader(producer_batch(3, 10, NOW_MS), 0, None, NOW_MS)
            .await
            .unwrap();
        let second = append(&mut log, PID, 0, 5, 2).await.unwrap();
        assert_eq!((second.first_offset, second.last_offset), (8, 9));

        let leo = log.log_end_offset();
        let size = log.size_bytes();
        let bytes = log.read_all().await.unwrap();
        for (seq, n, original) in [(0, 5, first), (5, 2, second)] {
            let retry = append(&mut log, PID, 0, seq, n).await.unwrap();
            assert!(retry.duplicate);
            assert_eq!(retry.first_offset, original.first_offset);
            assert_eq!(retry.last_offset, original.last_offset);
            assert_eq!(retry.max_timestamp, original.max_timestamp);
            assert_eq!((retry.batch_count, retry.size_bytes), (0, 0));
        }
        assert_eq!(log.log_end_offset(), leo);
        assert_eq!(log.size_bytes(), size);
        assert_eq!(log.read_all().await.unwrap(), bytes);
        // The producer carries on where it was.
        let next = append(&mut log, PID, 0, 7, 1).await.unwrap();
        assert_eq!(next.first_offset, leo);
        log.close().await.unwrap();
    });
}

#[test]
fn sequence_gaps_and_fenced_epochs_are_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, small_config(), false).await;
        append(&mut log, PID, 3, 0, 4).await.unwrap();
        let leo = log.log_end_offset();

        match append(&mut log, PID, 3, 5, 1).await {
            Err(LogError::OutOfOrderSequence {
                producer_id: PID,
                producer_epoch: 3,
                first_sequence: 5,
                expected_sequence: 4,
                ..
            }) => {}
            other => panic!("expected an out-of-order sequence, got {other:?}"),
        }
        match append(&mut log, PID, 2, 4, 1).await {
            Err(
                e @ LogError::InvalidProducerEpoch {
                    producer_epoch: 2,
                    current_epoch: 3,
                    ..
                },
            ) => assert!(e.to_string().contains("fenced"), "{e}"),
            other => panic!("expected an invalid epoch, got {other:?}"),
        }
        // A new epoch must restart at sequence 0.
        assert!(matches!(
            append(&mut log, PID, 4, 4, 1).await,
            Err(LogError::OutOfOrderSequence {
                expected_sequence: 0,
                ..
            })
        ));
        // A batch with a producer id but no sequence is malformed.
        assert!(matches!(
            append(&mut log, PID, 3, -1, 1).await,
            Err(LogError::InvalidBatch {
                source: BatchError::InvalidSequence { .. },
                ..
            })
        ));
        // One bad batch refuses a multi-batch append whole.
        let mut two = idempotent_batch(PID, 3, 4, 1);
        two.extend_from_slice(&idempotent_batch(PID, 3, 9, 1));
        assert!(matches!(
            log.append_as_leader(two, 0, None, NOW_MS).await,
            Err(LogError::OutOfOrderSequence { .. })
        ));
        assert_eq!(log.log_end_offset(), leo, "refused appends write nothing");

        // A bumped epoch starting at 0 is accepted, and fences the old one.
        let bumped = append(&mut log, PID, 4, 0, 2).await.unwrap();
        assert_eq!(bumped.first_offset, leo);
        assert!(matches!(
            append(&mut log, PID, 3, 4, 1).await,
            Err(LogError::InvalidProducerEpoch { .. })
        ));
        // An unknown producer may start at any sequence, as in Kafka.
        append(&mut log, OTHER_PID, 0, 1234, 1).await.unwrap();
        // Several producers' batches in one append, all in sequence.
        let mut mixed = idempotent_batch(PID, 4, 2, 1);
        mixed.extend_from_slice(&idempotent_batch(OTHER_PID, 0, 1235, 2));
        mixed.extend_from_slice(&idempotent_batch(PID, 4, 3, 1));
        let info = log.append_as_leader(mixed, 0, None, NOW_MS).await.unwrap();
        assert_eq!(info.batch_count, 3);
        assert_eq!(log.producer_state().entry(PID).unwrap().last_seq(), 3);
        assert_eq!(
            log.producer_state().entry(OTHER_PID).unwrap().last_seq(),
            1236
        );
        // A retried batch mixed with a new one has no single answer.
        let mut retry_and_new = idempotent_batch(PID, 4, 3, 1);
        retry_and_new.extend_from_slice(&idempotent_batch(PID, 4, 4, 1));
        assert!(matches!(
            log.append_as_leader(retry_and_new, 0, None, NOW_MS).await,
            Err(LogError::MixedDuplicateAppend { duplicates: 1, .. })
        ));
        log.close().await.unwrap();
    });
}

#[test]
fn follower_appends_update_the_state_without_checks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, small_config(), false).await;
        let mut offset = 0;
        // A gap and an old epoch: the leader already decided.
        for (epoch, seq) in [(2, 0), (2, 10), (1, 0)] {
            let mut b = idempotent_batch(PID, epoch, seq, 2);
            batch::set_base_offset(&mut b, offset);
            log.append_as_follower(b.freeze(), NOW_MS).await.unwrap();
            offset += 2;
        }
        let entry = log.producer_state().entry(PID).unwrap();
        assert_eq!(entry.producer_epoch, 1);
        assert_eq!(entry.last_seq(), 1);
        log.close().await.unwrap();
    });
}

#[test]
fn state_survives_a_clean_restart_through_the_close_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, small_config(), false).await;
        append(&mut log, PID, 1, 0, 3).await.unwrap();
        append(&mut log, OTHER_PID, 0, 0, 1).await.unwrap();
        let last = append(&mut log, PID, 1, 3, 3).await.unwrap();
        let leo = log.log_end_offset();
        log.close().await.unwrap();
        assert_eq!(snapshot_files(&partition_dir(&path)), vec![leo]);

        let mut log = open(&path, small_config(), true).await;
        assert_eq!(log.producer_state().producer_count(), 2);
        let retry = append(&mut log, PID, 1, 3, 3).await.unwrap();
        assert!(retry.duplicate);
        assert_eq!(
            (retry.first_offset, retry.last_offset),
            (last.first_offset, last.last_offset)
        );
        assert!(matches!(
            append(&mut log, PID, 1, 7, 1).await,
            Err(LogError::OutOfOrderSequence {
                expected_sequence: 6,
                ..
            })
        ));
        assert!(matches!(
            append(&mut log, PID, 0, 6, 1).await,
            Err(LogError::InvalidProducerEpoch { .. })
        ));
        append(&mut log, PID, 1, 6, 1).await.unwrap();
        append(&mut log, OTHER_PID, 0, 1, 1).await.unwrap();
        log.close().await.unwrap();
    });
}

/// A producer keeps up to 5 requests in flight (librdkafka's and the Java
/// client's default), and after a broker restart it may retry any of
/// them. Kafka's snapshot keeps only each producer's last batch, so it
/// answers the older retries OUT_OF_ORDER_SEQUENCE_NUMBER, which
/// librdkafka's idempotent producer treats as fatal (seen in
/// `tests/faults.rs`, a rolling restart right after a partition's leader
/// was cut off from its followers). pinlog's snapshot keeps all five.
#[test]
fn the_last_five_batches_are_retries_after_a_clean_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, small_config(), false).await;
        let mut written = Vec::new();
        for i in 0..7 {
            written.push(append(&mut log, PID, 0, i * 2, 2).await.unwrap());
            append(&mut log, OTHER_PID, 0, i, 1).await.unwrap();
        }
        let leo = log.log_end_offset();
        log.close().await.unwrap();
        assert_eq!(snapshot_files(&partition_dir(&path)), vec![leo]);

        let mut log = open(&path, small_config(), true).await;
        for (i, original) in written.iter().enumerate().skip(2) {
            let retry = append(&mut log, PID, 0, i as i32 * 2, 2).await.unwrap();
            assert!(retry.duplicate, "batch {i} is a retry");
            assert_eq!(
                (retry.first_offset, retry.last_offset),
                (original.first_offset, original.last_offset)
            );
        }
        // Older than the five retained: as Kafka, out of order.
        assert!(matches!(
            append(&mut log, PID, 0, 2, 2).await,
            Err(LogError::OutOfOrderSequence {
                expected_sequence: 14,
                ..
            })
        ));
        assert_eq!(log.log_end_offset(), leo);
        append(&mut log, PID, 0, 14, 1).await.unwrap();
        log.close().await.unwrap();
    });
}

#[test]
fn state_survives_a_crash_through_roll_snapshots_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, small_config(), false).await;
        let mut seq = 0;
        let mut other_seq = 0;
        let mut last = None;
        // Roll 16 KiB segments twice, then add batches after the last roll
        // that only a replay can recover.
        let mut i = 0;
        let mut after_roll = 0;
        while after_roll < 6 {
            if log.segment_count() >= 3 {
                after_roll += 1;
            }
            if i % 3 == 0 {
                append(&mut log, OTHER_PID, 0, other_seq, 1).await.unwrap();
                other_seq += 1;
            }
            last = Some(append(&mut log, PID, 0, seq, 2).await.unwrap());
            seq += 2;
            i += 1;
        }
        let last = last.unwrap();
        assert!(log.segment_count() > 2, "segments must roll");
        let bases = log.segment_base_offsets();
        let snapshots = snapshot_files(&partition_dir(&path));
        assert_eq!(snapshots, bases[1..].to_vec(), "one snapshot per roll");
        let leo = log.log_end_offset();
        assert!(last.first_offset >= *bases.last().unwrap());
        // Crash: no close, no flush, no snapshot at the LEO.
        drop(log);

        let mut log = open(&path, small_config(), false).await;
        assert_eq!(log.log_end_offset(), leo);
        let entry = log.producer_state().entry(PID).unwrap();
        assert_eq!(entry.last_seq(), seq - 1);
        // Replayed batches keep up to five per producer.
        assert_eq!(entry.batches().count(), 5);
        let retry = append(&mut log, PID, 0, seq - 2, 2).await.unwrap();
        assert!(retry.duplicate);
        assert_eq!(retry.first_offset, last.first_offset);
        assert_eq!(log.log_end_offset(), leo);
        append(&mut log, PID, 0, seq, 1).await.unwrap();
        append(&mut log, OTHER_PID, 0, other_seq, 1).await.unwrap();
        drop(log);

        // Without any snapshot the whole log is replayed.
        for offset in snapshot_files(&partition_dir(&path)) {
            std::fs::remove_file(snapshot_path(&partition_dir(&path), offset)).unwrap();
        }
        let mut log = open(&path, small_config(), false).await;
        assert_eq!(log.producer_state().entry(PID).unwrap().last_seq(), seq);
        assert!(
            append(&mut log, PID, 0, seq, 1).await.unwrap().duplicate,
            "the batch appended after the first crash is still known"
        );
        log.close().await.unwrap();
    });
}

#[test]
fn corrupt_and_too_new_snapshots_are_deleted_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let pdir = partition_dir(&path);
        let mut log = open(&path, small_config(), false).await;
        let mut seq = 0;
        while log.segment_count() < 4 {
            append(&mut log, PID, 0, seq, 2).await.unwrap();
            seq += 2;
        }
        append(&mut log, PID, 0, seq, 2).await.unwrap();
        seq += 2;
        let leo = log.log_end_offset();
        drop(log);
        let snapshots = snapshot_files(&pdir);
        let newest = *snapshots.last().unwrap();
        // A torn newest snapshot, and one from a future the log lost.
        let good = std::fs::read(snapshot_path(&pdir, newest)).unwrap();
        std::fs::write(snapshot_path(&pdir, newest), &good[..good.len() - 3]).unwrap();
        std::fs::write(snapshot_path(&pdir, leo + 100), &good).unwrap();

        // Opened as after a clean shutdown: recovering a segment would
        // replay from a snapshot at or below its base instead (it rebuilds
        // the segment's transaction index), never reading the newest one.
        let mut log = open(&path, small_config(), true).await;
        let left = snapshot_files(&pdir);
        assert!(!left.contains(&newest), "the corrupt snapshot is deleted");
        assert!(
            !left.contains(&(leo + 100)),
            "the too-new snapshot is deleted"
        );
        assert_eq!(left, snapshots[..snapshots.len() - 1].to_vec());
        // The older snapshot and a longer replay give the same state.
        assert_eq!(log.producer_state().entry(PID).unwrap().last_seq(), seq - 1);
        assert!(
            append(&mut log, PID, 0, seq - 2, 2)
                .await
                .unwrap()
                .duplicate
        );
        log.close().await.unwrap();
    });
}

#[test]
fn truncation_forgets_the_truncated_batches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let pdir = partition_dir(&path);
        let mut log = open(&path, small_config(), false).await;
        let mut infos = Vec::new();
        let mut seq = 0;
        while log.segment_count() < 4 {
            infos.push((seq, append(&mut log, PID, 0, seq, 2).await.unwrap()));
            seq += 2;
        }
        infos.push((seq, append(&mut log, PID, 0, seq, 2).await.unwrap()));
        let bases = log.segment_base_offsets();
        // Truncate into the second segment: the snapshots of the later ones
        // go, and the state is rebuilt from the one below.
        let (cut_seq, cut) = *infos
            .iter()
            .find(|(_, info)| info.first_offset > bases[1] + 4)
            .unwrap();
        log.truncate_to(cut.first_offset, NOW_MS).await.unwrap();
        assert_eq!(log.log_end_offset(), cut.first_offset);
        assert!(snapshot_files(&pdir).iter().all(|o| *o <= cut.first_offset));
        let entry = log.producer_state().entry(PID).unwrap();
        assert_eq!(entry.last_seq(), cut_seq - 1);
        // The truncated batch is no duplicate now: it is appended afresh.
        let again = append(&mut log, PID, 0, cut_seq, 2).await.unwrap();
        assert!(!again.duplicate);
        assert_eq!(again.first_offset, cut.first_offset);
        // The batch before the cut is still known.
        assert!(
            append(&mut log, PID, 0, cut_seq - 2, 2)
                .await
                .unwrap()
                .duplicate
        );

        // Truncating everything forgets every producer and snapshot.
        log.truncate_fully_and_start_at(500, NOW_MS).await.unwrap();
        assert!(log.producer_state().is_empty());
        assert!(snapshot_files(&pdir).is_empty());
        // The producer is unknown again, so any sequence is accepted.
        append(&mut log, PID, 0, 99, 1).await.unwrap();
        log.close().await.unwrap();
        let log = open(&path, small_config(), true).await;
        assert_eq!(log.producer_state().entry(PID).unwrap().last_seq(), 99);
        log.close().await.unwrap();
    });
}

#[test]
fn snapshots_follow_rolls_and_are_deleted_with_their_segments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let pdir = partition_dir(&path);
        let mut log = open(&path, small_config(), false).await;
        let mut seq = 0;
        while log.segment_count() < SNAPSHOTS_RETAINED_MAX + 4 {
            append(&mut log, PID, 0, seq, 2).await.unwrap();
            seq += 2;
        }
        let bases = log.segment_base_offsets();
        let snapshots = snapshot_files(&pdir);
        assert_eq!(snapshots.len(), SNAPSHOTS_RETAINED_MAX, "bounded");
        assert_eq!(
            snapshots,
            bases[bases.len() - SNAPSHOTS_RETAINED_MAX..].to_vec(),
            "the newest segments keep theirs"
        );
        assert_eq!(log.producer_state().snapshot_offsets(), snapshots);

        // Retention deletes old segments and their snapshots with them.
        let mut config = log.config().clone();
        config.retention_bytes = 3 * 16 * 1024;
        log.set_config(config);
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        assert!(log.apply_retention(NOW_MS).await.unwrap() > 0);
        let first = log.segment_base_offsets()[0];
        let left = snapshot_files(&pdir);
        assert!(!left.is_empty());
        assert!(left.iter().all(|o| *o >= first), "{left:?} below {first}");

        // DeleteRecords past a segment deletes it and its snapshot.
        let second = log.segment_base_offsets()[1];
        log.delete_records_before(second).await.unwrap();
        assert!(snapshot_files(&pdir).iter().all(|o| *o >= second));
        assert!(
            append(&mut log, PID, 0, seq - 2, 2)
                .await
                .unwrap()
                .duplicate
        );
        log.close().await.unwrap();
    });
}

#[test]
fn idle_producers_expire_lazily() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, small_config(), false).await;
        log.set_producer_id_expiration_ms(60_000);
        append(&mut log, PID, 0, 0, 1).await.unwrap();
        assert_eq!(log.producer_state().producer_count(), 1);
        // Long after the producer's last timestamp (NOW_MS), an append of
        // another batch triggers the check and the producer is forgotten.
        let later = NOW_MS + EXPIRATION_CHECK_INTERVAL_MS;
        log.append_as_leader(producer_batch(1, 10, later), 0, None, later)
            .await
            .unwrap();
        assert!(log.producer_state().entry(PID).is_none());
        // Being unknown, it may continue at any sequence.
        append(&mut log, PID, 0, 50, 1).await.unwrap();
        assert_ne!(
            log.producer_state().entry(PID).unwrap().last_seq(),
            NO_SEQUENCE
        );
        log.close().await.unwrap();
    });
}

fn request(producer_id: i64, epoch: i16, seq: i32, n: usize) -> LeaderAppend {
    LeaderAppend {
        batches: idempotent_batch(producer_id, epoch, seq, n).into(),
        log_append_time_ms: None,
        origin: AppendOrigin::Client,
        verification: Default::default(),
    }
}

#[test]
fn a_group_commit_checks_each_request_against_the_ones_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&path, small_config(), false).await;
        let results = log
            .append_many_as_leader(
                vec![
                    request(PID, 0, 0, 2),
                    // Continues the first request of the group.
                    request(PID, 0, 2, 2),
                    // A gap after the second: refused alone.
                    request(PID, 0, 10, 1),
                    // A retry of the first, answered with its offsets.
                    request(PID, 0, 0, 2),
                    request(OTHER_PID, 0, 0, 1),
                    // A fenced epoch after the group bumped nothing: fine
                    // for a new epoch, which starts at sequence 0.
                    request(PID, 1, 0, 1),
                ],
                0,
                NOW_MS,
            )
            .await;
        let spans: Vec<Result<(i64, i64, bool), String>> = results
            .into_iter()
            .map(|r| {
                r.map(|i| (i.first_offset, i.last_offset, i.duplicate))
                    .map_err(|e| format!("{e:?}"))
            })
            .collect();
        assert_eq!(spans[0], Ok((0, 1, false)));
        assert_eq!(spans[1], Ok((2, 3, false)));
        assert!(
            spans[2]
                .as_ref()
                .is_err_and(|e| e.contains("OutOfOrderSequence")),
            "{:?}",
            spans[2]
        );
        assert_eq!(spans[3], Ok((0, 1, true)));
        assert_eq!(spans[4], Ok((4, 4, false)));
        assert_eq!(spans[5], Ok((5, 5, false)));
        assert_eq!(log.log_end_offset(), 6);
        // An older epoch after the group's bump is fenced.
        assert!(matches!(
            append(&mut log, PID, 0, 4, 1).await,
            Err(LogError::InvalidProducerEpoch { .. })
        ));
        // Crash: the state comes back from the log alone.
        drop(log);
        let mut log = open(&path, small_config(), false).await;
        assert_eq!(log.log_end_offset(), 6);
        assert_eq!(log.producer_state().entry(PID).unwrap().last_seq(), 0);
        assert_eq!(log.producer_state().entry(OTHER_PID).unwrap().last_seq(), 0);
        assert!(append(&mut log, PID, 1, 0, 1).await.unwrap().duplicate);
        log.close().await.unwrap();
    });
}

#[test]
fn a_group_commit_rolls_where_single_appends_would_and_snapshots_the_same_state() {
    let grouped_dir = tempfile::tempdir().unwrap();
    let single_dir = tempfile::tempdir().unwrap();
    let (grouped_path, single_path) = (
        grouped_dir.path().to_path_buf(),
        single_dir.path().to_path_buf(),
    );
    run(move || async move {
        // About 4.4 KiB per request into 16 KiB segments: the group of 12
        // must roll three times, and each roll's producer snapshot must hold
        // only the requests before it.
        let requests = || -> Vec<LeaderAppend> {
            (0..12)
                .map(|i| {
                    let pid = if i % 3 == 0 { OTHER_PID } else { PID };
                    let seq = if pid == OTHER_PID {
                        i / 3 * 20
                    } else {
                        (i - i / 3 - 1) * 20
                    };
                    request(pid, 0, seq, 20)
                })
                .collect()
        };
        let mut grouped = open(&grouped_path, small_config(), false).await;
        let results = grouped.append_many_as_leader(requests(), 0, NOW_MS).await;
        assert!(results
            .iter()
            .all(|r| r.as_ref().is_ok_and(|i| !i.duplicate)));
        let mut single = open(&single_path, small_config(), false).await;
        for r in requests() {
            single
                .append_as_leader(r.batches, 0, None, NOW_MS)
                .await
                .unwrap();
        }
        assert!(grouped.segment_count() >= 3, "16 KiB segments must roll");
        assert_eq!(
            grouped.segment_base_offsets(),
            single.segment_base_offsets()
        );
        assert_eq!(grouped.log_end_offset(), single.log_end_offset());
        let snapshots = snapshot_files(&partition_dir(&grouped_path));
        assert_eq!(snapshots, snapshot_files(&partition_dir(&single_path)));
        for offset in &snapshots {
            let a = std::fs::read(snapshot_path(&partition_dir(&grouped_path), *offset)).unwrap();
            let b = std::fs::read(snapshot_path(&partition_dir(&single_path), *offset)).unwrap();
            assert_eq!(a, b, "snapshot at {offset} differs");
        }
        assert_eq!(
            grouped.read_all().await.unwrap(),
            single.read_all().await.unwrap()
        );
        // Crash and recover: each producer's last request is known as
        // written (a snapshot keeps one batch per producer, as Kafka's).
        drop(grouped);
        let mut grouped = open(&grouped_path, small_config(), false).await;
        let all = requests();
        for last in [&all[9], &all[11]] {
            let info = grouped
                .append_as_leader(BytesMut::from(&last.batches[..]), 0, None, NOW_MS)
                .await
                .unwrap();
            assert!(info.duplicate);
        }
        grouped.close().await.unwrap();
        single.close().await.unwrap();
    });
}
