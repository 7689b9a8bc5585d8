//! The group coordinator of one shard: the groups whose `__consumer_offsets`
//! partition this shard owns.
//!
//! A group lives on exactly one partition of `__consumer_offsets` (Kafka's
//! `abs(groupId.hashCode) % partitions`), so it lives on exactly one shard,
//! and every request about it is served there: handlers on other shards
//! forward it with `submit_to`. Group state is in memory; each change that
//! must survive a restart is a record appended to that partition (Kafka's
//! key/value schemas, `core/src/group/schema.rs`) *before* it takes effect in memory, under
//! the partition's write permit, so memory never runs ahead of the log and
//! replays in log order reproduce it.
//!
//! The coordinator loads an offsets partition (reads it from the log start)
//! as soon as this broker leads it: at startup for the partitions the shard
//! opened, and when the metadata image makes this broker its leader (the
//! topic was just created; with replication, a failover). Only while that
//! load runs do requests for its groups get COORDINATOR_LOAD_IN_PROGRESS.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;

use crate::broker_config::group::GroupConfig;
use crate::error::LogError;
use crate::group::consumer::commit::CommitRequest;
use crate::group::group::{
    Group, GroupLimits, GroupState, JoinOutcome, JoinParams, JoinStep, SyncOutcome, SyncStep,
};
use crate::group::offsets_log::{read_latest_values, LatestValues};
use crate::group::offsets_topic::partition_for;
pub use crate::group::offsets_topic::OFFSETS_TOPIC;
use crate::group::schema::{GroupValue, OffsetValue, RecordKey};
use crate::node::state::BrokerState;
use crate::node::stop::StopHandle;
use crate::protocol::error_code;
use crate::shard::partition_table::ShardId;
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;

/// Where a group's coordinator runs, if `__consumer_offsets` exists.
pub fn locate(shard: &Shard, group_id: &str) -> Option<(i32, ShardId)> {
    let image = BrokerState::of(shard).image();
    let topic = image.topic(OFFSETS_TOPIC)?;
    let partition = partition_for(group_id, topic.partitions.len() as i32);
    let tp = TopicPartition::new(OFFSETS_TOPIC.to_string(), partition);
    Some((partition, shard.owner(&tp)))
}

/// Runs `f` on the coordinator of `group_id`. Without `__consumer_offsets`
/// (FindCoordinator creates it) the answer is COORDINATOR_NOT_AVAILABLE.
pub async fn on_coordinator<R, F, Fut>(shard: &Rc<Shard>, group_id: &str, f: F) -> Result<R, i16>
where
    R: Send + 'static,
    F: FnOnce(Rc<GroupCoordinator>, Rc<Shard>, i32) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = R> + 'static,
{
    let Some((partition, owner)) = locate(shard, group_id) else {
        return Err(error_code::COORDINATOR_NOT_AVAILABLE);
    };
    shard
        .submit_to(owner, move |s| async move {
            let c = GroupCoordinator::of(&s);
            f(c, s, partition).await
        })
        .await
        .map_err(|_| error_code::COORDINATOR_NOT_AVAILABLE)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoadState {
    Loading,
    Loaded,
}

/// One `__consumer_offsets` partition this shard coordinates.
struct OffsetsPartition {
    state: Cell<LoadState>,
    /// Serialises appends with their in-memory effect (see the module doc).
    write: glommio::sync::Semaphore,
}

/// One partition of an OffsetCommit.
#[derive(Debug, Clone)]
pub struct CommitPartition {
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

/// A committed offset as OffsetFetch reports it (-1 when none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedOffset {
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub error_code: i16,
}

/// A group as DescribeGroups reports it.
#[derive(Debug, Clone, Default)]
pub struct DescribedGroup {
    pub error_code: i16,
    pub state: String,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<DescribedMember>,
}

#[derive(Debug, Clone)]
pub struct DescribedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Bytes,
    pub assignment: Bytes,
}

/// A group as ListGroups reports it.
#[derive(Debug, Clone)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    pub state: String,
    /// "classic" or [`consumer::CONSUMER_GROUP_TYPE`].
    pub group_type: &'static str,
}

/// The type of the groups of JoinGroup and SyncGroup.
pub const CLASSIC_GROUP_TYPE: &str = "classic";

mod consumer;
mod deletion;
mod migration;
mod share;
mod share_admin;
mod timers;

pub use self::consumer::{topics_image, ConnectionId, HeartbeatPrincipal, CONSUMER_GROUP_TYPE};
pub use self::share::SHARE_GROUP_TYPE;

pub use self::timers::start;

mod txn_offsets;

pub struct GroupCoordinator {
    config: GroupConfig,
    groups: RefCell<HashMap<String, Group>>,
    /// Which partition each group is on (for loading and sweeps).
    group_partition: RefCell<HashMap<String, i32>>,
    partitions: RefCell<HashMap<i32, Rc<OffsetsPartition>>>,
    /// Offsets committed inside open transactions, by (partition, producer
    /// id), until their marker (`txn_offsets.rs`).
    pending_txn: RefCell<HashMap<(i32, i64), Vec<txn_offsets::PendingOffset>>>,
    /// The KIP-848 consumer groups and their deadlines (`consumer.rs`).
    consumer: RefCell<consumer::ConsumerGroups>,
    /// The share groups' membership and sessions (`share.rs`).
    share: RefCell<share::ShareGroups>,
}

impl GroupCoordinator {
    fn new(config: GroupConfig) -> Self {
        GroupCoordinator {
            config,
            groups: RefCell::new(HashMap::new()),
            group_partition: RefCell::new(HashMap::new()),
            partitions: RefCell::new(HashMap::new()),
            pending_txn: RefCell::new(HashMap::new()),
            consumer: RefCell::new(consumer::ConsumerGroups::default()),
            share: RefCell::new(share::ShareGroups::default()),
        }
    }

    /// This shard's coordinator; installed by [`start`].
    pub fn of(shard: &Shard) -> Rc<GroupCoordinator> {
        match shard.extension::<GroupCoordinator>() {
            Some(c) => c,
            None => {
                let config = &BrokerState::of(shard).config;
                let c = Rc::new(GroupCoordinator::new(config.group.clone()));
                shard.set_extension(c.clone());
                c
            }
        }
    }

    /// How long a group write waits to be replicated
    /// (`offsets.commit.timeout.ms`).
    fn write_timeout(&self) -> Duration {
        Duration::from_millis(self.config.offsets_commit_timeout_ms)
    }

    fn limits(&self) -> GroupLimits {
        GroupLimits {
            initial_rebalance_delay_ms: self.config.initial_rebalance_delay_ms,
            max_size: self.config.max_size.max(1) as usize,
        }
    }

    fn tp(partition: i32) -> TopicPartition {
        TopicPartition::new(OFFSETS_TOPIC.to_string(), partition)
    }

    /// Ready to serve `partition`'s groups, or the error to answer with.
    /// The first request for an unloaded partition starts its load.
    fn ready(self: &Rc<Self>, shard: &Rc<Shard>, partition: i32) -> Result<(), i16> {
        if crate::node::state::led_log(shard, &Self::tp(partition)).is_none() {
            return Err(error_code::NOT_COORDINATOR);
        }
        let state = self
            .partitions
            .borrow()
            .get(&partition)
            .map(|p| p.state.get());
        match state {
            Some(LoadState::Loaded) => Ok(()),
            Some(LoadState::Loading) => Err(error_code::COORDINATOR_LOAD_IN_PROGRESS),
            None => {
                self.spawn_load(shard, partition);
                Err(error_code::COORDINATOR_LOAD_IN_PROGRESS)
            }
        }
    }

    /// This broker became the leader of `__consumer_offsets` partition
    /// `partition`, whose log is open on this shard: load its groups now,
    /// as Kafka's coordinator does on becoming leader, rather than on the
    /// first request for one of them.
    pub fn on_became_leader(self: &Rc<Self>, shard: &Rc<Shard>, partition: i32) {
        self.spawn_load(shard, partition);
    }

    /// This broker no longer leads `__consumer_offsets` partition
    /// `partition`: its groups are unloaded (their waiting joins end), and
    /// their requests get NOT_COORDINATOR until the new leader has them.
    pub fn on_lost_leadership(&self, partition: i32) {
        if self.partitions.borrow_mut().remove(&partition).is_none() {
            return;
        }
        self.pending_txn
            .borrow_mut()
            .retain(|(p, _), _| *p != partition);
        let gone: Vec<String> = self
            .group_partition
            .borrow()
            .iter()
            .filter(|(_, &p)| p == partition)
            .map(|(g, _)| g.clone())
            .collect();
        let mut groups = self.groups.borrow_mut();
        let mut by_partition = self.group_partition.borrow_mut();
        for g in &gone {
            groups.remove(g);
            by_partition.remove(g);
        }
        self.consumer.borrow_mut().drop_groups(&gone);
        self.share.borrow_mut().drop_groups(&gone);
        tracing::info!(
            partition,
            groups = gone.len(),
            "unloaded the groups of {OFFSETS_TOPIC} partition {partition}: its leadership moved"
        );
    }

    fn spawn_load(self: &Rc<Self>, shard: &Rc<Shard>, partition: i32) {
        if self.partitions.borrow().contains_key(&partition) {
            return;
        }
        self.partitions.borrow_mut().insert(
            partition,
            Rc::new(OffsetsPartition {
                state: Cell::new(LoadState::Loading),
                write: glommio::sync::Semaphore::new(1),
            }),
        );
        let (me, shard) = (self.clone(), shard.clone());
        glommio::spawn_local(async move {
            let started = std::time::Instant::now();
            match me.load(&shard, partition).await {
                Ok((records, groups)) => {
                    if let Some(p) = me.partitions.borrow().get(&partition) {
                        p.state.set(LoadState::Loaded);
                    }
                    tracing::info!(
                        partition,
                        records,
                        groups,
                        ms = started.elapsed().as_millis() as u64,
                        "loaded group state from {OFFSETS_TOPIC}"
                    );
                }
                Err(e) => {
                    // Forget the partition so that the next request retries.
                    me.partitions.borrow_mut().remove(&partition);
                    tracing::error!(partition, "loading {OFFSETS_TOPIC} failed: {e}");
                }
            }
        })
        .detach();
    }

    /// Replays a partition into memory; returns (records, groups) loaded.
    async fn load(&self, shard: &Rc<Shard>, partition: i32) -> Result<(usize, usize), LogError> {
        let tp = Self::tp(partition);
        let Some(log) = shard.local_log(&tp) else {
            return Err(LogError::Offline {
                partition: tp.to_string(),
                reason: "the partition is not open on this shard".into(),
            });
        };
        let LatestValues {
            mut latest,
            order,
            records,
            pending,
            consumer_groups,
            share_groups,
        } = read_latest_values(&log, &tp).await?;
        {
            // Whatever a previous load of this partition left goes first.
            let stale: Vec<String> = self
                .group_partition
                .borrow()
                .iter()
                .filter(|(g, &p)| p == partition && self.is_consumer_group(g))
                .map(|(g, _)| g.clone())
                .collect();
            self.consumer.borrow_mut().drop_groups(&stale);
        }
        let consumer_count = self.load_consumer_groups(shard, partition, consumer_groups)
            + self.load_share_groups(shard, partition, share_groups);
        {
            let mut pending_txn = self.pending_txn.borrow_mut();
            pending_txn.retain(|(p, _), _| *p != partition);
            for (producer_id, offsets) in pending {
                let decoded = offsets
                    .into_iter()
                    .filter_map(|(key, value)| match (key, value) {
                        (
                            RecordKey::Offset {
                                group,
                                topic,
                                partition: p,
                            },
                            Some(v),
                        ) => OffsetValue::decode(v)
                            .ok()
                            .map(|value| txn_offsets::PendingOffset {
                                group,
                                topic,
                                partition: p,
                                value,
                            }),
                        _ => None,
                    });
                pending_txn
                    .entry((partition, producer_id))
                    .or_default()
                    .extend(decoded);
            }
        }
        // The last value per key wins, exactly what compaction keeps.
        let now = now_ms();
        let mut groups = self.groups.borrow_mut();
        let mut where_ = self.group_partition.borrow_mut();
        let mut touched = std::collections::HashSet::new();
        for key in order {
            let Some(value) = latest.remove(&key) else {
                continue;
            };
            let group_id = key.group().to_string();
            match (key, value) {
                (RecordKey::Group { .. }, Some(v)) => match GroupValue::decode(v) {
                    Ok(v) => {
                        let g = groups
                            .entry(group_id.clone())
                            .or_insert_with(|| Group::new(group_id.clone(), now));
                        g.load(v, now);
                        touched.insert(group_id.clone());
                        where_.insert(group_id, partition);
                    }
                    Err(e) => tracing::warn!(group = %group_id, "skipping group metadata: {e}"),
                },
                (RecordKey::Group { .. }, None) => {}
                (
                    RecordKey::Offset {
                        topic,
                        partition: p,
                        ..
                    },
                    Some(v),
                ) => match OffsetValue::decode(v) {
                    Ok(v) => {
                        let g = groups
                            .entry(group_id.clone())
                            .or_insert_with(|| Group::new(group_id.clone(), now));
                        g.offsets.insert((topic, p), v);
                        touched.insert(group_id.clone());
                        where_.insert(group_id, partition);
                    }
                    Err(e) => tracing::warn!(group = %group_id, "skipping an offset: {e}"),
                },
                (RecordKey::Offset { .. }, None) => {}
            }
        }
        Ok((records, touched.len() + consumer_count))
    }

    /// Appends `records` to the partition and, once they are in the log,
    /// applies `effect` to memory, both under the partition's write permit.
    async fn write(
        &self,
        shard: &Rc<Shard>,
        partition: i32,
        records: Vec<(Bytes, Option<Bytes>)>,
        effect: impl FnOnce(&mut HashMap<String, Group>),
    ) -> Result<(), i16> {
        let Some(p) = self.partitions.borrow().get(&partition).cloned() else {
            return Err(error_code::NOT_COORDINATOR);
        };
        let _permit = p
            .write
            .acquire_permit(1)
            .await
            .map_err(|_| error_code::COORDINATOR_NOT_AVAILABLE)?;
        if !records.is_empty() {
            self.append(shard, partition, &records).await?;
        }
        effect(&mut self.groups.borrow_mut());
        Ok(())
    }

    async fn append(
        &self,
        shard: &Rc<Shard>,
        partition: i32,
        records: &[(Bytes, Option<Bytes>)],
    ) -> Result<(), i16> {
        use crate::node::internal_log::{append_replicated, InternalWriteError};
        let tp = Self::tp(partition);
        let timeout = self.write_timeout();
        match append_replicated(shard, &tp, records, None, timeout).await {
            Ok(_) => Ok(()),
            Err(InternalWriteError::NotLeader) => Err(error_code::NOT_COORDINATOR),
            // Kafka's coordinators answer a write that timed out with
            // COORDINATOR_NOT_AVAILABLE (`handleOperationException`), which
            // every client retries after finding the coordinator again. The
            // KIP-848 and share consumers take REQUEST_TIMED_OUT on a
            // heartbeat for an unexpected error and stop for good.
            Err(InternalWriteError::Timeout) => Err(error_code::COORDINATOR_NOT_AVAILABLE),
            Err(InternalWriteError::Unavailable) => Err(error_code::COORDINATOR_NOT_AVAILABLE),
            Err(InternalWriteError::Log(e)) => {
                tracing::error!(partition = %tp, "writing group state failed: {e}");
                Err(match e {
                    LogError::InvalidBatch { .. } => error_code::INVALID_COMMIT_OFFSET_SIZE,
                    _ => error_code::COORDINATOR_NOT_AVAILABLE,
                })
            }
        }
    }

    /// Writes the group's current metadata in the background (after a
    /// transition to Empty).
    fn spawn_persist_group(self: &Rc<Self>, shard: &Rc<Shard>, partition: i32, group_id: String) {
        let (me, shard) = (self.clone(), shard.clone());
        glommio::spawn_local(async move {
            if let Err(code) = me.store_group(&shard, partition, &group_id).await {
                tracing::warn!(group = %group_id, code, "could not store the group's metadata");
            }
        })
        .detach();
    }

    /// Appends the group's current metadata (a group no longer in memory
    /// has nothing to store).
    async fn store_group(
        &self,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
    ) -> Result<(), i16> {
        let value = self.groups.borrow().get(group_id).map(Group::to_value);
        let Some(value) = value else {
            return Ok(());
        };
        let key = RecordKey::Group {
            group: group_id.to_string(),
        };
        self.write(
            shard,
            partition,
            vec![(key.encode(), Some(value.encode()))],
            |_| {},
        )
        .await
    }

    /// The records of a commit's offsets, with Kafka's per-partition checks
    /// (an unknown partition, metadata over `offset.metadata.max.bytes`):
    /// each partition's code by topic, the records to write, and the
    /// offsets they hold. Plain and transactional commits share it.
    #[allow(clippy::type_complexity)]
    fn offset_commit_records(
        &self,
        shard: &Shard,
        group_id: &str,
        topics: &[(String, Vec<CommitPartition>)],
        now: i64,
    ) -> (
        Vec<(String, Vec<(i32, i16)>)>,
        Vec<(Bytes, Option<Bytes>)>,
        Vec<((String, i32), OffsetValue)>,
    ) {
        let image = BrokerState::of(shard).image();
        let mut results = Vec::with_capacity(topics.len());
        let mut records = Vec::new();
        let mut offsets = Vec::new();
        for (topic, parts) in topics {
            let mut out = Vec::with_capacity(parts.len());
            for p in parts {
                let metadata = p.metadata.clone().unwrap_or_default();
                let code = if image.partition(topic, p.partition).is_none() {
                    error_code::UNKNOWN_TOPIC_OR_PARTITION
                } else if metadata.len() > self.config.offset_metadata_max_bytes {
                    error_code::OFFSET_METADATA_TOO_LARGE
                } else {
                    let key = RecordKey::Offset {
                        group: group_id.to_string(),
                        topic: topic.clone(),
                        partition: p.partition,
                    };
                    let value = OffsetValue {
                        offset: p.offset,
                        leader_epoch: p.leader_epoch,
                        metadata,
                        commit_timestamp: now,
                        expire_timestamp: -1,
                    };
                    records.push((key.encode(), Some(value.encode())));
                    offsets.push(((topic.clone(), p.partition), value));
                    error_code::NONE
                };
                out.push((p.partition, code));
            }
            results.push((topic.clone(), out));
        }
        (results, records, offsets)
    }

    fn check_session_timeout(&self, ms: i32) -> Result<(), i16> {
        if ms < self.config.min_session_timeout_ms || ms > self.config.max_session_timeout_ms {
            return Err(error_code::INVALID_SESSION_TIMEOUT);
        }
        Ok(())
    }

    // ---------------------------------------------------------------------
    // The requests
    // ---------------------------------------------------------------------

    pub async fn join(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
        params: JoinParams,
        principal: HeartbeatPrincipal,
    ) -> JoinOutcome {
        if let Err(code) = self
            .ready(&shard, partition)
            .and_then(|_| self.check_session_timeout(params.session_timeout_ms))
            .and_then(|_| self.share_group_conflict(&group_id).map_or(Ok(()), Err))
        {
            return JoinOutcome::error(code, &params.member_id);
        }
        if self
            .consumer_state(&group_id)
            .is_some_and(|s| s != crate::group::consumer::ConsumerGroupState::Empty)
        {
            return self
                .classic_join_to_consumer(&shard, partition, &group_id, params, principal)
                .await;
        }
        if let Err(code) = self.consumer_join_check(&shard, partition, &group_id).await {
            return JoinOutcome::error(code, &params.member_id);
        }
        let now = now_ms();
        let limits = self.limits();
        let (step, persist) = {
            let mut groups = self.groups.borrow_mut();
            if !groups.contains_key(&group_id) {
                if !params.member_id.is_empty() {
                    return JoinOutcome::error(error_code::UNKNOWN_MEMBER_ID, &params.member_id);
                }
                groups.insert(group_id.clone(), Group::new(group_id.clone(), now));
                self.group_partition
                    .borrow_mut()
                    .insert(group_id.clone(), partition);
            }
            let g = groups.get_mut(&group_id).expect("inserted above");
            let member_id = params.member_id.clone();
            let r = g.join(params, now, &limits);
            if let (JoinStep::Answer(o), _) = &r {
                if o.error_code != error_code::NONE
                    && o.error_code != error_code::MEMBER_ID_REQUIRED
                {
                    tracing::debug!(group = %group_id, member = %member_id, code = o.error_code, "JoinGroup refused");
                }
            }
            r
        };
        if persist {
            self.spawn_persist_group(&shard, partition, group_id.clone());
        }
        match step {
            JoinStep::Answer(o) => o,
            JoinStep::AnswerAfterStore(o) => {
                match self.store_group(&shard, partition, &group_id).await {
                    Ok(()) => o,
                    Err(code) => JoinOutcome::error(code, &o.member_id),
                }
            }
            JoinStep::Wait(rx) => rx
                .await
                .unwrap_or_else(|_| JoinOutcome::error(error_code::COORDINATOR_NOT_AVAILABLE, "")),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub async fn sync(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
        member_id: String,
        instance_id: Option<String>,
        generation: i32,
        protocol_type: Option<String>,
        protocol_name: Option<String>,
        assignments: Vec<(String, Bytes)>,
    ) -> SyncOutcome {
        if let Err(code) = self.ready(&shard, partition) {
            return SyncOutcome::error(code);
        }
        if self.is_consumer_group(&group_id) {
            return self.classic_sync_to_consumer(
                &shard,
                &group_id,
                &member_id,
                instance_id.as_deref(),
                generation,
                protocol_type,
                protocol_name,
            );
        }
        let now = now_ms();
        let step = {
            let mut groups = self.groups.borrow_mut();
            let Some(g) = groups.get_mut(&group_id) else {
                return SyncOutcome::error(error_code::UNKNOWN_MEMBER_ID);
            };
            g.sync(
                &member_id,
                instance_id.as_deref(),
                generation,
                protocol_type.as_deref(),
                protocol_name.as_deref(),
                assignments,
                now,
            )
        };
        let wait = match step {
            SyncStep::Answer(o) => return o,
            SyncStep::Wait(rx) => rx,
            SyncStep::Persist {
                generation,
                value,
                assignments,
                wait,
            } => {
                let key = RecordKey::Group {
                    group: group_id.clone(),
                };
                let limits = self.limits();
                let stored = assignments.clone();
                let gid = group_id.clone();
                let r = self
                    .write(
                        &shard,
                        partition,
                        vec![(key.encode(), Some(value.encode()))],
                        move |groups| {
                            if let Some(g) = groups.get_mut(&gid) {
                                g.finish_sync(generation, stored, Ok(()), now_ms(), &limits);
                            }
                        },
                    )
                    .await;
                if let Err(code) = r {
                    if let Some(g) = self.groups.borrow_mut().get_mut(&group_id) {
                        g.finish_sync(generation, assignments, Err(code), now_ms(), &limits);
                    }
                }
                wait
            }
        };
        wait.await
            .unwrap_or_else(|_| SyncOutcome::error(error_code::REBALANCE_IN_PROGRESS))
    }

    pub async fn heartbeat(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
        member_id: String,
        instance_id: Option<String>,
        generation: i32,
    ) -> i16 {
        if let Err(code) = self.ready(&shard, partition) {
            return code;
        }
        if self.is_consumer_group(&group_id) {
            return self.classic_heartbeat_to_consumer(
                &group_id,
                &member_id,
                instance_id.as_deref(),
                generation,
            );
        }
        let mut groups = self.groups.borrow_mut();
        let Some(g) = groups.get_mut(&group_id) else {
            return error_code::UNKNOWN_MEMBER_ID;
        };
        g.heartbeat(&member_id, instance_id.as_deref(), generation, now_ms())
    }

    /// Removes members; returns each one's error code, or a group-level
    /// error.
    pub async fn leave(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
        members: Vec<(String, Option<String>)>,
    ) -> Result<Vec<i16>, i16> {
        self.ready(&shard, partition)?;
        if self.is_consumer_group(&group_id) {
            return self
                .classic_leave_to_consumer(&shard, partition, &group_id, &members)
                .await;
        }
        let limits = self.limits();
        let now = now_ms();
        let mut persist = false;
        let codes = {
            let mut groups = self.groups.borrow_mut();
            let Some(g) = groups.get_mut(&group_id) else {
                return Ok(vec![error_code::UNKNOWN_MEMBER_ID; members.len()]);
            };
            members
                .iter()
                .map(|(id, instance)| {
                    let (code, p) = g.leave(id, instance.as_deref(), now, &limits);
                    persist |= p;
                    code
                })
                .collect()
        };
        if persist {
            self.spawn_persist_group(&shard, partition, group_id);
        }
        Ok(codes)
    }

    /// Commits offsets; answers per topic and partition.
    #[allow(clippy::too_many_arguments)]
    pub async fn commit(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
        generation: i32,
        member_id: String,
        instance_id: Option<String>,
        topics: Vec<(String, Vec<CommitPartition>)>,
        api_version: i16,
    ) -> Vec<(String, Vec<(i32, i16)>)> {
        let all = |code: i16| {
            topics
                .iter()
                .map(|(t, ps)| (t.clone(), ps.iter().map(|p| (p.partition, code)).collect()))
                .collect::<Vec<_>>()
        };
        if let Err(code) = self.ready(&shard, partition) {
            return all(code);
        }
        let now = now_ms();
        let consumer = self.consumer_commit_check(
            &shard,
            &group_id,
            &member_id,
            generation,
            CommitRequest::Offsets { api_version },
            &topics,
        );
        // Kafka's doCommitOffsets checks.
        let group_error = if let Some(code) = consumer {
            let mut groups = self.groups.borrow_mut();
            if code == error_code::NONE && !groups.contains_key(&group_id) {
                // The offsets-only entry that holds a consumer group's
                // commits (see consumer.rs).
                groups.insert(group_id.clone(), Group::new(group_id.clone(), now));
            }
            (code != error_code::NONE).then_some(code)
        } else {
            let mut groups = self.groups.borrow_mut();
            match groups.get_mut(&group_id) {
                None if generation < 0 => {
                    groups.insert(group_id.clone(), Group::new(group_id.clone(), now));
                    self.group_partition
                        .borrow_mut()
                        .insert(group_id.clone(), partition);
                    None
                }
                None => Some(error_code::ILLEGAL_GENERATION),
                Some(g) if g.is(GroupState::Dead) => Some(error_code::COORDINATOR_NOT_AVAILABLE),
                Some(g) if generation < 0 && g.is(GroupState::Empty) => None,
                Some(g) if g.is(GroupState::CompletingRebalance) => {
                    Some(error_code::REBALANCE_IN_PROGRESS)
                }
                Some(g) => {
                    match g.validate_member(&member_id, instance_id.as_deref(), generation) {
                        Ok(()) => {
                            if let Some(m) = g.members.get_mut(&member_id) {
                                m.session_deadline_ms = now + m.session_timeout_ms as i64;
                            }
                            None
                        }
                        Err(code) => Some(code),
                    }
                }
            }
        };
        if let Some(code) = group_error {
            return all(code);
        }
        let (mut results, records, updates) =
            self.offset_commit_records(&shard, &group_id, &topics, now);
        let gid = group_id.clone();
        let written = self
            .write(&shard, partition, records, move |groups| {
                if let Some(g) = groups.get_mut(&gid) {
                    g.offsets.extend(updates);
                }
            })
            .await;
        if let Err(code) = written {
            for (_, parts) in &mut results {
                for (_, c) in parts.iter_mut() {
                    if *c == error_code::NONE {
                        *c = code;
                    }
                }
            }
        }
        results
    }

    /// Committed offsets of `topics` (`None`: every committed partition).
    pub async fn fetch_offsets(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
        topics: Option<Vec<(String, Vec<i32>)>>,
        require_stable: bool,
        member: Option<(String, i32)>,
    ) -> Result<Vec<(String, Vec<FetchedOffset>)>, i16> {
        self.ready(&shard, partition)?;
        self.consumer_fetch_check(&group_id, member.as_ref().map(|(m, e)| (m.as_str(), *e)))?;
        let groups = self.groups.borrow();
        let group = groups.get(&group_id);
        let fetched = |topic: &str, p: i32| match group
            .and_then(|g| g.offsets.get(&(topic.to_string(), p)))
        {
            // KIP-447: a transaction's offset may still change; a consumer
            // that asks for stable offsets waits until it is decided.
            _ if require_stable && self.has_pending_offset(&group_id, topic, p) => FetchedOffset {
                partition: p,
                offset: -1,
                leader_epoch: -1,
                metadata: String::new(),
                error_code: error_code::UNSTABLE_OFFSET_COMMIT,
            },
            Some(v) => FetchedOffset {
                partition: p,
                offset: v.offset,
                leader_epoch: v.leader_epoch,
                metadata: v.metadata.clone(),
                error_code: error_code::NONE,
            },
            None => FetchedOffset {
                partition: p,
                offset: -1,
                leader_epoch: -1,
                metadata: String::new(),
                error_code: error_code::NONE,
            },
        };
        Ok(match topics {
            Some(topics) => topics
                .into_iter()
                .map(|(t, ps)| {
                    let out = ps.iter().map(|&p| fetched(&t, p)).collect();
                    (t, out)
                })
                .collect(),
            None => {
                let mut by_topic: BTreeMap<String, Vec<FetchedOffset>> = BTreeMap::new();
                if let Some(g) = group {
                    for (t, p) in g.offsets.keys() {
                        by_topic.entry(t.clone()).or_default().push(fetched(t, *p));
                    }
                }
                by_topic.into_iter().collect()
            }
        })
    }

    pub async fn describe(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
    ) -> DescribedGroup {
        if let Err(code) = self.ready(&shard, partition) {
            return DescribedGroup {
                error_code: code,
                ..DescribedGroup::default()
            };
        }
        let groups = self.groups.borrow();
        // A consumer group is not a classic group: Kafka describes it as
        // a group that does not exist.
        let classic = groups
            .get(&group_id)
            .filter(|_| !self.is_consumer_group(&group_id));
        let Some(g) = classic else {
            return DescribedGroup {
                error_code: error_code::NONE,
                state: GroupState::Dead.name().to_string(),
                ..DescribedGroup::default()
            };
        };
        let protocol = g.protocol.clone().unwrap_or_default();
        let mut members: Vec<_> = g.members.values().collect();
        members.sort_by_key(|m| m.joined_seq);
        // Kafka shows metadata and assignments only once they are settled.
        let stable = g.is(GroupState::Stable);
        DescribedGroup {
            error_code: error_code::NONE,
            state: g.state.name().to_string(),
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            protocol: if stable {
                protocol.clone()
            } else {
                String::new()
            },
            members: members
                .into_iter()
                .map(|m| DescribedMember {
                    member_id: m.id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: if stable {
                        m.metadata_for(&protocol)
                    } else {
                        Bytes::new()
                    },
                    assignment: if stable {
                        m.assignment.clone()
                    } else {
                        Bytes::new()
                    },
                })
                .collect(),
        }
    }

    /// The groups of the `__consumer_offsets` partitions this shard leads;
    /// an error if one of them is loading. As in Kafka, a follower replica
    /// is not this broker's to list (its leader lists its groups), so it is
    /// skipped rather than answered NOT_COORDINATOR: the admin client asks
    /// every broker and fails the whole listing on any error but
    /// COORDINATOR_LOAD_IN_PROGRESS, which it retries.
    pub fn list(self: Rc<Self>, shard: &Rc<Shard>) -> Result<Vec<ListedGroup>, i16> {
        // Every unloaded partition starts loading now, not one per call.
        let mut not_ready = None;
        let mut led = std::collections::BTreeSet::new();
        for tp in shard.local_partitions() {
            if tp.topic == OFFSETS_TOPIC && crate::node::state::led_log(shard, &tp).is_some() {
                match self.ready(shard, tp.partition) {
                    Ok(()) => {
                        led.insert(tp.partition);
                    }
                    Err(code) => not_ready = Some(code),
                }
            }
        }
        if let Some(code) = not_ready {
            return Err(code);
        }
        // Only the groups of partitions led here now: a load that finished
        // after its leadership moved away may have left some behind.
        let groups = self.groups.borrow();
        let partition_of = self.group_partition.borrow();
        let mut listed: Vec<ListedGroup> = groups
            .values()
            .filter(|g| partition_of.get(&g.id).is_some_and(|p| led.contains(p)))
            .filter(|g| !g.is(GroupState::Dead) && !self.is_consumer_group(&g.id))
            .map(|g| ListedGroup {
                group_id: g.id.clone(),
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                state: g.state.name().to_string(),
                group_type: CLASSIC_GROUP_TYPE,
            })
            .collect();
        drop(partition_of);
        listed.extend(self.list_consumer(&led));
        listed.extend(self.list_share(&led));
        Ok(listed)
    }
}

/// Tombstones for the given offsets of a group.
fn tombstones_for(
    group_id: &str,
    keys: impl Iterator<Item = (String, i32)>,
) -> Vec<(Bytes, Option<Bytes>)> {
    keys.map(|(topic, partition)| {
        let key = RecordKey::Offset {
            group: group_id.to_string(),
            topic,
            partition,
        };
        (key.encode(), None)
    })
    .collect()
}

/// Tombstones for offsets and for the group's metadata: the group is gone.
fn tombstones(g: &Group, keys: impl Iterator<Item = (String, i32)>) -> Vec<(Bytes, Option<Bytes>)> {
    let mut r = tombstones_for(&g.id, keys);
    r.push((
        RecordKey::Group {
            group: g.id.clone(),
        }
        .encode(),
        None,
    ));
    r
}
