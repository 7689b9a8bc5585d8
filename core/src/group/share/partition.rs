//! A share partition (KIP-932, Kafka's `SharePartition`): which records of
//! one topic partition a share group has delivered to whom, as a pure state
//! machine. Time comes in as `now_ms`; what must be made durable comes out
//! as a [`StateWrite`] (the partition data of a WriteShareGroupState, which
//! the share coordinator stores as a ShareUpdate).
//!
//! **The window.** Records below the share-partition start offset (SPSO)
//! are done: acknowledged or archived. The window holds one entry per
//! offset from the SPSO to the share-partition end offset (SPEO, the last
//! offset ever acquired), at most `group.share.partition.max.record.locks`
//! of them, so the memory of a partition is bounded whatever its members
//! do. Each entry is AVAILABLE, ACQUIRED (by one member, until a lock
//! deadline), ACKNOWLEDGED or ARCHIVED, with a delivery count. The SPSO
//! moves over every acknowledged or archived prefix, so the first entry of
//! the window is never one of those.
//!
//! **Transitions** (Kafka's):
//! - acquire: AVAILABLE (or a new offset past the SPEO) -> ACQUIRED,
//!   delivery count + 1, lock deadline `now + group.share.record.lock.duration.ms`;
//! - accept: ACQUIRED -> ACKNOWLEDGED; reject and gap: ACQUIRED -> ARCHIVED;
//! - release, lock expiry, the member leaving: ACQUIRED -> AVAILABLE, or
//!   ARCHIVED once its delivery count reached `group.share.delivery.count.limit`;
//! - renew (v2): the deadline moves to `now + lock duration`;
//! - the log start offset passing records: ARCHIVED whatever their state.
//!
//! Every call first expires the locks that are due at `now_ms`, so a lock
//! past its deadline is never honoured, whether or not the caller's timer
//! (armed at [`SharePartition::next_lock_deadline_ms`]) has fired yet.
//!
//! **The contract with the shell.** A call changes the partition at once
//! and returns the [`StateWrite`] that makes the change durable. The shell
//! answers an acknowledgement only once that write succeeded; if a write
//! fails, it drops the partition and loads it again from the share
//! coordinator ([`SharePartition::load`]), as Kafka rolls its cache back.
//! Acquisitions are not written on their own (Kafka does not either): a
//! crash hands acquired records out again, with the delivery count last
//! written. Loading turns nothing into ACQUIRED: a restart redelivers
//! exactly the records that were not acknowledged or archived.

use std::collections::VecDeque;
use std::rc::Rc;

use crate::broker_config::share_group::{
    SharePartitionConfig, SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND,
};
use crate::protocol::error_code::{INVALID_RECORD_STATE, INVALID_REQUEST};
use crate::protocol::messages::share_fetch::{
    AcknowledgementBatch, AcquiredRecords, ACKNOWLEDGE_TYPE_ACCEPT, ACKNOWLEDGE_TYPE_GAP,
    ACKNOWLEDGE_TYPE_REJECT, ACKNOWLEDGE_TYPE_RELEASE, ACKNOWLEDGE_TYPE_RENEW,
};
use crate::protocol::messages::share_group_state::{
    StateBatch, DELIVERY_STATE_ACKNOWLEDGED, DELIVERY_STATE_ARCHIVED, DELIVERY_STATE_AVAILABLE,
};

/// Where a record of the window stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    Available,
    Acquired,
    Acknowledged,
    Archived,
}

impl RecordState {
    /// Delivered for good: the SPSO may pass it.
    pub fn is_terminal(self) -> bool {
        matches!(self, RecordState::Acknowledged | RecordState::Archived)
    }

    /// The delivery state a state batch stores. An acquired record is
    /// stored as available: a lock does not survive the broker.
    fn delivery_state(self) -> i8 {
        match self {
            RecordState::Available | RecordState::Acquired => DELIVERY_STATE_AVAILABLE,
            RecordState::Acknowledged => DELIVERY_STATE_ACKNOWLEDGED,
            RecordState::Archived => DELIVERY_STATE_ARCHIVED,
        }
    }
}

/// How a member acknowledges a record (ShareFetch's AcknowledgeTypes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcknowledgeType {
    /// The offset holds no record (compaction, control batches).
    Gap,
    Accept,
    Release,
    Reject,
    /// Keep the lock for another lock duration (KIP-1222).
    Renew,
}

impl AcknowledgeType {
    pub fn from_i8(value: i8) -> Option<AcknowledgeType> {
        match value {
            ACKNOWLEDGE_TYPE_GAP => Some(AcknowledgeType::Gap),
            ACKNOWLEDGE_TYPE_ACCEPT => Some(AcknowledgeType::Accept),
            ACKNOWLEDGE_TYPE_RELEASE => Some(AcknowledgeType::Release),
            ACKNOWLEDGE_TYPE_REJECT => Some(AcknowledgeType::Reject),
            ACKNOWLEDGE_TYPE_RENEW => Some(AcknowledgeType::Renew),
            _ => None,
        }
    }
}

/// An acknowledgement refused as a whole: nothing of it was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcknowledgeError {
    /// INVALID_RECORD_STATE or INVALID_REQUEST, as Kafka answers.
    pub error_code: i16,
    pub message: String,
}

/// Durable state that changed: the share-partition start offset, and the
/// state batches of the changed records at or above it. One partition of a
/// WriteShareGroupState (the shell adds the state and leader epochs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateWrite {
    pub start_offset: i64,
    /// Acknowledged or archived records at or above the start offset.
    pub delivery_complete_count: i32,
    pub state_batches: Vec<StateBatch>,
}

/// The outcome of an acknowledgement: refused as a whole or applied, and
/// in both cases the write of what changed (locks that were due expire
/// either way). The shell persists the write, then answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acknowledgement {
    pub error: Option<AcknowledgeError>,
    pub state_write: Option<StateWrite>,
}

/// What an acquisition hands the member, and the write of what expired on
/// the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquisition {
    /// The acquired offsets, in order, as ShareFetch's AcquiredRecords.
    pub acquired: Vec<AcquiredRecords>,
    pub state_write: Option<StateWrite>,
}

/// Why durable state could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub String);

#[derive(Debug, Clone, PartialEq, Eq)]
struct InFlightRecord {
    state: RecordState,
    delivery_count: i16,
    /// The member holding it; only while ACQUIRED.
    owner: Option<Rc<str>>,
    /// When the lock ends; only meaningful while ACQUIRED.
    lock_deadline_ms: i64,
}

impl InFlightRecord {
    fn settled(state: RecordState, delivery_count: i16) -> InFlightRecord {
        InFlightRecord {
            state,
            delivery_count,
            owner: None,
            lock_deadline_ms: 0,
        }
    }
}

/// One share group's delivery state of one topic partition.
#[derive(Debug, Clone)]
pub struct SharePartition {
    config: SharePartitionConfig,
    state_epoch: i32,
    /// The SPSO: every offset below it is acknowledged or archived.
    start_offset: i64,
    /// Offsets `start_offset..start_offset + records.len()`.
    records: VecDeque<InFlightRecord>,
}

impl SharePartition {
    /// A share partition that has delivered nothing yet, starting at
    /// `start_offset` (where `share.auto.offset.reset` put it).
    pub fn new(
        config: SharePartitionConfig,
        state_epoch: i32,
        start_offset: i64,
    ) -> SharePartition {
        assert!(start_offset >= 0, "start offset {start_offset}");
        SharePartition {
            config,
            state_epoch,
            start_offset,
            records: VecDeque::new(),
        }
    }

    /// A share partition as its durable state describes it (a
    /// ReadShareGroupState result): records in the batches take their
    /// stored state and count, offsets between batches were never delivered,
    /// and nothing is acquired. Refuses overlapping or unknown batches, and
    /// a window larger than Kafka allows, instead of trusting them.
    pub fn load(
        config: SharePartitionConfig,
        state_epoch: i32,
        start_offset: i64,
        state_batches: &[StateBatch],
    ) -> Result<SharePartition, LoadError> {
        if start_offset < 0 {
            return Err(LoadError(format!("start offset {start_offset}")));
        }
        let mut batches: Vec<StateBatch> = state_batches
            .iter()
            .filter(|b| b.last_offset >= start_offset)
            .copied()
            .collect();
        batches.sort_by_key(|b| b.first_offset);
        let mut partition = SharePartition::new(config, state_epoch, start_offset);
        for b in &batches {
            let state = match b.delivery_state {
                DELIVERY_STATE_AVAILABLE => RecordState::Available,
                DELIVERY_STATE_ACKNOWLEDGED => RecordState::Acknowledged,
                DELIVERY_STATE_ARCHIVED => RecordState::Archived,
                other => return Err(LoadError(format!("{b:?}: delivery state {other}"))),
            };
            if b.first_offset > b.last_offset || b.delivery_count < 0 {
                return Err(LoadError(format!("{b:?}: malformed")));
            }
            let first = b.first_offset.max(start_offset);
            let next = partition.next_offset_past_window();
            if first < next {
                return Err(LoadError(format!("{b:?} overlaps an earlier batch")));
            }
            // Saturating: the batches come from a log, not from this code.
            let end_len = b.last_offset.saturating_sub(start_offset).saturating_add(1);
            if end_len > i64::from(SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND) {
                return Err(LoadError(format!(
                    "{b:?}: a window of {end_len} records from {start_offset}"
                )));
            }
            // Offsets between batches were never delivered.
            for _ in next..first {
                partition
                    .records
                    .push_back(InFlightRecord::settled(RecordState::Available, 0));
            }
            for _ in first..=b.last_offset {
                partition
                    .records
                    .push_back(InFlightRecord::settled(state, b.delivery_count));
            }
        }
        partition.advance_start_offset();
        partition.check_invariants();
        Ok(partition)
    }

    pub fn state_epoch(&self) -> i32 {
        self.state_epoch
    }

    /// The SPSO.
    pub fn start_offset(&self) -> i64 {
        self.start_offset
    }

    /// The SPEO: the last offset of the window, or the SPSO - 1 when the
    /// window is empty.
    pub fn end_offset(&self) -> i64 {
        self.next_offset_past_window() - 1
    }

    /// How many records the window holds (in flight, in Kafka's words).
    pub fn in_flight_records(&self) -> usize {
        self.records.len()
    }

    /// A record's state and delivery count, if it is in the window.
    pub fn record(&self, offset: i64) -> Option<(RecordState, i16)> {
        let r = self.records.get(self.index_of(offset)?)?;
        Some((r.state, r.delivery_count))
    }

    /// The member holding `offset`, if it is acquired.
    pub fn owner(&self, offset: i64) -> Option<&str> {
        let r = self.records.get(self.index_of(offset)?)?;
        r.owner.as_deref()
    }

    /// The first offset an acquisition at `now_ms` would hand out: the
    /// first available record of the window (once due locks expired), or
    /// the offset past the window. Where the shell starts reading the log.
    pub fn first_acquirable_offset(&self, now_ms: i64) -> i64 {
        self.records
            .iter()
            .position(|r| {
                r.state == RecordState::Available
                    || (r.state == RecordState::Acquired && r.lock_deadline_ms <= now_ms)
            })
            .map_or_else(|| self.next_offset_past_window(), |i| self.offset_at(i))
    }

    /// Whether an acquisition at `now_ms` would hand out a record of the
    /// window: one was released, its lock expired, or it was loaded
    /// available. The shell wakes share fetches waiting on the partition
    /// then, as an append wakes them for new records.
    pub fn has_acquirable_records(&self, now_ms: i64) -> bool {
        self.first_acquirable_offset(now_ms) < self.next_offset_past_window()
    }

    /// Whether the window is full (`group.share.partition.max.record.locks`)
    /// with nothing available: an acquisition would hand out nothing.
    pub fn is_full(&self, now_ms: i64) -> bool {
        let max_window = self
            .config
            .max_record_locks
            .min(SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND) as usize;
        self.records.len() >= max_window
            && self.first_acquirable_offset(now_ms) == self.next_offset_past_window()
    }

    /// The earliest lock deadline, for the caller's timer.
    pub fn next_lock_deadline_ms(&self) -> Option<i64> {
        self.records
            .iter()
            .filter(|r| r.state == RecordState::Acquired)
            .map(|r| r.lock_deadline_ms)
            .min()
    }

    /// Acquires up to `max_records` records for `member`: first the
    /// available records of the window, in offset order, then new offsets
    /// below `fetchable_end_offset` (the high watermark, or the last stable
    /// offset under read_committed), while the window stays within
    /// `group.share.partition.max.record.locks`.
    pub fn acquire(
        &mut self,
        member: &str,
        max_records: u32,
        fetchable_end_offset: i64,
        now_ms: i64,
    ) -> Acquisition {
        self.acquire_from(member, max_records, i64::MIN, fetchable_end_offset, now_ms)
    }

    /// [`Self::acquire`], of offsets from `from_offset` on only: the shell
    /// read the log from there, so it can deliver nothing below it.
    pub fn acquire_from(
        &mut self,
        member: &str,
        max_records: u32,
        from_offset: i64,
        fetchable_end_offset: i64,
        now_ms: i64,
    ) -> Acquisition {
        let mut changed = self.expire_due_locks(now_ms);
        let owner: Rc<str> = Rc::from(member);
        let deadline = now_ms + self.config.record_lock_duration_ms;
        let limit = self.config.delivery_count_limit;
        let mut acquired: Vec<AcquiredRecords> = Vec::new();
        let mut taken: u32 = 0;
        for i in 0..self.records.len() {
            if taken >= max_records {
                break;
            }
            let offset = self.offset_at(i);
            if offset >= fetchable_end_offset {
                break;
            }
            if offset < from_offset {
                continue;
            }
            let r = &mut self.records[i];
            if r.state != RecordState::Available {
                continue;
            }
            if r.delivery_count >= limit {
                // Stored before the limit was lowered: never delivered again.
                r.state = RecordState::Archived;
                changed.push(offset);
                continue;
            }
            r.state = RecordState::Acquired;
            r.delivery_count += 1;
            r.owner = Some(owner.clone());
            r.lock_deadline_ms = deadline;
            push_acquired(&mut acquired, offset, r.delivery_count);
            taken += 1;
        }
        let max_window = self
            .config
            .max_record_locks
            .min(SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND) as usize;
        while taken < max_records
            && self.records.len() < max_window
            && self.next_offset_past_window() < fetchable_end_offset
        {
            let offset = self.next_offset_past_window();
            self.records.push_back(InFlightRecord {
                state: RecordState::Acquired,
                delivery_count: 1,
                owner: Some(owner.clone()),
                lock_deadline_ms: deadline,
            });
            push_acquired(&mut acquired, offset, 1);
            taken += 1;
        }
        assert!(taken <= max_records);
        let state_write = self.finish(changed);
        Acquisition {
            acquired,
            state_write,
        }
    }

    /// Applies a member's acknowledgements, all or none: a batch with
    /// malformed types, overlapping another, or past the SPEO is
    /// INVALID_REQUEST; an offset the member does not hold (not acquired,
    /// another member's, or a batch wholly below the SPSO) is
    /// INVALID_RECORD_STATE, as Kafka answers. Offsets below the SPSO in a
    /// batch that reaches into the window are already done and skipped.
    pub fn acknowledge(
        &mut self,
        member: &str,
        batches: &[AcknowledgementBatch],
        now_ms: i64,
    ) -> Acknowledgement {
        let changed = self.expire_due_locks(now_ms);
        if let Err(error) = self.validate_acknowledgements(member, batches) {
            // The expiries stand: they were due whatever the member sent.
            return Acknowledgement {
                error: Some(error),
                state_write: self.finish(changed),
            };
        }
        let mut changed = changed;
        for b in batches {
            let first = b.first_offset.max(self.start_offset);
            for offset in first..=b.last_offset {
                let at = (offset - b.first_offset) as usize;
                let raw = if b.acknowledge_types.len() == 1 {
                    b.acknowledge_types[0]
                } else {
                    b.acknowledge_types[at]
                };
                let Some(kind) = AcknowledgeType::from_i8(raw) else {
                    unreachable!("validated: acknowledge type {raw}");
                };
                let deadline = now_ms + self.config.record_lock_duration_ms;
                let limit = self.config.delivery_count_limit;
                let i = self.index_of(offset).expect("validated: in the window");
                let r = &mut self.records[i];
                assert_eq!(r.state, RecordState::Acquired);
                match kind {
                    AcknowledgeType::Accept => settle(r, RecordState::Acknowledged),
                    AcknowledgeType::Reject | AcknowledgeType::Gap => {
                        settle(r, RecordState::Archived)
                    }
                    AcknowledgeType::Release => release(r, limit),
                    AcknowledgeType::Renew => {
                        r.lock_deadline_ms = deadline;
                        continue;
                    }
                }
                changed.push(offset);
            }
        }
        Acknowledgement {
            error: None,
            state_write: self.finish(changed),
        }
    }

    /// The group's share configs changed (its dynamic configs): later
    /// acquisitions take the new lock duration, delivery limit and window.
    /// Nothing held changes: a record past a lowered limit is archived at
    /// its next release, a window above a lowered maximum only stops
    /// growing.
    pub fn set_config(&mut self, config: SharePartitionConfig) {
        self.config = config;
    }

    /// Archives the records `member` holds in `ranges` (inclusive): under
    /// read_committed, what it just acquired from aborted transactions,
    /// which is never delivered (Kafka's
    /// `filterAbortedTransactionalAcquiredRecords`).
    /// `acquired` (the acquisition's ranges) loses the archived offsets.
    pub fn archive_acquired(
        &mut self,
        member: &str,
        ranges: &[(i64, i64)],
        acquired: &mut Vec<AcquiredRecords>,
    ) -> Option<StateWrite> {
        let mut changed = Vec::new();
        let window_last = self.end_offset();
        for &(first, last) in ranges {
            for offset in first.max(self.start_offset)..=last.min(window_last) {
                let Some(i) = self.index_of(offset) else {
                    continue;
                };
                let r = &mut self.records[i];
                if r.state == RecordState::Acquired && r.owner.as_deref() == Some(member) {
                    settle(r, RecordState::Archived);
                    changed.push(offset);
                }
            }
        }
        if !changed.is_empty() {
            changed.sort_unstable();
            let mut kept = Vec::new();
            for a in acquired.iter() {
                for offset in a.first_offset..=a.last_offset {
                    if changed.binary_search(&offset).is_err() {
                        push_acquired(&mut kept, offset, a.delivery_count);
                    }
                }
            }
            *acquired = kept;
        }
        self.finish(changed)
    }

    /// Expires the locks due at `now_ms`: their records become available
    /// again, or archived at the delivery limit. For the caller's timer.
    pub fn expire_locks(&mut self, now_ms: i64) -> Option<StateWrite> {
        let changed = self.expire_due_locks(now_ms);
        self.finish(changed)
    }

    /// Releases everything `member` holds: it left the group, or closed its
    /// share session. At the delivery limit a record is archived instead.
    pub fn release_member(&mut self, member: &str, now_ms: i64) -> Option<StateWrite> {
        let mut changed = self.expire_due_locks(now_ms);
        let limit = self.config.delivery_count_limit;
        for i in 0..self.records.len() {
            let offset = self.offset_at(i);
            let r = &mut self.records[i];
            if r.state == RecordState::Acquired && r.owner.as_deref() == Some(member) {
                release(r, limit);
                changed.push(offset);
            }
        }
        self.finish(changed)
    }

    /// The log's start offset moved (retention, DeleteRecords): records
    /// below it are archived whatever their state, and the SPSO follows.
    pub fn on_log_start_offset(&mut self, log_start_offset: i64) -> Option<StateWrite> {
        if log_start_offset <= self.start_offset {
            return None;
        }
        let gone = (log_start_offset - self.start_offset).min(self.records.len() as i64);
        self.records.drain(..gone as usize);
        self.start_offset = log_start_offset;
        self.check_invariants_cheap();
        Some(self.write_of(&[]))
    }

    /// Checks every invariant of the window; O(window). Every mutation
    /// checks the cheap ones itself; tests and the simulation call this.
    pub fn check_invariants(&self) {
        assert!(self.start_offset >= 0);
        assert!(
            self.records.len() <= SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND as usize,
            "window of {}",
            self.records.len()
        );
        if let Some(first) = self.records.front() {
            assert!(
                !first.state.is_terminal(),
                "the SPSO stopped at a done record"
            );
        }
        for (i, r) in self.records.iter().enumerate() {
            let offset = self.offset_at(i);
            match r.state {
                RecordState::Acquired => {
                    assert!(r.owner.is_some(), "offset {offset} acquired by nobody");
                    assert!(
                        (1..=self.config.delivery_count_limit).contains(&r.delivery_count),
                        "offset {offset} acquired with delivery count {}",
                        r.delivery_count
                    );
                }
                _ => assert!(
                    r.owner.is_none(),
                    "offset {offset} owned while {:?}",
                    r.state
                ),
            }
            assert!(r.delivery_count >= 0);
        }
    }

    fn validate_acknowledgements(
        &self,
        member: &str,
        batches: &[AcknowledgementBatch],
    ) -> Result<(), AcknowledgeError> {
        let invalid_request = |message: String| AcknowledgeError {
            error_code: INVALID_REQUEST,
            message,
        };
        let invalid_state = |message: String| AcknowledgeError {
            error_code: INVALID_RECORD_STATE,
            message,
        };
        let mut ranges: Vec<(i64, i64)> = Vec::with_capacity(batches.len());
        for b in batches {
            let (first, last) = (b.first_offset, b.last_offset);
            if first > last || first < 0 {
                return Err(invalid_request(format!(
                    "acknowledgement batch {first}-{last}"
                )));
            }
            let len = (last - first).saturating_add(1);
            let types = b.acknowledge_types.len();
            if types == 0 || (types != 1 && types as i64 != len) {
                return Err(invalid_request(format!(
                    "{types} acknowledge types for offsets {first}-{last}"
                )));
            }
            if let Some(t) = b
                .acknowledge_types
                .iter()
                .find(|t| AcknowledgeType::from_i8(**t).is_none())
            {
                return Err(invalid_request(format!("acknowledge type {t}")));
            }
            if last > self.end_offset() {
                return Err(invalid_request(format!(
                    "offsets {first}-{last} reach past the acquired records (end {})",
                    self.end_offset()
                )));
            }
            if last < self.start_offset {
                return Err(invalid_state(format!(
                    "offsets {first}-{last} are below the start offset {}",
                    self.start_offset
                )));
            }
            ranges.push((first, last));
        }
        ranges.sort_unstable();
        if ranges.windows(2).any(|w| w[1].0 <= w[0].1) {
            return Err(invalid_request(
                "overlapping acknowledgement batches".into(),
            ));
        }
        for &(first, last) in &ranges {
            for offset in first.max(self.start_offset)..=last {
                let i = self.index_of(offset).expect("checked: inside the window");
                let r = &self.records[i];
                if r.state != RecordState::Acquired {
                    return Err(invalid_state(format!(
                        "offset {offset} is {:?}, not acquired",
                        r.state
                    )));
                }
                if r.owner.as_deref() != Some(member) {
                    return Err(invalid_state(format!(
                        "Member is not the owner of batch record (offset {offset})"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Releases every lock due at `now_ms`; the offsets that changed.
    fn expire_due_locks(&mut self, now_ms: i64) -> Vec<i64> {
        let limit = self.config.delivery_count_limit;
        let mut changed = Vec::new();
        for i in 0..self.records.len() {
            let offset = self.offset_at(i);
            let r = &mut self.records[i];
            if r.state == RecordState::Acquired && r.lock_deadline_ms <= now_ms {
                release(r, limit);
                changed.push(offset);
            }
        }
        changed
    }

    /// Moves the SPSO over the done prefix, checks the cheap invariants and
    /// builds the write of the `changed` offsets, if any changed.
    fn finish(&mut self, mut changed: Vec<i64>) -> Option<StateWrite> {
        let before = self.start_offset;
        self.advance_start_offset();
        assert!(self.start_offset >= before, "the SPSO went back");
        self.check_invariants_cheap();
        if changed.is_empty() && self.start_offset == before {
            return None;
        }
        changed.sort_unstable();
        changed.dedup();
        changed.retain(|o| *o >= self.start_offset && self.index_of(*o).is_some());
        Some(self.write_of(&changed))
    }

    /// The write of the start offset and the records at `offsets` (sorted,
    /// in the window), in runs of equal state and count.
    fn write_of(&self, offsets: &[i64]) -> StateWrite {
        let mut batches: Vec<StateBatch> = Vec::new();
        for &offset in offsets {
            let i = self.index_of(offset).expect("in the window");
            let r = &self.records[i];
            let state = r.state.delivery_state();
            // An acquired record (expired and acquired again within one
            // call) is stored as it was before this delivery, as Kafka
            // stores it: a crash hands it out again with the same count.
            let count = if r.state == RecordState::Acquired {
                r.delivery_count - 1
            } else {
                r.delivery_count
            };
            match batches.last_mut() {
                Some(b)
                    if b.last_offset + 1 == offset
                        && b.delivery_state == state
                        && b.delivery_count == count =>
                {
                    b.last_offset = offset;
                }
                _ => batches.push(StateBatch {
                    first_offset: offset,
                    last_offset: offset,
                    delivery_state: state,
                    delivery_count: count,
                }),
            }
        }
        let complete = self
            .records
            .iter()
            .filter(|r| r.state.is_terminal())
            .count();
        StateWrite {
            start_offset: self.start_offset,
            delivery_complete_count: complete as i32,
            state_batches: batches,
        }
    }

    /// The invariants every mutation checks: O(1).
    fn check_invariants_cheap(&self) {
        if let Some(first) = self.records.front() {
            assert!(
                !first.state.is_terminal(),
                "the SPSO stopped at a done record"
            );
        }
        assert!(self.records.len() <= SHARE_GROUP_PARTITION_MAX_RECORD_LOCKS_BOUND as usize);
    }

    fn advance_start_offset(&mut self) {
        while self.records.front().is_some_and(|r| r.state.is_terminal()) {
            self.records.pop_front();
            self.start_offset += 1;
        }
    }

    fn next_offset_past_window(&self) -> i64 {
        self.start_offset + self.records.len() as i64
    }

    fn offset_at(&self, index: usize) -> i64 {
        self.start_offset + index as i64
    }

    fn index_of(&self, offset: i64) -> Option<usize> {
        let i = offset.checked_sub(self.start_offset)?;
        (0..self.records.len() as i64)
            .contains(&i)
            .then_some(i as usize)
    }
}

/// ACQUIRED -> `state`, the lock gone.
fn settle(r: &mut InFlightRecord, state: RecordState) {
    assert!(state.is_terminal());
    r.state = state;
    r.owner = None;
}

/// ACQUIRED -> AVAILABLE, or ARCHIVED once delivered `limit` times.
fn release(r: &mut InFlightRecord, limit: i16) {
    assert_eq!(r.state, RecordState::Acquired);
    r.state = if r.delivery_count >= limit {
        RecordState::Archived
    } else {
        RecordState::Available
    };
    r.owner = None;
}

/// Appends `offset` to the acquired ranges, extending the last one when it
/// is contiguous with the same delivery count.
fn push_acquired(ranges: &mut Vec<AcquiredRecords>, offset: i64, delivery_count: i16) {
    match ranges.last_mut() {
        Some(a) if a.last_offset + 1 == offset && a.delivery_count == delivery_count => {
            a.last_offset = offset;
        }
        _ => ranges.push(AcquiredRecords {
            first_offset: offset,
            last_offset: offset,
            delivery_count,
        }),
    }
}
