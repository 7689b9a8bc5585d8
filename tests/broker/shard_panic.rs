//! A panicking shard must not leave a broker that neither serves nor exits
//! (what a glommio task-refcount panic once did: the other shard waited for
//! the dead one forever). The process halts at once with exit status
//! `EXIT_AFTER_PANIC`, writes no clean-shutdown marker, and the next start
//! recovers and serves what was created before the panic.

use crate::support;

use std::process::Command;
use std::time::Duration;

use pinlog::server::lifecycle::broker::{EXIT_AFTER_PANIC, TEST_PANIC_ENV};
use support::{run_command, Broker, BrokerOpts, PINLOG_BIN};

/// The failpoint fires this long after the last shard serves: time enough
/// to create a topic first.
const PANIC_AFTER_MS: u64 = 3_000;
const CLI_TIMEOUT: Duration = Duration::from_secs(30);

fn cli(broker: &Broker, args: &[&str]) -> support::CmdOutput {
    let bootstrap = broker.bootstrap();
    let mut all = args.to_vec();
    all.extend_from_slice(&["--bootstrap-server", &bootstrap]);
    run_command(Command::new(PINLOG_BIN).args(&all), None, CLI_TIMEOUT)
}

/// The `clean_shutdown_before` the broker's latest start reported.
fn last_start_was_clean(log: &str) -> Option<bool> {
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains("pinlog is serving Kafka clients"))?;
    Some(line.contains("clean_shutdown_before=true"))
}

#[test]
fn a_shard_panic_ends_the_process_and_the_next_start_recovers() {
    let mut broker = Broker::start(
        BrokerOpts::new()
            .shards(2)
            .env("NO_COLOR", "1")
            .env(TEST_PANIC_ENV, &PANIC_AFTER_MS.to_string()),
    );
    cli(
        &broker,
        &["topic", "create", "before-panic", "--partitions", "4"],
    )
    .assert_success();
    // The failpoint fires PANIC_AFTER_MS after the start; the halt follows
    // at once (this bound only keeps a broken build from hanging the test).
    let status = broker.wait_exit(Duration::from_secs(30));
    match status {
        None => broker.fail("the broker kept running after a shard panicked"),
        // The hook's own exit, not a stop that ran its course.
        Some(status) => assert_eq!(
            status.code(),
            Some(EXIT_AFTER_PANIC),
            "the broker did not halt from the panic hook: {status}\n{}",
            broker.log()
        ),
    }
    let log = broker.log();
    assert!(log.contains("asked this shard to panic"), "{log}");
    assert!(log.contains("a shard panicked"), "{log}");
    assert!(
        !log.contains("clean=true"),
        "no clean stop after a panic: {log}"
    );

    // Without the failpoint the same directory starts, through recovery.
    broker.clear_env(TEST_PANIC_ENV);
    broker.restart();
    assert_eq!(
        last_start_was_clean(&broker.log()),
        Some(false),
        "the start after a panic is an unclean one: {}",
        broker.log()
    );
    let describe = cli(&broker, &["topic", "describe", "before-panic", "--json"]);
    describe.assert_success();
    let v: serde_json::Value = serde_json::from_str(&describe.stdout).unwrap();
    assert_eq!(
        v["topics"][0]["partitions"].as_array().map(Vec::len),
        Some(4)
    );
    broker.stop();
}
