//! DeleteRecords and DescribeLogDirs against a real `pinlog serve` process
//! with two shards (so a topic's partitions live on different shards).
//!
//! - `kafka_python_deletes_records_and_describes_log_dirs`: kafka-python's
//!   `KafkaAdminClient` (`tests/clients/kafka_python_admin.py`) deletes
//!   records from partitions with small segments; ListOffsets, a consumer
//!   reading from offset 0 with `auto_offset_reset=earliest`, the files on
//!   disk and DescribeLogDirs must all agree with the new log start, also
//!   after `kill -9` and a restart.
//! - `delete_records_and_describe_log_dirs_at_every_version`: pinlog's own
//!   codec at every advertised version, for what the admin client cannot
//!   send (unknown partitions, negative offsets, a null topic list) and for
//!   the compact-only policy error.
//!
//! Loopback only, free ports, every wait bounded. Like `tests/broker/clients.rs`,
//! a missing kafka-python fails the test with what to install, and
//! `PINLOG_SKIP_CLIENT_TESTS=1` skips the part that needs it.

use crate::support;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bytes::Bytes;
use pinlog::log::batch::{build_batch, BatchSpec};
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::delete_records::{
    DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsResponse, DeleteRecordsTopic,
    HIGH_WATERMARK, INVALID_LOW_WATERMARK,
};
use pinlog::protocol::messages::describe_log_dirs::{
    DescribableLogDirTopic, DescribeLogDirsRequest, DescribeLogDirsResponse,
};
use pinlog::protocol::messages::produce::{
    PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData,
};
use support::kafka_conn::Conn;
use support::{run_command, which, Broker, BrokerOpts, CmdOutput};

const CLIENTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients");
const SCRIPT: &str = "kafka_python_admin.py";
/// Outer limit for one script step; the script bounds each step to 60 s.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);
/// Limit for checking that kafka-python imports.
const QUICK_TIMEOUT: Duration = Duration::from_secs(30);
/// Upper bound on any socket read or write of the raw-codec client.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
const CLIENT_ID: &str = "admin-apis-test";

/// Records produced to each partition, one per batch.
const RECORDS: i64 = 200;
/// Where the first deletion moves partition 0's log start: inside a
/// segment, so that the segment holding it stays and the ones below go.
const DELETE_BEFORE: i64 = 137;
/// Small segments (Kafka's `segment.bytes`), so that a deletion has whole
/// segments to remove: about a dozen one-record batches each.
const SEGMENT_BYTES: u64 = 1024;
/// Bytes of a one-record batch of the script's values: the 61-byte batch
/// header plus the record, within these bounds.
const BATCH_BYTES_MIN: i64 = 61;
const BATCH_BYTES_MAX: i64 = 200;

// ---------------------------------------------------------------------------
// kafka-python
// ---------------------------------------------------------------------------

fn skip_requested(test: &str) -> bool {
    if std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1") {
        // Written to the stderr handle, which libtest does not capture.
        let _ = writeln!(
            std::io::stderr(),
            "*** SKIPPED {test} (PINLOG_SKIP_CLIENT_TESTS=1): pinlog was NOT checked against kafka-python ***"
        );
        return true;
    }
    false
}

fn require_kafka_python() {
    let ok = which("python3").is_some()
        && run_command(
            Command::new("python3").args(["-c", "import kafka.admin"]),
            None,
            QUICK_TIMEOUT,
        )
        .success();
    assert!(
        ok,
        "kafka-python is not available; install it with `pip install kafka-python` (CI does), \
         or set PINLOG_SKIP_CLIENT_TESTS=1 to skip the client tests"
    );
}

/// One step of the admin script against `broker`; panics with the script's
/// output and the broker's log unless it succeeds.
fn step(broker: &Broker, args: &[&str]) -> CmdOutput {
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(CLIENTS_DIR).join(SCRIPT))
        .arg(args[0])
        .arg(broker.bootstrap())
        .args(&args[1..])
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let out = run_command(&mut cmd, None, STEP_TIMEOUT);
    if !out.success() {
        broker.fail(&format!("admin script step failed:\n{out}"));
    }
    out
}

/// The script's tab-separated output lines, split.
fn fields(out: &CmdOutput) -> Vec<Vec<String>> {
    out.stdout
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// What `delete` printed: `Ok(low watermark)` or `Err(error class)`.
fn delete(broker: &Broker, topic: &str, partition: i32, offset: i64) -> Result<i64, String> {
    let out = step(
        broker,
        &["delete", topic, &partition.to_string(), &offset.to_string()],
    );
    match fields(&out).first().map(Vec::as_slice) {
        Some([k, v]) if k == "low_watermark" => Ok(v.parse().expect("a number")),
        Some([k, v]) if k == "error" => Err(v.clone()),
        _ => panic!("unexpected output of delete:\n{out}"),
    }
}

/// ListOffsets earliest and latest, through kafka-python.
fn offsets(broker: &Broker, topic: &str, partition: i32) -> (i64, i64) {
    let out = step(broker, &["offsets", topic, &partition.to_string()]);
    let f = fields(&out);
    let get = |name: &str| -> i64 {
        f.iter()
            .find(|l| l[0] == name)
            .and_then(|l| l.get(1)?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{out}"))
    };
    (get("earliest"), get("latest"))
}

/// One log directory as `logdirs` printed it.
#[derive(Debug)]
struct LogDir {
    path: String,
    error_code: i16,
    total_bytes: i64,
    usable_bytes: i64,
    /// partition -> size in bytes, of the topic asked about.
    sizes: BTreeMap<i32, i64>,
}

fn log_dirs(broker: &Broker, topic: &str) -> LogDir {
    let out = step(broker, &["logdirs", topic]);
    let f = fields(&out);
    let dirs: Vec<&Vec<String>> = f.iter().filter(|l| l[0] == "dir").collect();
    assert_eq!(dirs.len(), 1, "one log directory:\n{out}");
    let num = |s: &str| -> i64 { s.parse().unwrap_or_else(|_| panic!("{s:?} in:\n{out}")) };
    let d = dirs[0];
    let mut sizes = BTreeMap::new();
    for p in f.iter().filter(|l| l[0] == "partition") {
        assert_eq!(p[1], topic, "only the topic asked about:\n{out}");
        assert_eq!(
            (p[4].as_str(), p[5].as_str()),
            ("0", "False"),
            "lag, future:\n{out}"
        );
        sizes.insert(num(&p[2]) as i32, num(&p[3]));
    }
    LogDir {
        path: d[1].clone(),
        error_code: num(&d[2]) as i16,
        total_bytes: num(&d[3]),
        usable_bytes: num(&d[4]),
        sizes,
    }
}

/// Base offsets of the `.log` segment files of a partition directory.
fn segment_bases(dir: &Path) -> Vec<i64> {
    let mut bases: Vec<i64> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("list {}: {e}", dir.display()))
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".log")?.parse().ok()
        })
        .collect();
    bases.sort_unstable();
    bases
}

/// The admin path as a real client meets it on one broker with two shards
/// (so an admin request and the Metadata after it may land on different
/// shards): each CreateTopics and DeleteTopics is visible in Metadata as
/// soon as it is answered, while records are produced; manual replica
/// assignments are taken and checked; a topic named twice in one request is
/// refused (`tests/clients/admin_visibility.py`; `tests/clusters/admin_cluster.rs`
/// runs the same on three nodes).
#[test]
fn kafka_python_admin_requests_are_visible_at_once_and_checked_as_kafka_does() {
    if skip_requested("kafka_python_admin_requests_are_visible_at_once_and_checked_as_kafka_does") {
        return;
    }
    require_kafka_python();
    let broker = Broker::start(BrokerOpts::new().shards(2));
    let script = Path::new(CLIENTS_DIR).join("admin_visibility.py");
    for args in [
        vec!["loop", "20", "visible"],
        vec!["assignments", "1"],
        vec!["duplicates"],
    ] {
        let mut cmd = Command::new("python3");
        cmd.arg(&script)
            .arg(args[0])
            .arg(broker.bootstrap())
            .args(&args[1..]);
        let out = run_command(&mut cmd, None, STEP_TIMEOUT);
        if !out.success() {
            broker.fail(&format!("admin_visibility.py {args:?} failed:\n{out}"));
        }
    }
}

#[test]
fn kafka_python_deletes_records_and_describes_log_dirs() {
    if skip_requested("kafka_python_deletes_records_and_describes_log_dirs") {
        return;
    }
    require_kafka_python();
    let mut broker = Broker::start(BrokerOpts::new());
    let topic = "admin-delete";
    step(&broker, &["create", topic, "2", &SEGMENT_BYTES.to_string()]);
    step(&broker, &["produce", topic, "2", &RECORDS.to_string()]);
    let p0_dir = broker.data_dir().join(format!("{topic}-0"));

    // Before: every record there, sizes plausible, the data dir named as is.
    let before = log_dirs(&broker, topic);
    assert_eq!(before.error_code, 0, "{before:?}");
    assert_eq!(Path::new(&before.path), broker.data_dir(), "{before:?}");
    assert!(before.total_bytes > 0, "{before:?}");
    assert!(
        (0..=before.total_bytes).contains(&before.usable_bytes),
        "{before:?}"
    );
    assert_eq!(before.sizes.keys().copied().collect::<Vec<_>>(), [0, 1]);
    for size in before.sizes.values() {
        assert!(
            (RECORDS * BATCH_BYTES_MIN..=RECORDS * BATCH_BYTES_MAX).contains(size),
            "{before:?}"
        );
    }
    assert_eq!(offsets(&broker, topic, 0), (0, RECORDS));
    let segments_before = segment_bases(&p0_dir);
    assert!(segments_before.len() > 2, "{segments_before:?}");

    // Delete below DELETE_BEFORE on partition 0.
    assert_eq!(delete(&broker, topic, 0, DELETE_BEFORE), Ok(DELETE_BEFORE));
    assert_eq!(offsets(&broker, topic, 0), (DELETE_BEFORE, RECORDS));
    let out = step(&broker, &["consume", topic, "0"]);
    let consumed: Vec<(i64, String)> = fields(&out)
        .into_iter()
        .map(|l| (l[0].parse().expect("offset"), l[1].clone()))
        .collect();
    let expected: Vec<(i64, String)> = (DELETE_BEFORE..RECORDS)
        .map(|o| (o, format!("0:{o:06}")))
        .collect();
    assert_eq!(
        consumed, expected,
        "a consumer from 0 resets to the new log start"
    );
    let segments_after = segment_bases(&p0_dir);
    assert!(
        segments_after.len() < segments_before.len(),
        "whole segments below the log start are deleted: {segments_before:?} -> {segments_after:?}"
    );
    assert!(
        segments_after[0] <= DELETE_BEFORE
            && segments_after.get(1).is_none_or(|b| *b > DELETE_BEFORE),
        "the segment holding the new log start is the first kept: {segments_after:?}"
    );

    // Above the high watermark: refused, nothing moves. Below the log
    // start: nothing moves, the answer is the log start.
    assert_eq!(
        delete(&broker, topic, 0, RECORDS + 1),
        Err("OffsetOutOfRangeError".into())
    );
    assert_eq!(delete(&broker, topic, 0, 100), Ok(DELETE_BEFORE));
    assert_eq!(offsets(&broker, topic, 0), (DELETE_BEFORE, RECORDS));

    // -1: everything below the high watermark, on the other partition.
    assert_eq!(delete(&broker, topic, 1, HIGH_WATERMARK), Ok(RECORDS));
    assert_eq!(offsets(&broker, topic, 1), (RECORDS, RECORDS));

    let after = log_dirs(&broker, topic);
    assert!(
        after.sizes[&0] < before.sizes[&0],
        "{before:?} -> {after:?}"
    );
    assert!(after.sizes[&1] < after.sizes[&0], "{after:?}");
    assert!(after.sizes[&1] > 0, "the active segment stays: {after:?}");

    // The new log starts were checkpointed at once (the periodic checkpoint
    // is a minute away), so a crash does not bring the records back.
    broker.kill9();
    broker.restart();
    assert_eq!(offsets(&broker, topic, 0), (DELETE_BEFORE, RECORDS));
    assert_eq!(offsets(&broker, topic, 1), (RECORDS, RECORDS));
    broker.stop();
}

// ---------------------------------------------------------------------------
// pinlog's own codec
// ---------------------------------------------------------------------------

impl Conn {
    /// Appends `count` records in one batch.
    fn produce(&mut self, topic: &str, partition: i32, count: usize) {
        let version = 8;
        let values: Vec<Vec<u8>> = (0..count).map(|i| format!("v{i}").into_bytes()).collect();
        let records: Vec<_> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (i as i64, None, &v[..]))
            .collect();
        let batch = build_batch(&BatchSpec {
            base_offset: 0,
            leader_epoch: 0,
            base_timestamp: 1_700_000_000_000,
            records: &records,
        });
        let mut r = self.call(ApiKey::Produce, version, |w| {
            ProduceRequest {
                transactional_id: None,
                acks: -1,
                timeout_ms: 30_000,
                topics: vec![TopicProduceData {
                    name: topic.into(),
                    partitions: vec![PartitionProduceData {
                        index: partition,
                        records: Some(Bytes::from(batch)),
                    }],
                }],
            }
            .encode(w, version)
        });
        let resp = ProduceResponse::decode(&mut r, version).expect("decode Produce");
        let p = &resp.responses[0].partition_responses[0];
        assert_eq!(p.error_code, error_code::NONE, "{resp:?}");
    }

    /// DeleteRecords of `(topic, partition, offset)`s; answers `(topic,
    /// partition, low watermark, error)` in order.
    fn delete_records(
        &mut self,
        version: i16,
        asks: &[(&str, i32, i64)],
    ) -> Vec<(String, i32, i64, i16)> {
        let mut topics: Vec<DeleteRecordsTopic> = Vec::new();
        for (topic, partition, offset) in asks {
            let p = DeleteRecordsPartition {
                partition_index: *partition,
                offset: *offset,
            };
            match topics.last_mut() {
                Some(t) if t.name == *topic => t.partitions.push(p),
                _ => topics.push(DeleteRecordsTopic {
                    name: topic.to_string(),
                    partitions: vec![p],
                }),
            }
        }
        let mut r = self.call(ApiKey::DeleteRecords, version, |w| {
            DeleteRecordsRequest {
                topics,
                timeout_ms: 30_000,
            }
            .encode(w, version)
        });
        let resp = DeleteRecordsResponse::decode(&mut r, version).expect("decode DeleteRecords");
        assert!(r.is_empty(), "v{version}: bytes left after the response");
        resp.topics
            .into_iter()
            .flat_map(|t| {
                t.partitions.into_iter().map(move |p| {
                    (
                        t.name.clone(),
                        p.partition_index,
                        p.low_watermark,
                        p.error_code,
                    )
                })
            })
            .collect()
    }

    fn describe_log_dirs(
        &mut self,
        version: i16,
        topics: Option<Vec<DescribableLogDirTopic>>,
    ) -> DescribeLogDirsResponse {
        let mut r = self.call(ApiKey::DescribeLogDirs, version, |w| {
            DescribeLogDirsRequest { topics }.encode(w, version)
        });
        let resp =
            DescribeLogDirsResponse::decode(&mut r, version).expect("decode DescribeLogDirs");
        assert!(r.is_empty(), "v{version}: bytes left after the response");
        resp
    }
}

/// `(topic, partition, size)` of every partition a response lists.
fn listed(resp: &DescribeLogDirsResponse) -> Vec<(String, i32, i64)> {
    resp.results[0]
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.clone(), p.partition_index, p.partition_size))
        })
        .collect()
}

#[test]
fn delete_records_and_describe_log_dirs_at_every_version() {
    let mut broker = Broker::start(BrokerOpts::new());
    let mut c = Conn::open(
        SocketAddr::from(([127, 0, 0, 1], broker.port())),
        CLIENT_ID,
        IO_TIMEOUT,
    )
    .expect("connect to the broker");
    c.create_topic("plain", 2, &[]);
    c.create_topic("changelog", 1, &[("cleanup.policy", "compact")]);
    let versions_of = |key: ApiKey| {
        let s = key.support();
        s.min_version..=s.max_version
    };

    // Each version moves partition 0 forward by one of its records.
    let versions = versions_of(ApiKey::DeleteRecords);
    c.produce("plain", 0, 10);
    for (n, v) in versions.clone().enumerate() {
        let target = n as i64 + 1;
        let got = c.delete_records(
            v,
            &[
                ("plain", 0, target),
                ("plain", 0, 11),
                ("plain", 0, -2),
                ("plain", 7, 0),
                ("nope", 0, 0),
                ("changelog", 0, 0),
                ("plain", 1, HIGH_WATERMARK),
            ],
        );
        let want: Vec<(String, i32, i64, i16)> = [
            ("plain", 0, target, error_code::NONE),
            (
                "plain",
                0,
                INVALID_LOW_WATERMARK,
                error_code::OFFSET_OUT_OF_RANGE,
            ),
            (
                "plain",
                0,
                INVALID_LOW_WATERMARK,
                error_code::OFFSET_OUT_OF_RANGE,
            ),
            (
                "plain",
                7,
                INVALID_LOW_WATERMARK,
                error_code::UNKNOWN_TOPIC_OR_PARTITION,
            ),
            (
                "nope",
                0,
                INVALID_LOW_WATERMARK,
                error_code::UNKNOWN_TOPIC_OR_PARTITION,
            ),
            (
                "changelog",
                0,
                INVALID_LOW_WATERMARK,
                error_code::POLICY_VIOLATION,
            ),
            // An empty partition: the high watermark is its log start, 0.
            ("plain", 1, 0, error_code::NONE),
        ]
        .into_iter()
        .map(|(t, p, low, e)| (t.to_string(), p, low, e))
        .collect();
        assert_eq!(got, want, "DeleteRecords v{v}");
    }
    // -1 on a partition with records: up to its high watermark.
    let got = c.delete_records(versions.end().to_owned(), &[("plain", 0, HIGH_WATERMARK)]);
    assert_eq!(got, [("plain".to_string(), 0, 10, error_code::NONE)]);

    let data_dir = broker.data_dir();
    for v in versions_of(ApiKey::DescribeLogDirs) {
        // Null: every partition of the broker.
        let all = c.describe_log_dirs(v, None);
        assert_eq!(all.error_code, error_code::NONE, "v{v}");
        assert_eq!(all.results.len(), 1, "v{v}: one data directory");
        let dir = &all.results[0];
        assert_eq!(dir.error_code, error_code::NONE, "v{v}");
        assert_eq!(Path::new(&dir.log_dir), data_dir, "v{v}");
        if v >= 4 {
            assert!(dir.total_bytes > 0, "v{v}: {dir:?}");
            assert!(
                (0..=dir.total_bytes).contains(&dir.usable_bytes),
                "v{v}: {dir:?}"
            );
        }
        let names: Vec<(String, i32)> = listed(&all).into_iter().map(|(t, p, _)| (t, p)).collect();
        assert_eq!(
            names,
            [
                ("changelog".to_string(), 0),
                ("plain".to_string(), 0),
                ("plain".to_string(), 1)
            ],
            "v{v}: every partition, by topic and index"
        );
        assert!(
            dir.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .all(|p| p.offset_lag == 0 && !p.is_future_key),
            "v{v}: {dir:?}"
        );

        // A list: only what the broker holds of it.
        let some = c.describe_log_dirs(
            v,
            Some(vec![
                DescribableLogDirTopic {
                    topic: "plain".into(),
                    partitions: vec![0, 99],
                },
                DescribableLogDirTopic {
                    topic: "nope".into(),
                    partitions: vec![0],
                },
            ]),
        );
        let got = listed(&some);
        assert_eq!(got.len(), 1, "v{v}: {got:?}");
        assert_eq!((got[0].0.as_str(), got[0].1), ("plain", 0), "v{v}");
        assert!(got[0].2 > 0, "v{v}: the active segment holds the batch");
    }
    drop(c);
    broker.stop();
}
