//! Deterministic simulation of the replication and controller cores (issue:
//! faults): three brokers, a controller and a producing client in one
//! thread, under a seeded scheduler with simulated time and a simulated
//! network that delays, reorders, drops and partitions.
//!
//! What is real and what is simulated:
//! - **Real:** each broker's `pinlog::replica::ReplicaState` (roles, ISR,
//!   HW, its release-build assertions) and `truncation_offset`, its
//!   `LeaderEpochCache`, and the controller's pure decisions: the image
//!   (`MetadataImage::apply`), `BrokerSessions` (registration, heartbeats,
//!   session expiry), `plan_alter_partition`, `fencing` and
//!   `with_leadership_changes` (failover and elections).
//! - **Simulated:** the Raft quorum is a linearizable log stub (the
//!   controller commits a decision at once and broadcasts the image):
//!   openraft runs on glommio's clock and cannot run under simulated time,
//!   so the real library is covered by the fault suite (`tests/faults.rs`)
//!   instead. Logs are in memory: records `(leader epoch, id)`. A crash
//!   loses a follower's append still in flight (it completes a few
//!   milliseconds after its fetch response arrives), the leader's own
//!   write in flight, and every message to or from the process; completed appends survive, as pinlog's direct-I/O
//!   writes survive a process crash, and the restarted broker registers
//!   with its last broker epoch (its log is intact). A power loss also
//!   loses the last unflushed appends, and the broker registers without
//!   it (KIP-966's unclean shutdown). The HW is checkpointed every 500 ms.
//!
//! Invariants checked at every step:
//! - at most one broker becomes leader in any leader epoch;
//! - the committed image's partitions keep Kafka's rules
//!   (`MetadataImage::check_invariants`: the leader is in the ISR, the ISR
//!   and ELR are replicas and apart);
//! - a leader's HW never decreases and never exceeds the log end of any
//!   member of its maximal ISR (except one that lost power since it
//!   reported that log end, until an image takes it out of the ISR);
//! - an offset exposed below a HW never holds two different records, and
//!   every exposed record is in the final log;
//! - every acknowledged record is at its acknowledged offset in the final
//!   log, and no offset is acknowledged twice;
//! - after healing, the logs converge: every replica's log equals the
//!   leader's, and the ISR is whole.
//!
//! Replication overlaps the leader's write, as pinlog's does (issue 33,
//! direction 3): the leader writes one group of produces at a time, which
//! completes a few milliseconds later (`Event::LeaderWriteDone`), and
//! followers may fetch and append the group meanwhile. A crash before the
//! write completes loses the group on the leader only. What needs the
//! log's lock on a real broker (an image's transition, an epoch query)
//! waits for the write, and produces arriving meanwhile form the next
//! group. `random_seeds` checks that both orders happened: followers that
//! wrote a group before its leader did, and leaders that crashed with a
//! write in flight.
//!
//! A panic in the real cores (their own assertions) fails the seed too.
//!
//! Runs: `random_seeds` runs `PINLOG_SIM_SEEDS` seeds (default
//! [`DEFAULT_SEEDS`]) from `PINLOG_SIM_FIRST_SEED` (default
//! [`DEFAULT_FIRST_SEED`], so CI is repeatable; printed). A failing seed
//! prints its trace; replay it with
//! `PINLOG_SIM_SEEDS=1 PINLOG_SIM_FIRST_SEED=<seed>`. The known failure
//! histories are fixed cases: the two scenarios of seed 000, Jepsen's
//! Kafka 0.8 ISR shrink, KIP-966's last replica standing (after process
//! crashes and after power losses), and the seeds that found bugs. The
//! random schedules include power losses (a crash that also loses the last
//! unflushed appends; the broker's next registration then says its
//! shutdown was unclean); `PINLOG_SIM_POWER_LOSS=0` leaves them out.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use crate::common::SeededRng;
use pinlog::controller::brokers::{
    registrations, unclean_shutdown, BrokerControlState, BrokerSessions, Heartbeat,
    RegistrationDecision, RegistrationRequest,
};
use pinlog::controller::partitions::{
    broker_views, effective_min_isr, fencing, plan_alter_partition, with_leadership_changes,
    with_unclean_shutdown, IsrProposal,
};
use pinlog::log::epoch_cache::{LeaderEpochCache, UNDEFINED_EPOCH};
use pinlog::metadata::image::{MetadataImage, PartitionImage};
use pinlog::metadata::records::{MetadataRecord, Uuid, RESOURCE_TOPIC};
use pinlog::protocol::error_code;
use pinlog::replica::{
    truncation_offset, AlterIsr, Assignment, FetchedAnswer, LocalLog, ReplicaState, Transition,
    Truncation, UNKNOWN_BROKER_EPOCH,
};

/// A fetched answer as the broker's fetcher hands it to `ReplicaState`
/// (logs here start at 0 and never move their start).
fn fetched(log_end_offset: i64, leader_high_watermark: i64) -> FetchedAnswer {
    FetchedAnswer {
        log_end_offset,
        leader_high_watermark: Some(leader_high_watermark),
        leader_log_start: 0,
        log_start: 0,
    }
}

const DEFAULT_SEEDS: u64 = 2000;
/// Whether random schedules include power losses: yes, unless
/// `PINLOG_SIM_POWER_LOSS=0` (the schedules the seeds had before power
/// losses were modelled).
fn power_loss_enabled() -> bool {
    std::env::var("PINLOG_SIM_POWER_LOSS").map_or(true, |v| v != "0")
}

/// After a power loss, how long the random schedule waits before another:
/// enough for the machine to restart and its replicas to rejoin the ISR.
const POWER_LOSS_SETTLE_MS: Time = 5000;
/// The first of the seeds CI runs (PINLOG_SIM_FIRST_SEED overrides it).
const DEFAULT_FIRST_SEED: u64 = 20_261_201;
const BROKERS: [i32; 3] = [1, 2, 3];
const CONTROLLER: Node = 0;
const CLIENT: Node = 100;
const TOPIC_ID: Uuid = [7; 16];
const CLUSTER_ID: &str = "simulated";
/// `min.insync.replicas` of the topic.
const MIN_INSYNC: usize = 2;
/// Simulated settings, in ms.
const SESSION_TIMEOUT_MS: u64 = 1500;
const HEARTBEAT_MS: u64 = 200;
const LAG_TIME_MAX_MS: i64 = 1000;
const ISR_CHECK_MS: u64 = 250;
const REQUEST_TIMEOUT_MS: u64 = 1000;
const FETCH_BACKOFF_MS: u64 = 20;
const CHECKPOINT_MS: u64 = 500;
const PRODUCE_EVERY_MS: u64 = 7;
const MAX_IN_FLIGHT_PRODUCES: usize = 16;
/// One leader write in this many stalls for 10-40 ms.
const LEADER_WRITE_STALL_ONE_IN: u64 = 8;
const WRITE_RNG_SALT: u64 = 0x5EED_0F1E_ADE2;
/// A fetch response carries at most this many records.
const FETCH_MAX_RECORDS: usize = 50;
/// How long a random run injects faults, then how long it heals.
const FAULT_PHASE_MS: u64 = 20_000;
const HEAL_PHASE_MS: u64 = 20_000;
/// The trace kept for a failing seed's report.
const TRACE_LINES: usize = 2000;

type Node = u32;
type Time = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    epoch: i32,
    id: u64,
}

#[derive(Debug, Clone)]
enum Msg {
    Register {
        incarnation: u64,
        /// KIP-966's `PreviousBrokerEpoch`: the last registration's epoch if
        /// nothing written since was lost (a process crash on a machine
        /// that kept running), -1 after a power loss.
        previous_broker_epoch: i64,
    },
    Registered {
        epoch: i64,
    },
    Heartbeat {
        epoch: i64,
        metadata_offset: i64,
    },
    AlterPartition {
        seq: u64,
        broker_epoch: i64,
        change: AlterIsr,
        /// KIP-903: each new member's broker epoch, as the leader saw it
        /// fetch (`ReplicaState::fetched_broker_epoch`).
        member_epochs: Vec<(i32, i64)>,
    },
    AlterPartitionDone {
        seq: u64,
        ok: bool,
        /// The controller's partition epoch, when it named the partition.
        controller_epoch: Option<i32>,
    },
    Metadata {
        image: Rc<MetadataImage>,
    },
    Fetch {
        seq: u64,
        leader_epoch: i32,
        offset: i64,
        /// The fetching process (the checks only: a leader cannot know it).
        incarnation: u64,
    },
    FetchDone {
        seq: u64,
        answer: Result<(Vec<Record>, i64), i16>,
    },
    EpochQuery {
        seq: u64,
        leader_epoch: i32,
        asked: i32,
    },
    EpochAnswer {
        seq: u64,
        answer: Result<(i32, i64), i16>,
    },
    Produce {
        id: u64,
    },
    Produced {
        id: u64,
        answer: Result<i64, i16>,
    },
}

#[derive(Debug, Clone)]
enum Event {
    Deliver {
        from: Node,
        to: Node,
        to_incarnation: u64,
        msg: Msg,
    },
    BrokerTick(i32),
    ControllerTick,
    ClientTick,
    /// A follower's append of a fetch response completes.
    AppendDone {
        broker: i32,
        incarnation: u64,
        seq: u64,
    },
    /// The leader's write of its own append completes.
    LeaderWriteDone {
        broker: i32,
        incarnation: u64,
    },
    RequestTimeout {
        broker: i32,
        incarnation: u64,
        seq: u64,
    },
    ProduceTimeout {
        id: u64,
    },
    Fault(Fault),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Crash(i32),
    /// The machine loses power: as a crash, and the log also loses the
    /// last `tail` completed appends, which were never fsynced (pinlog,
    /// like Kafka, does not fsync by default and relies on replication).
    /// Restart recovers the log to what survived, truncates the epoch
    /// cache to it and clamps the checkpointed HW to it, as
    /// `PartitionLog::open` does.
    PowerLoss {
        id: i32,
        tail: u64,
    },
    Restart(i32),
    /// Both directions between two nodes.
    Cut(Node, Node),
    CutOneWay(Node, Node),
    Mend(Node, Node),
    /// Every node loses this share of its messages.
    Loss(u64),
    HealNetwork,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Registering, or waiting for the first image.
    Idle,
    /// Asking the leader where the logs diverge.
    Truncating,
    Fetching,
}

struct Broker {
    id: i32,
    up: bool,
    /// A new one per process start.
    incarnation: u64,
    /// The broker epoch of this process's registration; -1 before.
    broker_epoch: i64,
    /// What its registration sends as the previous broker epoch.
    previous_broker_epoch: i64,
    /// It lost power while in the ISR and has not yet applied an image
    /// that took it out: the log ends the leader heard from it before may
    /// be gone, which no leader can know (KIP-966's registration is what
    /// takes it out).
    lost_power: bool,
    log: Vec<Record>,
    epochs: LeaderEpochCache,
    checkpointed_hw: i64,
    replica: ReplicaState,
    image: Rc<MetadataImage>,
    phase: Phase,
    /// The request (fetch, epoch query) in flight and the leader epoch it
    /// was sent in.
    outstanding: Option<(u64, i32)>,
    /// A fetch response being appended: (seq, records, leader HW).
    appending: Option<(u64, Vec<Record>, i64)>,
    alter_in_flight: Option<(u64, AlterIsr)>,
    /// As leader, while its write of a group is in flight: the log's length
    /// before the group (what a crash leaves). Followers may already fetch
    /// the group.
    writing_from: Option<usize>,
    /// Produces that arrived during the write: the next group.
    queued: Vec<u64>,
    /// Messages that take the log's lock on a real broker (images, epoch
    /// queries), held until the write completes.
    held: Vec<(Node, Msg)>,
    /// acks=all produces waiting for the HW: (offset, id).
    waiting: Vec<(i64, u64)>,
    next_seq: u64,
    last_heartbeat: Time,
    last_isr_check: Time,
    last_checkpoint: Time,
    next_fetch_at: Time,
}

impl Broker {
    fn new(id: i32, incarnation: u64, log: Vec<Record>, epochs: LeaderEpochCache, hw: i64) -> Self {
        let leo = log.len() as i64;
        Broker {
            id,
            up: true,
            incarnation,
            broker_epoch: -1,
            previous_broker_epoch: -1,
            lost_power: false,
            replica: ReplicaState::new(id, 0, leo, hw, LAG_TIME_MAX_MS),
            log,
            epochs,
            checkpointed_hw: hw,
            image: Rc::new(MetadataImage::empty()),
            phase: Phase::Idle,
            outstanding: None,
            appending: None,
            alter_in_flight: None,
            writing_from: None,
            queued: Vec::new(),
            held: Vec::new(),
            waiting: Vec::new(),
            next_seq: 1,
            last_heartbeat: 0,
            last_isr_check: 0,
            last_checkpoint: 0,
            next_fetch_at: 0,
        }
    }

    fn leo(&self) -> i64 {
        self.log.len() as i64
    }

    fn seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn partition(&self) -> Option<&PartitionImage> {
        self.image.partition("sim", 0)
    }

    /// Whether its client listener is open: pinlog opens it only once the
    /// broker's own registration is in its image, unfenced. Until then a
    /// restarted broker may replay an old image in which it leads, but
    /// nobody can reach it.
    fn serving(&self) -> bool {
        self.up
            && self.broker_epoch >= 0
            && self
                .image
                .brokers
                .get(&self.id)
                .is_some_and(|b| b.epoch == self.broker_epoch && !b.fenced)
    }
}

struct Controller {
    image: MetadataImage,
    sessions: BrokerSessions,
}

struct Client {
    next_id: u64,
    in_flight: HashSet<u64>,
    /// Acknowledged: id -> offset.
    acked: HashMap<u64, i64>,
    acked_offsets: HashMap<i64, u64>,
    producing: bool,
}

struct Sim {
    now: Time,
    rng: SeededRng,
    /// The leaders' write latencies come from a generator of their own, so
    /// that a seed's faults and network delays stay what they were before
    /// leader writes were modelled.
    write_rng: SeededRng,
    queue: BinaryHeap<Reverse<(Time, u64)>>,
    events: HashMap<u64, Event>,
    next_event: u64,
    brokers: BTreeMap<i32, Broker>,
    controller: Controller,
    client: Client,
    cut: HashSet<(Node, Node)>,
    loss_percent: u64,
    next_incarnation: u64,
    /// Leader epoch -> the broker that became leader in it.
    leaders: HashMap<i32, i32>,
    /// (broker, process incarnation, leader epoch) -> the highest HW it
    /// had as leader.
    leader_hw: HashMap<(i32, u64, i32), i64>,
    /// Offset -> the record first exposed there below some leader's HW.
    exposed: BTreeMap<i64, u64>,
    trace: VecDeque<String>,
    violations: Vec<String>,
    overlap: Overlap,
    /// (broker, process incarnation) of every process that lost power.
    lost_power: HashSet<(i32, u64)>,
    /// (leader, member) -> the member's process incarnation whose fetch the
    /// leader counted last.
    counted_fetch: HashMap<(i32, i32), u64>,
}

/// How often replication overlapped the leader's write, over a run.
#[derive(Debug, Default, Clone, Copy)]
struct Overlap {
    /// Follower fetches that reported a group the leader had not written
    /// yet: the follower's write completed first.
    follower_wrote_first: usize,
    /// Leaders that crashed or lost power with a write in flight.
    leader_lost_its_write: usize,
}

/// What a seed's run produced.
#[derive(Debug, Default, Clone, Copy)]
struct RunStats {
    acknowledged: usize,
    overlap: Overlap,
}

fn node_of(broker: i32) -> Node {
    broker as Node
}

impl Sim {
    fn new(seed: u64) -> Sim {
        // The cluster as it stands once formed: three registered, unfenced
        // brokers and one partition led by broker 1.
        let mut image = MetadataImage::empty();
        let mut records = vec![MetadataRecord::ClusterId {
            cluster_id: CLUSTER_ID.into(),
        }];
        for id in BROKERS {
            records.push(MetadataRecord::RegisterBroker {
                broker_id: id,
                incarnation_id: incarnation_uuid(id as u64),
                broker_epoch: -1,
                host: format!("broker-{id}"),
                port: 9092,
                rack: None,
                fenced: false,
                in_controlled_shutdown: false,
                listeners: Vec::new(),
            });
        }
        records.push(MetadataRecord::Topic {
            name: "sim".into(),
            topic_id: TOPIC_ID,
        });
        records.push(MetadataRecord::Partition {
            topic_id: TOPIC_ID,
            partition: 0,
            replicas: BROKERS.to_vec(),
            isr: BROKERS.to_vec(),
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            elr: Vec::new(),
            last_known_elr: Vec::new(),
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            last_unclean_election_epoch: None,
        });
        records.push(MetadataRecord::Config {
            resource_type: RESOURCE_TOPIC,
            resource_name: "sim".into(),
            name: "min.insync.replicas".into(),
            value: Some(MIN_INSYNC.to_string()),
        });
        for r in &records {
            image.apply(image.offset + 1, r);
        }
        let sessions =
            BrokerSessions::activate(registrations(&image).values(), SESSION_TIMEOUT_MS as i64, 0);
        let mut sim = Sim {
            now: 0,
            rng: SeededRng(seed),
            write_rng: SeededRng(seed ^ WRITE_RNG_SALT),
            queue: BinaryHeap::new(),
            events: HashMap::new(),
            next_event: 0,
            brokers: BTreeMap::new(),
            controller: Controller { image, sessions },
            client: Client {
                next_id: 1,
                in_flight: HashSet::new(),
                acked: HashMap::new(),
                acked_offsets: HashMap::new(),
                producing: true,
            },
            cut: HashSet::new(),
            loss_percent: 0,
            next_incarnation: 100,
            leaders: HashMap::new(),
            leader_hw: HashMap::new(),
            exposed: BTreeMap::new(),
            trace: VecDeque::new(),
            violations: Vec::new(),
            overlap: Overlap::default(),
            lost_power: HashSet::new(),
            counted_fetch: HashMap::new(),
        };
        let image = Rc::new(sim.controller.image.clone());
        for id in BROKERS {
            let mut b = Broker::new(id, id as u64, Vec::new(), LeaderEpochCache::new(), 0);
            b.broker_epoch = image.brokers[&id].epoch;
            sim.brokers.insert(id, b);
        }
        for id in BROKERS {
            sim.apply_image(id, image.clone());
            sim.schedule(1, Event::BrokerTick(id));
        }
        sim.schedule(1, Event::ControllerTick);
        sim.schedule(1, Event::ClientTick);
        sim
    }

    fn note(&mut self, line: String) {
        if self.trace.len() == TRACE_LINES {
            self.trace.pop_front();
        }
        self.trace.push_back(format!("{:>6} {line}", self.now));
    }

    fn violation(&mut self, what: String) {
        self.note(format!("VIOLATION: {what}"));
        self.violations.push(what);
    }

    fn schedule(&mut self, after: Time, event: Event) {
        self.next_event += 1;
        self.events.insert(self.next_event, event);
        self.queue
            .push(Reverse((self.now + after, self.next_event)));
    }

    fn incarnation_of(&self, node: Node) -> Option<u64> {
        match node {
            CONTROLLER => Some(0),
            CLIENT => Some(1),
            b => {
                let b = self.brokers.get(&(b as i32))?;
                b.up.then_some(b.incarnation)
            }
        }
    }

    /// Sends `msg` over the simulated network: delayed 1–15 ms (so
    /// messages reorder), lost to a cut or to random loss, and dropped if
    /// the receiver's process is not the one it was sent to.
    fn send(&mut self, from: Node, to: Node, msg: Msg) {
        let Some(to_incarnation) = self.incarnation_of(to) else {
            return;
        };
        if self.cut.contains(&(from, to)) {
            return;
        }
        if self.loss_percent > 0 && self.rng.chance(self.loss_percent) {
            return;
        }
        let delay = self.rng.between(1, 15);
        self.schedule(
            delay,
            Event::Deliver {
                from,
                to,
                to_incarnation,
                msg,
            },
        );
    }

    /// Runs events until `until`.
    fn run_until(&mut self, until: Time) {
        while let Some(Reverse((at, key))) = self.queue.peek().copied() {
            if at > until {
                break;
            }
            self.queue.pop();
            self.now = at;
            let event = self.events.remove(&key).expect("scheduled");
            self.handle(event);
            self.check_step();
        }
        self.now = until;
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Deliver {
                from,
                to,
                to_incarnation,
                msg,
            } => {
                if self.incarnation_of(to) != Some(to_incarnation) {
                    return; // the connection died with the process
                }
                match to {
                    CONTROLLER => self.controller_receive(from as i32, msg),
                    CLIENT => self.client_receive(msg),
                    b => self.broker_receive(b as i32, from, msg),
                }
            }
            Event::BrokerTick(id) => {
                if self.brokers[&id].up {
                    self.broker_tick(id);
                }
                self.schedule(10, Event::BrokerTick(id));
            }
            Event::ControllerTick => {
                self.controller_tick();
                self.schedule(50, Event::ControllerTick);
            }
            Event::ClientTick => {
                self.client_tick();
                self.schedule(PRODUCE_EVERY_MS, Event::ClientTick);
            }
            Event::AppendDone {
                broker,
                incarnation,
                seq,
            } => self.append_done(broker, incarnation, seq),
            Event::LeaderWriteDone {
                broker,
                incarnation,
            } => self.leader_write_done(broker, incarnation),
            Event::RequestTimeout {
                broker,
                incarnation,
                seq,
            } => {
                let b = self.brokers.get_mut(&broker).expect("a broker");
                if b.up && b.incarnation == incarnation {
                    if b.outstanding.is_some_and(|(s, _)| s == seq) {
                        b.outstanding = None;
                    }
                    if b.alter_in_flight.as_ref().is_some_and(|(s, _)| *s == seq) {
                        // No answer: it may have been committed. Sent
                        // again while it is still the pending change, as
                        // `server/replication/isr_changes.rs` does.
                        let (_, change) = b.alter_in_flight.take().expect("in flight");
                        if b.replica.pending_alter().as_ref() == Some(&change) {
                            self.propose(broker, change);
                        }
                    }
                }
            }
            Event::ProduceTimeout { id } => {
                self.client.in_flight.remove(&id);
            }
            Event::Fault(f) => self.fault(f),
        }
    }

    // ----- the controller (the quorum is a linearizable stub) -----

    fn commit(&mut self, records: Vec<MetadataRecord>) {
        if records.is_empty() {
            return;
        }
        // One Raft entry: every record takes the entry's offset.
        let offset = self.controller.image.offset + 1;
        for r in &records {
            self.controller.image.apply(offset, r);
        }
        let p = self.controller.image.partition("sim", 0).cloned();
        self.note(format!("controller commits {records:?} -> {p:?}"));
        let image = Rc::new(self.controller.image.clone());
        for id in BROKERS {
            self.send(
                CONTROLLER,
                node_of(id),
                Msg::Metadata {
                    image: image.clone(),
                },
            );
        }
    }

    fn controller_tick(&mut self) {
        let image = &self.controller.image;
        let expired: Vec<(i32, i64)> = self
            .controller
            .sessions
            .expired(registrations(image).values(), self.now as i64)
            .into_iter()
            .map(|id| (id, image.brokers[&id].epoch))
            .collect();
        if !expired.is_empty() {
            self.note(format!("controller: sessions expired {expired:?}"));
            let records = fencing(&self.controller.image, &expired);
            self.commit(records);
        }
        // Brokers that missed an image (lost messages) get the latest.
        let image = Rc::new(self.controller.image.clone());
        for id in BROKERS {
            if self.brokers[&id].image.offset < image.offset && self.rng.chance(20) {
                self.send(
                    CONTROLLER,
                    node_of(id),
                    Msg::Metadata {
                        image: image.clone(),
                    },
                );
            }
        }
    }

    fn controller_receive(&mut self, from: i32, msg: Msg) {
        let now = self.now as i64;
        match msg {
            Msg::Register {
                incarnation,
                previous_broker_epoch,
            } => {
                let mut known = registrations(&self.controller.image);
                // Every simulated broker is a voter, whose new incarnation
                // is that node restarted (as the real controller decides).
                known.remove(&from);
                let ask = RegistrationRequest {
                    id: from,
                    cluster_id: CLUSTER_ID.into(),
                    incarnation_id: incarnation_uuid(incarnation),
                    rack: None,
                    previous_broker_epoch,
                };
                let unclean = unclean_shutdown(&registrations(&self.controller.image), &ask);
                match self
                    .controller
                    .sessions
                    .register(&known, CLUSTER_ID, &ask, now)
                {
                    Ok(RegistrationDecision::New) => {
                        let register = vec![MetadataRecord::RegisterBroker {
                            broker_id: from,
                            incarnation_id: ask.incarnation_id,
                            broker_epoch: -1,
                            host: format!("broker-{from}"),
                            port: 9092,
                            rack: None,
                            fenced: true,
                            in_controlled_shutdown: false,
                            listeners: Vec::new(),
                        }];
                        let records = if unclean {
                            self.note(format!("broker {from} registers after an unclean shutdown"));
                            with_unclean_shutdown(&self.controller.image, register, from)
                        } else {
                            with_leadership_changes(&self.controller.image, register)
                        };
                        self.commit(records);
                        let epoch = self.controller.image.offset;
                        self.send(CONTROLLER, node_of(from), Msg::Registered { epoch });
                    }
                    Ok(RegistrationDecision::Unchanged { epoch }) => {
                        self.send(CONTROLLER, node_of(from), Msg::Registered { epoch });
                    }
                    Err((code, _)) => self.note(format!("registration of {from} refused: {code}")),
                }
            }
            Msg::Heartbeat {
                epoch,
                metadata_offset,
            } => {
                let regs = registrations(&self.controller.image);
                let Some(reg) = regs.get(&from) else { return };
                let leads = self
                    .controller
                    .image
                    .partition("sim", 0)
                    .is_some_and(|p| p.leader == from);
                let hb = Heartbeat {
                    id: from,
                    epoch,
                    metadata_offset,
                    want_fence: false,
                    want_shut_down: false,
                };
                let Ok(outcome) = self.controller.sessions.heartbeat(reg, &hb, leads, now) else {
                    return;
                };
                if outcome.changed && outcome.next == BrokerControlState::Unfenced {
                    let records = with_leadership_changes(
                        &self.controller.image,
                        vec![MetadataRecord::BrokerRegistrationChange {
                            broker_id: from,
                            broker_epoch: reg.epoch,
                            fenced: Some(false),
                            in_controlled_shutdown: Some(false),
                        }],
                    );
                    self.commit(records);
                }
            }
            Msg::AlterPartition {
                seq,
                broker_epoch,
                change,
                member_epochs,
            } => {
                let proposal = IsrProposal {
                    topic_id: TOPIC_ID,
                    partition: 0,
                    leader_epoch: change.leader_epoch,
                    partition_epoch: change.partition_epoch,
                    new_isr: member_epochs,
                };
                let image = &self.controller.image;
                let (ok, controller_epoch) = match plan_alter_partition(
                    image,
                    &broker_views(image),
                    from,
                    broker_epoch,
                    &[proposal],
                ) {
                    Ok((records, decisions)) => {
                        let ok = decisions[0].error_code == error_code::NONE;
                        let epoch = decisions[0].partition.as_ref().map(|p| p.partition_epoch);
                        let records = with_leadership_changes(image, records);
                        self.commit(records);
                        (ok, epoch)
                    }
                    Err(_) => (false, None),
                };
                self.send(
                    CONTROLLER,
                    node_of(from),
                    Msg::AlterPartitionDone {
                        seq,
                        ok,
                        controller_epoch,
                    },
                );
            }
            other => panic!("the controller got {other:?}"),
        }
    }

    // ----- the client -----

    fn client_tick(&mut self) {
        if !self.client.producing || self.client.in_flight.len() >= MAX_IN_FLIGHT_PRODUCES {
            return;
        }
        // Metadata as the controller has it; a client with older metadata
        // would only send to a former leader more often.
        let Some(leader) = self
            .controller
            .image
            .partition("sim", 0)
            .map(|p| p.leader)
            .filter(|&l| l > 0)
        else {
            return;
        };
        let id = self.client.next_id;
        self.client.next_id += 1;
        self.client.in_flight.insert(id);
        self.send(CLIENT, node_of(leader), Msg::Produce { id });
        self.schedule(REQUEST_TIMEOUT_MS * 3, Event::ProduceTimeout { id });
    }

    fn client_receive(&mut self, msg: Msg) {
        let Msg::Produced { id, answer } = msg else {
            panic!("the client got {msg:?}");
        };
        self.client.in_flight.remove(&id);
        if let Ok(offset) = answer {
            if let Some(other) = self.client.acked_offsets.insert(offset, id) {
                if other != id {
                    self.violation(format!(
                        "offset {offset} acknowledged for both {other} and {id}"
                    ));
                }
            }
            self.client.acked.insert(id, offset);
        }
    }

    // ----- the brokers -----

    fn broker_tick(&mut self, id: i32) {
        let now = self.now;
        let b = self.brokers.get_mut(&id).expect("a broker");
        if b.broker_epoch < 0 {
            if now - b.last_heartbeat >= HEARTBEAT_MS {
                b.last_heartbeat = now;
                let (incarnation, previous_broker_epoch) = (b.incarnation, b.previous_broker_epoch);
                self.send(
                    node_of(id),
                    CONTROLLER,
                    Msg::Register {
                        incarnation,
                        previous_broker_epoch,
                    },
                );
            }
            return;
        }
        if now - b.last_heartbeat >= HEARTBEAT_MS {
            b.last_heartbeat = now;
            let (epoch, metadata_offset) = (b.broker_epoch, b.image.offset);
            self.send(
                node_of(id),
                CONTROLLER,
                Msg::Heartbeat {
                    epoch,
                    metadata_offset,
                },
            );
        }
        let b = self.brokers.get_mut(&id).expect("a broker");
        if now - b.last_checkpoint >= CHECKPOINT_MS {
            b.last_checkpoint = now;
            b.checkpointed_hw = b.replica.high_watermark();
        }
        if b.replica.is_leader() && now - b.last_isr_check >= ISR_CHECK_MS {
            b.last_isr_check = now;
            if let Some(change) = b.replica.tick(now as i64) {
                self.propose(id, change);
            }
        }
        let b = self.brokers.get_mut(&id).expect("a broker");
        if b.replica.is_leader()
            || b.outstanding.is_some()
            || b.appending.is_some()
            || now < b.next_fetch_at
        {
            return;
        }
        let Some(leader) = b.partition().map(|p| p.leader).filter(|&l| l > 0) else {
            return;
        };
        let leader_epoch = b.replica.leader_epoch();
        let seq = b.seq();
        let incarnation = b.incarnation;
        let msg = match b.phase {
            Phase::Idle => return,
            Phase::Truncating => Msg::EpochQuery {
                seq,
                leader_epoch,
                asked: b.epochs.latest_epoch().unwrap_or(UNDEFINED_EPOCH),
            },
            Phase::Fetching => Msg::Fetch {
                seq,
                leader_epoch,
                offset: b.leo(),
                incarnation,
            },
        };
        b.outstanding = Some((seq, leader_epoch));
        self.send(node_of(id), node_of(leader), msg);
        self.schedule(
            REQUEST_TIMEOUT_MS,
            Event::RequestTimeout {
                broker: id,
                incarnation,
                seq,
            },
        );
    }

    fn propose(&mut self, id: i32, change: AlterIsr) {
        let b = self.brokers.get_mut(&id).expect("a broker");
        let seq = b.seq();
        b.alter_in_flight = Some((seq, change.clone()));
        let (broker_epoch, incarnation) = (b.broker_epoch, b.incarnation);
        let member_epochs = change
            .new_isr
            .iter()
            .map(|&r| match r == id {
                true => (r, broker_epoch),
                false => (r, b.replica.fetched_broker_epoch(r)),
            })
            .collect();
        self.note(format!("broker {id} proposes ISR {:?}", change.new_isr));
        self.send(
            node_of(id),
            CONTROLLER,
            Msg::AlterPartition {
                seq,
                broker_epoch,
                change,
                member_epochs,
            },
        );
        self.schedule(
            REQUEST_TIMEOUT_MS,
            Event::RequestTimeout {
                broker: id,
                incarnation,
                seq,
            },
        );
    }

    fn apply_image(&mut self, id: i32, image: Rc<MetadataImage>) {
        let now = self.now as i64;
        let b = self.brokers.get_mut(&id).expect("a broker");
        if image.offset <= b.image.offset {
            return;
        }
        b.image = image;
        let Some(p) = b.partition().cloned() else {
            return;
        };
        if !p.isr.contains(&id) {
            b.lost_power = false;
        }
        let assignment = Assignment {
            leader: p.leader,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            replicas: p.replicas.clone(),
            isr: p.isr.clone(),
            min_isr: effective_min_isr(MIN_INSYNC, p.replicas.len()),
        };
        let transition = b.replica.apply_assignment(&assignment, now);
        match transition {
            Transition::BecameLeader { epoch_start_offset } => {
                b.epochs
                    .assign(p.leader_epoch, epoch_start_offset)
                    .expect("a new leader's epoch is newer than its cache's");
                b.phase = Phase::Idle;
                b.outstanding = None;
                b.appending = None;
                if let Some(other) = self.leaders.insert(p.leader_epoch, id) {
                    if other != id {
                        self.violation(format!(
                            "brokers {other} and {id} both became leader in epoch {}",
                            p.leader_epoch
                        ));
                    }
                }
                self.note(format!(
                    "broker {id} leads epoch {} from {epoch_start_offset}",
                    p.leader_epoch
                ));
                self.after_high_watermark(id);
            }
            Transition::BecameFollower { leader } => {
                let waiting = std::mem::take(&mut b.waiting);
                b.phase = Phase::Truncating;
                b.outstanding = None;
                b.appending = None;
                b.next_fetch_at = 0;
                self.note(format!(
                    "broker {id} follows {leader:?} in epoch {}",
                    p.leader_epoch
                ));
                for (_, pid) in waiting {
                    self.answer_produce(id, pid, Err(error_code::NOT_LEADER_OR_FOLLOWER));
                }
            }
            Transition::IsrChanged { .. } => {
                self.after_high_watermark(id);
            }
            Transition::Unchanged => {}
        }
    }

    fn answer_produce(&mut self, id: i32, pid: u64, answer: Result<i64, i16>) {
        self.send(node_of(id), CLIENT, Msg::Produced { id: pid, answer });
    }

    /// The leader's HW may have moved: record what it exposes, check it,
    /// and answer the produces it completes.
    fn after_high_watermark(&mut self, id: i32) {
        let b = &self.brokers[&id];
        if !b.replica.is_leader() {
            return;
        }
        let hw = b.replica.high_watermark();
        let epoch = b.replica.leader_epoch();
        let key = (id, b.incarnation, epoch);
        let before = self.leader_hw.get(&key).copied().unwrap_or(-1);
        if hw < before {
            self.violation(format!(
                "leader {id}'s HW went back from {before} to {hw} in epoch {epoch}"
            ));
        }
        if hw > before {
            let maximal_isr = self.brokers[&id].replica.maximal_isr();
            for r in maximal_isr {
                let member_leo = self.brokers[&r].leo();
                // A member that lost power may hold less than it reported,
                // which no leader can know until an image takes it out of
                // the ISR, or, for a leader cut off from the controller,
                // until it fetches again.
                let reported_by = self.counted_fetch.get(&(id, r)).copied();
                let lost_since_counted = reported_by
                    .is_some_and(|incarnation| self.lost_power.contains(&(r, incarnation)));
                if member_leo < hw && !self.brokers[&r].lost_power && !lost_since_counted {
                    self.violation(format!(
                        "leader {id}'s HW {hw} is above ISR member {r}'s log end {member_leo}"
                    ));
                }
            }
            let from = before.max(0);
            self.note(format!(
                "leader {id} exposes {from}..{hw} in epoch {epoch} (ISR {:?})",
                self.brokers[&id].replica.isr()
            ));
            let exposures: Vec<(i64, u64)> = (from..hw)
                .map(|o| (o, self.brokers[&id].log[o as usize].id))
                .collect();
            for (o, rid) in exposures {
                let first = *self.exposed.entry(o).or_insert(rid);
                if first != rid {
                    self.violation(format!(
                        "offset {o} was exposed with {first}, now leader {id} exposes {rid}"
                    ));
                }
            }
            self.leader_hw.insert(key, hw);
        }
        let b = self.brokers.get_mut(&id).expect("a broker");
        let enough = b.replica.in_sync_count() >= MIN_INSYNC;
        let (done, still): (Vec<_>, Vec<_>) = b.waiting.drain(..).partition(|(o, _)| *o < hw);
        b.waiting = still;
        for (offset, pid) in done {
            let answer = if enough {
                Ok(offset)
            } else {
                Err(error_code::NOT_ENOUGH_REPLICAS_AFTER_APPEND)
            };
            self.answer_produce(id, pid, answer);
        }
    }

    fn broker_receive(&mut self, id: i32, from: Node, msg: Msg) {
        let now = self.now as i64;
        let from_outside = matches!(
            msg,
            Msg::Produce { .. } | Msg::Fetch { .. } | Msg::EpochQuery { .. }
        );
        if from_outside && !self.brokers[&id].serving() {
            return; // the listener is closed: the connection is refused
        }
        let b = self.brokers.get_mut(&id).expect("a broker");
        if b.writing_from.is_some() && matches!(msg, Msg::Metadata { .. } | Msg::EpochQuery { .. })
        {
            b.held.push((from, msg));
            return;
        }
        match msg {
            Msg::Registered { epoch } => {
                let b = self.brokers.get_mut(&id).expect("a broker");
                if b.broker_epoch < 0 {
                    b.broker_epoch = epoch;
                    b.last_heartbeat = 0;
                    self.note(format!("broker {id} registered with epoch {epoch}"));
                }
            }
            Msg::Metadata { image } => self.apply_image(id, image),
            Msg::AlterPartitionDone {
                seq,
                ok,
                controller_epoch,
            } => {
                let b = self.brokers.get_mut(&id).expect("a broker");
                if b.alter_in_flight.as_ref().is_some_and(|(s, _)| *s == seq) {
                    let (_, change) = b.alter_in_flight.take().expect("in flight");
                    if !ok {
                        b.replica.on_alter_isr_refused(&change, controller_epoch);
                    }
                }
                // A committed change arrives with the image.
            }
            Msg::Produce { id: pid } => {
                let b = self.brokers.get_mut(&id).expect("a broker");
                if !b.replica.is_leader() {
                    return self.answer_produce(id, pid, Err(error_code::NOT_LEADER_OR_FOLLOWER));
                }
                if b.replica.in_sync_count() < MIN_INSYNC {
                    return self.answer_produce(id, pid, Err(error_code::NOT_ENOUGH_REPLICAS));
                }
                if b.writing_from.is_some() {
                    b.queued.push(pid);
                    return;
                }
                self.start_leader_write(id, vec![pid]);
            }
            Msg::Fetch {
                seq,
                leader_epoch,
                offset,
                incarnation,
            } => {
                let b = self.brokers.get_mut(&id).expect("a broker");
                let answer = if !b.replica.is_leader() {
                    Err(error_code::NOT_LEADER_OR_FOLLOWER)
                } else if leader_epoch < b.replica.leader_epoch() {
                    Err(error_code::FENCED_LEADER_EPOCH)
                } else if leader_epoch > b.replica.leader_epoch() {
                    Err(error_code::UNKNOWN_LEADER_EPOCH)
                } else if offset > b.leo() {
                    Err(error_code::OFFSET_OUT_OF_RANGE)
                } else {
                    if b.writing_from.is_some_and(|from| offset as usize > from) {
                        self.overlap.follower_wrote_first += 1;
                    }
                    // The follower's broker epoch as this leader's image
                    // has it, as pinlog's fetch handler passes it.
                    let fetcher_epoch = b
                        .image
                        .brokers
                        .get(&(from as i32))
                        .map_or(UNKNOWN_BROKER_EPOCH, |r| r.epoch);
                    match b
                        .replica
                        .on_follower_fetch(from as i32, offset, now, fetcher_epoch)
                    {
                        Err(_) => Err(error_code::NOT_LEADER_OR_FOLLOWER),
                        Ok(outcome) => {
                            self.counted_fetch.insert((id, from as i32), incarnation);
                            let end = (offset as usize + FETCH_MAX_RECORDS).min(b.log.len());
                            let records = b.log[offset as usize..end].to_vec();
                            let hw = b.replica.high_watermark();
                            if let Some(change) = outcome.expand {
                                self.propose(id, change);
                            }
                            self.after_high_watermark(id);
                            Ok((records, hw))
                        }
                    }
                };
                self.send(node_of(id), from, Msg::FetchDone { seq, answer });
            }
            Msg::FetchDone { seq, answer } => {
                let b = self.brokers.get_mut(&id).expect("a broker");
                let Some((s, epoch)) = b.outstanding else {
                    return;
                };
                if s != seq || epoch != b.replica.leader_epoch() || b.replica.is_leader() {
                    return;
                }
                b.outstanding = None;
                match answer {
                    Ok((records, hw)) if records.is_empty() => {
                        let leo = b.leo();
                        b.replica.on_fetched(&fetched(leo, hw));
                        b.next_fetch_at = self.now + FETCH_BACKOFF_MS;
                    }
                    Ok((records, hw)) => {
                        // The append completes a moment later; a crash
                        // before then loses it.
                        b.appending = Some((seq, records, hw));
                        let incarnation = b.incarnation;
                        let delay = self.rng.between(1, 4);
                        self.schedule(
                            delay,
                            Event::AppendDone {
                                broker: id,
                                incarnation,
                                seq,
                            },
                        );
                    }
                    Err(code) if code == error_code::OFFSET_OUT_OF_RANGE => {
                        b.phase = Phase::Truncating;
                    }
                    Err(_) => b.next_fetch_at = self.now + FETCH_BACKOFF_MS * 5,
                }
            }
            Msg::EpochQuery {
                seq,
                leader_epoch,
                asked,
            } => {
                let b = &self.brokers[&id];
                let answer = if !b.replica.is_leader() {
                    Err(error_code::NOT_LEADER_OR_FOLLOWER)
                } else if leader_epoch < b.replica.leader_epoch() {
                    Err(error_code::FENCED_LEADER_EPOCH)
                } else if leader_epoch > b.replica.leader_epoch() {
                    Err(error_code::UNKNOWN_LEADER_EPOCH)
                } else {
                    Ok(b.epochs.end_offset_for(asked, b.leo()))
                };
                self.send(node_of(id), from, Msg::EpochAnswer { seq, answer });
            }
            Msg::EpochAnswer { seq, answer } => {
                let b = self.brokers.get_mut(&id).expect("a broker");
                let Some((s, epoch)) = b.outstanding else {
                    return;
                };
                if s != seq || epoch != b.replica.leader_epoch() || b.phase != Phase::Truncating {
                    return;
                }
                b.outstanding = None;
                let Ok((leader_epoch, leader_end)) = answer else {
                    b.next_fetch_at = self.now + FETCH_BACKOFF_MS * 5;
                    return;
                };
                let asked = b.epochs.latest_epoch().unwrap_or(UNDEFINED_EPOCH);
                let leo = b.leo();
                let step = {
                    let epochs = &b.epochs;
                    let local = LocalLog {
                        log_start_offset: 0,
                        log_end_offset: leo,
                        end_offset_for: |e| epochs.end_offset_for(e, leo),
                    };
                    truncation_offset(leader_epoch, leader_end, asked, &local)
                };
                let (to, again) = match step {
                    Truncation::To(o) => (o, false),
                    Truncation::ThenAskAgain(o) => (o, true),
                };
                let unclean = b.partition().is_some_and(|p| p.last_election_unclean());
                if to < leo {
                    b.log.truncate(to as usize);
                    let lost = b.replica.on_truncated(to, unclean);
                    assert_eq!(
                        lost, None,
                        "broker {id} truncated to {to}, below the HW it served as leader, \
                         with no unclean election"
                    );
                }
                // Even when no record goes: an entry starting at the log end
                // goes (`PartitionLog::truncate_to`).
                b.epochs.truncate_from_end(to);
                let line = format!("broker {id} truncates {leo} -> {to} (ask again: {again})");
                if !again {
                    self.brokers.get_mut(&id).expect("a broker").phase = Phase::Fetching;
                }
                self.note(line);
            }
            other => panic!("broker {id} got {other:?}"),
        }
    }

    /// The leader starts writing a group of produces: the records are in
    /// its log for followers to fetch, not in its file until
    /// [`Sim::leader_write_done`].
    fn start_leader_write(&mut self, id: i32, pids: Vec<u64>) {
        let b = self.brokers.get_mut(&id).expect("a broker");
        let epoch = b.replica.leader_epoch();
        b.writing_from = Some(b.log.len());
        for pid in pids {
            b.log.push(Record { epoch, id: pid });
            let offset = b.leo() - 1;
            b.waiting.push((offset, pid));
        }
        let end = b.leo();
        b.replica.on_append_started(end);
        let incarnation = b.incarnation;
        // Mostly quick; now and then a disk stall, long enough for the
        // followers to fetch and write the group first.
        let delay = match self.write_rng.below(LEADER_WRITE_STALL_ONE_IN) {
            0 => self.write_rng.between(10, 40),
            _ => self.write_rng.between(1, 4),
        };
        self.schedule(
            delay,
            Event::LeaderWriteDone {
                broker: id,
                incarnation,
            },
        );
    }

    fn leader_write_done(&mut self, id: i32, incarnation: u64) {
        let b = self.brokers.get_mut(&id).expect("a broker");
        if !b.up || b.incarnation != incarnation || b.writing_from.take().is_none() {
            return;
        }
        let leo = b.leo();
        b.replica.on_appended(leo);
        self.after_high_watermark(id);
        // What waited for the log's lock goes first, then the next group.
        let b = self.brokers.get_mut(&id).expect("a broker");
        let held = std::mem::take(&mut b.held);
        let queued = std::mem::take(&mut b.queued);
        for (from, msg) in held {
            self.broker_receive(id, from, msg);
        }
        let b = &self.brokers[&id];
        let refused = if !b.replica.is_leader() {
            Some(error_code::NOT_LEADER_OR_FOLLOWER)
        } else if b.replica.in_sync_count() < MIN_INSYNC {
            Some(error_code::NOT_ENOUGH_REPLICAS)
        } else {
            None
        };
        match refused {
            _ if queued.is_empty() => {}
            Some(code) => {
                for pid in queued {
                    self.answer_produce(id, pid, Err(code));
                }
            }
            // The held messages (images, epoch queries) start no write.
            None => self.start_leader_write(id, queued),
        }
    }

    fn append_done(&mut self, id: i32, incarnation: u64, seq: u64) {
        let b = self.brokers.get_mut(&id).expect("a broker");
        if !b.up || b.incarnation != incarnation {
            return;
        }
        let Some((s, records, hw)) = b.appending.take() else {
            return;
        };
        if s != seq {
            b.appending = Some((s, records, hw));
            return;
        }
        for r in records {
            let offset = b.leo();
            // As a follower's append of the leader's batches does.
            let _ = b.epochs.assign(r.epoch, offset);
            b.log.push(r);
        }
        let leo = b.leo();
        b.replica.on_fetched(&fetched(leo, hw));
    }

    fn check_step(&mut self) {
        // The HW never passes the log end on any replica.
        let bad: Vec<String> = self
            .brokers
            .values()
            .filter(|b| b.up && b.replica.high_watermark() > b.leo())
            .map(|b| {
                format!(
                    "broker {}'s HW {} is past its log end {}",
                    b.id,
                    b.replica.high_watermark(),
                    b.leo()
                )
            })
            .collect();
        for v in bad {
            self.violation(v);
        }
        // The committed image keeps its partition invariants: a leader is
        // in the ISR, the ISR and ELR are replicas and apart.
        if let Err(why) = self.controller.image.check_invariants() {
            self.violation(format!("the controller's image: {why}"));
        }
    }

    // ----- faults -----

    fn fault(&mut self, f: Fault) {
        self.note(format!("fault: {f:?}"));
        match f {
            Fault::Crash(id) => {
                self.lose_writes_in_flight(id);
            }
            Fault::PowerLoss { id, tail } => {
                self.lose_writes_in_flight(id);
                let b = self.brokers.get_mut(&id).expect("a broker");
                // The machine restarts: the broker cannot vouch for its log.
                b.broker_epoch = -1;
                b.previous_broker_epoch = -1;
                b.lost_power = true;
                self.lost_power.insert((id, b.incarnation));
                let keep = b.log.len().saturating_sub(tail as usize);
                b.log.truncate(keep);
                b.epochs.truncate_from_end(keep as i64);
                b.checkpointed_hw = b.checkpointed_hw.min(keep as i64);
            }
            Fault::Restart(id) => {
                let b = &self.brokers[&id];
                if b.up {
                    return;
                }
                // What survives a process crash: the completed appends, the
                // epoch cache, the checkpointed HW.
                let (log, epochs, hw) = (b.log.clone(), b.epochs.clone(), b.checkpointed_hw);
                // A process crash on a machine that kept running loses
                // nothing written, and pinlog's registration says so.
                let previous_broker_epoch = if b.broker_epoch >= 0 {
                    b.broker_epoch
                } else {
                    b.previous_broker_epoch
                };
                self.next_incarnation += 1;
                let mut fresh = Broker::new(id, self.next_incarnation, log, epochs, hw);
                fresh.lost_power = b.lost_power;
                fresh.previous_broker_epoch = previous_broker_epoch;
                fresh.last_heartbeat = 0;
                self.brokers.insert(id, fresh);
            }
            Fault::Cut(a, b) => {
                self.cut.insert((a, b));
                self.cut.insert((b, a));
            }
            Fault::CutOneWay(a, b) => {
                self.cut.insert((a, b));
            }
            Fault::Mend(a, b) => {
                self.cut.remove(&(a, b));
                self.cut.remove(&(b, a));
            }
            Fault::Loss(p) => self.loss_percent = p,
            Fault::HealNetwork => {
                self.cut.clear();
                self.loss_percent = 0;
            }
        }
    }

    /// The process stops: its appends in flight, a follower's and the
    /// leader's own, never reach its file.
    fn lose_writes_in_flight(&mut self, id: i32) {
        let b = self.brokers.get_mut(&id).expect("a broker");
        b.up = false;
        b.appending = None;
        if let Some(from) = b.writing_from.take() {
            b.log.truncate(from);
            self.overlap.leader_lost_its_write += 1;
        }
    }

    fn at(&mut self, time: Time, f: Fault) {
        let after = time.saturating_sub(self.now);
        self.schedule(after, Event::Fault(f));
    }

    /// A random schedule of faults over `[0, until)`, each healed within
    /// 3 s.
    fn random_faults(&mut self, until: Time, power_loss: bool) {
        let mut t = self.rng.between(200, 1000);
        let mut power_lost_until: Time = 0;
        // A process crash counts as an unclean shutdown when it falls
        // before the broker learned its new registration's epoch (Kafka
        // counts every crash so), which takes it out of the ELR. With a
        // power loss elsewhere that is two unclean machines at once, beyond
        // what replication without fsync promises, so crashes and power
        // losses keep apart as power losses do.
        let mut crashed_until: Time = 0;
        let nodes: Vec<Node> = BROKERS.iter().map(|&b| node_of(b)).collect();
        while t < until {
            let hold = self.rng.between(100, 3000);
            let a = BROKERS[self.rng.below(3) as usize];
            let b = BROKERS[(BROKERS.iter().position(|&x| x == a).unwrap()
                + 1
                + self.rng.below(2) as usize)
                % 3];
            // Without power losses, a seed keeps the schedule it had before
            // they were modelled (the fixed seeds of bugs 7 and 8).
            let kinds = if power_loss { 8 } else { 7 };
            match self.rng.below(kinds) {
                0 | 1 => {
                    if power_lost_until <= t || !power_loss {
                        self.at(t, Fault::Crash(a));
                        self.at(t + hold, Fault::Restart(a));
                        crashed_until = crashed_until.max(t + hold + POWER_LOSS_SETTLE_MS);
                    }
                }
                7 => {
                    // One machine at a time: losing unflushed appends on
                    // several at once is beyond what replication without
                    // fsync promises (Kafka's as well).
                    if power_lost_until <= t && crashed_until <= t {
                        let tail = self.rng.between(1, 20);
                        self.at(t, Fault::PowerLoss { id: a, tail });
                        self.at(t + hold, Fault::Restart(a));
                        power_lost_until = t + hold + POWER_LOSS_SETTLE_MS;
                    }
                }
                2 => {
                    // Isolate a broker from everyone.
                    for other in nodes.iter().copied().chain([CONTROLLER, CLIENT]) {
                        if other != node_of(a) {
                            self.at(t, Fault::Cut(node_of(a), other));
                            self.at(t + hold, Fault::Mend(node_of(a), other));
                        }
                    }
                }
                3 => {
                    self.at(t, Fault::Cut(node_of(a), node_of(b)));
                    self.at(t + hold, Fault::Mend(node_of(a), node_of(b)));
                }
                4 => {
                    self.at(t, Fault::CutOneWay(node_of(a), node_of(b)));
                    self.at(t + hold, Fault::Mend(node_of(a), node_of(b)));
                }
                5 => {
                    self.at(t, Fault::Cut(node_of(a), CONTROLLER));
                    self.at(t + hold, Fault::Mend(node_of(a), CONTROLLER));
                }
                _ => {
                    let p = self.rng.between(5, 40);
                    self.at(t, Fault::Loss(p));
                    self.at(t + hold, Fault::Loss(0));
                }
            }
            t += self.rng.between(100, 1500);
        }
        self.at(until, Fault::HealNetwork);
        for id in BROKERS {
            self.at(until, Fault::Restart(id));
        }
    }

    /// Heals everything, stops producing, lets the cluster settle, and
    /// checks what must hold at the end.
    fn finish(&mut self, heal_at: Time) -> Result<(), String> {
        self.at(heal_at, Fault::HealNetwork);
        for id in BROKERS {
            self.at(heal_at, Fault::Restart(id));
        }
        self.run_until(heal_at + HEAL_PHASE_MS / 2);
        self.client.producing = false;
        self.run_until(heal_at + HEAL_PHASE_MS);
        let image = &self.controller.image;
        let p = image.partition("sim", 0).expect("the partition").clone();
        if p.leader < 0 {
            self.violation(format!("no leader after healing: {p:?}"));
            return self.verdict();
        }
        let leader_log = self.brokers[&p.leader].log.clone();
        for (&id, &offset) in &self.client.acked.clone() {
            if leader_log.get(offset as usize).map(|r| r.id) != Some(id) {
                self.violation(format!(
                    "acknowledged {id} at {offset} is lost: the final log has {:?} there",
                    leader_log.get(offset as usize)
                ));
            }
        }
        for (&o, &id) in &self.exposed.clone() {
            if leader_log.get(o as usize).map(|r| r.id) != Some(id) {
                self.violation(format!(
                    "{id} was exposed at {o} and vanished: the final log has {:?} there",
                    leader_log.get(o as usize)
                ));
            }
        }
        for id in BROKERS {
            let b = &self.brokers[&id];
            if b.log != leader_log {
                let (len, leader_len) = (b.log.len(), leader_log.len());
                self.violation(format!(
                    "broker {id}'s log ({len} records) differs from leader {}'s ({leader_len})",
                    p.leader
                ));
            }
        }
        let mut isr = p.isr.clone();
        isr.sort_unstable();
        if isr != BROKERS.to_vec() {
            let states: Vec<String> = BROKERS
                .iter()
                .map(|id| {
                    let b = &self.brokers[id];
                    format!(
                        "broker {id}: leo {} phase {:?} outstanding {:?} serving {} {:?}",
                        b.leo(),
                        b.phase,
                        b.outstanding,
                        b.serving(),
                        b.replica
                    )
                })
                .collect();
            self.violation(format!(
                "the ISR did not regrow after healing: {p:?}; {}",
                states.join("; ")
            ));
        }
        self.verdict()
    }

    fn verdict(&self) -> Result<(), String> {
        if self.violations.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} violation(s): {:?}\ntrace (last {} events):\n{}",
                self.violations.len(),
                self.violations,
                self.trace.len(),
                self.trace.iter().cloned().collect::<Vec<_>>().join("\n")
            ))
        }
    }

    fn acknowledged(&self) -> usize {
        self.client.acked.len()
    }
}

fn incarnation_uuid(n: u64) -> Uuid {
    let mut u = [0u8; 16];
    u[..8].copy_from_slice(&n.to_be_bytes());
    u[8] = 1;
    u
}

/// Runs `build` to completion for `seed`, catching a panic of the real
/// cores' assertions as a failure of the seed.
/// One seed as `random_seeds` runs it: random faults (with power losses if
/// `power_loss`), then healing.
fn random_run(seed: u64, power_loss: bool) -> Result<RunStats, String> {
    run_seed(seed, |sim| {
        sim.random_faults(FAULT_PHASE_MS, power_loss);
        sim.run_until(FAULT_PHASE_MS);
        sim.finish(FAULT_PHASE_MS)
    })
}

fn run_seed(
    seed: u64,
    build: impl FnOnce(&mut Sim) -> Result<(), String>,
) -> Result<RunStats, String> {
    let mut sim = Sim::new(seed);
    let outcome = catch_unwind(AssertUnwindSafe(|| build(&mut sim)));
    match outcome {
        Ok(Ok(())) => Ok(RunStats {
            acknowledged: sim.acknowledged(),
            overlap: sim.overlap,
        }),
        Ok(Err(e)) => Err(format!("seed {seed}: {e}")),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!(
                "seed {seed}: a core panicked: {what}\ntrace:\n{}",
                sim.trace.iter().cloned().collect::<Vec<_>>().join("\n")
            ))
        }
    }
}

fn env_u64(var: &str) -> Option<u64> {
    std::env::var(var).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{var}={v} is not a number"))
    })
}

#[test]
fn random_seeds() {
    let seeds = env_u64("PINLOG_SIM_SEEDS").unwrap_or(DEFAULT_SEEDS);
    // Fixed by default, so that CI runs the same seeds every time and a
    // landing is not refused by a bug that another seed would have found
    // long ago; explore with PINLOG_SIM_FIRST_SEED=$(date +%s).
    let first = env_u64("PINLOG_SIM_FIRST_SEED").unwrap_or(DEFAULT_FIRST_SEED);
    eprintln!(
        "simulation: seeds {first}..{} (PINLOG_SIM_FIRST_SEED={first})",
        first + seeds
    );
    let power_loss = power_loss_enabled();
    eprintln!(
        "simulation: power losses {}",
        if power_loss { "on" } else { "off" }
    );
    let started = std::time::Instant::now();
    let mut acknowledged = 0;
    let mut overlap = Overlap::default();
    let mut failures = Vec::new();
    for seed in first..first + seeds {
        let outcome = random_run(seed, power_loss);
        match outcome {
            Ok(run) => {
                acknowledged += run.acknowledged;
                overlap.follower_wrote_first += run.overlap.follower_wrote_first;
                overlap.leader_lost_its_write += run.overlap.leader_lost_its_write;
            }
            Err(e) => failures.push(e),
        }
    }
    eprintln!(
        "simulation: {seeds} seeds in {:?}, {acknowledged} records acknowledged, {} failed; \
         {overlap:?}",
        started.elapsed(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {seeds} seeds failed; the first:\n{}",
        failures.len(),
        failures[0]
    );
    assert!(
        acknowledged > seeds as usize * 100,
        "too little was acknowledged"
    );
    // Both orders of the leader's write and a follower's, and crashes
    // between them, are what the overlap must survive: the seeds must
    // produce them (a handful of seeds may not).
    if seeds >= 100 {
        assert!(
            overlap.follower_wrote_first > 0 && overlap.leader_lost_its_write > 0,
            "the schedules never overlapped replication with a leader's write: {overlap:?}"
        );
    }
}

/// A follower that led an epoch without appending, then followed a leader
/// that never knew that epoch, kept asking about it and never fetched again
/// (its epoch entry at the log end was not truncated).
#[test]
fn a_leader_replaced_before_appending_fetches_again() {
    random_run(1_796_163_106, false).unwrap_or_else(|e| panic!("{e}"));
}

/// KIP-903 (found by seed 20261525 once leader writes were modelled):
/// broker 3 catches up and the leader proposes it for the ISR, but the
/// proposal gets no answer. Broker 3 loses power, with records below the
/// HW, and registers again. The leader's retry of the expansion, sent with
/// broker 3's current broker epoch, put it back in the ISR below the HW,
/// and it then led without acknowledged records. The expansion now carries
/// the epoch broker 3 fetched with, and the controller refuses it.
#[test]
fn an_expansion_from_a_fetch_before_a_power_loss_is_refused() {
    fixed_case("KIP-903", |sim| {
        sim.run_until(1000);
        // Broker 3 falls out of the ISR.
        sim.at(1000, Fault::Cut(node_of(3), node_of(1)));
        sim.at(2500, Fault::Mend(node_of(3), node_of(1)));
        // Its next fetch (once its cut one times out) catches up; the
        // leader's proposal, and its first retry, are lost.
        sim.at(3000, Fault::Cut(node_of(1), CONTROLLER));
        sim.at(3300, Fault::PowerLoss { id: 3, tail: 30 });
        sim.at(3300, Fault::Cut(node_of(3), node_of(1)));
        sim.at(3400, Fault::Restart(3));
        // Within the leader's session; its next retry reaches the
        // controller, after broker 3 registered again.
        sim.at(4000, Fault::Mend(node_of(1), CONTROLLER));
        sim.run_until(4250);
        let isr = sim_partition(sim).isr;
        if isr.contains(&3) {
            return Err(format!("broker 3 rejoined the ISR {isr:?} below the HW"));
        }
        // Had it rejoined, it would now lead without acknowledged records.
        sim.at(4300, Fault::Crash(1));
        sim.at(4300, Fault::Crash(2));
        sim.at(7500, Fault::Restart(1));
        sim.at(7500, Fault::Restart(2));
        sim.run_until(9500);
        sim.finish(9500)
    });
}

/// An ISR expansion committed while its answer was lost: the leader took
/// the lost answer for a refusal, let its HW pass the new member, and that
/// member then led without the records exposed (a lost acknowledged write).
#[test]
fn a_lost_alter_partition_answer_keeps_the_hw_waiting() {
    random_run(20_262_160, false).unwrap_or_else(|e| panic!("{e}"));
}

/// Bug 9 (its seed's schedule changed when leader writes were modelled and
/// crashes kept apart from power losses, so it now runs a history of its
/// own; `last_replica_down` cases cover KIP-966 with explicit faults):
/// broker 3 of the ISR [1, 3] lost power; the controller, not yet
/// knowing, fenced broker 1 and elected 3, which came back with a shorter
/// log and led it, overwriting acknowledged records. Its registration now
/// says its shutdown was unclean, so it leaves the ISR, and broker 1 (in
/// the ELR) leads instead.
#[test]
fn a_replica_that_lost_power_does_not_lead_its_shorter_log() {
    random_run(20_261_202, true).unwrap_or_else(|e| panic!("{e}"));
}

/// Checks that a fixed case acknowledged something and ends well.
fn fixed_case(name: &str, build: impl FnOnce(&mut Sim) -> Result<(), String>) {
    match run_seed(1, build) {
        Ok(run) => assert!(
            run.acknowledged > 100,
            "{name}: only {} records acknowledged",
            run.acknowledged
        ),
        Err(e) => panic!("{name}: {e}"),
    }
}

/// Seed 000, scenario 1: the follower restarts after the leader advanced
/// its HW but before the follower learned it, then the leader dies and the
/// follower leads. With HW truncation the follower would drop a record the
/// leader acknowledged; with leader epochs it keeps it.
#[test]
fn seed000_follower_restarts_then_leader_dies() {
    fixed_case("seed 000 scenario 1", |sim| {
        sim.run_until(2000);
        sim.at(2000, Fault::Crash(2));
        sim.at(2000, Fault::Crash(3));
        sim.at(2100, Fault::Restart(2));
        sim.at(2150, Fault::Crash(1));
        sim.at(6000, Fault::Restart(1));
        sim.at(6000, Fault::Restart(3));
        sim.run_until(8000);
        sim.finish(8000)
    });
}

/// Seed 000, scenario 2: leader and follower die together; the follower
/// comes back first and leads, takes new writes at offsets the old leader
/// also wrote; the old leader must truncate to the divergence point.
#[test]
fn seed000_both_die_and_logs_diverge() {
    fixed_case("seed 000 scenario 2", |sim| {
        sim.run_until(2000);
        sim.at(2000, Fault::Crash(1));
        sim.at(2000, Fault::Crash(2));
        sim.at(2000, Fault::Crash(3));
        sim.at(2200, Fault::Restart(2));
        sim.at(2200, Fault::Restart(3));
        sim.at(5000, Fault::Restart(1));
        sim.run_until(8000);
        sim.finish(8000)
    });
}

/// Jepsen's Kafka 0.8 loss: the followers are cut off, the ISR shrinks to
/// the leader, the leader keeps taking writes (min.insync.replicas=1 in
/// 0.8), then dies, and a former follower leads without them. With
/// min.insync.replicas=2 the lone leader refuses acks=all writes and no
/// acknowledged write is lost.
#[test]
fn jepsen_kafka08_isr_shrink() {
    fixed_case("Jepsen Kafka 0.8", |sim| {
        sim.run_until(2000);
        for f in [2, 3] {
            sim.at(2000, Fault::Cut(node_of(1), node_of(f)));
        }
        sim.at(5000, Fault::Crash(1));
        sim.at(5000, Fault::HealNetwork);
        sim.at(9000, Fault::Restart(1));
        sim.run_until(10_000);
        sim.finish(10_000)
    });
}

/// KIP-966's history up to 9 s: the followers die, the ISR shrinks to
/// broker 1, broker 1 dies too, and the followers come back without it.
/// `follower_fault` is how the followers die.
fn last_replica_down(sim: &mut Sim, follower_fault: fn(i32) -> Fault) {
    sim.run_until(2000);
    sim.at(2000, follower_fault(2));
    sim.at(2000, follower_fault(3));
    // Long enough for the ISR to shrink to {1}.
    sim.at(5000, Fault::Crash(1));
    sim.at(5500, Fault::Restart(2));
    sim.at(5500, Fault::Restart(3));
    sim.run_until(9000);
}

fn sim_partition(sim: &Sim) -> PartitionImage {
    sim.controller
        .image
        .partition("sim", 0)
        .cloned()
        .expect("a partition")
}

/// KIP-966's last replica standing, with the ELR: the ISR shrinks to the
/// leader below min.insync.replicas, so the followers that left it enter
/// the ELR and the leader's HW stands still. When the leader dies too, a
/// follower back from a process crash (nothing it wrote was lost) leads
/// cleanly from the ELR, and every acknowledged and exposed record
/// survives.
#[test]
fn kip966_last_replica_standing() {
    fixed_case("KIP-966", |sim| {
        last_replica_down(sim, Fault::Crash);
        let p = sim_partition(sim);
        if ![2, 3].contains(&p.leader) || p.last_election_unclean() {
            return Err(format!(
                "an eligible replica should lead cleanly while the last ISR member is down: {p:?}"
            ));
        }
        sim.at(9000, Fault::Restart(1));
        sim.run_until(12_000);
        sim.finish(12_000)
    });
}

/// The same history, but the followers lost power: they may have lost
/// records they had not flushed, so their registrations take them out of
/// the ELR and they must not lead (unclean election is off). The partition
/// stays offline until the last ISR member returns.
#[test]
fn kip966_last_replica_standing_after_power_losses() {
    fixed_case("KIP-966 with power losses", |sim| {
        last_replica_down(sim, |id| Fault::PowerLoss { id, tail: 5 });
        let p = sim_partition(sim);
        if p.leader > 0 {
            return Err(format!(
                "a replica back from a power loss leads while the last ISR member is down: {p:?}"
            ));
        }
        sim.at(9000, Fault::Restart(1));
        sim.run_until(12_000);
        sim.finish(12_000)
    });
}

/// The checks can fail: with `unclean.leader.election.enable` on, a
/// replica that left the ISR while it was still at min.insync.replicas
/// (so not eligible) leads once every in-sync and eligible replica is
/// down. The records the ISR [1, 2] exposed after it left are then
/// reported as vanished.
#[test]
fn the_checks_catch_an_unclean_election() {
    let outcome = run_seed(1, |sim| {
        sim.controller.image.apply(
            sim.controller.image.offset + 1,
            &MetadataRecord::Config {
                resource_type: RESOURCE_TOPIC,
                resource_name: "sim".into(),
                name: "unclean.leader.election.enable".into(),
                value: Some("true".into()),
            },
        );
        sim.run_until(2000);
        sim.at(2000, Fault::Crash(3));
        // Long enough for the ISR to shrink to [1, 2] and expose records.
        sim.at(5000, Fault::Crash(2));
        sim.at(7000, Fault::Crash(1));
        sim.at(8000, Fault::Restart(3));
        sim.at(10_000, Fault::Restart(1));
        sim.at(10_000, Fault::Restart(2));
        sim.run_until(13_000);
        sim.finish(13_000)
    });
    let report = outcome.expect_err("an unclean election must lose exposed records");
    assert!(report.contains("and vanished"), "{report}");
}

/// The same seed gives the same run, event for event.
#[test]
fn a_seed_replays_exactly() {
    let trace = |seed| {
        let mut sim = Sim::new(seed);
        sim.random_faults(5000, true);
        sim.run_until(5000);
        (sim.trace.clone(), sim.acknowledged())
    };
    assert_eq!(trace(42), trace(42));
    assert_ne!(trace(42).0, trace(43).0);
}
