//! One data directory, one broker: a second `pinlog serve` on a directory
//! in use stops at once with an error naming the directory (it would
//! otherwise append to the same segments and overwrite the first broker's
//! checkpoints). The lock dies with its process, so a broker killed with
//! kill -9 never blocks the next start. A data directory the broker
//! cannot read (a corrupt checkpoint) stops the start at once too, with an
//! error naming the file.

use crate::support;

use std::process::Command;
use std::time::Duration;

use support::{free_port, run_command, Broker, BrokerOpts, PINLOG_BIN};

const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn a_second_broker_on_a_data_dir_in_use_is_refused() {
    let mut first = Broker::start(BrokerOpts::new());
    let second = run_command(
        Command::new(PINLOG_BIN)
            .arg("serve")
            .arg("--data-dir")
            .arg(first.data_dir())
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", free_port()))
            .env("NO_COLOR", "1"),
        None,
        EXIT_TIMEOUT,
    );
    assert!(
        !second.timed_out(),
        "the second broker kept running:\n{second}"
    );
    assert!(!second.success(), "the second broker started:\n{second}");
    assert!(
        second
            .stderr
            .contains("is in use by another pinlog process"),
        "{second}"
    );
    assert!(first.is_running(), "the first broker is untouched");

    // kill -9 leaves no stale lock: the same directory starts again.
    first.kill9();
    first.restart();
    assert!(first.is_running());
    first.stop();
}

#[test]
fn a_corrupt_checkpoint_stops_the_start_with_an_error_naming_it() {
    let mut broker = Broker::start(BrokerOpts::new());
    broker.stop();
    let checkpoint = broker
        .data_dir()
        .join(pinlog::constants::RECOVERY_POINT_CHECKPOINT_FILE);
    std::fs::write(&checkpoint, "garbage\n").expect("overwrite the checkpoint");
    let start = run_command(
        Command::new(PINLOG_BIN)
            .arg("serve")
            .arg("--data-dir")
            .arg(broker.data_dir())
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", free_port()))
            .env("NO_COLOR", "1"),
        None,
        EXIT_TIMEOUT,
    );
    // Before the fix the start-progress watch kept the process alive.
    assert!(!start.timed_out(), "the broker kept running:\n{start}");
    assert!(!start.success(), "the broker started:\n{start}");
    assert!(
        start.stderr.contains("corrupt checkpoint file")
            && start.stderr.contains("recovery-point-offset-checkpoint"),
        "{start}"
    );
}
