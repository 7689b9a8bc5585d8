//! Transactions with real clients against a real `pinlog serve`, on one
//! broker and on a 3-node cluster: Apache Kafka's Java client
//! (kafka-clients 4.4) commits and aborts, runs a read-process-write loop
//! with its offsets in the transaction, and is fenced by a second instance
//! of its transactional id (`tests/clients/java/TxnCheck.java`). On the
//! cluster every topic has three replicas, and the program runs again
//! after a node is killed, so the coordinators of some ids move. The Python
//! clients (confluent-kafka, on a current librdkafka, and kafka-python 3)
//! commit and abort, and read back through read_committed and
//! read_uncommitted consumers (`tests/clients/txn_check.py`). Kafka Streams
//! (4.4) runs an `exactly_once_v2` application through an abrupt halt, on
//! one broker and on the cluster (`tests/clients/java/StreamsEosCheck.java`).
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

/// Compiles TxnCheck.java and StreamsEosCheck.java into `classes`;
/// returns the classpath.
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
            .arg(Path::new(CLIENTS_DIR).join("java/TxnCheck.java"))
            .arg(Path::new(CLIENTS_DIR).join("java/StreamsEosCheck.java")),
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

/// Input records of the Kafka Streams check, and after how many processed
/// ones its first instance halts.
const STREAMS_RECORDS: &str = "3000";
const STREAMS_HALT_AFTER: &str = "1000";

/// Kafka Streams with `exactly_once_v2` (`StreamsEosCheck.java`): an
/// application halts abruptly in the middle of a transaction, a new
/// instance with its application id and state directory takes over, and
/// the committed output holds every input exactly once, with each key's
/// running count (an in-memory store restored from its transactional
/// changelog) counting up without a gap or a repeat.
fn streams_exactly_once(
    cp: &str,
    bootstrap: &str,
    prefix: &str,
    replication_factor: u16,
) -> Result<(), String> {
    let state = tempfile::tempdir().expect("a state directory for Kafka Streams");
    let state_dir = state.path().to_str().expect("a UTF-8 temporary path");
    let java = |args: &[&str]| {
        run_command(
            Command::new("java")
                .args(["-XX:TieredStopAtLevel=1", "-cp", cp, "StreamsEosCheck"])
                .args(args),
            None,
            CLIENT_TIMEOUT,
        )
    };
    let rf = replication_factor.to_string();
    let steps: [(&str, Vec<&str>, &str); 4] = [
        (
            "prepare",
            vec!["prepare", bootstrap, prefix, STREAMS_RECORDS, &rf],
            "ok prepare",
        ),
        (
            "the run that halts",
            vec![
                "run",
                bootstrap,
                prefix,
                STREAMS_RECORDS,
                state_dir,
                STREAMS_HALT_AFTER,
            ],
            "halting after",
        ),
        (
            "the run that takes over",
            vec!["run", bootstrap, prefix, STREAMS_RECORDS, state_dir, "0"],
            "ok run",
        ),
        (
            "verify",
            vec!["verify", bootstrap, prefix, STREAMS_RECORDS],
            "ok verify",
        ),
    ];
    for (name, args, expect) in steps {
        let out = java(&args);
        if !out.stdout.contains(expect) {
            return Err(format!("Kafka Streams exactly-once, {name}:\n{out}"));
        }
        if name == "verify" {
            eprintln!("{}", out.stdout.trim());
        }
    }
    Ok(())
}

/// One of Kafka's own CLI tools (`main_class`, as its `kafka-*.sh` runs it)
/// against `bootstrap`.
fn kafka_tool(main_class: &str, bootstrap: &str, args: &[&str]) -> CmdOutput {
    let jars = format!("{}/*", kafka_libs().display());
    run_command(
        Command::new("java")
            .args(["-XX:TieredStopAtLevel=1", "-cp", &jars, main_class])
            .args(["--bootstrap-server", bootstrap])
            .args(args),
        None,
        CLIENT_TIMEOUT,
    )
}

/// TxnCheck passed every check, on transaction version `version`.
fn passed_on(out: &CmdOutput, version: i16) -> Result<(), String> {
    passed(out)?;
    if !out
        .stdout
        .contains(&format!("transaction version {version}"))
    {
        return Err(format!(
            "the producer did not use transaction version {version}:\n{out}"
        ));
    }
    Ok(())
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
    let bootstrap = broker.bootstrap();
    // A new cluster finalizes transaction.version 2 (KIP-890 part 2).
    if let Err(e) = passed_on(&txn_check(&cp, &bootstrap, "jtx", 1), 2) {
        broker.fail(&e);
    }
    // Downgraded with Kafka's own tool, the producers go back to version 1.
    let out = kafka_tool(
        "org.apache.kafka.tools.FeatureCommand",
        &bootstrap,
        &["downgrade", "--feature", "transaction.version=1"],
    );
    if !out.success() {
        broker.fail(&format!("kafka-features.sh downgrade failed:\n{out}"));
    }
    if let Err(e) = passed_on(&txn_check(&cp, &bootstrap, "jtx1", 1), 1) {
        broker.fail(&format!("on transaction version 1: {e}"));
    }
    broker.stop();
}

#[test]
fn kafka_streams_exactly_once_v2_survives_a_crash() {
    if skipped() {
        return;
    }
    let classes = tempfile::tempdir().expect("temporary directory for classes");
    let cp = compile(classes.path());
    let mut broker = Broker::start(BrokerOpts::new());
    if let Err(e) = streams_exactly_once(&cp, &broker.bootstrap(), "streams", 1) {
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
    if let Err(e) = passed_on(&txn_check(&cp, &cluster.bootstrap(), "ctx", 3), 2) {
        cluster.fail(&e);
    }
    if let Err(e) = streams_exactly_once(&cp, &cluster.bootstrap(), "cstreams", 3) {
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

/// confluent-kafka and kafka-python: commit, abort, commit; the
/// read_committed consumer sees only the committed records. On both
/// finalized transaction versions, each client with whatever request
/// versions it negotiates.
#[test]
fn python_clients_commit_and_abort() {
    if skipped() {
        return;
    }
    let mut broker = Broker::start(BrokerOpts::new());
    let bootstrap = broker.bootstrap();
    // On the new cluster's transaction version 2, then on version 1.
    for finalized in [2, 1] {
        if finalized == 1 {
            let out = kafka_tool(
                "org.apache.kafka.tools.FeatureCommand",
                &bootstrap,
                &["downgrade", "--feature", "transaction.version=1"],
            );
            if !out.success() {
                broker.fail(&format!("kafka-features.sh downgrade failed:\n{out}"));
            }
        }
        for (client, prefix) in [("confluent", "ptx-ck"), ("kafka-python", "ptx-kp")] {
            let prefix = format!("{prefix}-tv{finalized}");
            let out = run_command(
                Command::new("python3")
                    .arg(Path::new(CLIENTS_DIR).join("txn_check.py"))
                    .args([client, &bootstrap, &prefix]),
                None,
                CLIENT_TIMEOUT,
            );
            if !out.success() || !out.stdout.contains(&format!("ok {client}")) {
                broker.fail(&format!(
                    "{client} transactions failed on transaction version {finalized}:\n{out}"
                ));
            }
        }
    }
    broker.stop();
}

/// Kafka's `kafka-transactions.sh` (TransactionsCommand) lists and
/// describes the coordinator's ids and a partition's producers, finds a
/// hanging transaction (one its coordinator does not know: here a raw
/// transactional batch from an unknown producer), and aborts it, after
/// which the partition's LSO moves on.
#[test]
fn kafka_transactions_tool_lists_describes_finds_hanging_and_aborts() {
    use bytes::{Bytes, BytesMut};
    use pinlog::log::batch::{self, BatchFields};
    use pinlog::protocol::api::ApiKey;
    use pinlog::protocol::messages::produce::*;
    use support::kafka_conn::Conn;

    if skipped() {
        return;
    }
    let mut broker = Broker::start(BrokerOpts::new());
    let bootstrap = broker.bootstrap();
    let out = run_command(
        Command::new("python3")
            .arg(Path::new(CLIENTS_DIR).join("txn_check.py"))
            .args(["confluent", &bootstrap, "tool"]),
        None,
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        broker.fail(&format!("txn_check.py failed:\n{out}"));
    }
    let (topic, id) = ("tool-out", "tool-out-py-txn");

    // A hanging transaction: producer 987654 writes a transactional batch
    // its coordinator never heard of. KIP-890's verification refuses it
    // (INVALID_PRODUCER_ID_MAPPING: the coordinator knows no such id); with `transaction.partition.verification.enable`
    // off, as on a cluster before KIP-890, it goes in and hangs.
    const HANGING: i64 = 987_654;
    let plain = batch::build_batch(&batch::BatchSpec {
        base_offset: 0,
        leader_epoch: -1,
        base_timestamp: 1_700_000_000_000,
        records: &[(0, Some(b"h"), b"hanging")],
    });
    let h = batch::parse_header(&plain).expect("header");
    let mut f = BatchFields::of(&h);
    f.producer_id = HANGING;
    f.producer_epoch = 0;
    f.base_sequence = 0;
    f.attributes |= 0x10;
    let raw = batch::encode_batch(&f, 1, &plain[61..]);
    let plant = |bootstrap: &str| {
        let addr = bootstrap.parse().expect("a socket address");
        let mut conn =
            Conn::open(addr, "hanging-producer", Duration::from_secs(30)).expect("connect");
        let req = ProduceRequest {
            transactional_id: Some("never-initialised".into()),
            acks: -1,
            timeout_ms: 30_000,
            topics: vec![TopicProduceData {
                name: topic.into(),
                partitions: vec![PartitionProduceData {
                    index: 0,
                    records: Some(Bytes::from(raw.clone())),
                }],
            }],
        };
        let mut r = conn.call(ApiKey::Produce, 8, |w: &mut BytesMut| req.encode(w, 8));
        let resp = ProduceResponse::decode(&mut r, 8).expect("produce response");
        resp.responses[0].partition_responses[0].clone()
    };
    let refused = plant(&bootstrap);
    assert_eq!(
        refused.error_code, 49,
        "KIP-890 verification lets an unknown producer's transactional batch in: {refused:?}"
    );
    broker.set_setting("transaction.partition.verification.enable", false);
    broker.restart();
    let p = plant(&bootstrap);
    assert_eq!(p.error_code, 0, "the hanging batch was refused: {p:?}");
    let start = p.base_offset.to_string();

    let tool = |args: &[&str]| {
        let out = kafka_tool(
            "org.apache.kafka.tools.TransactionsCommand",
            &bootstrap,
            args,
        );
        if !out.success() || out.stderr.contains("Exception") {
            broker.fail(&format!("kafka-transactions.sh {args:?} failed:\n{out}"));
        }
        out.stdout
    };
    let listed = tool(&["list"]);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(id) && l.contains("CompleteCommit")),
        "list:\n{listed}"
    );
    let described = tool(&["describe", "--transactional-id", id]);
    assert!(
        described.contains("CompleteCommit"),
        "describe:\n{described}"
    );
    let producers = tool(&["describe-producers", "--topic", topic, "--partition", "0"]);
    assert!(
        producers.contains(&HANGING.to_string()),
        "describe-producers:\n{producers}"
    );
    let hanging = tool(&[
        "find-hanging",
        "--topic",
        topic,
        "--partition",
        "0",
        "--max-transaction-timeout",
        "0",
    ]);
    assert!(
        hanging.contains(&HANGING.to_string()),
        "find-hanging:\n{hanging}"
    );
    tool(&[
        "abort",
        "--topic",
        topic,
        "--partition",
        "0",
        "--start-offset",
        &start,
    ]);
    let after = tool(&[
        "find-hanging",
        "--topic",
        topic,
        "--partition",
        "0",
        "--max-transaction-timeout",
        "0",
    ]);
    assert!(
        !after.contains(&HANGING.to_string()),
        "still hanging after abort:\n{after}"
    );
    broker.stop();

    // Kafka's DumpLogSegments decodes the coordinator's records.
    let logs: Vec<String> = std::fs::read_dir(broker.data_dir())
        .expect("data dir")
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("__transaction_state-")
        })
        .flat_map(|e| std::fs::read_dir(e.path()).expect("partition dir"))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "log") && p.metadata().is_ok_and(|m| m.len() > 0)
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        !logs.is_empty(),
        "no __transaction_state segment holds a record"
    );
    let jars = format!("{}/*", kafka_libs().display());
    let dump = run_command(
        Command::new("java")
            .args([
                "-XX:TieredStopAtLevel=1",
                "-cp",
                &jars,
                "org.apache.kafka.tools.DumpLogSegments",
            ])
            .args(["--transaction-log-decoder", "--files", &logs.join(",")]),
        None,
        CLIENT_TIMEOUT,
    );
    assert!(
        dump.success() && !dump.stderr.contains("Exception") && !dump.stdout.contains("Exception"),
        "DumpLogSegments --transaction-log-decoder:\n{dump}"
    );
    assert!(
        dump.stdout
            .contains(&format!("{{\"transactionalId\":\"{id}\"}}"))
            && dump
                .stdout
                .contains("\"transactionStatus\":\"CompleteCommit\""),
        "DumpLogSegments did not decode {id}'s records:\n{}",
        dump.stdout
    );
}

/// An id without a transaction that sees no request for
/// `transactional.id.expiration.ms` is removed (a tombstone in
/// `__transaction_state`); `kafka-transactions.sh list` stops showing it.
#[test]
fn idle_transactional_ids_expire() {
    if skipped() {
        return;
    }
    let mut broker = Broker::start(
        BrokerOpts::new()
            .setting("transactional.id.expiration.ms", 2000)
            .setting(
                "transaction.remove.expired.transaction.cleanup.interval.ms",
                500,
            ),
    );
    let bootstrap = broker.bootstrap();
    let out = run_command(
        Command::new("python3")
            .arg(Path::new(CLIENTS_DIR).join("txn_check.py"))
            .args(["confluent", &bootstrap, "expiry"]),
        None,
        CLIENT_TIMEOUT,
    );
    if !out.success() {
        broker.fail(&format!("txn_check.py failed:\n{out}"));
    }
    let jars = format!("{}/*", kafka_libs().display());
    let list = || {
        run_command(
            Command::new("java")
                .args([
                    "-XX:TieredStopAtLevel=1",
                    "-cp",
                    &jars,
                    "org.apache.kafka.tools.TransactionsCommand",
                ])
                .args(["--bootstrap-server", &bootstrap, "list"]),
            None,
            CLIENT_TIMEOUT,
        )
        .stdout
    };
    let gone = support::wait_for(Duration::from_secs(30), || {
        let listed = list();
        listed.contains("TransactionalId") && !listed.contains("expiry-out-py-txn")
    });
    if !gone {
        broker.fail("the idle transactional id was not expired");
    }
    broker.stop();
}
