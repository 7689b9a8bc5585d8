//! The leader-epoch cache: which leader epoch wrote which range of offsets.
//!
//! Each entry `(epoch, start_offset)` says that the leader of `epoch` wrote
//! its first record at `start_offset`; the epoch's range ends where the next
//! entry starts, or at the log end offset for the latest epoch. Followers use
//! it through OffsetsForLeaderEpoch to find where their log diverged from the
//! leader's, instead of truncating to a high watermark that may be stale
//! after a crash (see Kafka's KIP-101 and KIP-279).
//!
//! This is a pure, in-memory state machine mirroring Kafka's
//! `LeaderEpochFileCache` rule for rule. It does no I/O: every mutating
//! method returns whether the entries changed, and the caller then persists
//! [`LeaderEpochCache::entries`] with
//! [`crate::log::checkpoint::write_epoch_checkpoint`]. Kafka writes the
//! checkpoint synchronously after `assign` and asynchronously after
//! truncations (a stale checkpoint is repaired by the truncations replayed on
//! log load); the caller should keep the same order.
//!
//! **Invariant:** entries are strictly increasing both in epoch and in start
//! offset. `assign` keeps it by dropping conflicting tail entries, exactly as
//! Kafka's `maybeTruncateNonMonotonicEntries` does, and every mutation
//! asserts it afterwards.
//!
//! The cache knows no partition name; callers log inside a tracing span that
//! names the partition, so the warnings below carry it.

use std::fmt;

/// The epoch Kafka uses for "no epoch" in OffsetsForLeaderEpoch
/// (`OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH`).
pub const UNDEFINED_EPOCH: i32 = -1;
/// The offset Kafka uses for "no end offset" in OffsetsForLeaderEpoch
/// (`OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET`).
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// One leader epoch and the offset of the first record its leader wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

impl fmt::Display for EpochEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "EpochEntry(epoch={}, startOffset={})",
            self.epoch, self.start_offset
        )
    }
}

/// `assign` was given a negative epoch or start offset. Kafka throws
/// `IllegalArgumentException` here; the caller, which knows the partition,
/// turns this into [`crate::error::LogError::InvalidEpochEntry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid leader epoch entry: epoch {epoch}, start offset {start_offset}; both must be non-negative")]
pub struct InvalidEpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

/// Leader epochs of one partition replica, sorted by epoch.
///
/// A `Vec` rather than Kafka's `TreeMap`: the entries are sorted by epoch and
/// by start offset at once, new entries only ever go at the end, and a
/// partition sees few leader changes, so binary search over a slice is both
/// simpler and faster than a tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderEpochCache {
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    /// An empty cache, as for a new partition.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rebuilds a cache from entries read back from a checkpoint.
    ///
    /// Rejects negative values and any entry whose epoch or start offset is
    /// not strictly greater than the previous entry's: that is the invariant
    /// `assign` maintains, so every checkpoint Kafka or pinlog writes obeys
    /// it, and a file that breaks it is corrupt. (Kafka replays the file
    /// through `assign`, which would silently drop the conflicting entries;
    /// refusing is safer because those entries decide where followers
    /// truncate.)
    pub fn from_entries(entries: Vec<EpochEntry>) -> Result<Self, String> {
        check_entries(&entries)?;
        Ok(Self { entries })
    }

    /// Records that the leader of `epoch` wrote its first record at
    /// `start_offset`, as Kafka's `assign(epoch, startOffset)`.
    ///
    /// Returns `Ok(true)` when the entries changed and must be persisted.
    /// Nothing changes when `epoch` is already the latest epoch and
    /// `start_offset` is not earlier than its recorded start: an epoch's start
    /// offset, once assigned, is never moved forward. Otherwise any tail
    /// entries whose epoch is `>= epoch` or whose start offset is
    /// `>= start_offset` are dropped first, because they contradict the new
    /// entry (the log was truncated under them), and the new entry becomes
    /// the latest.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<bool, InvalidEpochEntry> {
        if epoch < 0 || start_offset < 0 {
            return Err(InvalidEpochEntry {
                epoch,
                start_offset,
            });
        }
        let new_entry = EpochEntry {
            epoch,
            start_offset,
        };
        if !self.is_update_needed(new_entry) {
            return Ok(false);
        }

        self.truncate_non_monotonic_entries(new_entry);
        self.entries.push(new_entry);
        tracing::debug!(
            entry = %new_entry,
            entries_count = self.entries.len(),
            "appended new leader epoch entry"
        );
        self.assert_monotonic();
        Ok(true)
    }

    /// Kafka's `isUpdateNeeded`: the common case on a follower is one call per
    /// appended batch with the current epoch, which must stay a no-op.
    fn is_update_needed(&self, new_entry: EpochEntry) -> bool {
        match self.entries.last() {
            Some(latest) => {
                new_entry.epoch != latest.epoch || new_entry.start_offset < latest.start_offset
            }
            None => true,
        }
    }

    /// Kafka's `maybeTruncateNonMonotonicEntries`. Because the entries are
    /// monotonic in both fields, the entries that conflict with `new_entry`
    /// always form a suffix.
    fn truncate_non_monotonic_entries(&mut self, new_entry: EpochEntry) {
        let keep_count = self.entries.partition_point(|entry| {
            entry.epoch < new_entry.epoch && entry.start_offset < new_entry.start_offset
        });
        let removed: Vec<EpochEntry> = self.entries.drain(keep_count..).collect();

        // Replacing a single entry that starts at the same offset means that
        // epoch wrote nothing, which is routine (a leader elected twice before
        // appending); anything else means data under those epochs was
        // truncated, which Kafka reports.
        let is_trivial = match removed.as_slice() {
            [] => true,
            [only] => only.start_offset == new_entry.start_offset,
            _ => false,
        };
        if !is_trivial {
            tracing::warn!(
                new_entry = %new_entry,
                removed_entries = ?removed,
                entries_count = self.entries.len(),
                "new leader epoch entry caused truncation of conflicting entries"
            );
        }
    }

    /// All entries, oldest epoch first.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry with the highest epoch.
    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    /// The highest epoch that has an entry: the current leader epoch on a
    /// leader.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|entry| entry.epoch)
    }

    /// The entry with the lowest epoch.
    pub fn earliest_entry(&self) -> Option<EpochEntry> {
        self.entries.first().copied()
    }

    /// The entry for exactly `epoch`, if that epoch wrote anything.
    pub fn epoch_entry(&self, epoch: i32) -> Option<EpochEntry> {
        self.entries
            .binary_search_by_key(&epoch, |entry| entry.epoch)
            .ok()
            .map(|index| self.entries[index])
    }

    /// The highest cached epoch strictly below `epoch` (Kafka's
    /// `previousEpoch(epoch)`, a `TreeMap.lowerKey`).
    pub fn previous_epoch(&self, epoch: i32) -> Option<i32> {
        self.previous_entry(epoch).map(|entry| entry.epoch)
    }

    /// The entry with the highest epoch strictly below `epoch`.
    pub fn previous_entry(&self, epoch: i32) -> Option<EpochEntry> {
        let index = self.entries.partition_point(|entry| entry.epoch < epoch);
        index.checked_sub(1).map(|previous| self.entries[previous])
    }

    /// The lowest cached epoch strictly above `epoch` (a `TreeMap.higherKey`).
    pub fn next_epoch(&self, epoch: i32) -> Option<i32> {
        let index = self.entries.partition_point(|entry| entry.epoch <= epoch);
        self.entries.get(index).map(|entry| entry.epoch)
    }

    /// The epoch whose range holds `offset`: the entry with the greatest start
    /// offset `<= offset`. `None` when `offset` precedes every entry. An
    /// offset past the log end still maps to the latest epoch, as in Kafka.
    pub fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        let index = self
            .entries
            .partition_point(|entry| entry.start_offset <= offset);
        index.checked_sub(1).map(|floor| self.entries[floor].epoch)
    }

    /// Answers OffsetsForLeaderEpoch: returns `(epoch, end_offset)` where
    /// `epoch` is the largest cached epoch `<= requested_epoch` and
    /// `end_offset` is the start offset of the first epoch after it, exactly
    /// as Kafka's `endOffsetFor`:
    ///
    /// - `requested_epoch == UNDEFINED_EPOCH` (a bootstrapping follower):
    ///   `(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)`.
    /// - `requested_epoch` is the latest epoch: `(requested_epoch,
    ///   log_end_offset)`, because that epoch is still being written.
    /// - no epoch above `requested_epoch` is cached (an unknown, newer epoch,
    ///   or an empty cache): `(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)`.
    /// - no epoch `<= requested_epoch` is cached, because the log start moved
    ///   past it: `(requested_epoch, start of the first higher epoch)`, so the
    ///   follower replicates from the leader's earliest retained epoch.
    /// - otherwise `(floor epoch, start of the first higher epoch)`.
    pub fn end_offset_for(&self, requested_epoch: i32, log_end_offset: i64) -> (i32, i64) {
        let epoch_and_end_offset = if requested_epoch == UNDEFINED_EPOCH {
            (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        } else if self.latest_epoch() == Some(requested_epoch) {
            (requested_epoch, log_end_offset)
        } else {
            let higher_index = self
                .entries
                .partition_point(|entry| entry.epoch <= requested_epoch);
            match self.entries.get(higher_index) {
                None => (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET),
                Some(higher) => match higher_index.checked_sub(1) {
                    None => (requested_epoch, higher.start_offset),
                    Some(floor_index) => (self.entries[floor_index].epoch, higher.start_offset),
                },
            }
        };
        tracing::trace!(
            requested_epoch,
            epoch = epoch_and_end_offset.0,
            end_offset = epoch_and_end_offset.1,
            entries_count = self.entries.len(),
            "processed end offset request"
        );
        epoch_and_end_offset
    }

    /// Drops every entry that starts at or after `end_offset`, after the log
    /// was truncated to `end_offset` (Kafka's `truncateFromEnd`). Does
    /// nothing for a negative `end_offset` (`UNDEFINED_EPOCH_OFFSET`).
    /// Returns whether entries were removed.
    pub fn truncate_from_end(&mut self, end_offset: i64) -> bool {
        let is_truncation_needed = end_offset >= 0
            && self
                .entries
                .last()
                .is_some_and(|latest| latest.start_offset >= end_offset);
        if !is_truncation_needed {
            return false;
        }
        let keep_count = self
            .entries
            .partition_point(|entry| entry.start_offset < end_offset);
        let removed: Vec<EpochEntry> = self.entries.drain(keep_count..).collect();
        tracing::debug!(
            removed_entries = ?removed,
            end_offset,
            entries_count = self.entries.len(),
            "cleared leader epoch entries after truncating to end offset"
        );
        self.assert_monotonic();
        true
    }

    /// Forgets epochs wholly below the new log start offset `start_offset`
    /// (Kafka's `truncateFromStart`): every entry starting at or before
    /// `start_offset` is removed except the last of them, which is kept with
    /// its start moved up to `start_offset`, since that epoch still owns the
    /// first retained offset. The operation is exclusive: an entry starting
    /// exactly at `start_offset` is kept as it is.
    ///
    /// Returns whether the entries changed. Kafka schedules a flush whenever
    /// it removed anything, even when it re-adds the very entry it removed;
    /// this returns `false` in that case since there is nothing new to write.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> bool {
        let removed_count = self
            .entries
            .partition_point(|entry| entry.start_offset <= start_offset);
        let Some(last_removed_index) = removed_count.checked_sub(1) else {
            return false;
        };
        let first_before_start = self.entries[last_removed_index];
        let updated_first_entry = EpochEntry {
            epoch: first_before_start.epoch,
            start_offset,
        };
        let is_changed = removed_count > 1 || first_before_start != updated_first_entry;
        self.entries.drain(..last_removed_index);
        self.entries[0] = updated_first_entry;
        if is_changed {
            tracing::debug!(
                removed_count,
                updated_first_entry = %updated_first_entry,
                start_offset,
                entries_count = self.entries.len(),
                "cleared leader epoch entries after truncating to start offset"
            );
        }
        self.assert_monotonic();
        is_changed
    }

    /// Removes every entry, as Kafka's `clear`. The caller persists the empty
    /// cache when it means `clearAndFlush`.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Checked after every mutation and kept in release builds: a broken
    /// invariant here would make followers truncate to wrong offsets, which
    /// silently loses or diverges data.
    fn assert_monotonic(&self) {
        if let Err(reason) = check_entries(&self.entries) {
            panic!("leader epoch cache invariant broken: {reason}");
        }
    }
}

/// Checks that every entry is non-negative and strictly greater than the
/// previous one in both epoch and start offset.
fn check_entries(entries: &[EpochEntry]) -> Result<(), String> {
    for (index, entry) in entries.iter().enumerate() {
        if entry.epoch < 0 || entry.start_offset < 0 {
            return Err(format!(
                "entry {index} ({entry}) has a negative epoch or start offset"
            ));
        }
    }
    for (index, pair) in entries.windows(2).enumerate() {
        let (previous, entry) = (pair[0], pair[1]);
        if entry.epoch <= previous.epoch || entry.start_offset <= previous.start_offset {
            return Err(format!(
                "entry {} ({entry}) does not strictly follow entry {index} ({previous}): \
                 epochs and start offsets must both increase",
                index + 1
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn entry(epoch: i32, start_offset: i64) -> EpochEntry {
        EpochEntry {
            epoch,
            start_offset,
        }
    }

    /// A cache built by assigning each pair in turn, as the tests in Kafka's
    /// `LeaderEpochFileCacheTest` do.
    fn cache_of(pairs: &[(i32, i64)]) -> LeaderEpochCache {
        let mut cache = LeaderEpochCache::new();
        for &(epoch, start_offset) in pairs {
            cache.assign(epoch, start_offset).unwrap();
        }
        cache
    }

    fn entries_of(pairs: &[(i32, i64)]) -> Vec<EpochEntry> {
        pairs.iter().map(|&(e, o)| entry(e, o)).collect()
    }

    const UNDEFINED: (i32, i64) = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);

    // ---- from_entries ----

    #[test]
    fn from_entries_accepts_strictly_increasing_entries() {
        let cache =
            LeaderEpochCache::from_entries(entries_of(&[(0, 0), (1, 128), (5, 300)])).unwrap();
        assert_eq!(cache.entries(), entries_of(&[(0, 0), (1, 128), (5, 300)]));
        assert!(LeaderEpochCache::from_entries(Vec::new())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn from_entries_rejects_non_monotonic_or_negative_entries() {
        for bad in [
            vec![(1, 0), (1, 5)], // repeated epoch
            vec![(2, 0), (1, 5)], // decreasing epoch
            vec![(1, 5), (2, 5)], // repeated start offset
            vec![(1, 5), (2, 4)], // decreasing start offset
            vec![(-1, 0)],        // negative epoch
            vec![(0, -1)],        // negative start offset
        ] {
            let result = LeaderEpochCache::from_entries(entries_of(&bad));
            assert!(result.is_err(), "{bad:?} was accepted");
        }
    }

    // ---- assign ----

    #[test]
    fn assign_rejects_negative_epoch_or_offset() {
        let mut cache = LeaderEpochCache::new();
        assert_eq!(
            cache.assign(-1, 0),
            Err(InvalidEpochEntry {
                epoch: -1,
                start_offset: 0
            })
        );
        assert_eq!(
            cache.assign(0, -5),
            Err(InvalidEpochEntry {
                epoch: 0,
                start_offset: -5
            })
        );
        assert!(cache.is_empty());
    }

    #[test]
    fn should_add_epoch_and_message_offset_to_cache() {
        let mut cache = LeaderEpochCache::new();
        assert_eq!(cache.assign(2, 10), Ok(true));
        assert_eq!(cache.latest_epoch(), Some(2));
        assert_eq!(cache.entries(), [entry(2, 10)]);
        assert_eq!(cache.end_offset_for(2, 11), (2, 11));
    }

    #[test]
    fn should_not_overwrite_start_offset_once_assigned() {
        let mut cache = cache_of(&[(2, 9)]);
        assert_eq!(cache.assign(2, 10), Ok(false));
        assert_eq!(cache.entries(), [entry(2, 9)]);
        // The same epoch at the same offset is also a no-op.
        assert_eq!(cache.assign(2, 9), Ok(false));
    }

    #[test]
    fn same_epoch_with_earlier_start_offset_replaces_the_entry() {
        let mut cache = cache_of(&[(2, 9)]);
        assert_eq!(cache.assign(2, 7), Ok(true));
        assert_eq!(cache.entries(), [entry(2, 7)]);
    }

    #[test]
    fn should_enforce_monotonically_increasing_start_offsets() {
        // A new epoch at the same offset replaces the epoch that wrote nothing.
        let mut cache = cache_of(&[(2, 9)]);
        assert_eq!(cache.assign(3, 9), Ok(true));
        assert_eq!(cache.entries(), [entry(3, 9)]);
    }

    #[test]
    fn should_enforce_offsets_increase_monotonically() {
        // Epoch goes forward but the offset goes backwards: last one wins.
        let cache = cache_of(&[(2, 6), (3, 5)]);
        assert_eq!(cache.entries(), [entry(3, 5)]);
    }

    #[test]
    fn should_enforce_monotonically_increasing_epochs() {
        let mut cache = cache_of(&[(1, 5), (2, 6)]);
        // An older epoch at a later offset: later epochs are dropped.
        assert_eq!(cache.assign(1, 7), Ok(true));
        assert_eq!(cache.latest_epoch(), Some(1));
        assert_eq!(cache.entries(), [entry(1, 7)]);
        assert_eq!(cache.end_offset_for(1, 8), (1, 8));
        assert_eq!(cache.end_offset_for(2, 8), UNDEFINED);
    }

    #[test]
    fn should_truncate_if_matching_epoch_but_earlier_starting_offset() {
        let mut cache = cache_of(&[(5, 11), (6, 12), (7, 13)]);
        // Epoch 7 starts at an earlier offset, which conflicts with epoch 6.
        assert_eq!(cache.assign(7, 12), Ok(true));
        assert_eq!(cache.entries(), [entry(5, 11), entry(7, 12)]);
        assert_eq!(cache.end_offset_for(5, 0), (5, 12));
        assert_eq!(cache.end_offset_for(6, 0), (5, 12));
    }

    #[test]
    fn should_not_update_epoch_and_start_offset_if_it_did_not_change() {
        let cache = cache_of(&[(2, 6), (2, 7)]);
        assert_eq!(cache.entries(), [entry(2, 6)]);
    }

    #[test]
    fn should_increase_and_track_epochs_as_leaders_change_many_times() {
        let mut cache = cache_of(&[(0, 0)]);
        cache.assign(1, 0).unwrap();
        assert_eq!(cache.latest_epoch(), Some(1));
        assert_eq!(cache.end_offset_for(1, 0), (1, 0));
        // Epoch 0 wrote nothing and was replaced; asking for it lands before
        // the earliest epoch.
        assert_eq!(cache.end_offset_for(0, 0), (0, 0));
        assert_eq!(cache.end_offset_for(1, 5), (1, 5));
        assert_eq!(cache.end_offset_for(0, 5), (0, 0));
        cache.assign(2, 5).unwrap();
        assert_eq!(cache.end_offset_for(2, 10), (2, 10));
        assert_eq!(cache.end_offset_for(1, 10), (1, 5));
        assert_eq!(cache.end_offset_for(0, 10), (0, 0));
    }

    #[test]
    fn should_increase_and_track_epochs_as_follower_receives_many_messages() {
        let mut cache = LeaderEpochCache::new();
        for (epoch, start_offset) in [(0, 0), (0, 1), (0, 2), (1, 3), (1, 4), (1, 5)] {
            cache.assign(epoch, start_offset).unwrap();
        }
        assert_eq!(cache.latest_epoch(), Some(1));
        assert_eq!(cache.end_offset_for(1, 6), (1, 6));
        for start_offset in 6..9 {
            cache.assign(2, start_offset).unwrap();
        }
        assert_eq!(cache.end_offset_for(2, 9), (2, 9));
        assert_eq!(cache.end_offset_for(0, 9), (0, 3));
        assert_eq!(cache.end_offset_for(1, 9), (1, 6));
        assert_eq!(cache.entries(), entries_of(&[(0, 0), (1, 3), (2, 6)]));
    }

    // ---- end_offset_for ----

    #[test]
    fn should_return_log_end_offset_if_latest_epoch_requested() {
        let cache = cache_of(&[(2, 11), (2, 12)]);
        assert_eq!(cache.end_offset_for(2, 14), (2, 14));
    }

    #[test]
    fn should_return_undefined_if_undefined_epoch_requested() {
        let cache = cache_of(&[(2, 11), (3, 12)]);
        assert_eq!(cache.end_offset_for(UNDEFINED_EPOCH, 0), UNDEFINED);
        let empty = LeaderEpochCache::new();
        assert_eq!(empty.end_offset_for(UNDEFINED_EPOCH, 73), UNDEFINED);
    }

    #[test]
    fn should_return_undefined_if_no_epoch_recorded() {
        let cache = LeaderEpochCache::new();
        assert_eq!(cache.end_offset_for(0, 0), UNDEFINED);
        assert_eq!(cache.end_offset_for(7, 0), UNDEFINED);
    }

    #[test]
    fn should_return_requested_epoch_and_first_start_if_floor_missing() {
        // The requested epoch predates every cached epoch: the log start moved
        // past it, so answer with the first start offset we still have.
        let cache = cache_of(&[(5, 11), (6, 12), (7, 13)]);
        assert_eq!(cache.end_offset_for(4, 0), (4, 11));
    }

    #[test]
    fn should_get_first_offset_of_subsequent_epoch_for_previous_epoch() {
        let cache = cache_of(&[(1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)]);
        assert_eq!(cache.end_offset_for(2, 17), (2, 15));
    }

    #[test]
    fn should_return_next_available_epoch_if_no_exact_epoch() {
        let cache = cache_of(&[(0, 10), (2, 13), (4, 17)]);
        assert_eq!(cache.end_offset_for(1, 0), (0, 13));
        assert_eq!(cache.end_offset_for(2, 0), (2, 17));
        assert_eq!(cache.end_offset_for(3, 0), (2, 17));
    }

    #[test]
    fn should_return_undefined_for_unknown_newer_epoch() {
        let cache = cache_of(&[(2, 100)]);
        assert_eq!(cache.end_offset_for(3, 100), UNDEFINED);
    }

    #[test]
    fn should_support_epochs_that_do_not_start_from_zero() {
        let cache = cache_of(&[(2, 6)]);
        assert_eq!(cache.end_offset_for(2, 7), (2, 7));
        assert_eq!(cache.entries(), [entry(2, 6)]);
    }

    // ---- lookups ----

    #[test]
    fn previous_epoch_and_entry() {
        let mut cache = LeaderEpochCache::new();
        assert_eq!(cache.previous_epoch(2), None);
        cache.assign(2, 10).unwrap();
        assert_eq!(cache.previous_epoch(2), None);
        cache.assign(4, 15).unwrap();
        assert_eq!(cache.previous_epoch(4), Some(2));
        assert_eq!(cache.previous_entry(4), Some(entry(2, 10)));
        cache.assign(10, 20).unwrap();
        assert_eq!(cache.previous_epoch(10), Some(4));
        // Epochs that are not cached still find their lower neighbour.
        assert_eq!(cache.previous_epoch(7), Some(4));
        assert!(cache.truncate_from_end(18));
        let latest_epoch = cache.latest_epoch().unwrap();
        assert_eq!(cache.previous_epoch(latest_epoch), Some(2));
        assert_eq!(cache.previous_entry(latest_epoch), Some(entry(2, 10)));
    }

    #[test]
    fn next_epoch_and_epoch_entry() {
        let cache = cache_of(&[(0, 0), (1, 100), (2, 200)]);
        assert_eq!(cache.next_epoch(-1), Some(0));
        assert_eq!(cache.next_epoch(0), Some(1));
        assert_eq!(cache.next_epoch(1), Some(2));
        assert_eq!(cache.next_epoch(2), None);
        assert_eq!(cache.next_epoch(100), None);
        assert_eq!(cache.epoch_entry(1), Some(entry(1, 100)));
        assert_eq!(cache.epoch_entry(3), None);
    }

    #[test]
    fn earliest_and_latest_entries() {
        let mut cache = LeaderEpochCache::new();
        assert_eq!(cache.earliest_entry(), None);
        assert_eq!(cache.latest_entry(), None);
        assert_eq!(cache.latest_epoch(), None);
        cache.assign(3, 7).unwrap();
        cache.assign(5, 9).unwrap();
        assert_eq!(cache.earliest_entry(), Some(entry(3, 7)));
        assert_eq!(cache.latest_entry(), Some(entry(5, 9)));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn should_fetch_epoch_for_given_offset() {
        let cache = cache_of(&[(0, 10), (1, 20), (5, 30)]);
        assert_eq!(cache.epoch_for_offset(25), Some(1));
        assert_eq!(cache.epoch_for_offset(20), Some(1));
        assert_eq!(cache.epoch_for_offset(30), Some(5));
        assert_eq!(cache.epoch_for_offset(50), Some(5));
        assert_eq!(cache.epoch_for_offset(5), None);
        assert_eq!(LeaderEpochCache::new().epoch_for_offset(0), None);
    }

    // ---- truncate_from_end ----

    #[test]
    fn should_drop_entries_on_epoch_boundary_when_removing_latest() {
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        assert!(cache.truncate_from_end(8));
        assert_eq!(cache.entries(), [entry(2, 6)]);
    }

    #[test]
    fn should_drop_entries_between_epoch_boundary_when_removing_newest() {
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        assert!(cache.truncate_from_end(9));
        assert_eq!(cache.latest_epoch(), Some(3));
        assert_eq!(cache.entries(), [entry(2, 6), entry(3, 8)]);
    }

    #[test]
    fn truncate_from_end_past_latest_start_is_a_no_op() {
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        assert!(!cache.truncate_from_end(12));
        assert_eq!(cache.len(), 3);
        // The latest epoch starting exactly at the end offset is removed:
        // it wrote nothing that survived.
        assert!(cache.truncate_from_end(11));
        assert_eq!(cache.entries(), [entry(2, 6), entry(3, 8)]);
    }

    #[test]
    fn should_not_reset_epoch_history_tail_if_undefined_passed() {
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        assert!(!cache.truncate_from_end(UNDEFINED_EPOCH_OFFSET));
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn truncate_from_end_to_zero_removes_everything() {
        let mut cache = cache_of(&[(0, 0), (1, 5)]);
        assert!(cache.truncate_from_end(0));
        assert!(cache.is_empty());
    }

    #[test]
    fn should_clear_latest_on_empty_cache() {
        let mut cache = LeaderEpochCache::new();
        assert!(!cache.truncate_from_end(7));
        assert!(cache.is_empty());
    }

    // ---- truncate_from_start ----

    #[test]
    fn should_preserve_reset_offset_on_clear_earliest_if_one_exists() {
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        assert!(cache.truncate_from_start(8));
        assert_eq!(cache.entries(), [entry(3, 8), entry(4, 11)]);
    }

    #[test]
    fn should_update_saved_offset_when_offset_to_clear_to_is_between_epochs() {
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        assert!(cache.truncate_from_start(9));
        assert_eq!(cache.entries(), [entry(3, 9), entry(4, 11)]);
    }

    #[test]
    fn should_update_offset_between_epoch_boundaries_on_clear_earliest() {
        let mut cache = cache_of(&[(0, 0), (1, 7), (2, 10)]);
        assert!(cache.truncate_from_start(5));
        assert_eq!(cache.entries(), entries_of(&[(0, 5), (1, 7), (2, 10)]));
    }

    #[test]
    fn should_not_clear_anything_if_offset_too_early_or_at_first_offset() {
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        assert!(!cache.truncate_from_start(1));
        assert!(!cache.truncate_from_start(6));
        assert_eq!(cache.entries(), entries_of(&[(2, 6), (3, 8), (4, 11)]));
    }

    #[test]
    fn should_retain_latest_epoch_on_clear_all_earliest() {
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        assert!(cache.truncate_from_start(11));
        assert_eq!(cache.entries(), [entry(4, 11)]);
    }

    #[test]
    fn should_retain_latest_epoch_on_clear_all_earliest_and_update_its_offset() {
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        assert!(cache.truncate_from_start(15));
        assert_eq!(cache.entries(), [entry(4, 15)]);
    }

    #[test]
    fn should_not_reset_epoch_history_head_if_undefined_passed() {
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        assert!(!cache.truncate_from_start(UNDEFINED_EPOCH_OFFSET));
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn should_clear_earliest_on_empty_cache() {
        let mut cache = LeaderEpochCache::new();
        assert!(!cache.truncate_from_start(7));
        assert!(cache.is_empty());
    }

    #[test]
    fn truncation_at_both_ends() {
        // Kafka's shouldWriteCheckpointOnTruncation, minus the file.
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        assert!(cache.truncate_from_end(11));
        assert!(cache.truncate_from_start(8));
        assert_eq!(cache.entries(), [entry(3, 8)]);
    }

    #[test]
    fn should_clear_all_entries() {
        let mut cache = cache_of(&[(2, 6), (3, 8), (4, 11)]);
        cache.clear();
        assert!(cache.is_empty());
        assert_eq!(cache.latest_epoch(), None);
    }

    // ---- model-based property test ----

    /// Kafka's algorithms transcribed literally onto a `BTreeMap`, the
    /// structure Kafka uses (a `TreeMap` keyed by epoch), as a reference model.
    #[derive(Debug, Default, Clone)]
    struct Model {
        epochs: BTreeMap<i32, i64>,
    }

    impl Model {
        fn assign(&mut self, epoch: i32, start_offset: i64) {
            let is_update_needed = match self.epochs.last_key_value() {
                Some((&latest_epoch, &latest_start)) => {
                    epoch != latest_epoch || start_offset < latest_start
                }
                None => true,
            };
            if !is_update_needed {
                return;
            }
            while let Some((&e, &o)) = self.epochs.last_key_value() {
                if e >= epoch || o >= start_offset {
                    self.epochs.remove(&e);
                } else {
                    break;
                }
            }
            self.epochs.insert(epoch, start_offset);
        }

        fn truncate_from_end(&mut self, end_offset: i64) {
            let is_needed = end_offset >= 0
                && self
                    .epochs
                    .last_key_value()
                    .is_some_and(|(_, &o)| o >= end_offset);
            if is_needed {
                while let Some((&e, &o)) = self.epochs.last_key_value() {
                    if o >= end_offset {
                        self.epochs.remove(&e);
                    } else {
                        break;
                    }
                }
            }
        }

        fn truncate_from_start(&mut self, start_offset: i64) {
            let mut last_removed = None;
            while let Some((&e, &o)) = self.epochs.first_key_value() {
                if o <= start_offset {
                    self.epochs.remove(&e);
                    last_removed = Some(e);
                } else {
                    break;
                }
            }
            if let Some(e) = last_removed {
                self.epochs.insert(e, start_offset);
            }
        }

        fn end_offset_for(&self, requested: i32, log_end_offset: i64) -> (i32, i64) {
            if requested == UNDEFINED_EPOCH {
                return UNDEFINED;
            }
            if self.epochs.last_key_value().map(|(&e, _)| e) == Some(requested) {
                return (requested, log_end_offset);
            }
            let higher = self
                .epochs
                .range((
                    std::ops::Bound::Excluded(requested),
                    std::ops::Bound::Unbounded,
                ))
                .next();
            let floor = self.epochs.range(..=requested).next_back();
            match (higher, floor) {
                (None, _) => UNDEFINED,
                (Some((_, &higher_start)), None) => (requested, higher_start),
                (Some((_, &higher_start)), Some((&floor_epoch, _))) => (floor_epoch, higher_start),
            }
        }

        fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
            let mut previous = None;
            for (&e, &o) in &self.epochs {
                if o == offset {
                    return Some(e);
                }
                if o > offset {
                    return previous;
                }
                previous = Some(e);
            }
            previous
        }

        fn entries(&self) -> Vec<EpochEntry> {
            self.epochs.iter().map(|(&e, &o)| entry(e, o)).collect()
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Assign(i32, i64),
        TruncateFromEnd(i64),
        TruncateFromStart(i64),
        Clear,
    }

    fn op_strategy() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0..12i32, 0..60i64).prop_map(|(e, o)| Op::Assign(e, o)),
            2 => (-1..65i64).prop_map(Op::TruncateFromEnd),
            2 => (-1..65i64).prop_map(Op::TruncateFromStart),
            1 => Just(Op::Clear),
        ]
    }

    fn is_strictly_increasing(entries: &[EpochEntry]) -> bool {
        entries
            .windows(2)
            .all(|w| w[0].epoch < w[1].epoch && w[0].start_offset < w[1].start_offset)
    }

    proptest! {
        #[test]
        fn entries_stay_strictly_increasing_and_match_kafka_model(
            ops in proptest::collection::vec(op_strategy(), 0..60),
            queries in proptest::collection::vec((-2..14i32, -1..70i64), 8),
        ) {
            let mut cache = LeaderEpochCache::new();
            let mut model = Model::default();
            for op in &ops {
                let before = cache.entries().to_vec();
                let reported_change = match *op {
                    Op::Assign(epoch, start_offset) => {
                        model.assign(epoch, start_offset);
                        cache.assign(epoch, start_offset).unwrap()
                    }
                    Op::TruncateFromEnd(end_offset) => {
                        model.truncate_from_end(end_offset);
                        cache.truncate_from_end(end_offset)
                    }
                    Op::TruncateFromStart(start_offset) => {
                        model.truncate_from_start(start_offset);
                        cache.truncate_from_start(start_offset)
                    }
                    Op::Clear => {
                        model.epochs.clear();
                        cache.clear();
                        !before.is_empty()
                    }
                };
                prop_assert!(is_strictly_increasing(cache.entries()), "{:?}", cache.entries());
                let model_entries = model.entries();
                prop_assert_eq!(cache.entries(), model_entries.as_slice());
                prop_assert_eq!(reported_change, before != cache.entries(), "after {:?}", op);
                // What the cache holds must always survive a checkpoint round trip.
                prop_assert!(LeaderEpochCache::from_entries(cache.entries().to_vec()).is_ok());
            }
            for &(epoch, offset) in &queries {
                let log_end_offset = offset + 5;
                prop_assert_eq!(
                    cache.end_offset_for(epoch, log_end_offset),
                    model.end_offset_for(epoch, log_end_offset)
                );
                prop_assert_eq!(cache.epoch_for_offset(offset), model.epoch_for_offset(offset));
            }
        }
    }
}
