//! The fault suite (issue: faults): a cluster of real `pinlog serve`
//! processes, each in its own network namespace, under a seeded schedule
//! of network and process faults, while real clients produce, consume and
//! commit. A checker then proves from the clients' histories that nothing
//! acknowledged was lost, nothing was duplicated, no consumer saw a record
//! that later vanished, and committed offsets never went back; and the
//! replicas' logs must be byte-identical once healed.
//!
//! - `checker_finds_lost_duplicated_and_vanished_records`: the checker can
//!   fail (a history with a lost write, a duplicate, a vanished read and a
//!   commit that went back), and passes a clean one.
//! - `fault_run_short`: 3 nodes, about 2.5 minutes of faults: the first
//!   half from a fixed seed, the second from a random one that is printed.
//!   `PINLOG_FAULT_SEED=N` replaces the random seed, and
//!   `PINLOG_FAULT_SECONDS` the length.
//! - `fault_run_long` (ignored; run by hand): 5 nodes for 30 minutes,
//!   `cargo test --release --test faults -- --ignored fault_run_long
//!   --nocapture` (`PINLOG_FAULT_NODES` and `PINLOG_FAULT_SECONDS` change
//!   it).
//!
//!   The test harness starts tests in the order of their names, two at a
//!   time; the short run is the longest test of this binary, so its name
//!   sorts it first and the others run beside it, not after it.
//! - `shard_moves_under_load`: 3 nodes of 2 shards each, and instead of
//!   faults, live moves of partitions between the shards of a node
//!   (`pinlog partition move`) for 40 s, with a restart of a node now and
//!   then, after which its placements must hold.
//! - `reassignment_under_load`: 4 nodes; every partition of the RF=3 topic
//!   is reassigned with Kafka's `kafka-reassign-partitions.sh` to another
//!   set of 3, and the active controller is killed while the moves are in
//!   progress; they complete, and the removed replicas delete their data.
//!
//! The faults, each healed after a bounded time: a partition between a
//! partition's leader and its followers, the active controller cut off
//! from the other nodes, one node isolated from everyone (clients too), a
//! one-way partition, SIGSTOP of a leader beyond the session timeout,
//! kill -9 and restart, random packet loss on every node, and a rolling
//! restart. Without network namespaces (not root, no nftables) the run
//! says so and uses loopback with the process faults only.
//!
//! The workload: two idempotent acks=all producers (confluent-kafka and
//! Kafka's Java client), a reader of every partition from offset 0, two
//! consumer-group members committing every 50 records, one of a classic
//! group and one of a KIP-848 consumer group (`group.protocol=consumer`),
//! each with a watcher of its group's committed offsets, and a member of a
//! share group (KIP-932) that accepts every record it is delivered and
//! commits each poll, reading from offset 0 (group configs
//! `share.auto.offset.reset=earliest`, a 15 s lock) and draining once the
//! producers have stopped (tests/faults/workload.py, tests/faults/FaultProducer.java,
//! tests/faults/FaultShareConsumer.java); tests/faults/checker.py checks.

mod common;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::SeededRng;
use pinlog::log::batch::CountRule;
use serde_json::Value;
use support::netns::Testbed;
use support::{
    kafka_libs, run_command, spawn_logged, wait_for, wait_timeout, which, BrokerOpts, Cluster,
    CmdOutput, PINLOG_BIN,
};

const FAULTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/faults");
const TOPIC: &str = "faults";
/// The transactional processor's output topic (`TxnProcessor.java`).
const TXN_TOPIC: &str = "faults-txn";
/// The transactional processor's consumer group and transactional id.
const TXN_GROUP: &str = "faults-txn-group";
const PARTITIONS: usize = 6;
const GROUP: &str = "faults-group";
/// A second group of the same topic whose member speaks KIP-848's
/// protocol (`group.protocol=consumer`).
const CONSUMER_PROTOCOL_GROUP: &str = "faults-group-848";
/// The share group of the topic (KIP-932, `FaultShareConsumer.java`).
const SHARE_GROUP: &str = "faults-share";
/// Its member's client name (`FaultShareConsumer.java`): the last client
/// the workload starts, and the last one stopped.
const SHARE_CLIENT: &str = "share-1";
/// Its `share.record.lock.duration.ms` (Kafka's lowest): records a lost
/// share session held come back this soon.
const SHARE_LOCK_MS: u64 = 15_000;
/// After the stop, the share member drains until no record came for this
/// long: longer than the lock, so held records come back first.
const SHARE_DRAIN_IDLE_SECONDS: u64 = SHARE_LOCK_MS / 1000 + 5;
/// The seed of the first half of every run, so that CI always covers one
/// known schedule.
const FIXED_SEED: u64 = 20_261_201;
const SHORT_RUN_SECONDS: u64 = 150;
const LONG_RUN_SECONDS: u64 = 1800;
const LONG_RUN_NODES: usize = 5;
/// Records a second from each producer.
const PRODUCER_RATE: u32 = 150;
/// Faults last this long at most, well inside the producers' 60 s
/// delivery timeout, so that a healed cluster acknowledges what waited.
const MAX_FAULT: Duration = Duration::from_secs(8);
const MIN_FAULT: Duration = Duration::from_secs(2);
/// The quiet time after healing each fault, so that the next one meets a
/// cluster that has (mostly) recovered.
const MAX_REST: Duration = Duration::from_secs(4);
/// A follower leaves the ISR after this much lag: short, so that ISR
/// shrinks and expansions happen within each fault.
const LAG_TIME_MAX_MS: i64 = 2000;
/// How long the healed cluster may take until every ISR is whole and the
/// replicas are identical.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(90);
/// Bound on a client process's exit once asked to stop, and on any CLI
/// call.
const CLIENT_EXIT_TIMEOUT: Duration = Duration::from_secs(150);
const CLI_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a restarted node may take to answer again.
const RESTART_TIMEOUT: Duration = Duration::from_secs(40);

/// The workload's client processes, killed if the test ends early (a
/// failed assertion), so that none outlives it.
struct Clients(Vec<(String, Child)>);

/// The lines of each client's own log a failed run shows: the clients'
/// errors (a share member's failed polls, a producer's retries) are often
/// why the checker found what it found.
const CLIENT_LOG_TAIL_LINES: usize = 30;

impl Clients {
    /// The last [`CLIENT_LOG_TAIL_LINES`] of every client's log that has
    /// anything in it.
    fn log_tails(&self, history: &Path) -> String {
        let mut out = String::new();
        for (name, _) in &self.0 {
            let log = support::read_logged(history, name);
            let lines: Vec<&str> = log.lines().collect();
            if lines.is_empty() {
                continue;
            }
            let from = lines.len().saturating_sub(CLIENT_LOG_TAIL_LINES);
            out.push_str(&format!(
                "--- client {name}: last {} of {} log lines ---\n{}\n",
                lines.len() - from,
                lines.len(),
                lines[from..].join("\n")
            ));
        }
        out
    }
}

impl Drop for Clients {
    fn drop(&mut self) {
        for (_, child) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The schedule's generator.
struct Rng(SeededRng);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }

    fn duration(&mut self, min: Duration, max: Duration) -> Duration {
        let (lo, hi) = (min.as_millis() as u64, max.as_millis() as u64);
        Duration::from_millis(self.0.between(lo, hi))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    /// A partition's leader and its followers cannot reach each other.
    PartitionLeader,
    /// The active controller cannot reach the other nodes.
    IsolateController,
    /// One node loses every packet, clients' too.
    IsolateNode,
    /// One node can no longer send to another.
    OneWay,
    /// SIGSTOP a partition leader beyond the session timeout.
    PauseLeader,
    /// kill -9, then restart.
    Kill,
    /// Every node drops a share of what it receives.
    PacketLoss,
    /// SIGTERM and restart every node in turn.
    RollingRestart,
    /// Move a partition to another shard of a node, live (shard test).
    ShardMove,
    /// SIGTERM and restart one node (shard test).
    Restart,
}

const NETWORK_FAULTS: &[Fault] = &[
    Fault::PartitionLeader,
    Fault::IsolateController,
    Fault::IsolateNode,
    Fault::OneWay,
    Fault::PacketLoss,
];
const PROCESS_FAULTS: &[Fault] = &[Fault::PauseLeader, Fault::Kill, Fault::RollingRestart];
/// Percentage of packets each node drops under [`Fault::PacketLoss`].
const PACKET_LOSS_PERCENT: u8 = 20;

/// What a run injected and what the checker found.
#[derive(Debug, Default)]
struct Tally {
    faults: BTreeMap<String, usize>,
}

struct FaultRun {
    cluster: Cluster,
    testbed: Option<Testbed>,
    history: PathBuf,
    tally: Tally,
    /// Node ids currently SIGSTOPped or dead, to be undone when healing.
    paused: Vec<usize>,
    dead: Vec<usize>,
    /// When the cluster was up, for the nemesis log's timestamps.
    started: Instant,
}

fn pinlog(args: &[&str]) -> CmdOutput {
    run_command(Command::new(PINLOG_BIN).args(args), None, CLI_TIMEOUT)
}

fn clients_available() -> bool {
    if std::env::var_os("PINLOG_SKIP_CLIENT_TESTS").is_some() {
        eprintln!("PINLOG_SKIP_CLIENT_TESTS is set: skipping the fault suite");
        return false;
    }
    let python = run_command(
        Command::new("python3").args(["-c", "import confluent_kafka"]),
        None,
        CLI_TIMEOUT,
    );
    assert!(
        python.success(),
        "the fault suite needs python3 with confluent-kafka (pip install confluent-kafka; \
         tests/run installs it):\n{python}"
    );
    assert!(
        which("java").is_some() && which("javac").is_some(),
        "the fault suite needs a JDK 17+ (apt-get install default-jdk-headless; tests/run \
         installs it)"
    );
    true
}

fn python(args: &[&str]) -> Command {
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(FAULTS_DIR).join("workload.py"))
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

fn checker(history: &Path) -> CmdOutput {
    run_command(
        Command::new("python3")
            .arg(Path::new(FAULTS_DIR).join("checker.py"))
            .arg(history)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        None,
        CLI_TIMEOUT * 3,
    )
}

/// The summary line the checker prints last.
fn checker_summary(out: &CmdOutput) -> Value {
    out.stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("the checker printed no summary:\n{out}"))
}

#[test]
fn checker_finds_lost_duplicated_and_vanished_records() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let write = |name: &str, lines: &[&str]| {
        std::fs::write(dir.path().join(name), lines.join("\n") + "\n").expect("write a history");
    };
    // The final log: partition 0 holds a-0, a-1, a-1 again (a duplicate)
    // and a-3; partition 1 holds b-0.
    write(
        "final.jsonl",
        &[
            r#"{"p":0,"o":0,"id":"a-0"}"#,
            r#"{"p":0,"o":1,"id":"a-1"}"#,
            r#"{"p":0,"o":2,"id":"a-1"}"#,
            r#"{"p":0,"o":3,"id":"a-3"}"#,
            r#"{"p":1,"o":0,"id":"b-0"}"#,
            r#"{"end":{"0":4,"1":1},"read_to":{"0":4,"1":1}}"#,
            r#"{"final_committed":{"0":2}}"#,
        ],
    );
    // a-2 was acknowledged at 0@2 and is gone; b-1 failed (indeterminate).
    // b-0 and b-2 were acknowledged without an offset (librdkafka does so
    // when a later batch proves them persisted): b-0 is there, b-2 is lost.
    write(
        "produce-a.jsonl",
        &[
            r#"{"id":"a-0","p":0,"o":0}"#,
            r#"{"id":"a-1","p":0,"o":1}"#,
            r#"{"id":"a-2","p":0,"o":2}"#,
            r#"{"id":"a-3","p":0,"o":3}"#,
            r#"{"id":"b-0","p":1,"o":null}"#,
            r#"{"id":"b-1","err":"_MSG_TIMED_OUT","fatal":false}"#,
            r#"{"id":"b-2","p":1,"o":-1}"#,
        ],
    );
    // A reader saw b-1 at 1@1, which the final log no longer has.
    write(
        "read-1.jsonl",
        &[r#"{"p":1,"o":0,"id":"b-0"}"#, r#"{"p":1,"o":1,"id":"b-1"}"#],
    );
    // The member's commit of 3 was acknowledged; the final offset is 2.
    write(
        "group-1.jsonl",
        &[r#"{"commit":{"0":1}}"#, r#"{"commit":{"0":3}}"#],
    );
    write(
        "watch-1.jsonl",
        &[r#"{"committed":{"0":3}}"#, r#"{"committed":{"0":2}}"#],
    );

    let out = checker(dir.path());
    assert_eq!(out.status.and_then(|s| s.code()), Some(1), "{out}");
    let summary = checker_summary(&out);
    assert_eq!(summary["lost"], 2, "{out}");
    assert_eq!(summary["acknowledged_without_offset"], 2, "{out}");
    assert_eq!(summary["duplicated"], 1, "{out}");
    assert_eq!(summary["vanished"], 1, "{out}");
    assert_eq!(summary["backwards"], 2, "{out}");
    assert_eq!(summary["ok"], false, "{out}");
    assert!(out.stdout.contains("LOST: a-2"), "{out}");
    assert!(out.stdout.contains("LOST: b-2"), "{out}");
    assert!(out.stdout.contains("DUPLICATED: a-1"), "{out}");

    // With the batches: a-1's copies under one producer epoch are still a
    // violation; under two epochs of one producer (the client bumped its
    // epoch and sent it again) they are a counted resend.
    let batches = |second_epoch: i64| {
        [
            r#"{"p":0,"base":0,"last":1,"pid":7,"epoch":0,"seq":0}"#.to_string(),
            format!(r#"{{"p":0,"base":2,"last":2,"pid":7,"epoch":{second_epoch},"seq":0}}"#),
            format!(r#"{{"p":0,"base":3,"last":3,"pid":7,"epoch":{second_epoch},"seq":1}}"#),
        ]
        .join("\n")
            + "\n"
    };
    std::fs::write(dir.path().join("batches.jsonl"), batches(0)).expect("write batches");
    let summary = checker_summary(&checker(dir.path()));
    assert_eq!(summary["duplicated"], 1);
    assert_eq!(summary["resent_after_epoch_bump"], 0);
    std::fs::write(dir.path().join("batches.jsonl"), batches(1)).expect("write batches");
    let summary = checker_summary(&checker(dir.path()));
    assert_eq!(summary["duplicated"], 0);
    assert_eq!(summary["resent_after_epoch_bump"], 1);

    // The transactional processor: t-1 committed inputs 0@0 and 1@0, t-2
    // was aborted but is read (an aborted read), t-3 committed two records
    // of which one is read (torn) and carries 0@0 again (processed twice);
    // the group committed offset 3 of partition 0, and 2@0 is nowhere.
    write(
        "txn-1.jsonl",
        &[
            r#"{"txn":"t-1","sent":2}"#,
            r#"{"txn":"t-1","outcome":"committed"}"#,
            r#"{"txn":"t-2","sent":1}"#,
            r#"{"txn":"t-2","outcome":"aborted"}"#,
            r#"{"txn":"t-3","sent":2}"#,
            r#"{"txn":"t-3","outcome":"unknown","err":"commit: TimeoutException"}"#,
        ],
    );
    write(
        "txn-final.jsonl",
        &[
            r#"{"lso":{"0":5,"1":0},"hw":{"0":6,"1":0}}"#,
            r#"{"p":0,"o":0,"v":"t-1|0:0|a-0"}"#,
            r#"{"p":0,"o":1,"v":"t-1|0:1|a-1"}"#,
            r#"{"p":0,"o":3,"v":"t-2|0:5|a-5"}"#,
            r#"{"p":0,"o":5,"v":"t-3|0:0|a-0"}"#,
            r#"{"txn_committed":{"0":3}}"#,
        ],
    );
    let out = checker(dir.path());
    let summary = checker_summary(&out);
    assert_eq!(summary["aborted_read"], 1, "{out}");
    assert_eq!(summary["torn"], 1, "{out}");
    assert_eq!(summary["processed_twice"], 1, "{out}");
    assert_eq!(summary["unprocessed"], 1, "{out}");
    assert_eq!(summary["lso_stuck"], 1, "{out}");
    assert_eq!(summary["txn_committed"], 1, "{out}");
    assert!(out.stdout.contains("ABORTED_READ: t-2|0:5|a-5"), "{out}");
    // Without its faults the transactional history passes.
    write(
        "txn-final.jsonl",
        &[
            r#"{"lso":{"0":5,"1":0},"hw":{"0":5,"1":0}}"#,
            r#"{"p":0,"o":0,"v":"t-1|0:0|a-0"}"#,
            r#"{"p":0,"o":1,"v":"t-1|0:1|a-1"}"#,
            r#"{"p":0,"o":3,"v":"t-3|0:2|a-2"}"#,
            r#"{"p":0,"o":4,"v":"t-3|0:3|a-3"}"#,
            r#"{"txn_committed":{"0":3}}"#,
        ],
    );

    // The same run without the faults passes.
    write(
        "final.jsonl",
        &[
            r#"{"p":0,"o":0,"id":"a-0"}"#,
            r#"{"p":0,"o":1,"id":"a-1"}"#,
            r#"{"p":0,"o":2,"id":"a-2"}"#,
            r#"{"p":0,"o":3,"id":"a-3"}"#,
            r#"{"p":1,"o":0,"id":"b-0"}"#,
            r#"{"p":1,"o":1,"id":"b-1"}"#,
            r#"{"p":1,"o":2,"id":"b-2"}"#,
            r#"{"end":{"0":4,"1":3},"read_to":{"0":4,"1":3}}"#,
            r#"{"final_committed":{"0":3}}"#,
        ],
    );
    write(
        "watch-1.jsonl",
        &[r#"{"committed":{"0":1}}"#, r#"{"committed":{"0":3}}"#],
    );
    // The share group: 0@0 delivered again after its acceptance was
    // committed, 0@2 delivered as something the log does not hold there,
    // 0@3 delivered past the delivery count limit, 1@2 never delivered.
    let rec = |p: u32, o: u32, id: &str, dc: u32, t: u32| {
        format!(r#"{{"share":"rec","p":{p},"o":{o},"id":"{id}","dc":{dc},"t":{t}}}"#)
    };
    let faulty = [
        rec(0, 0, "a-0", 1, 10),
        r#"{"share":"committed","acks":[[0,0]],"t":11}"#.to_string(),
        rec(0, 0, "a-0", 2, 12),
        rec(0, 1, "a-1", 1, 10),
        r#"{"share":"commit_failed","acks":[[0,1]],"err":"TimeoutException","t":13}"#.to_string(),
        rec(0, 2, "zz", 1, 10),
        rec(0, 3, "a-3", 6, 10),
        rec(1, 0, "b-0", 1, 10),
        rec(1, 1, "b-1", 1, 10),
    ];
    std::fs::write(dir.path().join("share-1.jsonl"), faulty.join("\n") + "\n")
        .expect("write a share history");
    let out = checker(dir.path());
    let summary = checker_summary(&out);
    assert_eq!(summary["share_redelivered"], 1, "{out}");
    assert_eq!(summary["share_vanished"], 1, "{out}");
    assert_eq!(summary["share_over_limit"], 1, "{out}");
    assert_eq!(summary["share_lost"], 1, "{out}");
    assert!(out.stdout.contains("SHARE_LOST: b-2"), "{out}");
    let clean: Vec<String> = [(0, "a-0"), (0, "a-1"), (0, "a-2"), (0, "a-3")]
        .iter()
        .enumerate()
        .map(|(o, (p, id))| rec(*p, o as u32, id, 1, 10))
        .chain((0..3).map(|o| rec(1, o, &format!("b-{o}"), 1, 10)))
        .chain([
            r#"{"share":"committed","acks":[[0,0],[0,1],[0,2],[0,3],[1,0],[1,1],[1,2]],"t":20}"#
                .to_string(),
        ])
        .collect();
    std::fs::write(dir.path().join("share-1.jsonl"), clean.join("\n") + "\n")
        .expect("write a share history");

    let out = checker(dir.path());
    assert!(out.success(), "a clean history must pass:\n{out}");
    let summary = checker_summary(&out);
    assert_eq!(summary["acknowledged"], 6, "{out}");
    assert_eq!(summary["live_reads"], 2, "{out}");
    assert_eq!(summary["share_accepted"], 7, "{out}");
}

#[test]
fn fault_run_short() {
    let seconds = env_number("PINLOG_FAULT_SECONDS").unwrap_or(SHORT_RUN_SECONDS);
    run_faults(3, seconds);
}

#[test]
#[ignore = "30 minutes with 5 nodes: run by hand (see the module doc)"]
fn fault_run_long() {
    let nodes = env_number("PINLOG_FAULT_NODES").map_or(LONG_RUN_NODES, |n| n as usize);
    let seconds = env_number("PINLOG_FAULT_SECONDS").unwrap_or(LONG_RUN_SECONDS);
    run_faults(nodes, seconds);
}

/// How long `shard_moves_under_load` moves partitions.
const SHARD_MOVE_SECONDS: u64 = 40;
/// Every this many steps of it, a node restarts instead of a move.
const SHARD_MOVE_STEPS_PER_RESTART: usize = 12;
/// How long a move may keep failing before the test fails. A move is
/// retried as an operator would: while the node restarts, is briefly fenced
/// (its heartbeats late on a loaded machine), or has not opened the
/// partition yet, the CLI cannot reach it or it has nothing to move.
const SHARD_MOVE_TIMEOUT: Duration = Duration::from_secs(30);

/// Live moves of partitions between the shards (cores) of each node while
/// the workload runs: the leader's replica and the followers', each node
/// with 2 shards. Every move must succeed, and the checker must find every
/// acknowledged record once, in order, with nothing lost, duplicated or
/// vanished, and the replicas byte-identical. Now and then a node restarts
/// (SIGTERM), and every placement made on it must survive the restart.
#[test]
fn shard_moves_under_load() {
    if !clients_available() {
        return;
    }
    let mut rng = Rng(SeededRng(FIXED_SEED));
    // (node, partition) -> the shard the last move put it on.
    let mut placed: BTreeMap<(usize, usize), i64> = BTreeMap::new();
    let mut steps = 0;
    run_under_nemesis(
        3,
        BrokerOpts::new().cluster_shards(2),
        None,
        SHARD_MOVE_SECONDS,
        &format!("shard moves, seed {FIXED_SEED}"),
        |run, _| {
            steps += 1;
            let node = 1 + rng.below(run.nodes());
            if steps % SHARD_MOVE_STEPS_PER_RESTART == 0 {
                run.note(&format!("restart node {node}"));
                run.count(Fault::Restart);
                run.cluster.node(node).stop();
                run.restart(node);
                run.check_placement(node, &placed);
                return;
            }
            let p = rng.below(PARTITIONS);
            let mut to = rng.below(2) as i64;
            let mut from = run.move_shard(node, p, to);
            if from == to {
                // It was there already: move it to the other shard instead.
                to = 1 - to;
                from = run.move_shard(node, p, to);
            }
            run.note(&format!(
                "moved {TOPIC}-{p} on node {node} from shard {from} to shard {to}"
            ));
            run.count(Fault::ShardMove);
            placed.insert((node, p), to);
            std::thread::sleep(rng.duration(Duration::from_millis(200), Duration::from_secs(1)));
        },
    );
}

/// How long `reassignment_under_load` runs its workload.
const REASSIGN_RUN_SECONDS: u64 = 25;
/// Load before the reassignment starts, so that there is data to copy.
const REASSIGN_AFTER: Duration = Duration::from_secs(5);

/// Seed 004's operations, under the fault suite's workload: every
/// partition of the RF=3 topic on 4 nodes is reassigned with Kafka's
/// `kafka-reassign-partitions.sh` to a different set of 3 brokers (the one
/// it lacked joins, its preferred leader leaves, so leadership moves too).
/// The new replicas are held back by a test hook so that the move is still
/// in progress when the active controller is killed (kill -9); once they
/// are released and the controller restarts, every move completes, the
/// removed replicas delete their directories, and the checker finds
/// nothing lost, duplicated or vanished.
#[test]
fn reassignment_under_load() {
    if !clients_available() {
        return;
    }
    let hooks = tempfile::tempdir().expect("a hooks directory");
    let hooks_dir = hooks.path().to_path_buf();
    let opts = BrokerOpts::new().env(
        "PINLOG_TEST_FETCHER_HOOKS",
        &hooks_dir.display().to_string(),
    );
    let mut done = false;
    run_under_nemesis(
        4,
        opts,
        None,
        REASSIGN_RUN_SECONDS,
        "reassignment",
        |run, elapsed| {
            if done || elapsed < REASSIGN_AFTER {
                // The workload runs; the step only paces the harness loop.
                std::thread::sleep(Duration::from_secs(1));
                return;
            }
            done = true;
            run.reassign_with_controller_kill(&hooks_dir);
        },
    );
}

/// The fault suite's full disk: node 3's data directory is a small ext4 file
/// system of its own, which a filler file then fills while idempotent
/// acks=all producers write to an RF=3 topic. The node must stop with a
/// clear error (status 74, as Kafka stops when its last log directory
/// fails) instead of dying of SIGBUS or holding its leaderships; the other
/// two keep acknowledging; once the filler is gone the node starts again,
/// recovers and catches up, and the checker finds nothing lost.
#[test]
fn full_disk_fault() {
    if !clients_available() {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "full_disk_fault: NOT RUN: mounting a small file system needs root (CI runs as root)"
        );
        return;
    }
    let cluster = Cluster::start(
        3,
        BrokerOpts::new().setting("replica.lag.time.max.ms", LAG_TIME_MAX_MS),
    );
    let history = tempfile::Builder::new()
        .prefix("pinlog-full-disk-")
        .tempdir()
        .expect("a directory for the histories")
        .keep();
    let mut run = FaultRun {
        cluster,
        testbed: None,
        history,
        tally: Tally::default(),
        paused: Vec::new(),
        dead: Vec::new(),
        started: Instant::now(),
    };
    // Node 3 moves onto its own small file system.
    let node = 3;
    run.cluster.node(node).stop();
    let mount = LoopMount::new(&run.cluster.node(node).data_dir(), SMALL_DISK_MIB)
        .unwrap_or_else(|e| run.fail(&format!("cannot mount a small file system: {e}")));
    run.restart(node);
    run.create_topic();
    let stop = run.history.join("STOP");
    let bootstrap = run.bootstrap();
    let h = |name: &str| run.history.join(name).display().to_string();
    let stop_arg = stop.display().to_string();
    let rate = PRODUCER_RATE.to_string();
    let mut clients = Clients(vec![
        (
            "produce-py".to_string(),
            spawn_logged(
                &mut python(&[
                    "produce",
                    &bootstrap,
                    TOPIC,
                    "py",
                    &rate,
                    &h("produce-py.jsonl"),
                    &stop_arg,
                ]),
                &run.history,
                "produce-py",
            ),
        ),
        (
            "read-1".to_string(),
            spawn_logged(
                &mut python(&[
                    "read",
                    &bootstrap,
                    TOPIC,
                    &PARTITIONS.to_string(),
                    &h("read-1.jsonl"),
                    &stop_arg,
                ]),
                &run.history,
                "read-1",
            ),
        ),
    ]);
    std::thread::sleep(Duration::from_secs(5));
    run.note("fill node 3's file system");
    let fillers = mount
        .fill()
        .unwrap_or_else(|e| run.fail(&format!("cannot fill the disk: {e}")));
    let status = run.cluster.node(node).wait_exit(FULL_DISK_EXIT_TIMEOUT);
    let log = run.cluster.node(node).log();
    match status.and_then(|s| s.code()) {
        Some(STORAGE_FAILURE_EXIT) => {}
        other => run.fail(&format!(
            "node {node} on a full disk should have exited with status {STORAGE_FAILURE_EXIT}              within {FULL_DISK_EXIT_TIMEOUT:?}; it gave {status:?} (code {other:?})"
        )),
    }
    for said in ["No space left on device", "Free space or repair the disk"] {
        if !log.contains(said) {
            run.fail(&format!("node {node}'s log does not say {said:?}"));
        }
    }
    run.note("node 3 stopped on the full disk; the others go on for a while");
    std::thread::sleep(Duration::from_secs(5));
    run.check_clients_alive(&mut clients);
    for filler in &fillers {
        // dd may not even have created its file: on a full file system the
        // directory entry can fail too.
        match std::fs::remove_file(filler) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                run.fail(&format!("cannot remove {}: {e}", filler.display()))
            }
            _ => {}
        }
    }
    run.note("space is back: start node 3 again");
    run.restart(node);
    run.await_converged();
    std::fs::write(&stop, b"stop").expect("write the stop file");
    for (name, child) in &mut clients.0 {
        if wait_timeout(child, CLIENT_EXIT_TIMEOUT).is_none() {
            let _ = child.kill();
            let _ = child.wait();
            run.fail(&format!(
                "client {name} did not stop within {CLIENT_EXIT_TIMEOUT:?}"
            ));
        }
    }
    run.await_converged();
    run.final_read();
    run.write_batches();
    let out = checker(&run.history);
    let divergent = run.divergent_replicas();
    if !out.success() || !divergent.is_empty() {
        run.fail(&format!(
            "after the full disk:
checker:
{out}
divergent replicas: {divergent:?}"
        ));
    }
    let summary = checker_summary(&out);
    eprintln!("full disk result: {summary}");
    assert!(
        summary["acknowledged"].as_u64().unwrap_or(0) > 1000,
        "too few records acknowledged: {summary}"
    );
    run.cluster.node(node).stop();
    drop(mount);
    let _ = std::fs::remove_dir_all(&run.history);
}

/// Size of the full-disk case's file system: room for the node's logs at
/// first, small enough to fill at once.
const SMALL_DISK_MIB: u64 = 128;
/// The broker's exit status after a storage failure (EX_IOERR).
const STORAGE_FAILURE_EXIT: i32 = 74;
/// How long a node on a full disk may take to notice and stop.
const FULL_DISK_EXIT_TIMEOUT: Duration = Duration::from_secs(60);

/// A small ext4 file system in an image file, loop-mounted over a
/// directory whose contents it takes over. Unmounted (lazily, so that a
/// process still inside cannot keep it) when dropped.
struct LoopMount {
    at: PathBuf,
    _image_dir: tempfile::TempDir,
}

impl LoopMount {
    fn new(dir: &Path, mib: u64) -> Result<LoopMount, String> {
        let image_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let image = image_dir.path().join("disk.img");
        let aside = dir.with_extension("before-mount");
        let sh = |script: &str| {
            let out = run_command(Command::new("sh").args(["-ec", script]), None, CLI_TIMEOUT);
            if out.success() {
                Ok(())
            } else {
                Err(format!("{script}: {out}"))
            }
        };
        sh(&format!(
            "truncate -s {mib}M '{img}'; mkfs.ext4 -q -F -m 0 '{img}'; mv '{dir}' '{aside}';              mkdir '{dir}'; mount -o loop '{img}' '{dir}'; cp -a '{aside}/.' '{dir}/';              rm -rf '{aside}'",
            img = image.display(),
            dir = dir.display(),
            aside = aside.display()
        ))?;
        Ok(LoopMount {
            at: dir.to_path_buf(),
            _image_dir: image_dir,
        })
    }

    /// Takes every free block; the files that hold them.
    fn fill(&self) -> Result<Vec<PathBuf>, String> {
        let files = vec![self.at.join("filler"), self.at.join("filler-rest")];
        // fallocate takes most of it at once (it may stop short of the last
        // blocks, which the file system keeps for its own metadata); dd
        // takes what is left. Both end with ENOSPC, which is the point.
        let script = format!(
            "fallocate -l {free} '{a}' || true; dd if=/dev/zero of='{b}' bs=4k 2>/dev/null || true",
            free = self.free_bytes()?,
            a = files[0].display(),
            b = files[1].display()
        );
        run_command(
            Command::new("sh").args(["-c", &script]),
            None,
            CLI_TIMEOUT * 3,
        );
        let left = self.free_bytes()?;
        if left > 64 * 1024 {
            return Err(format!("{left} bytes are still free after filling"));
        }
        Ok(files)
    }

    fn free_bytes(&self) -> Result<u64, String> {
        let path = std::ffi::CString::new(self.at.as_os_str().as_encoded_bytes())
            .map_err(|e| e.to_string())?;
        // SAFETY: statvfs(2) into a zeroed struct we own.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        Ok(st.f_bavail as u64 * st.f_frsize as u64)
    }
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        let _ = run_command(
            Command::new("umount").arg("-l").arg(&self.at),
            None,
            CLI_TIMEOUT,
        );
    }
}

fn env_number(var: &str) -> Option<u64> {
    let value = std::env::var(var).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{var}={value} is not a number")),
    )
}

fn run_faults(nodes: usize, seconds: u64) {
    if !clients_available() {
        return;
    }
    let random_seed = env_number("PINLOG_FAULT_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the clock is after 1970")
            .as_nanos() as u64
    });
    eprintln!(
        "fault run: {nodes} nodes, {seconds} s; seeds {FIXED_SEED} (fixed) then {random_seed} \
         (replay with PINLOG_FAULT_SEED={random_seed})"
    );
    let testbed = match Testbed::create(nodes) {
        Ok(bed) => Some(bed),
        Err(why) => {
            eprintln!(
                "fault run: NO NETWORK FAULTS: network namespaces are unavailable ({why}); \
                 falling back to loopback with process faults only"
            );
            None
        }
    };
    let half = Duration::from_secs(seconds / 2);
    let mut rng = Rng(SeededRng(FIXED_SEED));
    let mut second_half = false;
    run_under_nemesis(
        nodes,
        BrokerOpts::new(),
        testbed,
        seconds,
        &format!("seeds {FIXED_SEED}+{random_seed}"),
        |run, elapsed| {
            if !second_half && elapsed >= half {
                second_half = true;
                rng = Rng(SeededRng(random_seed));
                eprintln!("fault run: second half, seed {random_seed}");
            }
            run.inject(&mut rng);
        },
    );
}

/// The fault suite's run: a cluster of `nodes` started with `opts`, the workload, `step`
/// called over and over for `seconds` (each call injects and heals one
/// fault), then healing, the final read and the checker. `label` names the
/// run in its result line.
fn run_under_nemesis(
    nodes: usize,
    opts: BrokerOpts,
    testbed: Option<Testbed>,
    seconds: u64,
    label: &str,
    mut step: impl FnMut(&mut FaultRun, Duration),
) {
    let places: Vec<_> = (1..=nodes)
        .map(|i| testbed.as_ref().and_then(|bed| bed.place(i)))
        .collect();
    let opts = opts
        .setting("replica.lag.time.max.ms", LAG_TIME_MAX_MS)
        .setting("default.replication.factor", 3);
    let cluster = Cluster::start_placed(&places, opts);
    let history = tempfile::Builder::new()
        .prefix("pinlog-faults-")
        .tempdir()
        .expect("a directory for the histories")
        .keep();
    let mut run = FaultRun {
        cluster,
        testbed,
        history,
        tally: Tally::default(),
        paused: Vec::new(),
        dead: Vec::new(),
        started: Instant::now(),
    };
    run.create_topic();
    let stop = run.history.join("STOP");
    let share_stop = run.history.join("STOP-SHARE");
    let mut clients = run.start_workload(&stop, &share_stop);

    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(seconds) {
        step(&mut run, started.elapsed());
        run.check_clients_alive(&mut clients);
    }

    run.heal_everything();
    // Let the producers' retries land before they stop.
    std::thread::sleep(Duration::from_secs(5));
    std::fs::write(&stop, b"stop").expect("write the stop file");
    // The share member starts its drain only once the producers are gone:
    // a producer retries past the stop (a record its partition could not
    // take during the faults lands seconds later), and every record of the
    // final log must reach the share group.
    for (name, child) in &mut clients.0 {
        if name == SHARE_CLIENT {
            std::fs::write(&share_stop, b"stop").expect("write the share member's stop file");
        }
        if wait_timeout(child, CLIENT_EXIT_TIMEOUT).is_none() {
            let _ = child.kill();
            let _ = child.wait();
            run.fail(&format!(
                "client {name} did not stop within {CLIENT_EXIT_TIMEOUT:?}"
            ));
        }
    }
    run.await_converged();
    run.final_read();
    run.write_batches();
    let out = checker(&run.history);
    let summary = checker_summary(&out);
    let divergent = run.divergent_replicas();
    let record = format!(
        "fault run result: {nodes} nodes, {seconds} s, {label}, network \
         faults {}; faults injected {:?}; acknowledged {}, failed (indeterminate) {}, lost {}, \
         duplicated {}, resent after a client's epoch bump {}, moved {}, vanished {}, offsets \
         backwards {}, fatal producer errors {}, divergent replicas {}; records read live {}, \
         partitions with checked commits {}; transactions committed {}, aborted {}, unknown {}, \
         inputs processed {}, aborted reads {}, torn {}, processed twice {}, unprocessed {}, \
         LSO stuck {}; share group: delivered {}, accepted {}, redeliveries {}, lost {}, \
         redelivered after acceptance {}, vanished {}, over the delivery limit {}",
        if run.testbed.is_some() { "on" } else { "OFF" },
        run.tally.faults,
        summary["acknowledged"],
        summary["failed"],
        summary["lost"],
        summary["duplicated"],
        summary["resent_after_epoch_bump"],
        summary["moved"],
        summary["vanished"],
        summary["backwards"],
        summary["fatal"],
        divergent.len(),
        summary["live_reads"],
        summary["commits_checked"],
        summary["txn_committed"],
        summary["txn_aborted"],
        summary["txn_unknown"],
        summary["txn_inputs_processed"],
        summary["aborted_read"],
        summary["torn"],
        summary["processed_twice"],
        summary["unprocessed"],
        summary["lso_stuck"],
        summary["share_delivered"],
        summary["share_accepted"],
        summary["share_redeliveries"],
        summary["share_lost"],
        summary["share_redelivered"],
        summary["share_vanished"],
        summary["share_over_limit"]
    );
    eprintln!("{record}");
    std::fs::write(run.history.join("RESULT"), &record).expect("write the result");
    if !out.success() || !divergent.is_empty() {
        run.fail(&format!(
            "{record}\nchecker:\n{out}\ndivergent replicas: {divergent:?}\n{}histories kept in {}",
            clients.log_tails(&run.history),
            run.history.display()
        ));
    }
    // A run that checked (almost) nothing proves nothing.
    let acknowledged = summary["acknowledged"].as_u64().unwrap_or(0);
    assert!(
        acknowledged > seconds * u64::from(PRODUCER_RATE) / 4,
        "too few records acknowledged for a meaningful run: {record}"
    );
    assert!(
        summary["live_reads"].as_u64().unwrap_or(0) > acknowledged / 2,
        "the live reader saw too little: {record}"
    );
    assert!(
        summary["groups_checked"].as_u64().unwrap_or(0) >= 2,
        "the commits of the classic and the KIP-848 group were not both checked: {record}"
    );
    assert!(
        summary["txn_committed"].as_u64().unwrap_or(0) > 0
            && summary["txn_aborted"].as_u64().unwrap_or(0) > 0,
        "the transactional processor committed or aborted nothing: {record}"
    );
    assert!(
        summary["share_accepted"].as_u64().unwrap_or(0) > acknowledged / 2,
        "the share group accepted too little: {record}"
    );
    let _ = std::fs::remove_dir_all(&run.history);
}

impl FaultRun {
    fn nodes(&self) -> usize {
        self.cluster.nodes.len()
    }

    fn bootstrap(&self) -> String {
        self.cluster.bootstrap()
    }

    #[track_caller]
    fn fail(&self, msg: &str) -> ! {
        // The nodes' directories go with the cluster; their whole logs stay
        // with the histories, since the failure message shows only a tail.
        for (i, node) in self.cluster.nodes.iter().enumerate() {
            let kept = self.history.join(format!("node-{}.log", i + 1));
            if let Err(e) = std::fs::copy(node.log_path(), &kept) {
                eprintln!("fault run: cannot keep node {}'s log: {e}", i + 1);
            }
        }
        self.cluster.fail(&format!(
            "{msg}\n(histories and the nodes' logs in {})",
            self.history.display()
        ))
    }

    fn note(&self, what: &str) {
        let line = format!("{:>7.1}s {what}\n", self.started.elapsed().as_secs_f64());
        eprint!("fault run: {line}");
        use std::io::Write;
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.history.join("nemesis.log"))
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            eprintln!("fault run: cannot append to nemesis.log: {e}");
        }
    }

    fn create_topic(&self) {
        let bootstrap = self.cluster.nodes[0].bootstrap();
        let partitions = PARTITIONS.to_string();
        for topic in [TOPIC, TXN_TOPIC] {
            let out = pinlog(&[
                "topic",
                "create",
                topic,
                "--partitions",
                &partitions,
                "--replication-factor",
                "3",
                "--config",
                "min.insync.replicas=2",
                "--bootstrap-server",
                &bootstrap,
            ]);
            if !out.success() {
                self.fail(&format!("creating {topic} failed:\n{out}"));
            }
        }
    }

    /// Starts the workload's clients; the share member, last of them,
    /// stops at `share_stop`, every other client at `stop`.
    fn start_workload(&self, stop: &Path, share_stop: &Path) -> Clients {
        let bootstrap = self.bootstrap();
        let h = |name: &str| self.history.join(name).display().to_string();
        let stop = stop.display().to_string();
        let share_stop = share_stop.display().to_string();
        let partitions = PARTITIONS.to_string();
        let rate = PRODUCER_RATE.to_string();
        let mut clients = Vec::new();
        let mut spawn = |name: &str, cmd: &mut Command| {
            clients.push((name.to_string(), spawn_logged(cmd, &self.history, name)));
        };
        spawn(
            "produce-py",
            &mut python(&[
                "produce",
                &bootstrap,
                TOPIC,
                "py",
                &rate,
                &h("produce-py.jsonl"),
                &stop,
            ]),
        );
        spawn(
            "read-1",
            &mut python(&[
                "read",
                &bootstrap,
                TOPIC,
                &partitions,
                &h("read-1.jsonl"),
                &stop,
            ]),
        );
        spawn(
            "group-1",
            &mut python(&[
                "group",
                &bootstrap,
                TOPIC,
                GROUP,
                &h("group-1.jsonl"),
                &stop,
            ]),
        );
        spawn(
            "watch-1",
            &mut python(&[
                "watch",
                &bootstrap,
                TOPIC,
                &partitions,
                GROUP,
                &h("watch-1.jsonl"),
                &stop,
            ]),
        );
        spawn(
            "group-848",
            &mut python(&[
                "group",
                &bootstrap,
                TOPIC,
                CONSUMER_PROTOCOL_GROUP,
                &h("group-848.jsonl"),
                &stop,
                "consumer",
            ]),
        );
        spawn(
            "watch-848",
            &mut python(&[
                "watch",
                &bootstrap,
                TOPIC,
                &partitions,
                CONSUMER_PROTOCOL_GROUP,
                &h("watch-848.jsonl"),
                &stop,
            ]),
        );
        let classpath = compile_java(&self.history);
        spawn(
            "produce-java",
            Command::new("java")
                .args(["-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", &classpath])
                .arg("FaultProducer")
                .args([
                    &bootstrap,
                    TOPIC,
                    "java",
                    &rate,
                    &h("produce-java.jsonl"),
                    &stop,
                ]),
        );
        // Transactional read-process-write of everything the producers
        // write (transaction version 2: Kafka 4.4's Java client on a new
        // cluster), with random aborts and the offsets in the transaction.
        spawn(
            "txn-1",
            Command::new("java")
                .args(["-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", &classpath])
                .arg("TxnProcessor")
                .args([
                    bootstrap.as_str(),
                    TOPIC,
                    TXN_TOPIC,
                    TXN_GROUP,
                    TXN_GROUP,
                    &FIXED_SEED.to_string(),
                    &h("txn-1.jsonl"),
                    &stop,
                ]),
        );
        // The share group reads from the start with a short lock, set
        // before its member first comes (group configs, kafka-configs.sh).
        let configs = run_command(
            Command::new("java")
                .args(["-Xmx256m", "-cp", &classpath])
                .arg("org.apache.kafka.tools.ConfigCommand")
                .args(["--bootstrap-server", &bootstrap])
                .args(["--entity-type", "groups", "--entity-name", SHARE_GROUP])
                .args(["--alter", "--add-config"])
                .arg(format!(
                    "share.auto.offset.reset=earliest,share.record.lock.duration.ms={SHARE_LOCK_MS}"
                )),
            None,
            CLI_TIMEOUT,
        );
        if !configs.success() {
            self.fail(&format!(
                "kafka-configs.sh on the share group failed:\n{configs}"
            ));
        }
        spawn(
            SHARE_CLIENT,
            Command::new("java")
                .args(["-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", &classpath])
                .arg("FaultShareConsumer")
                .args([
                    bootstrap.as_str(),
                    SHARE_GROUP,
                    TOPIC,
                    &h("share-1.jsonl"),
                    &share_stop,
                    &SHARE_DRAIN_IDLE_SECONDS.to_string(),
                ]),
        );
        Clients(clients)
    }

    /// Fails the run if a client died before it was asked to stop.
    fn check_clients_alive(&self, clients: &mut Clients) {
        for (name, child) in clients.0.iter_mut() {
            if let Ok(Some(status)) = child.try_wait() {
                self.fail(&format!(
                    "client {name} exited during the run ({status}):\n{}",
                    support::read_logged(&self.history, name)
                ));
            }
        }
    }

    /// One fault: apply, hold, heal, rest.
    fn inject(&mut self, rng: &mut Rng) {
        let fault = if self.testbed.is_some() && rng.below(3) != 0 {
            NETWORK_FAULTS[rng.below(NETWORK_FAULTS.len())]
        } else {
            // Rolling restarts take a while: one in four process faults.
            let f = PROCESS_FAULTS[rng.below(PROCESS_FAULTS.len())];
            if f == Fault::RollingRestart && rng.below(2) == 0 {
                Fault::Kill
            } else {
                f
            }
        };
        let hold = rng.duration(MIN_FAULT, MAX_FAULT);
        let n = self.nodes();
        let described = match fault {
            Fault::PartitionLeader => {
                let p = rng.below(PARTITIONS);
                let Some((leader, replicas)) = self.leader_of(p) else {
                    return self.note("no leader known: skipping a partition fault");
                };
                let bed = self
                    .testbed
                    .as_ref()
                    .expect("network faults need a testbed");
                for r in replicas.iter().filter(|&&r| r != leader) {
                    bed.block(leader, *r).expect("partition");
                    bed.block(*r, leader).expect("partition");
                }
                format!("partition {TOPIC}-{p}'s leader {leader} from its followers")
            }
            Fault::IsolateController => {
                let Some(controller) = self.active_controller() else {
                    return self.note("no active controller known: skipping");
                };
                let bed = self
                    .testbed
                    .as_ref()
                    .expect("network faults need a testbed");
                for other in (1..=n).filter(|&o| o != controller) {
                    bed.block(controller, other).expect("partition");
                    bed.block(other, controller).expect("partition");
                }
                format!("cut the active controller {controller} off from the other nodes")
            }
            Fault::IsolateNode => {
                let node = 1 + rng.below(n);
                let bed = self
                    .testbed
                    .as_ref()
                    .expect("network faults need a testbed");
                bed.isolate(node).expect("isolate");
                format!("isolate node {node} from everyone")
            }
            Fault::OneWay => {
                let from = 1 + rng.below(n);
                let to = 1 + (from + rng.below(n - 1)) % n;
                let bed = self
                    .testbed
                    .as_ref()
                    .expect("network faults need a testbed");
                bed.block_one_way(from, to).expect("one-way partition");
                format!("node {from} cannot send to node {to}")
            }
            Fault::PacketLoss => {
                let bed = self
                    .testbed
                    .as_ref()
                    .expect("network faults need a testbed");
                for i in 1..=n {
                    bed.lose_packets(i, PACKET_LOSS_PERCENT)
                        .expect("packet loss");
                }
                format!("every node drops {PACKET_LOSS_PERCENT}% of its packets")
            }
            Fault::PauseLeader => {
                let p = rng.below(PARTITIONS);
                let node = self.leader_of(p).map_or(1 + rng.below(n), |(l, _)| l);
                self.cluster.node(node).signal(libc::SIGSTOP);
                self.paused.push(node);
                // Beyond the session timeout, so the controller fences it.
                let hold = hold.max(Duration::from_millis(
                    support::TEST_SESSION_TIMEOUT_MS as u64 + 1000,
                ));
                self.note(&format!(
                    "SIGSTOP node {node} (leader of {TOPIC}-{p}) for {hold:?}"
                ));
                self.count(fault);
                std::thread::sleep(hold);
                self.heal_everything();
                std::thread::sleep(rng.duration(Duration::ZERO, MAX_REST));
                return;
            }
            Fault::Kill => {
                let node = 1 + rng.below(n);
                self.cluster.node(node).kill9();
                self.dead.push(node);
                format!("kill -9 node {node}")
            }
            Fault::ShardMove | Fault::Restart => {
                unreachable!("not in the fault schedule: shard_moves_under_load's own")
            }
            Fault::RollingRestart => {
                self.note("rolling restart of every node");
                self.count(fault);
                for node in 1..=n {
                    self.cluster.node(node).stop();
                    self.restart(node);
                }
                std::thread::sleep(rng.duration(Duration::ZERO, MAX_REST));
                return;
            }
        };
        self.note(&format!("{described} for {hold:?}"));
        self.count(fault);
        std::thread::sleep(hold);
        self.heal_everything();
        std::thread::sleep(rng.duration(Duration::ZERO, MAX_REST));
    }

    /// `pinlog partition move` of `TOPIC-p` on `node` to shard `to`, retried
    /// a few times (a node may still be starting); returns the shard it was
    /// on. Fails the run if no attempt succeeds.
    fn move_shard(&self, node: usize, p: usize, to: i64) -> i64 {
        let (tp, to_arg, node_arg) = (format!("{TOPIC}-{p}"), to.to_string(), node.to_string());
        let bootstrap = self.bootstrap();
        let deadline = Instant::now() + SHARD_MOVE_TIMEOUT;
        let mut failures = 0;
        loop {
            let out = pinlog(&[
                "partition",
                "move",
                &tp,
                "--shard",
                &to_arg,
                "--broker",
                &node_arg,
                "--json",
                "--bootstrap-server",
                &bootstrap,
            ]);
            if out.success() {
                let v: Value = serde_json::from_str(&out.stdout)
                    .unwrap_or_else(|e| self.fail(&format!("bad JSON from move ({e}):\n{out}")));
                assert_eq!(v["to_shard"], to, "{out}");
                return v["from_shard"].as_i64().expect("from_shard");
            }
            failures += 1;
            if Instant::now() >= deadline {
                self.fail(&format!(
                    "moving {tp} on node {node} to shard {to} failed {failures} times in \
                     {SHARD_MOVE_TIMEOUT:?}; the last attempt:\n{out}"
                ));
            }
            self.note(&format!(
                "moving {tp} on node {node} failed, retrying: {}",
                out.stderr.trim()
            ));
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// Every partition moved on `node` is still on the shard its last move
    /// chose (a move to where it is answers with the shard it is on).
    fn check_placement(&self, node: usize, placed: &BTreeMap<(usize, usize), i64>) {
        for (&(n, p), &shard) in placed {
            if n != node {
                continue;
            }
            let from = self.move_shard(node, p, shard);
            if from != shard {
                self.fail(&format!(
                    "{TOPIC}-{p} on node {node} was on shard {from} after the restart, not on \
                     shard {shard} where it was moved"
                ));
            }
        }
    }

    /// `reassignment_under_load`'s scenario; see there.
    fn reassign_with_controller_kill(&mut self, hooks: &Path) {
        let n = self.nodes() as i64;
        let parts = self
            .describe_topic()
            .unwrap_or_else(|| self.fail("no node describes the topic"));
        // partition -> (old replicas, new replicas)
        let mut plan = Vec::new();
        for part in &parts {
            let p = part["partition"].as_i64().expect("partition");
            let old = ids(&part["replicas"]);
            let old: Vec<i64> = old.into_iter().map(|r| r as i64).collect();
            assert_eq!(old.len(), 3, "RF=3 on 4 nodes: {part}");
            let missing = (1..=n)
                .find(|b| !old.contains(b))
                .expect("one broker lacks it");
            plan.push((p, old.clone(), vec![missing, old[1], old[2]]));
            // The joining replica waits, so the move stays in progress.
            std::fs::write(hooks.join(format!("{missing}.{TOPIC}-{p}.hold")), b"")
                .expect("hook file");
        }
        let json = self.history.join("reassignment.json");
        let partitions: Vec<Value> = plan
            .iter()
            .map(|(p, _, new)| serde_json::json!({"topic": TOPIC, "partition": p, "replicas": new}))
            .collect();
        std::fs::write(
            &json,
            serde_json::json!({"version": 1, "partitions": partitions}).to_string(),
        )
        .expect("write the plan");
        let out = self.reassign_tool(&["--execute"], Some(&json));
        if !out
            .stdout
            .contains("Successfully started partition reassignment")
        {
            self.fail(&format!("--execute:\n{out}"));
        }
        self.note(&format!("reassigning every partition: {plan:?}"));
        let listed = self.reassign_tool(&["--list"], None);
        let in_progress = listed.stdout.matches("adding:").count();
        if in_progress != plan.len() {
            self.fail(&format!(
                "every move should be in progress (held), {in_progress} listed:\n{listed}"
            ));
        }
        let controller = self
            .active_controller()
            .unwrap_or_else(|| self.fail("no active controller"));
        self.cluster.node(controller).kill9();
        self.count(Fault::Kill);
        self.note(&format!(
            "kill -9 the active controller, node {controller}, mid-reassignment"
        ));
        // The moves are taken over by the next controller while their new
        // replicas are still held.
        let mut next = None;
        let elected = wait_for(CONVERGE_TIMEOUT, || {
            next = self.active_controller().filter(|&c| c != controller);
            next.is_some()
        });
        if !elected {
            self.fail("no other node became the active controller");
        }
        self.note(&format!(
            "node {} is the active controller",
            next.unwrap_or(0)
        ));
        for (p, _, new) in &plan {
            std::fs::remove_file(hooks.join(format!("{}.{TOPIC}-{p}.hold", new[0])))
                .expect("remove the hook file");
        }
        self.restart(controller);
        self.note(&format!(
            "released the new replicas; node {controller} restarted"
        ));
        let verified = wait_for(CONVERGE_TIMEOUT, || {
            let out = self.reassign_tool(&["--verify", "--preserve-throttles"], Some(&json));
            out.stdout.matches("is completed").count() == plan.len()
        });
        if !verified {
            let now = self.describe_topic();
            self.fail(&format!(
                "the reassignment did not complete after the controller was killed: {now:?}"
            ));
        }
        self.note("every move completed");
        let parts = self.describe_topic().unwrap_or_default();
        for (p, old, new) in &plan {
            let part = parts
                .iter()
                .find(|x| x["partition"].as_i64() == Some(*p))
                .unwrap_or_else(|| self.fail(&format!("{TOPIC}-{p} is not described")));
            let replicas: Vec<i64> = ids(&part["replicas"])
                .into_iter()
                .map(|r| r as i64)
                .collect();
            assert_eq!(&replicas, new, "{TOPIC}-{p}: {part}");
            // The replica that left deletes its copy.
            let left = old[0] as usize;
            let dir = self
                .cluster
                .node(left)
                .data_dir()
                .join(format!("{TOPIC}-{p}"));
            if !wait_for(CONVERGE_TIMEOUT, || !dir.exists()) {
                self.fail(&format!(
                    "node {left} kept {TOPIC}-{p} after it left the replicas"
                ));
            }
        }
    }

    /// Kafka's `kafka-reassign-partitions.sh` with `args` (and the plan).
    fn reassign_tool(&self, args: &[&str], json: Option<&Path>) -> CmdOutput {
        let jars = format!("{}/*", kafka_libs().display());
        let mut cmd = Command::new("java");
        cmd.args(["-XX:TieredStopAtLevel=1", "-cp", &jars])
            .arg("org.apache.kafka.tools.reassign.ReassignPartitionsCommand")
            .args(["--bootstrap-server", &self.bootstrap()])
            .args(args);
        if let Some(json) = json {
            cmd.args(["--reassignment-json-file", &json.display().to_string()]);
        }
        let out = run_command(&mut cmd, None, CLI_TIMEOUT * 6);
        if !out.success() {
            self.fail(&format!(
                "kafka-reassign-partitions.sh {args:?} failed:\n{out}"
            ));
        }
        out
    }

    fn count(&mut self, fault: Fault) {
        *self.tally.faults.entry(format!("{fault:?}")).or_default() += 1;
    }

    /// Removes every network fault, resumes paused nodes and restarts dead
    /// ones.
    fn heal_everything(&mut self) {
        if let Some(bed) = &self.testbed {
            bed.heal_all().expect("heal the network");
        }
        for node in std::mem::take(&mut self.paused) {
            self.cluster.node(node).signal(libc::SIGCONT);
        }
        for node in std::mem::take(&mut self.dead) {
            self.restart(node);
        }
        self.note("healed");
    }

    /// Starts a stopped node again and waits until it answers; a restart
    /// right after kill -9 may find its ports still held a moment.
    fn restart(&mut self, node: usize) {
        let deadline = Instant::now() + RESTART_TIMEOUT;
        loop {
            self.cluster.node(node).relaunch();
            if self.cluster.node(node).try_await_ready().is_ok() {
                return;
            }
            if Instant::now() >= deadline {
                self.fail(&format!(
                    "node {node} did not restart within {RESTART_TIMEOUT:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Partition `p`'s leader and replicas, as the first node that answers
    /// describes them.
    fn leader_of(&mut self, p: usize) -> Option<(usize, Vec<usize>)> {
        let view = self.describe_topic()?;
        let part = view.get(p)?;
        let leader = part["leader"].as_i64().filter(|&l| l > 0)? as usize;
        let replicas = ids(&part["replicas"]);
        Some((leader, replicas))
    }

    fn describe_topic(&mut self) -> Option<Vec<Value>> {
        for i in 1..=self.nodes() {
            if !self.cluster.node(i).is_running() || self.paused.contains(&i) {
                continue;
            }
            let bootstrap = self.cluster.node(i).bootstrap();
            let out = pinlog(&[
                "topic",
                "describe",
                TOPIC,
                "--json",
                "--timeout",
                "3s",
                "--bootstrap-server",
                &bootstrap,
            ]);
            if let Some(parts) = out
                .success()
                .then(|| serde_json::from_str::<Value>(&out.stdout).ok())
                .flatten()
                .and_then(|v| v["topics"][0]["partitions"].as_array().cloned())
            {
                return Some(parts);
            }
        }
        None
    }

    fn active_controller(&mut self) -> Option<usize> {
        for i in 1..=self.nodes() {
            if !self.cluster.node(i).is_running() {
                continue;
            }
            let bootstrap = self.cluster.node(i).bootstrap();
            let out = pinlog(&[
                "cluster",
                "describe",
                "--json",
                "--timeout",
                "3s",
                "--bootstrap-server",
                &bootstrap,
            ]);
            let leader = out
                .success()
                .then(|| serde_json::from_str::<Value>(&out.stdout).ok())
                .flatten()
                .and_then(|v| v["quorum"]["leader"].as_i64())
                .filter(|&l| l > 0);
            if let Some(l) = leader {
                return Some(l as usize);
            }
        }
        None
    }

    /// Waits until every partition has its whole replica set in sync and
    /// every replica's log is identical.
    fn await_converged(&mut self) {
        let mut last = None;
        let whole = wait_for(CONVERGE_TIMEOUT, || {
            last = self.describe_topic();
            last.as_ref().is_some_and(|parts| {
                parts.len() == PARTITIONS
                    && parts.iter().all(|p| {
                        let mut isr = ids(&p["isr"]);
                        let mut replicas = ids(&p["replicas"]);
                        isr.sort_unstable();
                        replicas.sort_unstable();
                        p["leader"].as_i64().unwrap_or(-1) > 0 && isr == replicas
                    })
            })
        });
        if !whole {
            self.fail(&format!(
                "the healed cluster did not bring every ISR back within {CONVERGE_TIMEOUT:?}: \
                 {last:?}"
            ));
        }
        // The followers fetch what the leaders still had in flight.
        wait_for(CONVERGE_TIMEOUT, || self.divergent_replicas().is_empty());
    }

    /// Every partition of the topic whose replicas' logs differ: the
    /// concatenated bytes of its segment files, compared across the nodes
    /// that hold it.
    fn divergent_replicas(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in 0..PARTITIONS {
            let dir_name = format!("{TOPIC}-{p}");
            let logs: Vec<(usize, Vec<u8>)> = self
                .cluster
                .nodes
                .iter()
                .enumerate()
                .filter_map(|(i, node)| {
                    let dir = node.data_dir().join(&dir_name);
                    dir.is_dir().then(|| (i + 1, log_bytes(&dir)))
                })
                .collect();
            if let Some((first, bytes)) = logs.first() {
                for (node, other) in &logs[1..] {
                    if other != bytes {
                        out.push(format!(
                            "{dir_name}: node {node} has {} bytes, node {first} {}",
                            other.len(),
                            bytes.len()
                        ));
                    }
                }
            }
        }
        out
    }

    /// `batches.jsonl` for the checker: every batch of every partition
    /// (offsets, producer id, epoch, first sequence), from the first node
    /// that holds the partition (the replicas are compared separately), so
    /// that it can tell a batch the broker appended twice from a record a
    /// client sent again under a new producer epoch.
    fn write_batches(&self) {
        let mut out = String::new();
        for p in 0..PARTITIONS {
            let dir_name = format!("{TOPIC}-{p}");
            let Some(dir) = self
                .cluster
                .nodes
                .iter()
                .map(|n| n.data_dir().join(&dir_name))
                .find(|d| d.is_dir())
            else {
                continue;
            };
            let bytes = log_bytes(&dir);
            for (_, h) in pinlog::log::batch::BatchIter::new(&bytes, CountRule::Compacted)
                .map_while(Result::ok)
            {
                out.push_str(
                    &serde_json::json!({
                        "p": p,
                        "base": h.base_offset,
                        "last": h.last_offset(),
                        "pid": h.producer_id,
                        "epoch": h.producer_epoch,
                        "seq": h.base_sequence,
                    })
                    .to_string(),
                );
                out.push('\n');
            }
        }
        std::fs::write(self.history.join("batches.jsonl"), out).expect("write batches.jsonl");
    }

    fn final_read(&self) {
        let out = run_command(
            &mut python(&[
                "final",
                &self.bootstrap(),
                TOPIC,
                &PARTITIONS.to_string(),
                &format!("{GROUP},{CONSUMER_PROTOCOL_GROUP}"),
                &self.history.join("final.jsonl").display().to_string(),
            ]),
            None,
            CLIENT_EXIT_TIMEOUT * 2,
        );
        if !out.success() {
            self.fail(&format!("the final read failed:\n{out}"));
        }
        let out = run_command(
            &mut python(&[
                "txn-final",
                &self.bootstrap(),
                TOPIC,
                TXN_TOPIC,
                &PARTITIONS.to_string(),
                TXN_GROUP,
                &self.history.join("txn-final.jsonl").display().to_string(),
            ]),
            None,
            CLIENT_EXIT_TIMEOUT * 2,
        );
        if !out.success() {
            self.fail(&format!("the transactional final read failed:\n{out}"));
        }
    }
}

fn ids(v: &Value) -> Vec<usize> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_i64)
                .map(|i| i as usize)
                .collect()
        })
        .unwrap_or_default()
}

/// The `.log` files of a partition directory, concatenated in offset order
/// (their names are their base offsets, zero-padded).
fn log_bytes(dir: &Path) -> Vec<u8> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .flat_map(|p| support::segment_batches(p))
        .collect()
}

/// Compiles the Java clients into `dir`; the classpath to run them with.
fn compile_java(dir: &Path) -> String {
    let jars = format!("{}/*", kafka_libs().display());
    let classes = dir.join("classes");
    std::fs::create_dir_all(&classes).expect("create the classes directory");
    run_command(
        Command::new("javac")
            .args(["-cp", &jars, "-d"])
            .arg(&classes)
            .arg(Path::new(FAULTS_DIR).join("FaultProducer.java"))
            .arg(Path::new(FAULTS_DIR).join("TxnProcessor.java"))
            .arg(Path::new(FAULTS_DIR).join("FaultShareConsumer.java")),
        None,
        CLIENT_EXIT_TIMEOUT,
    )
    .assert_success();
    format!("{}:{jars}", classes.display())
}
