//! The transaction simulation's machinery: the scheduler, the network, the
//! ground truth the checks compare against, and the trace. The actors are
//! in their own files, each an `impl Sim` block over its state: the
//! coordinator (`coordinator.rs`), the partition leaders (`partition.rs`)
//! and the transactional clients (`client.rs`); the invariants are in
//! `checks.rs`. `tests/in_process/txn_simulation.rs` describes what is real and what
//! is simulated.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::common::SeededRng;

pub mod checks;
pub mod client;
pub mod coordinator;
pub mod partition;

use client::{App, Instance, Plan};
use coordinator::Coordinator;
use partition::Partition;

/// Simulated time in ms (the cores take `now_ms: i64`).
pub type Time = i64;
/// The client's ground-truth number of a transaction, unique in a run.
pub type TxnGid = u64;
/// A producer instance: an index into `Sim::instances`. A later instance
/// of an application has a higher id.
pub type InstanceId = usize;

/// The topic every simulated partition belongs to.
pub const TOPIC: &str = "t";
/// Lines of trace kept for a failing seed's report (the last ones).
pub const TRACE_LINES: usize = 4000;
/// Upper bound on the events of one run: a run that needs more is stuck.
pub const MAX_STEPS: u64 = 2_000_000;

/// Network: how long a message takes, and how often it is lost or late
/// while faults are on. A late message arrives after its sender gave up
/// on it (longer than any request timeout).
pub const NET_DELAY_MS: (Time, Time) = (1, 40);
pub const DROP_PERCENT: u64 = 4;
pub const LATE_PERCENT: u64 = 2;
pub const LATE_DELAY_MS: (Time, Time) = (2_000, 6_000);

/// What one run looks like.
#[derive(Debug, Clone)]
pub struct Config {
    /// The clients' transaction version: 1 (AddPartitionsToTxn, partition
    /// verification) or 2 (implicit adds, an epoch bump per EndTxn).
    pub client_tv: i16,
    /// The cluster's finalized `transaction.version`: what the
    /// coordinator's own aborts (timeouts, fencing) are written under.
    pub cluster_tv: i16,
    pub apps: usize,
    pub partitions: usize,
    /// Random faults during the fault phase: drops, coordinator crashes,
    /// producers that die, zombies.
    pub faults: bool,
    /// Whether a message may arrive after its sender's timeout.
    pub late_messages: bool,
    /// Whether a dead producer's application starts a new instance.
    pub restart_dead: bool,
    /// Transactions each application starts at most (unbounded in time
    /// only by the fault phase).
    pub txns_per_app: u32,
    pub fault_phase_ms: Time,
    pub heal_phase_ms: Time,
    /// Each transactional id starts at this producer epoch (written to
    /// `__transaction_state` before the run), so that a run reaches the
    /// last epochs and the move to a new producer id.
    pub start_epoch: Option<i16>,
}

impl Config {
    pub fn quiet(client_tv: i16) -> Self {
        Config {
            client_tv,
            cluster_tv: client_tv,
            apps: 1,
            partitions: 3,
            faults: false,
            late_messages: false,
            restart_dead: true,
            txns_per_app: 0,
            fault_phase_ms: 10_000,
            heal_phase_ms: 15_000,
            start_epoch: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Node {
    Client(InstanceId),
    Coordinator,
    Partition(usize),
}

/// A produce request's content: one batch of `count` records.
#[derive(Debug, Clone)]
pub struct ProduceReq {
    pub req: u64,
    pub tid: String,
    pub pid: i64,
    pub epoch: i16,
    pub seq: i32,
    pub count: i32,
    pub txn: TxnGid,
    pub instance: InstanceId,
    pub tv: i16,
}

/// A COMMIT or ABORT marker for one partition (WriteTxnMarkers).
#[derive(Debug, Clone)]
pub struct MarkerReq {
    pub tid: String,
    pub round: u64,
    pub coordinator_epoch: i32,
    pub pid: i64,
    pub epoch: i16,
    pub commit: bool,
    pub tv: i16,
    /// Ground truth: the transaction the coordinator's decision is about.
    pub owner: Option<TxnGid>,
}

#[derive(Debug, Clone)]
pub enum Msg {
    InitProducerId {
        req: u64,
        tid: String,
        expected: Option<(i64, i16)>,
    },
    InitAnswer {
        req: u64,
        code: i16,
        pid: i64,
        epoch: i16,
    },
    AddPartitions {
        req: u64,
        tid: String,
        pid: i64,
        epoch: i16,
        partitions: Vec<usize>,
        txn: TxnGid,
        instance: InstanceId,
    },
    AddAnswer {
        req: u64,
        code: i16,
    },
    EndTxn {
        req: u64,
        tid: String,
        pid: i64,
        epoch: i16,
        commit: bool,
        /// 0 for EndTxn before v5, 2 from v5.
        tv: i16,
        txn: TxnGid,
        instance: InstanceId,
    },
    EndAnswer {
        req: u64,
        code: i16,
        pid: i64,
        epoch: i16,
    },
    Produce(ProduceReq),
    ProduceAnswer {
        req: u64,
        code: i16,
        offset: i64,
    },
    /// A partition leader asks the coordinator (KIP-890): verify (version
    /// 1) or add (version 2) the partition.
    Verify {
        req: u64,
        tid: String,
        pid: i64,
        epoch: i16,
        partition: usize,
        add: bool,
        txn: TxnGid,
        instance: InstanceId,
    },
    VerifyAnswer {
        req: u64,
        code: i16,
    },
    Marker(MarkerReq),
    MarkerAnswer {
        tid: String,
        round: u64,
        coordinator_epoch: i32,
        partition: usize,
        code: i16,
    },
}

/// What a scripted network rule does to the messages it matches.
#[derive(Debug, Clone, Copy)]
pub enum NetAction {
    Drop,
    Delay(Time),
}

/// Which messages a rule applies to, by destination and content.
pub type MsgFilter = Box<dyn Fn(Node, &Msg) -> bool>;

/// A scripted network rule of a fixed case, applied to its first
/// `remaining` matches.
pub struct Rule {
    pub name: &'static str,
    pub matches: MsgFilter,
    pub action: NetAction,
    pub remaining: u32,
}

#[derive(Debug, Clone)]
pub enum Fault {
    CrashCoordinator,
    /// The application starts a new producer instance; the old one, if
    /// alive, goes on as a zombie.
    StartInstance(usize),
    /// The old instance of a zombie scenario sends a produce to every
    /// partition, an AddPartitionsToTxn and an EndTxn(commit) under its
    /// old producer id and epoch.
    ZombieBurst(InstanceId),
    /// Faults stop, clients begin no new transactions.
    Heal,
}

#[derive(Debug, Clone)]
pub enum Event {
    Deliver {
        from: Node,
        to: Node,
        msg: Msg,
    },
    ClientWake(InstanceId),
    RequestTimeout {
        instance: InstanceId,
        req: u64,
    },
    CoordWriteDone {
        coordinator_epoch: i32,
        write: u64,
    },
    CoordTick,
    CoordFailover,
    CoordLoaded {
        coordinator_epoch: i32,
    },
    MarkerRoundTimeout {
        coordinator_epoch: i32,
        tid: String,
        round: u64,
    },
    MarkerRetry {
        coordinator_epoch: i32,
        tid: String,
    },
    CompleteRetry {
        coordinator_epoch: i32,
        tid: String,
    },
    VerifyTimeout {
        partition: usize,
        req: u64,
    },
    VerifyRetry {
        partition: usize,
        req: u64,
    },
    HwTick {
        partition: usize,
        hw: i64,
    },
    Fault(Fault),
}

/// A produce the client had acknowledged.
#[derive(Debug, Clone, Copy)]
pub struct Acked {
    pub txn: TxnGid,
    pub partition: usize,
    pub offset: i64,
}

/// Counts reported per run and asserted by the fixed cases.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub txns_begun: u64,
    pub told_committed: u64,
    pub told_aborted: u64,
    pub decided_commit: u64,
    pub decided_abort: u64,
    pub failovers: u64,
    pub resumed_after_failover: u64,
    pub timeout_aborts: u64,
    pub fence_aborts: u64,
    pub messages_dropped: u64,
    pub messages_late: u64,
    pub markers_sent: u64,
    pub markers_refused_coordinator_fenced: u64,
    pub markers_refused_producer_epoch: u64,
    pub zombie_refusals: u64,
    pub producers_died: u64,
    pub producers_fatal: u64,
    /// Ids that moved to a new producer id (their epochs ran out).
    pub producer_id_moves: u64,
}

impl std::ops::AddAssign<&Stats> for Stats {
    fn add_assign(&mut self, o: &Stats) {
        self.txns_begun += o.txns_begun;
        self.told_committed += o.told_committed;
        self.told_aborted += o.told_aborted;
        self.decided_commit += o.decided_commit;
        self.decided_abort += o.decided_abort;
        self.failovers += o.failovers;
        self.resumed_after_failover += o.resumed_after_failover;
        self.timeout_aborts += o.timeout_aborts;
        self.fence_aborts += o.fence_aborts;
        self.messages_dropped += o.messages_dropped;
        self.messages_late += o.messages_late;
        self.markers_sent += o.markers_sent;
        self.markers_refused_coordinator_fenced += o.markers_refused_coordinator_fenced;
        self.markers_refused_producer_epoch += o.markers_refused_producer_epoch;
        self.zombie_refusals += o.zombie_refusals;
        self.producers_died += o.producers_died;
        self.producers_fatal += o.producers_fatal;
        self.producer_id_moves += o.producer_id_moves;
    }
}

/// What really happened, as the checks need it: kept beside the actors,
/// never read by them.
#[derive(Debug, Default)]
pub struct Truth {
    /// Each transaction's outcome, from the Prepare* record written to the
    /// replicated `__transaction_state` log (true: commit).
    pub decided: BTreeMap<TxnGid, bool>,
    /// What the client was told: EndTxn answered NONE (true: commit).
    pub told: BTreeMap<TxnGid, bool>,
    pub acked: Vec<Acked>,
    /// Per application, the newest instance whose InitProducerId (as a
    /// new instance) was answered, and when.
    pub latest_init: BTreeMap<usize, (InstanceId, Time)>,
    /// Requests a zombie sent after it was fenced: each must be refused.
    pub zombie_requests: BTreeSet<u64>,
    /// Offsets a read_committed reader was shown, per partition: they must
    /// stay visible.
    pub seen_visible: BTreeSet<(usize, i64)>,
    pub violations: Vec<String>,
    pub stats: Stats,
}

pub struct Sim {
    pub config: Config,
    pub rng: SeededRng,
    pub now: Time,
    queue: BTreeMap<(Time, u64), Event>,
    next_event: u64,
    next_req: u64,
    steps: u64,
    /// Faults stopped: no drops, no late messages, no crashes, and the
    /// clients begin no new transaction.
    pub healed: bool,
    pub coordinator: Coordinator,
    pub partitions: Vec<Partition>,
    pub apps: Vec<App>,
    pub instances: Vec<Instance>,
    pub next_txn: TxnGid,
    pub rules: Vec<Rule>,
    /// A fixed case's hook: crash the coordinator right after it applies
    /// a Prepare* of this state (its answer and markers already sent).
    pub crash_after_prepare: Option<pinlog::transaction::metadata::TxnState>,
    pub truth: Truth,
    trace: VecDeque<String>,
    /// FNV-1a over every trace line: two runs of a seed must match.
    pub trace_hash: u64,
}

impl Sim {
    pub fn new(seed: u64, config: Config) -> Sim {
        let mut sim = Sim {
            rng: SeededRng(seed),
            now: 0,
            queue: BTreeMap::new(),
            next_event: 0,
            next_req: 0,
            steps: 0,
            healed: false,
            coordinator: Coordinator::new(),
            partitions: (0..config.partitions).map(Partition::new).collect(),
            apps: Vec::new(),
            instances: Vec::new(),
            next_txn: 1,
            rules: Vec::new(),
            crash_after_prepare: None,
            truth: Truth::default(),
            trace: VecDeque::new(),
            trace_hash: 0xcbf2_9ce4_8422_2325,
            config,
        };
        sim.trace(format!("config {:?}", sim.config));
        for app in 0..sim.config.apps {
            let tid = format!("txn-app-{app}");
            if let Some(epoch) = sim.config.start_epoch {
                sim.coordinator.seed_id(&tid, epoch);
            }
            sim.apps.push(App::new(tid));
        }
        sim.schedule(coordinator::ABORT_CHECK_MS, Event::CoordTick);
        let heal_at = sim.config.fault_phase_ms;
        sim.schedule(heal_at, Event::Fault(Fault::Heal));
        sim
    }

    /// Gives an application scripted transactions (the fixed cases);
    /// without them it plans its own at random.
    pub fn plan(&mut self, app: usize, plans: Vec<Plan>) {
        self.apps[app].plans = plans.into();
    }

    /// Starts every application's first instance.
    pub fn start_apps(&mut self) {
        for app in 0..self.apps.len() {
            self.start_instance(app);
        }
    }

    pub fn next_req(&mut self) -> u64 {
        self.next_req += 1;
        self.next_req
    }

    pub fn schedule(&mut self, at: Time, event: Event) {
        self.next_event += 1;
        self.queue
            .insert((at.max(self.now), self.next_event), event);
    }

    pub fn after(&mut self, delay: Time, event: Event) {
        self.schedule(self.now + delay, event);
    }

    pub fn at(&mut self, at: Time, fault: Fault) {
        self.schedule(at, Event::Fault(fault));
    }

    pub fn trace(&mut self, line: String) {
        for b in line.as_bytes() {
            self.trace_hash ^= u64::from(*b);
            self.trace_hash = self.trace_hash.wrapping_mul(0x0100_0000_01b3);
        }
        if self.trace.len() == TRACE_LINES {
            self.trace.pop_front();
        }
        self.trace.push_back(format!("{:>6} {line}", self.now));
    }

    pub fn violation(&mut self, what: String) {
        self.trace(format!("VIOLATION {what}"));
        self.truth.violations.push(what);
    }

    pub fn trace_text(&self) -> String {
        self.trace.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    fn faults_active(&self) -> bool {
        self.config.faults && !self.healed
    }

    /// Sends `msg`: a scripted rule, else (with faults on) a random drop or
    /// late arrival, else a random delay; messages overtake one another.
    pub fn send(&mut self, from: Node, to: Node, msg: Msg) {
        let mut delay = self
            .rng
            .between(NET_DELAY_MS.0 as u64, NET_DELAY_MS.1 as u64) as Time;
        let scripted = self
            .rules
            .iter_mut()
            .find(|r| r.remaining > 0 && (r.matches)(to, &msg))
            .map(|r| {
                r.remaining -= 1;
                (r.name, r.action)
            });
        match scripted {
            Some((name, NetAction::Drop)) => {
                self.trace(format!(
                    "net {from:?}->{to:?} DROPPED by rule {name}: {msg:?}"
                ));
                self.truth.stats.messages_dropped += 1;
                return;
            }
            Some((name, NetAction::Delay(ms))) => {
                self.trace(format!(
                    "net {from:?}->{to:?} delayed {ms} ms by rule {name}"
                ));
                delay = ms;
            }
            None if self.faults_active() => {
                if self.rng.chance(DROP_PERCENT) {
                    self.trace(format!("net {from:?}->{to:?} DROPPED {msg:?}"));
                    self.truth.stats.messages_dropped += 1;
                    return;
                }
                if self.config.late_messages && self.rng.chance(LATE_PERCENT) {
                    delay = self
                        .rng
                        .between(LATE_DELAY_MS.0 as u64, LATE_DELAY_MS.1 as u64)
                        as Time;
                    self.truth.stats.messages_late += 1;
                    self.trace(format!("net {from:?}->{to:?} LATE by {delay} ms"));
                }
            }
            None => {}
        }
        self.trace(format!("send {from:?}->{to:?} {msg:?}"));
        self.after(delay, Event::Deliver { from, to, msg });
    }

    /// Runs every event up to `until`, then sets the clock there.
    pub fn run_until(&mut self, until: Time) {
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > until {
                break;
            }
            let ((at, _), event) = entry.remove_entry();
            self.now = at;
            self.steps += 1;
            assert!(
                self.steps < MAX_STEPS,
                "more than {MAX_STEPS} events: the run is stuck"
            );
            self.handle(event);
        }
        self.now = until;
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Deliver { from, to, msg } => match to {
                Node::Client(i) => self.client_receive(i, msg),
                Node::Coordinator => self.coordinator_receive(from, msg),
                Node::Partition(p) => self.partition_receive(p, from, msg),
            },
            Event::ClientWake(i) => self.client_wake(i),
            Event::RequestTimeout { instance, req } => self.client_timeout(instance, req),
            Event::CoordWriteDone {
                coordinator_epoch,
                write,
            } => self.coordinator_write_done(coordinator_epoch, write),
            Event::CoordTick => {
                self.coordinator_tick();
                self.after(coordinator::ABORT_CHECK_MS, Event::CoordTick);
            }
            Event::CoordFailover => self.coordinator_failover(),
            Event::CoordLoaded { coordinator_epoch } => self.coordinator_load(coordinator_epoch),
            Event::MarkerRoundTimeout {
                coordinator_epoch,
                tid,
                round,
            } => self.marker_round_timeout(coordinator_epoch, &tid, round),
            Event::MarkerRetry {
                coordinator_epoch,
                tid,
            } => {
                if self.coordinator.leads_at(coordinator_epoch) {
                    self.marker_round(&tid);
                }
            }
            Event::CompleteRetry {
                coordinator_epoch,
                tid,
            } => {
                if self.coordinator.leads_at(coordinator_epoch) {
                    self.markers_written(&tid);
                }
            }
            Event::VerifyTimeout { partition, req } => self.verify_timeout(partition, req),
            Event::VerifyRetry { partition, req } => self.verify_retry(partition, req),
            Event::HwTick { partition, hw } => self.hw_tick(partition, hw),
            Event::Fault(f) => self.fault(f),
        }
    }

    fn fault(&mut self, f: Fault) {
        self.trace(format!("FAULT {f:?}"));
        match f {
            Fault::CrashCoordinator => self.crash_coordinator(),
            Fault::StartInstance(app) => self.start_instance(app),
            Fault::ZombieBurst(i) => self.zombie_burst(i),
            Fault::Heal => self.healed = true,
        }
    }

    /// Random faults of the fault phase that are not per message: up to
    /// three coordinator crashes. (Producer deaths and zombies are decided
    /// by the clients, per transaction.)
    pub fn schedule_random_faults(&mut self) {
        let crashes = self.rng.below(7);
        for _ in 0..crashes {
            let at = self
                .rng
                .between(500, self.config.fault_phase_ms as u64 - 500) as Time;
            self.at(at, Fault::CrashCoordinator);
        }
    }

    /// Runs the fault phase and the heal phase, then the final checks.
    pub fn finish(&mut self) -> Result<Stats, String> {
        let end = self.config.fault_phase_ms + self.config.heal_phase_ms;
        self.run_until(end);
        self.final_checks();
        if self.truth.violations.is_empty() {
            Ok(self.truth.stats.clone())
        } else {
            Err(format!(
                "{} violation(s):\n  {}\nstats: {:?}\ntrace (last {} lines):\n{}",
                self.truth.violations.len(),
                self.truth.violations.join("\n  "),
                self.truth.stats,
                self.trace.len(),
                self.trace_text()
            ))
        }
    }
}
