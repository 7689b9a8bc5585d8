//! The transaction coordinator of one shard: the transactional ids whose
//! `__transaction_state` partition this shard leads.
//!
//! An id lives on one partition (Kafka's `abs(hash) % partitions`), so on
//! one shard; requests about it run there (`on_coordinator`). Its state
//! is in memory, and every change is first written to its partition and
//! replicated (`node/internal_log.rs`), then applied: while the write is in
//! flight the id's *pending* state makes every other request for it wait
//! with CONCURRENT_TRANSACTIONS. The decisions are pure
//! (`core/src/transaction/coordinator.rs`); this shell writes them, sends
//! the markers (`markers.rs`) and runs the timeouts (`timers.rs`).
//!
//! **Coordinator epoch.** The leader epoch of the id's partition: every
//! marker carries it, and a partition refuses markers from an older
//! coordinator than the last it saw, so a deposed coordinator cannot end a
//! transaction its successor decided otherwise.
//!
//! **Failover.** A new leader of a partition replays it (`load`) and sends
//! the markers again for every transaction it finds in PrepareCommit or
//! PrepareAbort, then completes them: a commit decided before the failover
//! is carried out by the next coordinator.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use futures_channel::oneshot;

use crate::broker_config::transaction::TransactionConfig;
use crate::error::LogError;
use crate::metadata::TRANSACTION_STATE_TOPIC;
use crate::node::internal_log::{append_replicated, scan_to_end, InternalWriteError, Scanned};
use crate::node::state::BrokerState;
use crate::protocol::error_code;
use crate::server::controller;
use crate::server::replication::kafka_peer::KafkaPeer;
use crate::shard::partition_table::ShardId;
use crate::shard::shard::{now_ms, Shard};
use crate::topic_partition::TopicPartition;
use crate::transaction::coordinator::{self as decide, Decision, TxnEntry};
use crate::transaction::log_record;
use crate::transaction::metadata::{TxnMetadata, TxnState};

pub mod markers;
pub mod timers;
pub mod topic;
pub mod verification;

pub use self::timers::start;

/// How long a failed load of a partition waits before it is tried again.
const LOAD_RETRY_BACKOFF: Duration = Duration::from_secs(1);

/// How long a write to `__transaction_state` waits to be replicated: Kafka's
/// `transaction.state.log.write` timeout is the request's, this is its
/// default (`request.timeout.ms`).
const STATE_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// The cluster's finalized `transaction.version` (KIP-890): what a fencing
/// or timeout abort is written under. A client's own requests say their
/// version themselves (EndTxn v5, AddPartitionsToTxn v4+ from leaders).
pub fn cluster_transaction_version(shard: &Shard) -> i16 {
    BrokerState::of(shard)
        .image()
        .feature_level(crate::metadata::features::TRANSACTION_VERSION)
}

/// Where an id's coordinator runs, if `__transaction_state` exists.
pub fn locate(shard: &Shard, transactional_id: &str) -> Option<(i32, ShardId)> {
    let image = BrokerState::of(shard).image();
    let topic = image.topic(TRANSACTION_STATE_TOPIC)?;
    let partition = log_record::partition_for(transactional_id, topic.partitions.len() as i32);
    let tp = TopicPartition::new(TRANSACTION_STATE_TOPIC.to_string(), partition);
    Some((partition, shard.owner(&tp)))
}

/// Runs `f` on the coordinator of `transactional_id`. Without
/// `__transaction_state` (FindCoordinator creates it) the answer is
/// NOT_COORDINATOR: the client looks for its coordinator again.
pub async fn on_coordinator<R, F, Fut>(
    shard: &Rc<Shard>,
    transactional_id: &str,
    f: F,
) -> Result<R, i16>
where
    R: Send + 'static,
    F: FnOnce(Rc<TxnCoordinator>, Rc<Shard>, i32) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = R> + 'static,
{
    let Some((partition, owner)) = locate(shard, transactional_id) else {
        return Err(error_code::NOT_COORDINATOR);
    };
    shard
        .submit_to(owner, move |s| async move {
            let c = TxnCoordinator::of(&s);
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

/// One `__transaction_state` partition this shard leads.
struct StatePartition {
    state: Cell<LoadState>,
    /// The partition's leader epoch when this broker became its leader.
    coordinator_epoch: i32,
}

/// The answer to EndTxn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndAnswer {
    pub error_code: i16,
    /// The producer id and epoch for the next transaction (EndTxn v5).
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl EndAnswer {
    fn ok(producer_id: i64, producer_epoch: i16) -> Self {
        EndAnswer {
            error_code: error_code::NONE,
            producer_id,
            producer_epoch,
        }
    }

    fn error(code: i16) -> Self {
        EndAnswer {
            error_code: code,
            producer_id: -1,
            producer_epoch: -1,
        }
    }
}

/// The answer to InitProducerId.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitAnswer {
    pub error_code: i16,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl InitAnswer {
    fn error(code: i16) -> Self {
        InitAnswer {
            error_code: code,
            producer_id: -1,
            producer_epoch: -1,
        }
    }
}

/// An id as DescribeTransactions and ListTransactions report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedTxn {
    pub metadata: TxnMetadata,
}

pub struct TxnCoordinator {
    config: TransactionConfig,
    entries: RefCell<HashMap<String, TxnEntry>>,
    /// Which partition each loaded id is on.
    id_partition: RefCell<HashMap<String, i32>>,
    partitions: RefCell<HashMap<i32, Rc<StatePartition>>>,
    /// Ids whose first write is in flight: not listed or described yet.
    creating: RefCell<HashSet<String>>,
    /// Ids whose decided transaction has a task writing its markers.
    completing: RefCell<HashSet<String>>,
    /// Adds of the next transaction held until that task ends, by id.
    after_completion: RefCell<HashMap<String, Vec<oneshot::Sender<()>>>>,
    /// When timed-out transactions were last looked for.
    last_abort_check: Cell<std::time::Instant>,
    /// Idle connections to other brokers' coordinators, by address, for
    /// this shard's partition leaders' verifications (`verification.rs`).
    idle_peers: RefCell<HashMap<String, Vec<KafkaPeer>>>,
}

/// Longest an add of a version 2 producer's next transaction is held for
/// the previous transaction's markers before it is answered
/// CONCURRENT_TRANSACTIONS (and the leader falls back to retrying, as
/// Kafka's does): markers normally take one replication round trip; far
/// longer means a partition is unavailable.
const ADD_WAITS_FOR_MARKERS_MAX: Duration = Duration::from_millis(1000);

/// Idle connections kept per coordinator broker and shard: enough for the
/// verifications a shard runs at once in the common case; more connect
/// anew and are dropped after use.
const IDLE_PEERS_MAX: usize = 4;

impl TxnCoordinator {
    fn new(config: TransactionConfig) -> Self {
        TxnCoordinator {
            config,
            entries: RefCell::new(HashMap::new()),
            id_partition: RefCell::new(HashMap::new()),
            partitions: RefCell::new(HashMap::new()),
            creating: RefCell::new(HashSet::new()),
            completing: RefCell::new(HashSet::new()),
            after_completion: RefCell::new(HashMap::new()),
            last_abort_check: Cell::new(std::time::Instant::now()),
            idle_peers: RefCell::new(HashMap::new()),
        }
    }

    /// This shard's coordinator.
    pub fn of(shard: &Shard) -> Rc<TxnCoordinator> {
        match shard.extension::<TxnCoordinator>() {
            Some(c) => c,
            None => {
                let c = Rc::new(TxnCoordinator::new(
                    BrokerState::of(shard).config.transaction.clone(),
                ));
                shard.set_extension(c.clone());
                c
            }
        }
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
        TopicPartition::new(TRANSACTION_STATE_TOPIC.to_string(), partition)
    }

    /// The coordinator epoch of a loaded partition, or the error to answer.
    fn ready(&self, shard: &Shard, partition: i32) -> Result<i32, i16> {
        if crate::node::state::led_log(shard, &Self::tp(partition)).is_none() {
            return Err(error_code::NOT_COORDINATOR);
        }
        match self.partitions.borrow().get(&partition) {
            Some(p) if p.state.get() == LoadState::Loaded => Ok(p.coordinator_epoch),
            Some(_) => Err(error_code::COORDINATOR_LOAD_IN_PROGRESS),
            // Not loaded on this broker yet: the image applier starts the
            // load when the leadership arrives.
            None => Err(error_code::NOT_COORDINATOR),
        }
    }

    /// Whether this coordinator still leads `partition` at `epoch`: work
    /// started under an older leadership stops.
    fn still_leading(&self, partition: i32, epoch: i32) -> bool {
        self.partitions
            .borrow()
            .get(&partition)
            .is_some_and(|p| p.coordinator_epoch == epoch)
    }

    /// This broker became the leader of `partition` at `leader_epoch`: load
    /// its ids, then finish the transactions it finds decided.
    pub fn on_became_leader(self: &Rc<Self>, shard: &Rc<Shard>, partition: i32, leader_epoch: i32) {
        if self
            .partitions
            .borrow()
            .get(&partition)
            .is_some_and(|p| p.coordinator_epoch == leader_epoch)
        {
            return;
        }
        self.unload(partition);
        self.partitions.borrow_mut().insert(
            partition,
            Rc::new(StatePartition {
                state: Cell::new(LoadState::Loading),
                coordinator_epoch: leader_epoch,
            }),
        );
        let (me, shard) = (self.clone(), shard.clone());
        glommio::spawn_local(async move {
            let started = std::time::Instant::now();
            match me.load(&shard, partition, leader_epoch).await {
                Ok((records, ids)) => {
                    if !me.still_leading(partition, leader_epoch) {
                        return;
                    }
                    if let Some(p) = me.partitions.borrow().get(&partition) {
                        p.state.set(LoadState::Loaded);
                    }
                    tracing::info!(
                        partition,
                        records,
                        ids,
                        coordinator_epoch = leader_epoch,
                        ms = started.elapsed().as_millis() as u64,
                        "loaded transaction state from {TRANSACTION_STATE_TOPIC}"
                    );
                    me.resume_decided(&shard, partition, leader_epoch);
                }
                                Err(e) => {
                    if !me.still_leading(partition, leader_epoch) {
                        return;
                    }
                    me.partitions.borrow_mut().remove(&partition);
                    tracing::error!(
                        partition,
                        "loading {TRANSACTION_STATE_TOPIC} failed: {e}; retrying in {LOAD_RETRY_BACKOFF:?}"
                    );
                    // Its ids answer NOT_COORDINATOR meanwhile; the
                    // transactions it decided must still be finished.
                    glommio::timer::sleep(LOAD_RETRY_BACKOFF).await;
                    let tp = Self::tp(partition);
                    let epoch = crate::node::replicas::led_partition(&shard, &tp)
                        .map(|led| led.state.borrow().leader_epoch());
                    if let Some(epoch) = epoch {
                        me.on_became_leader(&shard, partition, epoch);
                    }
                }
            }
        })
        .detach();
    }

    /// This broker no longer leads `partition`: its ids are forgotten
    /// (their requests get NOT_COORDINATOR), and marker work for them stops.
    pub fn on_lost_leadership(&self, partition: i32) {
        self.unload(partition);
    }

    fn unload(&self, partition: i32) {
        if self.partitions.borrow_mut().remove(&partition).is_none() {
            return;
        }
        let gone: Vec<String> = self
            .id_partition
            .borrow()
            .iter()
            .filter(|(_, &p)| p == partition)
            .map(|(id, _)| id.clone())
            .collect();
        let mut entries = self.entries.borrow_mut();
        let mut where_ = self.id_partition.borrow_mut();
        for id in &gone {
            entries.remove(id);
            where_.remove(id);
        }
        tracing::info!(
            partition,
            ids = gone.len(),
            "unloaded the transactional ids of {TRANSACTION_STATE_TOPIC} partition {partition}"
        );
    }

    /// Replays a partition: the last value of each id wins (a tombstone
    /// removes it). Returns (records, ids) loaded.
    async fn load(
        &self,
        shard: &Rc<Shard>,
        partition: i32,
        epoch: i32,
    ) -> Result<(usize, usize), LogError> {
        let tp = Self::tp(partition);
        let Some(log) = shard.local_log(&tp) else {
            return Err(LogError::Offline {
                partition: tp.to_string(),
                reason: "the partition is not open on this shard".into(),
            });
        };
        let mut latest: HashMap<String, Option<TxnMetadata>> = HashMap::new();
        let records = scan_to_end(&log, &tp, |scanned| {
            let Scanned::Record { key, value, .. } = scanned else {
                return;
            };
            let Some(key) = key else { return };
            let id = match log_record::decode_key(Bytes::copy_from_slice(key)) {
                Ok(id) => id,
                Err(e) => {
                    tracing::warn!(partition, "skipping an undecodable transaction log key: {e}");
                    return;
                }
            };
            let value = match value {
                None => None,
                Some(v) => match log_record::decode_value(&id, Bytes::copy_from_slice(v)) {
                    Ok(m) => Some(m),
                    Err(e) => {
                        tracing::warn!(partition, transactional_id = %id, "skipping an undecodable transaction log value: {e}");
                        return;
                    }
                },
            };
            latest.insert(id, value);
        })
        .await?;
        if !self.still_leading(partition, epoch) {
            return Ok((records, 0));
        }
        let mut entries = self.entries.borrow_mut();
        let mut where_ = self.id_partition.borrow_mut();
        let mut ids = 0;
        for (id, m) in latest {
            // Kafka writes Dead only as it removes an id, and never writes
            // PrepareEpochFence: neither is a state to serve.
            if let Some(m) =
                m.filter(|m| !matches!(m.state, TxnState::Dead | TxnState::PrepareEpochFence))
            {
                entries.insert(id.clone(), TxnEntry::new(m));
                where_.insert(id, partition);
                ids += 1;
            }
        }
        Ok((records, ids))
    }

    /// Carries out every transaction of `partition` whose outcome is
    /// decided (PrepareCommit, PrepareAbort): after a failover, what the
    /// previous coordinator decided.
    fn resume_decided(self: &Rc<Self>, shard: &Rc<Shard>, partition: i32, epoch: i32) {
        let decided: Vec<String> = self
            .entries
            .borrow()
            .iter()
            .filter(|(id, e)| {
                e.metadata.state.is_prepare()
                    && self.id_partition.borrow().get(*id) == Some(&partition)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in decided {
            tracing::info!(transactional_id = %id, partition, "resuming a decided transaction's markers");
            self.spawn_complete(shard, partition, epoch, id);
        }
    }

    fn entry(&self, id: &str) -> Option<TxnEntry> {
        self.entries.borrow().get(id).cloned()
    }

    /// Writes `next` as `id`'s state and applies it once replicated. The
    /// id's pending state covers the write. Returns the coordinator epoch
    /// it was written under; `Err` is the code to answer. A write that
    /// completes after the partition was unloaded (or reloaded at another
    /// epoch) touches nothing: the state it would change is gone.
    async fn write_transition(
        &self,
        shard: &Rc<Shard>,
        partition: i32,
        next: TxnMetadata,
    ) -> Result<i32, i16> {
        let id = next.transactional_id.clone();
        let epoch = self.ready(shard, partition)?;
        let mut created_here = false;
        {
            let mut entries = self.entries.borrow_mut();
            match entries.get_mut(&id) {
                Some(e) => {
                    if let Err(why) = decide::check_transition(&e.metadata, &next) {
                        tracing::error!(transactional_id = %id, "refusing an illegal transition: {why}");
                        return Err(error_code::UNKNOWN_SERVER_ERROR);
                    }
                    if e.pending.is_some() {
                        return Err(error_code::CONCURRENT_TRANSACTIONS);
                    }
                    e.pending = Some(next.state);
                }
                None => {
                    // A new id: it exists (pending) from here, so that a
                    // concurrent InitProducerId waits for this one.
                    let mut placeholder = TxnEntry::new(next.clone());
                    placeholder.pending = Some(next.state);
                    entries.insert(id.clone(), placeholder);
                    self.id_partition.borrow_mut().insert(id.clone(), partition);
                    self.creating.borrow_mut().insert(id.clone());
                    created_here = true;
                }
            }
        }
        let record = (
            log_record::encode_key(&id),
            Some(log_record::encode_value(&next)),
        );
        let written = append_replicated(
            shard,
            &Self::tp(partition),
            &[record],
            None,
            STATE_WRITE_TIMEOUT,
        )
        .await;
        if created_here {
            self.creating.borrow_mut().remove(&id);
        }
        if !self.still_leading(partition, epoch) {
            return Err(error_code::NOT_COORDINATOR);
        }
        let mut entries = self.entries.borrow_mut();
        let Some(e) = entries.get_mut(&id) else {
            // Unloaded meanwhile (the leadership moved).
            return Err(error_code::NOT_COORDINATOR);
        };
        e.pending = None;
        match written {
            Ok(_) => {
                e.metadata = next;
                Ok(epoch)
            }
            Err(err) => {
                let code = match err {
                    InternalWriteError::NotLeader => error_code::NOT_COORDINATOR,
                    InternalWriteError::Timeout => error_code::COORDINATOR_NOT_AVAILABLE,
                    InternalWriteError::Unavailable => error_code::COORDINATOR_NOT_AVAILABLE,
                    InternalWriteError::Log(e) => {
                        tracing::error!(transactional_id = %id, "writing transaction state failed: {e}");
                        error_code::COORDINATOR_NOT_AVAILABLE
                    }
                };
                // A new id whose first write failed does not exist.
                if created_here {
                    entries.remove(&id);
                    self.id_partition.borrow_mut().remove(&id);
                }
                Err(code)
            }
        }
    }

    /// Sends the markers of `id`'s decided transaction and completes it,
    /// in the background; at most one task per id.
    fn spawn_complete(self: &Rc<Self>, shard: &Rc<Shard>, partition: i32, epoch: i32, id: String) {
        if !self.completing.borrow_mut().insert(id.clone()) {
            return;
        }
        let (me, shard) = (self.clone(), shard.clone());
        glommio::spawn_local(async move {
            me.complete(&shard, partition, epoch, &id).await;
            me.completing.borrow_mut().remove(&id);
            // Done, or given up: the held adds decide again either way.
            for waiter in me
                .after_completion
                .borrow_mut()
                .remove(&id)
                .unwrap_or_default()
            {
                let _ = waiter.send(());
            }
        })
        .detach();
    }

    /// Waits until `id`'s markers task ends, or `limit` passes, if it has
    /// one. `false` if there was nothing to wait for.
    async fn wait_for_completion(&self, id: &str, limit: Duration) -> bool {
        if !self.completing.borrow().contains(id) {
            return false;
        }
        let (tx, rx) = oneshot::channel();
        self.after_completion
            .borrow_mut()
            .entry(id.to_string())
            .or_default()
            .push(tx);
        futures_lite::future::or(
            async {
                let _ = rx.await;
            },
            glommio::timer::sleep(limit),
        )
        .await;
        true
    }

    /// Restarts the completion of decided transactions that have no task
    /// (one gave up on a write error): checked with the timeouts.
    fn resume_stalled(self: &Rc<Self>, shard: &Rc<Shard>) {
        let stalled: Vec<(String, i32)> = {
            let entries = self.entries.borrow();
            let where_ = self.id_partition.borrow();
            let completing = self.completing.borrow();
            entries
                .iter()
                .filter(|(id, e)| {
                    e.pending.is_none()
                        && e.metadata.state.is_prepare()
                        && !completing.contains(*id)
                })
                .filter_map(|(id, _)| where_.get(id).map(|p| (id.clone(), *p)))
                .collect()
        };
        for (id, partition) in stalled {
            if let Ok(epoch) = self.ready(shard, partition) {
                tracing::info!(transactional_id = %id, "resuming a decided transaction's markers");
                self.spawn_complete(shard, partition, epoch, id);
            }
        }
    }

    /// Markers, then CompleteCommit or CompleteAbort. Retries until done,
    /// or until this coordinator no longer leads the partition.
    async fn complete(&self, shard: &Rc<Shard>, partition: i32, epoch: i32, id: &str) {
        let Some(entry) = self.entry(id) else { return };
        let m = entry.metadata;
        if !m.state.is_prepare() {
            return;
        }
        let still = || self.still_leading(partition, epoch);
        if !markers::write_markers(shard, &m, epoch, &still).await {
            return;
        }
        let mut backoff = markers::RETRY_BACKOFF;
        loop {
            if !still() {
                return;
            }
            let current = self.entry(id);
            let Some(current) = current.filter(|c| c.metadata == m) else {
                return;
            };
            if current.pending.is_some() {
                glommio::timer::sleep(backoff).await;
                continue;
            }
            match self
                .write_transition(shard, partition, decide::complete(&m, now_ms()))
                .await
            {
                Ok(_) => {
                    tracing::debug!(transactional_id = %id, state = ?m.state, "transaction complete");
                    return;
                }
                Err(code) if code == error_code::NOT_COORDINATOR => return,
                Err(code) => {
                    tracing::warn!(transactional_id = %id, code, "writing the transaction's completion failed; retrying");
                    glommio::timer::sleep(backoff).await;
                    backoff = (backoff * 2).min(markers::RETRY_BACKOFF_MAX);
                }
            }
        }
    }

    // ---------------------------------------------------------------------
    // The requests
    // ---------------------------------------------------------------------

    /// InitProducerId with a transactional id.
    pub async fn init_producer_id(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        transactional_id: String,
        txn_timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> InitAnswer {
        if let Err(code) = self.ready(&shard, partition) {
            return InitAnswer::error(code);
        }
        let mut fresh = None;
        loop {
            let entry = self.entry(&transactional_id);
            let decision = decide::init_producer_id(
                entry.as_ref(),
                &transactional_id,
                txn_timeout_ms,
                self.config.max_timeout_ms,
                expected,
                fresh,
                cluster_transaction_version(&shard),
                now_ms(),
            );
            match decision {
                Decision::Answer(code) => return InitAnswer::error(code),
                Decision::NeedProducerId => match controller::allocate_producer_id(&shard).await {
                    Ok(id) => fresh = Some(id),
                    Err(e) => {
                        tracing::warn!("allocating a producer id failed: {e}");
                        return InitAnswer::error(e.code);
                    }
                },
                Decision::Write(next) => {
                    let answer = InitAnswer {
                        error_code: error_code::NONE,
                        producer_id: next.producer_id,
                        producer_epoch: next.producer_epoch,
                    };
                    return match self.write_transition(&shard, partition, next).await {
                        Ok(_) => answer,
                        Err(code) => InitAnswer::error(code),
                    };
                }
                Decision::FenceAndAbort(next) => {
                    tracing::info!(
                        transactional_id = %transactional_id,
                        producer_id = next.producer_id,
                        epoch = next.producer_epoch,
                        "a new producer instance fences the open transaction: aborting it"
                    );
                    return match self.write_transition(&shard, partition, next).await {
                        Ok(epoch) => {
                            self.spawn_complete(&shard, partition, epoch, transactional_id);
                            // The client retries until the abort completes.
                            InitAnswer::error(error_code::CONCURRENT_TRANSACTIONS)
                        }
                        Err(code) => InitAnswer::error(code),
                    };
                }
            }
        }
    }

    /// AddPartitionsToTxn: one code for all partitions. From a client
    /// (v0-3, AddOffsetsToTxn) `client_transaction_version` is 0; from a
    /// partition leader adding a partition for a version 2 producer, 2.
    #[allow(clippy::too_many_arguments)]
    pub async fn add_partitions(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        transactional_id: String,
        producer_id: i64,
        producer_epoch: i16,
        partitions: BTreeSet<TopicPartition>,
        client_transaction_version: i16,
    ) -> i16 {
        if let Err(code) = self.ready(&shard, partition) {
            return code;
        }
        let mut entry = self.entry(&transactional_id);
        // The next transaction of a version 2 producer is let in once the
        // previous one's markers are written: held until then (bounded)
        // rather than answered CONCURRENT_TRANSACTIONS for the leader to
        // poll, which costs its first produce up to a retry step.
        if decide::waits_for_markers(entry.as_ref(), producer_id, producer_epoch)
            && self
                .wait_for_completion(&transactional_id, ADD_WAITS_FOR_MARKERS_MAX)
                .await
        {
            if let Err(code) = self.ready(&shard, partition) {
                return code;
            }
            entry = self.entry(&transactional_id);
        }
        match decide::add_partitions(
            entry.as_ref(),
            producer_id,
            producer_epoch,
            &partitions,
            client_transaction_version,
            now_ms(),
        ) {
            Decision::Answer(code) => code,
            Decision::Write(next) => match self.write_transition(&shard, partition, next).await {
                Ok(_) => error_code::NONE,
                Err(code) => code,
            },
            other => {
                tracing::error!("AddPartitionsToTxn decided {other:?}");
                error_code::UNKNOWN_SERVER_ERROR
            }
        }
    }

    /// AddPartitionsToTxn with `verify_only` (KIP-890 part 1): whether each
    /// partition is in the id's open transaction; adds nothing. `Err` is the
    /// one code for all of them.
    pub fn verify_partitions(
        &self,
        shard: &Shard,
        partition: i32,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
    ) -> Result<Vec<(TopicPartition, i16)>, i16> {
        self.ready(shard, partition)?;
        let entry = self.entry(transactional_id);
        Ok(partitions
            .iter()
            .map(|tp| {
                let code =
                    decide::verify_partition(entry.as_ref(), producer_id, producer_epoch, tp);
                (tp.clone(), code)
            })
            .collect())
    }

    /// EndTxn: the outcome is written (PrepareCommit or PrepareAbort) before
    /// the answer; the markers and the completion follow in the background.
    /// Answers with the producer id and epoch the client uses next (under
    /// transaction version 2 the Prepare bumped the epoch).
    #[allow(clippy::too_many_arguments)]
    pub async fn end_txn(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        transactional_id: String,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        transaction_version: i16,
    ) -> EndAnswer {
        if let Err(code) = self.ready(&shard, partition) {
            return EndAnswer::error(code);
        }
        let mut fresh = None;
        loop {
            let entry = self.entry(&transactional_id);
            let decision = decide::end_txn(
                entry.as_ref(),
                producer_id,
                producer_epoch,
                commit,
                transaction_version,
                fresh,
                now_ms(),
            );
            return match decision {
                Decision::Answer(code) => match entry.filter(|_| code == error_code::NONE) {
                    // A retry of an EndTxn that completed: the ids it gave.
                    Some(e) => EndAnswer::ok(e.metadata.producer_id, e.metadata.producer_epoch),
                    None => EndAnswer::error(code),
                },
                Decision::NeedProducerId => match controller::allocate_producer_id(&shard).await {
                    Ok(id) => {
                        fresh = Some(id);
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!("allocating a producer id failed: {e}");
                        EndAnswer::error(e.code)
                    }
                },
                Decision::Write(next) => {
                    let (next_id, next_epoch) = decide::end_txn_answer_ids(&next);
                    match self.write_transition(&shard, partition, next).await {
                        Ok(epoch) => {
                            self.spawn_complete(&shard, partition, epoch, transactional_id);
                            EndAnswer::ok(next_id, next_epoch)
                        }
                        Err(code) => EndAnswer::error(code),
                    }
                }
                Decision::FenceAndAbort(_) => {
                    tracing::error!("EndTxn decided {decision:?}");
                    EndAnswer::error(error_code::UNKNOWN_SERVER_ERROR)
                }
            };
        }
    }

    /// The ids of this shard's loaded partitions, for ListTransactions.
    pub fn list(&self) -> Vec<TxnMetadata> {
        let creating = self.creating.borrow();
        self.entries
            .borrow()
            .iter()
            .filter(|(id, _)| !creating.contains(*id))
            .map(|(_, e)| e.metadata.clone())
            .collect()
    }

    /// One id's state, for DescribeTransactions.
    pub fn describe(
        &self,
        shard: &Shard,
        partition: i32,
        transactional_id: &str,
    ) -> Result<TxnMetadata, i16> {
        self.ready(shard, partition)?;
        if self.creating.borrow().contains(transactional_id) {
            return Err(error_code::TRANSACTIONAL_ID_NOT_FOUND);
        }
        self.entry(transactional_id)
            .map(|e| e.metadata)
            .ok_or(error_code::TRANSACTIONAL_ID_NOT_FOUND)
    }
}
