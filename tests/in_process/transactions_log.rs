//! The partition side of transactions against real files: the LSO, the
//! markers the leader checks and appends, the `.txnindex` of aborted
//! transactions, and how all three survive restarts, crashes (a torn or
//! missing index is rebuilt), truncation and replication to a follower.

use std::path::{Path, PathBuf};

use crate::common::{producer_batch, run};
use bytes::{Bytes, BytesMut};
use pinlog::config::LogConfig;
use pinlog::error::LogError;
use pinlog::log::batch;
use pinlog::log::control_batch::MarkerSpec;
use pinlog::log::partition_log::{AppendInfo, OpenParams, PartitionLog};
use pinlog::log::transaction_index::{decode_entries, TXN_INDEX_ENTRY_BYTES};
use pinlog::topic_partition::TopicPartition;
use pinlog::transaction::marker::{MarkerKind, TxnMarker};
use pinlog::transaction::partition::AbortedTxn;

const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const BASE_SEQUENCE_AT: usize = 53;
/// Kafka's transactional attribute bit.
const TRANSACTIONAL: i16 = 0x10;

const NOW_MS: i64 = 1_000;
const LEADER_EPOCH: i32 = 0;
/// Transaction versions: 1 (KIP-98's markers) and 2 (KIP-890's bumped
/// epoch on every marker).
const TV1: i16 = 1;
const TV2: i16 = 2;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 16 * 1024,
        index_interval_bytes: 1024,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    }
}

async fn open(root: &Path, name: &str, clean: bool) -> PartitionLog {
    PartitionLog::open(
        root,
        TopicPartition::new(name, 0),
        config(),
        OpenParams {
            recovery_point: 0,
            log_start_offset: 0,
            clean_shutdown: clean,
            now_ms: NOW_MS,
        },
        None,
    )
    .await
    .expect("open partition log")
}

fn partition_dir(root: &Path, name: &str) -> PathBuf {
    root.join(TopicPartition::new(name, 0).dir_name())
}

/// A producer's batch of `n` records; transactional when `txn`.
fn producer_batch_of(pid: i64, epoch: i16, seq: i32, n: usize, txn: bool) -> BytesMut {
    let mut b = producer_batch(n, 100, NOW_MS);
    b[PRODUCER_ID_AT..PRODUCER_ID_AT + 8].copy_from_slice(&pid.to_be_bytes());
    b[PRODUCER_EPOCH_AT..PRODUCER_EPOCH_AT + 2].copy_from_slice(&epoch.to_be_bytes());
    b[BASE_SEQUENCE_AT..BASE_SEQUENCE_AT + 4].copy_from_slice(&seq.to_be_bytes());
    if txn {
        let attributes =
            i16::from_be_bytes([b[ATTRIBUTES_AT], b[ATTRIBUTES_AT + 1]]) | TRANSACTIONAL;
        b[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    }
    let crc = batch::compute_crc(&b);
    b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

async fn send(
    log: &mut PartitionLog,
    pid: i64,
    epoch: i16,
    seq: i32,
    n: usize,
    txn: bool,
) -> Result<AppendInfo, LogError> {
    log.append_as_leader(
        producer_batch_of(pid, epoch, seq, n, txn),
        LEADER_EPOCH,
        None,
        NOW_MS,
    )
    .await
}

fn marker(pid: i64, epoch: i16, kind: MarkerKind, coordinator_epoch: i32) -> MarkerSpec {
    MarkerSpec {
        producer_id: pid,
        producer_epoch: epoch,
        marker: TxnMarker {
            kind,
            coordinator_epoch,
        },
        timestamp_ms: NOW_MS,
    }
}

async fn end_txn(
    log: &mut PartitionLog,
    spec: MarkerSpec,
    transaction_version: i16,
) -> Result<AppendInfo, LogError> {
    log.append_markers_as_leader(&[spec], transaction_version, LEADER_EPOCH, NOW_MS)
        .await
        .pop()
        .expect("one result")
}

/// The `.txnindex` files of a partition, by base offset, decoded.
fn txn_index_files(dir: &Path) -> Vec<(i64, Vec<AbortedTxn>)> {
    let mut files: Vec<(i64, Vec<AbortedTxn>)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            let base: i64 = name.strip_suffix(".txnindex")?.parse().ok()?;
            Some((
                base,
                decode_entries(&std::fs::read(e.path()).unwrap()).unwrap(),
            ))
        })
        .collect();
    files.sort_by_key(|(b, _)| *b);
    files
}

#[test]
fn the_lso_holds_at_an_open_transaction_until_its_marker_is_replicated() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&root, "lso", true).await;
        send(&mut log, 1, 0, 0, 2, false).await.unwrap(); // 0..=1, idempotent
        let txn = send(&mut log, 2, 0, 0, 3, true).await.unwrap(); // 2..=4
        assert_eq!(txn.first_offset, 2);
        send(&mut log, 1, 0, 2, 2, false).await.unwrap(); // 5..=6
        log.set_high_watermark(log.log_end_offset());
        assert_eq!(log.high_watermark(), 7);
        assert_eq!(log.last_stable_offset(), 2, "the open transaction at 2");

        let commit = end_txn(&mut log, marker(2, 0, MarkerKind::Commit, 0), TV1)
            .await
            .unwrap();
        assert_eq!(commit.first_offset, 7);
        assert_eq!(log.last_stable_offset(), 2, "marker 7 not yet replicated");
        log.set_high_watermark(7);
        assert_eq!(log.last_stable_offset(), 2, "the HW is at the marker");
        log.set_high_watermark(8);
        assert_eq!(log.last_stable_offset(), 8);
        assert!(
            txn_index_files(&partition_dir(&root, "lso")).is_empty(),
            "a commit writes no index entry"
        );
        log.close().await.unwrap();
    });
}

#[test]
fn an_abort_is_indexed_in_kafkas_format_and_listed_for_overlapping_reads() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&root, "abort", true).await;
        send(&mut log, 1, 0, 0, 2, true).await.unwrap(); // 0..=1
        send(&mut log, 2, 0, 0, 2, true).await.unwrap(); // 2..=3
        let abort = end_txn(&mut log, marker(1, 0, MarkerKind::Abort, 3), TV1)
            .await
            .unwrap();
        assert_eq!(abort.first_offset, 4);
        end_txn(&mut log, marker(2, 0, MarkerKind::Abort, 3), TV1)
            .await
            .unwrap(); // 5
        log.set_high_watermark(log.log_end_offset());
        assert_eq!(log.last_stable_offset(), 6);

        let expected = vec![
            AbortedTxn {
                producer_id: 1,
                first_offset: 0,
                last_offset: 4,
                // Producer 2's transaction was still open.
                last_stable_offset: 2,
            },
            AbortedTxn {
                producer_id: 2,
                first_offset: 2,
                last_offset: 5,
                last_stable_offset: 6,
            },
        ];
        let files = txn_index_files(&partition_dir(&root, "abort"));
        assert_eq!(files, vec![(0, expected.clone())]);
        let bytes =
            std::fs::read(partition_dir(&root, "abort").join("00000000000000000000.txnindex"))
                .unwrap();
        assert_eq!(bytes.len(), 2 * TXN_INDEX_ENTRY_BYTES);

        assert_eq!(log.aborted_txns(0, 6), expected);
        assert_eq!(
            log.aborted_txns(5, 6),
            vec![expected[1]],
            "producer 1's ended at 4"
        );
        assert_eq!(
            log.aborted_txns(0, 1),
            vec![expected[0]],
            "producer 2's starts at 2"
        );
        log.close().await.unwrap();
    });
}

#[test]
fn the_leader_refuses_plain_writes_inside_a_transaction_and_stale_markers() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&root, "checks", true).await;
        send(&mut log, 1, 3, 0, 1, true).await.unwrap();
        let plain = send(&mut log, 1, 3, 1, 1, false).await;
        assert!(
            matches!(plain, Err(LogError::InvalidTxnState { producer_id: 1, .. })),
            "{plain:?}"
        );
        // A marker from a fenced producer epoch, then from an old coordinator.
        let stale = end_txn(&mut log, marker(1, 2, MarkerKind::Commit, 5), TV1).await;
        assert!(
            matches!(stale, Err(LogError::InvalidProducerEpoch { .. })),
            "{stale:?}"
        );
        end_txn(&mut log, marker(1, 3, MarkerKind::Commit, 5), TV1)
            .await
            .unwrap();
        send(&mut log, 1, 3, 1, 1, true).await.unwrap();
        let old_coordinator = end_txn(&mut log, marker(1, 3, MarkerKind::Abort, 4), TV1).await;
        assert!(
            matches!(
                old_coordinator,
                Err(LogError::TransactionCoordinatorFenced {
                    coordinator_epoch: 4,
                    current_coordinator_epoch: 5,
                    ..
                })
            ),
            "{old_coordinator:?}"
        );
        // Under transaction version 2 every marker bumps the epoch: one at
        // the producer's current epoch is a delayed one (KAFKA-17754).
        let delayed = end_txn(&mut log, marker(1, 3, MarkerKind::Abort, 5), TV2).await;
        assert!(
            matches!(delayed, Err(LogError::InvalidProducerEpoch { .. })),
            "{delayed:?}"
        );
        end_txn(&mut log, marker(1, 4, MarkerKind::Abort, 5), TV2)
            .await
            .unwrap();
        // Producers may not write control batches.
        let mut forged = BytesMut::from(
            &pinlog::log::control_batch::build_marker_batch(&marker(1, 4, MarkerKind::Commit, 9))[..],
        );
        let refused = log.append_as_leader(forged.split(), 0, None, NOW_MS).await;
        assert!(
            matches!(refused, Err(LogError::InvalidBatch { .. })),
            "{refused:?}"
        );
        log.set_high_watermark(log.log_end_offset());
        assert_eq!(log.last_stable_offset(), log.log_end_offset());
        log.close().await.unwrap();
    });
}

#[test]
fn open_transactions_and_the_index_survive_restarts_and_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    run(move || async move {
        let name = "restart";
        let pdir = partition_dir(&root, name);
        let mut log = open(&root, name, true).await;
        // Enough aborted transactions to roll segments, then one left open.
        let mut seq = 0;
        let mut epoch_of_2 = 0;
        while log.segment_count() < 3 {
            send(&mut log, 1, 0, seq, 20, true).await.unwrap();
            seq += 20;
            end_txn(&mut log, marker(1, 0, MarkerKind::Abort, 0), TV1)
                .await
                .unwrap();
            epoch_of_2 += 1;
        }
        let open_at = send(&mut log, 2, 0, 0, 1, true).await.unwrap().first_offset;
        send(&mut log, 1, 0, seq, 1, true).await.unwrap();
        end_txn(&mut log, marker(1, 0, MarkerKind::Abort, 0), TV1)
            .await
            .unwrap();
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        assert_eq!(log.last_stable_offset(), open_at);
        let all = log.aborted_txns(0, leo);
        assert_eq!(all.len(), epoch_of_2 + 1);
        let files = txn_index_files(&pdir);
        assert_eq!(
            files.len(),
            3,
            "one index per segment with an abort: {files:?}"
        );
        log.close().await.unwrap();

        // A clean restart: the open transaction comes back from the snapshot.
        let mut log = open(&root, name, true).await;
        log.set_high_watermark(leo);
        assert_eq!(log.last_stable_offset(), open_at);
        assert_eq!(log.aborted_txns(0, leo), all);
        drop(log);

        // A crash that tore the last index and lost another: recovery of
        // every segment rebuilds both from the log.
        let last_base = files.last().unwrap().0;
        let torn = pdir.join(format!("{last_base:020}.txnindex"));
        let len = std::fs::metadata(&torn).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&torn)
            .unwrap()
            .set_len(len - 5)
            .unwrap();
        std::fs::remove_file(pdir.join(format!("{:020}.txnindex", files[1].0))).unwrap();
        for e in std::fs::read_dir(&pdir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "snapshot") {
                std::fs::remove_file(p).unwrap();
            }
        }
        let mut log = open(&root, name, false).await;
        log.set_high_watermark(leo);
        assert_eq!(log.aborted_txns(0, leo), all, "rebuilt from the log");
        assert_eq!(txn_index_files(&pdir), files);
        assert_eq!(log.last_stable_offset(), open_at, "replayed from the log");
        log.close().await.unwrap();

        // After a clean shutdown only the segment whose index fails its
        // check is recovered, and its index rebuilt.
        std::fs::write(&torn, [0u8; 7]).unwrap();
        let mut log = open(&root, name, true).await;
        assert_eq!(log.recovery_report().segments_recovered, 1);
        log.set_high_watermark(leo);
        assert_eq!(log.aborted_txns(0, leo), all);
        assert_eq!(txn_index_files(&pdir), files);
        // The open transaction still ends normally.
        end_txn(&mut log, marker(2, 0, MarkerKind::Commit, 0), TV1)
            .await
            .unwrap();
        log.set_high_watermark(log.log_end_offset());
        assert_eq!(log.last_stable_offset(), log.log_end_offset());
        log.close().await.unwrap();
    });
}

#[test]
fn truncation_reopens_a_transaction_whose_marker_it_removed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&root, "truncate", true).await;
        send(&mut log, 1, 0, 0, 2, true).await.unwrap(); // 0..=1
        let marker_at = end_txn(&mut log, marker(1, 0, MarkerKind::Abort, 0), TV1)
            .await
            .unwrap()
            .first_offset;
        assert_eq!(log.aborted_txns(0, 10).len(), 1);
        log.truncate_to(marker_at, NOW_MS).await.unwrap();
        assert!(
            log.aborted_txns(0, 10).is_empty(),
            "the abort's entry went with it"
        );
        assert!(txn_index_files(&partition_dir(&root, "truncate")).is_empty());
        log.set_high_watermark(log.log_end_offset());
        assert_eq!(log.last_stable_offset(), 0, "the transaction is open again");
        log.close().await.unwrap();
    });
}

#[test]
fn a_follower_builds_the_same_index_and_lso_from_the_leaders_batches() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    run(move || async move {
        let mut leader = open(&root, "leader", true).await;
        send(&mut leader, 1, 0, 0, 3, true).await.unwrap();
        send(&mut leader, 2, 0, 0, 3, true).await.unwrap();
        end_txn(&mut leader, marker(1, 0, MarkerKind::Abort, 2), TV1)
            .await
            .unwrap();
        send(&mut leader, 3, 0, 0, 1, true).await.unwrap();
        end_txn(&mut leader, marker(2, 0, MarkerKind::Commit, 2), TV1)
            .await
            .unwrap();
        let bytes = Bytes::from(leader.read_all().await.unwrap());
        let leo = leader.log_end_offset();
        leader.set_high_watermark(leo);

        let mut follower = open(&root, "follower", true).await;
        follower.append_as_follower(bytes, NOW_MS).await.unwrap();
        follower.set_high_watermark(leo);
        assert_eq!(follower.aborted_txns(0, leo), leader.aborted_txns(0, leo));
        assert_eq!(follower.last_stable_offset(), leader.last_stable_offset());
        assert_eq!(follower.last_stable_offset(), 7, "producer 3's is open");
        assert_eq!(
            txn_index_files(&partition_dir(&root, "follower")),
            txn_index_files(&partition_dir(&root, "leader"))
        );
        leader.close().await.unwrap();
        follower.close().await.unwrap();
    });
}

#[test]
fn log_verify_checks_each_txnindex_entry_against_its_abort_marker() {
    use pinlog::log::transaction_index::encode_entry;
    use pinlog::tools::verify::{verify_partition_dir, Action};

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let name = "verify";
    let pdir = partition_dir(&root, name);
    let root_for_log = root.clone();
    run(move || async move {
        let mut log = open(&root_for_log, name, true).await;
        send(&mut log, 1, 0, 0, 2, true).await.unwrap();
        end_txn(&mut log, marker(1, 0, MarkerKind::Abort, 0), TV1)
            .await
            .unwrap();
        send(&mut log, 2, 0, 0, 2, true).await.unwrap();
        end_txn(&mut log, marker(2, 0, MarkerKind::Commit, 0), TV1)
            .await
            .unwrap();
        log.set_high_watermark(log.log_end_offset());
        log.close().await.unwrap();
    });
    let report = verify_partition_dir(&pdir);
    assert!(report.is_ok(), "{report}");

    let index = pdir.join("00000000000000000000.txnindex");
    let good = std::fs::read(&index).unwrap();
    let entries = decode_entries(&good).unwrap();
    assert_eq!(entries.len(), 1);
    // An entry naming the commit marker of producer 2 as an abort.
    let wrong = AbortedTxn {
        producer_id: 2,
        first_offset: 3,
        last_offset: 5,
        last_stable_offset: 6,
    };
    let mut bytes = good.clone();
    bytes.extend_from_slice(&encode_entry(&wrong));
    std::fs::write(&index, &bytes).unwrap();
    let report = verify_partition_dir(&pdir);
    let errors: Vec<String> = report.errors().map(|p| p.description.clone()).collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("no ABORT marker at offset 5")),
        "{report}"
    );
    // A torn entry: pinlog's open rebuilds the index.
    std::fs::write(&index, &good[..good.len() - 3]).unwrap();
    let report = verify_partition_dir(&pdir);
    assert!(
        report
            .errors()
            .any(|p| p.action == Action::RepairedOnOpen && p.description.contains("whole number")),
        "{report}"
    );
}

/// An abort whose marker landed in a later segment than the read's upper
/// bound is still listed: its data lies in the read (Kafka searches every
/// later segment until an entry's LSO reaches the bound).
#[test]
fn an_abort_marked_in_a_later_segment_is_listed_for_an_earlier_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    run(move || async move {
        let mut log = open(&root, "later", true).await;
        send(&mut log, 1, 0, 0, 2, true).await.unwrap(); // A: 0..=1
        let b_first = send(&mut log, 2, 0, 0, 2, true).await.unwrap().first_offset; // B: 2..=3
        let leo = log.log_end_offset();
        log.roll(leo, NOW_MS).await.unwrap();
        let abort = end_txn(&mut log, marker(1, 0, MarkerKind::Abort, 0), TV1)
            .await
            .unwrap();
        assert!(
            abort.first_offset >= leo,
            "the marker is in the new segment"
        );
        log.set_high_watermark(log.log_end_offset());
        let lso = log.last_stable_offset();
        assert_eq!(lso, b_first, "B's open transaction holds the LSO");
        let listed = log.aborted_txns(0, lso);
        assert_eq!(
            listed.iter().map(|t| t.producer_id).collect::<Vec<_>>(),
            vec![1],
            "A's abort must be listed for a read of [0, {lso})"
        );
        log.close().await.unwrap();
    });
}
