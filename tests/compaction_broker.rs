//! The log cleaner inside the real broker: a compacted topic with tiny
//! segments and a short cleaner backoff, keyed writes (overwrites and
//! tombstones) with kcat, and kill -9 again and again while the shards
//! clean. After every restart each key must still read as its latest
//! acknowledged value, and the partitions must pass `log verify`.
//!
//! Needs kcat (`apt-get install kcat`; CI installs it);
//! `PINLOG_SKIP_CLIENT_TESTS=1` skips it, as it skips the client tests.

mod support;

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
/// `key -> (partition, offset, value)`, checking offsets increase.
fn read_latest(broker: &Broker) -> HashMap<String, (i64, i64, Option<String>)> {
    let out = run_command(
        kcat(broker).args([
            "-C",
            "-t",
            TOPIC,
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
    let mut latest: HashMap<String, (i64, i64, Option<String>)> = HashMap::new();
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
    latest
}

#[test]
fn kill_9_while_cleaning_keeps_every_keys_latest_value() {
    if skip_requested() {
        eprintln!(
            "*** SKIPPED (PINLOG_SKIP_CLIENT_TESTS=1): compaction under kill -9 NOT checked ***"
        );
        return;
    }
    assert!(
        which("kcat").is_some(),
        "kcat is not available; install it with `apt-get install kcat` (CI does), \
         or set PINLOG_SKIP_CLIENT_TESTS=1"
    );
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
