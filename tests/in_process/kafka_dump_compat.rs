//! Kafka's own `DumpLogSegments` (Kafka 4.4.0) must read pinlog's `.log`,
//! `.index` and `.timeindex` files cleanly: this is what makes a pinlog data
//! directory a Kafka data directory.
//!
//! The test writes a multi-segment log with PartitionLog (several leader
//! epochs, a LogAppendTime batch, a multi-batch append, dense index
//! entries), closes it cleanly, and runs Kafka's tool four ways:
//!
//! 1. `--index-sanity-check` on every file: the batch lines of the `.log`
//!    files, and a "passed sanity check" line per index;
//! 2. `--deep-iteration --print-data-log` on the `.log` files: every record,
//!    key and value, at dense offsets;
//! 3. `--verify-index-only` on the indexes: Kafka's entry-by-entry checks
//!    against the log, which print only when something is wrong;
//! 4. a plain dump of every file, whose batch and index lines must equal
//!    pinlog's own dump (`pinlog::tools::dump`) line for line.
//!
//! `DumpLogSegments` exits 0 even when it finds problems: it reports them on
//! stderr (index mismatches, non-consecutive offsets) or stdout (`isvalid:
//! false`, invalid bytes), so the test checks both streams for every known
//! report, not only the exit status.
//!
//! Needs `java` on PATH and the Kafka jars, which `tests/kafka/fetch-kafka.sh`
//! fetches (a no-op when they are already there). Without them the test
//! fails, because CI installs both; set `PINLOG_SKIP_KAFKA_TESTS=1` to skip
//! it on a machine without Java.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::common::run;
use bytes::BytesMut;
use pinlog::config::LogConfig;
use pinlog::log::batch::{build_batch, BatchHeader, BatchIter, BatchSpec, CountRule, RecordSpec};
use pinlog::log::partition_log::{OpenParams, PartitionLog};
use pinlog::log::segment::parse_segment_file_name;
use pinlog::tools::dump::dump_file;
use pinlog::tools::verify::verify_partition_dir;
use pinlog::topic_partition::TopicPartition;

const DUMP_CLASS: &str = "org.apache.kafka.tools.DumpLogSegments";
const KAFKA_VERSION: &str = "4.4.0";
const BASE_TIMESTAMP_MS: i64 = 1_750_000_000_000;

/// What `DumpLogSegments` prints when it finds something wrong (see the
/// module documentation). `Non-consecutive` has one known false positive,
/// handled in [`check_non_consecutive_reports`].
const PROBLEM_REPORTS: [&str; 8] = [
    "Mismatches in",
    "timestamp mismatch",
    "out of order",
    "not found in",
    "invalid bytes",
    "isvalid: false",
    "Exception",
    "is corrupt",
];

/// One record as written, to compare with Kafka's deep iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    offset: i64,
    timestamp: i64,
    log_append_time: bool,
    key: Option<String>,
    value: String,
}

/// What was written: batch headers in log order and every record.
struct Written {
    dir: PathBuf,
    headers: Vec<BatchHeader>,
    records: Vec<Record>,
    log_append_time_last_offset: i64,
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 32 * 1024,
        index_interval_bytes: 1024,
        segment_index_bytes: 1024 * 1024,
        ..LogConfig::default()
    }
}

/// Keys and values of one producer batch; every fifth batch has null keys.
fn batch_contents(tag: usize, records: usize) -> Vec<(Option<String>, String)> {
    (0..records)
        .map(|i| {
            let key = (tag % 5 != 3).then(|| format!("key-{tag}-{i}"));
            let value = format!(
                "value-{tag}-{i}-{}",
                "v".repeat(20 + (tag * 13 + i * 7) % 200)
            );
            (key, value)
        })
        .collect()
}

fn encode(contents: &[(Option<String>, String)], timestamp_ms: i64) -> Vec<u8> {
    let specs: Vec<RecordSpec> = contents
        .iter()
        .enumerate()
        .map(|(i, (key, value))| {
            (
                i as i64,
                key.as_deref().map(str::as_bytes),
                value.as_bytes(),
            )
        })
        .collect();
    build_batch(&BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: timestamp_ms,
        records: &specs,
    })
}

fn write_log(data_dir: PathBuf) -> Written {
    run(move || async move {
        let tp = TopicPartition::new("compat", 0);
        let params = OpenParams {
            recovery_point: 0,
            log_start_offset: 0,
            clean_shutdown: false,
            now_ms: BASE_TIMESTAMP_MS,
        };
        let mut log = PartitionLog::open(&data_dir, tp, config(), params, None)
            .await
            .expect("open log");
        let mut records = Vec::new();
        let mut log_append_time_last_offset = -1;
        let mut timestamp_ms = BASE_TIMESTAMP_MS;
        for tag in 0..400usize {
            let epoch = match tag {
                0..=99 => 0,
                100..=199 => 1,
                200..=299 => 4,
                _ => 7,
            };
            timestamp_ms += 10;
            // (contents, base timestamp) of each batch in this append.
            let mut batches = vec![(batch_contents(tag, 1 + tag % 6), timestamp_ms)];
            if tag % 40 == 21 {
                // Several batches in one append are indexed one by one.
                batches.push((batch_contents(tag + 10_000, 3), timestamp_ms + 6));
                batches.push((batch_contents(tag + 20_000, 2), timestamp_ms + 8));
            }
            // One LogAppendTime batch, stamped above the next 30 appends'
            // create times so that it stays the segment's max timestamp long
            // enough to be in the time index.
            let log_append_time_ms = (tag == 250).then_some(timestamp_ms + 300);
            if tag == 399 {
                // A last segment of one small batch: an offset index without
                // entries and a time index with only the entry added on close.
                log.roll(log.log_end_offset(), timestamp_ms)
                    .await
                    .expect("roll");
            }
            let mut bytes = BytesMut::new();
            for (contents, base_timestamp) in &batches {
                bytes.extend_from_slice(&encode(contents, *base_timestamp));
            }
            let info = log
                .append_as_leader(bytes, epoch, log_append_time_ms, timestamp_ms)
                .await
                .expect("append");
            let mut offset = info.first_offset;
            for (contents, base_timestamp) in &batches {
                for (i, (key, value)) in contents.iter().enumerate() {
                    records.push(Record {
                        offset,
                        timestamp: log_append_time_ms.unwrap_or(base_timestamp + i as i64),
                        log_append_time: log_append_time_ms.is_some(),
                        key: key.clone(),
                        value: value.clone(),
                    });
                    offset += 1;
                }
            }
            assert_eq!(offset, info.last_offset + 1);
            if log_append_time_ms.is_some() {
                log_append_time_last_offset = info.last_offset;
            }
        }
        assert!(log.segment_count() >= 3, "32 KiB segments must roll");
        let all = log.read_all().await.expect("read log");
        let headers: Vec<BatchHeader> = BatchIter::new(&all, CountRule::Exact)
            .map(|item| item.expect("valid batch").1)
            .collect();
        let dir = log.dir().to_path_buf();
        log.close().await.expect("close log");
        Written {
            dir,
            headers,
            records,
            log_append_time_last_offset,
        }
    })
}

/// Says that the test was skipped where the operator sees it: libtest
/// captures `eprintln!` of passing tests, but not writes to the stderr handle.
fn loud_skip(why: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED kafka_dump_compat (PINLOG_SKIP_KAFKA_TESTS=1): {why}\n\
         *** pinlog's compatibility with Kafka's DumpLogSegments was NOT checked. ***\n"
    );
}

/// `java` and the Kafka libs directory, or `None` when the test is skipped.
fn kafka_tooling() -> Option<(PathBuf, PathBuf)> {
    let skip = std::env::var("PINLOG_SKIP_KAFKA_TESTS").is_ok_and(|v| v == "1");
    let java = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("java"))
            .find(|candidate| candidate.is_file())
    });
    let Some(java) = java else {
        if skip {
            loud_skip("no `java` on PATH");
            return None;
        }
        panic!(
            "kafka_dump_compat needs `java` (17+) on PATH to run Kafka {KAFKA_VERSION}'s \
             DumpLogSegments. Install a JDK, or set PINLOG_SKIP_KAFKA_TESTS=1 to skip this test."
        );
    };
    let libs = std::env::var_os("PINLOG_KAFKA_LIBS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| {
                Path::new(&home)
                    .join(".cache/pinlog")
                    .join(format!("kafka-{KAFKA_VERSION}"))
                    .join("libs")
            })
        })
        .expect("neither PINLOG_KAFKA_LIBS nor HOME is set: cannot place the Kafka jars");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kafka/fetch-kafka.sh");
    let fetch = Command::new(&script).arg(&libs).output();
    let failure = match fetch {
        Ok(output) if output.status.success() => return Some((java, libs)),
        Ok(output) => format!(
            "{} exited with {}:\n{}{}",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(e) => format!("cannot run {}: {e}", script.display()),
    };
    if skip {
        loud_skip(&format!("fetching the Kafka jars failed: {failure}"));
        return None;
    }
    panic!(
        "kafka_dump_compat needs the Kafka {KAFKA_VERSION} jars in {}: {failure}\n\
         Fix the fetch (it needs mvn and Maven Central), or set PINLOG_SKIP_KAFKA_TESTS=1 to skip this test.",
        libs.display()
    );
}

/// The output of one `DumpLogSegments` run.
struct Dump {
    args: String,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Dump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DumpLogSegments {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.args, self.stdout, self.stderr
        )
    }
}

/// Runs `DumpLogSegments` and checks that it exited 0.
fn dump_log_segments(java: &Path, libs: &Path, args: &[String]) -> Dump {
    let started = Instant::now();
    let output = Command::new(java)
        .arg("-cp")
        .arg(format!("{}/*", libs.display()))
        .arg(DUMP_CLASS)
        .args(args)
        .output()
        .expect("start java");
    let dump = Dump {
        args: args.join(" "),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    eprintln!(
        "DumpLogSegments {} ran in {:?}",
        args.first().map_or("", String::as_str),
        started.elapsed()
    );
    assert!(
        output.status.success(),
        "exit status {}\n{dump}",
        output.status
    );
    dump
}

/// No problem report in either stream, except the known false positive.
fn check_no_reports(dump: &Dump) {
    for report in PROBLEM_REPORTS {
        assert!(
            !dump.stdout.contains(report) && !dump.stderr.contains(report),
            "DumpLogSegments reported {report:?}\n{dump}"
        );
    }
    check_non_consecutive_reports(dump);
}

/// Deep iteration checks that each record offset follows the previous one,
/// starting from -1 in every file, so a segment with a non-zero base offset
/// always gets `Non-consecutive offsets in <file>` / `  -1 is followed by
/// <base>`. Exactly that pair is allowed, and nothing else.
fn check_non_consecutive_reports(dump: &Dump) {
    let mut lines = dump.stderr.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(path) = line.strip_prefix("Non-consecutive offsets in ") else {
            continue;
        };
        let name = Path::new(path.trim())
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let base = parse_segment_file_name(name, "log")
            .unwrap_or_else(|| panic!("unexpected file in {line:?}\n{dump}"));
        let mut pairs = Vec::new();
        while let Some(pair) = lines.next_if(|l| l.starts_with("  ")) {
            pairs.push(pair.trim().to_string());
        }
        assert!(
            base != 0 && pairs == [format!("-1 is followed by {base}")],
            "real non-consecutive offsets in {path}: {pairs:?}\n{dump}"
        );
    }
}

fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let mut words = line.split_whitespace();
    while let Some(word) = words.next() {
        if word == name {
            return words.next();
        }
    }
    None
}

fn batch_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.starts_with("baseOffset:"))
        .collect()
}

/// Every batch pinlog wrote appears, in order, with the same header fields.
fn check_batch_lines(dump: &Dump, headers: &[BatchHeader]) {
    let lines = batch_lines(&dump.stdout);
    assert_eq!(lines.len(), headers.len(), "batch lines\n{dump}");
    for (line, h) in lines.iter().zip(headers) {
        let expect = |name: &str, value: String| {
            assert_eq!(
                field(line, name),
                Some(value.as_str()),
                "{name} in {line}\n(pinlog header {h:?})"
            );
        };
        expect("baseOffset:", h.base_offset.to_string());
        expect("lastOffset:", h.last_offset().to_string());
        expect("count:", h.record_count.to_string());
        expect(
            "partitionLeaderEpoch:",
            h.partition_leader_epoch.to_string(),
        );
        expect("magic:", "2".to_string());
        expect("crc:", h.crc.to_string());
        expect("isvalid:", "true".to_string());
        expect("size:", h.size_bytes().to_string());
        expect("compresscodec:", "none".to_string());
        if h.is_log_append_time() {
            expect("LogAppendTime:", h.max_timestamp.to_string());
        } else {
            expect("CreateTime:", h.max_timestamp.to_string());
        }
    }
}

fn segment_files(dir: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut by_suffix: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("list partition dir") {
        let path = entry.expect("dir entry").path();
        if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
            by_suffix
                .entry(ext.to_string())
                .or_default()
                .push(path.clone());
        }
    }
    for paths in by_suffix.values_mut() {
        paths.sort();
    }
    by_suffix
}

fn joined(paths: &[&PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    for name in &names {
        assert!(!name.contains(','), "--files is comma-separated: {name}");
    }
    names.join(",")
}

#[test]
fn kafka_dump_log_segments_reads_pinlog_segments_and_indexes() {
    let Some((java, libs)) = kafka_tooling() else {
        return;
    };
    let root = tempfile::tempdir().expect("tempdir");
    let written = write_log(root.path().to_path_buf());
    let files = segment_files(&written.dir);
    let logs: Vec<&PathBuf> = files["log"].iter().collect();
    let indexes: Vec<&PathBuf> = files["index"].iter().collect();
    let time_indexes: Vec<&PathBuf> = files["timeindex"].iter().collect();
    assert!(logs.len() >= 3, "{logs:?}");
    assert_eq!(indexes.len(), logs.len());
    assert_eq!(time_indexes.len(), logs.len());
    let all: Vec<&PathBuf> = logs
        .iter()
        .chain(&indexes)
        .chain(&time_indexes)
        .copied()
        .collect();
    let index_files: Vec<&PathBuf> = indexes.iter().chain(&time_indexes).copied().collect();

    // pinlog's own view first: a failure here is pinlog's, not Kafka's.
    let report = verify_partition_dir(&written.dir);
    assert!(report.problems.is_empty(), "{report}");
    let mut pinlog_lines = Vec::new();
    let mut index_entries = 0;
    let mut time_index_offsets = Vec::new();
    for path in &all {
        let mut out = Vec::new();
        let summary = dump_file(path, &mut out).expect("pinlog dump");
        assert!(summary.is_clean(), "{}: {summary:?}", path.display());
        let text = String::from_utf8(out).expect("utf-8");
        if path.extension().is_some_and(|e| e == "timeindex") {
            time_index_offsets.extend(
                text.lines()
                    .filter_map(|l| field(l, "offset:"))
                    .map(str::to_string),
            );
        }
        if path.extension().is_some_and(|e| e != "log") {
            index_entries += summary.entries;
        }
        pinlog_lines.extend(
            text.lines()
                .filter(|l| !l.starts_with("Dumping "))
                .map(str::to_string),
        );
    }
    assert!(
        index_entries as usize > 3 * logs.len(),
        "index_interval_bytes 1024 gives many entries: {index_entries}"
    );
    assert!(
        time_index_offsets.contains(&written.log_append_time_last_offset.to_string()),
        "the LogAppendTime batch (last offset {}) must be in a time index for Kafka to check it",
        written.log_append_time_last_offset
    );
    assert_eq!(
        written
            .headers
            .iter()
            .filter(|h| h.is_log_append_time())
            .count(),
        1
    );
    let epochs: Vec<i32> = written
        .headers
        .iter()
        .map(|h| h.partition_leader_epoch)
        .collect();
    assert!(epochs.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(epochs.first(), Some(&0));
    assert_eq!(epochs.last(), Some(&7));

    // 1. Batch lines of every segment, and Kafka's index sanity check.
    let sanity = dump_log_segments(
        &java,
        &libs,
        &[
            "--files".to_string(),
            joined(&all),
            "--index-sanity-check".to_string(),
        ],
    );
    check_no_reports(&sanity);
    check_batch_lines(&sanity, &written.headers);
    for path in &logs {
        let base = parse_segment_file_name(
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default(),
            "log",
        )
        .expect("segment name");
        assert!(
            sanity
                .stdout
                .contains(&format!("Log starting offset: {base}\n")),
            "{sanity}"
        );
    }
    let mut empty_indexes = 0;
    for path in &index_files {
        let passed = format!("{} passed sanity check.", path.display());
        // Kafka checks an offset index with no entries for nothing more.
        let empty = format!("{} is empty.", path.display());
        if sanity.stdout.contains(&empty) {
            empty_indexes += 1;
            continue;
        }
        assert!(
            sanity.stdout.contains(&passed),
            "no sanity check line for {}\n{sanity}",
            path.display()
        );
    }
    assert_eq!(empty_indexes, 1, "the one-batch segment's offset index");

    // 2. Every record, densely, with its timestamp, key and value.
    let mut deep_args = vec![
        "--deep-iteration".to_string(),
        "--print-data-log".to_string(),
        "--files".to_string(),
    ];
    deep_args.push(joined(&logs));
    let deep = dump_log_segments(&java, &libs, &deep_args);
    check_no_reports(&deep);
    check_batch_lines(&deep, &written.headers);
    let record_lines: Vec<&str> = deep
        .stdout
        .lines()
        .filter(|l| l.starts_with("| offset:"))
        .collect();
    assert_eq!(record_lines.len(), written.records.len(), "{deep}");
    for (line, record) in record_lines.iter().zip(&written.records) {
        assert_eq!(
            field(line, "offset:"),
            Some(record.offset.to_string().as_str()),
            "{line}"
        );
        let timestamp_field = if record.log_append_time {
            "LogAppendTime:"
        } else {
            "CreateTime:"
        };
        assert_eq!(
            field(line, timestamp_field),
            Some(record.timestamp.to_string().as_str()),
            "{line}"
        );
        assert_eq!(field(line, "key:"), record.key.as_deref(), "{line}");
        assert_eq!(
            field(line, "payload:"),
            Some(record.value.as_str()),
            "{line}"
        );
    }
    let offsets: Vec<i64> = written.records.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, (0..offsets.len() as i64).collect::<Vec<_>>());

    // 3. Kafka's entry-by-entry index checks against the log.
    let mut verify_args = vec!["--verify-index-only".to_string(), "--files".to_string()];
    verify_args.push(joined(&index_files));
    let verify = dump_log_segments(&java, &libs, &verify_args);
    check_no_reports(&verify);
    // It prints file names, and Kafka's note on an offset index without
    // entries, and nothing else when every entry checks out.
    let printed: Vec<&str> = verify
        .stdout
        .lines()
        .filter(|l| !l.starts_with("Dumping ") && !l.ends_with(".index is empty."))
        .collect();
    assert!(
        printed.is_empty(),
        "--verify-index-only printed more than file names\n{verify}"
    );

    // 4. A plain dump prints what pinlog's dump prints, line for line.
    let plain = dump_log_segments(&java, &libs, &["--files".to_string(), joined(&all)]);
    check_no_reports(&plain);
    let kafka_lines: Vec<&str> = plain
        .stdout
        .lines()
        .filter(|l| !l.starts_with("Dumping "))
        .collect();
    assert_eq!(kafka_lines.len(), pinlog_lines.len(), "{plain}");
    for (kafka, pinlog) in kafka_lines.iter().zip(&pinlog_lines) {
        assert_eq!(kafka, pinlog);
    }
}

/// Segments the log cleaner wrote: thinned batches with offset gaps, a
/// batch stamped with a KIP-534 delete horizon (a tombstone), empty batches
/// (an idempotent producer's last, a group's last), a re-compressed gzip
/// batch, merged segments. Kafka reads every record at its offset, checks
/// every index entry, and finds nothing wrong but the offset gaps that
/// compaction leaves by design.
#[test]
fn kafka_dump_log_segments_reads_compacted_segments() {
    use glommio::sync::RwLock;
    use pinlog::config::CleanupPolicy;
    use pinlog::log::batch::{self, build_keyed_batch, BatchFields};
    use pinlog::log::cleaner::{clean_log, CleanOutcome, CleanerOptions};
    use pinlog::log::compression::{self, Compression};

    let Some((java, libs)) = kafka_tooling() else {
        return;
    };
    let root = tempfile::tempdir().expect("tempdir");
    let data_dir = root.path().to_path_buf();
    let dir = data_dir.join(TopicPartition::new("compacted", 0).dir_name());
    // (offset, key, value) of every record left after the clean.
    let kept: Vec<(i64, String, Option<String>)> = run(move || async move {
        let config = LogConfig {
            segment_bytes: 4096,
            index_interval_bytes: 256,
            segment_index_bytes: 4096,
            cleanup_policy: CleanupPolicy::COMPACT,
            ..LogConfig::default()
        };
        let params = OpenParams {
            recovery_point: 0,
            log_start_offset: 0,
            clean_shutdown: false,
            now_ms: BASE_TIMESTAMP_MS,
        };
        let mut log = PartitionLog::open(
            &data_dir,
            TopicPartition::new("compacted", 0),
            config,
            params,
            None,
        )
        .await
        .expect("open");
        let append = |b: Vec<u8>| BytesMut::from(&b[..]);
        // An idempotent producer writes key "p" once; it is overwritten later.
        let b = build_keyed_batch(0, 0, BASE_TIMESTAMP_MS, &[(0, Some(b"p"), Some(b"first"))]);
        let h = batch::validate(&b, CountRule::Exact).unwrap();
        let mut f = BatchFields::of(&h);
        (f.producer_id, f.producer_epoch, f.base_sequence) = (9, 0, 0);
        let b = batch::encode_batch(&f, 1, &b[61..]);
        log.append_as_leader(append(b), 0, None, BASE_TIMESTAMP_MS)
            .await
            .unwrap();
        for round in 0..8i64 {
            let values: Vec<String> = (0..10)
                .map(|k| format!("v{round}-{k}-{}", "z".repeat(30)))
                .collect();
            let specs: Vec<batch::KeyedRecordSpec> = (0..10)
                .map(|k| {
                    let key: &[u8] =
                        [b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h", b"p", b"q"][k];
                    let deleted = round == 7 && k == 3;
                    (
                        k as i64,
                        Some(key),
                        (!deleted).then(|| values[k].as_bytes()),
                    )
                })
                .collect();
            let mut b = build_keyed_batch(0, 0, BASE_TIMESTAMP_MS + round * 100, &specs);
            // Rounds 1, 4 and 7 are gzip: the last one survives the clean
            // and is re-compressed with its delete horizon.
            if round % 3 == 1 {
                let h = batch::validate(&b, CountRule::Exact).unwrap();
                let body = compression::compress_records(Compression::Gzip, &b[61..]).unwrap();
                let mut f = BatchFields::of(&h);
                f.set_compression(Compression::Gzip.id());
                b = batch::encode_batch(&f, h.record_count, &body);
            }
            log.append_as_leader(append(b), 0, None, BASE_TIMESTAMP_MS)
                .await
                .unwrap();
        }
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        log.roll(leo, BASE_TIMESTAMP_MS).await.unwrap();
        let lock = RwLock::new(log);
        let options = CleanerOptions {
            dedupe_buffer_bytes: 1 << 20,
            io_buffer_bytes: 4096,
            failpoint: None,
        };
        let outcome = clean_log(&lock, &options, BASE_TIMESTAMP_MS + 1_000, &|| false)
            .await
            .expect("clean");
        assert!(matches!(outcome, CleanOutcome::Cleaned(_)), "{outcome:?}");
        let mut log = lock.into_inner().unwrap_or_else(|_| panic!("lock"));
        let bytes = log.read_all().await.unwrap();
        let mut kept = Vec::new();
        for item in BatchIter::new(&bytes, CountRule::Compacted) {
            let (at, h) = item.unwrap();
            let body = compression::decompress_records(
                h.compression(),
                &bytes[at + 61..at + h.size_bytes()],
            )
            .unwrap();
            for r in batch::records_of_body(&body, h.record_count) {
                let r = r.unwrap();
                let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
                kept.push((
                    h.base_offset + r.offset_delta,
                    s(r.key.unwrap()),
                    r.value.map(s),
                ));
            }
        }
        log.close().await.expect("close");
        kept
    });
    assert_eq!(kept.len(), 10, "one record per key: {kept:?}");
    assert!(kept.iter().any(|r| r.2.is_none()), "the tombstone stays");
    let report = verify_partition_dir(&dir);
    assert!(report.is_ok(), "{report}");
    let files = segment_files(&dir);
    let logs: Vec<&PathBuf> = files["log"].iter().collect();
    let index_files: Vec<&PathBuf> = files["index"].iter().chain(&files["timeindex"]).collect();
    let mut deep_args = vec![
        "--deep-iteration".to_string(),
        "--print-data-log".to_string(),
        "--files".to_string(),
    ];
    deep_args.push(joined(&logs));
    let deep = dump_log_segments(&java, &libs, &deep_args);
    for report in PROBLEM_REPORTS {
        assert!(
            !deep.stdout.contains(report) && !deep.stderr.contains(report),
            "DumpLogSegments reported {report:?}\n{deep}"
        );
    }
    let records: Vec<(String, String, String)> = deep
        .stdout
        .lines()
        .filter(|l| l.starts_with("| offset:"))
        .map(|l| {
            let f = |n| field(l, n).unwrap_or_default().to_string();
            (f("offset:"), f("key:"), f("payload:"))
        })
        .collect();
    // Kafka prints no payload for a tombstone.
    let want: Vec<(String, String, String)> = kept
        .iter()
        .map(|(o, k, v)| (o.to_string(), k.clone(), v.clone().unwrap_or_default()))
        .collect();
    assert_eq!(records, want, "{deep}");
    assert!(
        deep.stdout.contains("count: 0"),
        "the producer's emptied batch stays\n{deep}"
    );
    assert!(
        deep.stdout.contains("compresscodec: gzip")
            && deep.stdout.contains("deleteHorizonMs: OptionalLong["),
        "the surviving gzip batch with its tombstone and delete horizon\n{deep}"
    );
    let mut verify_args = vec!["--verify-index-only".to_string(), "--files".to_string()];
    verify_args.push(joined(&index_files));
    let verify = dump_log_segments(&java, &libs, &verify_args);
    check_no_reports(&verify);
    let printed: Vec<&str> = verify
        .stdout
        .lines()
        .filter(|l| !l.starts_with("Dumping ") && !l.ends_with(".index is empty."))
        .collect();
    assert!(
        printed.is_empty(),
        "--verify-index-only found problems\n{verify}"
    );
}

/// Transactions: data batches of committed and aborted transactions, their
/// COMMIT and ABORT control batches, and the `.txnindex` files of the
/// aborts, over several segments. Kafka reads the markers (deep iteration
/// prints each one's type and coordinator epoch) and the aborted-transaction
/// entries exactly as pinlog's dump prints them.
#[test]
fn kafka_dump_log_segments_reads_transaction_markers_and_indexes() {
    use pinlog::log::batch::BatchFields;
    use pinlog::log::control_batch::MarkerSpec;
    use pinlog::transaction::marker::{MarkerKind, TxnMarker};

    let Some((java, libs)) = kafka_tooling() else {
        return;
    };
    let root = tempfile::tempdir().expect("tempdir");
    let data_dir = root.path().to_path_buf();
    let dir = data_dir.join(TopicPartition::new("txn", 0).dir_name());
    let (aborts, commits, sequences) = run(move || async move {
        let config = LogConfig {
            segment_bytes: 8 * 1024,
            ..config()
        };
        let params = OpenParams {
            recovery_point: 0,
            log_start_offset: 0,
            clean_shutdown: false,
            now_ms: BASE_TIMESTAMP_MS,
        };
        let mut log = PartitionLog::open(
            &data_dir,
            TopicPartition::new("txn", 0),
            config,
            params,
            None,
        )
        .await
        .expect("open");
        let (mut aborts, mut commits) = (0, 0);
        let mut sequences = [0i32; 3];
        for round in 0..40usize {
            // Three producers; each round two write, and one ends.
            for producer in [round % 3, (round + 1) % 3] {
                let plain = encode(&batch_contents(round, 3), BASE_TIMESTAMP_MS);
                let h = pinlog::log::batch::parse_header(&plain).expect("header");
                let mut f = BatchFields::of(&h);
                f.producer_id = 1000 + producer as i64;
                f.producer_epoch = 0;
                f.base_sequence = sequences[producer];
                f.attributes |= 0x10;
                sequences[producer] += 3;
                let b = pinlog::log::batch::encode_batch(&f, 3, &plain[61..]);
                log.append_as_leader(BytesMut::from(&b[..]), 2, None, BASE_TIMESTAMP_MS)
                    .await
                    .expect("transactional append");
            }
            let kind = if round % 2 == 0 {
                aborts += 1;
                MarkerKind::Abort
            } else {
                commits += 1;
                MarkerKind::Commit
            };
            let spec = MarkerSpec {
                producer_id: 1000 + (round % 3) as i64,
                producer_epoch: 0,
                marker: TxnMarker {
                    kind,
                    coordinator_epoch: 7,
                },
                timestamp_ms: BASE_TIMESTAMP_MS + round as i64,
            };
            let r = log
                .append_markers_as_leader(&[spec], 1, 2, BASE_TIMESTAMP_MS)
                .await;
            r.into_iter().next().unwrap().expect("marker");
        }
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        log.close().await.expect("close");
        (aborts, commits, sequences)
    });
    let report = verify_partition_dir(&dir);
    assert!(report.problems.is_empty(), "{report}");
    let files = segment_files(&dir);
    let logs: Vec<&PathBuf> = files["log"].iter().collect();
    let txn_indexes: Vec<&PathBuf> = files["txnindex"].iter().collect();
    assert!(logs.len() >= 3, "{logs:?}");
    assert!(txn_indexes.len() >= 2, "{txn_indexes:?}");

    // pinlog's dump of every file.
    let mut pinlog_batches = Vec::new();
    let mut pinlog_markers = Vec::new();
    let mut pinlog_entries = Vec::new();
    for path in logs.iter().chain(&txn_indexes) {
        let mut out = Vec::new();
        let summary = dump_file(path, &mut out).expect("pinlog dump");
        assert!(summary.is_clean(), "{}: {summary:?}", path.display());
        for line in String::from_utf8(out).expect("utf-8").lines() {
            if line.starts_with("baseOffset:") {
                pinlog_batches.push(line.to_string());
            } else if line.starts_with("| offset:") {
                pinlog_markers.push(line.to_string());
            } else if line.starts_with("version:") {
                pinlog_entries.push(line.to_string());
            }
        }
    }
    assert_eq!(pinlog_markers.len(), aborts + commits);
    assert!(pinlog_markers
        .iter()
        .all(|l| l.contains("coordinatorEpoch: 7")));
    assert_eq!(
        pinlog_markers
            .iter()
            .filter(|l| l.contains("endTxnMarker: ABORT"))
            .count(),
        aborts
    );
    assert_eq!(
        pinlog_entries.len(),
        aborts,
        "every abort ended a transaction with data"
    );

    // Kafka's plain dump: the same batch lines and aborted-transaction lines.
    let all: Vec<&PathBuf> = logs.iter().chain(&txn_indexes).copied().collect();
    let plain = dump_log_segments(&java, &libs, &["--files".to_string(), joined(&all)]);
    check_no_reports(&plain);
    assert_eq!(batch_lines(&plain.stdout), pinlog_batches, "{plain}");
    let kafka_entries: Vec<&str> = plain
        .stdout
        .lines()
        .filter(|l| l.starts_with("version:"))
        .collect();
    assert_eq!(kafka_entries, pinlog_entries, "{plain}");

    // Kafka's deep iteration: each marker's record, as pinlog prints it.
    let deep = dump_log_segments(
        &java,
        &libs,
        &[
            "--deep-iteration".to_string(),
            "--files".to_string(),
            joined(&logs),
        ],
    );
    check_no_reports(&deep);
    let kafka_markers: Vec<&str> = deep
        .stdout
        .lines()
        .filter(|l| l.starts_with("| offset:") && l.contains("endTxnMarker"))
        .collect();
    assert_eq!(kafka_markers, pinlog_markers, "{deep}");

    // Kafka reads the producer snapshots, which hold a record for each of a
    // producer's retained batches: in the close snapshot, a producer's last
    // record is its last batch, the one entry Kafka's loader keeps.
    let snapshots: Vec<&PathBuf> = files["snapshot"].iter().collect();
    let last_snapshot = snapshots.last().expect("the close snapshot");
    let dump = dump_log_segments(
        &java,
        &libs,
        &["--files".to_string(), last_snapshot.display().to_string()],
    );
    check_no_reports(&dump);
    assert!(dump.stderr.trim().is_empty(), "{dump}");
    for (producer, next_sequence) in sequences.iter().enumerate() {
        let id = format!("producerId: {} ", 1000 + producer);
        let records: Vec<&str> = dump.stdout.lines().filter(|l| l.starts_with(&id)).collect();
        assert!(records.len() > 1, "{id}: {records:?}\n{dump}");
        let last = records.last().unwrap();
        assert_eq!(
            field(last, "lastSequence:"),
            Some((next_sequence - 1).to_string().as_str()),
            "{last}"
        );
    }
}

/// Kafka's `--offsets-decoder` reads the consumer-group records pinlog
/// writes to `__consumer_offsets` (KIP-848's key types 3-8 and 16, the
/// classic member metadata of a group in migration, tombstones), beside a
/// classic group's metadata and a committed offset: each record decodes to
/// JSON naming its type, none fails.
#[test]
fn kafka_dump_log_segments_decodes_consumer_group_records() {
    use bytes::Bytes;
    use pinlog::broker_config::consumer_group::ConsumerGroupConfig;
    use pinlog::group::consumer::heartbeat::{HeartbeatContext, HeartbeatRequest};
    use pinlog::group::consumer::topics::TopicsImage;
    use pinlog::group::consumer::{replay_into, ConsumerGroup};
    use pinlog::group::consumer_protocol::{encode_assignment, encode_subscription, Subscription};
    use pinlog::group::group::Group;
    use pinlog::group::schema::{GroupValue, OffsetValue, RecordKey, StoredMember};
    use pinlog::log::batch::{build_keyed_batch, KeyedRecordSpec};

    let Some((java, libs)) = kafka_tooling() else {
        return;
    };
    // A classic group of two members, as its coordinator stores it.
    let subscription = encode_subscription(&Subscription {
        version: 3,
        topics: vec!["orders".into()],
        rack_id: Some("rack-a".into()),
        generation_id: 2,
        ..Subscription::default()
    });
    let member = |id: &str, partitions: Vec<i32>| StoredMember {
        member_id: id.into(),
        group_instance_id: None,
        client_id: "classic".into(),
        client_host: "/127.0.0.1".into(),
        rebalance_timeout_ms: 30_000,
        session_timeout_ms: 10_000,
        subscription: subscription.clone(),
        assignment: encode_assignment(3, &vec![("orders".into(), partitions)]),
    };
    let value = GroupValue {
        protocol_type: "consumer".into(),
        generation: 2,
        protocol: Some("range".into()),
        leader: Some("a".into()),
        current_state_timestamp: BASE_TIMESTAMP_MS,
        members: vec![member("a", vec![0, 1]), member("b", vec![2, 3])],
    };
    let group_key = RecordKey::Group { group: "g".into() }.encode();
    let mut records: Vec<(Bytes, Option<Bytes>)> = vec![
        (group_key.clone(), Some(value.encode())),
        (
            RecordKey::Offset {
                group: "g".into(),
                topic: "orders".into(),
                partition: 0,
            }
            .encode(),
            Some(
                OffsetValue {
                    offset: 42,
                    leader_epoch: 1,
                    metadata: String::new(),
                    commit_timestamp: BASE_TIMESTAMP_MS,
                    expire_timestamp: -1,
                }
                .encode(),
            ),
        ),
        // Its upgrade: the classic tombstone, the converted group, a
        // member of the new protocol joining, then the group deleted.
        (group_key, None),
    ];
    let topics = TopicsImage::default().with_topic("orders", 4);
    let mut classic = Group::new("g".into(), 0);
    classic.load(value, 0);
    let converted = ConsumerGroup::from_classic(&classic, &topics).expect("a consumer protocol");
    let mut groups = std::collections::BTreeMap::new();
    for r in &converted {
        replay_into(&mut groups, r);
    }
    let group_config = ConsumerGroupConfig::default();
    let join = groups["g"]
        .heartbeat(
            &HeartbeatRequest {
                api_version: 1,
                group_id: "g".into(),
                member_id: "c".into(),
                member_epoch: 0,
                rebalance_timeout_ms: 30_000,
                subscribed_topic_regex: Some("ord.*".into()),
                topic_partitions: Some(vec![]),
                client_id: "new".into(),
                client_host: "/127.0.0.1".into(),
                ..HeartbeatRequest::default()
            },
            &HeartbeatContext {
                now_ms: BASE_TIMESTAMP_MS,
                config: &group_config,
                topics: &topics,
                fresh_member_id: "unused",
                may_describe: None,
                session_deadline_ms: None,
            },
        )
        .expect("the join");
    for r in &join.records {
        replay_into(&mut groups, r);
    }
    let mut consumer_records = converted;
    consumer_records.extend(join.records);
    consumer_records.extend(groups["g"].delete_records());
    records.extend(
        consumer_records
            .iter()
            .map(|r| (r.encode_key(), r.encode_value())),
    );

    let root = tempfile::tempdir().expect("tempdir");
    let data_dir = root.path().to_path_buf();
    let tp = TopicPartition::new("__consumer_offsets", 0);
    let dir = data_dir.join(tp.dir_name());
    let count = records.len();
    run(move || async move {
        let params = OpenParams {
            recovery_point: 0,
            log_start_offset: 0,
            clean_shutdown: false,
            now_ms: BASE_TIMESTAMP_MS,
        };
        let mut log = PartitionLog::open(&data_dir, tp, config(), params, None)
            .await
            .expect("open");
        let specs: Vec<KeyedRecordSpec<'_>> = records
            .iter()
            .map(|(k, v)| (0, Some(&k[..]), v.as_deref()))
            .collect();
        let batch = build_keyed_batch(0, -1, BASE_TIMESTAMP_MS, &specs);
        log.append_as_leader(BytesMut::from(&batch[..]), 0, None, BASE_TIMESTAMP_MS)
            .await
            .expect("append");
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        log.close().await.expect("close");
    });
    let files = segment_files(&dir);
    let logs: Vec<&PathBuf> = files["log"].iter().collect();
    let dump = dump_log_segments(
        &java,
        &libs,
        &[
            "--offsets-decoder".to_string(),
            "--files".to_string(),
            joined(&logs),
        ],
    );
    check_no_reports(&dump);
    let decoded: Vec<&str> = dump
        .stdout
        .lines()
        .filter(|l| l.starts_with("| offset:"))
        .collect();
    assert_eq!(decoded.len(), count, "one line per record\n{dump}");
    for line in &decoded {
        assert!(
            line.contains(" key: {") && !line.contains("Failed") && !line.contains("Unknown"),
            "a record Kafka could not decode: {line}\n{dump}"
        );
    }
    for needle in [
        "\"classicMemberMetadata\":{\"sessionTimeoutMs\":10000",
        "\"subscribedTopicRegex\":\"ord.*\"",
        "\"assignmentEpoch\"",
        "\"memberEpoch\":2",
        // Kafka 4.4's per-partition assignment epochs (KIP-1251).
        "\"assignmentEpochs\":[",
        "\"protocolType\":\"consumer\"",
        "\"offset\":42",
    ] {
        assert!(dump.stdout.contains(needle), "no {needle} in\n{dump}");
    }
}
