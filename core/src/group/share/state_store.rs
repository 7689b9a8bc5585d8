//! The share coordinator's decisions (Kafka's `ShareCoordinatorShard`),
//! without an executor: the durable state of every share partition of one
//! `__share_group_state` partition, rebuilt by replaying its records, and
//! the record each state API must write.
//!
//! The contract with the shell (`server/share_state/`): it asks for the
//! record a request needs ([`ShareStateStore::initialize`], `write`,
//! `read`, `delete`), appends it and waits until it is replicated, and only
//! then replays it here with its offset ([`ShareStateStore::replay`]), the
//! same call that loads the partition. Memory is therefore exactly what a
//! load of the log would build, and never ahead of it.
//!
//! The topic is not compacted (a snapshot and the updates after it share a
//! key type but not a meaning), so the store also says how much of the log
//! is still needed: every share partition's latest snapshot and what
//! follows it ([`ShareStateStore::prune_point`]); the shell moves the log
//! start offset there from time to time.

use std::collections::HashMap;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use crate::group::share::partition::StateWrite;
use crate::group::share::partition_state::DurableShareState;
use crate::group::share::state_records::{
    SharePartitionKey, ShareSnapshotValue, ShareStateRecord, ShareUpdateValue,
};
use crate::protocol::error_code;
use crate::protocol::messages::share_group_state::StateBatch;

/// What ReadShareGroupState answers for a share partition whose state was
/// never initialized (Kafka's `PartitionFactory.UNINITIALIZED_START_OFFSET`
/// and `DEFAULT_STATE_EPOCH`), with no batches and no error.
pub const UNINITIALIZED_START_OFFSET: i64 = -1;
pub const DEFAULT_STATE_EPOCH: i32 = 0;
/// A leader epoch or state epoch a request leaves unset.
pub const EPOCH_UNSET: i32 = -1;

/// Kafka's share coordinator key, `groupId:topicId:partition` with the
/// topic id as `Uuid.toString` prints it (base64url, unpadded): what the
/// coordinator partition is hashed from.
pub fn coordinator_key(key: &SharePartitionKey) -> String {
    format!(
        "{}:{}:{}",
        key.group_id,
        URL_SAFE_NO_PAD.encode(key.topic_id),
        key.partition
    )
}

/// The `__share_group_state` partition of a share partition: Kafka's
/// `Utils.abs(coordinatorKey.hashCode()) % partitions`, with Java's string
/// hash, so the partition number is the one Kafka would pick.
pub fn partition_for(key: &SharePartitionKey, partitions: i32) -> i32 {
    crate::group::offsets_topic::partition_for(&coordinator_key(key), partitions)
}

/// A share partition's state and where its latest snapshot is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    state: DurableShareState,
    /// The offset of the ShareSnapshot the state was last rebuilt from:
    /// nothing of this share partition below it is needed.
    snapshot_offset: i64,
}

/// ReadShareGroupState's answer for one share partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadAnswer {
    pub state_epoch: i32,
    pub start_offset: i64,
    pub state_batches: Vec<StateBatch>,
    /// Whether any state was ever initialized (or written).
    pub initialized: bool,
    /// The record that makes the reader's newer leader epoch durable, as
    /// Kafka's `readStateAndMaybeUpdateLeaderEpoch` writes it; answered only
    /// once it is replicated.
    pub leader_epoch_record: Option<ShareStateRecord>,
}

/// ReadShareGroupStateSummary's answer for one share partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryAnswer {
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
}

/// The durable state of the share partitions of one `__share_group_state`
/// partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareStateStore {
    entries: HashMap<SharePartitionKey, Entry>,
    /// The offset after the last record replayed.
    next_offset: i64,
}

impl ShareStateStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The share partitions with state.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, key: &SharePartitionKey) -> Option<&DurableShareState> {
        self.entries.get(key).map(|e| &e.state)
    }

    /// Replays one record found (or just written) at `offset`, in log order:
    /// a snapshot replaces the share partition's state, an update of the
    /// same snapshot epoch overlays it, a tombstone deletes it.
    pub fn replay(&mut self, offset: i64, record: &ShareStateRecord) {
        self.next_offset = self.next_offset.max(offset.saturating_add(1));
        let key = record.key();
        let mut state = self.entries.get(key).map(|e| e.state.clone());
        DurableShareState::replay(&mut state, record);
        match state {
            None => {
                self.entries.remove(key);
            }
            Some(state) => {
                let snapshot_offset = match record {
                    ShareStateRecord::Snapshot { value: Some(_), .. } => offset,
                    _ => self.entries.get(key).map_or(offset, |e| e.snapshot_offset),
                };
                self.entries.insert(
                    key.clone(),
                    Entry {
                        state,
                        snapshot_offset,
                    },
                );
            }
        }
    }

    /// InitializeShareGroupState: a fresh snapshot (no batches) at
    /// `state_epoch` and `start_offset`, its snapshot epoch one past the
    /// stored one's (0 for a new share partition). An older state epoch than
    /// the stored one is fenced. The stored leader epoch is kept, so a
    /// deposed leader stays fenced across a reinitialization.
    pub fn initialize(
        &self,
        key: &SharePartitionKey,
        state_epoch: i32,
        start_offset: i64,
        now_ms: i64,
    ) -> Result<ShareStateRecord, i16> {
        check_partition(key)?;
        let stored = self.get(key);
        if stored.is_some_and(|s| s.state_epoch > state_epoch) {
            return Err(error_code::FENCED_STATE_EPOCH);
        }
        Ok(ShareStateRecord::Snapshot {
            key: key.clone(),
            value: Some(ShareSnapshotValue {
                snapshot_epoch: stored.map_or(0, |s| s.snapshot_epoch.saturating_add(1)),
                state_epoch,
                leader_epoch: stored.map_or(EPOCH_UNSET, |s| s.leader_epoch),
                start_offset,
                delivery_complete_count:
                    crate::group::share::state_records::DELIVERY_COMPLETE_COUNT_UNKNOWN,
                create_timestamp_ms: now_ms,
                write_timestamp_ms: now_ms,
                state_batches: Vec::new(),
            }),
        })
    }

    /// WriteShareGroupState: the record of a leader's write. Fenced when
    /// the writer's leader epoch is older than the stored one
    /// (FENCED_LEADER_EPOCH) or its state epoch older than the stored one
    /// (FENCED_STATE_EPOCH), as Kafka fences. A share partition without
    /// state gets its first snapshot (snapshot epoch 0), as in Kafka; after
    /// `updates_per_snapshot` updates the write is a new snapshot (snapshot
    /// epoch + 1) of the state with the write applied; otherwise it is a
    /// ShareUpdate of the write alone.
    pub fn write(
        &self,
        key: &SharePartitionKey,
        state_epoch: i32,
        leader_epoch: i32,
        write: &StateWrite,
        updates_per_snapshot: u32,
        now_ms: i64,
    ) -> Result<ShareStateRecord, i16> {
        check_partition(key)?;
        let stored = self.get(key);
        if let Some(s) = stored {
            if s.leader_epoch > leader_epoch {
                return Err(error_code::FENCED_LEADER_EPOCH);
            }
            if s.state_epoch > state_epoch {
                return Err(error_code::FENCED_STATE_EPOCH);
            }
        }
        Ok(plan_write(
            key,
            stored,
            state_epoch,
            leader_epoch,
            write,
            updates_per_snapshot,
            now_ms,
        ))
    }

    /// ReadShareGroupState. A reader with an older leader epoch than the
    /// stored one is fenced; one with a newer epoch gets the record that
    /// stores it, which the shell writes before answering. A share partition
    /// without state answers [`UNINITIALIZED_START_OFFSET`] and
    /// [`DEFAULT_STATE_EPOCH`] with no batches (and writes nothing: there is
    /// no state to attach the epoch to).
    pub fn read(
        &self,
        key: &SharePartitionKey,
        leader_epoch: i32,
        updates_per_snapshot: u32,
        now_ms: i64,
    ) -> Result<ReadAnswer, i16> {
        check_partition(key)?;
        let Some(s) = self.get(key) else {
            return Ok(ReadAnswer {
                state_epoch: DEFAULT_STATE_EPOCH,
                start_offset: UNINITIALIZED_START_OFFSET,
                state_batches: Vec::new(),
                initialized: false,
                leader_epoch_record: None,
            });
        };
        if s.leader_epoch > leader_epoch {
            return Err(error_code::FENCED_LEADER_EPOCH);
        }
        let leader_epoch_record = (leader_epoch != EPOCH_UNSET && leader_epoch != s.leader_epoch)
            .then(|| {
                let nothing = StateWrite {
                    start_offset: s.start_offset,
                    delivery_complete_count: s.delivery_complete_count,
                    state_batches: Vec::new(),
                };
                plan_write(
                    key,
                    Some(s),
                    s.state_epoch,
                    leader_epoch,
                    &nothing,
                    updates_per_snapshot,
                    now_ms,
                )
            });
        Ok(ReadAnswer {
            state_epoch: s.state_epoch,
            start_offset: s.start_offset,
            state_batches: s.state_batches(),
            initialized: true,
            leader_epoch_record,
        })
    }

    /// ReadShareGroupStateSummary: the start offset and epochs, or the
    /// uninitialized answer.
    pub fn summary(&self, key: &SharePartitionKey) -> Result<SummaryAnswer, i16> {
        check_partition(key)?;
        Ok(match self.get(key) {
            Some(s) => SummaryAnswer {
                state_epoch: s.state_epoch,
                leader_epoch: s.leader_epoch,
                start_offset: s.start_offset,
                delivery_complete_count: s.delivery_complete_count,
            },
            None => SummaryAnswer {
                state_epoch: DEFAULT_STATE_EPOCH,
                leader_epoch: EPOCH_UNSET,
                start_offset: UNINITIALIZED_START_OFFSET,
                delivery_complete_count:
                    crate::group::share::state_records::DELIVERY_COMPLETE_COUNT_UNKNOWN,
            },
        })
    }

    /// DeleteShareGroupState: the tombstones of both record types, or none
    /// when there is no state (deleting it again succeeds).
    pub fn delete(&self, key: &SharePartitionKey) -> Result<Vec<ShareStateRecord>, i16> {
        check_partition(key)?;
        if self.get(key).is_none() {
            return Ok(Vec::new());
        }
        Ok(vec![
            ShareStateRecord::Snapshot {
                key: key.clone(),
                value: None,
            },
            ShareStateRecord::Update {
                key: key.clone(),
                value: None,
            },
        ])
    }

    /// The lowest offset a load still needs: the oldest of the share
    /// partitions' latest snapshots, or past everything replayed when no
    /// share partition has state. Everything below it may be deleted.
    pub fn prune_point(&self) -> i64 {
        self.entries
            .values()
            .map(|e| e.snapshot_offset)
            .min()
            .unwrap_or(self.next_offset)
    }
}

/// INVALID_REQUEST for a negative partition, as Kafka refuses it.
fn check_partition(key: &SharePartitionKey) -> Result<(), i16> {
    if key.partition < 0 {
        return Err(error_code::INVALID_REQUEST);
    }
    Ok(())
}

/// The snapshot or update a write of `stored` becomes (Kafka's
/// `generateShareStateRecord`).
fn plan_write(
    key: &SharePartitionKey,
    stored: Option<&DurableShareState>,
    state_epoch: i32,
    leader_epoch: i32,
    write: &StateWrite,
    updates_per_snapshot: u32,
    now_ms: i64,
) -> ShareStateRecord {
    let snapshot = |mut next: DurableShareState, snapshot_epoch: i32| {
        next.apply_write(leader_epoch, write);
        next.snapshot_epoch = snapshot_epoch;
        if state_epoch != EPOCH_UNSET {
            next.state_epoch = state_epoch;
        }
        ShareStateRecord::Snapshot {
            key: key.clone(),
            value: Some(next.to_snapshot(now_ms, now_ms)),
        }
    };
    match stored {
        None => snapshot(
            DurableShareState::initialized(state_epoch, write.start_offset),
            0,
        ),
        Some(s) if s.snapshot_due(updates_per_snapshot) => {
            let mut record = snapshot(s.clone(), s.snapshot_epoch.saturating_add(1));
            if let ShareStateRecord::Snapshot { value: Some(v), .. } = &mut record {
                // Kafka keeps the stored epoch when the writer sends none.
                if leader_epoch == EPOCH_UNSET {
                    v.leader_epoch = s.leader_epoch;
                }
            }
            record
        }
        Some(s) => ShareStateRecord::Update {
            key: key.clone(),
            value: Some(ShareUpdateValue {
                snapshot_epoch: s.snapshot_epoch,
                leader_epoch,
                start_offset: write.start_offset,
                delivery_complete_count: write.delivery_complete_count,
                state_batches: write.state_batches.clone(),
            }),
        },
    }
}

#[cfg(test)]
#[path = "state_store_tests.rs"]
mod tests;
