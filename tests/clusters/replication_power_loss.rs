//! Power loss in a replicated cluster (issue 34): three combined nodes, each
//! with its data directory on its own power-loss file system (`powerfs/`),
//! the default flush settings (no fsync per record: durability comes from
//! replication, as in Kafka), a topic with RF 3 and `min.insync.replicas=2`,
//! and confluent-kafka's idempotent acks=all producer
//! (`tests/clients/replication_client.py`). One cluster runs the phases in
//! turn; each checks its own topic.
//!
//! 1. **One node at a time loses power** under load: kill -9, the disk
//!    forgets what no sync made durable (or keeps a random prefix of each
//!    file's unsynced writes), start again. Three cuts: the leader, a
//!    follower, the leader again. Each time the node registers after an
//!    unclean shutdown (KIP-966: it leaves every ISR and ELR, and may not
//!    lead from its shorter log) and rejoins the ISR. Kafka's promise holds
//!    here, as a replica that kept its memory had every acknowledged
//!    record: **no acknowledged record is lost**, none is duplicated, and
//!    the log holds them in the order sent.
//! 2. **All three lose power at once** (a rack or a zone going dark). Kafka
//!    promises nothing for acknowledged records that no replica synced:
//!    every copy was in memory. What it does promise, and this checks, is
//!    that the cluster comes back without an operator: the metadata
//!    quorum keeps every committed record (its writes are synced), the
//!    partition gets a leader again (the last one standing, KIP-966's
//!    last-known-ELR rule, as no replica shut down cleanly), the replicas
//!    converge on its log byte for byte, the log holds only records that
//!    were sent, once each and in the order sent, and acks=all writes
//!    succeed again. How many acknowledged records the cut took is
//!    printed, not asserted.
//! 3. **The metadata quorum's voters lose power** one at a time (the
//!    active controller, another voter, the active controller) while
//!    topics are created as fast as the CLI can. Every creation the
//!    controller acknowledged is listed by every node afterwards, and no
//!    two nodes were active controller in the same epoch (Raft's election
//!    safety, which needs each voter's vote and log to survive its power
//!    loss). Phase 2 checks the quorum's log too: with its appends
//!    unsynced (a mutation of `src/quorum/log_store.rs`), a node that lost
//!    power could not start again.
//!
//! Needs root, /dev/fuse and python3 with confluent-kafka; prints `NOT RUN`
//! otherwise. A seed (printed; `PINLOG_POWER_LOSS_SEED` replays one) picks
//! each cut's mode.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support;
use crate::support::power::{seed_from_env, PowerDisk, Rng, SEED_ENV};
use crate::support::{run_command, wait_for, which, BrokerOpts, Cluster, CmdOutput, PINLOG_BIN};
use pinlog::constants::RECOVERY_POINT_CHECKPOINT_FILE;
use pinlog::log::checkpoint::decode_offset_checkpoint;
use pinlog::log::data_dir::TEST_BOOT_ID_ENV;
use pinlog_powerfs::CutMode;
use serde_json::Value;

const CLIENTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients");
const NODES: usize = 3;
/// Phase 1's topic.
const ONE_AT_A_TIME: &str = "power-one";
/// Phase 2's topic.
const ALL_AT_ONCE: &str = "power-all";
/// How long any single CLI or client step may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the cluster may take to settle after a cut.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the restarted nodes of phase 2 may take to form the quorum
/// and serve again.
const ALL_RESTART_TIMEOUT: Duration = Duration::from_secs(90);
/// Phase 1's producer runs this long; its cuts start after
/// [`LOAD_BEFORE_CUT`] and each waits for the ISR to be whole again.
const ONE_AT_A_TIME_PRODUCE_SECONDS: u64 = 25;
/// Load before each cut.
const LOAD_BEFORE_CUT: Duration = Duration::from_millis(1500);
/// Phase 2's producer is cut off after this much load.
const ALL_AT_ONCE_LOAD: Duration = Duration::from_secs(4);
/// A bound on phase 3's topic creations (one every few tens of ms).
const META_TOPICS_MAX: usize = 2000;
/// The periodic offset checkpoints' interval: past the test's end.
const CHECKPOINT_INTERVAL_MS: i64 = 3_600_000;
/// A short lag limit: a node that lost power leaves the ISR in seconds.
const LAG_TIME_MAX_MS: i64 = 1000;

fn can_run() -> bool {
    if std::env::var_os("PINLOG_SKIP_CLIENT_TESTS").is_some() {
        eprintln!("power loss in a cluster: NOT RUN (PINLOG_SKIP_CLIENT_TESTS is set)");
        return false;
    }
    // SAFETY: geteuid(2) has no preconditions.
    let ok = unsafe { libc::geteuid() } == 0
        && Path::new("/dev/fuse").exists()
        && which("python3").is_some()
        && run_command(
            Command::new("python3").args(["-c", "import confluent_kafka"]),
            None,
            STEP_TIMEOUT,
        )
        .success();
    if !ok {
        eprintln!(
            "power loss in a cluster: NOT RUN (needs root, /dev/fuse and python3 with \
             confluent-kafka)"
        );
    }
    ok
}

fn pinlog(args: &[&str]) -> CmdOutput {
    run_command(Command::new(PINLOG_BIN).args(args), None, STEP_TIMEOUT)
}

fn python(args: &[&str]) -> Command {
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(CLIENTS_DIR).join("replication_client.py"))
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

/// One partition as `pinlog topic describe --json` shows it.
#[derive(Debug, Clone)]
struct PartitionView {
    leader: i64,
    isr: Vec<i64>,
    topic_id: String,
}

fn describe(cluster: &mut Cluster, topic: &str) -> Option<PartitionView> {
    for i in 1..=NODES {
        if !cluster.node(i).is_running() {
            continue;
        }
        let out = pinlog(&[
            "topic",
            "describe",
            topic,
            "--json",
            "--timeout",
            "3s",
            "--bootstrap-server",
            &cluster.node(i).bootstrap(),
        ]);
        let Some(v) = out
            .success()
            .then(|| serde_json::from_str::<Value>(&out.stdout).ok())
            .flatten()
        else {
            continue;
        };
        let t = &v["topics"][0];
        let p = &t["partitions"][0];
        return Some(PartitionView {
            leader: p["leader"].as_i64().unwrap_or(-1),
            isr: p["isr"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default(),
            topic_id: t["topic_id"].as_str().unwrap_or_default().to_string(),
        });
    }
    None
}

/// Waits until `topic`'s partition has a leader and all three in its ISR.
fn await_whole_isr(cluster: &mut Cluster, topic: &str, what: &str) -> PartitionView {
    let mut last = None;
    let ok = wait_for(SETTLE_TIMEOUT, || {
        last = describe(cluster, topic);
        last.as_ref()
            .is_some_and(|p| p.leader > 0 && p.isr.len() == NODES)
    });
    if !ok {
        cluster.fail(&format!(
            "{topic} did not have a leader and {NODES} in sync {what} within {SETTLE_TIMEOUT:?}; \
             last seen {last:?}"
        ));
    }
    last.expect("seen")
}

fn create_topic(cluster: &Cluster, topic: &str) {
    let out = pinlog(&[
        "topic",
        "create",
        topic,
        "--partitions",
        "1",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
        "--bootstrap-server",
        &cluster.bootstrap(),
    ]);
    if !out.success() {
        cluster.fail(&format!("creating {topic} failed:\n{out}"));
    }
}

/// Starts the producer in the background, its stdout in `out`.
fn start_producer(cluster: &Cluster, topic: &str, seconds: u64, out: &Path) -> Child {
    let stdout = File::create(out).expect("the producer's output file");
    python(&["produce", &cluster.bootstrap(), topic, &seconds.to_string()])
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::null())
        .spawn()
        .expect("start the producer")
}

/// What the producer printed: acknowledged record numbers to offsets, the
/// highest record number it sent, and its fatal errors.
struct ProducerReport {
    acked: BTreeMap<u64, i64>,
    fatal: Vec<String>,
    done: bool,
}

fn producer_report(out: &Path) -> ProducerReport {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let mut report = ProducerReport {
        acked: BTreeMap::new(),
        fatal: Vec::new(),
        done: false,
    };
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["ACK", n, offset] => {
                if let (Ok(n), Ok(o)) = (n.parse(), offset.parse()) {
                    report.acked.insert(n, o);
                }
            }
            ["ERR", n, name, "fatal"] => report.fatal.push(format!("{n} {name}")),
            ["DONE", ..] => report.done = true,
            _ => {}
        }
    }
    report
}

/// Every record value of `topic`'s partition, in offset order from 0 (the
/// producer writes no control records, so value `i` is at offset `i`).
fn read_log(cluster: &Cluster, topic: &str) -> Vec<u64> {
    let out = run_command(
        &mut python(&["consume", &cluster.bootstrap(), topic]),
        None,
        STEP_TIMEOUT,
    );
    if !out.success() {
        cluster.fail(&format!("reading {topic} failed:\n{out}"));
    }
    out.stdout.lines().filter_map(|l| l.parse().ok()).collect()
}

/// The log holds only records that were sent, each once, in the order
/// sent: record numbers strictly increase with the offset.
fn assert_in_send_order(cluster: &Cluster, topic: &str, log: &[u64]) {
    if let Some(w) = log.windows(2).position(|w| w[0] >= w[1]) {
        cluster.fail(&format!(
            "{topic}: record {} at offset {} follows record {} at offset {w}: duplicated or \
             out of the order sent",
            log[w + 1],
            w + 1,
            log[w]
        ));
    }
}

/// Cuts the power of node `id`, already killed: its disk forgets what was
/// not synced, and its machine boots again (a new boot id, which tells the
/// broker that a crash may have lost completed writes).
fn power_cut(cluster: &mut Cluster, disks: &[PowerDisk], id: usize, mode: CutMode, boot: &str) {
    let report = disks[id - 1].fs().power_cut(mode).expect("power cut");
    eprintln!(
        "node {id} lost power ({mode:?}): {} data and {} name changes undone",
        report.data_undone, report.names_undone
    );
    cluster.node(id).set_env(TEST_BOOT_ID_ENV, boot);
}

/// Kills node `id`, cuts its power, and starts it again.
fn cut_one(cluster: &mut Cluster, disks: &[PowerDisk], id: usize, mode: CutMode, boot: &str) {
    cluster.node(id).kill9();
    power_cut(cluster, disks, id, mode, boot);
    cluster.node(id).restart();
}

/// The batches of each segment file of `topic`'s partition in `data`, by
/// file name (without an active segment's direct-I/O padding, which
/// differs between replicas).
fn segment_bytes(data: &Path, topic: &str) -> BTreeMap<String, Vec<u8>> {
    let dir = data.join(format!("{topic}-0"));
    let mut files = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(".log") {
                files.insert(name, support::segment_batches(&e.path()));
            }
        }
    }
    files
}

/// The offset a replica fetcher's truncation log line names, if `line` is
/// one ("truncated to offset X (...)" or "truncated N records from offset
/// X after an unclean election").
fn truncated_to(line: &str) -> Option<i64> {
    let rest = line
        .split_once("truncated to offset ")
        .or_else(|| line.split_once(" records from offset "))?
        .1;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[test]
fn a_cluster_keeps_acknowledged_records_through_one_power_loss_and_recovers_from_all() {
    if !can_run() {
        return;
    }
    let seed = seed_from_env();
    eprintln!("power loss in a cluster: seed {seed} (replay with {SEED_ENV}={seed})");
    let mut rng = Rng(seed);
    // Declared before the cluster: dropped after it (the nodes die first,
    // then the mounts go).
    let disks: Vec<PowerDisk> = (0..NODES)
        .map(|_| PowerDisk::mount("pinlog-power-cluster-"))
        .collect();
    let opts = BrokerOpts::new()
        // Offset checkpoints only when something asks for one (phase 2).
        .setting(
            "replica.high.watermark.checkpoint.interval.ms",
            CHECKPOINT_INTERVAL_MS,
        )
        .setting("replica.lag.time.max.ms", LAG_TIME_MAX_MS)
        .setting("replica.fetch.backoff.ms", 100);
    let mut cluster = Cluster::start_each(NODES, opts, |id, node| {
        node.data_dir(disks[id - 1].data.clone())
    });
    let work = tempfile::tempdir().expect("a directory for the producers' output");

    // 1. One node at a time.
    create_topic(&cluster, ONE_AT_A_TIME);
    let first = await_whole_isr(&mut cluster, ONE_AT_A_TIME, "at the start");
    let out = work.path().join("one-at-a-time.out");
    let mut producer = start_producer(&cluster, ONE_AT_A_TIME, ONE_AT_A_TIME_PRODUCE_SECONDS, &out);
    let mut leader = first.leader as usize;
    for cut in 0..3 {
        std::thread::sleep(LOAD_BEFORE_CUT);
        // The leader, a follower, the leader again.
        let id = if cut == 1 { leader % NODES + 1 } else { leader };
        let mode = rng.cut_mode();
        cut_one(&mut cluster, &disks, id, mode, &format!("{seed}-cut-{cut}"));
        let view = await_whole_isr(&mut cluster, ONE_AT_A_TIME, "after a node lost power");
        leader = view.leader as usize;
    }
    let deadline = Instant::now() + STEP_TIMEOUT;
    while producer.try_wait().expect("poll the producer").is_none() {
        if Instant::now() > deadline {
            let _ = producer.kill();
            cluster.fail("the producer did not finish");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let report = producer_report(&out);
    assert!(report.done, "the producer did not finish its run");
    assert!(
        report.fatal.is_empty(),
        "the producer saw fatal errors: {:?}",
        report.fatal
    );
    assert!(
        report.acked.len() > 100,
        "too few records acknowledged ({}) to prove anything",
        report.acked.len()
    );
    let unclean = cluster
        .nodes
        .iter()
        .map(|n| {
            n.log()
                .matches("registers after an unclean shutdown")
                .count()
        })
        .sum::<usize>();
    assert!(
        unclean >= 3,
        "each node that lost power registers after an unclean shutdown (KIP-966); the \
         controllers logged {unclean}"
    );
    let log = read_log(&cluster, ONE_AT_A_TIME);
    assert_in_send_order(&cluster, ONE_AT_A_TIME, &log);
    let lost: Vec<(u64, i64)> = report
        .acked
        .iter()
        .filter(|(&n, &o)| log.get(o as usize) != Some(&n))
        .map(|(&n, &o)| (n, o))
        .collect();
    if !lost.is_empty() {
        cluster.fail(&format!(
            "{} acknowledged records are not at their offsets after single power losses, \
             first {:?}",
            lost.len(),
            &lost[..lost.len().min(10)]
        ));
    }
    eprintln!(
        "one at a time: 3 power losses, {} acknowledged, {} in the log, none lost",
        report.acked.len(),
        log.len()
    );

    // 2. All three at once.
    create_topic(&cluster, ALL_AT_ONCE);
    let before = await_whole_isr(&mut cluster, ALL_AT_ONCE, "at the start");
    let out = work.path().join("all-at-once.out");
    let mut producer = start_producer(&cluster, ALL_AT_ONCE, 600, &out);
    std::thread::sleep(ALL_AT_ONCE_LOAD);
    // The power goes everywhere at once: the producer's machine too, so
    // that nothing is resent into the recovered log.
    for id in 1..=NODES {
        cluster.node(id).kill9();
    }
    let _ = producer.kill();
    let _ = producer.wait();
    for id in 1..=NODES {
        let mode = rng.cut_mode();
        power_cut(&mut cluster, &disks, id, mode, &format!("{seed}-all"));
    }
    for id in 1..=NODES {
        cluster.node(id).relaunch();
    }
    // No node answers before a majority forms the quorum again: wait for
    // all, starting again any whose port the dead process still held.
    let deadline = Instant::now() + ALL_RESTART_TIMEOUT;
    for id in 1..=NODES {
        loop {
            match cluster.node(id).try_await_ready() {
                Ok(()) => break,
                Err(e) if Instant::now() > deadline => {
                    cluster.fail(&format!(
                        "node {id} did not serve again after all lost power: {e}"
                    ));
                }
                Err(_) => cluster.node(id).relaunch(),
            }
        }
    }
    let after = await_whole_isr(&mut cluster, ALL_AT_ONCE, "after all lost power");
    // The metadata quorum synced what it committed: both topics are there,
    // under the same ids.
    assert_eq!(
        after.topic_id, before.topic_id,
        "{ALL_AT_ONCE}'s topic id changed"
    );
    assert_eq!(
        describe(&mut cluster, ONE_AT_A_TIME).map(|p| p.topic_id),
        Some(first.topic_id.clone()),
        "{ONE_AT_A_TIME} lost or changed its id"
    );
    let report = producer_report(&out);
    let log = read_log(&cluster, ALL_AT_ONCE);
    assert_in_send_order(&cluster, ALL_AT_ONCE, &log);
    let kept = report
        .acked
        .iter()
        .filter(|(&n, &o)| log.get(o as usize) == Some(&n))
        .count();
    // Identical replicas: every follower truncated to the leader's log.
    let converged = wait_for(SETTLE_TIMEOUT, || {
        let first = segment_bytes(&disks[0].data, ALL_AT_ONCE);
        !first.is_empty()
            && disks[1..]
                .iter()
                .all(|d| segment_bytes(&d.data, ALL_AT_ONCE) == first)
    });
    if !converged {
        let first = segment_bytes(&disks[0].data, ALL_AT_ONCE);
        let diffs: Vec<String> = disks
            .iter()
            .map(|d| &d.data)
            .enumerate()
            .flat_map(|(i, d)| {
                let first = &first;
                segment_bytes(d, ALL_AT_ONCE)
                    .into_iter()
                    .map(move |(name, bytes)| {
                        let other = first.get(&name).map(Vec::as_slice).unwrap_or_default();
                        let differs_at = bytes.iter().zip(other).position(|(a, b)| a != b);
                        format!(
                            "node {}: {name} {} bytes, first difference from node 1 at {differs_at:?}",
                            i + 1,
                            bytes.len()
                        )
                    })
            })
            .collect();
        cluster.fail(&format!(
            "the replicas of {ALL_AT_ONCE} did not converge after all lost power: {diffs:#?}"
        ));
    }
    // A truncation's lowered recovery point is checkpointed before the
    // follower appends past it (the periodic checkpoint is held off in this
    // test, so nothing else writes it): a node whose last truncation of the
    // partition since its restart went to offset X has a checkpointed
    // recovery point of at most X. Whether a follower truncates depends on
    // whose log the elected leader had; the count is printed.
    let mut truncations = 0;
    for (i, node) in cluster.nodes.iter().enumerate() {
        let log = node.log();
        let this_start = log.rsplit("=== test harness: start #").next().unwrap_or("");
        let partition = format!("partition={ALL_AT_ONCE}-0");
        let Some(to) = this_start
            .lines()
            .rev()
            .filter(|l| l.contains(&partition))
            .find_map(truncated_to)
        else {
            continue;
        };
        let path = disks[i].data.join(RECOVERY_POINT_CHECKPOINT_FILE);
        let checkpointed = std::fs::read(&path)
            .ok()
            .and_then(|text| decode_offset_checkpoint(&path, &text).ok())
            .and_then(|entries| {
                entries
                    .into_iter()
                    .find(|e| e.topic == ALL_AT_ONCE && e.partition == 0)
            })
            .map(|e| e.offset);
        if checkpointed.is_none_or(|c| c > to) {
            cluster.fail(&format!(
                "node {} truncated {ALL_AT_ONCE}-0 to {to}, but its checkpointed recovery point \
                 is {checkpointed:?}",
                i + 1
            ));
        }
        truncations += 1;
    }
    // And the partition takes acks=all writes again.
    let once = run_command(
        &mut python(&["once", &cluster.bootstrap(), ALL_AT_ONCE]),
        None,
        STEP_TIMEOUT,
    );
    if !once.stdout.contains("ACK") {
        cluster.fail(&format!(
            "an acks=all write after all lost power failed:\n{once}"
        ));
    }
    eprintln!(
        "all at once: {} acknowledged before the cut, {kept} of them kept, {} records in the \
         recovered log (leader {} before, {} after); {truncations} followers truncated, each \
         checkpointed its recovery point",
        report.acked.len(),
        log.len(),
        before.leader,
        after.leader
    );

    // 3. The metadata quorum: voters lose power, one at a time, while topics
    // are created; the active controller twice.
    let stop = Arc::new(AtomicBool::new(false));
    let creator = {
        let stop = Arc::clone(&stop);
        let bootstraps: Vec<String> = cluster.nodes.iter().map(|n| n.bootstrap()).collect();
        std::thread::spawn(move || {
            let mut created = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) && i < META_TOPICS_MAX {
                let name = format!("meta-{i}");
                // Each through the next node: one of them is down at times.
                let out = pinlog(&[
                    "topic",
                    "create",
                    &name,
                    "--partitions",
                    "1",
                    "--replication-factor",
                    "1",
                    "--timeout",
                    "5s",
                    "--bootstrap-server",
                    &bootstraps[i % bootstraps.len()],
                ]);
                if out.success() {
                    created.push(name);
                }
                i += 1;
            }
            created
        })
    };
    for cut in 0..3 {
        std::thread::sleep(LOAD_BEFORE_CUT);
        let controller = (1..=NODES)
            .find_map(|i| {
                support::cluster_describe(cluster.node(i))?["quorum"]["leader"]
                    .as_i64()
                    .filter(|&l| l > 0)
            })
            .unwrap_or_else(|| cluster.fail("no node names an active controller"))
            as usize;
        // The active controller, another voter, the active controller.
        let id = if cut == 1 {
            controller % NODES + 1
        } else {
            controller
        };
        let mode = rng.cut_mode();
        cut_one(
            &mut cluster,
            &disks,
            id,
            mode,
            &format!("{seed}-quorum-{cut}"),
        );
    }
    std::thread::sleep(LOAD_BEFORE_CUT);
    stop.store(true, Ordering::Relaxed);
    let created = creator.join().expect("the topic creator");
    assert!(
        created.len() >= 10,
        "too few topics created ({}) to prove anything",
        created.len()
    );
    // Every creation the controller acknowledged is committed: every node
    // lists it.
    for id in 1..=NODES {
        let out = pinlog(&[
            "topic",
            "list",
            "--json",
            "--bootstrap-server",
            &cluster.node(id).bootstrap(),
        ]);
        let listed: Vec<String> = serde_json::from_str::<Value>(&out.stdout)
            .ok()
            .and_then(|v| {
                v["topics"].as_array().map(|a| {
                    a.iter()
                        .filter_map(|t| t["name"].as_str().map(str::to_string))
                        .collect()
                })
            })
            .unwrap_or_default();
        let missing: Vec<&String> = created.iter().filter(|t| !listed.contains(t)).collect();
        if !missing.is_empty() {
            cluster.fail(&format!(
                "node {id} does not list {} topics whose creation was acknowledged: {missing:?}",
                missing.len()
            ));
        }
    }
    // Raft's safety: never two active controllers in one epoch, across
    // every start of every node.
    let mut leaders: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, node) in cluster.nodes.iter().enumerate() {
        for line in node.log().lines() {
            if !line.contains("this node is now the active controller") {
                continue;
            }
            if let Some(epoch) = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("epoch="))
                .and_then(|e| e.parse().ok())
            {
                leaders.entry(epoch).or_default().push(i + 1);
            }
        }
    }
    let doubled: Vec<_> = leaders.iter().filter(|(_, ids)| ids.len() > 1).collect();
    if !doubled.is_empty() {
        cluster.fail(&format!("two active controllers in one epoch: {doubled:?}"));
    }
    eprintln!(
        "quorum: 3 voters lost power in turn, {} topics created and all listed, {} controller \
         epochs, one leader each",
        created.len(),
        leaders.len()
    );
    drop(cluster);
    for disk in disks {
        disk.unmount();
    }
}
