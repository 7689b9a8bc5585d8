//! Deterministic simulation of a KIP-848 consumer group: members join,
//! leave, crash (their session times out), leave for a while and come back
//! under their instance id, lag (heartbeat with a stale epoch), and the
//! subscribed topic grows, all drawn from a seeded generator with the
//! clock simulated. Some members speak the classic protocol inside the
//! group, as during an online migration (JoinGroup, SyncGroup, Heartbeat
//! and LeaveGroup of an eager assignor, which gives up everything before
//! it joins again); the group never converts back here (the downgrade is
//! the shell's decision). After every step:
//! - no partition is held (assigned or pending revocation) by two members;
//! - the assignment epoch never passes the group epoch, and member epochs
//!   never go backwards;
//! - each held partition keeps its assignment epoch (KIP-1251) while its
//!   member holds it, never above the member's epoch, and a partition a
//!   member newly holds was given at the member's new epoch;
//! - a new target moves no more partitions between members than the
//!   change of their counts requires (sticky);
//!
//! and after a quiet phase every subscribed partition is owned, the group
//! is Stable, clients (classic ones too) hold what the coordinator says,
//! and replaying the
//! records from their bytes rebuilds the same group.
//! A failing seed replays exactly: `SEED=n cargo test -p pinlog-core
//! --test consumer_group_simulation`.

use std::collections::BTreeMap;

use bytes::Bytes;
use pinlog_core::broker_config::consumer_group::ConsumerGroupConfig;
use pinlog_core::group::consumer::classic::{ClassicJoinRequest, CONSUMER_PROTOCOL_TYPE};
use pinlog_core::group::consumer::heartbeat::{unknown_group_error, validate_request};
use pinlog_core::group::consumer::{
    replay_into, Assignment, ConsumerGroup, ConsumerGroupRecord, ConsumerGroupState,
    HeartbeatContext, HeartbeatRequest, HeartbeatResponse, TimerOp, TopicsImage,
};
use pinlog_core::group::consumer_protocol::{decode_assignment, encode_subscription, Subscription};

/// xorshift64*: small, seedable, and the same on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Debug, Clone)]
enum Client {
    Active {
        member_id: String,
        instance: Option<String>,
        epoch: i32,
        owned: Assignment,
    },
    /// Told it is fenced (or new): owns nothing and joins at epoch 0.
    Rejoin {
        member_id: String,
        instance: Option<String>,
    },
    /// A static member that left with -2 and will restart.
    Away { instance: String },
    /// A member of the classic protocol with an eager assignor: it owns
    /// what its last SyncGroup gave it, and nothing once told to rejoin.
    Classic {
        /// Empty until its first join.
        member_id: String,
        generation: i32,
        owned: Assignment,
        synced: bool,
    },
}

struct Sim {
    rng: Rng,
    groups: BTreeMap<String, ConsumerGroup>,
    log: Vec<ConsumerGroupRecord>,
    config: ConsumerGroupConfig,
    image: TopicsImage,
    now_ms: i64,
    clients: Vec<Client>,
    sessions: BTreeMap<String, i64>,
    rebalances: BTreeMap<String, (i32, i64)>,
    /// Classic members' JoinGroup and SyncGroup deadlines.
    classic_deadlines: BTreeMap<String, i64>,
    next_id: u64,
    /// The last member epoch seen of each member id.
    epochs: BTreeMap<String, i32>,
    /// Each member's held partitions and their assignment epochs at the
    /// last check.
    holdings: BTreeMap<String, BTreeMap<([u8; 16], i32), i32>>,
    /// How often the interesting paths ran, so that a change that stops
    /// exercising them fails the test instead of passing it vacuously.
    seen: Coverage,
}

#[derive(Debug, Default, Clone, Copy)]
struct Coverage {
    fenced: usize,
    revoking: usize,
    static_returns: usize,
    expired: usize,
    classic_syncs: usize,
    classic_rejoins: usize,
}

impl Sim {
    fn new(seed: u64) -> Sim {
        let mut image = TopicsImage::default();
        image.add_topic("orders", 6, &["r1", "r2"]);
        Sim {
            rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            groups: BTreeMap::new(),
            log: Vec::new(),
            config: ConsumerGroupConfig::default(),
            image,
            now_ms: 0,
            clients: Vec::new(),
            sessions: BTreeMap::new(),
            rebalances: BTreeMap::new(),
            classic_deadlines: BTreeMap::new(),
            next_id: 0,
            epochs: BTreeMap::new(),
            holdings: BTreeMap::new(),
            seen: Coverage::default(),
        }
    }

    fn fresh_id(&mut self) -> String {
        self.next_id += 1;
        format!("m{}", self.next_id)
    }

    fn group(&self) -> Option<&ConsumerGroup> {
        self.groups.get("g")
    }

    fn apply(&mut self, records: Vec<ConsumerGroupRecord>, timers: Vec<TimerOp>) {
        let before = self
            .group()
            .map(|g| (g.assignment_epoch(), g.targets().clone()));
        for r in records {
            replay_into(&mut self.groups, &r);
            self.log.push(r);
        }
        for t in timers {
            match t {
                TimerOp::Session {
                    member_id,
                    deadline_ms,
                } => {
                    self.sessions.insert(member_id, deadline_ms);
                }
                TimerOp::Rebalance {
                    member_id,
                    member_epoch,
                    deadline_ms,
                } => {
                    self.rebalances
                        .insert(member_id, (member_epoch, deadline_ms));
                }
                TimerOp::CancelRebalance { member_id } => {
                    self.rebalances.remove(&member_id);
                }
                TimerOp::CancelAll { member_id } => {
                    self.sessions.remove(&member_id);
                    self.rebalances.remove(&member_id);
                    self.classic_deadlines.remove(&member_id);
                }
                // One deadline per classic member stands for both: a join
                // cancels the join deadline and arms the sync deadline.
                TimerOp::ClassicJoin {
                    member_id,
                    deadline_ms,
                } => {
                    self.classic_deadlines
                        .entry(member_id)
                        .or_insert(deadline_ms);
                }
                TimerOp::ClassicSync {
                    member_id,
                    deadline_ms,
                } => {
                    self.classic_deadlines.insert(member_id, deadline_ms);
                }
                TimerOp::CancelClassicJoin { member_id }
                | TimerOp::CancelClassicSync { member_id } => {
                    self.classic_deadlines.remove(&member_id);
                }
            }
        }
        self.check(before);
    }

    fn heartbeat(&mut self, req: HeartbeatRequest) -> Result<HeartbeatResponse, i16> {
        validate_request(&req, &self.config).map_err(|e| e.error_code)?;
        let fresh = ConsumerGroup::new("g");
        let group = match self.groups.get("g") {
            Some(g) => g,
            None if req.member_epoch == 0 => &fresh,
            None => return Err(unknown_group_error("g").error_code),
        };
        let session_deadline = |m: &str| self.sessions.get(m).copied();
        let ctx = HeartbeatContext {
            now_ms: self.now_ms,
            config: &self.config,
            topics: &self.image,
            fresh_member_id: "unused",
            may_describe: None,
            session_deadline_ms: Some(&session_deadline),
        };
        let out = group.heartbeat(&req, &ctx).map_err(|e| e.error_code)?;
        self.apply(out.records, out.timers);
        Ok(out.response)
    }

    fn request(
        member_id: &str,
        instance: &Option<String>,
        epoch: i32,
        owned: &Assignment,
    ) -> HeartbeatRequest {
        HeartbeatRequest {
            api_version: 1,
            group_id: "g".into(),
            member_id: member_id.into(),
            member_epoch: epoch,
            instance_id: instance.clone(),
            rack_id: Some(if member_id.len() % 2 == 0 { "r1" } else { "r2" }.into()),
            rebalance_timeout_ms: if epoch == 0 { 30_000 } else { -1 },
            subscribed_topic_names: (epoch == 0).then(|| vec!["orders".to_string()]),
            topic_partitions: Some(owned.to_topic_partitions()),
            client_id: "sim".into(),
            client_host: "/10.0.0.1".into(),
            ..HeartbeatRequest::default()
        }
    }

    /// One heartbeat of client `i`, its epoch `lag` behind.
    fn beat(&mut self, i: usize, lag: i32) {
        if matches!(self.clients[i], Client::Classic { .. }) {
            self.classic_step(i);
            return;
        }
        let (req, instance) = match &self.clients[i] {
            Client::Active {
                member_id,
                instance,
                epoch,
                owned,
            } => (
                Sim::request(member_id, instance, (*epoch - lag).max(1), owned),
                instance.clone(),
            ),
            Client::Rejoin {
                member_id,
                instance,
            } => (
                Sim::request(member_id, instance, 0, &Assignment::new()),
                instance.clone(),
            ),
            Client::Away { instance } => {
                // Restarted, under a new member id.
                let instance = Some(instance.clone());
                let id = self.fresh_id();
                (
                    Sim::request(&id, &instance, 0, &Assignment::new()),
                    instance,
                )
            }
            Client::Classic { .. } => unreachable!("classic clients take classic_step"),
        };
        let member_id = req.member_id.clone();
        let returning = matches!(self.clients[i], Client::Away { .. });
        match self.heartbeat(req) {
            Ok(r) => {
                self.seen.static_returns += returning as usize;
                let owned = match (&self.clients[i], &r.assignment) {
                    (_, Some(a)) => Assignment::from_topic_partitions(a),
                    (Client::Active { owned, .. }, None) => owned.clone(),
                    (_, None) => Assignment::new(),
                };
                self.clients[i] = Client::Active {
                    member_id: r.member_id,
                    instance,
                    epoch: r.member_epoch,
                    owned,
                };
            }
            // Fenced or forgotten (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID,
            // GROUP_ID_NOT_FOUND, FENCED_INSTANCE_ID): drop all, rejoin.
            Err(110) | Err(25) | Err(69) | Err(82) => {
                self.seen.fenced += 1;
                self.clients[i] = Client::Rejoin {
                    member_id,
                    instance,
                };
            }
            // UNRELEASED_INSTANCE_ID: the old incarnation still holds the
            // instance id; try again later.
            Err(111) => {}
            Err(code) => panic!("unexpected error {code}"),
        }
    }

    /// One request of classic client `i`: a join and a sync when it must
    /// (re)join, else a heartbeat. It joins only a group with members, as
    /// the broker sends JoinGroup to a consumer group only then.
    fn classic_step(&mut self, i: usize) {
        let Client::Classic {
            member_id,
            generation,
            synced,
            ..
        } = self.clients[i].clone()
        else {
            return;
        };
        if self.groups.get("g").is_none_or(|g| g.is_empty()) {
            return;
        }
        let fresh = self.fresh_id();
        let g = self.groups.get("g").expect("checked above");
        if synced {
            match g.classic_heartbeat(&member_id, None, generation, self.now_ms) {
                Ok(o) => {
                    let code = o.response;
                    self.apply(Vec::new(), o.timers);
                    if code == REBALANCE_IN_PROGRESS {
                        // An eager member revokes all before it rejoins.
                        self.seen.classic_rejoins += 1;
                        self.set_classic(i, member_id, generation, Assignment::new(), false);
                    }
                }
                // Fenced (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION): start over.
                Err(_) => self.set_classic(i, String::new(), -1, Assignment::new(), false),
            }
            return;
        }
        let req = ClassicJoinRequest {
            member_id: member_id.clone(),
            instance_id: None,
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            protocol_type: CONSUMER_PROTOCOL_TYPE.into(),
            protocols: vec![("range".into(), classic_subscription())],
            client_id: "classic-sim".into(),
            client_host: "/10.0.0.2".into(),
            require_known_member_id: false,
        };
        let ctx = HeartbeatContext {
            now_ms: self.now_ms,
            config: &self.config,
            topics: &self.image,
            fresh_member_id: &fresh,
            may_describe: None,
            session_deadline_ms: None,
        };
        let joined = match g.classic_join(&req, &ctx) {
            Ok(o) => o,
            Err(e) => panic!("a classic join refused: {e:?}"),
        };
        let response = joined.response.clone();
        self.apply(joined.records, joined.timers);
        let g = self.groups.get("g").expect("the group has members");
        match g.classic_sync(
            &response.member_id,
            None,
            response.generation_id,
            Some(CONSUMER_PROTOCOL_TYPE),
            Some(&response.protocol_name),
            self.now_ms,
            &self.image,
        ) {
            Ok(o) => {
                let named = decode_assignment(&o.response).expect("an assignment");
                let topic = self.image.by_name("orders").expect("the topic").id;
                let owned = Assignment::from_pairs(
                    named
                        .into_iter()
                        .flat_map(|(_, ps)| ps.into_iter().map(move |p| (topic, p))),
                );
                assert_eq!(
                    &owned,
                    &g.member(&response.member_id).unwrap().assigned_partitions,
                    "SyncGroup hands out the member's assigned partitions"
                );
                self.seen.classic_syncs += 1;
                self.apply(Vec::new(), o.timers);
                self.set_classic(i, response.member_id, response.generation_id, owned, true);
            }
            Err(e) if e.error_code == REBALANCE_IN_PROGRESS => {
                let (id, generation) = (response.member_id, response.generation_id);
                self.set_classic(i, id, generation, Assignment::new(), false);
            }
            Err(e) => panic!("a classic sync refused: {e:?}"),
        }
    }

    fn set_classic(
        &mut self,
        i: usize,
        member_id: String,
        generation: i32,
        owned: Assignment,
        synced: bool,
    ) {
        self.clients[i] = Client::Classic {
            member_id,
            generation,
            owned,
            synced,
        };
    }

    fn fire_timers(&mut self) {
        let now = self.now_ms;
        let due: Vec<String> = self
            .sessions
            .iter()
            .filter(|(_, d)| **d <= now)
            .map(|(m, _)| m.clone())
            .collect();
        for m in due {
            self.sessions.remove(&m);
            if let Some(g) = self.group() {
                let (records, timers) = g.session_expired(&m);
                self.seen.expired += !records.is_empty() as usize;
                self.apply(records, timers);
            }
        }
        let due: Vec<(String, i32)> = self
            .rebalances
            .iter()
            .filter(|(_, (_, d))| *d <= now)
            .map(|(m, (e, _))| (m.clone(), *e))
            .collect();
        for (m, e) in due {
            self.rebalances.remove(&m);
            if let Some(g) = self.group() {
                let (records, timers) = g.rebalance_expired(&m, e);
                self.apply(records, timers);
            }
        }
        let due: Vec<String> = self
            .classic_deadlines
            .iter()
            .filter(|(_, d)| **d <= now)
            .map(|(m, _)| m.clone())
            .collect();
        for m in due {
            self.classic_deadlines.remove(&m);
            if let Some(g) = self.group() {
                let (records, timers) = g.session_expired(&m);
                self.apply(records, timers);
            }
        }
    }

    fn check(&mut self, before: Option<(i32, BTreeMap<String, Assignment>)>) {
        let Some(g) = self.groups.get("g") else {
            return;
        };
        // No partition held twice (replay asserts it too).
        let mut held: BTreeMap<([u8; 16], i32), &str> = BTreeMap::new();
        for m in g.members().values() {
            for tp in m
                .assigned_partitions
                .iter()
                .chain(m.partitions_pending_revocation.iter())
            {
                if let Some(other) = held.insert(tp, &m.member_id) {
                    panic!("partition {tp:?} held by {other} and {}", m.member_id);
                }
            }
        }
        assert!(g.assignment_epoch() <= g.group_epoch());
        self.seen.revoking += g
            .members()
            .values()
            .filter(|m| !m.partitions_pending_revocation.is_empty())
            .count();
        // Member epochs never go back (a static member's -2 aside).
        for m in g.members().values() {
            if m.member_epoch == -2 {
                continue;
            }
            let seen = self
                .epochs
                .entry(m.member_id.clone())
                .or_insert(m.member_epoch);
            assert!(
                m.member_epoch >= *seen,
                "{} went from epoch {seen} to {}",
                m.member_id,
                m.member_epoch
            );
            *seen = m.member_epoch;
        }
        // Assignment epochs (KIP-1251), which let a commit with an older
        // member epoch through for the partitions given at or before it: a
        // held partition keeps its epoch while the member holds it, never
        // above the member's epoch, and a partition a member (seen at the
        // last check) newly holds was given at its new epoch, so no commit
        // from an epoch at which it did not hold it passes. A static
        // member's replacement takes its partitions over at epoch 0, and
        // is new here.
        let mut holdings = BTreeMap::new();
        for m in g.members().values() {
            let held = m.held_assignment_epochs();
            if m.member_epoch >= 0 {
                let before = self.holdings.get(&m.member_id);
                for (tp, epoch) in &held {
                    assert!(
                        *epoch <= m.member_epoch,
                        "{} holds {tp:?} from epoch {epoch}, after its epoch {}",
                        m.member_id,
                        m.member_epoch
                    );
                    match before.map(|b| b.get(tp)) {
                        Some(Some(was)) => assert_eq!(
                            was, epoch,
                            "{} kept {tp:?} but its assignment epoch moved",
                            m.member_id
                        ),
                        Some(None) => assert_eq!(
                            *epoch, m.member_epoch,
                            "{} was given {tp:?} at another epoch than its own",
                            m.member_id
                        ),
                        None => {}
                    }
                }
            }
            holdings.insert(m.member_id.clone(), held);
        }
        self.holdings = holdings;
        // Sticky: partitions leave a member only as far as its count falls.
        if let Some((old_epoch, old)) = before {
            if g.assignment_epoch() != old_epoch {
                let mut moved = 0usize;
                let mut bound = 0usize;
                for (id, new) in g.targets() {
                    let Some(prev) = old.get(id) else {
                        continue;
                    };
                    let valid: Vec<_> = prev
                        .iter()
                        .filter(|(t, p)| {
                            self.image
                                .by_id(t)
                                .is_some_and(|info| *p < info.num_partitions())
                        })
                        .collect();
                    moved += valid.iter().filter(|(t, p)| !new.contains(t, *p)).count();
                    bound += valid.len().saturating_sub(new.len());
                }
                assert!(
                    moved <= bound,
                    "moved {moved} partitions where {bound} had to move"
                );
            }
        }
    }

    fn step(&mut self) {
        self.now_ms += self.rng.below(2_000) as i64;
        self.fire_timers();
        let roll = self.rng.below(100);
        let n = self.clients.len();
        match roll {
            0..=7 if n < 6 => {
                let id = self.fresh_id();
                let instance = (self.rng.below(3) == 0).then(|| format!("inst-{id}"));
                self.clients.push(Client::Rejoin {
                    member_id: id,
                    instance,
                });
                self.beat(n, 0);
            }
            26..=29 if n < 6 => {
                // A member of the classic protocol.
                self.clients.push(Client::Classic {
                    member_id: String::new(),
                    generation: -1,
                    owned: Assignment::new(),
                    synced: false,
                });
                self.classic_step(n);
            }
            8..=9 if n > 0 => {
                // Leave for good.
                let i = self.rng.below(n as u64) as usize;
                if let Client::Classic { member_id, .. } = self.clients[i].clone() {
                    if let Some(g) = self.group() {
                        let out = g.classic_leave(&[(member_id, None)]);
                        self.apply(out.records, out.timers);
                    }
                    self.clients.remove(i);
                } else if let Client::Active {
                    member_id,
                    instance,
                    owned,
                    ..
                } = self.clients[i].clone()
                {
                    let _ = self.heartbeat(Sim::request(&member_id, &instance, -1, &owned));
                    self.clients.remove(i);
                }
            }
            10..=11 if n > 0 => {
                // Crash: silence until the session times out.
                let i = self.rng.below(n as u64) as usize;
                self.clients.remove(i);
            }
            12..=14 if n > 0 => {
                // A static member leaves for a while.
                let i = self.rng.below(n as u64) as usize;
                if let Client::Active {
                    member_id,
                    instance: Some(inst),
                    owned,
                    ..
                } = self.clients[i].clone()
                {
                    let req = Sim::request(&member_id, &Some(inst.clone()), -2, &owned);
                    if self.heartbeat(req).is_ok() {
                        self.clients[i] = Client::Away { instance: inst };
                    }
                }
            }
            15 => {
                // The topic grows.
                let partitions = self
                    .image
                    .by_name("orders")
                    .map_or(6, |t| t.num_partitions());
                if partitions < 12 {
                    self.image
                        .add_topic("orders", partitions + 1, &["r1", "r2"]);
                }
            }
            16..=25 if n > 0 => {
                // Lag: a stale epoch.
                let i = self.rng.below(n as u64) as usize;
                let lag = 1 + self.rng.below(2) as i32;
                self.beat(i, lag);
            }
            _ if n > 0 => {
                let i = self.rng.below(n as u64) as usize;
                self.beat(i, 0);
            }
            _ => {}
        }
    }

    /// Everyone heartbeats properly for longer than a session timeout, so
    /// that crashed members are fenced and the group settles.
    fn settle(&mut self) {
        let rounds = 2 * self.config.session_timeout_ms as i64 / 2_000;
        for _ in 0..rounds {
            self.now_ms += 2_000;
            self.fire_timers();
            for i in 0..self.clients.len() {
                self.beat(i, 0);
            }
        }
    }
}

fn run(seed: u64, steps: usize) -> Coverage {
    let mut sim = Sim::new(seed);
    for _ in 0..steps {
        sim.step();
    }
    sim.settle();
    if let Some(g) = sim.group() {
        if sim.clients.is_empty() {
            assert_eq!(g.state(), ConsumerGroupState::Empty, "seed {seed}");
        } else {
            assert_eq!(g.state(), ConsumerGroupState::Stable, "seed {seed}");
            let topic = sim.image.by_name("orders").unwrap();
            for p in 0..topic.num_partitions() {
                assert!(
                    g.owner(&topic.id, p).is_some(),
                    "seed {seed}: partition {p} unowned"
                );
            }
            for c in &sim.clients {
                if let Client::Active {
                    member_id, owned, ..
                }
                | Client::Classic {
                    member_id, owned, ..
                } = c
                {
                    assert_eq!(
                        &g.member(member_id).unwrap().assigned_partitions,
                        owned,
                        "seed {seed}"
                    );
                }
            }
        }
    }
    // A failover: the group rebuilt from the bytes of its records.
    let mut fresh = BTreeMap::new();
    for r in &sim.log {
        let back = ConsumerGroupRecord::decode(r.encode_key(), r.encode_value())
            .unwrap()
            .unwrap();
        replay_into(&mut fresh, &back);
    }
    assert_eq!(
        fresh.get("g"),
        sim.groups.get("g"),
        "seed {seed}: replay differs"
    );
    sim.seen
}

#[test]
fn consumer_group_simulation() {
    if let Ok(seed) = std::env::var("SEED") {
        run(seed.parse().expect("SEED is a number"), 600);
        return;
    }
    let mut total = Coverage::default();
    for seed in 0..40 {
        let c = run(seed, 600);
        total.fenced += c.fenced;
        total.revoking += c.revoking;
        total.static_returns += c.static_returns;
        total.expired += c.expired;
        total.classic_syncs += c.classic_syncs;
        total.classic_rejoins += c.classic_rejoins;
    }
    println!("{total:?}");
    assert!(total.fenced > 0 && total.revoking > 0, "{total:?}");
    assert!(
        total.classic_syncs > 0 && total.classic_rejoins > 0,
        "{total:?}"
    );
    assert!(total.static_returns > 0 && total.expired > 0, "{total:?}");
}

/// REBALANCE_IN_PROGRESS: a classic member must join again.
const REBALANCE_IN_PROGRESS: i16 = 27;

/// The subscription a classic member of the simulation sends: the topic,
/// and nothing owned (an eager assignor revokes everything first).
fn classic_subscription() -> Bytes {
    encode_subscription(&Subscription {
        version: 1,
        topics: vec!["orders".into()],
        ..Subscription::default()
    })
}
