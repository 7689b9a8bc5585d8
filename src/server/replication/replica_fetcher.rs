//! Replica fetchers: each shard runs one fetcher per leader broker, carrying
//! every partition the shard follows from that leader (Kafka's
//! `ReplicaFetcherThread`, one per core instead of `num.replica.fetchers`).
//!
//! A fetcher loops: partitions that just became followers (a new leader
//! epoch) or whose fetch offset the leader refused first find where their
//! log diverges from the leader's with OffsetsForLeaderEpoch and truncate
//! there (KIP-101/279; never to their own HW); then one Fetch with this
//! broker's replica id asks for everything past each follower's LEO, in an
//! incremental fetch session (KIP-227) that names only the partitions whose
//! fetch parameters changed. The batches are appended unchanged
//! (`append_as_follower`), so follower segments are byte-identical to the
//! leader's; the response's HW moves the follower's HW, and its log start
//! offset the follower's log start. The loop ends when the shard follows
//! nothing from that leader or the broker stops.
//!
//! Every response is checked against the replica state before it touches a
//! log: if the partition changed leader or epoch while the request was in
//! flight, its part of the answer is dropped.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::broker_config::ReplicationConfig;
use crate::log::batch_cache::Backing;
use crate::log::epoch_cache::UNDEFINED_EPOCH;
use crate::node::append_waiters::AppendWaiters;
use crate::node::partition_load::PartitionLoad;
use crate::node::replicas::{self, Replicas};
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::protocol::api::ApiKey;
use crate::protocol::chunks::RecordData;
use crate::protocol::error_code;
use crate::protocol::messages::fetch::{
    FetchPartition, FetchRequest, FetchResponse, FetchTopic, ForgottenTopic,
};
use crate::protocol::messages::offset_for_leader_epoch::{
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, OffsetForLeaderPartition,
    OffsetForLeaderTopic,
};
use crate::replica::{
    truncation_offset, FetchedAnswer, FollowerFetchSession, LocalLog, PartitionFetch, ReplicaState,
    Role, Truncation,
};
use crate::server::replication::fetcher_test_hooks::FetcherTestHooks;
use crate::server::replication::joining_followers::JoiningFollowers;
use crate::server::replication::kafka_peer::{KafkaPeer, ResponseMemory};
use crate::server::replication::quotas::{ReplicationQuotas, Side};
use crate::shard::checkpoints;
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;

/// The Fetch version followers send (the highest pinlog serves).
const FETCH_VERSION: i16 = 12;
/// The OffsetsForLeaderEpoch version followers send (v3+ carries the
/// replica id).
const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 4;
/// Slack over `replica.fetch.response.max.bytes` for a response's own
/// fields and the one batch a leader may send past the limit.
const RESPONSE_SLACK_BYTES: usize = 2 * 1024 * 1024;
/// How often a fetcher with nothing ready (all partitions waiting for a
/// new image) looks again.
const IDLE_POLL: Duration = Duration::from_millis(50);
/// At most one warning per leader in this period.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// The fetchers of one shard.
#[derive(Default)]
pub struct ReplicaFetchers {
    /// Leaders this shard runs a fetcher for.
    running: RefCell<HashSet<i32>>,
    /// Partitions that must find their divergence point before fetching.
    truncate_first: RefCell<HashSet<TopicPartition>>,
    /// Followers that wait for the image being applied, to join their
    /// fetchers together.
    joining: RefCell<JoiningFollowers>,
}

/// Holds new followers back from their fetchers until it is dropped: the
/// image applier takes it for one image's transitions.
pub struct JoinHold {
    shard: Rc<Shard>,
}

impl Drop for JoinHold {
    fn drop(&mut self) {
        let fetchers = ReplicaFetchers::of(&self.shard);
        let leaders = fetchers.joining.borrow_mut().release();
        for leader in leaders {
            fetchers.start(&self.shard, leader);
        }
    }
}

impl ReplicaFetchers {
    pub fn of(shard: &Shard) -> Rc<ReplicaFetchers> {
        if let Some(f) = shard.extension::<ReplicaFetchers>() {
            return f;
        }
        let f = Rc::new(ReplicaFetchers::default());
        shard.set_extension(f.clone());
        f
    }

    /// `tp` now follows `leader` in a new epoch: it truncates to the
    /// divergence point, then fetches, on the fetcher for `leader`.
    /// Under a [`JoinHold`], the fetcher takes it up when the hold ends.
    pub fn follow(&self, shard: &Rc<Shard>, tp: TopicPartition, leader: i32) {
        self.truncate_first.borrow_mut().insert(tp.clone());
        if self.joining.borrow_mut().join(tp, leader) {
            self.start(shard, leader);
        }
    }

    /// Holds the followers that `follow` adds from now on until the hold
    /// is dropped, then hands them to their fetchers together.
    pub fn hold_joins(shard: &Rc<Shard>) -> JoinHold {
        ReplicaFetchers::of(shard).joining.borrow_mut().hold();
        JoinHold {
            shard: shard.clone(),
        }
    }

    /// Runs the fetcher for `leader` unless it runs already: it then takes
    /// the new followers up in its next round, after the Fetch it has in
    /// flight, which the leader answers early for them
    /// (`node::follower_gains`).
    fn start(&self, shard: &Rc<Shard>, leader: i32) {
        if self.running.borrow_mut().insert(leader) {
            glommio::spawn_local(run(shard.clone(), leader)).detach();
        }
    }
}

/// A follower partition as one round of the loop sees it.
struct Followed {
    tp: TopicPartition,
    state: Rc<RefCell<ReplicaState>>,
    leader_epoch: i32,
}

fn stopped(shard: &Shard) -> bool {
    shard
        .extension::<StopHandle>()
        .is_some_and(|s| s.is_requested())
}

/// The partitions this shard follows from `leader`, but for those that
/// wait for the image being applied.
fn followed(shard: &Shard, leader: i32) -> Vec<Followed> {
    let fetchers = ReplicaFetchers::of(shard);
    let joining = fetchers.joining.borrow();
    Replicas::of(shard)
        .all()
        .into_iter()
        .filter(|(tp, _)| !joining.waits(tp))
        .filter_map(|(tp, state)| {
            let s = state.borrow();
            let epoch = s.leader_epoch();
            (s.role()
                == Role::Follower {
                    leader: Some(leader),
                })
            .then(|| Followed {
                tp: tp.clone(),
                state: state.clone(),
                leader_epoch: epoch,
            })
        })
        .collect()
}

/// Still following `leader` in `epoch`: the answer applies.
fn still_following(state: &RefCell<ReplicaState>, leader: i32, epoch: i32) -> bool {
    let s = state.borrow();
    s.role()
        == Role::Follower {
            leader: Some(leader),
        }
        && s.leader_epoch() == epoch
}

async fn run(shard: Rc<Shard>, leader: i32) {
    let fetchers = ReplicaFetchers::of(&shard);
    let broker = BrokerState::of(&shard);
    let config = broker.config.replication.clone();
    let local_id = broker.node_id();
    let mut peer: Option<KafkaPeer> = None;
    let mut session = FollowerFetchSession::new();
    let mut last_warning: Option<Instant> = None;
    let backoff = Duration::from_millis(config.fetch_backoff_ms);
    let hooks = FetcherTestHooks::from_env(local_id);
    tracing::debug!(shard = shard.id(), leader, "replica fetcher started");
    loop {
        if stopped(&shard) {
            break;
        }
        // A round whose every await is ready at once (nothing to ask, a
        // log lock free) must still let the shard's other tasks run.
        glommio::yield_if_needed().await;
        let mut parts = followed(&shard, leader);
        if parts.is_empty() {
            break;
        }
        if let Some(hooks) = &hooks {
            parts.retain(|p| !hooks.held(&p.tp));
            if parts.is_empty() {
                // Held by a test, but still followed: keep the loop alive.
                glommio::timer::sleep(IDLE_POLL).await;
                continue;
            }
        }
        let image = broker.image();
        let addr = image
            .brokers
            .get(&leader)
            .filter(|b| !b.fenced)
            .map(|b| format!("{}:{}", b.host, b.port));
        let Some(addr) = addr else {
            // The leader is not registered or fenced: the controller will
            // move leadership; wait for the image.
            glommio::timer::sleep(backoff.max(IDLE_POLL)).await;
            continue;
        };
        if peer.as_ref().is_none_or(|p| p.addr() != addr) {
            session.clear();
            peer = Some(KafkaPeer::new(
                addr,
                format!("pinlog-replica-fetcher-{local_id}-shard-{}", shard.id()),
                crate::server::replication::kafka_peer::inter_broker_security(&shard),
            ));
        }
        let peer = peer.as_mut().expect("set above");
        let (to_truncate, mut ready): (Vec<Followed>, Vec<Followed>) = parts
            .into_iter()
            .partition(|p| fetchers.truncate_first.borrow().contains(&p.tp));
        // As Kafka's fetcher thread: the partitions that must truncate first
        // do, and the others fetch in the same round, so that one partition
        // the leader cannot answer OffsetsForLeaderEpoch for yet (its image
        // is behind, the partition is still opening) does not stop the
        // replication of every other partition from this leader. Those
        // that truncated fetch in this round too: left for the next, they
        // waited for this round's fetch, which the leader parks for up to
        // `replica.fetch.wait.max.ms` when the others have nothing new.
        let mut result = Ok(false);
        if !to_truncate.is_empty() {
            let hooks = hooks.as_ref();
            result = truncate(&shard, peer, leader, local_id, &to_truncate, &config, hooks).await;
            ready.extend(to_truncate.into_iter().filter(|p| {
                !fetchers.truncate_first.borrow().contains(&p.tp)
                    && still_following(&p.state, leader, p.leader_epoch)
            }));
        }
        if !ready.is_empty() {
            if let Ok(truncated) = result {
                let hooks = hooks.as_ref();
                result = fetch(
                    &shard,
                    peer,
                    &mut session,
                    leader,
                    local_id,
                    &ready,
                    &config,
                    hooks,
                )
                .await
                .map(|fetched| fetched || truncated);
            }
        }
        match result {
            Ok(true) => {}
            Ok(false) => glommio::timer::sleep(IDLE_POLL).await,
            Err(e) => {
                peer.disconnect();
                if last_warning.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
                    last_warning = Some(Instant::now());
                    tracing::warn!(
                        leader,
                        shard = shard.id(),
                        "replica fetch from broker {leader} failed: {e}; retrying every \
                         replica.fetch.backoff.ms ({} ms)",
                        config.fetch_backoff_ms
                    );
                }
                glommio::timer::sleep(backoff).await;
            }
        }
    }
    fetchers.running.borrow_mut().remove(&leader);
    tracing::debug!(shard = shard.id(), leader, "replica fetcher stopped");
}

/// One round of OffsetsForLeaderEpoch for `parts`, and the truncations it
/// decides. Returns whether any partition made progress.
async fn truncate(
    shard: &Rc<Shard>,
    peer: &mut KafkaPeer,
    leader: i32,
    local_id: i32,
    parts: &[Followed],
    config: &ReplicationConfig,
    hooks: Option<&FetcherTestHooks>,
) -> std::io::Result<bool> {
    let fetchers = ReplicaFetchers::of(shard);
    let mut asked: BTreeMap<TopicPartition, i32> = BTreeMap::new();
    let mut settled_without_asking = false;
    for p in parts {
        if hooks.is_some_and(|h| h.epoch_refused(&p.tp)) {
            // As a refused answer below: left waiting to truncate.
            continue;
        }
        let Some(log) = shard.local_log(&p.tp) else {
            continue;
        };
        let Ok(log) = log.read().await else { continue };
        match log.epoch_cache().latest_epoch() {
            Some(epoch) => {
                asked.insert(p.tp.clone(), epoch);
            }
            None if log.log_end_offset() == log.log_start_offset() => {
                // An empty log has nothing to diverge.
                fetchers.truncate_first.borrow_mut().remove(&p.tp);
                settled_without_asking = true;
            }
            None => {
                asked.insert(p.tp.clone(), UNDEFINED_EPOCH);
            }
        }
    }
    if asked.is_empty() {
        return Ok(settled_without_asking);
    }
    let mut topics: Vec<OffsetForLeaderTopic> = Vec::new();
    for (tp, epoch) in &asked {
        let current = parts
            .iter()
            .find(|p| &p.tp == tp)
            .map_or(-1, |p| p.leader_epoch);
        let partition = OffsetForLeaderPartition {
            partition: tp.partition,
            current_leader_epoch: current,
            leader_epoch: *epoch,
        };
        match topics.last_mut() {
            Some(t) if t.topic == tp.topic => t.partitions.push(partition),
            _ => topics.push(OffsetForLeaderTopic {
                topic: tp.topic.clone(),
                partitions: vec![partition],
            }),
        }
    }
    let request = OffsetForLeaderEpochRequest {
        replica_id: local_id,
        topics,
    };
    let response: OffsetForLeaderEpochResponse = peer
        .call(
            ApiKey::OffsetForLeaderEpoch,
            OFFSET_FOR_LEADER_EPOCH_VERSION,
            |w| request.encode(w, OFFSET_FOR_LEADER_EPOCH_VERSION),
            |r| OffsetForLeaderEpochResponse::decode(r, OFFSET_FOR_LEADER_EPOCH_VERSION),
            Duration::from_millis(config.socket_timeout_ms),
            RESPONSE_SLACK_BYTES,
        )
        .await?;
    let mut progressed = false;
    let mut truncated = false;
    for t in response.topics {
        for a in t.partitions {
            let tp = TopicPartition::new(t.topic.clone(), a.partition);
            let (Some(asked_epoch), Some(part)) =
                (asked.get(&tp), parts.iter().find(|p| p.tp == tp))
            else {
                continue;
            };
            if a.error_code != error_code::NONE {
                // A stale or newer epoch on either side: the next image
                // settles it.
                tracing::debug!(partition = %tp, leader, error = a.error_code, "OffsetsForLeaderEpoch refused");
                continue;
            }
            let Some(log) = shard.local_log(&tp) else {
                continue;
            };
            let Ok(mut log) = log.write().await else {
                continue;
            };
            if !still_following(&part.state, leader, part.leader_epoch) {
                continue;
            }
            let local = LocalLog {
                log_start_offset: log.log_start_offset(),
                log_end_offset: log.log_end_offset(),
                end_offset_for: |e: i32| log.end_offset_for_epoch(e),
            };
            let step = truncation_offset(a.leader_epoch, a.end_offset, *asked_epoch, &local);
            let (offset, done) = match step {
                Truncation::To(o) => (o, true),
                Truncation::ThenAskAgain(o) => (o, false),
            };
            // Explained by an unclean election started after every epoch
            // this log had: the one it served its HW in is among them. The
            // image keeps that election's epoch through clean elections
            // after it, so a former leader that returns after both is
            // told exactly.
            let unclean = crate::metadata::image::unclean_election_explains(
                BrokerState::of(shard)
                    .image()
                    .last_unclean_election_epoch(&tp.topic, tp.partition),
                log.epoch_cache().latest_epoch(),
            );
            let before = log.log_end_offset();
            if offset >= before {
                // Nothing to remove but, possibly, an epoch-cache entry that
                // starts at the log end (see `PartitionLog::truncate_to`).
                if let Err(e) = log.truncate_to(before, now_ms()).await {
                    tracing::error!(partition = %tp, "truncation to {before} failed: {e}");
                    continue;
                }
            } else {
                let now = now_ms();
                let result = if offset < log.log_start_offset() {
                    log.truncate_fully_and_start_at(offset, now)
                        .await
                        .map(|_| true)
                } else {
                    log.truncate_to(offset, now).await
                };
                if let Err(e) = result {
                    tracing::error!(partition = %tp, "truncation to {offset} failed: {e}");
                    continue;
                }
                truncated = true;
                let lost_served = part
                    .state
                    .borrow_mut()
                    .on_truncated(log.log_end_offset(), unclean);
                if let Some(served_hw) = lost_served {
                    tracing::error!(
                        partition = %tp,
                        leader,
                        served_hw,
                        log_end_offset = log.log_end_offset(),
                        "truncation removed records below the high watermark this replica \
                         served as leader, and no unclean election explains it: consumers may \
                         have read records that are gone. Please report this with the logs of \
                         every replica of the partition"
                    );
                }
                replicas::sync_high_watermark(shard, &tp, &mut log);
                let lost = before - log.log_end_offset();
                if unclean {
                    tracing::warn!(
                        partition = %tp,
                        leader,
                        "truncated {lost} records from offset {offset} after an unclean \
                         election: records this replica held are lost"
                    );
                } else {
                    tracing::info!(
                        partition = %tp,
                        leader,
                        leader_epoch = part.leader_epoch,
                        "truncated to offset {offset} ({lost} records past the divergence point)"
                    );
                }
            }
            progressed = true;
            if done {
                fetchers.truncate_first.borrow_mut().remove(&tp);
            }
        }
    }
    if truncated {
        // As Kafka after a truncation: the lowered recovery points are
        // checkpointed before the first fetch appends past them. Otherwise
        // a power loss after those appends would leave a checkpoint above
        // the truncation, and recovery would trust the rewritten, unflushed
        // region below it without a scan. One write per truncation round,
        // which happens only when leadership changes.
        checkpoints::checkpoint_now(shard).await;
    }
    Ok(progressed)
}

/// One Fetch from the leader for the partitions in `parts`, in the
/// fetcher's incremental session, applied. Returns whether the leader
/// served any partition.
#[allow(clippy::too_many_arguments)]
async fn fetch(
    shard: &Rc<Shard>,
    peer: &mut KafkaPeer,
    session: &mut FollowerFetchSession,
    leader: i32,
    local_id: i32,
    parts: &[Followed],
    config: &ReplicationConfig,
    hooks: Option<&FetcherTestHooks>,
) -> std::io::Result<bool> {
    if parts.is_empty() {
        return Ok(false);
    }
    let mut wanted: BTreeMap<TopicPartition, PartitionFetch> = BTreeMap::new();
    let quotas = ReplicationQuotas::of(shard);
    let image = BrokerState::of(shard).image();
    let now = now_ms();
    for p in parts {
        let in_isr = p.state.borrow().isr().contains(&local_id);
        if quotas.must_wait(&image, Side::Follower, &p.tp, local_id, in_isr, now) {
            // Kafka's follower-side throttle: the partition sits out this
            // fetch (its session forgets it until it is asked again).
            continue;
        }
        let Some(log) = shard.local_log(&p.tp) else {
            continue;
        };
        let Ok(log) = log.read().await else { continue };
        wanted.insert(
            p.tp.clone(),
            PartitionFetch {
                fetch_offset: log.log_end_offset(),
                log_start_offset: log.log_start_offset(),
                partition_max_bytes: config.fetch_max_bytes.min(i32::MAX as u64) as i32,
                current_leader_epoch: p.leader_epoch,
                last_fetched_epoch: log.epoch_cache().latest_epoch().unwrap_or(UNDEFINED_EPOCH),
            },
        );
    }
    // The leader answers from its session with the offsets it holds, which
    // are these for every partition, named in the request or not.
    let sent: BTreeMap<TopicPartition, i64> = wanted
        .iter()
        .map(|(tp, f)| (tp.clone(), f.fetch_offset))
        .collect();
    let plan = session.plan(wanted);
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (tp, f) in &plan.send {
        let partition = FetchPartition {
            partition: tp.partition,
            current_leader_epoch: f.current_leader_epoch,
            fetch_offset: f.fetch_offset,
            last_fetched_epoch: f.last_fetched_epoch,
            log_start_offset: f.log_start_offset,
            partition_max_bytes: f.partition_max_bytes,
        };
        match topics.last_mut() {
            Some(t) if t.topic == tp.topic => t.partitions.push(partition),
            _ => topics.push(FetchTopic {
                topic: tp.topic.clone(),
                partitions: vec![partition],
            }),
        }
    }
    let mut forgotten: Vec<ForgottenTopic> = Vec::new();
    for tp in &plan.forget {
        match forgotten.last_mut() {
            Some(t) if t.topic == tp.topic => t.partitions.push(tp.partition),
            _ => forgotten.push(ForgottenTopic {
                topic: tp.topic.clone(),
                partitions: vec![tp.partition],
            }),
        }
    }
    let request = FetchRequest {
        replica_id: local_id,
        max_wait_ms: config.fetch_wait_max_ms.min(i32::MAX as u64) as i32,
        min_bytes: config.fetch_min_bytes.min(i32::MAX as u64) as i32,
        max_bytes: config.fetch_response_max_bytes.min(i32::MAX as u64) as i32,
        session_id: plan.session_id,
        session_epoch: plan.session_epoch,
        topics,
        forgotten_topics_data: forgotten,
        ..Default::default()
    };
    let max_response = config.fetch_response_max_bytes as usize + RESPONSE_SLACK_BYTES;
    let answer = peer
        .call_into(
            // The records land in the read cache's blocks, where the
            // cache keeps them after the append.
            ResponseMemory::ReadCache(shard.cache()),
            ApiKey::Fetch,
            FETCH_VERSION,
            |w| request.encode(w, FETCH_VERSION),
            |r| FetchResponse::decode(r, FETCH_VERSION),
            Duration::from_millis(config.socket_timeout_ms + config.fetch_wait_max_ms),
            max_response,
        )
        .await;
    let (response, frame): (FetchResponse, Backing) = match answer {
        Ok(r) => r,
        Err(e) => {
            session.on_failure();
            return Err(e);
        }
    };
    session.on_response(response.error_code, response.session_id);
    match response.error_code {
        error_code::NONE => {}
        error_code::FETCH_SESSION_ID_NOT_FOUND | error_code::INVALID_FETCH_SESSION_EPOCH => {
            // The leader lost or moved the session (a reconnect may land on
            // another of its shards): the next request starts a new one.
            tracing::debug!(
                leader,
                error = response.error_code,
                session_id = plan.session_id,
                "the leader refused the fetch session; starting a new one"
            );
            return Ok(true);
        }
        code => {
            return Err(std::io::Error::other(format!(
                "the leader refused the fetch with error {code}"
            )));
        }
    }
    let fetchers = ReplicaFetchers::of(shard);
    // Whether the leader served any partition: if it refused all it
    // answered (it has not applied the image that made it leader yet, say),
    // the caller pauses before asking again. An incremental answer with
    // nothing in it came after the leader's wait, so it needs no pause.
    let mut answered = false;
    let mut refused = false;
    // A partition's answer dropped below (a new epoch while the request was
    // in flight, an append that failed): the leader's session believes the
    // HW it carried arrived, so the next request must be full.
    let mut dropped = false;
    let mut applies = Vec::new();
    // Every partition's records are a slice of the one response frame
    // (`frame`) they were decoded from, which the read cache counts whole
    // while it keeps any of them.
    for t in response.responses {
        for d in t.partitions {
            let tp = TopicPartition::new(t.topic.clone(), d.partition_index);
            let (Some(&fetch_offset), Some(part)) =
                (sent.get(&tp), parts.iter().find(|p| p.tp == tp))
            else {
                continue;
            };
            match d.error_code {
                error_code::NONE => answered = true,
                error_code::OFFSET_OUT_OF_RANGE => {
                    refused = true;
                    if fetch_offset < d.log_start_offset {
                        restart_at(shard, part, leader, d.log_start_offset).await;
                    } else {
                        // Past the leader's end: our log diverged.
                        fetchers.truncate_first.borrow_mut().insert(tp);
                    }
                    continue;
                }
                code => {
                    refused = true;
                    tracing::debug!(partition = %tp, leader, error = code, "replica fetch refused");
                    continue;
                }
            }
            let records = match d.records {
                Some(RecordData::Bytes(b)) => whole_batches(b),
                _ => Bytes::new(),
            };
            quotas.record(
                &image,
                Side::Follower,
                &tp,
                local_id,
                records.len() as u64,
                now_ms(),
            );
            let answer = FetchedPartition {
                tp,
                state: part.state.clone(),
                leader_epoch: part.leader_epoch,
                fetch_offset,
                backing: frame,
                records,
                high_watermark: d.high_watermark,
                log_start_offset: d.log_start_offset,
                high_watermark_frozen: hooks.is_some_and(|h| h.high_watermark_frozen(&part.tp)),
            };
            // Each partition's append is a disk write: the partitions of
            // one answer are written concurrently, so the next request,
            // which tells the leader our new LEO (and so moves its HW and
            // answers acks=all produces), waits for the slowest write, not
            // for their sum.
            let shard = shard.clone();
            applies.push(glommio::spawn_local(async move {
                apply_fetched(&shard, leader, answer).await
            }));
        }
    }
    for apply in applies {
        dropped |= !apply.await;
    }
    if dropped {
        session.resend_all();
    }
    Ok(answered || !refused)
}

/// One partition of a leader's fetch answer, to apply to the local log.
struct FetchedPartition {
    tp: TopicPartition,
    state: Rc<RefCell<ReplicaState>>,
    leader_epoch: i32,
    /// The offset the request asked from (our LEO then).
    fetch_offset: i64,
    /// Whole batches only.
    records: Bytes,
    /// The buffer `records` is a slice of: the response frame, or the read
    /// cache's block it was read into.
    backing: Backing,
    high_watermark: i64,
    log_start_offset: i64,
    /// A test hook keeps this replica's HW where it is.
    high_watermark_frozen: bool,
}

/// Appends a partition's fetched batches unchanged and takes the leader's
/// HW and log start. Returns false when it dropped the answer (a new epoch
/// while the request was in flight, a log that moved, a failed append):
/// the leader's session then believes a HW arrived that did not.
async fn apply_fetched(shard: &Rc<Shard>, leader: i32, answer: FetchedPartition) -> bool {
    let tp = &answer.tp;
    let Some(log) = shard.local_log(tp) else {
        return true;
    };
    let Ok(mut log) = log.write().await else {
        return true;
    };
    if !still_following(&answer.state, leader, answer.leader_epoch)
        || log.log_end_offset() != answer.fetch_offset
    {
        return false;
    }
    let appended = !answer.records.is_empty();
    if appended {
        PartitionLoad::of(shard).record_in(tp, answer.records.len() as u64);
        if let Err(e) = log
            .append_fetched(answer.records, answer.backing, now_ms())
            .await
        {
            tracing::error!(
                partition = %tp,
                leader,
                "appending fetched batches failed: {e}; finding the divergence point again"
            );
            ReplicaFetchers::of(shard)
                .truncate_first
                .borrow_mut()
                .insert(tp.clone());
            return false;
        }
    }
    // One core call decides what the answer changes: the LEO, the HW, the
    // log start.
    let actions = answer.state.borrow_mut().on_fetched(&FetchedAnswer {
        log_end_offset: log.log_end_offset(),
        leader_high_watermark: (!answer.high_watermark_frozen).then_some(answer.high_watermark),
        leader_log_start: answer.log_start_offset,
        log_start: log.log_start_offset(),
    });
    let moved_to = actions
        .high_watermark
        .filter(|&hw| hw != log.high_watermark());
    if let Some(hw) = moved_to {
        log.set_high_watermark(hw);
    }
    // One wake for the answer: new records or a new HW.
    if appended || moved_to.is_some() {
        AppendWaiters::of(shard).notify(tp);
    }
    if let Some(target) = actions.log_start {
        match log.delete_records_before(target).await {
            Ok(start) => {
                tracing::debug!(partition = %tp, leader, "log start moved to {start}, the leader's")
            }
            Err(e) => tracing::warn!(
                partition = %tp,
                leader,
                "moving the log start to the leader's {target} failed: {e}"
            ),
        }
    }
    true
}

/// The leader's log starts past our LEO (retention, DeleteRecords): start
/// over at its log start, as Kafka's `truncateFullyAndStartAt`.
async fn restart_at(shard: &Rc<Shard>, part: &Followed, leader: i32, offset: i64) {
    let Some(log) = shard.local_log(&part.tp) else {
        return;
    };
    let Ok(mut log) = log.write().await else {
        return;
    };
    if !still_following(&part.state, leader, part.leader_epoch) {
        return;
    }
    match log.truncate_fully_and_start_at(offset, now_ms()).await {
        Ok(()) => {
            part.state.borrow_mut().on_restarted_at(offset);
            tracing::info!(
                partition = %part.tp,
                leader,
                "the leader's log starts at {offset}, past this replica's end: restarted the \
                 log there"
            );
        }
        Err(e) => {
            tracing::error!(partition = %part.tp, "restarting the log at {offset} failed: {e}")
        }
    }
}

/// The complete batches at the front of `records`: a leader's file range
/// may end inside a batch, and the follower drops that partial batch (the
/// next fetch asks for it again).
fn whole_batches(records: Bytes) -> Bytes {
    let end = crate::log::batch::whole_batches_len(&records);
    records.slice(..end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{build_batch, BatchSpec};

    fn batch(base_offset: i64) -> Vec<u8> {
        build_batch(&BatchSpec {
            base_offset,
            leader_epoch: 0,
            base_timestamp: 0,
            records: &[(0, None, b"one"), (1, None, b"two")],
        })
    }

    #[test]
    fn a_partial_last_batch_is_dropped() {
        let a = batch(0);
        let b = batch(2);
        let mut all = a.to_vec();
        all.extend_from_slice(&b[..b.len() - 5]);
        assert_eq!(whole_batches(Bytes::from(all)), a);
        let mut both = a.to_vec();
        both.extend_from_slice(&b);
        assert_eq!(whole_batches(Bytes::from(both.clone())).len(), both.len());
        assert!(whole_batches(Bytes::from_static(&[0, 0, 0])).is_empty());
    }
}
