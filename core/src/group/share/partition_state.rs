//! A share partition's durable state as the share coordinator keeps it
//! (Kafka's `ShareCoordinatorShard` folding `__share_group_state`): a state
//! epoch, the start offset, and non-overlapping state batches above it.
//!
//! It is built by replaying `__share_group_state` in log order (a
//! ShareSnapshot replaces everything, a ShareUpdate of the same snapshot
//! epoch overlays its batches) or by applying WriteShareGroupState
//! partitions ([`DurableShareState::apply_write`]), and it answers
//! ReadShareGroupState with [`DurableShareState::state_batches`], from which
//! [`SharePartition::load`](super::partition::SharePartition::load) rebuilds
//! the partition. A newer batch wins over whatever older batches said about
//! the same offsets; batches below the start offset are dropped.

use std::collections::BTreeMap;

use crate::group::share::partition::StateWrite;
use crate::group::share::state_records::{
    ShareSnapshotValue, ShareStateRecord, ShareUpdateValue, DELIVERY_COMPLETE_COUNT_UNKNOWN,
};
use crate::protocol::messages::share_group_state::StateBatch;

pub use crate::broker_config::share_coordinator::DEFAULT_SHARE_COORDINATOR_SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurableShareState {
    pub state_epoch: i32,
    pub snapshot_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    /// By first offset; non-overlapping, all at or above `start_offset`.
    batches: BTreeMap<i64, StateBatch>,
    /// ShareUpdates since the last snapshot.
    pub updates_since_snapshot: u32,
}

impl DurableShareState {
    /// The state InitializeShareGroupState creates.
    pub fn initialized(state_epoch: i32, start_offset: i64) -> DurableShareState {
        DurableShareState {
            state_epoch,
            snapshot_epoch: 0,
            leader_epoch: -1,
            start_offset,
            delivery_complete_count: DELIVERY_COMPLETE_COUNT_UNKNOWN,
            batches: BTreeMap::new(),
            updates_since_snapshot: 0,
        }
    }

    /// The state batches, in offset order (a ReadShareGroupState result).
    pub fn state_batches(&self) -> Vec<StateBatch> {
        self.batches.values().copied().collect()
    }

    /// Applies a leader's write: the start offset moves (never back), and
    /// the batches overlay what was stored.
    pub fn apply_write(&mut self, leader_epoch: i32, write: &StateWrite) {
        self.leader_epoch = leader_epoch;
        self.apply(write.start_offset, &write.state_batches);
        self.delivery_complete_count = write.delivery_complete_count;
        self.updates_since_snapshot += 1;
    }

    /// Replays one `__share_group_state` record of this partition.
    pub fn replay(state: &mut Option<DurableShareState>, record: &ShareStateRecord) {
        match record {
            ShareStateRecord::Snapshot { value: None, .. }
            | ShareStateRecord::Update { value: None, .. } => *state = None,
            ShareStateRecord::Snapshot { value: Some(v), .. } => {
                *state = Some(DurableShareState::from_snapshot(v))
            }
            ShareStateRecord::Update { value: Some(v), .. } => {
                // An update of another snapshot epoch belongs to a state
                // that was replaced: Kafka ignores it too.
                if let Some(s) = state
                    .as_mut()
                    .filter(|s| s.snapshot_epoch == v.snapshot_epoch)
                {
                    s.apply_update(v);
                }
            }
        }
    }

    pub fn from_snapshot(v: &ShareSnapshotValue) -> DurableShareState {
        let mut s = DurableShareState {
            state_epoch: v.state_epoch,
            snapshot_epoch: v.snapshot_epoch,
            leader_epoch: v.leader_epoch,
            start_offset: v.start_offset,
            delivery_complete_count: v.delivery_complete_count,
            batches: BTreeMap::new(),
            updates_since_snapshot: 0,
        };
        s.apply(v.start_offset, &v.state_batches);
        s
    }

    pub fn apply_update(&mut self, v: &ShareUpdateValue) {
        self.leader_epoch = v.leader_epoch;
        // -1: the start offset did not move.
        let start = if v.start_offset < 0 {
            self.start_offset
        } else {
            v.start_offset
        };
        self.apply(start, &v.state_batches);
        self.delivery_complete_count = v.delivery_complete_count;
        self.updates_since_snapshot += 1;
    }

    /// The snapshot that replaces this state's snapshot and updates.
    pub fn to_snapshot(
        &self,
        create_timestamp_ms: i64,
        write_timestamp_ms: i64,
    ) -> ShareSnapshotValue {
        ShareSnapshotValue {
            snapshot_epoch: self.snapshot_epoch,
            state_epoch: self.state_epoch,
            leader_epoch: self.leader_epoch,
            start_offset: self.start_offset,
            delivery_complete_count: self.delivery_complete_count,
            create_timestamp_ms,
            write_timestamp_ms,
            state_batches: self.state_batches(),
        }
    }

    /// Whether the next write should be a snapshot rather than an update.
    pub fn snapshot_due(&self, updates_per_snapshot: u32) -> bool {
        self.updates_since_snapshot >= updates_per_snapshot
    }

    fn apply(&mut self, start_offset: i64, batches: &[StateBatch]) {
        self.start_offset = self.start_offset.max(start_offset);
        for b in batches {
            if b.first_offset > b.last_offset {
                continue;
            }
            self.cut(b.first_offset, b.last_offset);
            self.batches.insert(b.first_offset, *b);
        }
        self.prune_below_start();
        self.check_invariants();
    }

    /// Removes `first..=last` from the stored batches, keeping the parts of
    /// each batch outside it.
    fn cut(&mut self, first: i64, last: i64) {
        let overlapping: Vec<StateBatch> = self
            .batches
            .range(..=last)
            .rev()
            .take_while(|(_, b)| b.last_offset >= first)
            .map(|(_, b)| *b)
            .collect();
        for b in overlapping {
            self.batches.remove(&b.first_offset);
            if b.first_offset < first {
                // first > b.first_offset >= i64::MIN: no overflow.
                let mut left = b;
                left.last_offset = first - 1;
                self.batches.insert(left.first_offset, left);
            }
            if b.last_offset > last {
                // last < b.last_offset <= i64::MAX: no overflow.
                let mut right = b;
                right.first_offset = last + 1;
                self.batches.insert(right.first_offset, right);
            }
        }
    }

    fn prune_below_start(&mut self) {
        let start = self.start_offset;
        if start > i64::MIN {
            self.cut(i64::MIN, start - 1);
        }
    }

    fn check_invariants(&self) {
        let mut next = self.start_offset;
        for (first, b) in &self.batches {
            assert_eq!(*first, b.first_offset);
            assert!(b.first_offset <= b.last_offset, "{b:?}");
            assert!(b.first_offset >= next, "{b:?} overlaps or is below {next}");
            next = b.last_offset.saturating_add(1);
        }
    }
}
