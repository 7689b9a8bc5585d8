//! The soak: an end-to-end produce and consume run (`run::e2e`) with two
//! kinds of trouble around it for the whole run, to shake out races in the
//! broker's runtime:
//!
//! - **Group churn.** `--members` threads each act as a classic-protocol
//!   group member of one group: FindCoordinator, JoinGroup (with KIP-394's
//!   member-id round trip), SyncGroup (the leader hands out the topic's
//!   partitions), heartbeats and offset commits for a random while, then
//!   either a LeaveGroup or a silent disconnect (a killed client, which the
//!   coordinator must expire by session timeout), and join again.
//! - **Clients killed mid-request.** A thread opens connections and, at
//!   random, sends a long-polling Fetch of every partition (the request
//!   fans out to every shard), a Produce, a JoinGroup, or half a frame, and
//!   closes the socket without waiting for the answer.
//!
//! The soak fails if the e2e run fails, if a member gets an error code that
//! a healthy coordinator never answers with, if the broker stops accepting
//! connections, or if it does not answer ApiVersions at the end.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use pinlog::protocol::api::ApiKey;
use pinlog::protocol::error_code;
use pinlog::protocol::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
use pinlog::protocol::messages::find_coordinator::{
    FindCoordinatorRequest, FindCoordinatorResponse,
};
use pinlog::protocol::messages::heartbeat::{HeartbeatRequest, HeartbeatResponse};
use pinlog::protocol::messages::join_group::{
    JoinGroupRequest, JoinGroupRequestProtocol, JoinGroupResponse,
};
use pinlog::protocol::messages::leave_group::{
    LeaveGroupRequest, LeaveGroupResponse, MemberIdentity,
};
use pinlog::protocol::messages::offset_commit::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    OffsetCommitResponse,
};
use pinlog::protocol::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use pinlog::protocol::messages::sync_group::{
    SyncGroupRequest, SyncGroupRequestAssignment, SyncGroupResponse,
};

use crate::batch::BatchBuilder;
use crate::client::Conn;
use crate::clock::Rng;
use crate::cluster::{self, IfMissing, Topic};
use crate::error::{Error, Result};
use crate::report::Report;
use crate::{run, Common, ConsumeArgs, ProduceArgs, SoakArgs};

/// A member's session timeout: Kafka's `group.min.session.timeout.ms`
/// default, so a silently dropped member is expired as fast as a broker
/// with default settings allows.
const MEMBER_SESSION_TIMEOUT_MS: i32 = 6_000;
/// A member's rebalance timeout: how long a JoinGroup may wait for the rest.
const MEMBER_REBALANCE_TIMEOUT_MS: i32 = 5_000;
/// Pause between a member's heartbeats (and commits).
const MEMBER_HEARTBEAT_INTERVAL: Duration = Duration::from_millis(300);
/// A member lives for 1 to this many heartbeats before it leaves or dies.
const MEMBER_HEARTBEATS_MAX: u64 = 8;
/// Pause before a member retries after a retriable error.
const RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// How long a killed request's connection lives at most before the close.
const KILL_DELAY_MAX_MS: u64 = 20;

/// Error codes a member may get from a healthy coordinator during churn;
/// anything else fails the soak.
const EXPECTED_MEMBER_ERRORS: [i16; 8] = [
    error_code::COORDINATOR_LOAD_IN_PROGRESS,
    error_code::COORDINATOR_NOT_AVAILABLE,
    error_code::NOT_COORDINATOR,
    error_code::ILLEGAL_GENERATION,
    error_code::UNKNOWN_MEMBER_ID,
    error_code::REBALANCE_IN_PROGRESS,
    error_code::MEMBER_ID_REQUIRED,
    error_code::NONE,
];

/// What the trouble threads did, and what went wrong.
#[derive(Default)]
struct Trouble {
    joins: AtomicU64,
    generations_synced: AtomicU64,
    heartbeats: AtomicU64,
    commits: AtomicU64,
    leaves: AtomicU64,
    member_kills: AtomicU64,
    requests_killed: AtomicU64,
    error_codes: Mutex<BTreeMap<i16, u64>>,
    failures: Mutex<Vec<String>>,
}

impl Trouble {
    fn code(&self, code: i16) {
        *self.error_codes.lock().unwrap().entry(code).or_default() += 1;
    }

    fn fail(&self, what: String) {
        let mut f = self.failures.lock().unwrap();
        if f.len() < 20 {
            f.push(what);
        }
    }
}

/// Runs the soak; returns the e2e report with the trouble's summary printed
/// to stderr, or the first failure.
pub fn soak(
    common: &Common,
    produce: &ProduceArgs,
    consume: &ConsumeArgs,
    args: &SoakArgs,
) -> Result<(Report, hdrhistogram::Histogram<u64>)> {
    let timeout = Duration::from_millis(common.request_timeout_ms);
    let topic = cluster::prepare_topic(
        &common.bootstrap,
        &common.topic,
        IfMissing::Create(common.partitions),
        timeout,
    )?;
    // Killed produce requests go to a topic of their own, so the e2e run
    // sees only its own records; killed fetches long-poll a topic nobody
    // writes to, so each one waits on every shard until its connection is
    // long gone. Both have the e2e topic's partition count, so the killed
    // requests fan out to every shard just the same.
    let side_topic = |suffix: &str| {
        cluster::prepare_topic(
            &common.bootstrap,
            &format!("{}-soak-{suffix}", common.topic),
            IfMissing::Create(Some(topic.partitions.len() as i32)),
            timeout,
        )
    };
    let victim = side_topic("victim")?;
    let idle = side_topic("idle")?;
    let stop = Arc::new(AtomicBool::new(false));
    let trouble = Arc::new(Trouble::default());
    let group = format!("{}-soak", common.topic);
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    for m in 0..args.members {
        let (stop, trouble, topic) = (stop.clone(), trouble.clone(), topic.clone());
        let (bootstrap, group) = (common.bootstrap.clone(), group.clone());
        let seed = args.seed.wrapping_add(m as u64);
        threads.push(std::thread::spawn(move || {
            member_loop(&bootstrap, &group, &topic, seed, &stop, &trouble)
        }));
    }
    for k in 0..args.killers {
        let (stop, trouble) = (stop.clone(), trouble.clone());
        let (victim, idle) = (victim.clone(), idle.clone());
        let bootstrap = common.bootstrap.clone();
        let seed = args.seed.wrapping_add(1_000 + k as u64);
        let group = format!("{group}-victim");
        threads.push(std::thread::spawn(move || {
            killer_loop(&bootstrap, &victim, &idle, &group, seed, &stop, &trouble)
        }));
    }
    let started = Instant::now();
    let outcome = run::e2e(common, produce, consume);
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        let _ = t.join();
    }
    // The broker must still be there.
    let alive = Conn::open(&common.bootstrap, timeout).map(|_| ());
    eprintln!("{}", summary(&trouble, started.elapsed()));
    let failures = trouble.failures.lock().unwrap().clone();
    if let Err(e) = alive {
        return Err(Error::Other(format!(
            "the broker does not answer after the soak: {e}"
        )));
    }
    if !failures.is_empty() {
        return Err(Error::Other(format!(
            "the soak saw {} problem(s): {}",
            failures.len(),
            failures.join("; ")
        )));
    }
    let (report, hist) = outcome?;
    if report.errors > 0 {
        return Err(Error::Other(format!(
            "the e2e run under churn had {} errors (failed requests or acknowledged records \
             never consumed)",
            report.errors
        )));
    }
    if trouble.generations_synced.load(Ordering::SeqCst) == 0 {
        return Err(Error::Other(
            "no group generation completed: the churn tested nothing".into(),
        ));
    }
    Ok((report, hist))
}

fn summary(t: &Trouble, elapsed: Duration) -> String {
    let codes: Vec<String> = t
        .error_codes
        .lock()
        .unwrap()
        .iter()
        .map(|(c, n)| format!("{c}x{n}"))
        .collect();
    format!(
        "soak: {:.0} s; group churn: {} joins, {} generations synced, {} heartbeats, {} commits, \
         {} leaves, {} members dropped silently; {} requests killed mid-flight; member error codes \
         (code x count): {}",
        elapsed.as_secs_f64(),
        t.joins.load(Ordering::SeqCst),
        t.generations_synced.load(Ordering::SeqCst),
        t.heartbeats.load(Ordering::SeqCst),
        t.commits.load(Ordering::SeqCst),
        t.leaves.load(Ordering::SeqCst),
        t.member_kills.load(Ordering::SeqCst),
        t.requests_killed.load(Ordering::SeqCst),
        if codes.is_empty() {
            "none".into()
        } else {
            codes.join(" ")
        }
    )
}

/// One member, joining, living and leaving or dying, until `stop`.
fn member_loop(
    bootstrap: &str,
    group: &str,
    topic: &Topic,
    seed: u64,
    stop: &AtomicBool,
    trouble: &Trouble,
) {
    let mut rng = Rng::new(seed);
    // JoinGroup waits for the rest of the group: allow for the rebalance.
    let timeout = Duration::from_millis((MEMBER_REBALANCE_TIMEOUT_MS + 5_000) as u64);
    while !stop.load(Ordering::SeqCst) {
        let mut conn = match Conn::open(bootstrap, timeout) {
            Ok(c) => c,
            Err(e) => {
                trouble.fail(format!("member cannot connect: {e}"));
                return;
            }
        };
        match member_life(&mut conn, group, topic, &mut rng, stop, trouble) {
            Ok(()) => {}
            Err(e) if stop.load(Ordering::SeqCst) => drop(e),
            Err(e) => {
                trouble.fail(format!("member: {e}"));
                return;
            }
        }
    }
}

/// The outcome of one group call: go on, or start over with a new join.
enum Step {
    Go,
    Rejoin,
}

fn check(code: i16, what: &str, trouble: &Trouble) -> Result<Step> {
    trouble.code(code);
    if code == error_code::NONE {
        return Ok(Step::Go);
    }
    if EXPECTED_MEMBER_ERRORS.contains(&code) {
        std::thread::sleep(RETRY_BACKOFF);
        return Ok(Step::Rejoin);
    }
    Err(Error::Other(format!("{what} answered error {code}")))
}

/// Joins (and rejoins while the group rebalances), lives a while, then
/// leaves or drops the connection. `Ok` means: connect again.
fn member_life(
    conn: &mut Conn,
    group: &str,
    topic: &Topic,
    rng: &mut Rng,
    stop: &AtomicBool,
    trouble: &Trouble,
) -> Result<()> {
    let v = conn.versions;
    let fc = v.require(ApiKey::FindCoordinator, conn.addr())?;
    let found = conn.call(
        ApiKey::FindCoordinator,
        fc,
        |w| {
            FindCoordinatorRequest {
                key: group.to_string(),
                key_type: 0,
                coordinator_keys: vec![group.to_string()],
            }
            .encode(w, fc)
        },
        |r| FindCoordinatorResponse::decode(r, fc),
    )?;
    let code = found
        .coordinators
        .first()
        .map_or(found.error_code, |c| c.error_code);
    if let Step::Rejoin = check(code, "FindCoordinator", trouble)? {
        return Ok(());
    }
    let mut member_id = String::new();
    let lifetime = 1 + rng.next_u64() % MEMBER_HEARTBEATS_MAX;
    let mut beats = 0u64;
    'join: while !stop.load(Ordering::SeqCst) {
        let jv = v.require(ApiKey::JoinGroup, conn.addr())?;
        trouble.joins.fetch_add(1, Ordering::SeqCst);
        let joined = conn.call(
            ApiKey::JoinGroup,
            jv,
            |w| {
                JoinGroupRequest {
                    group_id: group.to_string(),
                    session_timeout_ms: MEMBER_SESSION_TIMEOUT_MS,
                    rebalance_timeout_ms: MEMBER_REBALANCE_TIMEOUT_MS,
                    member_id: member_id.clone(),
                    group_instance_id: None,
                    protocol_type: "consumer".into(),
                    protocols: vec![JoinGroupRequestProtocol {
                        name: "range".into(),
                        metadata: Bytes::from_static(b"soak"),
                    }],
                    reason: None,
                }
                .encode(w, jv)
            },
            |r| JoinGroupResponse::decode(r, jv),
        )?;
        if !joined.member_id.is_empty() {
            member_id = joined.member_id.clone();
        }
        if joined.error_code == error_code::UNKNOWN_MEMBER_ID {
            member_id.clear();
        }
        if let Step::Rejoin = check(joined.error_code, "JoinGroup", trouble)? {
            continue 'join;
        }
        let generation = joined.generation_id;
        // The leader assigns the partitions round-robin; the bytes are
        // opaque to the coordinator.
        let assignments = if joined.leader == member_id {
            let n = joined.members.len().max(1);
            joined
                .members
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let mut a = BytesMut::new();
                    for (j, (p, _)) in topic.partitions.iter().enumerate() {
                        if j % n == i {
                            a.put_i32(*p);
                        }
                    }
                    SyncGroupRequestAssignment {
                        member_id: m.member_id.clone(),
                        assignment: a.freeze(),
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let sv = v.require(ApiKey::SyncGroup, conn.addr())?;
        let synced = conn.call(
            ApiKey::SyncGroup,
            sv,
            |w| {
                SyncGroupRequest {
                    group_id: group.to_string(),
                    generation_id: generation,
                    member_id: member_id.clone(),
                    group_instance_id: None,
                    protocol_type: Some("consumer".into()),
                    protocol_name: joined.protocol_name.clone(),
                    assignments,
                }
                .encode(w, sv)
            },
            |r| SyncGroupResponse::decode(r, sv),
        )?;
        if let Step::Rejoin = check(synced.error_code, "SyncGroup", trouble)? {
            continue 'join;
        }
        trouble.generations_synced.fetch_add(1, Ordering::SeqCst);
        let mine: Vec<i32> = synced
            .assignment
            .chunks_exact(4)
            .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        while !stop.load(Ordering::SeqCst) {
            if beats >= lifetime {
                break 'join;
            }
            std::thread::sleep(MEMBER_HEARTBEAT_INTERVAL);
            beats += 1;
            let hv = v.require(ApiKey::Heartbeat, conn.addr())?;
            let hb = conn.call(
                ApiKey::Heartbeat,
                hv,
                |w| {
                    HeartbeatRequest {
                        group_id: group.to_string(),
                        generation_id: generation,
                        member_id: member_id.clone(),
                        group_instance_id: None,
                    }
                    .encode(w, hv)
                },
                |r| HeartbeatResponse::decode(r, hv),
            )?;
            trouble.heartbeats.fetch_add(1, Ordering::SeqCst);
            if let Step::Rejoin = check(hb.error_code, "Heartbeat", trouble)? {
                continue 'join;
            }
            if mine.is_empty() {
                continue;
            }
            let cv = v.require(ApiKey::OffsetCommit, conn.addr())?;
            let committed = conn.call(
                ApiKey::OffsetCommit,
                cv,
                |w| {
                    OffsetCommitRequest {
                        group_id: group.to_string(),
                        generation_id_or_member_epoch: generation,
                        member_id: member_id.clone(),
                        group_instance_id: None,
                        retention_time_ms: -1,
                        topics: vec![OffsetCommitRequestTopic {
                            name: topic.name.clone(),
                            topic_id: [0; 16],
                            partitions: mine
                                .iter()
                                .map(|&p| OffsetCommitRequestPartition {
                                    partition_index: p,
                                    committed_offset: beats as i64,
                                    committed_leader_epoch: -1,
                                    committed_metadata: None,
                                })
                                .collect(),
                        }],
                    }
                    .encode(w, cv)
                },
                |r| OffsetCommitResponse::decode(r, cv),
            )?;
            trouble.commits.fetch_add(1, Ordering::SeqCst);
            for p in committed.topics.iter().flat_map(|t| &t.partitions) {
                if let Step::Rejoin = check(p.error_code, "OffsetCommit", trouble)? {
                    continue 'join;
                }
            }
        }
    }
    if member_id.is_empty() || rng.next_u64() % 2 == 0 {
        // A killed client: the connection just goes; the coordinator expires
        // the member after its session timeout.
        trouble.member_kills.fetch_add(1, Ordering::SeqCst);
        return Ok(());
    }
    let lv = v.require(ApiKey::LeaveGroup, conn.addr())?;
    let left = conn.call(
        ApiKey::LeaveGroup,
        lv,
        |w| {
            LeaveGroupRequest {
                group_id: group.to_string(),
                member_id: member_id.clone(),
                members: vec![MemberIdentity {
                    member_id: member_id.clone(),
                    group_instance_id: None,
                    reason: None,
                }],
            }
            .encode(w, lv)
        },
        |r| LeaveGroupResponse::decode(r, lv),
    )?;
    trouble.leaves.fetch_add(1, Ordering::SeqCst);
    let code = if left.error_code != error_code::NONE {
        left.error_code
    } else {
        left.members
            .first()
            .map_or(error_code::NONE, |m| m.error_code)
    };
    check(code, "LeaveGroup", trouble).map(|_| ())
}

/// Sends requests and closes their connections before the answers come.
fn killer_loop(
    bootstrap: &str,
    produce_to: &Topic,
    fetch_from: &Topic,
    victim_group: &str,
    seed: u64,
    stop: &AtomicBool,
    trouble: &Trouble,
) {
    let mut rng = Rng::new(seed);
    let timeout = Duration::from_secs(10);
    let mut batch = BatchBuilder::new(4096);
    while !stop.load(Ordering::SeqCst) {
        let kind = rng.next_u64() % 4;
        if kind == 3 {
            // Half a frame: a size prefix promising more than follows.
            match TcpStream::connect(bootstrap) {
                Ok(mut s) => {
                    let _ = s.write_all(&[0, 0, 0, 100, 0, 1, 0]);
                }
                Err(e) => {
                    trouble.fail(format!("killer cannot connect: {e}"));
                    return;
                }
            }
            trouble.requests_killed.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        let mut conn = match Conn::open(bootstrap, timeout) {
            Ok(c) => c,
            Err(e) => {
                trouble.fail(format!("killer cannot connect: {e}"));
                return;
            }
        };
        let v = conn.versions;
        let sent = match kind {
            0 => v.require(ApiKey::Fetch, conn.addr()).and_then(|fv| {
                conn.writer.send(ApiKey::Fetch, fv, |w| {
                    FetchRequest {
                        max_wait_ms: 500,
                        min_bytes: 1,
                        topics: vec![FetchTopic {
                            topic: fetch_from.name.clone(),
                            partitions: fetch_from
                                .partitions
                                .iter()
                                .map(|(p, _)| FetchPartition {
                                    partition: *p,
                                    current_leader_epoch: -1,
                                    fetch_offset: 0,
                                    last_fetched_epoch: -1,
                                    log_start_offset: -1,
                                    partition_max_bytes: 1 << 20,
                                })
                                .collect(),
                        }],
                        ..Default::default()
                    }
                    .encode(w, fv)
                })
            }),
            1 => v.require(ApiKey::Produce, conn.addr()).and_then(|pv| {
                let partitions: Vec<PartitionProduceData> = produce_to
                    .partitions
                    .iter()
                    .map(|(p, _)| {
                        batch.append(0, Some(b"killed"), b"killed mid-request", b"");
                        PartitionProduceData {
                            index: *p,
                            records: batch.finish(None).ok(),
                        }
                    })
                    .collect();
                conn.writer.send(ApiKey::Produce, pv, |w| {
                    ProduceRequest {
                        transactional_id: None,
                        acks: 1,
                        timeout_ms: 5_000,
                        topics: vec![TopicProduceData {
                            name: produce_to.name.clone(),
                            partitions,
                        }],
                    }
                    .encode(w, pv)
                })
            }),
            _ => v.require(ApiKey::JoinGroup, conn.addr()).and_then(|jv| {
                conn.writer.send(ApiKey::JoinGroup, jv, |w| {
                    JoinGroupRequest {
                        group_id: victim_group.to_string(),
                        session_timeout_ms: MEMBER_SESSION_TIMEOUT_MS,
                        rebalance_timeout_ms: MEMBER_REBALANCE_TIMEOUT_MS,
                        member_id: String::new(),
                        group_instance_id: None,
                        protocol_type: "consumer".into(),
                        protocols: vec![JoinGroupRequestProtocol {
                            name: "range".into(),
                            metadata: Bytes::from_static(b"killed"),
                        }],
                        reason: None,
                    }
                    .encode(w, jv)
                })
            }),
        };
        if let Err(e) = sent {
            trouble.fail(format!("killer: {e}"));
            return;
        }
        std::thread::sleep(Duration::from_millis(rng.next_u64() % KILL_DELAY_MAX_MS));
        drop(conn);
        trouble.requests_killed.fetch_add(1, Ordering::SeqCst);
    }
}
