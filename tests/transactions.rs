//! Transactions with real clients against a real `pinlog serve`: Apache
//! Kafka's Java client (kafka-clients 4.4) commits and aborts, runs a
//! read-process-write loop with its offsets in the transaction, and is
//! fenced by a second instance of its transactional id
//! (`tests/clients/java/TxnCheck.java`).
//!
//! Missing tools make the test FAIL with the package to install, because CI
//! installs them all; `PINLOG_SKIP_CLIENT_TESTS=1` skips it.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::{kafka_libs, run_command, which, Broker, BrokerOpts};

const CLIENTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients");
/// Outer limit for the Java program, which bounds each of its steps (60 s).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(240);

fn skipped() -> bool {
    let skip = std::env::var("PINLOG_SKIP_CLIENT_TESTS").is_ok_and(|v| v == "1");
    if skip {
        eprintln!("*** SKIPPED (PINLOG_SKIP_CLIENT_TESTS=1): transactions were NOT checked with a real client ***");
    }
    skip
}

/// Compiles TxnCheck.java into `classes`; returns the classpath.
fn compile(classes: &Path) -> String {
    assert!(
        which("java").is_some() && which("javac").is_some(),
        "the transaction tests need a JDK (java and javac, 17+): apt-get install openjdk-17-jdk-headless"
    );
    let jars = format!("{}/*", kafka_libs().display());
    run_command(
        Command::new("javac")
            .args(["-cp", &jars, "-d"])
            .arg(classes)
            .arg(Path::new(CLIENTS_DIR).join("java/TxnCheck.java")),
        None,
        CLIENT_TIMEOUT,
    )
    .assert_success();
    format!("{}:{jars}", classes.display())
}

#[test]
fn java_client_transactions_commit_abort_offsets_and_fencing() {
    if skipped() {
        return;
    }
    let classes = tempfile::tempdir().expect("temporary directory for classes");
    let cp = compile(classes.path());
    let mut broker = Broker::start(BrokerOpts::new());
    let out = run_command(
        Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-cp", &cp, "TxnCheck"])
            .arg(broker.bootstrap())
            .arg("jtx"),
        None,
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        broker.fail(&format!("TxnCheck failed:\n{out}"));
    }
    for check in ["commit-and-abort", "read-process-write", "zombie-fencing"] {
        assert!(
            out.stdout.contains(&format!("ok {check}")),
            "{check} did not pass:\n{out}"
        );
    }
    broker.stop();
}
