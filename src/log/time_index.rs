//! Kafka's time index (`<base offset>.timeindex`): a sparse map from
//! timestamps to offsets, used by ListOffsets-by-time and time retention.
//!
//! Each 12-byte entry is, big-endian:
//!
//! ```text
//! 0 timestamp i64
//! 8 relative offset u32 (offset - base offset, at most i32::MAX)
//! ```
//!
//! An entry `(timestamp, offset)` says that the largest timestamp seen before
//! `offset` is `timestamp`: any record with a larger timestamp comes after
//! `offset`. Entries have strictly increasing timestamps and non-decreasing
//! offsets: Kafka appends an entry only when the timestamp grows, and allows
//! the offset to repeat (the segment re-adds its max timestamp when it is
//! rolled or closed).
//!
//! Kafka reserves the last slot of a time index (`is_full` is true one entry
//! early) so that rolling a segment can always append its final entry with
//! `skip_full_check`.

use std::path::Path;

use crate::constants::TIME_INDEX_ENTRY_SIZE;
use crate::error::{LogError, LogResult};
use crate::log::mmap_index::{IndexAppendError, MmapIndexFile};

/// Kafka's `RecordBatch.NO_TIMESTAMP`: what an empty time index reports.
pub const NO_TIMESTAMP: i64 = -1;

const TIMESTAMP_AT: usize = 0;
const RELATIVE_OFFSET_AT: usize = 8;

/// A segment's time index. See the module documentation for the format.
#[derive(Debug)]
pub struct TimeIndex {
    base_offset: i64,
    file: MmapIndexFile,
}

impl TimeIndex {
    /// Creates an empty index at `path`, preallocated to `max_index_bytes`
    /// (rounded down to whole entries), replacing any file there.
    pub fn create(
        path: impl AsRef<Path>,
        base_offset: i64,
        max_index_bytes: u64,
    ) -> LogResult<Self> {
        let path = path.as_ref();
        let file = MmapIndexFile::create(path, TIME_INDEX_ENTRY_SIZE, max_index_bytes)
            .map_err(|e| LogError::io("create time index", path, base_offset, e))?;
        Ok(TimeIndex { base_offset, file })
    }

    /// Opens the index at `path` (creating it if missing) and counts every
    /// whole entry in it as valid, as Kafka does. Call
    /// [`TimeIndex::sanity_check`] before trusting it.
    pub fn open(path: impl AsRef<Path>, base_offset: i64, max_index_bytes: u64) -> LogResult<Self> {
        let path = path.as_ref();
        let file = MmapIndexFile::open(path, TIME_INDEX_ENTRY_SIZE, max_index_bytes)
            .map_err(|e| LogError::io("open time index", path, base_offset, e))?;
        Ok(TimeIndex { base_offset, file })
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    pub fn entries(&self) -> usize {
        self.file.entries()
    }

    pub fn max_entries(&self) -> usize {
        self.file.max_entries()
    }

    /// True one slot early: the last slot is kept for the entry a segment
    /// appends when it is rolled or closed (Kafka's `TimeIndex.isFull`).
    pub fn is_full(&self) -> bool {
        self.entries() >= self.max_entries().saturating_sub(1)
    }

    /// Reserves the disk blocks of the next `n` entries and of the slot
    /// kept for the closing entry ([`MmapIndexFile::reserve`]).
    pub fn reserve(&mut self, n: usize) -> std::io::Result<()> {
        self.file.reserve(n + 1)
    }

    /// Entry `n` as `(timestamp, offset)`. Panics if `n >= entries()`.
    pub fn entry(&self, n: usize) -> (i64, i64) {
        let bytes = self.file.entry_bytes(n);
        (timestamp(bytes), self.absolute_offset(bytes))
    }

    /// The last entry as `(timestamp, offset)`, or `(NO_TIMESTAMP,
    /// base_offset)` when empty.
    pub fn last_entry(&self) -> (i64, i64) {
        match self.entries() {
            0 => (NO_TIMESTAMP, self.base_offset),
            entries => self.entry(entries - 1),
        }
    }

    /// The entry with the largest timestamp `<= target_timestamp`, as
    /// `(timestamp, offset)`; `(NO_TIMESTAMP, base_offset)` if there is none.
    pub fn lookup(&self, target_timestamp: i64) -> (i64, i64) {
        match self.file.largest_lower_bound(timestamp, target_timestamp) {
            Some(n) => self.entry(n),
            None => (NO_TIMESTAMP, self.base_offset),
        }
    }

    /// Appends `(timestamp, offset)` if `timestamp` is larger than the last
    /// entry's, and otherwise does nothing (Kafka's `maybeAppend`). An equal
    /// offset with a larger timestamp is appended; an equal timestamp is
    /// ignored, which is what makes re-adding the last entry on roll harmless.
    ///
    /// Errors, in Kafka's order: the index is full (unless `skip_full_check`,
    /// which uses the reserved last slot); the offset is smaller than the last
    /// entry's; the timestamp is smaller than the last entry's; the offset does
    /// not fit a relative offset.
    pub fn maybe_append(
        &mut self,
        timestamp: i64,
        offset: i64,
        skip_full_check: bool,
    ) -> Result<(), IndexAppendError> {
        if !skip_full_check && self.is_full() {
            return Err(self.full_error());
        }
        let (last_timestamp, last_offset) = self.last_entry();
        if self.entries() > 0 && offset < last_offset {
            return Err(IndexAppendError::OffsetNotIncreasing {
                path: self.path().to_path_buf(),
                offset,
                entries: self.entries(),
                last_offset,
            });
        }
        if self.entries() > 0 && timestamp < last_timestamp {
            return Err(IndexAppendError::TimestampDecreasing {
                path: self.path().to_path_buf(),
                timestamp,
                entries: self.entries(),
                last_timestamp,
            });
        }
        // With no entries, NO_TIMESTAMP (-1) is the bar, so a batch without
        // timestamps never adds an entry.
        if timestamp <= last_timestamp {
            return Ok(());
        }
        // The reserved slot may be gone too (an index trimmed, then appended
        // to on close): report it rather than overrun the file.
        if self.file.is_full() {
            return Err(self.full_error());
        }
        let relative_offset = self.relative_offset(offset)?;
        let mut bytes = [0u8; TIME_INDEX_ENTRY_SIZE];
        bytes[TIMESTAMP_AT..RELATIVE_OFFSET_AT].copy_from_slice(&timestamp.to_be_bytes());
        bytes[RELATIVE_OFFSET_AT..].copy_from_slice(&relative_offset.to_be_bytes());
        self.file.push(&bytes)?;
        assert_eq!(self.last_entry(), (timestamp, offset));
        Ok(())
    }

    /// Removes every entry with an offset `>= offset` (Kafka's `truncateTo`).
    /// Truncating to an offset past the last entry changes nothing.
    ///
    /// Offsets may repeat in a time index, so this keeps exactly the entries
    /// below `offset`; Kafka's binary search may keep one of several entries
    /// that equal `offset`.
    pub fn truncate_to(&mut self, offset: i64) {
        let entries = self
            .file
            .entries_below(|bytes| self.absolute_offset(bytes), offset);
        self.file.truncate_entries(entries);
    }

    /// Checks the index against its segment, which holds `log_size_bytes`.
    ///
    /// Besides Kafka's checks (whole entries; last timestamp not below the
    /// first; last offset not below the base offset), every entry must have a
    /// relative offset Kafka can read (`<= i32::MAX`), a timestamp larger than
    /// the previous entry's and an offset no smaller than it, and an empty
    /// segment must have no entries. The message names the file and the
    /// first bad entry.
    pub fn sanity_check(&self, log_size_bytes: u64) -> Result<(), String> {
        let path = self.path().display();
        if !self.file.length_was_aligned() {
            return Err(format!(
                "time index file {path} is corrupt: found {} bytes, which is not a multiple of {TIME_INDEX_ENTRY_SIZE}",
                self.file.opened_length_bytes()
            ));
        }
        if log_size_bytes == 0 && self.entries() > 0 {
            return Err(format!(
                "corrupt time index {path}: {} entries for an empty segment",
                self.entries()
            ));
        }
        let mut previous: Option<(i64, i64)> = None;
        for n in 0..self.entries() {
            let bytes = self.file.entry_bytes(n);
            let relative_offset = relative_offset(bytes);
            if relative_offset > i32::MAX as u32 {
                return Err(format!(
                    "corrupt time index {path}: entry {n} has relative offset {relative_offset}, which Kafka reads as an offset below the base offset {}",
                    self.base_offset
                ));
            }
            let (timestamp, offset) = self.entry(n);
            if let Some((previous_timestamp, previous_offset)) = previous {
                if timestamp <= previous_timestamp {
                    return Err(format!(
                        "corrupt time index {path}: entry {n} (offset {offset}) has timestamp {timestamp}, not larger than the previous entry's {previous_timestamp}"
                    ));
                }
                if offset < previous_offset {
                    return Err(format!(
                        "corrupt time index {path}: entry {n} has offset {offset}, smaller than the previous entry's {previous_offset}"
                    ));
                }
            }
            previous = Some((timestamp, offset));
        }
        Ok(())
    }

    /// Shrinks the file to its entries; done when the segment is rolled or
    /// closed so that reopening finds exactly these entries.
    pub fn trim_to_valid_size(&mut self) -> LogResult<()> {
        self.file
            .trim_to_valid_size()
            .map_err(|e| LogError::io("trim time index", self.file.path(), self.base_offset, e))
    }

    /// Resizes the file to `max_index_bytes` (never below its entries).
    /// Returns whether the length changed.
    pub fn resize(&mut self, max_index_bytes: u64) -> LogResult<bool> {
        self.file
            .resize(max_index_bytes)
            .map_err(|e| LogError::io("resize time index", self.file.path(), self.base_offset, e))
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn rename_to(&mut self, new_path: impl AsRef<Path>) -> LogResult<()> {
        self.file
            .rename_to(new_path)
            .map_err(|e| LogError::io("rename time index", self.file.path(), self.base_offset, e))
    }

    /// Deletes the file; false if it was already gone.
    pub fn delete(self) -> LogResult<bool> {
        let path = self.file.path().to_path_buf();
        let base_offset = self.base_offset;
        self.file
            .delete()
            .map_err(|e| LogError::io("delete time index", path, base_offset, e))
    }

    fn full_error(&self) -> IndexAppendError {
        IndexAppendError::Full {
            path: self.path().to_path_buf(),
            entries: self.entries(),
        }
    }

    fn relative_offset(&self, offset: i64) -> Result<u32, IndexAppendError> {
        offset
            .checked_sub(self.base_offset)
            .filter(|relative| (0..=i64::from(i32::MAX)).contains(relative))
            .map(|relative| relative as u32)
            .ok_or_else(|| IndexAppendError::RelativeOffsetOverflow {
                path: self.path().to_path_buf(),
                offset,
                base_offset: self.base_offset,
            })
    }

    fn absolute_offset(&self, bytes: &[u8]) -> i64 {
        // Saturating only matters for a corrupt entry next to an i64::MAX
        // base offset; sanity_check reports those.
        self.base_offset
            .saturating_add(i64::from(relative_offset(bytes)))
    }
}

fn timestamp(entry: &[u8]) -> i64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&entry[TIMESTAMP_AT..RELATIVE_OFFSET_AT]);
    i64::from_be_bytes(bytes)
}

fn relative_offset(entry: &[u8]) -> u32 {
    let mut bytes = [0u8; 4];
    bytes.copy_from_slice(&entry[RELATIVE_OFFSET_AT..TIME_INDEX_ENTRY_SIZE]);
    u32::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE_OFFSET: i64 = 500;

    fn index_path(dir: &tempfile::TempDir) -> std::path::PathBuf {
        dir.path().join("00000000000000000500.timeindex")
    }

    fn new_index(dir: &tempfile::TempDir, max_entries: u64) -> TimeIndex {
        TimeIndex::create(index_path(dir), BASE_OFFSET, max_entries * 12).expect("create")
    }

    fn all_entries(index: &TimeIndex) -> Vec<(i64, i64)> {
        (0..index.entries()).map(|n| index.entry(n)).collect()
    }

    #[test]
    fn entry_bytes_are_kafka_layout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 4);
        index
            .maybe_append(0x0102_0304_0506_0708, BASE_OFFSET + 0x0A0B_0C0D, false)
            .expect("append");
        index.trim_to_valid_size().expect("trim");
        let bytes = std::fs::read(index.path()).expect("read");
        assert_eq!(
            bytes,
            [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x0A, 0x0B, 0x0C, 0x0D]
        );
    }

    #[test]
    fn empty_index_reports_no_timestamp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let index = new_index(&dir, 4);
        assert_eq!(index.last_entry(), (NO_TIMESTAMP, BASE_OFFSET));
        assert_eq!(index.lookup(i64::MAX), (NO_TIMESTAMP, BASE_OFFSET));
    }

    #[test]
    fn append_lookup_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        for (timestamp, k) in [(100, 0), (200, 3), (300, 9)] {
            index
                .maybe_append(timestamp, BASE_OFFSET + k, false)
                .expect("append");
        }
        assert_eq!(index.entries(), 3);
        assert_eq!(index.last_entry(), (300, BASE_OFFSET + 9));
        assert_eq!(index.lookup(99), (NO_TIMESTAMP, BASE_OFFSET));
        assert_eq!(index.lookup(100), (100, BASE_OFFSET));
        assert_eq!(index.lookup(250), (200, BASE_OFFSET + 3));
        assert_eq!(index.lookup(300), (300, BASE_OFFSET + 9));
        assert_eq!(index.lookup(i64::MAX), (300, BASE_OFFSET + 9));
        assert_eq!(index.lookup(i64::MIN), (NO_TIMESTAMP, BASE_OFFSET));
    }

    #[test]
    fn maybe_append_ignores_timestamps_not_larger() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        // NO_TIMESTAMP and below: nothing to index.
        index
            .maybe_append(NO_TIMESTAMP, BASE_OFFSET, false)
            .expect("ignored");
        index.maybe_append(-7, BASE_OFFSET, false).expect("ignored");
        assert_eq!(index.entries(), 0);
        index
            .maybe_append(0, BASE_OFFSET + 1, false)
            .expect("append");
        // The same entry again (segment roll or close): ignored.
        index
            .maybe_append(0, BASE_OFFSET + 1, false)
            .expect("ignored");
        // Same timestamp, later offset: ignored.
        index
            .maybe_append(0, BASE_OFFSET + 5, false)
            .expect("ignored");
        assert_eq!(index.entries(), 1);
        // Same offset, larger timestamp: appended, as in Kafka.
        index
            .maybe_append(10, BASE_OFFSET + 1, false)
            .expect("append");
        assert_eq!(
            all_entries(&index),
            [(0, BASE_OFFSET + 1), (10, BASE_OFFSET + 1)]
        );
        index.sanity_check(1).expect("sane");
    }

    #[test]
    fn maybe_append_rejects_going_backwards() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        index
            .maybe_append(100, BASE_OFFSET + 10, false)
            .expect("append");
        let error = index
            .maybe_append(200, BASE_OFFSET + 9, false)
            .expect_err("smaller offset");
        assert_eq!(
            error,
            IndexAppendError::OffsetNotIncreasing {
                path: index.path().to_path_buf(),
                offset: BASE_OFFSET + 9,
                entries: 1,
                last_offset: BASE_OFFSET + 10,
            }
        );
        let error = index
            .maybe_append(99, BASE_OFFSET + 11, false)
            .expect_err("smaller timestamp");
        assert!(matches!(
            error,
            IndexAppendError::TimestampDecreasing {
                timestamp: 99,
                last_timestamp: 100,
                ..
            }
        ));
        assert_eq!(index.entries(), 1);
    }

    #[test]
    fn maybe_append_rejects_relative_offset_overflow() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        assert!(matches!(
            index.maybe_append(1, BASE_OFFSET - 1, false),
            Err(IndexAppendError::RelativeOffsetOverflow { .. })
        ));
        assert!(matches!(
            index.maybe_append(1, BASE_OFFSET + i64::from(i32::MAX) + 1, false),
            Err(IndexAppendError::RelativeOffsetOverflow { .. })
        ));
        // A timestamp that would not be appended never checks the offset.
        index
            .maybe_append(NO_TIMESTAMP, BASE_OFFSET - 1, false)
            .expect("ignored");
        index
            .maybe_append(1, BASE_OFFSET + i64::from(i32::MAX), false)
            .expect("largest relative offset fits");
    }

    #[test]
    fn last_slot_is_reserved_for_skip_full_check() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 3);
        index.maybe_append(1, BASE_OFFSET, false).expect("append");
        assert!(!index.is_full());
        index
            .maybe_append(2, BASE_OFFSET + 1, false)
            .expect("append");
        assert!(index.is_full());
        assert!(matches!(
            index.maybe_append(3, BASE_OFFSET + 2, false),
            Err(IndexAppendError::Full { entries: 2, .. })
        ));
        // Full is checked first, even for an entry that would be ignored.
        assert!(matches!(
            index.maybe_append(2, BASE_OFFSET + 1, false),
            Err(IndexAppendError::Full { .. })
        ));
        index
            .maybe_append(3, BASE_OFFSET + 2, true)
            .expect("reserved slot");
        assert_eq!(index.entries(), 3);
        // No slot at all: an ignored entry is still fine, a real one is not.
        index
            .maybe_append(3, BASE_OFFSET + 2, true)
            .expect("ignored");
        assert!(matches!(
            index.maybe_append(4, BASE_OFFSET + 3, true),
            Err(IndexAppendError::Full { entries: 3, .. })
        ));
    }

    #[test]
    fn one_entry_index_is_always_full() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 1);
        assert!(index.is_full());
        index
            .maybe_append(5, BASE_OFFSET, true)
            .expect("reserved slot");
        assert_eq!(index.entries(), 1);
    }

    #[test]
    fn truncate_to_removes_offsets_at_or_above() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        for (timestamp, k) in [(10, 0), (20, 5), (30, 5), (40, 8)] {
            index
                .maybe_append(timestamp, BASE_OFFSET + k, false)
                .expect("append");
        }
        index.truncate_to(BASE_OFFSET + 9);
        assert_eq!(index.entries(), 4);
        index.truncate_to(BASE_OFFSET + 8);
        assert_eq!(index.entries(), 3);
        // Both entries at offset 5 go.
        index.truncate_to(BASE_OFFSET + 5);
        assert_eq!(all_entries(&index), [(10, BASE_OFFSET)]);
        assert_eq!(index.last_entry(), (10, BASE_OFFSET));
        // Timestamps may start again above the new last entry.
        index
            .maybe_append(15, BASE_OFFSET + 2, false)
            .expect("append");
        assert_eq!(index.lookup(35), (15, BASE_OFFSET + 2));
        index.truncate_to(BASE_OFFSET);
        assert_eq!(index.entries(), 0);
        assert_eq!(index.last_entry(), (NO_TIMESTAMP, BASE_OFFSET));
    }

    #[test]
    fn reopen_after_trim_gives_identical_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 1000);
        for k in 0..100 {
            index
                .maybe_append(1_700_000_000_000 + k * 1000, BASE_OFFSET + k * 3, false)
                .expect("append");
        }
        let before = all_entries(&index);
        index.trim_to_valid_size().expect("trim");
        assert_eq!(all_entries(&index), before);
        assert_eq!(
            std::fs::metadata(index.path()).expect("metadata").len(),
            1200
        );
        drop(index);

        let mut index = TimeIndex::open(index_path(&dir), BASE_OFFSET, 12_000).expect("open");
        assert_eq!(all_entries(&index), before);
        assert_eq!(index.max_entries(), 1000);
        index.sanity_check(1 << 20).expect("sane");
        assert_eq!(
            index.lookup(1_700_000_000_000 + 10_500),
            (1_700_000_000_000 + 10_000, BASE_OFFSET + 30)
        );
        index
            .maybe_append(1_800_000_000_000, BASE_OFFSET + 400, false)
            .expect("append after reopen");
    }

    #[test]
    fn trim_empty_index_then_resize_and_reuse() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        index.trim_to_valid_size().expect("trim");
        assert_eq!(std::fs::metadata(index.path()).expect("metadata").len(), 0);
        assert!(index.is_full());
        assert!(matches!(
            index.maybe_append(1, BASE_OFFSET, true),
            Err(IndexAppendError::Full { .. })
        ));
        drop(index);

        let mut index = TimeIndex::open(index_path(&dir), BASE_OFFSET, 0).expect("open");
        index.sanity_check(0).expect("empty index is sane");
        assert!(index.resize(120).expect("resize"));
        index.maybe_append(1, BASE_OFFSET, false).expect("append");
        assert_eq!(index.lookup(1), (1, BASE_OFFSET));
    }

    #[test]
    fn untrimmed_index_is_corrupt_on_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 100);
        index
            .maybe_append(1_000, BASE_OFFSET, false)
            .expect("append");
        index
            .maybe_append(2_000, BASE_OFFSET + 4, false)
            .expect("append");
        drop(index); // A crash: never trimmed.

        let index = TimeIndex::open(index_path(&dir), BASE_OFFSET, 1200).expect("open");
        assert_eq!(index.entries(), 100);
        let message = index.sanity_check(1 << 20).expect_err("zero-filled tail");
        assert!(
            message.contains("00000000000000000500.timeindex"),
            "{message}"
        );
        assert!(message.contains("entry 2"), "{message}");
    }

    #[test]
    fn untrimmed_empty_index_is_corrupt_on_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(new_index(&dir, 100));
        let index = TimeIndex::open(index_path(&dir), BASE_OFFSET, 1200).expect("open");
        let message = index.sanity_check(1 << 20).expect_err("zero-filled file");
        assert!(message.contains("entry 1"), "{message}");
    }

    #[test]
    fn sanity_check_rejects_bad_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cases: [(&[u8], u64, &str); 5] = [
            (&[0; 13], 100, "found 13 bytes"),
            (&[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0], 0, "empty segment"),
            (
                &[
                    0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 2,
                ],
                100,
                "timestamp 8, not larger",
            ),
            (
                &[
                    0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2,
                ],
                100,
                "offset 502, smaller",
            ),
            (
                &[0, 0, 0, 0, 0, 0, 0, 1, 0xFF, 0, 0, 0],
                100,
                "relative offset 4278190080",
            ),
        ];
        for (bytes, log_size_bytes, expected) in cases {
            std::fs::write(index_path(&dir), bytes).expect("write");
            let index = TimeIndex::open(index_path(&dir), BASE_OFFSET, 0).expect("open");
            let message = index.sanity_check(log_size_bytes).expect_err(expected);
            assert!(message.contains(expected), "{message}");
        }
    }

    #[test]
    fn rename_and_delete() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        index
            .maybe_append(7, BASE_OFFSET + 1, false)
            .expect("append");
        let deleted = dir.path().join("00000000000000000500.timeindex.deleted");
        index.rename_to(&deleted).expect("rename");
        assert_eq!(index.path(), deleted);
        assert_eq!(index.lookup(8), (7, BASE_OFFSET + 1));
        assert!(index.delete().expect("delete"));
        assert!(!deleted.exists());
    }
}
