//! The offline tools against a log that pinlog itself wrote: the dump prints
//! every batch and entry, the verifier finds nothing wrong, and after each
//! kind of damage it names the right file and position and suggests an
//! action that, when followed, makes the directory verify clean again.

use std::path::{Path, PathBuf};

use crate::common::run;
use bytes::BytesMut;
use pinlog::config::LogConfig;
use pinlog::log::batch::{build_batch, BatchHeader, BatchIter, BatchSpec, CountRule, RecordSpec};
use pinlog::log::partition_log::{OpenParams, PartitionLog};
use pinlog::tools::dump::{dump_file, FileKind};
use pinlog::tools::verify::{verify_partition_dir, Action, Location, Problem, VerifyReport};
use pinlog::topic_partition::TopicPartition;

const TOPIC: &str = "tools";
const BASE_TIMESTAMP_MS: i64 = 1_700_000_000_000;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 16 * 1024,
        index_interval_bytes: 512,
        segment_index_bytes: 64 * 1024,
        ..LogConfig::default()
    }
}

fn params(clean_shutdown: bool, recovery_point: i64) -> OpenParams {
    OpenParams {
        recovery_point,
        log_start_offset: 0,
        clean_shutdown,
        now_ms: BASE_TIMESTAMP_MS,
    }
}

/// A producer batch of `records` records with ASCII keys and values, record
/// `i` at `timestamp_ms + i`.
fn producer_batch(records: usize, timestamp_ms: i64, tag: usize) -> Vec<u8> {
    let keys: Vec<String> = (0..records).map(|i| format!("key-{tag}-{i}")).collect();
    let values: Vec<String> = (0..records)
        .map(|i| format!("value-{tag}-{i}-{}", "x".repeat(40 + (tag * 7 + i) % 50)))
        .collect();
    let specs: Vec<RecordSpec> = (0..records)
        .map(|i| (i as i64, Some(keys[i].as_bytes()), values[i].as_bytes()))
        .collect();
    build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: timestamp_ms,
        records: &specs,
    })
}

/// Writes a multi-segment log under three leader epochs, with one
/// LogAppendTime batch and one two-batch append, closes it cleanly, and
/// returns the partition directory and every batch header in log order.
fn write_log(data_dir: PathBuf) -> (PathBuf, Vec<BatchHeader>) {
    run(move || async move {
        let tp = TopicPartition::new(TOPIC, 0);
        let mut log = PartitionLog::open(&data_dir, tp, config(), params(false, 0), None)
            .await
            .expect("open");
        let mut timestamp_ms = BASE_TIMESTAMP_MS;
        for i in 0..240usize {
            let epoch = match i {
                0..=79 => 0,
                80..=159 => 2,
                _ => 5,
            };
            timestamp_ms += 10;
            let mut bytes = BytesMut::from(&producer_batch(1 + i % 5, timestamp_ms, i)[..]);
            if i % 50 == 17 {
                // Two batches in one append: each is indexed on its own.
                bytes.extend_from_slice(&producer_batch(2, timestamp_ms + 5, i + 1000));
            }
            let log_append_time_ms = (i == 123).then(|| timestamp_ms + 3);
            log.append_as_leader(bytes, epoch, log_append_time_ms, timestamp_ms)
                .await
                .expect("append");
        }
        assert!(log.segment_count() >= 3, "small segments must roll");
        let headers: Vec<BatchHeader> =
            BatchIter::new(&log.read_all().await.expect("read"), CountRule::Exact)
                .map(|item| item.expect("valid batch").1)
                .collect();
        let dir = log.dir().to_path_buf();
        log.close().await.expect("close");
        (dir, headers)
    })
}

/// Opens and closes the log, as a broker start and stop would.
fn reopen(data_dir: &Path, clean_shutdown: bool, recovery_point: i64) {
    let data_dir = data_dir.to_path_buf();
    run(move || async move {
        let tp = TopicPartition::new(TOPIC, 0);
        let log = PartitionLog::open(
            &data_dir,
            tp,
            config(),
            params(clean_shutdown, recovery_point),
            None,
        )
        .await
        .expect("reopen");
        log.close().await.expect("close");
    })
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == suffix))
        .collect();
    paths.sort();
    paths
}

/// Batch starts and headers of one `.log` file.
fn batches_in(path: &Path) -> Vec<(u64, BatchHeader)> {
    let bytes = std::fs::read(path).expect("read");
    BatchIter::new(&bytes, CountRule::Compacted)
        .map(|item| {
            let (position, header) = item.expect("valid batch");
            (position as u64, header)
        })
        .collect()
}

fn field(line: &str, name: &str) -> String {
    let mut words = line.split_whitespace();
    while let Some(word) = words.next() {
        if word == name {
            return words.next().expect("value").to_string();
        }
    }
    panic!("no {name} in {line}");
}

fn only_error(report: &VerifyReport) -> &Problem {
    let errors: Vec<&Problem> = report.errors().collect();
    assert_eq!(errors.len(), 1, "{report}");
    errors[0]
}

#[test]
fn dump_prints_every_batch_and_entry_and_verify_finds_nothing() {
    let root = tempfile::tempdir().expect("tempdir");
    let (dir, headers) = write_log(root.path().to_path_buf());

    let mut dumped = Vec::new();
    for path in files(&dir, "log") {
        let mut out = Vec::new();
        let summary = dump_file(&path, &mut out).expect("dump");
        assert!(summary.is_clean(), "{}: {summary:?}", path.display());
        let text = String::from_utf8(out).expect("utf-8");
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("baseOffset:"))
            .collect();
        assert_eq!(lines.len() as u64, summary.entries);
        dumped.extend(lines.iter().map(|l| l.to_string()));
    }
    assert_eq!(dumped.len(), headers.len());
    for (line, h) in dumped.iter().zip(&headers) {
        assert_eq!(
            field(line, "baseOffset:"),
            h.base_offset.to_string(),
            "{line}"
        );
        assert_eq!(field(line, "lastOffset:"), h.last_offset().to_string());
        assert_eq!(field(line, "count:"), h.record_count.to_string());
        assert_eq!(
            field(line, "partitionLeaderEpoch:"),
            h.partition_leader_epoch.to_string()
        );
        assert_eq!(field(line, "crc:"), h.crc.to_string());
        assert_eq!(field(line, "isvalid:"), "true");
        let timestamp_type = if h.is_log_append_time() {
            "LogAppendTime:"
        } else {
            "CreateTime:"
        };
        assert_eq!(field(line, timestamp_type), h.max_timestamp.to_string());
    }
    assert_eq!(headers.iter().filter(|h| h.is_log_append_time()).count(), 1);

    let mut index_entries = 0;
    for suffix in ["index", "timeindex"] {
        for path in files(&dir, suffix) {
            let mut out = Vec::new();
            let summary = dump_file(&path, &mut out).expect("dump");
            assert!(summary.is_clean(), "{}: {summary:?}", path.display());
            index_entries += summary.entries;
        }
    }
    assert!(index_entries > 40, "small index interval: many entries");

    let epoch_path = dir.join("leader-epoch-checkpoint");
    let mut out = Vec::new();
    let summary = dump_file(&epoch_path, &mut out).expect("dump");
    assert_eq!(summary.kind, FileKind::LeaderEpochCheckpoint);
    let text = String::from_utf8(out).expect("utf-8");
    let first_of = |epoch: i32| {
        headers
            .iter()
            .find(|h| h.partition_leader_epoch == epoch)
            .expect("epoch written")
            .base_offset
    };
    let expected = format!(
        "epoch: 0 start offset: 0\nepoch: 2 start offset: {}\nepoch: 5 start offset: {}\n",
        first_of(2),
        first_of(5)
    );
    assert!(text.ends_with(&expected), "{text}");

    let report = verify_partition_dir(&dir);
    assert!(report.is_ok(), "{report}");
    assert!(report.problems.is_empty(), "{report}");
    assert_eq!(report.batches as usize, headers.len());
    assert_eq!(
        report.log_end_offset,
        Some(headers.last().expect("batches").last_offset() + 1)
    );
}

#[test]
fn flipped_byte_in_an_older_segment() {
    let root = tempfile::tempdir().expect("tempdir");
    let (dir, headers) = write_log(root.path().to_path_buf());
    let logs = files(&dir, "log");
    let target = &logs[1];
    let batches = batches_in(target);
    let (position, header) = batches[batches.len() / 2];
    let mut bytes = std::fs::read(target).expect("read");
    bytes[position as usize + header.size_bytes() / 2] ^= 0x20;
    std::fs::write(target, &bytes).expect("write");

    let report = verify_partition_dir(&dir);
    let problem = only_error(&report);
    assert_eq!(&problem.path, target);
    assert_eq!(problem.location, Location::Byte(position));
    assert!(problem.description.contains("CRC mismatch"), "{problem}");
    let segment_base_offset = batches[0].1.base_offset;
    assert_eq!(
        problem.action,
        Action::Rereplicate {
            segment_base_offset,
            position,
            first_lost_offset: header.base_offset,
        }
    );

    // The advice for a single replica: recover from that segment on.
    reopen(root.path(), false, segment_base_offset);
    let report = verify_partition_dir(&dir);
    assert!(report.is_ok(), "{report}");
    assert!(report.problems.is_empty(), "{report}");
    assert_eq!(report.log_end_offset, Some(header.base_offset));
    assert!(report.log_end_offset < Some(headers.last().expect("batches").last_offset()));
}

#[test]
fn newest_segment_truncated_mid_batch() {
    let root = tempfile::tempdir().expect("tempdir");
    let (dir, headers) = write_log(root.path().to_path_buf());
    let target = files(&dir, "log").pop().expect("segments");
    let batches = batches_in(&target);
    let (position, header) = batches[batches.len() - 3];
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&target)
        .expect("open");
    file.set_len(position + 40).expect("truncate");
    drop(file);

    let report = verify_partition_dir(&dir);
    let problem = only_error(&report);
    assert_eq!(problem.path, target);
    assert_eq!(problem.location, Location::Byte(position));
    assert_eq!(
        problem.action,
        Action::RecoverTail {
            position,
            first_lost_offset: header.base_offset,
        }
    );
    assert_eq!(report.log_end_offset, Some(header.base_offset));

    // The advice: start without the clean-shutdown marker.
    let recovery_point = headers.last().expect("batches").last_offset() + 1;
    reopen(root.path(), false, recovery_point);
    let report = verify_partition_dir(&dir);
    assert!(report.is_ok(), "{report}");
    assert!(report.problems.is_empty(), "{report}");
    assert_eq!(report.log_end_offset, Some(header.base_offset));
}

#[test]
fn garbled_index_entry() {
    let root = tempfile::tempdir().expect("tempdir");
    let (dir, _) = write_log(root.path().to_path_buf());
    let index = files(&dir, "index")[0].clone();
    let mut bytes = std::fs::read(&index).expect("read");
    let entries = bytes.len() / 8;
    assert!(entries > 4, "{entries} entries");
    // Move entry 3's position forward by 4 bytes: still increasing and
    // inside the file, so only a check against the batches finds it.
    let at = 3 * 8 + 4;
    let position = u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) + 4;
    bytes[at..at + 4].copy_from_slice(&position.to_be_bytes());
    std::fs::write(&index, &bytes).expect("write");

    let report = verify_partition_dir(&dir);
    let problem = only_error(&report);
    assert_eq!(problem.path, index);
    assert_eq!(problem.location, Location::Entry { entry: 3, byte: 24 });
    assert_eq!(problem.action, Action::DeleteIndexes);
    assert!(
        problem.description.contains("not the start of a batch"),
        "{problem}"
    );

    // The advice: delete both indexes of the segment and restart.
    std::fs::remove_file(&index).expect("remove");
    std::fs::remove_file(index.with_extension("timeindex")).expect("remove");
    reopen(root.path(), true, 0);
    let report = verify_partition_dir(&dir);
    assert!(report.is_ok(), "{report}");
    assert!(report.problems.is_empty(), "{report}");
}

#[test]
fn truncated_time_index_and_corrupt_epoch_checkpoint() {
    let root = tempfile::tempdir().expect("tempdir");
    let (dir, _) = write_log(root.path().to_path_buf());
    let time_index = files(&dir, "timeindex")[1].clone();
    let len = std::fs::metadata(&time_index).expect("stat").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&time_index)
        .expect("open");
    file.set_len(len - 5).expect("truncate");
    drop(file);
    let epoch_path = dir.join("leader-epoch-checkpoint");
    let text = std::fs::read_to_string(&epoch_path).expect("read");
    std::fs::write(&epoch_path, text.replace("\n2 ", "\n2x ")).expect("write");

    let report = verify_partition_dir(&dir);
    let errors: Vec<&Problem> = report.errors().collect();
    assert_eq!(errors.len(), 2, "{report}");
    let entries = (len / 12) - 1;
    assert!(
        errors.iter().any(|p| p.path == time_index
            && p.location
                == Location::Entry {
                    entry: entries,
                    byte: entries * 12
                }
            && p.action == Action::RepairedOnOpen),
        "{report}"
    );
    assert!(
        errors.iter().any(|p| p.path == epoch_path
            && p.location == Location::Line(4)
            && p.action == Action::RepairEpochCheckpoint),
        "{report}"
    );
}
