//! Transactions with real clients against a real `pinlog serve`, on one
//! broker and on a 3-node cluster: Apache Kafka's Java client
//! (kafka-clients 4.4) commits and aborts, runs a read-process-write loop
//! with its offsets in the transaction, and is fenced by a second instance
//! of its transactional id (`tests/clients/java/TxnCheck.java`). On the
//! cluster every topic has three replicas, and the program runs again
//! after a node is killed, so the coordinators of some ids move.
//!
//! Missing tools make the test FAIL with the package to install, because CI
//! installs them all; `PINLOG_SKIP_CLIENT_TESTS=1` skips it.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::{kafka_libs, run_command, which, Broker, BrokerOpts, Cluster, CmdOutput};

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

/// Runs TxnCheck against `bootstrap` for topics `<prefix>-in/out`.
fn txn_check(cp: &str, bootstrap: &str, prefix: &str, replication_factor: u16) -> CmdOutput {
    run_command(
        Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-cp", cp, "TxnCheck"])
            .arg(bootstrap)
            .arg(prefix)
            .arg(replication_factor.to_string()),
        None,
        CLIENT_TIMEOUT,
    )
}

fn passed(out: &CmdOutput) -> Result<(), String> {
    if !out.success() {
        return Err(format!("TxnCheck failed:\n{out}"));
    }
    for check in ["commit-and-abort", "read-process-write", "zombie-fencing"] {
        if !out.stdout.contains(&format!("ok {check}")) {
            return Err(format!("{check} did not pass:\n{out}"));
        }
    }
    Ok(())
}

#[test]
fn java_client_transactions_commit_abort_offsets_and_fencing() {
    if skipped() {
        return;
    }
    let classes = tempfile::tempdir().expect("temporary directory for classes");
    let cp = compile(classes.path());
    let mut broker = Broker::start(BrokerOpts::new());
    if let Err(e) = passed(&txn_check(&cp, &broker.bootstrap(), "jtx", 1)) {
        broker.fail(&e);
    }
    broker.stop();
}

/// The same on three nodes with three replicas of everything (the
/// coordinators' topics too, min ISR 2), then again with a node killed.
#[test]
fn java_client_transactions_on_a_three_node_cluster_and_after_a_kill() {
    if skipped() {
        return;
    }
    let classes = tempfile::tempdir().expect("temporary directory for classes");
    let cp = compile(classes.path());
    // Fewer coordinator partitions than Kafka's 50: the same code paths,
    // and a faster start on a small machine.
    let opts = BrokerOpts::new()
        .setting("transaction.state.log.num.partitions", 6)
        .setting("offsets.topic.num.partitions", 6);
    let mut cluster = Cluster::start(3, opts);
    if let Err(e) = passed(&txn_check(&cp, &cluster.bootstrap(), "ctx", 3)) {
        cluster.fail(&e);
    }
    cluster.node(2).kill9();
    let survivors = [1, 3]
        .iter()
        .map(|&i| cluster.nodes[i - 1].bootstrap())
        .collect::<Vec<_>>()
        .join(",");
    // New topics get two replicas now; the coordinators' topics keep three,
    // with two in sync.
    if let Err(e) = passed(&txn_check(&cp, &survivors, "ktx", 2)) {
        cluster.fail(&format!("after killing node 2: {e}"));
    }
    cluster.node(1).stop();
    cluster.node(3).stop();
}
