//! The simulated transaction coordinator: the shell of
//! `src/server/txn_coordinator/` (mod.rs's requests, `write_transition`,
//! `load` and `resume_decided`, markers.rs's rounds, timers.rs's timeout
//! aborts) around the real decisions of
//! `pinlog::transaction::coordinator`.
//!
//! Its `__transaction_state` partition is `log`: records encoded with the
//! real `log_record::encode_value`, replayed with `decode_value` by the next
//! coordinator after a crash. A transition is applied only once its record
//! is in the log ("replicated"); a crash decides with the RNG, for each
//! write in flight, whether it made it.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use pinlog::protocol::error_code;
use pinlog::topic_partition::TopicPartition;
use pinlog::transaction::coordinator::{self as decide, Decision, TxnEntry};
use pinlog::transaction::log_record;
use pinlog::transaction::metadata::{TxnMetadata, TxnState, TRANSACTION_VERSION_2};

use super::*;

/// The clients' `transaction.timeout.ms`.
pub const TXN_TIMEOUT_MS: i32 = 3_000;
/// `transaction.max.timeout.ms`.
const MAX_TXN_TIMEOUT_MS: i32 = 900_000;
/// `transaction.abort.timed.out.transaction.cleanup.interval.ms`, scaled.
pub const ABORT_CHECK_MS: Time = 500;
/// How long a `__transaction_state` write takes to replicate.
const STATE_WRITE_MS: (u64, u64) = (2, 12);
/// How long a new coordinator takes to replay the log.
const LOAD_MS: Time = 50;
/// From a crash to the next coordinator's election.
const FAILOVER_MS: (u64, u64) = (200, 1_500);
/// One marker round waits this long for its answers (markers.rs's
/// MARKER_WRITE_TIMEOUT, scaled); then backoff from 100 ms to 1 s.
const MARKER_ROUND_TIMEOUT_MS: Time = 500;
const MARKER_BACKOFF_MS: (Time, Time) = (100, 1_000);

/// One record of the simulated `__transaction_state` log.
#[derive(Debug, Clone)]
pub struct StateRecord {
    pub key: Bytes,
    pub value: Bytes,
    /// Ground truth beside the record (not read by the coordinator's
    /// decisions): the transaction whose period this state belongs to.
    pub owner: Option<TxnGid>,
}

/// What follows a replicated write (the code after `write_transition`'s
/// await in the shell).
#[derive(Debug, Clone)]
enum Then {
    InitAnswer { to: Node, req: u64 },
    FencedInit { to: Node, req: u64 },
    AddAnswer { to: Node, req: u64 },
    VerifyAnswer { to: Node, req: u64 },
    EndAnswer { to: Node, req: u64, ids: (i64, i16) },
    Completed,
    TimeoutAbort,
}

#[derive(Debug, Clone)]
struct Write {
    next: TxnMetadata,
    owner: Option<TxnGid>,
    then: Then,
}

/// A decided transaction's markers being written (markers.rs's
/// `write_markers`, then the completion).
#[derive(Debug, Clone)]
struct MarkerTask {
    m: TxnMetadata,
    owner: Option<TxnGid>,
    remaining: BTreeSet<usize>,
    round: u64,
    answers: BTreeMap<usize, i16>,
    backoff: Time,
}

pub struct Coordinator {
    /// A leader of `__transaction_state` exists.
    pub up: bool,
    pub loaded: bool,
    /// The leader epoch of `__transaction_state`: markers carry it.
    pub epoch: i32,
    entries: BTreeMap<String, TxnEntry>,
    owners: BTreeMap<String, Option<TxnGid>>,
    writes: BTreeMap<u64, Write>,
    next_write: u64,
    tasks: BTreeMap<String, MarkerTask>,
    /// The replicated log: survives crashes.
    pub log: Vec<StateRecord>,
    /// The controller's producer id allocator: survives crashes.
    next_producer_id: i64,
}

impl Coordinator {
    pub fn new() -> Self {
        Coordinator {
            up: true,
            loaded: true,
            epoch: 0,
            entries: BTreeMap::new(),
            owners: BTreeMap::new(),
            writes: BTreeMap::new(),
            next_write: 0,
            tasks: BTreeMap::new(),
            log: Vec::new(),
            next_producer_id: 1_000,
        }
    }

    /// Whether work started at `epoch` may go on (the shell's
    /// `still_leading`).
    pub fn leads_at(&self, epoch: i32) -> bool {
        self.up && self.epoch == epoch
    }

    /// Every id's state, for the final checks.
    pub fn entries(&self) -> impl Iterator<Item = &TxnEntry> {
        self.entries.values()
    }

    pub fn busy(&self) -> usize {
        self.writes.len() + self.tasks.len()
    }

    /// An id with a history: its record is in the log already, at
    /// `epoch`, with nothing open (the run starts near the end of its
    /// epochs, to reach the move to a new producer id).
    pub fn seed_id(&mut self, tid: &str, epoch: i16) {
        let mut m = TxnMetadata::new(
            tid.to_string(),
            self.allocate_producer_id(),
            TXN_TIMEOUT_MS,
            0,
        );
        m.producer_epoch = epoch;
        self.log.push(StateRecord {
            key: log_record::encode_key(tid),
            value: log_record::encode_value(&m),
            owner: None,
        });
        self.entries.insert(tid.to_string(), TxnEntry::new(m));
        self.owners.insert(tid.to_string(), None);
    }

    fn allocate_producer_id(&mut self) -> i64 {
        self.next_producer_id += 1;
        self.next_producer_id
    }
}

fn tp(partition: usize) -> TopicPartition {
    TopicPartition::new(TOPIC, partition as i32)
}

fn partitions_of(m: &TxnMetadata) -> BTreeSet<usize> {
    m.partitions.iter().map(|t| t.partition as usize).collect()
}

impl Sim {
    pub fn coordinator_receive(&mut self, from: Node, msg: Msg) {
        if !self.coordinator.up {
            self.trace(format!("coordinator: none elected, {msg:?} is lost"));
            return;
        }
        match msg {
            Msg::MarkerAnswer {
                tid,
                round,
                coordinator_epoch,
                partition,
                code,
            } => self.marker_answer(&tid, round, coordinator_epoch, partition, code),
            _ if !self.coordinator.loaded => {
                let code = error_code::COORDINATOR_LOAD_IN_PROGRESS;
                self.answer_error(from, &msg, code);
            }
            Msg::InitProducerId { req, tid, expected } => {
                self.handle_init(from, req, tid, expected)
            }
            Msg::AddPartitions {
                req,
                tid,
                pid,
                epoch,
                partitions,
                txn,
                instance,
            } => {
                let set: BTreeSet<TopicPartition> = partitions.iter().map(|p| tp(*p)).collect();
                let code = self.handle_add(&tid, pid, epoch, &set, 0, txn, instance, from, req);
                if let Some(code) = code {
                    self.send(Node::Coordinator, from, Msg::AddAnswer { req, code });
                }
            }
            Msg::Verify {
                req,
                tid,
                pid,
                epoch,
                partition,
                add,
                txn,
                instance,
            } => {
                let code = if add {
                    let set = BTreeSet::from([tp(partition)]);
                    self.handle_add(
                        &tid,
                        pid,
                        epoch,
                        &set,
                        TRANSACTION_VERSION_2,
                        txn,
                        instance,
                        from,
                        req,
                    )
                } else {
                    let entry = self.coordinator.entries.get(&tid);
                    let code = decide::verify_partition(entry, pid, epoch, &tp(partition));
                    if code == error_code::NONE {
                        self.check_joins_owner(&tid, txn, "verification");
                        self.check_not_zombie(instance, "a verified produce");
                    }
                    Some(code)
                };
                if let Some(code) = code {
                    self.send(Node::Coordinator, from, Msg::VerifyAnswer { req, code });
                }
            }
            Msg::EndTxn {
                req,
                tid,
                pid,
                epoch,
                commit,
                tv,
                txn,
                instance,
            } => self.handle_end(from, req, &tid, pid, epoch, commit, tv, txn, instance),
            other => panic!("the coordinator got {other:?}"),
        }
    }

    fn answer_error(&mut self, to: Node, msg: &Msg, code: i16) {
        let answer = match msg {
            Msg::InitProducerId { req, .. } => Msg::InitAnswer {
                req: *req,
                code,
                pid: -1,
                epoch: -1,
            },
            Msg::AddPartitions { req, .. } => Msg::AddAnswer { req: *req, code },
            Msg::Verify { req, .. } => Msg::VerifyAnswer { req: *req, code },
            Msg::EndTxn { req, .. } => Msg::EndAnswer {
                req: *req,
                code,
                pid: -1,
                epoch: -1,
            },
            other => panic!("no error answer to {other:?}"),
        };
        self.send(Node::Coordinator, to, answer);
    }

    fn handle_init(&mut self, from: Node, req: u64, tid: String, expected: Option<(i64, i16)>) {
        let mut fresh = None;
        // At most two rounds: the second has the fresh producer id.
        for _ in 0..2 {
            let decision = decide::init_producer_id(
                self.coordinator.entries.get(&tid),
                &tid,
                TXN_TIMEOUT_MS,
                MAX_TXN_TIMEOUT_MS,
                expected,
                fresh,
                self.config.cluster_tv,
                self.now,
            );
            self.trace(format!(
                "coordinator: InitProducerId {tid} {expected:?} -> {decision:?}"
            ));
            let (next, then) = match decision {
                Decision::Answer(code) => {
                    let answer = Msg::InitAnswer {
                        req,
                        code,
                        pid: -1,
                        epoch: -1,
                    };
                    self.send(Node::Coordinator, from, answer);
                    return;
                }
                Decision::NeedProducerId => {
                    fresh = Some(self.coordinator.allocate_producer_id());
                    continue;
                }
                Decision::Write(next) => (next, Then::InitAnswer { to: from, req }),
                Decision::FenceAndAbort(next) => {
                    self.truth.stats.fence_aborts += 1;
                    (next, Then::FencedInit { to: from, req })
                }
            };
            let owner = if next.state == TxnState::Empty {
                None
            } else {
                self.coordinator.owners.get(&tid).copied().flatten()
            };
            if let Err(code) = self.write_transition(next, owner, then) {
                self.answer_error(from, &Msg::InitProducerId { req, tid, expected }, code);
            }
            return;
        }
        panic!("InitProducerId asked for a producer id twice");
    }

    /// AddPartitionsToTxn from a client (version 1) or a partition leader
    /// (version 2's implicit add). `None`: the answer follows the write.
    #[allow(clippy::too_many_arguments)]
    fn handle_add(
        &mut self,
        tid: &str,
        pid: i64,
        epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
        client_tv: i16,
        txn: TxnGid,
        instance: InstanceId,
        from: Node,
        req: u64,
    ) -> Option<i16> {
        let entry = self.coordinator.entries.get(tid);
        let was_ongoing = entry.is_some_and(|e| e.metadata.state == TxnState::Ongoing);
        let decision = decide::add_partitions(entry, pid, epoch, partitions, client_tv, self.now);
        self.trace(format!(
            "coordinator: AddPartitions {tid} pid {pid} epoch {epoch} {:?} (txn {txn}) -> {decision:?}",
            partitions_of_set(partitions)
        ));
        match decision {
            Decision::Answer(code) => {
                if code == error_code::NONE {
                    self.check_joins_owner(tid, txn, "AddPartitionsToTxn");
                    self.check_not_zombie(instance, "an AddPartitionsToTxn");
                }
                if client_tv >= TRANSACTION_VERSION_2 {
                    self.check_next_identity_waits(tid, pid, epoch, code, "an implicit add");
                }
                Some(code)
            }
            Decision::Write(next) => {
                let owner = if was_ongoing {
                    self.check_joins_owner(tid, txn, "AddPartitionsToTxn");
                    self.coordinator.owners.get(tid).copied().flatten()
                } else {
                    Some(txn)
                };
                self.check_not_zombie(instance, "an AddPartitionsToTxn");
                let then = if client_tv >= TRANSACTION_VERSION_2 {
                    Then::VerifyAnswer { to: from, req }
                } else {
                    Then::AddAnswer { to: from, req }
                };
                self.write_transition(next, owner, then).err()
            }
            other => panic!("AddPartitionsToTxn decided {other:?}"),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn handle_end(
        &mut self,
        from: Node,
        req: u64,
        tid: &str,
        pid: i64,
        epoch: i16,
        commit: bool,
        tv: i16,
        txn: TxnGid,
        instance: InstanceId,
    ) {
        let mut fresh = None;
        for _ in 0..2 {
            let entry = self.coordinator.entries.get(tid).cloned();
            let was_ongoing = entry
                .as_ref()
                .is_some_and(|e| e.metadata.state == TxnState::Ongoing);
            let decision = decide::end_txn(entry.as_ref(), pid, epoch, commit, tv, fresh, self.now);
            self.trace(format!(
                "coordinator: EndTxn {tid} pid {pid} epoch {epoch} commit {commit} tv {tv} (txn {txn}) -> {decision:?}"
            ));
            let answer = match decision {
                Decision::Answer(code) => {
                    let ids = match entry.filter(|_| code == error_code::NONE) {
                        // A retry of an EndTxn that completed: the ids it gave.
                        Some(e) => (e.metadata.producer_id, e.metadata.producer_epoch),
                        None => (-1, -1),
                    };
                    if tv >= TRANSACTION_VERSION_2 {
                        self.check_next_identity_waits(tid, pid, epoch, code, "an EndTxn");
                    }
                    Msg::EndAnswer {
                        req,
                        code,
                        pid: ids.0,
                        epoch: ids.1,
                    }
                }
                Decision::NeedProducerId => {
                    fresh = Some(self.coordinator.allocate_producer_id());
                    continue;
                }
                Decision::Write(next) => {
                    let owner = if was_ongoing {
                        let owner = self.coordinator.owners.get(tid).copied().flatten();
                        if owner != Some(txn) {
                            self.violation(format!(
                                "KAFKA-17754: an EndTxn(commit={commit}) of txn {txn} decided txn {owner:?} of {tid}"
                            ));
                        }
                        owner
                    } else {
                        // Version 2 aborts with nothing open: its own period.
                        Some(txn)
                    };
                    self.check_not_zombie(instance, "an EndTxn");
                    let ids = decide::end_txn_answer_ids(&next);
                    match self.write_transition(next, owner, Then::EndAnswer { to: from, req, ids })
                    {
                        Ok(()) => return,
                        Err(code) => Msg::EndAnswer {
                            req,
                            code,
                            pid: -1,
                            epoch: -1,
                        },
                    }
                }
                Decision::FenceAndAbort(_) => panic!("EndTxn decided {decision:?}"),
            };
            self.send(Node::Coordinator, from, answer);
            return;
        }
        panic!("EndTxn asked for a producer id twice");
    }

    /// Under version 2, while an EndTxn's markers are written, a request
    /// with the ids that EndTxn answered comes from the live producer's
    /// next transaction: it must wait (CONCURRENT_TRANSACTIONS), never be
    /// fenced (PRODUCER_FENCED, or INVALID_PRODUCER_ID_MAPPING after a move
    /// to a new producer id), which would be fatal to it.
    fn check_next_identity_waits(
        &mut self,
        tid: &str,
        pid: i64,
        epoch: i16,
        code: i16,
        what: &str,
    ) {
        if !matches!(
            code,
            error_code::PRODUCER_FENCED | error_code::INVALID_PRODUCER_ID_MAPPING
        ) {
            return;
        }
        let Some(e) = self.coordinator.entries.get(tid) else {
            return;
        };
        if e.metadata.state.is_prepare() && decide::end_txn_answer_ids(&e.metadata) == (pid, epoch)
        {
            let state = e.metadata.state;
            self.violation(format!(
                "{what} of {tid} with the ids its last EndTxn answered ({pid}, {epoch}) got {code} in {state:?}: the live producer was fenced"
            ));
        }
    }

    /// A request of transaction `txn` was let into the id's open
    /// transaction: it must be that transaction's own.
    fn check_joins_owner(&mut self, tid: &str, txn: TxnGid, what: &str) {
        let owner = self.coordinator.owners.get(tid).copied().flatten();
        if owner.is_some_and(|o| o != txn) {
            self.violation(format!(
                "a {what} of txn {txn} joined txn {owner:?} of {tid} (KAFKA-17754)"
            ));
        }
    }

    /// Invariant 5: once an application's newer instance completed its
    /// InitProducerId, nothing of an older instance is accepted.
    pub fn check_not_zombie(&mut self, instance: InstanceId, what: &str) {
        let app = self.instances[instance].app;
        if let Some(&(newest, since)) = self.truth.latest_init.get(&app) {
            if instance < newest && self.now > since {
                self.violation(format!(
                    "zombie: {what} of instance {instance} accepted after instance {newest} initialised at {since}"
                ));
            }
        }
    }

    /// The shell's `write_transition` up to the append: check, mark
    /// pending, write. `Err` is the code to answer at once.
    fn write_transition(
        &mut self,
        next: TxnMetadata,
        owner: Option<TxnGid>,
        then: Then,
    ) -> Result<(), i16> {
        let tid = next.transactional_id.clone();
        match self.coordinator.entries.get_mut(&tid) {
            Some(e) => {
                if let Err(why) = decide::check_transition(&e.metadata, &next) {
                    self.violation(format!("illegal transition: {why}"));
                    return Err(error_code::UNKNOWN_SERVER_ERROR);
                }
                if e.pending.is_some() {
                    return Err(error_code::CONCURRENT_TRANSACTIONS);
                }
                e.pending = Some(next.state);
            }
            None => {
                // A new id exists (pending) from here on, so that a
                // concurrent InitProducerId waits for this one.
                let mut placeholder = TxnEntry::new(next.clone());
                placeholder.pending = Some(next.state);
                self.coordinator.entries.insert(tid.clone(), placeholder);
            }
        }
        self.coordinator.next_write += 1;
        let write = self.coordinator.next_write;
        self.trace(format!(
            "coordinator: writing {tid} {:?} epoch {} partitions {:?} owner {owner:?}",
            next.state,
            next.producer_epoch,
            partitions_of(&next)
        ));
        self.coordinator
            .writes
            .insert(write, Write { next, owner, then });
        let delay = self.rng.between(STATE_WRITE_MS.0, STATE_WRITE_MS.1) as Time;
        let coordinator_epoch = self.coordinator.epoch;
        self.after(
            delay,
            Event::CoordWriteDone {
                coordinator_epoch,
                write,
            },
        );
        Ok(())
    }

    /// A record reaches the replicated log: the ground truth learns a
    /// Prepare*'s outcome from it.
    fn append_state_record(&mut self, m: &TxnMetadata, owner: Option<TxnGid>) {
        self.coordinator.log.push(StateRecord {
            key: log_record::encode_key(&m.transactional_id),
            value: log_record::encode_value(m),
            owner,
        });
        if !m.state.is_prepare() {
            return;
        }
        let commit = m.state == TxnState::PrepareCommit;
        let Some(owner) = owner else {
            self.violation(format!(
                "{:?} of {} belongs to no transaction",
                m.state, m.transactional_id
            ));
            return;
        };
        match self.truth.decided.insert(owner, commit) {
            Some(before) if before != commit => self.violation(format!(
                "txn {owner} decided {} after {}",
                outcome(commit),
                outcome(before)
            )),
            Some(_) => {}
            None if commit => self.truth.stats.decided_commit += 1,
            None => self.truth.stats.decided_abort += 1,
        }
        self.trace(format!("truth: txn {owner} decided {}", outcome(commit)));
    }

    pub fn coordinator_write_done(&mut self, coordinator_epoch: i32, write: u64) {
        if !self.coordinator.leads_at(coordinator_epoch) {
            // The crash decided this write's fate already.
            return;
        }
        let Some(w) = self.coordinator.writes.remove(&write) else {
            return;
        };
        self.append_state_record(&w.next, w.owner);
        let tid = w.next.transactional_id.clone();
        let entry = self
            .coordinator
            .entries
            .get_mut(&tid)
            .expect("a pending write's id is loaded");
        entry.pending = None;
        if entry.metadata.producer_id != w.next.producer_id {
            self.truth.stats.producer_id_moves += 1;
        }
        entry.metadata = w.next.clone();
        self.coordinator.owners.insert(tid.clone(), w.owner);
        self.trace(format!("coordinator: applied {tid} {:?}", w.next.state));
        match w.then {
            Then::InitAnswer { to, req } => {
                let answer = Msg::InitAnswer {
                    req,
                    code: error_code::NONE,
                    pid: w.next.producer_id,
                    epoch: w.next.producer_epoch,
                };
                self.send(Node::Coordinator, to, answer);
            }
            Then::FencedInit { to, req } => {
                self.spawn_complete(&tid);
                // The new instance retries until the abort completes.
                let answer = Msg::InitAnswer {
                    req,
                    code: error_code::CONCURRENT_TRANSACTIONS,
                    pid: -1,
                    epoch: -1,
                };
                self.send(Node::Coordinator, to, answer);
            }
            Then::AddAnswer { to, req } => {
                let answer = Msg::AddAnswer {
                    req,
                    code: error_code::NONE,
                };
                self.send(Node::Coordinator, to, answer);
            }
            Then::VerifyAnswer { to, req } => {
                let answer = Msg::VerifyAnswer {
                    req,
                    code: error_code::NONE,
                };
                self.send(Node::Coordinator, to, answer);
            }
            Then::EndAnswer { to, req, ids } => {
                self.spawn_complete(&tid);
                let answer = Msg::EndAnswer {
                    req,
                    code: error_code::NONE,
                    pid: ids.0,
                    epoch: ids.1,
                };
                self.send(Node::Coordinator, to, answer);
            }
            Then::Completed => {
                self.coordinator.tasks.remove(&tid);
            }
            Then::TimeoutAbort => self.spawn_complete(&tid),
        }
        if self.crash_after_prepare == Some(w.next.state) {
            self.crash_after_prepare = None;
            self.after(1, Event::Fault(Fault::CrashCoordinator));
        }
    }

    /// The coordinator's process dies: each write in flight is in the log
    /// or not (RNG), memory and marker work are gone, and a new leader is
    /// elected a little later.
    pub fn crash_coordinator(&mut self) {
        if !self.coordinator.up {
            return;
        }
        self.coordinator.up = false;
        self.coordinator.loaded = false;
        let writes = std::mem::take(&mut self.coordinator.writes);
        for (_, w) in writes {
            if self.rng.chance(50) {
                self.trace(format!(
                    "crash: the write of {} {:?} was replicated",
                    w.next.transactional_id, w.next.state
                ));
                self.append_state_record(&w.next, w.owner);
            } else {
                self.trace(format!(
                    "crash: the write of {} {:?} is lost",
                    w.next.transactional_id, w.next.state
                ));
            }
        }
        self.coordinator.entries.clear();
        self.coordinator.owners.clear();
        self.coordinator.tasks.clear();
        self.truth.stats.failovers += 1;
        let delay = self.rng.between(FAILOVER_MS.0, FAILOVER_MS.1) as Time;
        self.after(delay, Event::CoordFailover);
    }

    pub fn coordinator_failover(&mut self) {
        self.coordinator.up = true;
        self.coordinator.loaded = false;
        self.coordinator.epoch += 1;
        let coordinator_epoch = self.coordinator.epoch;
        self.trace(format!(
            "coordinator: elected at epoch {coordinator_epoch}, loading"
        ));
        self.after(LOAD_MS, Event::CoordLoaded { coordinator_epoch });
    }

    /// The shell's `load`: the last value of each id wins; then
    /// `resume_decided` for every Prepare*. Consecutive records of an id
    /// must be legal transitions (invariant 6 on the log itself).
    pub fn coordinator_load(&mut self, coordinator_epoch: i32) {
        if !self.coordinator.leads_at(coordinator_epoch) {
            return;
        }
        let mut latest: BTreeMap<String, (TxnMetadata, Option<TxnGid>)> = BTreeMap::new();
        let mut illegal = Vec::new();
        for record in &self.coordinator.log {
            let tid = log_record::decode_key(record.key.clone()).expect("a key we encoded");
            let m =
                log_record::decode_value(&tid, record.value.clone()).expect("a value we encoded");
            if let Some((previous, _)) = latest.get(&tid) {
                if let Err(why) = decide::check_transition(previous, &m) {
                    illegal.push(format!("illegal transition in the log: {why}"));
                }
            }
            latest.insert(tid, (m, record.owner));
        }
        for why in illegal {
            self.violation(why);
        }
        for (tid, (m, owner)) in latest {
            self.coordinator
                .entries
                .insert(tid.clone(), TxnEntry::new(m));
            self.coordinator.owners.insert(tid, owner);
        }
        self.coordinator.loaded = true;
        let decided: Vec<String> = self
            .coordinator
            .entries
            .iter()
            .filter(|(_, e)| e.metadata.state.is_prepare())
            .map(|(tid, _)| tid.clone())
            .collect();
        self.trace(format!(
            "coordinator: loaded {} records at epoch {coordinator_epoch}; resuming {decided:?}",
            self.coordinator.log.len()
        ));
        for tid in decided {
            self.truth.stats.resumed_after_failover += 1;
            self.spawn_complete(&tid);
        }
    }

    /// The timer: timeout aborts (timers.rs's `abort_timed_out`), then
    /// `resume_stalled`.
    pub fn coordinator_tick(&mut self) {
        if !self.coordinator.up || !self.coordinator.loaded {
            return;
        }
        let expired: Vec<String> = self
            .coordinator
            .entries
            .iter()
            .filter(|(_, e)| e.pending.is_none() && e.metadata.has_timed_out(self.now))
            .map(|(tid, _)| tid.clone())
            .collect();
        for tid in expired {
            let m = self.coordinator.entries[&tid].metadata.clone();
            let mut decision = decide::fence_and_abort(&m, self.config.cluster_tv, None, self.now);
            if decision == Decision::NeedProducerId {
                let fresh = self.coordinator.allocate_producer_id();
                decision =
                    decide::fence_and_abort(&m, self.config.cluster_tv, Some(fresh), self.now);
            }
            let Decision::FenceAndAbort(next) = decision else {
                continue;
            };
            self.trace(format!(
                "coordinator: {tid} timed out, aborting at epoch {}",
                next.producer_epoch
            ));
            self.truth.stats.timeout_aborts += 1;
            let owner = self.coordinator.owners.get(&tid).copied().flatten();
            let _ = self.write_transition(next, owner, Then::TimeoutAbort);
        }
        let stalled: Vec<String> = self
            .coordinator
            .entries
            .iter()
            .filter(|(tid, e)| {
                e.pending.is_none()
                    && e.metadata.state.is_prepare()
                    && !self.coordinator.tasks.contains_key(*tid)
            })
            .map(|(tid, _)| tid.clone())
            .collect();
        for tid in stalled {
            self.trace(format!(
                "coordinator: resuming the stalled markers of {tid}"
            ));
            self.spawn_complete(&tid);
        }
    }

    /// Starts writing a decided transaction's markers; one task per id.
    fn spawn_complete(&mut self, tid: &str) {
        if self.coordinator.tasks.contains_key(tid) {
            return;
        }
        let Some(e) = self.coordinator.entries.get(tid) else {
            return;
        };
        if !e.metadata.state.is_prepare() {
            return;
        }
        let task = MarkerTask {
            m: e.metadata.clone(),
            owner: self.coordinator.owners.get(tid).copied().flatten(),
            remaining: partitions_of(&e.metadata),
            round: 0,
            answers: BTreeMap::new(),
            backoff: MARKER_BACKOFF_MS.0,
        };
        self.coordinator.tasks.insert(tid.to_string(), task);
        self.marker_round(tid);
    }

    /// One round of markers.rs's loop: a marker to every partition still
    /// without one, then the answers or the round's timeout.
    pub fn marker_round(&mut self, tid: &str) {
        let coordinator_epoch = self.coordinator.epoch;
        let Some(task) = self.coordinator.tasks.get(tid) else {
            return;
        };
        if task.remaining.is_empty() {
            self.markers_written(tid);
            return;
        }
        // Unique in the run: a late answer of another task's round never
        // counts for this one (the shell's answers come per request).
        let round = self.next_req();
        let task = self.coordinator.tasks.get_mut(tid).expect("the task");
        task.round = round;
        task.answers.clear();
        let m = task.m.clone();
        let owner = task.owner;
        let remaining = task.remaining.clone();
        for p in remaining {
            let marker = MarkerReq {
                tid: tid.to_string(),
                round,
                coordinator_epoch,
                pid: m.producer_id,
                epoch: m.producer_epoch,
                commit: m.state == TxnState::PrepareCommit,
                // Version 2's markers carry the bumped epoch, and the
                // leaders hold them to it.
                tv: m.client_transaction_version.max(1),
                owner,
            };
            self.truth.stats.markers_sent += 1;
            self.send(Node::Coordinator, Node::Partition(p), Msg::Marker(marker));
        }
        self.after(
            MARKER_ROUND_TIMEOUT_MS,
            Event::MarkerRoundTimeout {
                coordinator_epoch,
                tid: tid.to_string(),
                round,
            },
        );
    }

    fn marker_answer(&mut self, tid: &str, round: u64, epoch: i32, partition: usize, code: i16) {
        if epoch != self.coordinator.epoch {
            self.trace(format!(
                "coordinator: a marker answer of epoch {epoch} is stale"
            ));
            return;
        }
        let Some(task) = self.coordinator.tasks.get_mut(tid) else {
            return;
        };
        if task.round != round {
            return;
        }
        task.answers.insert(partition, code);
        if task.answers.len() == task.remaining.len() {
            self.finish_marker_round(tid);
        }
    }

    pub fn marker_round_timeout(&mut self, epoch: i32, tid: &str, round: u64) {
        if !self.coordinator.leads_at(epoch) {
            return;
        }
        if self
            .coordinator
            .tasks
            .get(tid)
            .is_some_and(|t| t.round == round)
        {
            self.finish_marker_round(tid);
        }
    }

    fn finish_marker_round(&mut self, tid: &str) {
        let epoch = self.coordinator.epoch;
        let task = self.coordinator.tasks.get_mut(tid).expect("a task");
        task.round = 0; // later answers of this round are stale
        let mut obsolete = false;
        for p in task.remaining.clone() {
            let code = task
                .answers
                .get(&p)
                .copied()
                .unwrap_or(error_code::REQUEST_TIMED_OUT);
            match code {
                error_code::NONE => {
                    task.remaining.remove(&p);
                }
                error_code::TRANSACTION_COORDINATOR_FENCED | error_code::INVALID_PRODUCER_EPOCH => {
                    obsolete = true
                }
                _ => {}
            }
        }
        if obsolete {
            // markers.rs: a newer coordinator or producer epoch took over;
            // this work stops (resume_stalled may start it again).
            self.coordinator.tasks.remove(tid);
            self.trace(format!(
                "coordinator: the markers of {tid} are obsolete; stopping"
            ));
            return;
        }
        if task.remaining.is_empty() {
            self.markers_written(tid);
            return;
        }
        let backoff = task.backoff;
        task.backoff = (backoff * 2).min(MARKER_BACKOFF_MS.1);
        self.after(
            backoff,
            Event::MarkerRetry {
                coordinator_epoch: epoch,
                tid: tid.to_string(),
            },
        );
    }

    /// Every partition has its marker: write Complete* (the shell's
    /// `complete` loop after `write_markers`).
    pub fn markers_written(&mut self, tid: &str) {
        let epoch = self.coordinator.epoch;
        let Some(task) = self.coordinator.tasks.get(tid) else {
            return;
        };
        let (m, owner, backoff) = (task.m.clone(), task.owner, task.backoff);
        let Some(current) = self
            .coordinator
            .entries
            .get(tid)
            .filter(|c| c.metadata == m)
        else {
            self.coordinator.tasks.remove(tid);
            return;
        };
        if current.pending.is_some() {
            self.after(
                backoff,
                Event::CompleteRetry {
                    coordinator_epoch: epoch,
                    tid: tid.to_string(),
                },
            );
            return;
        }
        let next = decide::complete(&m, self.now);
        if let Err(code) = self.write_transition(next, owner, Then::Completed) {
            self.trace(format!(
                "coordinator: completing {tid} failed with {code}; retrying"
            ));
            self.after(
                backoff,
                Event::CompleteRetry {
                    coordinator_epoch: epoch,
                    tid: tid.to_string(),
                },
            );
        }
    }
}

fn partitions_of_set(set: &BTreeSet<TopicPartition>) -> Vec<i32> {
    set.iter().map(|t| t.partition).collect()
}

pub fn outcome(commit: bool) -> &'static str {
    if commit {
        "COMMIT"
    } else {
        "ABORT"
    }
}
