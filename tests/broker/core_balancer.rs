//! The core balancer (`shard.balancer.enable`): a broker of 2 shards, with
//! a skewed load (the two partitions being produced to live on one shard)
//! moves one of them to the other shard once the imbalance lasts, and only
//! that one; every record stays readable, and the placement survives a
//! restart. Timings are shortened through the settings so the test runs
//! in seconds.
//!
//! Needs kcat (`apt-get install kcat`); CI installs it.
//! `PINLOG_SKIP_CLIENT_TESTS=1` skips it, as it skips the client tests.

use crate::support;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{run_command, wait_for, Broker, BrokerOpts, CmdOutput, PINLOG_BIN};

const TOPIC: &str = "skew";
const PARTITIONS: i32 = 4;
/// Records per kcat run, of [`VALUE_BYTES`] each.
const RECORDS_PER_ROUND: usize = 3_000;
const VALUE_BYTES: usize = 1_000;
/// How long the producer may push before the balancer must have moved.
const BALANCE_DEADLINE: Duration = Duration::from_secs(45);
const CLI_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a partition may name no shard (a move takes milliseconds).
const SHARDS_SETTLE: Duration = Duration::from_secs(10);

fn skip() -> bool {
    std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1")
}

fn pinlog(broker: &Broker, args: &[&str]) -> CmdOutput {
    run_command(
        Command::new(PINLOG_BIN)
            .args(args)
            .args(["--bootstrap-server", &broker.bootstrap()]),
        None,
        CLI_TIMEOUT,
    )
}

/// Each partition's shard, from `topic describe --json`. A partition in
/// the middle of a move is open on neither shard for a few milliseconds
/// and answers NOT_LEADER_OR_FOLLOWER (as designed: clients retry), so the
/// description is asked again, a bounded number of times, until every
/// partition names its shard.
fn shards(broker: &Broker) -> BTreeMap<i32, i64> {
    let mut found: BTreeMap<i32, Option<i64>> = BTreeMap::new();
    let mut partitions = Vec::new();
    let settled = wait_for(SHARDS_SETTLE, || {
        let out = pinlog(broker, &["topic", "describe", TOPIC, "--json"]);
        assert!(out.success(), "{out}");
        let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
        partitions = v["topics"][0]["partitions"]
            .as_array()
            .expect("partitions")
            .clone();
        found = partitions
            .iter()
            .map(|p| {
                (
                    p["partition"].as_i64().unwrap() as i32,
                    p["leader_shard"].as_i64(),
                )
            })
            .collect();
        found.values().all(Option::is_some)
    });
    if !settled {
        broker.fail(&format!(
            "a partition named no shard for {SHARDS_SETTLE:?}: {partitions:?}"
        ));
    }
    found.into_iter().map(|(p, s)| (p, s.unwrap())).collect()
}

fn produce(broker: &Broker, partition: i32, round: usize) {
    let value = "x".repeat(VALUE_BYTES);
    let input: String = (0..RECORDS_PER_ROUND)
        .map(|i| format!("{round}-{i}-{value}\n"))
        .collect();
    let out = run_command(
        Command::new("kcat").args([
            "-P",
            "-b",
            &broker.bootstrap(),
            "-t",
            TOPIC,
            "-p",
            &partition.to_string(),
            "-X",
            "acks=1",
            "-X",
            "message.timeout.ms=30000",
        ]),
        Some(input.as_bytes()),
        Duration::from_secs(60),
    );
    assert!(out.success(), "{out}");
}

fn count(broker: &Broker, partition: i32) -> usize {
    let out = run_command(
        Command::new("kcat")
            .args(["-C", "-b", &broker.bootstrap(), "-t", TOPIC])
            .args(["-p", &partition.to_string(), "-o", "beginning", "-e", "-q"])
            .stdin(std::process::Stdio::null()),
        None,
        Duration::from_secs(60),
    );
    assert!(out.success(), "{out}");
    out.stdout.lines().filter(|l| !l.is_empty()).count()
}

#[test]
fn a_skewed_load_is_spread_over_the_shards() {
    if skip() {
        return;
    }
    let mut broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .setting("shard.balancer.enable", true)
            .setting("shard.balancer.interval.ms", 500)
            .setting("shard.balancer.sustain.ms", 1500)
            .setting("shard.balancer.threshold.percent", 25)
            .setting("shard.balancer.min.bytes.per.sec", 100_000),
    );
    let partitions = PARTITIONS.to_string();
    let out = pinlog(
        &broker,
        &["topic", "create", TOPIC, "--partitions", &partitions],
    );
    assert!(out.success(), "{out}");
    // Two partitions on the same shard: the hot pair.
    let before = shards(&broker);
    let (a, b) = {
        let on = |s: i64| -> Vec<i32> {
            before
                .iter()
                .filter(|(_, &x)| x == s)
                .map(|(&p, _)| p)
                .collect()
        };
        let pair = [on(0), on(1)]
            .into_iter()
            .find(|v| v.len() >= 2)
            .expect("4 partitions on 2 shards put two on one shard");
        (pair[0], pair[1])
    };
    assert_eq!(
        broker.metric_total("pinlog_shard_balancer_moves_total"),
        Some(0.0)
    );

    let started = Instant::now();
    let mut round = 0;
    let mut produced = [0usize; 2];
    let balanced = loop {
        produce(&broker, a, round);
        produce(&broker, b, round);
        produced[0] += RECORDS_PER_ROUND;
        produced[1] += RECORDS_PER_ROUND;
        round += 1;
        let now = shards(&broker);
        if now[&a] != now[&b] {
            break now;
        }
        if started.elapsed() > BALANCE_DEADLINE {
            broker.fail(&format!(
                "the balancer did not move {TOPIC}-{a} or {TOPIC}-{b} off their shared shard \
                 within {BALANCE_DEADLINE:?}: {now:?}"
            ));
        }
    };
    // One move balanced it; more rounds of the same load move nothing.
    for _ in 0..3 {
        produce(&broker, a, round);
        produce(&broker, b, round);
        produced[0] += RECORDS_PER_ROUND;
        produced[1] += RECORDS_PER_ROUND;
        round += 1;
    }
    // Proving that nothing moves takes a wait of fixed length: four
    // balancer intervals past the load's end.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(shards(&broker), balanced, "the balancer moved again");
    assert_eq!(
        broker.metric_total("pinlog_shard_balancer_moves_total"),
        Some(1.0),
        "{}",
        broker.log()
    );
    assert!(
        broker.log().contains("balancing the shards"),
        "the move is logged with its reason"
    );
    assert_eq!(count(&broker, a), produced[0]);
    assert_eq!(count(&broker, b), produced[1]);

    broker.restart();
    assert_eq!(
        shards(&broker),
        balanced,
        "the placement survives a restart"
    );
    assert_eq!(count(&broker, a), produced[0]);
    assert_eq!(count(&broker, b), produced[1]);
}
