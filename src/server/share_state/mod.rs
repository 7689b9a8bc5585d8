//! The share coordinator of one shard (KIP-932; Kafka's
//! `ShareCoordinatorService`): the durable delivery state of share
//! partitions, kept in the `__share_group_state` partitions this shard
//! leads.
//!
//! A share partition (group, topic id, partition) belongs to one partition
//! of `__share_group_state` (Kafka's hash, `group/share/state_store.rs`),
//! so to the one shard that owns it. Its leader serves the five state APIs
//! (Initialize, Read, Write, Delete, ReadSummary): the handlers and the
//! persister (`persister.rs`, what share-partition leaders call) reach it
//! with `submit_to`, from other brokers over the inter-broker listener.
//!
//! Per partition: Loading, then Loaded once the log is replayed into a
//! [`ShareStateStore`] (on becoming its leader; an undecodable record is
//! logged and skipped); a write permit, so one change at a time; and every
//! change is appended and replicated first (`node/internal_log.rs`), then
//! replayed into memory, so memory is never ahead of the log. A write that
//! may or may not have reached the log (a timeout) drops the partition's
//! memory and loads it again rather than guessing.
//!
//! The topic is not compacted; every
//! `share.coordinator.state.topic.prune.interval.ms` the log start offset of
//! each loaded partition moves up to the oldest latest snapshot of its
//! share partitions (`prune.rs`), the way DeleteRecords moves it.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;

use crate::broker_config::share_coordinator::ShareCoordinatorConfig;
use crate::error::LogError;
use crate::group::share::partition::StateWrite;
use crate::group::share::state_records::{SharePartitionKey, ShareStateRecord};
use crate::group::share::state_store::{ReadAnswer, ShareStateStore, SummaryAnswer};
use crate::metadata::SHARE_GROUP_STATE_TOPIC;
use crate::node::internal_log::{append_replicated, scan_to_end, InternalWriteError, Scanned};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::server::replication::kafka_peer::KafkaPeer;
use crate::shard::partition_table::ShardId;
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;

pub mod persister;
pub mod prune;
pub mod remote;
pub mod topic;

pub use self::prune::start;

/// How long a failed load of a partition waits before it is tried again.
const LOAD_RETRY_BACKOFF: Duration = Duration::from_secs(1);

/// Idle connections kept per coordinator broker and shard for the
/// persister's calls to other brokers; more connect anew and are dropped
/// after use.
const IDLE_PEERS_MAX: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoadState {
    Loading,
    Loaded,
}

/// One `__share_group_state` partition this shard leads.
struct StatePartition {
    state: Cell<LoadState>,
    /// The partition's leader epoch when this broker became its leader.
    leader_epoch: i32,
    store: RefCell<ShareStateStore>,
    /// One change at a time: plan, append, replay.
    write: glommio::sync::Semaphore,
}

/// One state API call for one share partition, as the handlers and the
/// persister hand it to the coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateOp {
    Initialize {
        state_epoch: i32,
        start_offset: i64,
    },
    Read {
        leader_epoch: i32,
    },
    Write {
        state_epoch: i32,
        leader_epoch: i32,
        write: StateWrite,
    },
    Delete,
    Summary {
        leader_epoch: i32,
    },
}

impl StateOp {
    /// The state API the operation is, for the log.
    fn name(&self) -> &'static str {
        match self {
            StateOp::Initialize { .. } => "Initialize",
            StateOp::Read { .. } => "Read",
            StateOp::Write { .. } => "Write",
            StateOp::Delete => "Delete",
            StateOp::Summary { .. } => "ReadSummary",
        }
    }
}

/// The coordinator's answer to a [`StateOp`] that succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateAnswer {
    Done,
    Read(ReadAnswer),
    Summary(SummaryAnswer),
}

pub struct ShareStateCoordinator {
    config: ShareCoordinatorConfig,
    partitions: RefCell<HashMap<i32, Rc<StatePartition>>>,
    /// Idle connections to other brokers' coordinators, by address.
    idle_peers: RefCell<HashMap<String, Vec<KafkaPeer>>>,
}

impl ShareStateCoordinator {
    fn new(config: ShareCoordinatorConfig) -> Self {
        ShareStateCoordinator {
            config,
            partitions: RefCell::new(HashMap::new()),
            idle_peers: RefCell::new(HashMap::new()),
        }
    }

    /// This shard's coordinator.
    pub fn of(shard: &Shard) -> Rc<ShareStateCoordinator> {
        match shard.extension::<ShareStateCoordinator>() {
            Some(c) => c,
            None => {
                let c = Rc::new(ShareStateCoordinator::new(
                    BrokerState::of(shard).config.share_coordinator.clone(),
                ));
                shard.set_extension(c.clone());
                c
            }
        }
    }

    pub fn config(&self) -> &ShareCoordinatorConfig {
        &self.config
    }

    /// An idle connection to `addr`, or a new one from `connect`.
    pub fn take_peer(&self, addr: &str, connect: impl FnOnce() -> KafkaPeer) -> KafkaPeer {
        self.idle_peers
            .borrow_mut()
            .get_mut(addr)
            .and_then(Vec::pop)
            .unwrap_or_else(connect)
    }

    /// Keeps a connection whose last exchange succeeded for the next one.
    pub fn return_peer(&self, peer: KafkaPeer) {
        let mut idle = self.idle_peers.borrow_mut();
        let pool = idle.entry(peer.addr().to_string()).or_default();
        if pool.len() < IDLE_PEERS_MAX {
            pool.push(peer);
        }
    }

    fn tp(partition: i32) -> TopicPartition {
        TopicPartition::new(SHARE_GROUP_STATE_TOPIC.to_string(), partition)
    }

    fn write_timeout(&self) -> Duration {
        Duration::from_millis(self.config.write_timeout_ms)
    }

    /// A loaded partition, or the error to answer.
    fn ready(&self, shard: &Shard, partition: i32) -> Result<Rc<StatePartition>, i16> {
        if crate::node::state::led_log(shard, &Self::tp(partition)).is_none() {
            return Err(error_code::NOT_COORDINATOR);
        }
        match self.partitions.borrow().get(&partition) {
            Some(p) if p.state.get() == LoadState::Loaded => Ok(p.clone()),
            Some(_) => Err(error_code::COORDINATOR_LOAD_IN_PROGRESS),
            // The image applier starts the load when the leadership arrives.
            None => Err(error_code::NOT_COORDINATOR),
        }
    }

    /// Whether `p` is still this partition's current incarnation.
    fn is_current(&self, partition: i32, p: &Rc<StatePartition>) -> bool {
        self.partitions
            .borrow()
            .get(&partition)
            .is_some_and(|now| Rc::ptr_eq(now, p))
    }

    /// The partitions this shard has loaded, with their stores' prune
    /// points (for `prune.rs`).
    fn loaded(&self) -> Vec<(i32, Rc<StatePartition>)> {
        self.partitions
            .borrow()
            .iter()
            .filter(|(_, p)| p.state.get() == LoadState::Loaded)
            .map(|(n, p)| (*n, p.clone()))
            .collect()
    }

    /// This broker became the leader of `partition` at `leader_epoch`:
    /// replay it.
    pub fn on_became_leader(self: &Rc<Self>, shard: &Rc<Shard>, partition: i32, leader_epoch: i32) {
        if self
            .partitions
            .borrow()
            .get(&partition)
            .is_some_and(|p| p.leader_epoch == leader_epoch)
        {
            return;
        }
        self.start_load(shard, partition, leader_epoch);
    }

    fn start_load(self: &Rc<Self>, shard: &Rc<Shard>, partition: i32, leader_epoch: i32) {
        self.unload(partition);
        let p = Rc::new(StatePartition {
            state: Cell::new(LoadState::Loading),
            leader_epoch,
            store: RefCell::new(ShareStateStore::new()),
            write: glommio::sync::Semaphore::new(1),
        });
        self.partitions.borrow_mut().insert(partition, p.clone());
        let (me, shard) = (self.clone(), shard.clone());
        glommio::spawn_local(async move {
            let started = std::time::Instant::now();
            // Writes wait for the load: they need the whole state.
            let permit = p.write.acquire_permit(1).await;
            match load(&shard, partition).await {
                Ok((records, store)) => {
                    if !me.is_current(partition, &p) {
                        return;
                    }
                    let shares = store.len();
                    *p.store.borrow_mut() = store;
                    p.state.set(LoadState::Loaded);
                    drop(permit);
                    tracing::info!(
                        partition,
                        records,
                        share_partitions = shares,
                        leader_epoch,
                        ms = started.elapsed().as_millis() as u64,
                        "loaded share state from {SHARE_GROUP_STATE_TOPIC}"
                    );
                }
                Err(e) => {
                    if !me.is_current(partition, &p) {
                        return;
                    }
                    me.partitions.borrow_mut().remove(&partition);
                    drop(permit);
                    tracing::error!(
                        partition,
                        "loading {SHARE_GROUP_STATE_TOPIC} failed: {e}; retrying in {LOAD_RETRY_BACKOFF:?}"
                    );
                    glommio::timer::sleep(LOAD_RETRY_BACKOFF).await;
                    me.reload(&shard, partition);
                }
            }
        })
        .detach();
    }

    /// Loads `partition` again if this broker still leads it.
    fn reload(self: &Rc<Self>, shard: &Rc<Shard>, partition: i32) {
        let epoch = crate::node::replicas::led_partition(shard, &Self::tp(partition))
            .map(|led| led.state.borrow().leader_epoch());
        if let Some(epoch) = epoch {
            self.start_load(shard, partition, epoch);
        }
    }

    /// This broker no longer leads `partition`: its share partitions are
    /// forgotten and answer NOT_COORDINATOR.
    pub fn on_lost_leadership(&self, partition: i32) {
        self.unload(partition);
    }

    fn unload(&self, partition: i32) {
        if let Some(p) = self.partitions.borrow_mut().remove(&partition) {
            tracing::info!(
                partition,
                share_partitions = p.store.borrow().len(),
                "unloaded the share state of {SHARE_GROUP_STATE_TOPIC} partition {partition}"
            );
        }
    }

    /// Serves one state API call for `key`, whose coordinator partition is
    /// `partition`, on this (its owning) shard.
    pub async fn serve(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        key: &SharePartitionKey,
        op: StateOp,
    ) -> Result<StateAnswer, i16> {
        let p = self.ready(shard, partition)?;
        let _permit = p
            .write
            .acquire_permit(1)
            .await
            .map_err(|_| error_code::COORDINATOR_NOT_AVAILABLE)?;
        if !self.is_current(partition, &p) {
            return Err(error_code::NOT_COORDINATOR);
        }
        let op_name = op.name();
        let per_snapshot = self.config.snapshot_update_records_per_snapshot;
        let now = now_ms();
        let (records, answer) = {
            let store = p.store.borrow();
            match op {
                StateOp::Initialize {
                    state_epoch,
                    start_offset,
                } => (
                    vec![store.initialize(key, state_epoch, start_offset, now)?],
                    StateAnswer::Done,
                ),
                StateOp::Write {
                    state_epoch,
                    leader_epoch,
                    write,
                } => (
                    vec![store.write(key, state_epoch, leader_epoch, &write, per_snapshot, now)?],
                    StateAnswer::Done,
                ),
                StateOp::Read { leader_epoch } => {
                    let mut read = store.read(key, leader_epoch, per_snapshot, now)?;
                    let records = read.leader_epoch_record.take().into_iter().collect();
                    (records, StateAnswer::Read(read))
                }
                StateOp::Delete => (store.delete(key)?, StateAnswer::Done),
                StateOp::Summary { .. } => (Vec::new(), StateAnswer::Summary(store.summary(key)?)),
            }
        };
        if !records.is_empty() {
            self.append(shard, partition, &p, &records).await?;
        }
        tracing::debug!(
            partition,
            group = %key.group_id,
            share_partition = key.partition,
            "share state {op_name} served: {records:?}"
        );
        Ok(answer)
    }

    /// Appends `records` in one batch, waits until replicated, then replays
    /// them. Called under the partition's write permit.
    async fn append(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        p: &Rc<StatePartition>,
        records: &[ShareStateRecord],
    ) -> Result<(), i16> {
        let encoded: Vec<(Bytes, Option<Bytes>)> = records
            .iter()
            .map(|r| (r.encode_key(), r.encode_value()))
            .collect();
        let written = append_replicated(
            shard,
            &Self::tp(partition),
            &encoded,
            None,
            self.write_timeout(),
        )
        .await;
        if !self.is_current(partition, p) {
            return Err(error_code::NOT_COORDINATOR);
        }
        match written {
            Ok(info) => {
                assert_eq!(
                    info.last_offset - info.first_offset + 1,
                    records.len() as i64,
                    "one offset per share state record"
                );
                let mut store = p.store.borrow_mut();
                for (i, r) in records.iter().enumerate() {
                    store.replay(info.first_offset + i as i64, r);
                }
                Ok(())
            }
            Err(InternalWriteError::NotLeader) => Err(error_code::NOT_COORDINATOR),
            Err(InternalWriteError::Unavailable) => Err(error_code::COORDINATOR_NOT_AVAILABLE),
            Err(err) => {
                // Timed out or refused by the log: the records may still be
                // in it. Load the partition again rather than guess.
                tracing::warn!(
                    partition,
                    "writing share state failed ({err:?}); reloading the partition"
                );
                self.reload(shard, partition);
                Err(error_code::COORDINATOR_NOT_AVAILABLE)
            }
        }
    }
}

/// Replays a partition from its log start to its log end.
async fn load(shard: &Rc<Shard>, partition: i32) -> Result<(usize, ShareStateStore), LogError> {
    let tp = ShareStateCoordinator::tp(partition);
    let Some(log) = shard.local_log(&tp) else {
        return Err(LogError::Offline {
            partition: tp.to_string(),
            reason: "the partition is not open on this shard".into(),
        });
    };
    let mut store = ShareStateStore::new();
    let mut skipped = 0usize;
    // The record's offset: the topic is not compacted, so the records of a
    // batch have consecutive offsets from its base offset.
    let mut batch_at = (i64::MIN, 0i64);
    let records = scan_to_end(&log, &tp, |scanned| {
        let Scanned::Record { header, key, value } = scanned else {
            return;
        };
        if batch_at.0 != header.base_offset {
            batch_at = (header.base_offset, 0);
        }
        let offset = header.base_offset.saturating_add(batch_at.1);
        batch_at.1 += 1;
        let Some(key) = key else {
            skipped += 1;
            return;
        };
        let decoded = ShareStateRecord::decode(
            Bytes::copy_from_slice(key),
            value.map(Bytes::copy_from_slice),
        );
        match decoded {
            Ok(Some(record)) => store.replay(offset, &record),
            Ok(None) => {}
            Err(e) => {
                skipped += 1;
                tracing::warn!(
                    partition,
                    offset,
                    "skipping an undecodable share state record: {e}"
                );
            }
        }
    })
    .await?;
    if skipped > 0 {
        tracing::warn!(
            partition,
            skipped,
            "records of {SHARE_GROUP_STATE_TOPIC} skipped while loading"
        );
    }
    Ok((records, store))
}

/// Where a share partition's coordinator runs, if `__share_group_state`
/// exists: its partition, that partition's leader, and the shard that owns
/// it here.
pub fn locate(shard: &Shard, key: &SharePartitionKey) -> Option<(i32, i32, ShardId)> {
    let image = BrokerState::of(shard).image();
    let topic = image.topic(SHARE_GROUP_STATE_TOPIC)?;
    let partition =
        crate::group::share::state_store::partition_for(key, topic.partitions.len() as i32);
    let leader = topic.partitions.get(&partition).map_or(-1, |p| p.leader);
    let tp = ShareStateCoordinator::tp(partition);
    Some((partition, leader, shard.owner(&tp)))
}

/// Serves `op` on the shard of this broker that owns `key`'s coordinator
/// partition. NOT_COORDINATOR when the topic does not exist or this broker
/// does not lead the partition.
pub async fn on_coordinator(
    shard: &Rc<Shard>,
    key: SharePartitionKey,
    op: StateOp,
) -> Result<StateAnswer, i16> {
    let Some((partition, _, owner)) = locate(shard, &key) else {
        return Err(error_code::NOT_COORDINATOR);
    };
    shard
        .submit_to(owner, move |s| async move {
            let c = ShareStateCoordinator::of(&s);
            c.serve(&s, partition, &key, op).await
        })
        .await
        .map_err(|_| error_code::COORDINATOR_NOT_AVAILABLE)?
}
