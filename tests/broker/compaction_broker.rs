//! The log cleaner inside the real broker: a compacted topic with tiny
//! segments and a short cleaner backoff, keyed writes (overwrites and
//! tombstones) with kcat, and kill -9 again and again while the shards
//! clean. After every restart each key must still read as its latest
//! acknowledged value, and the partitions must pass `log verify`.
//!
//! A second test switches a topic from `delete` to `compact` with
//! IncrementalAlterConfigs and expects the cleaner to take it up live.
//!
//! Needs kcat (`apt-get install kcat`) and confluent-kafka (`pip install
//! confluent-kafka`); CI installs both. `PINLOG_SKIP_CLIENT_TESTS=1` skips
//! these tests, as it skips the client tests.

use crate::support;

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use support::{run_command, which, Broker, BrokerOpts};

const TOPIC: &str = "compacted";
const PARTITIONS: i64 = 2;
const ROUNDS: usize = 16;
const RECORDS_PER_ROUND: usize = 300;
const KEYS: usize = 40;
/// Every key divisible by this is deleted (a tombstone) in odd rounds.
const TOMBSTONE_EVERY: usize = 7;
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
/// The kill comes this many milliseconds (at most) after the writes.
const KILL_WINDOW_MS: u64 = 80;

fn skip_requested() -> bool {
    std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1")
}

fn require_kcat() {
    assert!(
        which("kcat").is_some(),
        "kcat is not available; install it with `apt-get install kcat` (CI does), \
         or set PINLOG_SKIP_CLIENT_TESTS=1"
    );
}

fn kcat(broker: &Broker) -> Command {
    let mut cmd = Command::new("kcat");
    cmd.args(["-b", &broker.bootstrap()]);
    cmd
}

/// `key -> Some(value)` or `None` for a tombstone, in write order.
fn round_records(round: usize) -> Vec<(String, Option<String>)> {
    (0..RECORDS_PER_ROUND)
        .map(|i| {
            let k = i % KEYS;
            let key = format!("key-{k:02}");
            if round % 2 == 1 && k % TOMBSTONE_EVERY == 0 {
                (key, None)
            } else {
                (key, Some(format!("r{round}-i{i}-{}", "p".repeat(40 + k))))
            }
        })
        .collect()
}

/// Each key's latest record as kcat reads the whole topic:
/// A key's latest record as read: (partition, offset, value).
type Latest = HashMap<String, (i64, i64, Option<String>)>;

/// `key -> (partition, offset, value)`, checking offsets increase.
fn read_latest(broker: &Broker) -> Latest {
    read_latest_of(broker, TOPIC).0
}

/// [`read_latest`] of `topic`, and how many records it holds.
fn read_latest_of(broker: &Broker, topic: &str) -> (Latest, usize) {
    let out = run_command(
        kcat(broker).args([
            "-C",
            "-t",
            topic,
            "-o",
            "beginning",
            "-e",
            "-f",
            "%p\t%o\t%k\t%S\t%s\n",
        ]),
        None,
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        broker.fail(&format!("kcat -C failed: {out}"));
    }
    let mut latest: Latest = HashMap::new();
    let mut last_offset: HashMap<i64, i64> = HashMap::new();
    for line in out.stdout.lines() {
        let f: Vec<&str> = line.splitn(5, '\t').collect();
        assert_eq!(f.len(), 5, "unexpected kcat line {line:?}");
        let (p, o): (i64, i64) = (f[0].parse().unwrap(), f[1].parse().unwrap());
        let prev = last_offset.insert(p, o).unwrap_or(-1);
        assert!(o > prev, "partition {p}: offset {o} after {prev}");
        let value = (f[3] != "-1").then(|| f[4].to_string());
        latest.insert(f[2].to_string(), (p, o, value));
    }
    (latest, out.stdout.lines().count())
}

#[test]
fn kill_9_while_cleaning_keeps_every_keys_latest_value() {
    if skip_requested() {
        eprintln!(
            "*** SKIPPED (PINLOG_SKIP_CLIENT_TESTS=1): compaction under kill -9 NOT checked ***"
        );
        return;
    }
    require_kcat();
    let mut broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .setting("num.partitions", PARTITIONS)
            .setting("log.cleanup.policy", "compact")
            .setting("log.segment.bytes", 4096)
            .setting("log.cleaner.backoff.ms", 20)
            .setting("log.cleaner.min.cleanable.ratio", 0.01)
            .env("RUST_LOG", "info"),
    );
    let mut expected: HashMap<String, Option<String>> = HashMap::new();
    // A fixed xorshift sequence: the kill lands at different points of the
    // cleaning in each round, and a failure replays.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for round in 0..ROUNDS {
        let records = round_records(round);
        let mut input = String::new();
        for (k, v) in &records {
            input.push_str(&format!("{k}|{}\n", v.as_deref().unwrap_or("")));
        }
        // -Z: an empty value is sent as null, a tombstone. kcat exits 0 only
        // once every record was acknowledged (acks=all).
        let out = run_command(
            kcat(&broker).args(["-P", "-t", TOPIC, "-K", "|", "-Z", "-X", "acks=all"]),
            Some(input.as_bytes()),
            CLIENT_TIMEOUT,
        );
        if !out.success() {
            broker.fail(&format!("round {round}: kcat -P failed: {out}"));
        }
        for (k, v) in records {
            expected.insert(k, v);
        }
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Cleans start within the 20 ms backoff after the writes and take
        // some 10-30 ms here: aim the kill into that window.
        std::thread::sleep(Duration::from_millis(seed % KILL_WINDOW_MS));
        broker.kill9();
        broker.restart();
        let latest = read_latest(&broker);
        for (key, want) in &expected {
            match (want, latest.get(key)) {
                (Some(v), Some((_, _, got))) => assert_eq!(
                    got.as_ref(),
                    Some(v),
                    "round {round}: key {key} reads an old value"
                ),
                (Some(_), None) => broker.fail(&format!("round {round}: key {key} was lost")),
                // delete.retention.ms is a day: the tombstone is still there.
                (None, Some((_, _, got))) => {
                    assert_eq!(got, &None, "round {round}: deleted key {key} came back")
                }
                (None, None) => {}
            }
        }
        assert_eq!(latest.len(), expected.len(), "round {round}: keys differ");
    }
    let log = broker.log();
    let cleans = log.matches("log cleaner: cleaned partition").count();
    assert!(cleans >= ROUNDS, "only {cleans} cleans ran:\n{log}");
    // Where the kills landed depends on timing; say how often one caught a
    // clean between its first write and its last rename.
    eprintln!(
        "{cleans} cleans; recovery undid {} and finished {} interrupted ones",
        log.matches("deleting the file of an interrupted clean")
            .count(),
        log.matches("finished an interrupted clean's swap").count()
    );
    broker.stop();
    for p in 0..PARTITIONS {
        let dir = broker.data_dir().join(format!("{TOPIC}-{p}"));
        let report = pinlog::tools::verify::verify_partition_dir(&dir);
        let errors: Vec<String> = report.errors().map(|e| format!("{e:?}")).collect();
        assert!(report.is_ok(), "{}: {errors:#?}", dir.display());
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap"))
            .collect();
        assert!(leftovers.is_empty(), "{}: {leftovers:?}", dir.display());
    }
}

/// The confluent-kafka side of the live test: create a `delete` topic with
/// 1 KiB segments, write 10 keys 10 times (one batch each, so segments
/// roll) and a record without a key, switch the topic to `compact` with
/// IncrementalAlterConfigs, check that a keyless record is now refused,
/// and write one more round.
const LIVE_SCRIPT: &str = r#"
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                   ConfigResource, NewTopic)
b, topic = sys.argv[1], sys.argv[2]
conf = {"bootstrap.servers": b, "socket.timeout.ms": 10000}
admin = AdminClient(conf)
for f in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
        config={"cleanup.policy": "delete", "segment.bytes": "1024"})]).values():
    f.result(timeout=30)
p = Producer(dict(conf, **{"linger.ms": 0, "message.timeout.ms": 30000}))
errors = []
def produce(key, value):
    p.produce(topic, key=key, value=value,
              on_delivery=lambda e, m: errors.append(e) if e is not None else None)
    p.flush(30)
for r in range(10):
    for k in range(10):
        produce("k%d" % k, "r%d-k%d-%s" % (r, k, "v" * 50))
produce(None, "no key, accepted under delete")
assert not errors, errors
res = admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=[
    ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
    ConfigEntry("min.cleanable.dirty.ratio", "0.01", incremental_operation=AlterConfigOpType.SET),
])])
for f in res.values():
    f.result(timeout=30)
produce(None, "no key, refused under compact")
assert len(errors) == 1 and "INVALID_RECORD" in str(errors[0]), errors
print("keyless record refused: %s" % errors[0], flush=True)
errors.clear()
for k in range(10):
    produce("k%d" % k, "final-k%d" % k)
assert not errors, errors
print("done", flush=True)
"#;

#[test]
fn switching_a_topic_to_compact_applies_live() {
    if skip_requested() {
        eprintln!("*** SKIPPED (PINLOG_SKIP_CLIENT_TESTS=1): live cleanup.policy NOT checked ***");
        return;
    }
    require_kcat();
    let python_ok = which("python3").is_some()
        && run_command(
            Command::new("python3").args(["-c", "import confluent_kafka"]),
            None,
            CLIENT_TIMEOUT,
        )
        .success();
    assert!(
        python_ok,
        "confluent-kafka is not available; install it with `pip install confluent-kafka` \
         (CI does), or set PINLOG_SKIP_CLIENT_TESTS=1"
    );
    let broker = Broker::start(
        BrokerOpts::new()
            .setting("log.cleaner.backoff.ms", 20)
            .env("RUST_LOG", "info"),
    );
    let topic = "live";
    let out = run_command(
        Command::new("python3").args(["-c", LIVE_SCRIPT, &broker.bootstrap(), topic]),
        None,
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        broker.fail(&format!("confluent-kafka script failed: {out}"));
    }
    // 111 records were acknowledged. Once the cleaner has run over the
    // log, at most one record per key is left below the active segment
    // (which keeps up to one more per key), and the keyless one is gone.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (latest, count) = read_latest_of(&broker, topic);
        if count <= 20 && !latest.contains_key("") {
            assert_eq!(latest.len(), 10, "{latest:?}");
            for k in 0..10 {
                let (_, _, v) = &latest[&format!("k{k}")];
                assert_eq!(v.as_deref(), Some(format!("final-k{k}").as_str()));
            }
            break;
        }
        if std::time::Instant::now() > deadline {
            broker.fail(&format!("no compaction after the switch: {count} records"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
