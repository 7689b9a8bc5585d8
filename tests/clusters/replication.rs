//! Replication across processes (issue: replication): a 3-node cluster on
//! loopback, real clients, kill -9 and SIGSTOP.
//!
//! One cluster serves every phase, in order:
//! 1. **Leader kill under load.** confluent-kafka produces numbered
//!    records with acks=all and idempotence (librdkafka's defaults
//!    otherwise) to an RF=3, min.insync.replicas=2 topic while the leader
//!    is killed with kill -9. Every acknowledged record is then consumed
//!    exactly once, in order, and the client saw no fatal error.
//!    1b. The same with SIGTERM, a rolling restart's step: the leader
//!    hands its leadership over before it stops (controlled shutdown).
//!    1c. A rolling restart of all three brokers under that load: no send
//!    fails, and every record lands exactly once.
//! 2. **Byte-identical replicas.** Once the killed node has rejoined and
//!    caught up, every replica's segment files are byte-identical (the
//!    followers fetch in incremental fetch sessions); and stay
//!    so after it is killed and restarted once more, replaying metadata
//!    images in which it led an older epoch.
//!    2b. Followers delete what the leader deleted: after DeleteRecords,
//!    every replica drops the same segments.
//! 3. **ISR and min.insync.replicas.** A SIGSTOPped follower leaves the ISR
//!    after `replica.lag.time.max.ms` (before its session expires); acks=all
//!    works with 2 of 3 in sync when min.insync.replicas=2, and gets
//!    NOT_ENOUGH_REPLICAS when it is 3; the ISR regrows after SIGCONT.
//! 4. **Seed 004, offline partition.** An RF=1 partition whose broker dies
//!    shows leader -1, while partitions on the other brokers keep serving.
//! 5. **Unclean election.** An RF=2 topic with
//!    `unclean.leader.election.enable` whose ISR shrank to one member that
//!    then died: the stale replica takes over, the controller logs the
//!    possible loss, and the old leader truncates when it returns.
//! 6. **Groups.** The broker of a consuming group's coordinator is killed:
//!    the group moves to the new leader of its `__consumer_offsets`
//!    partition (RF=3 here) and resumes from its committed offset, and no
//!    acknowledged commit is lost.
//! 7. **Seed 000, end to end.** Both of the seed's failure scenarios with
//!    the brokers' own elections, the fetcher's test hooks holding the
//!    follower in the seed's states, and kill -9 at the seed's steps:
//!    nothing acknowledged is lost and the replicas do not diverge.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support;
use crate::support::{
    free_port, run_command, wait_for, which, Broker, BrokerOpts, Cluster, CmdOutput, PINLOG_BIN,
};
use pinlog::log::batch::{self, BatchIter, CountRule};
use pinlog::server::replication::fetcher_test_hooks::FETCHER_HOOKS_ENV;
use serde_json::Value;

const CLIENTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients");
/// How long any single CLI or client step may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the cluster may take to settle after a change.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Small replication timeouts, so that the phases take seconds.
const LAG_TIME_MAX_MS: i64 = 1000;
/// Longer than the lag limit, so that a stopped follower leaves the ISR
/// by the leader's lag check, not by fencing.
const SESSION_TIMEOUT_MS: i64 = 5000;
/// How long the loaded producer runs, and when the leader dies: a fixed
/// point inside the producer's fixed run, so that records are in flight on
/// both sides of the kill (the producer reports only when it ends; the
/// assertions below check that enough were acknowledged).
const PRODUCE_SECONDS: u64 = 8;
const KILL_AFTER: Duration = Duration::from_millis(2500);
/// Long enough for three stops, restarts and ISR regrowths.
const ROLLING_RESTART_PRODUCE_SECONDS: u64 = 20;

fn pinlog(args: &[&str]) -> CmdOutput {
    run_command(Command::new(PINLOG_BIN).args(args), None, STEP_TIMEOUT)
}

fn python<S: AsRef<OsStr>>(args: &[S]) -> Command {
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(CLIENTS_DIR).join("replication_client.py"))
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

fn clients_available() -> bool {
    if std::env::var_os("PINLOG_SKIP_CLIENT_TESTS").is_some() {
        eprintln!("PINLOG_SKIP_CLIENT_TESTS is set: skipping the replication test");
        return false;
    }
    let ok = which("python3").is_some()
        && run_command(
            Command::new("python3").args(["-c", "import confluent_kafka"]),
            None,
            STEP_TIMEOUT,
        )
        .success();
    assert!(
        ok,
        "the replication test needs python3 with confluent-kafka (pip install confluent-kafka; \
         tests/run installs it), or set PINLOG_SKIP_CLIENT_TESTS=1 to skip it"
    );
    true
}

/// One partition as `pinlog topic describe --json` shows it.
#[derive(Debug, Clone, PartialEq)]
struct PartitionView {
    leader: i64,
    replicas: Vec<i64>,
    isr: Vec<i64>,
}

fn ids(v: &Value) -> Vec<i64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default()
}

/// The partitions of `topic`, through `node`.
fn partitions(node: &Broker, topic: &str) -> Option<Vec<PartitionView>> {
    let out = pinlog(&[
        "topic",
        "describe",
        topic,
        "--json",
        // A paused broker must not hold the poll for the default 30 s.
        "--timeout",
        "3s",
        "--bootstrap-server",
        &node.bootstrap(),
    ]);
    if !out.success() {
        return None;
    }
    let v: Value = serde_json::from_str(&out.stdout).ok()?;
    Some(
        v["topics"][0]["partitions"]
            .as_array()?
            .iter()
            .map(|p| PartitionView {
                leader: p["leader"].as_i64().unwrap_or(-1),
                replicas: ids(&p["replicas"]),
                isr: ids(&p["isr"]),
            })
            .collect(),
    )
}

/// The active controller as `node` sees it.
fn active_controller(node: &Broker) -> Option<i64> {
    support::cluster_describe(node)?["quorum"]["leader"].as_i64()
}

/// Waits until partition `p` of `topic`, seen through `via`, satisfies
/// `cond`; returns it, or fails with every log.
fn await_partition(
    cluster: &Cluster,
    via: usize,
    topic: &str,
    p: usize,
    what: &str,
    cond: impl Fn(&PartitionView) -> bool,
) -> PartitionView {
    let mut last = None;
    let ok = wait_for(SETTLE_TIMEOUT, || {
        last = partitions(&cluster.nodes[via - 1], topic).and_then(|v| v.get(p).cloned());
        last.as_ref().is_some_and(&cond)
    });
    if !ok {
        cluster.fail(&format!(
            "{topic}-{p} did not reach {what} within {SETTLE_TIMEOUT:?}; last seen {last:?}"
        ));
    }
    last.expect("seen")
}

fn create_topic(cluster: &Cluster, name: &str, partitions: &str, rf: &str, configs: &[&str]) {
    let mut args = vec![
        "topic",
        "create",
        name,
        "--partitions",
        partitions,
        "--replication-factor",
        rf,
    ];
    for c in configs {
        args.extend(["--config", c]);
    }
    let bootstrap = cluster.nodes[0].bootstrap();
    args.extend(["--bootstrap-server", bootstrap.as_str()]);
    let out = pinlog(&args);
    if !out.success() {
        cluster.fail(&format!("creating {name} failed:\n{out}"));
    }
}

/// A node that is running, other than those in `except`.
fn live_node(cluster: &mut Cluster, except: &[i64]) -> usize {
    (1..=cluster.nodes.len())
        .find(|&i| !except.contains(&(i as i64)) && cluster.node(i).is_running())
        .expect("a live node")
}

/// One acks=all record with no retries through `via`; the client's verdict.
fn produce_once(cluster: &Cluster, via: usize, topic: &str) -> String {
    produce_once_with(cluster, via, topic, &[])
}

/// [`produce_once`] with producer settings (and the client's
/// `record.value=`) as `key=value` words.
fn produce_once_with(cluster: &Cluster, via: usize, topic: &str, settings: &[&str]) -> String {
    let bootstrap = cluster.nodes[via - 1].bootstrap();
    let mut args = vec!["once", bootstrap.as_str(), topic];
    args.extend_from_slice(settings);
    let out = run_command(&mut python(&args), None, STEP_TIMEOUT);
    if !out.success() {
        cluster.fail(&format!("the one-record producer failed:\n{out}"));
    }
    out.stdout.trim().to_string()
}

/// Records produced one at a time to see the followers fetch a write in
/// flight.
const OVERLAP_PRODUCES: usize = 5;

/// Issue 33, direction 3: the followers' long polls wait on the leader, so
/// a produce's group commit is handed to them while the leader's own write
/// of it is in flight, and the leader counts those fetches. Each record is
/// still acknowledged (the HW waits for the leader's write).
fn followers_fetch_a_write_in_flight(cluster: &Cluster) {
    const FAMILY: &str = "pinlog_replica_fetches_of_writes_in_flight_total";
    create_topic(cluster, "overlap", "1", "3", &["min.insync.replicas=2"]);
    let p = await_partition(cluster, 1, "overlap", 0, "three in sync", |p| {
        p.leader > 0 && p.isr.len() == 3
    });
    let leader = &cluster.nodes[p.leader as usize - 1];
    let before = leader.metric_total(FAMILY).unwrap_or(0.0);
    for _ in 0..OVERLAP_PRODUCES {
        let verdict = produce_once(cluster, p.leader as usize, "overlap");
        if !verdict.starts_with("ACK") {
            cluster.fail(&format!("acks=all with 3 of 3 in sync failed: {verdict}"));
        }
    }
    let after = leader.metric_total(FAMILY).unwrap_or(0.0);
    if after <= before {
        cluster.fail(&format!(
            "no follower fetched a write in flight over {OVERLAP_PRODUCES} produces \
             ({FAMILY} on leader {} stayed at {before})",
            p.leader
        ));
    }
    eprintln!(
        "leader {} served {} follower fetches from writes in flight over {OVERLAP_PRODUCES} produces",
        p.leader,
        after - before
    );
}

/// How long the counter of early answers may take to show one after the
/// new topic is in sync (the answers come before that; this covers the
/// metrics scrape).
const GAIN_ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// The followers of "overlap" (created by [`followers_fetch_a_write_in_flight`])
/// have Fetches parked at its leader, which has nothing new for them. A new
/// RF 3 topic of 3 partitions gives them a partition on that leader, and
/// the leader answers their parked Fetches at once
/// (`node::follower_gains`), so that their next Fetch carries it, rather
/// than after `replica.fetch.wait.max.ms`. Counted, not timed: the counter
/// moves only for a parked Fetch answered because of a gain, and nothing
/// else wakes these Fetches (no records are produced meanwhile).
fn parked_follower_fetches_are_answered_for_a_new_topic(cluster: &Cluster) {
    const FAMILY: &str = "pinlog_replica_fetches_answered_for_gains_total";
    let overlap = await_partition(cluster, 1, "overlap", 0, "three in sync", |p| {
        p.leader > 0 && p.isr.len() == 3
    });
    let leader = &cluster.nodes[overlap.leader as usize - 1];
    let before = leader.metric_total(FAMILY).unwrap_or(0.0);
    create_topic(cluster, "gained", "3", "3", &[]);
    let led_there: Vec<usize> = (0..3)
        .filter(|&p| {
            await_partition(cluster, 1, "gained", p, "three in sync", |v| {
                v.leader > 0 && v.isr.len() == 3
            })
            .leader
                == overlap.leader
        })
        .collect();
    if led_there.is_empty() {
        cluster.fail(&format!(
            "node {} leads no partition of a 3-partition topic on 3 nodes",
            overlap.leader
        ));
    }
    let mut after = before;
    let answered = wait_for(GAIN_ANSWER_TIMEOUT, || {
        after = leader.metric_total(FAMILY).unwrap_or(0.0);
        after > before
    });
    if !answered {
        cluster.fail(&format!(
            "leader {} answered none of its followers' parked Fetches for the partitions \
             {led_there:?} of \"gained\" ({FAMILY} stayed at {before}): they waited out \
             replica.fetch.wait.max.ms",
            overlap.leader
        ));
    }
    eprintln!(
        "leader {} answered {} parked follower Fetches for the new topic",
        overlap.leader,
        after - before
    );
}

/// The bytes of every `.log` file of `dir`, by name.
fn segment_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    (name, support::segment_batches(&e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Checks a `produce` run of the replication client against `topic`:
/// no fatal error, enough acknowledged, and every acknowledged record in
/// the log exactly once, in order.
fn assert_acked_exactly_once(cluster: &Cluster, topic: &str, out: &CmdOutput) {
    let mut acked: Vec<u64> = Vec::new();
    let mut fatal: Vec<String> = Vec::new();
    let mut done = None;
    for line in out.stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["ACK", n, _offset] => acked.push(n.parse().unwrap()),
            ["ERR", n, name, "fatal"] => fatal.push(format!("{n} {name}")),
            ["DONE", a, f, left] => done = Some((a.to_string(), f.to_string(), left.to_string())),
            _ => {}
        }
    }
    assert!(
        fatal.is_empty(),
        "the producer saw non-retriable errors: {fatal:?}"
    );
    assert!(done.is_some(), "the producer did not finish:\n{out}");
    assert!(
        acked.len() > 100,
        "too few records acknowledged ({}) to prove anything:\n{}",
        acked.len(),
        support::tail(&out.stderr, 20)
    );
    let consumed = run_command(
        &mut python(&["consume", &cluster.bootstrap(), topic]),
        None,
        STEP_TIMEOUT,
    );
    if !consumed.success() {
        cluster.fail(&format!("the consumer failed:\n{consumed}"));
    }
    let values: Vec<u64> = consumed
        .stdout
        .lines()
        .filter_map(|l| l.parse().ok())
        .collect();
    let mut seen = std::collections::HashMap::new();
    for v in &values {
        *seen.entry(*v).or_insert(0u32) += 1;
    }
    let lost: Vec<u64> = acked
        .iter()
        .copied()
        .filter(|v| !seen.contains_key(v))
        .collect();
    let duplicated: Vec<u64> = seen
        .iter()
        .filter(|(_, &c)| c > 1)
        .map(|(v, _)| *v)
        .collect();
    assert!(lost.is_empty(), "acknowledged records lost: {lost:?}");
    assert!(duplicated.is_empty(), "records duplicated: {duplicated:?}");
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "records out of order in the log"
    );
    eprintln!(
        "{} acknowledged, {} in the log, none lost or duplicated",
        acked.len(),
        values.len()
    );
}

#[test]
fn replicated_cluster_survives_kills_and_pauses() {
    if !clients_available() {
        return;
    }
    let hooks = tempfile::tempdir().expect("a directory for the fetcher's test hooks");
    let opts = BrokerOpts::new()
        .setting("replica.lag.time.max.ms", LAG_TIME_MAX_MS)
        .setting("broker.session.timeout.ms", SESSION_TIMEOUT_MS)
        .setting("replica.fetch.backoff.ms", 100)
        .env(
            FETCHER_HOOKS_ENV,
            hooks.path().to_str().expect("a UTF-8 temporary path"),
        );
    let mut cluster = Cluster::start_each(3, opts, |_, node| {
        node.setting("metrics.listen", format!("127.0.0.1:{}", free_port()))
    });

    // 0. Replication overlaps the leader's write.
    followers_fetch_a_write_in_flight(&cluster);
    // 0b. A new topic's followers are not held by their parked Fetches.
    parked_follower_fetches_are_answered_for_a_new_topic(&cluster);

    // 1. Leader kill under load.
    create_topic(&cluster, "acked", "1", "3", &["min.insync.replicas=2"]);
    let before = await_partition(&cluster, 1, "acked", 0, "three in sync", |p| {
        p.leader > 0 && p.isr.len() == 3
    });
    let leader = before.leader;
    let producer = python(&[
        "produce",
        &cluster.bootstrap(),
        "acked",
        &PRODUCE_SECONDS.to_string(),
    ]);
    let producing = std::thread::spawn(move || {
        let mut producer = producer;
        run_command(&mut producer, None, STEP_TIMEOUT)
    });
    std::thread::sleep(KILL_AFTER);
    cluster.node(leader as usize).kill9();
    let killed_at = Instant::now();
    let out = producing.join().expect("producer thread");
    if !out.success() {
        cluster.fail(&format!("the producer failed:\n{out}"));
    }
    let via = live_node(&mut cluster, &[leader]);
    let after = await_partition(&cluster, via, "acked", 0, "a new leader", |p| {
        p.leader > 0 && p.leader != leader
    });
    eprintln!(
        "leader {leader} killed; {} leads after {:?}",
        after.leader,
        killed_at.elapsed()
    );
    // The killed node comes back and catches up.
    cluster.node(leader as usize).restart();
    await_partition(&cluster, 1, "acked", 0, "three in sync again", |p| {
        p.isr.len() == 3
    });
    assert_acked_exactly_once(&cluster, "acked", &out);

    // 1b. Leader SIGTERM under load: a rolling restart's step. The leader
    // hands its leadership over before it stops (controlled shutdown), and
    // the producer's records still land exactly once.
    create_topic(
        &cluster,
        "handed-over",
        "1",
        "3",
        &["min.insync.replicas=2"],
    );
    let before = await_partition(&cluster, 1, "handed-over", 0, "three in sync", |p| {
        p.leader > 0 && p.isr.len() == 3
    });
    let leader = before.leader;
    let producer = python(&[
        "produce",
        &cluster.bootstrap(),
        "handed-over",
        &PRODUCE_SECONDS.to_string(),
    ]);
    let producing = std::thread::spawn(move || {
        let mut producer = producer;
        run_command(&mut producer, None, STEP_TIMEOUT)
    });
    std::thread::sleep(KILL_AFTER);
    let stopping = cluster.node(leader as usize);
    stopping.stop();
    let log = stopping.log();
    if !log.contains("controlled shutdown done: this broker leads no partition") {
        cluster.fail(&format!(
            "broker {leader} stopped without handing over its leaderships first"
        ));
    }
    let out = producing.join().expect("producer thread");
    if !out.success() {
        cluster.fail(&format!("the producer failed:\n{out}"));
    }
    cluster.node(leader as usize).restart();
    await_partition(&cluster, 1, "handed-over", 0, "three in sync again", |p| {
        p.isr.len() == 3
    });
    assert_acked_exactly_once(&cluster, "handed-over", &out);

    // 1c. A whole rolling restart under load (issue: operations): every
    // broker in turn is stopped with SIGTERM and restarted, the next one
    // only once the ISR is whole again, as an operator does it. The
    // idempotent acks=all producer sees no failed send at all, retriable
    // or not, and every record lands exactly once.
    create_topic(&cluster, "rolling", "1", "3", &["min.insync.replicas=2"]);
    await_partition(&cluster, 1, "rolling", 0, "three in sync", |p| {
        p.leader > 0 && p.isr.len() == 3
    });
    let producer = python(&[
        "produce",
        &cluster.bootstrap(),
        "rolling",
        &ROLLING_RESTART_PRODUCE_SECONDS.to_string(),
    ]);
    let producing = std::thread::spawn(move || {
        let mut producer = producer;
        run_command(&mut producer, None, STEP_TIMEOUT)
    });
    std::thread::sleep(KILL_AFTER);
    for node in 1..=3usize {
        cluster.node(node).stop();
        cluster.node(node).restart();
        let via = node % 3 + 1;
        await_partition(
            &cluster,
            via,
            "rolling",
            0,
            "three in sync after a restart",
            |p| p.leader > 0 && p.isr.len() == 3,
        );
    }
    let out = producing.join().expect("producer thread");
    if !out.success() {
        cluster.fail(&format!("the producer failed:\n{out}"));
    }
    let done = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("DONE "))
        .map(str::to_string);
    assert!(
        done.as_deref().is_some_and(|d| {
            let f: Vec<&str> = d.split_whitespace().collect();
            f.len() == 3 && f[1] == "0" && f[2] == "0"
        }),
        "a rolling restart must fail no send (DONE acked failed unflushed): {done:?}\n{}",
        support::tail(&out.stdout, 10)
    );
    assert_acked_exactly_once(&cluster, "rolling", &out);

    // 2. Byte-identical replicas, once every follower has caught up.
    let dirs: Vec<_> = cluster
        .nodes
        .iter()
        .map(|n| n.data_dir().join("acked-0"))
        .collect();
    let identical = wait_for(SETTLE_TIMEOUT, || {
        let first = segment_bytes(&dirs[0]);
        !first.is_empty() && dirs[1..].iter().all(|d| segment_bytes(d) == first)
    });
    if !identical {
        let sizes: Vec<Vec<(String, usize)>> = dirs
            .iter()
            .map(|d| {
                segment_bytes(d)
                    .into_iter()
                    .map(|(n, b)| (n, b.len()))
                    .collect()
            })
            .collect();
        cluster.fail(&format!("replicas are not byte-identical: {sizes:?}"));
    }
    // The followers fetch in incremental sessions: the leader of "acked"
    // holds one for each other node's fetcher.
    let acked_leader =
        await_partition(&cluster, 1, "acked", 0, "a leader", |p| p.leader > 0).leader;
    let sessions = wait_for(SETTLE_TIMEOUT, || {
        cluster.nodes[acked_leader as usize - 1]
            .metric("pinlog_fetch_sessions_follower")
            .is_some_and(|n| n >= 2.0)
    });
    if !sessions {
        cluster.fail(&format!(
            "node {acked_leader} holds {:?} follower fetch sessions, not one per follower",
            cluster.nodes[acked_leader as usize - 1].metric("pinlog_fetch_sessions_follower")
        ));
    }
    // A restart replays old metadata images, in some of which the node that
    // was killed led "acked" in epoch 0. Taking that role again wrote epoch
    // 0 into its epoch cache at its log end, truncating the newer epochs it
    // had since fetched (found by the fault suite: the next truncation then
    // went below an HW it believed it had served, and the shard panicked).
    // Replicas now apply only the image current after catch-up.
    let before_restart = cluster.node(leader as usize).log().len();
    cluster.node(leader as usize).kill9();
    cluster.node(leader as usize).restart();
    await_partition(
        &cluster,
        1,
        "acked",
        0,
        "three in sync after a replay",
        |p| p.isr.len() == 3,
    );
    let since = cluster.node(leader as usize).log()[before_restart..].to_string();
    if since.contains("caused truncation of conflicting entries") {
        cluster.fail("a restarted node took a role from a replayed image and cut its epoch cache");
    }
    // No role is taken before this process's registration is in the image.
    let registered = since.find("registered with the controller");
    let first_role = ["leading the partition", "following broker"]
        .iter()
        .filter_map(|l| since.find(l))
        .min();
    if registered.is_none() || first_role.is_some_and(|r| Some(r) < registered) {
        cluster.fail("a restarted node took a partition role from a replayed image");
    }
    if !wait_for(SETTLE_TIMEOUT, || {
        let first = segment_bytes(&dirs[0]);
        dirs[1..].iter().all(|d| segment_bytes(d) == first)
    }) {
        cluster.fail("replicas differ after the replaying restart");
    }
    followers_follow_the_log_start(&cluster);

    // 3. ISR and min.insync.replicas. Pausing two of the three nodes would
    // stop the metadata quorum too (every node is a voter), so "one in sync
    // is too few" is checked on a topic that needs all three.
    create_topic(&cluster, "strict", "1", "3", &["min.insync.replicas=3"]);
    await_partition(&cluster, 1, "strict", 0, "three in sync", |p| {
        p.leader > 0 && p.isr.len() == 3
    });
    let now = await_partition(&cluster, 1, "acked", 0, "three in sync", |p| {
        p.isr.len() == 3 && p.leader > 0
    });
    let leader = now.leader;
    // Not the active controller: pausing it would hold up the ISR change
    // itself until the quorum elects another, and the shrink would seem
    // to wait for the session timeout (after the rolling restart's
    // handovers, any node may be the active controller).
    let controller = active_controller(&cluster.nodes[leader as usize - 1]);
    let follower = *now
        .replicas
        .iter()
        .find(|&&r| r != leader && Some(r) != controller)
        .unwrap();
    let via = leader as usize;
    let verdict = produce_once(&cluster, via, "strict");
    assert!(
        verdict.starts_with("ACK"),
        "acks=all with 3 of 3 in sync and min.insync.replicas=3 failed: {verdict}"
    );
    let paused_at = Instant::now();
    cluster.node(follower as usize).signal(libc::SIGSTOP);
    await_partition(
        &cluster,
        via,
        "acked",
        0,
        "an ISR without the paused follower",
        |p| !p.isr.contains(&follower),
    );
    let shrink = paused_at.elapsed();
    eprintln!("paused follower {follower} left the ISR after {shrink:?}");
    assert!(
        shrink < Duration::from_millis(SESSION_TIMEOUT_MS as u64),
        "the ISR shrank only after {shrink:?}, when the session ran out, not after \
         replica.lag.time.max.ms"
    );
    assert!(
        cluster.nodes[via - 1]
            .log()
            .contains("replica.lag.time.max.ms"),
        "the leader's log does not say the ISR shrank for replica.lag.time.max.ms"
    );
    let verdict = produce_once(&cluster, via, "acked");
    assert!(
        verdict.starts_with("ACK"),
        "acks=all with 2 of 3 in sync and min.insync.replicas=2 failed: {verdict}"
    );
    let strict = await_partition(&cluster, via, "strict", 0, "two in sync", |p| {
        p.isr.len() == 2 && p.leader > 0 && p.leader != follower
    });
    let verdict = produce_once(&cluster, strict.leader as usize, "strict");
    assert_eq!(
        verdict, "ERR NOT_ENOUGH_REPLICAS",
        "acks=all with 2 of 3 in sync and min.insync.replicas=3"
    );
    cluster.node(follower as usize).signal(libc::SIGCONT);
    await_partition(&cluster, via, "acked", 0, "the ISR regrown", |p| {
        p.isr.len() == 3
    });
    await_partition(&cluster, via, "strict", 0, "the ISR regrown", |p| {
        p.isr.len() == 3
    });

    // 4. Seed 004: an RF=1 partition whose broker dies goes offline alone.
    create_topic(&cluster, "solo", "3", "1", &[]);
    let solo = {
        let mut last = None;
        wait_for(SETTLE_TIMEOUT, || {
            last = partitions(&cluster.nodes[0], "solo");
            last.as_ref()
                .is_some_and(|v| v.iter().all(|p| p.leader > 0))
        });
        last.unwrap_or_else(|| cluster.fail("solo has no leaders"))
    };
    let victim = solo[0].leader;
    cluster.node(victim as usize).kill9();
    let via = live_node(&mut cluster, &[victim]);
    await_partition(&cluster, via, "solo", 0, "offline (leader -1)", |p| {
        p.leader == -1
    });
    let other = solo
        .iter()
        .position(|p| p.leader != victim)
        .expect("a partition on another broker");
    let view = partitions(&cluster.nodes[via - 1], "solo").unwrap();
    assert!(
        view[other].leader > 0,
        "solo-{other} lost its leader too: {view:?}"
    );
    cluster.node(victim as usize).restart();
    await_partition(&cluster, via, "solo", 0, "back online", |p| {
        p.leader == victim
    });

    // 5. Unclean election.
    create_topic(
        &cluster,
        "unclean",
        "1",
        "2",
        &["unclean.leader.election.enable=true"],
    );
    let u = await_partition(&cluster, 1, "unclean", 0, "two in sync", |p| {
        p.leader > 0 && p.isr.len() == 2
    });
    let old_leader = u.leader;
    let stale = *u.replicas.iter().find(|&&r| r != old_leader).unwrap();
    cluster.node(stale as usize).kill9();
    let via = live_node(&mut cluster, &[stale]);
    await_partition(
        &cluster,
        via,
        "unclean",
        0,
        "the leader alone in the ISR",
        |p| p.isr == vec![old_leader],
    );
    for _ in 0..3 {
        let verdict = produce_once(&cluster, via, "unclean");
        assert!(
            verdict.starts_with("ACK"),
            "produce with one in sync failed: {verdict}"
        );
    }
    cluster.node(old_leader as usize).kill9();
    cluster.node(stale as usize).restart();
    let via = live_node(&mut cluster, &[old_leader]);
    await_partition(
        &cluster,
        via,
        "unclean",
        0,
        "the stale replica leading",
        |p| p.leader == stale,
    );
    let said = cluster
        .nodes
        .iter()
        .any(|n| n.log().contains("unclean leader election"));
    assert!(said, "no node logged the unclean leader election");
    cluster.node(old_leader as usize).restart();
    let truncated = wait_for(SETTLE_TIMEOUT, || {
        cluster.nodes[old_leader as usize - 1]
            .log()
            .contains("after an unclean election")
    });
    if !truncated {
        cluster.fail("the old leader did not log its truncation after the unclean election");
    }

    // 6. Groups: kill the coordinator's broker under a consuming group.
    const GROUP: &str = "replicated-group";
    const RECORDS: usize = 1200;
    create_topic(&cluster, "grouped", "1", "3", &[]);
    await_partition(&cluster, 1, "grouped", 0, "three in sync", |p| {
        p.isr.len() == 3
    });
    let filled = run_command(
        &mut python(&["produce", &cluster.bootstrap(), "grouped", "4"]),
        None,
        STEP_TIMEOUT,
    );
    if !filled.success() {
        cluster.fail(&format!("filling grouped failed:\n{filled}"));
    }
    let produced = filled
        .stdout
        .lines()
        .filter(|l| l.starts_with("ACK"))
        .count();
    assert!(
        produced >= RECORDS,
        "only {produced} records for the group phase"
    );
    let consumer = python(&[
        "group",
        &cluster.bootstrap(),
        "grouped",
        GROUP,
        &RECORDS.to_string(),
    ]);
    let consuming = std::thread::spawn(move || {
        let mut consumer = consumer;
        run_command(&mut consumer, None, STEP_TIMEOUT)
    });
    // The coordinator: the leader of the group's offsets partition.
    let offsets_partition = {
        let topics = partitions(&cluster.nodes[0], "__consumer_offsets")
            .unwrap_or_else(|| cluster.fail("no __consumer_offsets"));
        pinlog::group::offsets_topic::partition_for(GROUP, topics.len() as i32) as usize
    };
    // Kill once the group has committed, mid-way through the topic.
    let committed_once = wait_for(SETTLE_TIMEOUT, || {
        let out = run_command(
            &mut python(&["committed", &cluster.nodes[0].bootstrap(), "grouped", GROUP]),
            None,
            STEP_TIMEOUT,
        );
        out.stdout
            .trim()
            .strip_prefix("OFFSET ")
            .and_then(|o| o.parse::<i64>().ok())
            .is_some_and(|o| o > 0)
    });
    if !committed_once {
        cluster.fail("the group never committed");
    }
    let coordinator = partitions(&cluster.nodes[0], "__consumer_offsets")
        .and_then(|v| v.get(offsets_partition).cloned())
        .unwrap_or_else(|| cluster.fail("no offsets partition"));
    assert_eq!(
        coordinator.replicas.len(),
        3,
        "__consumer_offsets should have offsets.topic.replication.factor 3 replicas"
    );
    cluster.node(coordinator.leader as usize).kill9();
    let out = consuming.join().expect("consumer thread");
    if !out.success() {
        cluster.fail(&format!("the group consumer failed:\n{out}"));
    }
    let last_commit = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("COMMITTED "))
        .filter_map(|o| o.parse::<i64>().ok())
        .max()
        .unwrap_or_else(|| cluster.fail(&format!("no commit succeeded:\n{out}")));
    assert!(
        out.stdout.contains(&format!("CONSUMED {RECORDS}")),
        "the group did not resume after its coordinator died:\n{}",
        support::tail(&out.stdout, 10)
    );
    let via = live_node(&mut cluster, &[coordinator.leader]);
    let committed = run_command(
        &mut python(&[
            "committed",
            &cluster.nodes[via - 1].bootstrap(),
            "grouped",
            GROUP,
        ]),
        None,
        STEP_TIMEOUT,
    );
    assert_eq!(
        committed.stdout.trim(),
        format!("OFFSET {last_commit}"),
        "the group's committed offset after the coordinator moved:\n{committed}"
    );
    // The former coordinator comes back as a follower of the offsets
    // partition: it must not load the groups and act as a second, stale
    // coordinator (found by the fault suite: OffsetFetch answered by a
    // follower made committed offsets seem to go back).
    let former = coordinator.leader as usize;
    let before_restart = cluster.node(former).log().len();
    cluster.node(former).restart();
    await_partition(
        &cluster,
        via,
        "__consumer_offsets",
        offsets_partition,
        "its ISR whole",
        |p| p.isr.len() == 3,
    );
    let now = partitions(&cluster.nodes[via - 1], "__consumer_offsets")
        .and_then(|v| v.get(offsets_partition).cloned())
        .unwrap_or_else(|| cluster.fail("no offsets partition"));
    let since = cluster.node(former).log()[before_restart..].to_string();
    let loaded =
        format!("loaded group state from __consumer_offsets partition={offsets_partition} ");
    if now.leader != former as i64 && since.contains(&loaded) {
        cluster.fail(&format!(
            "node {former} follows __consumer_offsets-{offsets_partition} but loaded its groups"
        ));
    }

    // 6b. A partition that cannot truncate yet does not stall the others.
    a_partition_waiting_to_truncate_does_not_stall_the_others(&cluster, hooks.path());

    // 7. Seed 000 end to end.
    seed_000_end_to_end(&mut cluster, hooks.path());
}

/// Step 6b. A follower's fetcher serves every partition it follows from one
/// leader. One of them waits to truncate, because the leader refuses its
/// OffsetsForLeaderEpoch (here by the `refuse-epoch` hook; in life, a
/// leader whose image is behind). Its neighbours must still replicate and
/// stay in sync: the fetcher used to skip fetching while any partition
/// waited, so they fell out of the ISR and never came back.
fn a_partition_waiting_to_truncate_does_not_stall_the_others(cluster: &Cluster, hooks: &Path) {
    const TOPIC: &str = "truncating";
    // Enough partitions that, on each follower, some share partition 0's
    // leader and shard (its fetcher).
    const PARTITIONS: usize = 12;
    for node in 1..=cluster.nodes.len() {
        set_fetcher_hook(hooks, node as i64, TOPIC, "refuse-epoch", true);
    }
    create_topic(cluster, TOPIC, &PARTITIONS.to_string(), "3", &[]);
    for p in 0..PARTITIONS {
        await_partition(cluster, 1, TOPIC, p, "a leader", |v| v.leader > 0);
        let partition = format!("record.partition={p}");
        let ack = produce_once_with(cluster, 1, TOPIC, &[&partition]);
        if !ack.starts_with("ACK") {
            cluster.fail(&format!("{TOPIC}-{p}: acks=all produce answered {ack}"));
        }
    }
    // No wait is needed before looking: an acks=all record is acknowledged
    // once every ISR member has it, or once a stalled follower has left the
    // ISR, and one that left comes back only by fetching. So three in sync
    // after the acknowledgement means the followers fetched.
    for p in 1..PARTITIONS {
        await_partition(
            cluster,
            1,
            TOPIC,
            p,
            "three in sync beside a stalled partition",
            |v| v.isr.len() == 3,
        );
    }
    // Once the leader answers, partition 0 truncates and catches up too.
    for node in 1..=cluster.nodes.len() {
        set_fetcher_hook(hooks, node as i64, TOPIC, "refuse-epoch", false);
    }
    await_partition(cluster, 1, TOPIC, 0, "three in sync once answered", |v| {
        v.isr.len() == 3
    });
}

/// The records of a replica's `.log` files in `partition_dir`, as
/// `(offset, value)`: what the replica holds, whatever its HW.
fn replica_records(partition_dir: &Path) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    for (_, bytes) in segment_bytes(partition_dir) {
        for item in BatchIter::new(&bytes, CountRule::Compacted) {
            let (position, h) = item.expect("a whole batch");
            let batch = &bytes[position..position + h.size_bytes()];
            for r in batch::records(batch).expect("an uncompressed batch") {
                let r = r.expect("a record");
                out.push((
                    h.base_offset + r.offset_delta,
                    r.value.unwrap_or_default().to_vec(),
                ));
            }
        }
    }
    out
}

/// The HW of `topic`-0 in a node's `replication-offset-checkpoint`, if it
/// has one (Kafka's text format: version, count, then "topic partition hw").
fn checkpointed_high_watermark(node: &Broker, topic: &str) -> Option<i64> {
    let text =
        std::fs::read_to_string(node.data_dir().join("replication-offset-checkpoint")).ok()?;
    text.lines().skip(2).find_map(|line| {
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            [t, "0", hw] if *t == topic => hw.parse().ok(),
            _ => None,
        }
    })
}

/// Creates or removes hook file `<node>.<topic>-0.<hook>` (see
/// `pinlog::server::replication::fetcher_test_hooks`).
fn set_fetcher_hook(hooks: &Path, node: i64, topic: &str, hook: &str, on: bool) {
    let path = hooks.join(format!("{node}.{topic}-0.{hook}"));
    if on {
        std::fs::write(&path, b"").expect("hook file");
    } else {
        std::fs::remove_file(&path).expect("hook file");
    }
}

/// Phase 7: seed 000's two failure scenarios with real brokers. The
/// fetcher's test hooks put the follower into the seed's exact states; the
/// rest is kill -9, restarts and the controller's own elections.
///
/// The partition has RF=2 and min.insync.replicas=2; node "a" leads and
/// node "b" follows.
/// - Steps 1 to 3: "A" and then "B" are acknowledged with acks=all, but
///   b's fetcher ignores the HW of the leader's answers, so b holds both
///   records with HW ≤ 1 when it is killed (the seed's follower that
///   crashes before it learns HW=2). The controller moves b from the ISR to
///   the ELR (KIP-966), as the ISR is now below the minimum.
/// - Step 4: b restarts, and its fetcher is held so that it asks the leader
///   nothing; then a is killed (the leader that dies before it answers).
///   With HW truncation b would have dropped "B" here: it must keep it.
/// - Step 5: b is elected from the ELR and must still hold "B" at offset 1
///   (scenario 1: no loss). "C" is written to it with acks=1 and must land
///   at offset 2, not over "B" (scenario 2: no divergence). a returns as a
///   follower, finds with OffsetsForLeaderEpoch that nothing of its log
///   diverges, and catches up: both replicas hold A, B, C byte for byte.
fn seed_000_end_to_end(cluster: &mut Cluster, hooks: &Path) {
    const TOPIC: &str = "seed000";
    for id in 1..=cluster.nodes.len() {
        if !cluster.node(id).is_running() {
            cluster.node(id).restart();
        }
    }
    create_topic(cluster, TOPIC, "1", "2", &["min.insync.replicas=2"]);
    let start = await_partition(cluster, 1, TOPIC, 0, "two in sync", |p| {
        p.leader > 0 && p.isr.len() == 2
    });
    let a = start.leader;
    let b = *start
        .replicas
        .iter()
        .find(|&&r| r != a)
        .expect("a follower");
    // Clients go through the node that holds no replica and is never killed.
    let via = (1..=cluster.nodes.len() as i64)
        .find(|n| !start.replicas.contains(n))
        .expect("a third node") as usize;
    let dir_of =
        |cluster: &Cluster, n: i64| cluster.nodes[n as usize - 1].data_dir().join("seed000-0");
    let send = |cluster: &Cluster, value: &str, acks: &str| {
        let value = format!("record.value={value}");
        let acks = format!("acks={acks}");
        produce_once_with(cluster, via, TOPIC, &[&value, &acks])
    };

    // Steps 1 to 3.
    assert_eq!(send(cluster, "A", "all"), "ACK 0");
    set_fetcher_hook(hooks, b, TOPIC, "freeze-hw", true);
    assert_eq!(
        send(cluster, "B", "all"),
        "ACK 1",
        "the leader's HW passes offset 1 once b has fetched it"
    );
    let b_dir = dir_of(cluster, b);
    assert_eq!(
        replica_records(&b_dir),
        vec![(0, b"A".to_vec()), (1, b"B".to_vec())],
        "b holds both records"
    );
    cluster.node(b as usize).kill9();
    set_fetcher_hook(hooks, b, TOPIC, "freeze-hw", false);
    let hw = checkpointed_high_watermark(&cluster.nodes[b as usize - 1], TOPIC).unwrap_or(0);
    assert!(
        hw <= 1,
        "b never learned HW=2, yet its checkpoint says {hw}"
    );
    await_partition(cluster, via, TOPIC, 0, "a alone in the ISR", |p| {
        p.isr == vec![a]
    });

    // Step 4.
    set_fetcher_hook(hooks, b, TOPIC, "hold", true);
    cluster.node(b as usize).restart();
    cluster.node(a as usize).kill9();

    // Step 5.
    await_partition(cluster, via, TOPIC, 0, "b leading", |p| p.leader == b);
    set_fetcher_hook(hooks, b, TOPIC, "hold", false);
    assert_eq!(
        replica_records(&b_dir),
        vec![(0, b"A".to_vec()), (1, b"B".to_vec())],
        "scenario 1: the new leader lost the acknowledged \"B\""
    );
    assert_eq!(
        send(cluster, "C", "1"),
        "ACK 2",
        "scenario 2: the new leader's first record goes after \"B\""
    );
    cluster.node(a as usize).restart();
    await_partition(cluster, via, TOPIC, 0, "a back in the ISR", |p| {
        p.leader == b && p.isr.len() == 2
    });
    // The leader moves its HW past "C" at a's next fetch after the
    // expansion is committed, so a consumer may first see less.
    let expected = ["A", "B", "C", "END 3 3"];
    let mut consumed = None;
    let all_read = wait_for(SETTLE_TIMEOUT, || {
        let out = run_command(
            &mut python(&["consume", &cluster.nodes[via - 1].bootstrap(), TOPIC]),
            None,
            STEP_TIMEOUT,
        );
        let done = out.stdout.lines().eq(expected);
        consumed = Some(out);
        done
    });
    if !all_read {
        cluster.fail(&format!(
            "a consumer did not read A, B, C after both scenarios:\n{}",
            consumed.expect("consumed once")
        ));
    }
    let a_dir = dir_of(cluster, a);
    let same = wait_for(SETTLE_TIMEOUT, || {
        segment_bytes(&a_dir) == segment_bytes(&b_dir)
    });
    assert!(
        same,
        "the replicas' logs differ: a {:?}, b {:?}",
        replica_records(&a_dir),
        replica_records(&b_dir)
    );
}

/// The segment file names in `partition_dir`.
fn segment_names(partition_dir: &Path) -> Vec<String> {
    segment_bytes(partition_dir)
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// Phase 2b: a DeleteRecords on the leader moves every follower's log start
/// too (the log start offset in the leader's fetch answers), so that the
/// followers delete the same whole segments.
fn followers_follow_the_log_start(cluster: &Cluster) {
    const TOPIC: &str = "trimmed";
    create_topic(cluster, TOPIC, "1", "3", &["segment.bytes=4096"]);
    await_partition(cluster, 1, TOPIC, 0, "three in sync", |p| p.isr.len() == 3);
    let filled = run_command(
        &mut python(&["produce", &cluster.bootstrap(), TOPIC, "1"]),
        None,
        STEP_TIMEOUT,
    );
    let acked = filled
        .stdout
        .lines()
        .filter(|l| l.starts_with("ACK"))
        .count();
    if !filled.success() || acked < 100 {
        cluster.fail(&format!("filling {TOPIC} failed:\n{filled}"));
    }
    let dirs: Vec<_> = cluster
        .nodes
        .iter()
        .map(|n| n.data_dir().join(format!("{TOPIC}-0")))
        .collect();
    // Up to the last segment's base: every earlier segment lies wholly
    // below the new log start and must go, on every replica.
    let before = segment_names(&dirs[0]);
    let last_base: i64 = before
        .last()
        .and_then(|name| name.strip_suffix(".log"))
        .and_then(|base| base.parse().ok())
        .unwrap_or(0);
    if before.len() < 2 || last_base == 0 {
        cluster.fail(&format!("{TOPIC} did not roll: {before:?}"));
    }
    let target = last_base.to_string();
    let out = run_command(
        &mut python(&["delete-records", &cluster.bootstrap(), TOPIC, &target]),
        None,
        STEP_TIMEOUT,
    );
    assert_eq!(
        out.stdout.trim(),
        format!("LOW {target}"),
        "DeleteRecords before {target}:\n{out}"
    );
    let mut last = Vec::new();
    let same = wait_for(SETTLE_TIMEOUT, || {
        last = dirs.iter().map(|d| segment_names(d)).collect::<Vec<_>>();
        last[0].len() < before.len() && last.iter().all(|names| *names == last[0])
    });
    if !same {
        cluster.fail(&format!(
            "after DeleteRecords before {target} the replicas hold different segments \
             (first {} segments before): {last:?}",
            before.len()
        ));
    }
}
