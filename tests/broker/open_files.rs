//! A topic whose partitions would not fit under the broker's open-files
//! limit is refused up front with a reason, instead of failing halfway
//! (metadata naming partitions that could not be opened, and a data
//! directory that no longer starts under the same limit: "Broken under
//! load" in `tuning/results.md`). Runs the real broker under a small
//! RLIMIT_NOFILE and drives it with the `pinlog` CLI.

use crate::support;

use std::process::Command;
use std::time::Duration;

use support::{run_command, Broker, BrokerOpts, PINLOG_BIN};

const STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// Small enough that 1,000 partitions (a descriptor each, plus the headroom
/// kept for connections) cannot fit.
const OPEN_FILES_LIMIT: u64 = 1024;

fn cli(broker: &Broker, args: &[&str]) -> support::CmdOutput {
    let bootstrap = broker.bootstrap();
    let mut all = args.to_vec();
    all.extend_from_slice(&["--bootstrap-server", &bootstrap]);
    run_command(Command::new(PINLOG_BIN).args(&all), None, STEP_TIMEOUT)
}

#[test]
fn partitions_beyond_the_open_files_limit_are_refused_whole() {
    let mut broker = Broker::start(BrokerOpts::new().open_files_limit(OPEN_FILES_LIMIT));
    let refused = cli(
        &broker,
        &["topic", "create", "huge", "--partitions", "1000"],
    );
    assert!(!refused.success(), "{}", refused.display_with(20));
    assert!(
        refused.stderr.contains("open files") && refused.stderr.contains("limit"),
        "the error says why and what to do: {}",
        refused.display_with(20)
    );
    let list = cli(&broker, &["topic", "list"]);
    list.assert_success();
    assert!(
        !list.stdout.contains("huge"),
        "nothing half-created: {}",
        list.stdout
    );

    // What fits is created, and grows only as far as the limit allows.
    cli(&broker, &["topic", "create", "fits", "--partitions", "50"]).assert_success();
    let grow = cli(&broker, &["topic", "alter", "fits", "--partitions", "2000"]);
    assert!(!grow.success(), "{}", grow.display_with(20));
    assert!(
        grow.stderr.contains("open files"),
        "{}",
        grow.display_with(20)
    );

    // The data directory still starts under the same limit.
    broker.stop();
    broker.restart();
    let describe = cli(&broker, &["topic", "describe", "fits", "--json"]);
    describe.assert_success();
    let v: serde_json::Value = serde_json::from_str(&describe.stdout).unwrap();
    assert_eq!(
        v["topics"][0]["partitions"].as_array().map(Vec::len),
        Some(50)
    );
    broker.stop();
}
