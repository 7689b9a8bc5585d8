//! Dynamic broker settings and live topic settings, driven by an
//! unmodified client (confluent-kafka's AdminClient, librdkafka) against a
//! real `pinlog serve`:
//!
//! - `log.segment.bytes` / `log.retention.ms` set on the broker resource
//!   become every topic's defaults at once, reported by DescribeConfigs with
//!   source DYNAMIC_DEFAULT_BROKER_CONFIG, and take effect on the log live
//!   (the next appends roll 2 KiB segments);
//! - a setting that cannot change at runtime and a bad value are refused
//!   with a reason;
//! - a topic override beats the dynamic default, and removing the dynamic
//!   default restores the static one;
//! - the settings survive a restart (they live in the metadata log);
//! - a setting of the broker's config file is reported as
//!   STATIC_BROKER_CONFIG, with its broker setting among its synonyms.
//!
//! Loopback only, free ports, bounded waits. `PINLOG_SKIP_CLIENT_TESTS=1`
//! skips it, as in `tests/broker/clients.rs`.

use crate::support;

use std::process::Command;
use std::time::Duration;

use support::{run_command, Broker, BrokerOpts, CmdOutput};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/clients/broker_configs.py"
);
const STEP_TIMEOUT: Duration = Duration::from_secs(90);
/// Kafka's ConfigSource codes.
const DYNAMIC_TOPIC_CONFIG: i64 = 1;
const DYNAMIC_DEFAULT_BROKER_CONFIG: i64 = 3;
const STATIC_BROKER_CONFIG: i64 = 4;
const DEFAULT_CONFIG: i64 = 5;
/// `log.roll.ms` as the broker's config file sets it.
const FILE_ROLL_MS: i64 = 86_400_000;

fn step(broker: &Broker, topic: &str, step: &str) -> serde_json::Value {
    let out: CmdOutput = run_command(
        Command::new("python3").args([SCRIPT, &broker.bootstrap(), topic, step]),
        None,
        STEP_TIMEOUT,
    );
    out.assert_success();
    let line = out.stdout.lines().last().unwrap_or_default().to_string();
    serde_json::from_str(&line)
        .unwrap_or_else(|e| broker.fail(&format!("step {step}: bad output {line:?}: {e}")))
}

fn source(v: &serde_json::Value, key: &str) -> (String, i64) {
    (
        v[key]["value"].as_str().unwrap_or_default().to_string(),
        v[key]["source"].as_i64().unwrap_or(-1),
    )
}

fn log_files(broker: &Broker, topic: &str) -> usize {
    let dir = broker.data_dir().join(format!("{topic}-0"));
    std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn dynamic_broker_defaults_apply_live_and_survive_restart() {
    if std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("*** SKIPPED (PINLOG_SKIP_CLIENT_TESTS=1): dynamic configs NOT checked ***");
        return;
    }
    let mut broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .setting("log.roll.ms", FILE_ROLL_MS),
    );
    let topic = "dyn";
    // Auto-created on first produce, with the static defaults.
    step(&broker, topic, "produce 5");
    let before = step(&broker, topic, "describe");
    assert_eq!(
        source(&before, "segment.bytes").1,
        DEFAULT_CONFIG,
        "{before}"
    );
    // A setting of the config file is the file's (STATIC_BROKER_CONFIG),
    // with the broker setting behind it among its synonyms.
    assert_eq!(
        source(&before, "segment.ms"),
        (FILE_ROLL_MS.to_string(), STATIC_BROKER_CONFIG),
        "{before}"
    );
    assert!(
        before["segment.ms"]["synonyms"]
            .as_array()
            .is_some_and(|s| s.iter().any(|n| n == "log.roll.ms")),
        "{before}"
    );
    assert_eq!(log_files(&broker, topic), 1);

    let set = step(&broker, topic, "set-broker");
    let refused = set["refused"].as_str().unwrap_or_default();
    assert!(refused.contains("cannot change at runtime"), "{set}");
    assert!(
        set["bad_value"].as_str().is_some(),
        "a negative retention is refused: {set}"
    );
    assert_eq!(set["broker"]["log.segment.bytes"]["value"], "2048", "{set}");
    assert_eq!(
        set["broker"]["log.segment.bytes"]["source"], DYNAMIC_DEFAULT_BROKER_CONFIG,
        "{set}"
    );

    let after = step(&broker, topic, "describe");
    assert_eq!(
        source(&after, "segment.bytes"),
        ("2048".to_string(), DYNAMIC_DEFAULT_BROKER_CONFIG),
        "{after}"
    );
    assert_eq!(
        source(&after, "retention.ms"),
        ("3600000".to_string(), DYNAMIC_DEFAULT_BROKER_CONFIG),
        "{after}"
    );
    // Live: 200 records of ~170 bytes on disk now roll 2 KiB segments.
    step(&broker, topic, "produce 200");
    let files = log_files(&broker, topic);
    assert!(
        files >= 10,
        "expected 2 KiB segments after the change, found {files} files"
    );

    // A topic override beats the dynamic default.
    step(&broker, topic, "set-topic");
    let topic_level = step(&broker, topic, "describe");
    assert_eq!(
        source(&topic_level, "cleanup.policy"),
        ("compact".to_string(), DYNAMIC_TOPIC_CONFIG),
        "{topic_level}"
    );

    // The dynamic settings live in the metadata log.
    broker.stop();
    broker.restart();
    let restarted = step(&broker, topic, "describe");
    assert_eq!(
        source(&restarted, "segment.bytes"),
        ("2048".to_string(), DYNAMIC_DEFAULT_BROKER_CONFIG),
        "{restarted}"
    );

    step(&broker, topic, "unset-broker");
    let unset = step(&broker, topic, "describe");
    assert_eq!(source(&unset, "segment.bytes").1, DEFAULT_CONFIG, "{unset}");
    assert_eq!(
        source(&unset, "retention.ms").1,
        DYNAMIC_DEFAULT_BROKER_CONFIG,
        "only the deleted one goes back: {unset}"
    );
    broker.stop();
}
