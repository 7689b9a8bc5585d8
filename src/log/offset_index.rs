//! Kafka's offset index (`<base offset>.index`): a sparse map from offsets to
//! byte positions in the segment.
//!
//! Each 8-byte entry is, big-endian:
//!
//! ```text
//! 0 relative offset u32 (offset - base offset, at most i32::MAX)
//! 4 position u32        (byte position of the batch in the segment)
//! ```
//!
//! Entries are appended with strictly increasing offsets (and, since each
//! entry points at a later batch, strictly increasing positions). A lookup
//! returns the entry with the largest offset at or below the target; the
//! reader scans the segment forward from its position.
//!
//! Kafka's own sanity check of an index only looks at the last entry, which
//! misses a zero-filled preallocated tail (its entries read as `(base, 0)`).
//! [`OffsetIndex::sanity_check`] checks every entry, so an index that was not
//! trimmed before a crash is reported corrupt and rebuilt from the segment.

use std::path::Path;

use crate::constants::OFFSET_INDEX_ENTRY_SIZE;
use crate::error::{LogError, LogResult};
use crate::log::mmap_index::{IndexAppendError, MmapIndexFile};

const RELATIVE_OFFSET_AT: usize = 0;
const POSITION_AT: usize = 4;

/// A segment's offset index. See the module documentation for the format.
#[derive(Debug)]
pub struct OffsetIndex {
    base_offset: i64,
    file: MmapIndexFile,
}

impl OffsetIndex {
    /// Creates an empty index at `path`, preallocated to `max_index_bytes`
    /// (rounded down to whole entries), replacing any file there.
    pub fn create(
        path: impl AsRef<Path>,
        base_offset: i64,
        max_index_bytes: u64,
    ) -> LogResult<Self> {
        let path = path.as_ref();
        let file = MmapIndexFile::create(path, OFFSET_INDEX_ENTRY_SIZE, max_index_bytes)
            .map_err(|e| LogError::io("create offset index", path, base_offset, e))?;
        Ok(OffsetIndex { base_offset, file })
    }

    /// Opens the index at `path` (creating it if missing) and counts every
    /// whole entry in it as valid, as Kafka does. Call
    /// [`OffsetIndex::sanity_check`] before trusting it.
    pub fn open(path: impl AsRef<Path>, base_offset: i64, max_index_bytes: u64) -> LogResult<Self> {
        let path = path.as_ref();
        let file = MmapIndexFile::open(path, OFFSET_INDEX_ENTRY_SIZE, max_index_bytes)
            .map_err(|e| LogError::io("open offset index", path, base_offset, e))?;
        Ok(OffsetIndex { base_offset, file })
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

    pub fn is_full(&self) -> bool {
        self.file.is_full()
    }

    /// Reserves the disk blocks of the next `n` entries
    /// ([`MmapIndexFile::reserve`]).
    pub fn reserve(&mut self, n: usize) -> std::io::Result<()> {
        self.file.reserve(n)
    }

    /// Entry `n` as `(offset, position)`. Panics if `n >= entries()`.
    pub fn entry(&self, n: usize) -> (i64, u32) {
        let bytes = self.file.entry_bytes(n);
        (self.absolute_offset(bytes), position(bytes))
    }

    /// The offset of the last entry, or the base offset when empty.
    pub fn last_offset(&self) -> i64 {
        match self.entries() {
            0 => self.base_offset,
            entries => self.entry(entries - 1).0,
        }
    }

    /// The entry with the largest offset `<= target_offset`, as
    /// `(offset, position)`; `(base_offset, 0)` if there is none.
    pub fn lookup(&self, target_offset: i64) -> (i64, u32) {
        match self
            .file
            .largest_lower_bound(|bytes| self.absolute_offset(bytes), target_offset)
        {
            Some(n) => self.entry(n),
            None => (self.base_offset, 0),
        }
    }

    /// Appends `offset -> position`. The offset must be larger than the last
    /// entry's and fit in a relative offset; the checks run in Kafka's order
    /// (full, then offset order, then overflow).
    pub fn append(&mut self, offset: i64, position: u32) -> Result<(), IndexAppendError> {
        if self.is_full() {
            return Err(IndexAppendError::Full {
                path: self.path().to_path_buf(),
                entries: self.entries(),
            });
        }
        if self.entries() > 0 && offset <= self.last_offset() {
            return Err(IndexAppendError::OffsetNotIncreasing {
                path: self.path().to_path_buf(),
                offset,
                entries: self.entries(),
                last_offset: self.last_offset(),
            });
        }
        let relative_offset = self.relative_offset(offset)?;
        if position > i32::MAX as u32 {
            return Err(IndexAppendError::PositionOverflow {
                path: self.path().to_path_buf(),
                position,
            });
        }
        let mut bytes = [0u8; OFFSET_INDEX_ENTRY_SIZE];
        bytes[RELATIVE_OFFSET_AT..POSITION_AT].copy_from_slice(&relative_offset.to_be_bytes());
        bytes[POSITION_AT..].copy_from_slice(&position.to_be_bytes());
        self.file.push(&bytes)?;
        assert_eq!(self.last_offset(), offset);
        Ok(())
    }

    /// Removes every entry with an offset `>= offset` (Kafka's `truncateTo`).
    /// Truncating to an offset past the last entry changes nothing.
    pub fn truncate_to(&mut self, offset: i64) {
        let entries = self
            .file
            .entries_below(|bytes| self.absolute_offset(bytes), offset);
        self.file.truncate_entries(entries);
    }

    /// Checks the index against its segment, which holds `log_size_bytes`.
    ///
    /// Besides Kafka's checks (whole entries; last offset not below the base
    /// offset), every entry must have a relative offset Kafka can read
    /// (`<= i32::MAX`), a position inside the segment, and offsets and
    /// positions strictly increasing from the previous entry. The message
    /// names the file and the first bad entry.
    pub fn sanity_check(&self, log_size_bytes: u64) -> Result<(), String> {
        let path = self.path().display();
        if !self.file.length_was_aligned() {
            return Err(format!(
                "offset index file {path} is corrupt: found {} bytes, which is not a multiple of {OFFSET_INDEX_ENTRY_SIZE}",
                self.file.opened_length_bytes()
            ));
        }
        let mut previous: Option<(i64, u32)> = None;
        for n in 0..self.entries() {
            let bytes = self.file.entry_bytes(n);
            let relative_offset = relative_offset(bytes);
            if relative_offset > i32::MAX as u32 {
                return Err(format!(
                    "corrupt offset index {path}: entry {n} has relative offset {relative_offset}, which Kafka reads as an offset below the base offset {}",
                    self.base_offset
                ));
            }
            let (offset, position) = self.entry(n);
            if u64::from(position) >= log_size_bytes {
                return Err(format!(
                    "corrupt offset index {path}: entry {n} (offset {offset}) has position {position}, past the end of the {log_size_bytes}-byte segment"
                ));
            }
            if let Some((previous_offset, previous_position)) = previous {
                if offset <= previous_offset {
                    return Err(format!(
                        "corrupt offset index {path}: entry {n} has offset {offset}, not larger than the previous entry's {previous_offset}"
                    ));
                }
                if position <= previous_position {
                    return Err(format!(
                        "corrupt offset index {path}: entry {n} (offset {offset}) has position {position}, not larger than the previous entry's {previous_position}"
                    ));
                }
            }
            previous = Some((offset, position));
        }
        Ok(())
    }

    /// Shrinks the file to its entries; done when the segment is rolled or
    /// closed so that reopening finds exactly these entries.
    pub fn trim_to_valid_size(&mut self) -> LogResult<()> {
        self.file
            .trim_to_valid_size()
            .map_err(|e| LogError::io("trim offset index", self.file.path(), self.base_offset, e))
    }

    /// Resizes the file to `max_index_bytes` (never below its entries).
    /// Returns whether the length changed.
    pub fn resize(&mut self, max_index_bytes: u64) -> LogResult<bool> {
        self.file
            .resize(max_index_bytes)
            .map_err(|e| LogError::io("resize offset index", self.file.path(), self.base_offset, e))
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn rename_to(&mut self, new_path: impl AsRef<Path>) -> LogResult<()> {
        self.file
            .rename_to(new_path)
            .map_err(|e| LogError::io("rename offset index", self.file.path(), self.base_offset, e))
    }

    /// Deletes the file; false if it was already gone.
    pub fn delete(self) -> LogResult<bool> {
        let path = self.file.path().to_path_buf();
        let base_offset = self.base_offset;
        self.file
            .delete()
            .map_err(|e| LogError::io("delete offset index", path, base_offset, e))
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

fn relative_offset(entry: &[u8]) -> u32 {
    read_u32(entry, RELATIVE_OFFSET_AT)
}

fn position(entry: &[u8]) -> u32 {
    read_u32(entry, POSITION_AT)
}

fn read_u32(entry: &[u8], at: usize) -> u32 {
    let mut bytes = [0u8; 4];
    bytes.copy_from_slice(&entry[at..at + 4]);
    u32::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE_OFFSET: i64 = 1_000;

    fn index_path(dir: &tempfile::TempDir) -> std::path::PathBuf {
        dir.path().join("00000000000000001000.index")
    }

    fn new_index(dir: &tempfile::TempDir, max_entries: u64) -> OffsetIndex {
        OffsetIndex::create(index_path(dir), BASE_OFFSET, max_entries * 8).expect("create")
    }

    fn all_entries(index: &OffsetIndex) -> Vec<(i64, u32)> {
        (0..index.entries()).map(|n| index.entry(n)).collect()
    }

    #[test]
    fn entry_bytes_are_kafka_layout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 4);
        index
            .append(BASE_OFFSET + 0x0102_0304, 0x0A0B_0C0D)
            .expect("append");
        index.trim_to_valid_size().expect("trim");
        let bytes = std::fs::read(index.path()).expect("read");
        assert_eq!(bytes, [0x01, 0x02, 0x03, 0x04, 0x0A, 0x0B, 0x0C, 0x0D]);
    }

    #[test]
    fn append_lookup_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        assert_eq!(index.last_offset(), BASE_OFFSET);
        assert_eq!(index.lookup(BASE_OFFSET + 50), (BASE_OFFSET, 0));
        for (k, position) in [(0, 0), (10, 4096), (20, 8192), (35, 12_288)] {
            index.append(BASE_OFFSET + k, position).expect("append");
        }
        assert_eq!(index.entries(), 4);
        assert_eq!(index.last_offset(), BASE_OFFSET + 35);
        assert_eq!(index.lookup(BASE_OFFSET - 1), (BASE_OFFSET, 0));
        assert_eq!(index.lookup(BASE_OFFSET), (BASE_OFFSET, 0));
        assert_eq!(index.lookup(BASE_OFFSET + 9), (BASE_OFFSET, 0));
        assert_eq!(index.lookup(BASE_OFFSET + 10), (BASE_OFFSET + 10, 4096));
        assert_eq!(index.lookup(BASE_OFFSET + 34), (BASE_OFFSET + 20, 8192));
        assert_eq!(index.lookup(i64::MAX), (BASE_OFFSET + 35, 12_288));
        assert_eq!(index.lookup(i64::MIN), (BASE_OFFSET, 0));
    }

    #[test]
    fn lookup_below_first_entry_returns_base() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        index.append(BASE_OFFSET + 5, 100).expect("append");
        assert_eq!(index.lookup(BASE_OFFSET + 4), (BASE_OFFSET, 0));
        assert_eq!(index.lookup(BASE_OFFSET + 5), (BASE_OFFSET + 5, 100));
    }

    #[test]
    fn append_rejects_non_increasing_offsets() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        index.append(BASE_OFFSET + 5, 100).expect("append");
        let error = index
            .append(BASE_OFFSET + 5, 200)
            .expect_err("equal offset");
        assert_eq!(
            error,
            IndexAppendError::OffsetNotIncreasing {
                path: index.path().to_path_buf(),
                offset: BASE_OFFSET + 5,
                entries: 1,
                last_offset: BASE_OFFSET + 5,
            }
        );
        let message = error.to_string();
        assert!(
            message.contains("(1005) to position 1 no larger than the last offset appended (1005)"),
            "{message}"
        );
        assert!(index.append(BASE_OFFSET + 4, 200).is_err());
        assert_eq!(index.entries(), 1);
    }

    #[test]
    fn append_rejects_relative_offset_overflow() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        assert!(matches!(
            index.append(BASE_OFFSET - 1, 0),
            Err(IndexAppendError::RelativeOffsetOverflow { .. })
        ));
        assert!(matches!(
            index.append(BASE_OFFSET + i64::from(i32::MAX) + 1, 0),
            Err(IndexAppendError::RelativeOffsetOverflow { .. })
        ));
        assert!(matches!(
            index.append(i64::MIN, 0),
            Err(IndexAppendError::RelativeOffsetOverflow { .. })
        ));
        index
            .append(BASE_OFFSET + i64::from(i32::MAX), 0)
            .expect("largest relative offset fits");
        assert_eq!(index.last_offset(), BASE_OFFSET + i64::from(i32::MAX));
        let mut index = new_index(&dir, 10);
        assert!(matches!(
            index.append(BASE_OFFSET, u32::MAX),
            Err(IndexAppendError::PositionOverflow { .. })
        ));
    }

    #[test]
    fn full_index_rejects_append() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 2);
        index.append(BASE_OFFSET, 0).expect("append");
        assert!(!index.is_full());
        index.append(BASE_OFFSET + 1, 10).expect("append");
        assert!(index.is_full());
        assert!(matches!(
            index.append(BASE_OFFSET + 2, 20),
            Err(IndexAppendError::Full { entries: 2, .. })
        ));
        // Full is checked before ordering, as in Kafka.
        assert!(matches!(
            index.append(BASE_OFFSET, 20),
            Err(IndexAppendError::Full { .. })
        ));
    }

    #[test]
    fn truncate_to_follows_kafka_cases() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        for k in [0, 10, 20, 30] {
            index
                .append(BASE_OFFSET + k, k as u32 * 100)
                .expect("append");
        }
        // Past the last entry: no effect.
        index.truncate_to(BASE_OFFSET + 31);
        assert_eq!(index.entries(), 4);
        // No exact entry: keep everything below.
        index.truncate_to(BASE_OFFSET + 25);
        assert_eq!(index.entries(), 3);
        // Exact entry: it goes too.
        index.truncate_to(BASE_OFFSET + 20);
        assert_eq!(index.entries(), 2);
        assert_eq!(index.last_offset(), BASE_OFFSET + 10);
        // The slot is reused.
        index.append(BASE_OFFSET + 15, 1500).expect("append");
        assert_eq!(index.lookup(BASE_OFFSET + 19), (BASE_OFFSET + 15, 1500));
        // Below every entry: all go.
        index.truncate_to(BASE_OFFSET);
        assert_eq!(index.entries(), 0);
        assert_eq!(index.last_offset(), BASE_OFFSET);
        index.truncate_to(i64::MIN);
        assert_eq!(index.entries(), 0);
    }

    #[test]
    fn reopen_after_trim_gives_identical_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 1000);
        for k in 0..100 {
            index
                .append(BASE_OFFSET + k * 7, k as u32 * 4096)
                .expect("append");
        }
        let before = all_entries(&index);
        index.trim_to_valid_size().expect("trim");
        assert!(index.is_full());
        assert_eq!(all_entries(&index), before);
        assert_eq!(
            std::fs::metadata(index.path()).expect("metadata").len(),
            800
        );
        drop(index);

        let mut index = OffsetIndex::open(index_path(&dir), BASE_OFFSET, 8000).expect("open");
        assert_eq!(all_entries(&index), before);
        assert_eq!(index.max_entries(), 1000);
        index.sanity_check(100 * 4096).expect("sane");
        assert_eq!(
            index.lookup(BASE_OFFSET + 70),
            (BASE_OFFSET + 70, 10 * 4096)
        );
        index
            .append(BASE_OFFSET + 1000, 100 * 4096)
            .expect("append after reopen");
    }

    #[test]
    fn trim_empty_index_then_resize_and_reuse() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        index.trim_to_valid_size().expect("trim");
        assert_eq!(std::fs::metadata(index.path()).expect("metadata").len(), 0);
        assert!(index.is_full());
        assert_eq!(index.lookup(BASE_OFFSET + 3), (BASE_OFFSET, 0));
        drop(index);

        let mut index = OffsetIndex::open(index_path(&dir), BASE_OFFSET, 0).expect("open");
        assert_eq!(index.entries(), 0);
        index.sanity_check(0).expect("empty index is sane");
        assert!(index.resize(80).expect("resize"));
        index.append(BASE_OFFSET + 1, 0).expect("append");
        assert_eq!(index.lookup(BASE_OFFSET + 1), (BASE_OFFSET + 1, 0));
    }

    #[test]
    fn untrimmed_index_is_corrupt_on_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 100);
        index.append(BASE_OFFSET, 0).expect("append");
        index.append(BASE_OFFSET + 10, 4096).expect("append");
        drop(index); // A crash: never trimmed.

        let index = OffsetIndex::open(index_path(&dir), BASE_OFFSET, 800).expect("open");
        assert_eq!(index.entries(), 100);
        let message = index.sanity_check(1 << 20).expect_err("zero-filled tail");
        assert!(message.contains("00000000000000001000.index"), "{message}");
        assert!(message.contains("entry 2"), "{message}");
    }

    #[test]
    fn untrimmed_empty_index_is_corrupt_on_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(new_index(&dir, 100));
        let index = OffsetIndex::open(index_path(&dir), BASE_OFFSET, 800).expect("open");
        let message = index.sanity_check(1 << 20).expect_err("zero-filled file");
        assert!(message.contains("entry 1"), "{message}");
    }

    #[test]
    fn sanity_check_rejects_torn_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(index_path(&dir), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).expect("write");
        let index = OffsetIndex::open(index_path(&dir), BASE_OFFSET, 800).expect("open");
        assert_eq!(index.entries(), 1);
        let message = index.sanity_check(1 << 20).expect_err("torn");
        assert!(message.contains("found 11 bytes"), "{message}");
    }

    #[test]
    fn sanity_check_rejects_position_past_segment_and_bad_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        index.append(BASE_OFFSET, 0).expect("append");
        index.append(BASE_OFFSET + 5, 500).expect("append");
        index.sanity_check(501).expect("sane");
        let message = index.sanity_check(500).expect_err("past end");
        assert!(message.contains("entry 1"), "{message}");
        assert!(index.sanity_check(0).is_err());
        index.trim_to_valid_size().expect("trim");

        // Hand-written entries: offsets out of order, positions out of order,
        // and a relative offset Kafka reads as negative.
        let cases: [(&[u8], &str); 3] = [
            (
                &[0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 2],
                "offset 1005, not larger",
            ),
            (
                &[0, 0, 0, 5, 0, 0, 0, 9, 0, 0, 0, 6, 0, 0, 0, 9],
                "position 9, not larger",
            ),
            (&[0x80, 0, 0, 0, 0, 0, 0, 1], "relative offset 2147483648"),
        ];
        for (bytes, expected) in cases {
            std::fs::write(index_path(&dir), bytes).expect("write");
            let index = OffsetIndex::open(index_path(&dir), BASE_OFFSET, 0).expect("open");
            let message = index.sanity_check(1 << 20).expect_err(expected);
            assert!(message.contains(expected), "{message}");
        }
    }

    #[test]
    fn rename_and_delete() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = new_index(&dir, 10);
        index.append(BASE_OFFSET + 1, 10).expect("append");
        let deleted = dir.path().join("00000000000000001000.index.deleted");
        index.rename_to(&deleted).expect("rename");
        assert_eq!(index.path(), deleted);
        assert_eq!(index.lookup(BASE_OFFSET + 2), (BASE_OFFSET + 1, 10));
        assert!(index.delete().expect("delete"));
        assert!(!deleted.exists());
    }

    #[test]
    fn io_errors_name_operation_and_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing_dir = dir.path().join("missing").join("0.index");
        let error = OffsetIndex::open(&missing_dir, 7, 80).expect_err("no parent dir");
        let message = error.to_string();
        assert!(
            message.starts_with("open offset index failed on"),
            "{message}"
        );
        assert!(message.contains("at offset 7"), "{message}");
    }
}
