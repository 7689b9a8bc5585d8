//! Deterministic simulation of a share partition (KIP-932): a producer
//! appends, several members fetch (acquire), acknowledge with every kind
//! (accept, release, reject, gap, renew), sit on their records until the
//! locks expire, leave, or crash; the broker's state writes sometimes fail,
//! and the broker crashes and loads the partition again from the share
//! coordinator's records, read back from their bytes. All of it is drawn
//! from a seeded generator, with the clock simulated.
//!
//! The shell's contract is followed: a state write is persisted before an
//! acknowledgement counts as confirmed, and a failed write drops the
//! partition and loads it again from the durable state.
//!
//! After every step:
//! - the partition's invariants hold, and its start offset is the durable
//!   one;
//! - no record is handed to a member while another member's lock on it is
//!   live;
//! - no delivery count passes `group.share.delivery.count.limit`;
//! - no record is confirmed accepted twice;
//! - after a load, no record confirmed accepted or rejected is in flight
//!   again.
//!
//! After a drain (no more appends, members accept everything): the start
//! offset reached the log end, and every record was accepted exactly once,
//! or archived: rejected, or delivered up to the delivery limit. None is
//! lost. A failing seed replays exactly: `SEED=n cargo test -p pinlog-core
//! --test share_partition_simulation`.

use std::collections::{BTreeMap, BTreeSet};

use pinlog_core::broker_config::share_group::SharePartitionConfig;
use pinlog_core::group::share::partition::RecordState;
use pinlog_core::group::share::state_records::{
    SharePartitionKey, ShareStateRecord, ShareUpdateValue,
};
use pinlog_core::group::share::{DurableShareState, SharePartition, StateWrite};
use pinlog_core::protocol::messages::share_fetch::{
    AcknowledgementBatch, ACKNOWLEDGE_TYPE_ACCEPT, ACKNOWLEDGE_TYPE_GAP, ACKNOWLEDGE_TYPE_REJECT,
    ACKNOWLEDGE_TYPE_RELEASE, ACKNOWLEDGE_TYPE_RENEW,
};

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

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const MEMBERS: usize = 4;
/// Writes that fail, in percent: each drops the partition and reloads it.
const WRITE_FAILURE_PERCENT: u64 = 2;
/// ShareUpdates between snapshots in the simulated `__share_group_state`.
const UPDATES_PER_SNAPSHOT: u32 = 8;

/// A member as its client sees itself.
#[derive(Default)]
struct Client {
    /// Offsets it believes it holds.
    held: BTreeSet<i64>,
}

/// What the checker has seen.
#[derive(Default)]
struct Ledger {
    /// Confirmed acceptances per offset.
    accepted: BTreeMap<i64, u32>,
    /// Confirmed rejections and gaps.
    archived_by_member: BTreeSet<i64>,
    /// Acquisitions per offset.
    delivered: BTreeMap<i64, u32>,
    /// Live locks as handed out: offset -> (member, deadline, broker incarnation).
    locks: BTreeMap<i64, (usize, i64, u64)>,
}

#[derive(Default, Debug)]
struct Coverage {
    acquired: u64,
    accepted: u64,
    released: u64,
    rejected: u64,
    renewed: u64,
    expired_writes: u64,
    refused_acks: u64,
    failed_writes: u64,
    crashes: u64,
    leaves: u64,
    archived_at_limit: u64,
}

struct Sim {
    rng: Rng,
    config: SharePartitionConfig,
    now_ms: i64,
    log_end: i64,
    partition: SharePartition,
    /// The coordinator's view, updated by every persisted write.
    durable: DurableShareState,
    /// `__share_group_state` as bytes would be replayed: the records written.
    state_log: Vec<ShareStateRecord>,
    key: SharePartitionKey,
    incarnation: u64,
    clients: Vec<Client>,
    ledger: Ledger,
    coverage: Coverage,
}

fn member_name(m: usize) -> String {
    format!("member-{m}")
}

impl Sim {
    fn new(seed: u64) -> Sim {
        let config = SharePartitionConfig {
            max_record_locks: 100,
            delivery_count_limit: 3,
            record_lock_duration_ms: 15_000,
        };
        config.validate().unwrap();
        let key = SharePartitionKey {
            group_id: "queue".into(),
            topic_id: [7; 16],
            partition: 0,
        };
        let durable = DurableShareState::initialized(1, 0);
        let snapshot = ShareStateRecord::Snapshot {
            key: key.clone(),
            value: Some(durable.to_snapshot(0, 0)),
        };
        Sim {
            rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            config,
            now_ms: 0,
            log_end: 0,
            partition: SharePartition::new(config, 1, 0),
            durable,
            state_log: vec![snapshot],
            key,
            incarnation: 0,
            clients: (0..MEMBERS).map(|_| Client::default()).collect(),
            ledger: Ledger::default(),
            coverage: Coverage::default(),
        }
    }

    /// Persists `write` as the shell would: as a ShareUpdate, or a new
    /// snapshot when enough updates piled up. `false` when the write
    /// failed; the partition was then loaded again.
    fn persist(&mut self, write: Option<StateWrite>) -> bool {
        let Some(write) = write else {
            return true;
        };
        if self.rng.chance(WRITE_FAILURE_PERCENT) {
            self.coverage.failed_writes += 1;
            self.reload();
            return false;
        }
        self.durable.apply_write(0, &write);
        if self.durable.snapshot_due(UPDATES_PER_SNAPSHOT) {
            self.durable.snapshot_epoch += 1;
            self.durable.updates_since_snapshot = 0;
            self.state_log.push(ShareStateRecord::Snapshot {
                key: self.key.clone(),
                value: Some(self.durable.to_snapshot(0, self.now_ms)),
            });
        } else {
            self.state_log.push(ShareStateRecord::Update {
                key: self.key.clone(),
                value: Some(ShareUpdateValue {
                    snapshot_epoch: self.durable.snapshot_epoch,
                    leader_epoch: 0,
                    start_offset: write.start_offset,
                    delivery_complete_count: write.delivery_complete_count,
                    state_batches: write.state_batches.clone(),
                }),
            });
        }
        true
    }

    /// The broker lost the partition (a crash, or a failed write): the
    /// coordinator's records are replayed from their bytes, and the
    /// partition is loaded from the result. Every lock is gone.
    fn reload(&mut self) {
        let mut state = None;
        for r in &self.state_log {
            let back = ShareStateRecord::decode(r.encode_key(), r.encode_value())
                .expect("decodes")
                .expect("a share state record");
            DurableShareState::replay(&mut state, &back);
        }
        let state = state.expect("the state was initialized");
        assert_eq!(state.start_offset, self.durable.start_offset);
        assert_eq!(state.state_batches(), self.durable.state_batches());
        self.partition = SharePartition::load(
            self.config,
            state.state_epoch,
            state.start_offset,
            &state.state_batches(),
        )
        .expect("durable state loads");
        self.incarnation += 1;
        self.ledger.locks.clear();
        // Nothing done is in flight again.
        for o in self.partition.start_offset()..=self.partition.end_offset() {
            let (s, _) = self.partition.record(o).unwrap();
            assert_ne!(s, RecordState::Acquired);
            if !s.is_terminal() {
                assert!(
                    !self.ledger.accepted.contains_key(&o),
                    "offset {o} was accepted and is in flight again after a load"
                );
                assert!(
                    !self.ledger.archived_by_member.contains(&o),
                    "offset {o} was rejected and is in flight again after a load"
                );
            }
        }
    }

    fn fetch(&mut self, m: usize) {
        let max_records = 1 + self.rng.below(20) as u32;
        let acq = self
            .partition
            .acquire(&member_name(m), max_records, self.log_end, self.now_ms);
        self.note_expiries(&acq.state_write);
        if !self.persist(acq.state_write) {
            // The fetch fails: the member gets nothing.
            return;
        }
        let mut taken = 0;
        for range in &acq.acquired {
            assert!(range.first_offset <= range.last_offset);
            assert!(range.delivery_count >= 1);
            assert!(
                range.delivery_count <= self.config.delivery_count_limit,
                "{range:?} past the delivery limit"
            );
            for o in range.first_offset..=range.last_offset {
                assert!(o < self.log_end, "offset {o} past the log end");
                if let Some(&(holder, deadline, inc)) = self.ledger.locks.get(&o) {
                    assert!(
                        inc != self.incarnation || deadline <= self.now_ms,
                        "offset {o} handed to {m} while {holder} holds it until {deadline} \
                         (now {})",
                        self.now_ms
                    );
                }
                assert!(
                    !self.ledger.accepted.contains_key(&o),
                    "offset {o} redelivered after acceptance"
                );
                let deadline = self.now_ms + self.config.record_lock_duration_ms;
                self.ledger.locks.insert(o, (m, deadline, self.incarnation));
                *self.ledger.delivered.entry(o).or_default() += 1;
                self.clients[m].held.insert(o);
                taken += 1;
            }
        }
        assert!(taken <= max_records);
        self.coverage.acquired += u64::from(taken);
    }

    fn note_expiries(&mut self, write: &Option<StateWrite>) {
        if write.is_some() {
            self.coverage.expired_writes += 1;
        }
    }

    /// The member acknowledges some of what it holds, in runs, with kinds
    /// drawn per offset or per run. In the drain it accepts everything.
    fn acknowledge(&mut self, m: usize, drain: bool) {
        let held: Vec<i64> = self.clients[m].held.iter().copied().collect();
        if held.is_empty() {
            return;
        }
        let mut chosen: Vec<(i64, i8)> = Vec::new();
        for o in held {
            if !drain && self.rng.chance(40) {
                continue;
            }
            let kind = if drain {
                ACKNOWLEDGE_TYPE_ACCEPT
            } else {
                match self.rng.below(100) {
                    0..=54 => ACKNOWLEDGE_TYPE_ACCEPT,
                    55..=74 => ACKNOWLEDGE_TYPE_RELEASE,
                    75..=86 => ACKNOWLEDGE_TYPE_REJECT,
                    87..=94 => ACKNOWLEDGE_TYPE_RENEW,
                    _ => ACKNOWLEDGE_TYPE_GAP,
                }
            };
            chosen.push((o, kind));
        }
        if chosen.is_empty() {
            return;
        }
        let batches = runs(&chosen);
        // Offsets below the start offset are done already: a batch reaching
        // into the window skips them, and they are not this member's to
        // confirm (Kafka ignores them the same way).
        let start_before = self.partition.start_offset();
        let out = self
            .partition
            .acknowledge(&member_name(m), &batches, self.now_ms);
        let persisted = self.persist(out.state_write);
        if let Some(e) = out.error {
            // The client gives the refused records up; they come back to
            // someone when their locks end.
            self.coverage.refused_acks += 1;
            assert!(e.error_code == 121 || e.error_code == 42, "{e:?}");
            for (o, _) in &chosen {
                self.clients[m].held.remove(o);
            }
            return;
        }
        if !persisted {
            // Not confirmed: the partition was reloaded, the locks are gone.
            for (o, _) in &chosen {
                self.clients[m].held.remove(o);
            }
            return;
        }
        for (o, kind) in chosen {
            if o < start_before {
                self.clients[m].held.remove(&o);
                continue;
            }
            // Only the live lock's holder gets an acknowledgement through.
            let lock = self.ledger.locks.get(&o).copied();
            assert!(
                lock.is_some_and(|(holder, deadline, inc)| holder == m
                    && deadline > self.now_ms
                    && inc == self.incarnation),
                "offset {o} acknowledged by {m} under lock {lock:?} at {}",
                self.now_ms
            );
            if kind == ACKNOWLEDGE_TYPE_RENEW {
                self.coverage.renewed += 1;
                let deadline = self.now_ms + self.config.record_lock_duration_ms;
                self.ledger.locks.insert(o, (m, deadline, self.incarnation));
                continue;
            }
            self.clients[m].held.remove(&o);
            self.ledger.locks.remove(&o);
            match kind {
                ACKNOWLEDGE_TYPE_ACCEPT => {
                    self.coverage.accepted += 1;
                    let n = self.ledger.accepted.entry(o).or_default();
                    *n += 1;
                    assert_eq!(*n, 1, "offset {o} accepted twice");
                    assert!(!self.ledger.archived_by_member.contains(&o));
                }
                ACKNOWLEDGE_TYPE_REJECT | ACKNOWLEDGE_TYPE_GAP => {
                    self.coverage.rejected += 1;
                    assert!(!self.ledger.accepted.contains_key(&o));
                    self.ledger.archived_by_member.insert(o);
                }
                _ => self.coverage.released += 1,
            }
        }
    }

    fn leave(&mut self, m: usize) {
        self.coverage.leaves += 1;
        let write = self.partition.release_member(&member_name(m), self.now_ms);
        if self.persist(write) {
            self.ledger.locks.retain(|_, (holder, _, _)| *holder != m);
        }
        self.clients[m].held.clear();
    }

    fn check(&self) {
        self.partition.check_invariants();
        assert_eq!(
            self.partition.start_offset(),
            self.durable.start_offset,
            "memory and the durable state disagree on the start offset"
        );
        assert!(self.partition.end_offset() < self.log_end.max(self.partition.start_offset()));
        assert!(self.partition.in_flight_records() <= self.config.max_record_locks as usize);
    }

    fn step(&mut self, drain: bool) {
        self.now_ms += self.rng.below(1_200) as i64;
        if !drain && self.rng.chance(50) {
            self.log_end += self.rng.below(6) as i64;
        }
        let m = self.rng.below(MEMBERS as u64) as usize;
        match self.rng.below(100) {
            0..=39 => self.fetch(m),
            40..=74 => self.acknowledge(m, drain),
            75..=79 if !drain => self.leave(m),
            80..=82 if !drain => {
                // The client crashes: it forgets, its locks run out.
                self.clients[m].held.clear();
            }
            83..=84 if !drain => {
                self.coverage.crashes += 1;
                self.reload();
            }
            85..=89 => {
                let write = self.partition.expire_locks(self.now_ms);
                self.note_expiries(&write);
                self.persist(write);
            }
            _ => {}
        }
        if drain {
            // Every member accepts what it holds at once.
            for m in 0..MEMBERS {
                self.acknowledge(m, true);
            }
        }
        self.check();
    }

    /// The final check: every record accepted exactly once, or archived by
    /// a member or at the delivery limit; none lost.
    fn check_final(&mut self) {
        assert_eq!(
            self.partition.start_offset(),
            self.log_end,
            "records were left undelivered: window {}..={}",
            self.partition.start_offset(),
            self.partition.end_offset()
        );
        assert_eq!(self.durable.start_offset, self.log_end);
        for o in 0..self.log_end {
            let accepted = self.ledger.accepted.get(&o).copied().unwrap_or(0);
            let rejected = self.ledger.archived_by_member.contains(&o);
            let delivered = self.ledger.delivered.get(&o).copied().unwrap_or(0);
            match (accepted, rejected) {
                (1, false) => {}
                (0, true) => {}
                (0, false) => {
                    assert!(
                        delivered >= self.config.delivery_count_limit as u32,
                        "offset {o} archived after {delivered} deliveries, under the limit"
                    );
                    self.coverage.archived_at_limit += 1;
                }
                _ => panic!("offset {o}: accepted {accepted} times, rejected {rejected}"),
            }
        }
    }
}

/// Contiguous runs of (offset, kind): one type for a run of one kind, else
/// a type per offset, as the Java client sends them.
fn runs(chosen: &[(i64, i8)]) -> Vec<AcknowledgementBatch> {
    let mut out: Vec<AcknowledgementBatch> = Vec::new();
    for &(o, kind) in chosen {
        match out.last_mut() {
            Some(b) if b.last_offset + 1 == o => {
                b.last_offset = o;
                b.acknowledge_types.push(kind);
            }
            _ => out.push(AcknowledgementBatch {
                first_offset: o,
                last_offset: o,
                acknowledge_types: vec![kind],
            }),
        }
    }
    for b in &mut out {
        if b.acknowledge_types
            .iter()
            .all(|t| *t == b.acknowledge_types[0])
        {
            b.acknowledge_types.truncate(1);
        }
    }
    out
}

fn run(seed: u64, steps: usize) -> Coverage {
    let mut sim = Sim::new(seed);
    for _ in 0..steps {
        sim.step(false);
    }
    // The drain: no more appends, everything accepted, locks left to
    // expire; bounded, since the window only shrinks now.
    let mut drained = false;
    for _ in 0..steps * 10 {
        sim.step(true);
        if sim.partition.start_offset() == sim.log_end {
            drained = true;
            break;
        }
    }
    assert!(drained, "seed {seed}: the drain did not finish");
    sim.check_final();
    sim.coverage
}

#[test]
fn share_partition_simulation() {
    let seeds: Vec<u64> = match std::env::var("SEED") {
        Ok(s) => vec![s.parse().expect("SEED is a number")],
        Err(_) => (1..=40).collect(),
    };
    let mut total = Coverage::default();
    for seed in seeds {
        let c = run(seed, 1_500);
        total.acquired += c.acquired;
        total.accepted += c.accepted;
        total.released += c.released;
        total.rejected += c.rejected;
        total.renewed += c.renewed;
        total.expired_writes += c.expired_writes;
        total.refused_acks += c.refused_acks;
        total.failed_writes += c.failed_writes;
        total.crashes += c.crashes;
        total.leaves += c.leaves;
        total.archived_at_limit += c.archived_at_limit;
    }
    eprintln!("{total:?}");
    // The run reached every path it is meant to check.
    assert!(total.accepted > 0 && total.released > 0 && total.rejected > 0);
    assert!(total.renewed > 0 && total.refused_acks > 0 && total.expired_writes > 0);
    assert!(total.failed_writes > 0 && total.crashes > 0 && total.leaves > 0);
    assert!(total.archived_at_limit > 0);
}
