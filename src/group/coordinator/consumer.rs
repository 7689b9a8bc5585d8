//! The shell around the KIP-848 consumer-group core
//! (`core/src/group/consumer/`): ConsumerGroupHeartbeat, the session and
//! rebalance deadlines, loading and unloading, and what the other group
//! APIs need to know about consumer groups.
//!
//! Every change follows the core's contract, under the write permit of the
//! group's `__consumer_offsets` partition (so one change of a group at a
//! time, each against the state the previous one left): compute against
//! the group without changing it, append the records through the same
//! replicated write as offset commits, apply each with
//! `ConsumerGroup::replay` (the function loading uses too), arm the
//! timers, answer. A failed write may still reach the log (a timeout), so
//! the partition is then reloaded from the log rather than guessed at.
//!
//! Timers are data: a session deadline per member and a rebalance deadline
//! (with the member epoch it was armed at) per revoking member, checked on
//! the coordinator's tick. A member's committed offsets are the classic
//! coordinator's (`GroupCoordinator::groups` keeps an offsets-only entry
//! under the group's id), so OffsetFetch, expiry and the offsets' load are
//! shared; the listing and describing of groups skip that entry.

use std::collections::{BTreeMap, HashSet};

use crate::acl::{matrix, Authorizer, AuthorizerConfig};
use crate::group::consumer::commit::{validate_offset_commit, CommitRequest};
use crate::group::consumer::heartbeat::{
    unknown_group_error, validate_request, HeartbeatContext, HeartbeatError, HeartbeatRequest,
    HeartbeatResponse, TimerOp,
};
use crate::group::consumer::member::LEAVE_GROUP_MEMBER_EPOCH;
use crate::group::consumer::records::ConsumerGroupRecord;
use crate::group::consumer::topics::{TopicId, TopicInfo, TopicsImage};
use crate::group::consumer::{replay_into, ConsumerGroup, ConsumerGroupState};
use crate::metadata::image::MetadataImage;

use super::*;

/// A client connection's number (`Session::connection_id`; 0 for internal
/// callers), the one share sessions are bound to.
pub use crate::group::share::session::ConnectionId;

/// The group type ListGroups and kafka-consumer-groups.sh show.
pub const CONSUMER_GROUP_TYPE: &str = "consumer";

/// The consumer groups of one shard, with their deadlines.
#[derive(Default)]
pub(super) struct ConsumerGroups {
    pub(super) groups: BTreeMap<String, ConsumerGroup>,
    /// (group, member) to the session deadline.
    sessions: HashMap<(String, String), i64>,
    /// (group, member) to (member epoch, deadline).
    rebalances: HashMap<(String, String), (i32, i64)>,
    /// Classic members of consumer groups: (group, member) to the
    /// deadline of the JoinGroup they were told to send, and of the
    /// SyncGroup that must follow a join.
    classic_joins: HashMap<(String, String), i64>,
    classic_syncs: HashMap<(String, String), i64>,
    /// The topics as the groups see them, rebuilt when the image moves.
    topics: Option<Rc<TopicsImage>>,
    /// (group, member) to the connection its last heartbeat came on, for
    /// dynamic members (`group.consumer.disconnect.grace.ms`).
    connections: HashMap<(String, String), ConnectionId>,
    /// Members whose connection closed and that have not heartbeated
    /// since: their session deadline was brought forward.
    disconnected: HashSet<(String, String)>,
}

/// A timer that fired.
enum Expired {
    Session(String),
    Rebalance(String, i32),
    ClassicJoin(String),
    ClassicSync(String),
}

impl ConsumerGroups {
    pub(super) fn apply_timers(&mut self, group_id: &str, ops: &[TimerOp]) {
        let key = |m: &str| (group_id.to_string(), m.to_string());
        for op in ops {
            match op {
                TimerOp::Session {
                    member_id,
                    deadline_ms,
                } => {
                    self.sessions.insert(key(member_id), *deadline_ms);
                }
                TimerOp::Rebalance {
                    member_id,
                    member_epoch,
                    deadline_ms,
                } => {
                    self.rebalances
                        .insert(key(member_id), (*member_epoch, *deadline_ms));
                }
                TimerOp::CancelRebalance { member_id } => {
                    self.rebalances.remove(&key(member_id));
                }
                TimerOp::CancelAll { member_id } => {
                    self.connections.remove(&key(member_id));
                    self.disconnected.remove(&key(member_id));
                    self.sessions.remove(&key(member_id));
                    self.rebalances.remove(&key(member_id));
                    self.classic_joins.remove(&key(member_id));
                    self.classic_syncs.remove(&key(member_id));
                }
                TimerOp::ClassicJoin {
                    member_id,
                    deadline_ms,
                } => {
                    self.classic_joins
                        .entry(key(member_id))
                        .or_insert(*deadline_ms);
                }
                TimerOp::CancelClassicJoin { member_id } => {
                    self.classic_joins.remove(&key(member_id));
                }
                TimerOp::ClassicSync {
                    member_id,
                    deadline_ms,
                } => {
                    self.classic_syncs.insert(key(member_id), *deadline_ms);
                }
                TimerOp::CancelClassicSync { member_id } => {
                    self.classic_syncs.remove(&key(member_id));
                }
            }
        }
    }

    /// The session deadline of `member_id` in `group_id`, if it has one.
    pub(super) fn session_deadline(&self, group_id: &str, member_id: &str) -> Option<i64> {
        self.sessions
            .get(&(group_id.to_string(), member_id.to_string()))
            .copied()
    }

    /// Forgets `ids` and their deadlines (their partition was unloaded).
    pub(super) fn drop_groups(&mut self, ids: &[String]) {
        for id in ids {
            self.groups.remove(id);
        }
        self.sessions
            .retain(|(g, _), _| self.groups.contains_key(g));
        self.rebalances
            .retain(|(g, _), _| self.groups.contains_key(g));
        self.classic_joins
            .retain(|(g, _), _| self.groups.contains_key(g));
        self.classic_syncs
            .retain(|(g, _), _| self.groups.contains_key(g));
        self.connections
            .retain(|(g, _), _| self.groups.contains_key(g));
        self.disconnected
            .retain(|(g, _)| self.groups.contains_key(g));
    }

    /// A dynamic member heartbeated on `connection` (0: an internal caller,
    /// which has no connection to close).
    fn heard_on(&mut self, group_id: &str, member_id: &str, connection: ConnectionId) {
        let key = (group_id.to_string(), member_id.to_string());
        self.disconnected.remove(&key);
        if connection != 0 {
            self.connections.insert(key, connection);
        } else {
            self.connections.remove(&key);
        }
    }

    /// The deadlines due at `now`, each taken out (the expiry re-arms
    /// what it still needs).
    fn take_due(&mut self, now: i64) -> Vec<(String, Expired)> {
        let mut due = Vec::new();
        self.sessions.retain(|(g, m), deadline| {
            let keep = *deadline > now;
            if !keep {
                due.push((g.clone(), Expired::Session(m.clone())));
            }
            keep
        });
        self.rebalances.retain(|(g, m), (epoch, deadline)| {
            let keep = *deadline > now;
            if !keep {
                due.push((g.clone(), Expired::Rebalance(m.clone(), *epoch)));
            }
            keep
        });
        for (timers, expired) in [
            (
                &mut self.classic_joins,
                Expired::ClassicJoin as fn(String) -> Expired,
            ),
            (&mut self.classic_syncs, Expired::ClassicSync),
        ] {
            timers.retain(|(g, m), deadline| {
                let keep = *deadline > now;
                if !keep {
                    due.push((g.clone(), expired(m.clone())));
                }
                keep
            });
        }
        due
    }
}

/// The principal and host a ConsumerGroupHeartbeat (or a classic member's
/// JoinGroup to a consumer group) came from: a regex it resolves keeps
/// only the topics they may DESCRIBE (Kafka 4.x,
/// KAFKA-18813), which the coordinator asks of the authorizer itself, on
/// its own shard, as the topics are only known there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatPrincipal {
    /// `User:<name>`.
    pub principal: String,
    pub host: String,
}

impl HeartbeatPrincipal {
    /// Whether the principal may DESCRIBE `topic`: always, without an
    /// authorizer.
    pub(super) fn may_describe(
        &self,
        authorizer: Option<&AuthorizerConfig>,
        image: &MetadataImage,
        topic: &str,
    ) -> bool {
        let rule = matrix::CONSUMER_GROUP_HEARTBEAT_TOPIC;
        authorizer.is_none_or(|config| {
            Authorizer::new(config, &image.acls).authorize(
                &self.principal,
                &self.host,
                rule.operation,
                rule.resource_type,
                topic,
            )
        })
    }
}

/// The cluster's topics as the coordinator core sees them: ids, partition
/// counts and each partition's replica racks, at the image's offset (so a
/// new topic or more partitions is a new version, which the next heartbeat
/// of each group checks its regexes and metadata hash against). Internal
/// topics are left out, as Kafka's regex resolution leaves them out.
pub fn topics_image(image: &MetadataImage) -> TopicsImage {
    let mut topics = BTreeMap::new();
    for (name, t) in &image.topics {
        if crate::metadata::is_internal_topic(name) {
            continue;
        }
        let count = t.partitions.keys().max().map_or(0, |p| p + 1).max(0) as usize;
        let mut partition_racks = vec![Vec::new(); count];
        for (&p, part) in &t.partitions {
            let mut racks: Vec<String> = part
                .replicas
                .iter()
                .filter_map(|b| image.brokers.get(b).and_then(|b| b.rack.clone()))
                .collect();
            racks.sort();
            racks.dedup();
            partition_racks[p as usize] = racks;
        }
        topics.insert(
            name.clone(),
            TopicInfo {
                id: t.id,
                name: name.clone(),
                partition_racks,
            },
        );
    }
    TopicsImage {
        version: image.offset,
        topics,
    }
}

impl GroupCoordinator {
    /// The topics image of this shard's current metadata image, cached
    /// per image offset.
    pub(super) fn consumer_topics(&self, shard: &Shard) -> Rc<TopicsImage> {
        let image = BrokerState::of(shard).image();
        let mut c = self.consumer.borrow_mut();
        match &c.topics {
            Some(t) if t.version == image.offset => t.clone(),
            _ => {
                let t = Rc::new(topics_image(&image));
                c.topics = Some(t.clone());
                t
            }
        }
    }

    /// Whether `group_id` is a consumer group on this shard.
    pub(super) fn is_consumer_group(&self, group_id: &str) -> bool {
        self.consumer.borrow().groups.contains_key(group_id)
    }

    /// Replays the consumer-group records a load read, replacing what
    /// this shard held for the partition, and arms the loaded groups'
    /// timers (Kafka's `onLoaded`).
    pub(super) fn load_consumer_groups(
        &self,
        shard: &Shard,
        partition: i32,
        loaded: BTreeMap<String, ConsumerGroup>,
    ) -> usize {
        let now = now_ms();
        let state = BrokerState::of(shard);
        let mut c = self.consumer.borrow_mut();
        let mut by_partition = self.group_partition.borrow_mut();
        let count = loaded.len();
        for (id, g) in loaded {
            let timers = g.on_loaded(now, &state.group_config(&id).consumer);
            c.apply_timers(&id, &timers);
            c.groups.insert(id.clone(), g);
            by_partition.insert(id, partition);
        }
        count
    }

    /// Appends `records`, then replays them and arms `timers`; the caller
    /// holds the partition's write permit. On a failed write the partition
    /// is reloaded, since the records may reach the log all the same.
    pub(super) async fn persist_consumer(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
        records: &[ConsumerGroupRecord],
        timers: &[TimerOp],
    ) -> Result<(), i16> {
        self.persist_consumer_after(shard, partition, group_id, Vec::new(), records, timers)
            .await
    }

    /// [`Self::persist_consumer`], with `prefix` (a classic group's
    /// records) written first in the same append.
    pub(super) async fn persist_consumer_after(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
        prefix: Vec<(Bytes, Option<Bytes>)>,
        records: &[ConsumerGroupRecord],
        timers: &[TimerOp],
    ) -> Result<(), i16> {
        if !records.is_empty() || !prefix.is_empty() {
            let mut encoded = prefix;
            encoded.extend(records.iter().map(|r| (r.encode_key(), r.encode_value())));
            if let Err(code) = self.append(shard, partition, &encoded).await {
                tracing::warn!(group = %group_id, code, "writing consumer group records failed; reloading the partition");
                self.reload(shard, partition);
                return Err(code);
            }
        }
        let mut c = self.consumer.borrow_mut();
        for r in records {
            replay_into(&mut c.groups, r);
        }
        if c.groups.contains_key(group_id) {
            self.group_partition
                .borrow_mut()
                .insert(group_id.to_string(), partition);
        }
        c.apply_timers(group_id, timers);
        Ok(())
    }

    /// Drops a partition's groups and loads them again from its log.
    pub(super) fn reload(self: &Rc<Self>, shard: &Rc<Shard>, partition: i32) {
        self.on_lost_leadership(partition);
        if crate::node::state::led_log(shard, &Self::tp(partition)).is_some() {
            self.spawn_load(shard, partition);
        }
    }

    /// ConsumerGroupHeartbeat on the group's coordinator shard, from
    /// `member` (whose DESCRIBE rights filter the topics of a regex this
    /// heartbeat resolves).
    pub async fn consumer_heartbeat(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        req: HeartbeatRequest,
        member: HeartbeatPrincipal,
        connection: ConnectionId,
    ) -> Result<HeartbeatResponse, HeartbeatError> {
        let fail = |code: i16| HeartbeatError {
            error_code: code,
            message: String::new(),
        };
        // The group's own consumer.session.timeout.ms and
        // consumer.heartbeat.interval.ms over the broker's.
        let config = BrokerState::of(&shard).group_config(&req.group_id).consumer;
        validate_request(&req, &config)?;
        self.ready(&shard, partition).map_err(fail)?;
        let Some(p) = self.partitions.borrow().get(&partition).cloned() else {
            return Err(fail(error_code::NOT_COORDINATOR));
        };
        let _permit = p
            .write
            .acquire_permit(1)
            .await
            .map_err(|_| fail(error_code::COORDINATOR_NOT_AVAILABLE))?;
        // The load may have been replaced while this waited.
        self.ready(&shard, partition).map_err(fail)?;
        let group_id = req.group_id.clone();
        if self.is_share_group(&group_id) {
            return Err(HeartbeatError {
                error_code: error_code::GROUP_ID_NOT_FOUND,
                message: format!("Group {group_id} is not a consumer group."),
            });
        }
        // A live classic group of that id converts (an online upgrade), if
        // it may; an empty one (offsets only, or all members gone) gives
        // way, as Kafka deletes it.
        let upgrade = match self.upgrade(&shard, &group_id, req.member_epoch) {
            Some(r) => Some(r?),
            None => None,
        };
        let classic_tombstone = {
            let groups = self.groups.borrow();
            match groups.get(&group_id) {
                Some(g) if !self.is_consumer_group(&group_id) => {
                    if upgrade.is_none() && req.member_epoch != 0 {
                        return Err(HeartbeatError {
                            error_code: error_code::GROUP_ID_NOT_FOUND,
                            message: format!("Group {group_id} is not a consumer group"),
                        });
                    }
                    g.protocol_type.is_some().then(|| {
                        RecordKey::Group {
                            group: group_id.clone(),
                        }
                        .encode()
                    })
                }
                _ => None,
            }
        };
        let topics = self.consumer_topics(&shard);
        let fresh = crate::node::ids::uuid_string();
        let now = now_ms();
        let mut records = Vec::new();
        let mut timers = Vec::new();
        let state = BrokerState::of(&shard);
        let image = state.image();
        let may_describe =
            |topic: &str| member.may_describe(state.config.authorizer.as_ref(), &image, topic);
        let outcome = {
            let c = self.consumer.borrow();
            let session_deadline = |m: &str| c.session_deadline(&group_id, m);
            let ctx = HeartbeatContext {
                now_ms: now,
                config: &config,
                topics: &topics,
                fresh_member_id: &fresh,
                may_describe: state
                    .config
                    .authorizer
                    .is_some()
                    .then_some(&may_describe as &dyn Fn(&str) -> bool),
                session_deadline_ms: Some(&session_deadline),
            };
            match (&upgrade, c.groups.get(&group_id)) {
                (Some((converted, group)), _) => {
                    records.extend(converted.iter().cloned());
                    timers.extend(group.classic_session_timers(now));
                    group.heartbeat(&req, &ctx)?
                }
                (None, Some(g)) => g.heartbeat(&req, &ctx)?,
                (None, None) if req.member_epoch == 0 => {
                    ConsumerGroup::new(&group_id).heartbeat(&req, &ctx)?
                }
                (None, None) => return Err(unknown_group_error(&group_id)),
            }
        };
        // The last consumer-protocol member leaving may leave classic
        // members only: the group becomes classic again.
        if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH {
            if let Some(d) = self.downgrade_check(&shard, &group_id, &outcome.response.member_id) {
                self.apply_downgrade(&shard, partition, &group_id, d)
                    .await
                    .map_err(fail)?;
                return Ok(outcome.response);
            }
        }
        records.extend(outcome.records);
        timers.extend(outcome.timers);
        let prefix: Vec<(Bytes, Option<Bytes>)> =
            classic_tombstone.into_iter().map(|k| (k, None)).collect();
        self.persist_consumer_after(&shard, partition, &group_id, prefix, &records, &timers)
            .await
            .map_err(fail)?;
        if req.member_epoch != LEAVE_GROUP_MEMBER_EPOCH && req.instance_id.is_none() {
            self.consumer
                .borrow_mut()
                .heard_on(&group_id, &outcome.response.member_id, connection);
        }
        if let Some(g) = self.groups.borrow_mut().get_mut(&group_id) {
            if !self.consumer.borrow().groups.contains_key(&group_id) {
                // The heartbeat wrote nothing that made a group.
            } else if g.protocol_type.is_some() || !g.members.is_empty() {
                g.hand_over_members(now_ms());
            }
        }
        Ok(outcome.response)
    }

    /// The connection `member_id` of `group_id` heartbeated on closed. If
    /// it was the member's last, a dynamic member's session now ends after
    /// its heartbeat interval and `group.consumer.disconnect.grace.ms`,
    /// unless it heartbeats again first (on another connection), which
    /// gives it its whole session back. Only a timer moves: nothing is
    /// written, so no write permit is needed.
    pub async fn consumer_connection_closed(
        self: Rc<Self>,
        shard: Rc<Shard>,
        group_id: String,
        member_id: String,
        connection: ConnectionId,
    ) {
        let config = BrokerState::of(&shard).group_config(&group_id).consumer;
        let now = now_ms();
        let mut c = self.consumer.borrow_mut();
        let key = (group_id, member_id);
        if c.connections.get(&key) != Some(&connection) {
            return;
        }
        c.connections.remove(&key);
        let Some(deadline) = c
            .groups
            .get(&key.0)
            .and_then(|g| g.disconnected_session_deadline(&key.1, now, &config))
        else {
            return;
        };
        let Some(session) = c.sessions.get_mut(&key) else {
            return;
        };
        if deadline < *session {
            *session = deadline;
            tracing::debug!(
                group = %key.0,
                member = %key.1,
                in_ms = deadline - now,
                "the consumer group member's connection closed: fenced unless it heartbeats again soon"
            );
            c.disconnected.insert(key);
        }
    }

    /// The consumer-group deadlines due now, each handled in a task of
    /// its own under the partition's write permit.
    pub(super) fn tick_consumer(self: &Rc<Self>, shard: &Rc<Shard>) {
        let due = self.consumer.borrow_mut().take_due(now_ms());
        for (group_id, expired) in due {
            let (me, shard) = (self.clone(), shard.clone());
            glommio::spawn_local(async move {
                me.expire_member(&shard, group_id, expired).await;
            })
            .detach();
        }
    }

    async fn expire_member(self: &Rc<Self>, shard: &Rc<Shard>, group_id: String, e: Expired) {
        let Some(partition) = self.group_partition.borrow().get(&group_id).copied() else {
            return;
        };
        let Some(p) = self.partitions.borrow().get(&partition).cloned() else {
            return;
        };
        let Ok(_permit) = p.write.acquire_permit(1).await else {
            return;
        };
        let disconnected = matches!(&e, Expired::Session(m)
            if self.consumer.borrow().disconnected.contains(&(group_id.clone(), m.clone())));
        let (member_id, why) = match &e {
            Expired::Session(m) if disconnected => (
                m,
                "its connection closed and it did not heartbeat again within its heartbeat interval and group.consumer.disconnect.grace.ms",
            ),
            Expired::Session(m) => (m, "its session expired"),
            Expired::Rebalance(m, _) => (m, "it did not revoke in time"),
            Expired::ClassicJoin(m) => (m, "it did not rejoin in time"),
            Expired::ClassicSync(m) => (m, "it did not send SyncGroup in time"),
        };
        let downgrade = match &e {
            Expired::Rebalance(m, epoch)
                if self
                    .consumer
                    .borrow()
                    .groups
                    .get(&group_id)
                    .and_then(|g| g.member(m))
                    .is_none_or(|x| x.member_epoch != *epoch) =>
            {
                None
            }
            _ => self.downgrade_check(shard, &group_id, member_id),
        };
        if let Some(d) = downgrade {
            tracing::info!(group = %group_id, member = %member_id, "consumer group member fenced because {why}; the rest speak the classic protocol: converting to a classic group");
            if let Err(code) = self.apply_downgrade(shard, partition, &group_id, d).await {
                tracing::warn!(group = %group_id, code, "converting to a classic group failed");
            }
            return;
        }
        let (records, timers) = {
            let c = self.consumer.borrow();
            let Some(g) = c.groups.get(&group_id) else {
                return;
            };
            if g.member(member_id).is_some() {
                tracing::info!(group = %group_id, member = %member_id, "consumer group member fenced because {why}");
            }
            match &e {
                Expired::Rebalance(m, epoch) => g.rebalance_expired(m, *epoch),
                Expired::Session(m) | Expired::ClassicJoin(m) | Expired::ClassicSync(m) => {
                    g.session_expired(m)
                }
            }
        };
        if let Err(code) = self
            .persist_consumer(shard, partition, &group_id, &records, &timers)
            .await
        {
            tracing::warn!(group = %group_id, code, "fencing an expired member failed");
        }
    }

    /// The member checks of an offset commit to a consumer group (Kafka's
    /// `ConsumerGroup.validateOffsetCommit`, with Kafka 4.4's assignment
    /// epochs: see `group::consumer::commit`): `None` when `group_id` is
    /// not a consumer group, else the error for the whole request, if any.
    /// Epoch -1 with no members is an admin's or a standalone consumer's
    /// commit.
    pub(super) fn consumer_commit_check(
        &self,
        shard: &Shard,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
        request: CommitRequest,
        topics: &[(String, Vec<CommitPartition>)],
    ) -> Option<i16> {
        if !self.is_consumer_group(group_id) {
            return None;
        }
        // Kafka checks by topic id; a name this broker does not know has
        // none, and counts as a partition the member does not hold.
        let image = self.consumer_topics(shard);
        let partitions: Vec<(Option<TopicId>, i32)> = topics
            .iter()
            .flat_map(|(name, ps)| {
                let id = image.by_name(name).map(|t| t.id);
                ps.iter().map(move |p| (id, p.partition))
            })
            .collect();
        let c = self.consumer.borrow();
        let g = c.groups.get(group_id)?;
        Some(
            match validate_offset_commit(g, member_id, member_epoch, request, &partitions) {
                Ok(()) => error_code::NONE,
                Err(code) => code,
            },
        )
    }

    /// The member checks of an OffsetFetch from a consumer-group member
    /// (Kafka's `validateOffsetFetch`): no member id is an admin's fetch.
    pub(super) fn consumer_fetch_check(
        &self,
        group_id: &str,
        member: Option<(&str, i32)>,
    ) -> Result<(), i16> {
        let c = self.consumer.borrow();
        let Some(g) = c.groups.get(group_id) else {
            return Ok(());
        };
        let Some((member_id, epoch)) = member else {
            return Ok(());
        };
        if epoch < 0 && member_id.is_empty() {
            return Ok(());
        }
        match g.member(member_id) {
            None => Err(error_code::UNKNOWN_MEMBER_ID),
            Some(m) if m.member_epoch != epoch => Err(error_code::STALE_MEMBER_EPOCH),
            Some(_) => Ok(()),
        }
    }

    /// The listing of this shard's consumer groups on `led` partitions.
    pub(super) fn list_consumer(&self, led: &std::collections::BTreeSet<i32>) -> Vec<ListedGroup> {
        let c = self.consumer.borrow();
        let partition_of = self.group_partition.borrow();
        c.groups
            .values()
            .filter(|g| {
                partition_of
                    .get(g.group_id())
                    .is_some_and(|p| led.contains(p))
            })
            .map(|g| ListedGroup {
                group_id: g.group_id().to_string(),
                protocol_type: "consumer".to_string(),
                state: g.state().name().to_string(),
                group_type: CONSUMER_GROUP_TYPE,
            })
            .collect()
    }

    /// ConsumerGroupDescribe of one group on its coordinator shard.
    pub async fn consumer_describe(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
    ) -> crate::protocol::messages::consumer_group_describe::DescribedGroup {
        use crate::protocol::messages::consumer_group_describe::*;
        let mut out = DescribedGroup {
            group_id: group_id.clone(),
            ..DescribedGroup::default()
        };
        if let Err(code) = self.ready(&shard, partition) {
            out.error_code = code;
            return out;
        }
        let topics = self.consumer_topics(&shard);
        let c = self.consumer.borrow();
        let Some(g) = c.groups.get(&group_id) else {
            out.error_code = error_code::GROUP_ID_NOT_FOUND;
            out.error_message = Some(if self.groups.borrow().contains_key(&group_id) {
                format!("Group {group_id} is not a consumer group.")
            } else {
                format!("Group {group_id} not found.")
            });
            return out;
        };
        let named = |a: &crate::group::consumer::Assignment| -> Vec<DescribedTopicPartitions> {
            a.to_topic_partitions()
                .into_iter()
                .map(|(id, partitions)| DescribedTopicPartitions {
                    topic_id: id,
                    topic_name: topics
                        .by_id(&id)
                        .map(|t| t.name.clone())
                        .unwrap_or_default(),
                    partitions,
                })
                .collect()
        };
        let config = &BrokerState::of(&shard).config.consumer_group;
        out.group_state = g.state().name().to_string();
        out.group_epoch = g.group_epoch();
        out.assignment_epoch = g.assignment_epoch();
        out.assignor_name = g
            .members()
            .values()
            .find_map(|m| m.server_assignor.clone())
            .unwrap_or_else(|| config.default_assignor().to_string());
        out.members = g
            .members()
            .values()
            .map(|m| DescribedMember {
                member_id: m.member_id.clone(),
                instance_id: m.instance_id.clone(),
                rack_id: m.rack_id.clone(),
                member_epoch: m.member_epoch,
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                subscribed_topic_names: m.subscribed_topic_names.clone(),
                subscribed_topic_regex: m.subscribed_topic_regex.clone(),
                assignment: named(&m.assigned_partitions),
                target_assignment: named(&g.target(&m.member_id).cloned().unwrap_or_default()),
                member_type: if m.uses_classic_protocol() {
                    MEMBER_TYPE_CLASSIC
                } else {
                    MEMBER_TYPE_CONSUMER
                },
            })
            .collect();
        out
    }

    /// A JoinGroup naming a consumer group: refused while it has members
    /// (no online migration), as Kafka refuses a protocol it does not
    /// share; an empty one is deleted so the classic group can take the
    /// id, as Kafka does. `Ok` when the join may go on.
    pub(super) async fn consumer_join_check(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
    ) -> Result<(), i16> {
        let empty = match self.consumer.borrow().groups.get(group_id) {
            None => return Ok(()),
            Some(g) => g.is_empty(),
        };
        if !empty {
            return Err(error_code::INCONSISTENT_GROUP_PROTOCOL);
        }
        self.delete_consumer_group(shard, partition, group_id, false)
            .await
    }

    /// Deletes an empty consumer group's records (and, with `offsets`, its
    /// committed offsets and the offsets' entry).
    pub(super) async fn delete_consumer_group(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
        offsets: bool,
    ) -> Result<(), i16> {
        let Some(p) = self.partitions.borrow().get(&partition).cloned() else {
            return Err(error_code::NOT_COORDINATOR);
        };
        let _permit = p
            .write
            .acquire_permit(1)
            .await
            .map_err(|_| error_code::COORDINATOR_NOT_AVAILABLE)?;
        let records = match self.consumer.borrow().groups.get(group_id) {
            None => return Err(error_code::GROUP_ID_NOT_FOUND),
            Some(g) if !g.is_empty() => return Err(error_code::NON_EMPTY_GROUP),
            Some(g) => g.delete_records(),
        };
        let mut encoded: Vec<(Bytes, Option<Bytes>)> = Vec::new();
        if offsets {
            if let Some(g) = self.groups.borrow().get(group_id) {
                encoded.extend(tombstones_for(group_id, g.offsets.keys().cloned()));
            }
        }
        encoded.extend(records.iter().map(|r| (r.encode_key(), r.encode_value())));
        self.append(shard, partition, &encoded).await?;
        let mut c = self.consumer.borrow_mut();
        for r in &records {
            replay_into(&mut c.groups, r);
        }
        c.drop_groups(&[group_id.to_string()]);
        if offsets {
            self.groups.borrow_mut().remove(group_id);
            self.group_partition.borrow_mut().remove(group_id);
        }
        tracing::info!(group = %group_id, "consumer group deleted");
        Ok(())
    }

    /// The state a consumer group is in, for DeleteGroups and expiry.
    pub(super) fn consumer_state(&self, group_id: &str) -> Option<ConsumerGroupState> {
        self.consumer
            .borrow()
            .groups
            .get(group_id)
            .map(|g| g.state())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::image::{BrokerImage, PartitionImage, TopicImage};

    fn partition(replicas: Vec<i32>) -> PartitionImage {
        PartitionImage {
            replicas: replicas.clone(),
            isr: replicas,
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            elr: Vec::new(),
            last_known_elr: Vec::new(),
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            last_unclean_election_epoch: None,
        }
    }

    #[test]
    fn the_topics_image_has_ids_partitions_and_racks_but_no_internal_topics() {
        let mut image = MetadataImage::empty();
        image.offset = 42;
        let mut parts = BTreeMap::new();
        parts.insert(0, partition(vec![1, 2]));
        parts.insert(1, partition(vec![2]));
        image.topics.insert(
            "orders".into(),
            TopicImage {
                name: "orders".into(),
                id: [9; 16],
                partitions: parts.clone(),
                configs: BTreeMap::new(),
            },
        );
        image.topics.insert(
            OFFSETS_TOPIC.into(),
            TopicImage {
                name: OFFSETS_TOPIC.into(),
                id: [8; 16],
                partitions: parts,
                configs: BTreeMap::new(),
            },
        );
        for (id, rack) in [(1, Some("b")), (2, Some("a"))] {
            image.brokers.insert(
                id,
                BrokerImage {
                    id,
                    incarnation_id: [0; 16],
                    epoch: 0,
                    host: "h".into(),
                    port: 1,
                    rack: rack.map(str::to_string),
                    fenced: false,
                    in_controlled_shutdown: false,
                    listeners: Vec::new(),
                },
            );
        }
        let t = topics_image(&image);
        assert_eq!(t.version, 42);
        assert_eq!(t.topics.len(), 1, "no internal topic");
        let orders = t.by_name("orders").unwrap();
        assert_eq!(orders.id, [9; 16]);
        assert_eq!(
            orders.partition_racks,
            vec![
                vec!["a".to_string(), "b".to_string()],
                vec!["a".to_string()]
            ]
        );
    }
}
