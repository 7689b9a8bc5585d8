//! Simulated transactional producers, after Kafka's Java client: an
//! application per transactional id, which runs one producer instance at a
//! time (a new one after a fatal error or a crash) and transactions one
//! after another. Version 1 adds partitions with AddPartitionsToTxn before
//! producing; version 2 only produces and takes the epoch each EndTxn
//! answers with. CONCURRENT_TRANSACTIONS and the coordinator's absence are
//! retried; PRODUCER_FENCED, INVALID_PRODUCER_EPOCH and
//! INVALID_PRODUCER_ID_MAPPING are fatal to the instance; the rest makes
//! the transaction abortable. A batch whose outcome stays unknown bumps
//! the epoch after the abort (KIP-360), as the Java client does.

use std::collections::{BTreeMap, VecDeque};

use pinlog::protocol::error_code;

use super::*;

/// The client's `request.timeout.ms`, scaled: longer than any message
/// delay plus a leader's verification, so that without late messages an
/// answer never arrives after its request timed out.
pub const REQUEST_TIMEOUT_MS: Time = 1_500;
const RETRY_BACKOFF_MS: Time = 50;
/// Attempts at one batch before its outcome counts as unknown.
const PRODUCE_ATTEMPTS_MAX: u32 = 25;
/// Attempts at InitProducerId, AddPartitionsToTxn or EndTxn before the
/// instance gives up (fatal).
const COORDINATOR_ATTEMPTS_MAX: u32 = 200;
/// Pause between two transactions.
const THINK_MS: (u64, u64) = (5, 60);
/// After a crash or fatal error, the application's next instance starts
/// within this (when it restarts at all).
const RESTART_MS: (u64, u64) = (100, 4_000);

/// One transaction as an application means to run it.
#[derive(Debug, Clone)]
pub struct Plan {
    /// (partition, batches).
    pub batches: Vec<(usize, u32)>,
    pub commit: bool,
    /// The instance dies after producing, before EndTxn.
    pub die: bool,
    /// Wait this long between the last produce and EndTxn.
    pub linger_ms: Time,
    /// A new instance of the application starts after the last produce,
    /// while this one still runs (a zombie from then on).
    pub zombie: bool,
}

impl Plan {
    pub fn commit(partitions: &[usize]) -> Plan {
        Plan {
            batches: partitions.iter().map(|p| (*p, 2)).collect(),
            commit: true,
            die: false,
            linger_ms: 0,
            zombie: false,
        }
    }

    pub fn abort(partitions: &[usize]) -> Plan {
        Plan {
            commit: false,
            ..Plan::commit(partitions)
        }
    }
}

pub struct App {
    pub tid: String,
    pub current: Option<InstanceId>,
    pub txns_begun: u32,
    pub plans: VecDeque<Plan>,
}

impl App {
    pub fn new(tid: String) -> Self {
        App {
            tid,
            current: None,
            txns_begun: 0,
            plans: VecDeque::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Init { expected: Option<(i64, i16)> },
    Idle,
    Adding,
    Producing,
    Lingering { commit: bool },
    Ending { commit: bool },
    Dead,
}

#[derive(Debug, Clone, Copy)]
enum Pending {
    Init,
    Add,
    Produce {
        partition: usize,
        seq: i32,
        count: i32,
    },
    End,
}

#[derive(Debug, Clone)]
struct Txn {
    gid: TxnGid,
    plan: Plan,
    batches_left: BTreeMap<usize, u32>,
    in_flight: BTreeMap<usize, u64>,
    attempts: BTreeMap<usize, u32>,
    abortable: bool,
}

pub struct Instance {
    pub app: usize,
    pub pid: i64,
    pub epoch: i16,
    phase: Phase,
    next_seq: BTreeMap<usize, i32>,
    outstanding: BTreeMap<u64, Pending>,
    /// An unknown batch outcome: bump the epoch after the abort.
    needs_bump: bool,
    txn: Option<Txn>,
    coordinator_attempts: u32,
}

fn retriable(code: i16) -> bool {
    matches!(
        code,
        error_code::CONCURRENT_TRANSACTIONS
            | error_code::REQUEST_TIMED_OUT
            | error_code::NOT_ENOUGH_REPLICAS
            | error_code::NOT_LEADER_OR_FOLLOWER
            | error_code::COORDINATOR_LOAD_IN_PROGRESS
            | error_code::COORDINATOR_NOT_AVAILABLE
            | error_code::NOT_COORDINATOR
    )
}

fn fatal(code: i16) -> bool {
    matches!(
        code,
        error_code::PRODUCER_FENCED
            | error_code::INVALID_PRODUCER_EPOCH
            | error_code::INVALID_PRODUCER_ID_MAPPING
    )
}

impl Sim {
    pub fn start_instance(&mut self, app: usize) {
        let id = self.instances.len();
        self.instances.push(Instance {
            app,
            pid: -1,
            epoch: -1,
            phase: Phase::Init { expected: None },
            next_seq: BTreeMap::new(),
            outstanding: BTreeMap::new(),
            needs_bump: false,
            txn: None,
            coordinator_attempts: 0,
        });
        if let Some(old) = self.apps[app].current.replace(id) {
            self.trace(format!(
                "client: app {app} starts instance {id}; instance {old} is now a zombie"
            ));
        } else {
            self.trace(format!("client: app {app} starts instance {id}"));
        }
        self.client_wake(id);
    }

    fn tv(&self) -> i16 {
        self.config.client_tv
    }

    /// Sends a request and arms its timeout; returns its id.
    fn request(
        &mut self,
        i: InstanceId,
        to: Node,
        pending: Pending,
        make: impl FnOnce(u64) -> Msg,
    ) -> u64 {
        let req = self.next_req();
        self.instances[i].outstanding.insert(req, pending);
        let msg = make(req);
        self.send(Node::Client(i), to, msg);
        self.after(
            REQUEST_TIMEOUT_MS,
            Event::RequestTimeout { instance: i, req },
        );
        req
    }

    fn has_outstanding(&self, i: InstanceId, f: impl Fn(&Pending) -> bool) -> bool {
        self.instances[i].outstanding.values().any(f)
    }

    /// The instance acts on its phase: (re)sends what is missing.
    pub fn client_wake(&mut self, i: InstanceId) {
        let inst = &self.instances[i];
        let tid = self.apps[inst.app].tid.clone();
        let (pid, epoch) = (inst.pid, inst.epoch);
        match inst.phase {
            Phase::Dead => {}
            Phase::Lingering { commit } => {
                self.instances[i].phase = Phase::Ending { commit };
                self.instances[i].coordinator_attempts = 0;
                self.client_wake(i);
            }
            Phase::Init { expected } => {
                if !self.has_outstanding(i, |p| matches!(p, Pending::Init)) {
                    self.request(i, Node::Coordinator, Pending::Init, |req| {
                        Msg::InitProducerId { req, tid, expected }
                    });
                }
            }
            Phase::Idle => self.begin_txn(i),
            Phase::Adding => {
                if !self.has_outstanding(i, |p| matches!(p, Pending::Add)) {
                    let txn = self.instances[i].txn.as_ref().expect("a transaction");
                    let partitions = txn.plan.batches.iter().map(|(p, _)| *p).collect();
                    let gid = txn.gid;
                    self.request(i, Node::Coordinator, Pending::Add, |req| {
                        Msg::AddPartitions {
                            req,
                            tid,
                            pid,
                            epoch,
                            partitions,
                            txn: gid,
                            instance: i,
                        }
                    });
                }
            }
            Phase::Producing => self.pump_produce(i),
            Phase::Ending { commit } => {
                if !self.has_outstanding(i, |p| matches!(p, Pending::End)) {
                    let gid = self.instances[i].txn.as_ref().expect("a transaction").gid;
                    let tv = if self.tv() >= 2 { 2 } else { 0 };
                    self.request(i, Node::Coordinator, Pending::End, |req| Msg::EndTxn {
                        req,
                        tid,
                        pid,
                        epoch,
                        commit,
                        tv,
                        txn: gid,
                        instance: i,
                    });
                }
            }
        }
    }

    fn random_plan(&mut self) -> Plan {
        let n = self.config.partitions;
        let count = self.rng.between(1, n.min(3) as u64) as usize;
        let mut partitions: Vec<usize> = (0..n).collect();
        // A partial Fisher-Yates shuffle picks `count` distinct partitions.
        for k in 0..count {
            let j = k + self.rng.below((n - k) as u64) as usize;
            partitions.swap(k, j);
        }
        let batches = partitions[..count]
            .iter()
            .map(|p| (*p, self.rng.between(1, 3) as u32))
            .collect();
        let faults = self.config.faults;
        if self.config.client_tv >= 2 && self.rng.chance(3) {
            // An application that aborts before producing anything: under
            // version 2 the EndTxn still goes out, and bumps the epoch.
            return Plan {
                batches: Vec::new(),
                ..Plan::abort(&[])
            };
        }
        Plan {
            batches,
            commit: self.rng.chance(75),
            die: faults && self.rng.chance(3),
            linger_ms: if self.rng.chance(10) {
                self.rng.between(100, 2_000) as Time
            } else {
                0
            },
            zombie: faults && self.rng.chance(3),
        }
    }

    fn begin_txn(&mut self, i: InstanceId) {
        let app = self.instances[i].app;
        if self.apps[app].current != Some(i) || self.healed {
            return;
        }
        let plan = if let Some(plan) = self.apps[app].plans.pop_front() {
            plan
        } else if self.apps[app].txns_begun < self.config.txns_per_app {
            self.random_plan()
        } else {
            return;
        };
        self.apps[app].txns_begun += 1;
        let gid = self.next_txn;
        self.next_txn += 1;
        self.truth.stats.txns_begun += 1;
        self.trace(format!("client {i}: begins txn {gid} {plan:?}"));
        let inst = &mut self.instances[i];
        inst.txn = Some(Txn {
            gid,
            batches_left: plan.batches.iter().copied().collect(),
            plan,
            in_flight: BTreeMap::new(),
            attempts: BTreeMap::new(),
            abortable: false,
        });
        inst.coordinator_attempts = 0;
        inst.phase = if self.config.client_tv >= 2 {
            Phase::Producing
        } else {
            Phase::Adding
        };
        self.client_wake(i);
    }

    /// Sends the next batch of every partition with none in flight, or
    /// moves on once nothing is left to send.
    fn pump_produce(&mut self, i: InstanceId) {
        let app = self.instances[i].app;
        let tid = self.apps[app].tid.clone();
        let tv = self.tv();
        let inst = &self.instances[i];
        let txn = inst.txn.as_ref().expect("a transaction");
        if txn.abortable || txn.batches_left.values().all(|n| *n == 0) {
            if txn.in_flight.is_empty() {
                self.produced(i);
            }
            return;
        }
        let sends: Vec<(usize, i32, i32)> = txn
            .batches_left
            .iter()
            .filter(|(p, n)| **n > 0 && !txn.in_flight.contains_key(p))
            .map(|(p, _)| (*p, *inst.next_seq.get(p).unwrap_or(&0), 1 + (*p as i32 % 2)))
            .collect();
        let (pid, epoch, gid) = (inst.pid, inst.epoch, txn.gid);
        for (partition, seq, count) in sends {
            let tid = tid.clone();
            let pending = Pending::Produce {
                partition,
                seq,
                count,
            };
            let req = self.request(i, Node::Partition(partition), pending, |req| {
                Msg::Produce(ProduceReq {
                    req,
                    tid,
                    pid,
                    epoch,
                    seq,
                    count,
                    txn: gid,
                    instance: i,
                    tv,
                })
            });
            let txn = self.instances[i].txn.as_mut().expect("a transaction");
            txn.in_flight.insert(partition, req);
        }
    }

    /// Everything is produced (or the transaction is abortable): end it,
    /// die, or linger first.
    fn produced(&mut self, i: InstanceId) {
        let txn = self.instances[i].txn.clone().expect("a transaction");
        if txn.plan.zombie {
            if let Some(t) = self.instances[i].txn.as_mut() {
                t.plan.zombie = false;
            }
            let app = self.instances[i].app;
            self.start_instance(app);
        }
        if txn.plan.die {
            self.trace(format!("client {i}: dies in txn {}", txn.gid));
            self.truth.stats.producers_died += 1;
            self.kill_instance(i);
            return;
        }
        let commit = txn.plan.commit && !txn.abortable;
        if txn.plan.linger_ms > 0 {
            if let Some(t) = self.instances[i].txn.as_mut() {
                t.plan.linger_ms = 0;
            }
            self.instances[i].phase = Phase::Lingering { commit };
            self.after(txn.plan.linger_ms, Event::ClientWake(i));
            return;
        }
        self.instances[i].phase = Phase::Ending { commit };
        self.instances[i].coordinator_attempts = 0;
        self.client_wake(i);
    }

    fn kill_instance(&mut self, i: InstanceId) {
        let inst = &mut self.instances[i];
        inst.phase = Phase::Dead;
        inst.outstanding.clear();
        let app = inst.app;
        if self.apps[app].current == Some(i) && self.config.restart_dead {
            let delay = self.rng.between(RESTART_MS.0, RESTART_MS.1) as Time;
            self.after(delay, Event::Fault(Fault::StartInstance(app)));
        }
    }

    fn fatal_error(&mut self, i: InstanceId, code: i16, what: &str) {
        self.trace(format!("client {i}: FATAL {code} on {what}"));
        self.truth.stats.producers_fatal += 1;
        self.kill_instance(i);
    }

    pub fn client_timeout(&mut self, i: InstanceId, req: u64) {
        if self.instances[i].outstanding.contains_key(&req) {
            self.trace(format!("client {i}: request {req} timed out"));
            self.client_answer(i, req, error_code::REQUEST_TIMED_OUT, None);
        }
    }

    pub fn client_receive(&mut self, i: InstanceId, msg: Msg) {
        let (req, code, ids) = match msg {
            Msg::InitAnswer {
                req,
                code,
                pid,
                epoch,
            }
            | Msg::EndAnswer {
                req,
                code,
                pid,
                epoch,
            } => (req, code, Some((pid, epoch))),
            Msg::AddAnswer { req, code } => (req, code, None),
            Msg::ProduceAnswer { req, code, offset } => (req, code, Some((offset, 0))),
            other => panic!("client {i} got {other:?}"),
        };
        if self.truth.zombie_requests.remove(&req) {
            if code == error_code::NONE {
                self.violation(format!("zombie instance {i}'s request {req} was accepted"));
            } else {
                self.truth.stats.zombie_refusals += 1;
                self.trace(format!(
                    "client {i}: zombie request {req} refused with {code}"
                ));
            }
            return;
        }
        if self.instances[i].outstanding.contains_key(&req) {
            self.client_answer(i, req, code, ids);
        }
    }

    fn client_answer(&mut self, i: InstanceId, req: u64, code: i16, ids: Option<(i64, i16)>) {
        let Some(pending) = self.instances[i].outstanding.remove(&req) else {
            return;
        };
        if self.instances[i].phase == Phase::Dead {
            return;
        }
        self.trace(format!("client {i}: {pending:?} answered {code}"));
        match pending {
            Pending::Init => self.on_init_answer(i, code, ids.unwrap_or((-1, -1))),
            Pending::Add => self.on_coordinator_answer(i, code, "AddPartitionsToTxn", |sim| {
                sim.instances[i].phase = Phase::Producing;
            }),
            Pending::Produce {
                partition,
                seq,
                count,
            } => self.on_produce_answer(i, partition, seq, count, code, ids.map_or(-1, |x| x.0)),
            Pending::End => self.on_end_answer(i, code, ids.unwrap_or((-1, -1))),
        }
    }

    /// The common handling of a coordinator's answer: NONE runs `then`,
    /// retriable codes retry, anything else is fatal.
    fn on_coordinator_answer(
        &mut self,
        i: InstanceId,
        code: i16,
        what: &str,
        then: impl FnOnce(&mut Sim),
    ) {
        if code == error_code::NONE {
            self.instances[i].coordinator_attempts = 0;
            then(self);
            self.client_wake(i);
        } else if retriable(code)
            && self.instances[i].coordinator_attempts < COORDINATOR_ATTEMPTS_MAX
        {
            self.instances[i].coordinator_attempts += 1;
            self.after(RETRY_BACKOFF_MS, Event::ClientWake(i));
        } else {
            self.fatal_error(i, code, what);
        }
    }

    fn on_init_answer(&mut self, i: InstanceId, code: i16, (pid, epoch): (i64, i16)) {
        let Phase::Init { expected } = self.instances[i].phase else {
            return;
        };
        self.on_coordinator_answer(i, code, "InitProducerId", |sim| {
            let inst = &mut sim.instances[i];
            inst.pid = pid;
            inst.epoch = epoch;
            inst.next_seq.clear();
            inst.needs_bump = false;
            inst.phase = Phase::Idle;
            let app = inst.app;
            if expected.is_none() {
                sim.truth.latest_init.insert(app, (i, sim.now));
            }
            sim.trace(format!(
                "client {i}: initialised as pid {pid} epoch {epoch}"
            ));
        });
    }

    fn on_produce_answer(
        &mut self,
        i: InstanceId,
        p: usize,
        seq: i32,
        count: i32,
        code: i16,
        offset: i64,
    ) {
        let Some(txn) = self.instances[i].txn.as_mut() else {
            return;
        };
        txn.in_flight.remove(&p);
        let gid = txn.gid;
        if code == error_code::NONE {
            txn.attempts.remove(&p);
            if let Some(left) = txn.batches_left.get_mut(&p) {
                *left = left.saturating_sub(1);
            }
            self.instances[i].next_seq.insert(p, seq + count);
            self.truth.acked.push(Acked {
                txn: gid,
                partition: p,
                offset,
            });
        } else if fatal(code) {
            self.fatal_error(i, code, "a produce");
            return;
        } else if retriable(code) {
            let attempts = txn.attempts.entry(p).or_insert(0);
            *attempts += 1;
            if *attempts >= PRODUCE_ATTEMPTS_MAX {
                // Its outcome is unknown: abort, and bump the epoch so
                // that the sequence starts afresh.
                txn.abortable = true;
                self.instances[i].needs_bump = true;
            } else {
                self.after(RETRY_BACKOFF_MS, Event::ClientWake(i));
                return;
            }
        } else {
            txn.abortable = true;
            if code == error_code::OUT_OF_ORDER_SEQUENCE_NUMBER {
                self.instances[i].needs_bump = true;
            }
        }
        self.client_wake(i);
    }

    fn on_end_answer(&mut self, i: InstanceId, code: i16, (pid, epoch): (i64, i16)) {
        let Phase::Ending { commit } = self.instances[i].phase else {
            return;
        };
        self.on_coordinator_answer(i, code, "EndTxn", |sim| {
            let tv2 = sim.config.client_tv >= 2;
            let inst = &mut sim.instances[i];
            let gid = inst.txn.take().expect("a transaction").gid;
            if tv2 && (pid, epoch) != (inst.pid, inst.epoch) {
                inst.pid = pid;
                inst.epoch = epoch;
                inst.next_seq.clear();
            }
            inst.phase = if inst.needs_bump && !tv2 {
                Phase::Init {
                    expected: Some((inst.pid, inst.epoch)),
                }
            } else {
                Phase::Idle
            };
            inst.needs_bump = false;
            sim.truth.told.insert(gid, commit);
            if commit {
                sim.truth.stats.told_committed += 1;
            } else {
                sim.truth.stats.told_aborted += 1;
            }
            sim.trace(format!(
                "client {i}: told txn {gid} {}",
                super::coordinator::outcome(commit)
            ));
        });
        if code == error_code::NONE && self.instances[i].phase == Phase::Idle {
            // A pause before the next transaction.
            let think = self.rng.between(THINK_MS.0, THINK_MS.1) as Time;
            self.after(think, Event::ClientWake(i));
        }
    }

    /// The zombie scenario: the fenced instance sends a produce to every
    /// partition, an AddPartitionsToTxn (version 1) and an EndTxn(commit)
    /// under its old ids; each must be refused.
    pub fn zombie_burst(&mut self, i: InstanceId) {
        let inst = &self.instances[i];
        let tid = self.apps[inst.app].tid.clone();
        let (pid, epoch) = (inst.pid, inst.epoch);
        let gid = inst.txn.as_ref().map_or(0, |t| t.gid);
        let tv = self.tv();
        let seqs: Vec<i32> = (0..self.config.partitions)
            .map(|p| *inst.next_seq.get(&p).unwrap_or(&0))
            .collect();
        let mut burst = Vec::new();
        if tv < 2 {
            let req = self.next_req();
            burst.push((
                Node::Coordinator,
                Msg::AddPartitions {
                    req,
                    tid: tid.clone(),
                    pid,
                    epoch,
                    partitions: (0..self.config.partitions).collect(),
                    txn: gid,
                    instance: i,
                },
            ));
        }
        for (p, seq) in seqs.into_iter().enumerate() {
            let req = self.next_req();
            burst.push((
                Node::Partition(p),
                Msg::Produce(ProduceReq {
                    req,
                    tid: tid.clone(),
                    pid,
                    epoch,
                    seq,
                    count: 1,
                    txn: gid,
                    instance: i,
                    tv,
                }),
            ));
        }
        let req = self.next_req();
        burst.push((
            Node::Coordinator,
            Msg::EndTxn {
                req,
                tid,
                pid,
                epoch,
                commit: true,
                tv: if tv >= 2 { 2 } else { 0 },
                txn: gid,
                instance: i,
            },
        ));
        for (to, msg) in burst {
            let req = match &msg {
                Msg::AddPartitions { req, .. } | Msg::EndTxn { req, .. } => *req,
                Msg::Produce(p) => p.req,
                _ => unreachable!("the burst sends requests"),
            };
            self.truth.zombie_requests.insert(req);
            self.send(Node::Client(i), to, msg);
        }
    }

    /// Whether any application still has a transaction in progress.
    pub fn clients_busy(&self) -> Vec<InstanceId> {
        (0..self.instances.len())
            .filter(|i| {
                let inst = &self.instances[*i];
                inst.phase != Phase::Dead && inst.txn.is_some()
            })
            .collect()
    }
}
