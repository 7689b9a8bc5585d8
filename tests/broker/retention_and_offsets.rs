//! Background retention and the compaction of `__consumer_offsets`, against
//! a real `pinlog serve` driven by kafka-python
//! (`tests/clients/retention_offsets.py`) and the `pinlog` CLI.
//!
//! - `time_retention_moves_the_log_start_and_consumers_reset`: with
//!   `log.retention.check.interval.ms` short, lowering a topic's
//!   `retention.ms` live deletes its old segments on the next check and
//!   moves the log start; a group whose committed offset is now below it
//!   resumes at the new log start with `auto_offset_reset=earliest` and gets
//!   OFFSET_OUT_OF_RANGE with `none`.
//! - `consumer_offsets_stays_bounded_and_reloads`: thousands of commits of
//!   one partition's offset fill many small `__consumer_offsets` segments;
//!   the cleaner compacts them down to little more than the latest record
//!   per key, and after a restart the group reloads the last committed
//!   offset from the compacted log. Deleting `__consumer_offsets` is
//!   refused.
//!
//! Loopback only, free ports, every wait bounded. `PINLOG_SKIP_CLIENT_TESTS=1`
//! skips both, as in `tests/broker/clients.rs`.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{run_command, Broker, BrokerOpts, PINLOG_BIN};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/clients/retention_offsets.py"
);
const STEP_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a background task (a retention check, a clean) may take to show.
const BACKGROUND_TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(200);

fn skipped() -> bool {
    let skip = std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1");
    if skip {
        eprintln!(
            "*** SKIPPED (PINLOG_SKIP_CLIENT_TESTS=1): retention and offsets NOT checked ***"
        );
    }
    skip
}

fn py(broker: &Broker, args: &[&str]) -> serde_json::Value {
    let bootstrap = broker.bootstrap();
    let mut all = vec![SCRIPT, bootstrap.as_str()];
    all.extend_from_slice(args);
    let out = run_command(Command::new("python3").args(&all), None, STEP_TIMEOUT);
    out.assert_success();
    let line = out.stdout.lines().last().unwrap_or_default().to_string();
    serde_json::from_str(&line)
        .unwrap_or_else(|e| broker.fail(&format!("{args:?}: bad output {line:?}: {e}")))
}

fn cli(broker: &Broker, args: &[&str]) -> String {
    let bootstrap = broker.bootstrap();
    let mut all = args.to_vec();
    all.extend_from_slice(&["--bootstrap-server", &bootstrap]);
    let out = run_command(Command::new(PINLOG_BIN).args(&all), None, STEP_TIMEOUT);
    out.assert_success();
    out.stdout
}

fn start_offset(broker: &Broker, topic: &str) -> i64 {
    let v: serde_json::Value =
        serde_json::from_str(&cli(broker, &["topic", "describe", topic, "--json"])).unwrap();
    v["topics"][0]["partitions"][0]["start_offset"]
        .as_i64()
        .unwrap_or_else(|| broker.fail(&format!("no start offset in {v}")))
}

fn log_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Waits until `done` holds, or fails with `what`.
fn wait_for(broker: &Broker, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + BACKGROUND_TIMEOUT;
    while !done() {
        if Instant::now() > deadline {
            broker.fail(&format!("timed out waiting until {what}"));
        }
        std::thread::sleep(POLL);
    }
}

#[test]
fn time_retention_moves_the_log_start_and_consumers_reset() {
    if skipped() {
        return;
    }
    let mut broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .setting("log.retention.check.interval.ms", 200)
            .setting("group.initial.rebalance.delay.ms", 0),
    );
    let topic = "aging";
    cli(
        &broker,
        &["topic", "create", topic, "--config", "segment.bytes=4096"],
    );
    py(&broker, &["produce", topic, "200"]);
    // Two groups remember offset 5, far below where retention will cut.
    py(&broker, &["commit", "early", topic, "5", "6"]);
    py(&broker, &["commit", "strict", topic, "5", "6"]);
    assert_eq!(start_offset(&broker, topic), 0);
    let dir = broker.data_dir().join(format!("{topic}-0"));
    let before = log_bytes(&dir);

    // Live: everything older than 1 ms goes at the next check, except the
    // active segment, which Kafka never deletes.
    cli(
        &broker,
        &["topic", "alter", topic, "--set", "retention.ms=1"],
    );
    wait_for(&broker, "retention moved the log start", || {
        start_offset(&broker, topic) > 150
    });
    let start = start_offset(&broker, topic);
    assert!(
        log_bytes(&dir) < before / 4,
        "old segments are deleted from disk"
    );
    // Retention may take the active segment too (as Kafka's does once it
    // is past retention.ms): new records start where the log starts now.
    cli(
        &broker,
        &["topic", "alter", topic, "--set", "retention.ms=600000"],
    );
    py(&broker, &["produce", topic, "10"]);
    assert_eq!(start_offset(&broker, topic), start);

    let earliest = py(&broker, &["consume", "early", topic, "earliest"]);
    assert_eq!(earliest["first"].as_i64(), Some(start), "{earliest}");
    let none = py(&broker, &["consume", "strict", topic, "none"]);
    assert_eq!(none["error"], "OffsetOutOfRange", "{none}");
    broker.stop();
}

#[test]
fn consumer_offsets_stays_bounded_and_reloads() {
    if skipped() {
        return;
    }
    let mut broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .setting("offsets.topic.num.partitions", 1)
            .setting("offsets.topic.segment.bytes", 16384)
            .setting("log.cleaner.backoff.ms", 200),
    );
    let topic = "tracked";
    py(&broker, &["produce", topic, "10"]);
    const COMMITS: i64 = 3000;
    py(
        &broker,
        &["commit", "busy", topic, "1", &(COMMITS + 1).to_string()],
    );
    let dir = broker.data_dir().join("__consumer_offsets-0");
    // Each commit is one batch of at least its 61-byte header: uncompacted,
    // the partition would hold more than COMMITS * 61 bytes. Compacted, it
    // keeps the latest record per key plus the active 16 KiB segment.
    let uncompacted_at_least = COMMITS as u64 * 61;
    wait_for(&broker, "the cleaner compacted __consumer_offsets", || {
        log_bytes(&dir) < uncompacted_at_least / 4
    });
    let committed = py(&broker, &["committed", "busy", topic]);
    assert_eq!(
        committed["committed"].as_i64(),
        Some(COMMITS),
        "{committed}"
    );

    // The coordinators' state lives there: deleting it is refused.
    let bootstrap = broker.bootstrap();
    let refused = run_command(
        Command::new(PINLOG_BIN).args([
            "topic",
            "delete",
            "__consumer_offsets",
            "--bootstrap-server",
            &bootstrap,
        ]),
        None,
        STEP_TIMEOUT,
    );
    assert!(!refused.success(), "{}", refused.display_with(20));
    assert!(
        refused.stderr.contains("internal"),
        "{}",
        refused.display_with(20)
    );

    // After a crash the compacted log reloads to the same state.
    broker.kill9();
    broker.restart();
    let reloaded = py(&broker, &["committed", "busy", topic]);
    assert_eq!(reloaded["committed"].as_i64(), Some(COMMITS), "{reloaded}");
    broker.stop();
}
