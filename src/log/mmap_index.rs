//! The shared mechanics of Kafka's memory-mapped sparse index files
//! (`AbstractIndex`): a preallocated file of fixed-size entries, mapped into
//! memory, appended to at the end and searched by binary search.
//!
//! Layout and lifecycle follow Kafka byte for byte, so that a data directory
//! can move between pinlog and Kafka brokers:
//!
//! - A new index is preallocated to `max_index_bytes` rounded down to a whole
//!   number of entries, filled with zeros. Appends write into the mapping.
//! - The file carries no header and no entry count. An index that is opened
//!   again counts every whole entry in the file as valid, zero-filled
//!   preallocation included. That is why an index must be trimmed
//!   ([`MmapIndexFile::trim_to_valid_size`]) when its segment is rolled or
//!   closed, and why an untrimmed index found after a crash fails the owner's
//!   sanity check and is rebuilt from the segment.
//! - Nothing is checksummed: the segment is the source of truth.
//!
//! Durability: the mapping is shared, so appended entries reach the page
//! cache of the file at once. `fdatasync` on [`MmapIndexFile::file`] writes
//! them to disk; this type never flushes by itself, so that the owner can do
//! it off the shard's thread.
//!
//! This type knows the entry size but not the entry format; the offset and
//! time indexes build on it.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use memmap2::{MmapMut, MmapOptions};

/// Lookups first search the entries in the last this-many bytes of the index.
/// Kafka's `AbstractIndex` explains why: nearly all lookups (in-sync followers,
/// tailing consumers) target the end of the index, and a plain binary search
/// over the whole file would touch pages that have long left the page cache.
/// 8 KiB is at most three pages, all touched by every warm lookup.
const WARM_SECTION_BYTES: usize = 8192;

/// Disk blocks are reserved (fallocate) for this many bytes of entries at a
/// time ahead of the appends. The preallocated file is sparse, as Kafka's
/// is, and a store through the mapping into a page with no block behind it
/// on a full disk raises SIGBUS and kills the process; a reservation that
/// fails is an ordinary I/O error instead, which takes the partition
/// offline. 64 KiB holds 8192 offset entries, about 32 MiB of log at the
/// default `index.interval.bytes`, so reservations are rare and the disk
/// never holds more than this per index beyond its entries.
const RESERVE_CHUNK_BYTES: u64 = 64 * 1024;

/// Why an entry could not be appended to an index. The caller (the segment)
/// causes every one of these, so each is a typed error rather than a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexAppendError {
    #[error("attempt to append to a full index {path} ({entries} entries)")]
    Full { path: PathBuf, entries: usize },
    #[error("attempt to append an offset ({offset}) to position {entries} no larger than the last offset appended ({last_offset}) to {path}")]
    OffsetNotIncreasing {
        path: PathBuf,
        offset: i64,
        entries: usize,
        last_offset: i64,
    },
    #[error("attempt to append a timestamp ({timestamp}) to slot {entries} smaller than the last timestamp appended ({last_timestamp}) to {path}")]
    TimestampDecreasing {
        path: PathBuf,
        timestamp: i64,
        entries: usize,
        last_timestamp: i64,
    },
    #[error("offset {offset} does not fit index {path}: relative to base offset {base_offset} it must be in 0..=2147483647")]
    RelativeOffsetOverflow {
        path: PathBuf,
        offset: i64,
        base_offset: i64,
    },
    #[error("position {position} does not fit index {path}: Kafka reads positions as i32, so they must be at most 2147483647")]
    PositionOverflow { path: PathBuf, position: u32 },
    #[error("cannot reserve disk space for index {path}: {reason}")]
    Reserve { path: PathBuf, reason: String },
}

/// A preallocated, memory-mapped file of fixed-size index entries.
///
/// Invariants: `entries <= max_entries`; the file's length is `length_bytes`;
/// the mapping is `Some` and covers the first `max_entries * entry_size_bytes`
/// bytes whenever `max_entries > 0`. Normally the mapping and the file have
/// the same length, `max_entries` whole entries; only after a failed remap
/// (see `resize_to`) are fewer entries usable than the file could hold.
///
/// No descriptor is kept open: the mapping needs none, and the rare
/// operations that need the file (resizing, fdatasync) open it by path. A
/// partition then holds two descriptors (its active segment's) instead of
/// four, as Kafka closes its index files after mapping them.
#[derive(Debug)]
pub struct MmapIndexFile {
    path: PathBuf,
    /// `None` exactly when the file is empty: a zero-length mapping is not a
    /// thing mmap(2) can make, and a trimmed index of a segment without
    /// entries is empty.
    mmap: Option<MmapMut>,
    entry_size_bytes: usize,
    entries: usize,
    max_entries: usize,
    length_bytes: u64,
    /// The file's length when it was opened, before it was resized; the owner's
    /// sanity check needs it to detect a torn trailing entry.
    opened_length_bytes: u64,
    /// The first this-many bytes of the file are known to have disk blocks:
    /// stores below it through the mapping cannot fault on a full disk.
    reserved_bytes: u64,
}

impl MmapIndexFile {
    /// Creates (or truncates) the index file at `path`, preallocated to
    /// `max_index_bytes` rounded down to a whole number of entries, with no
    /// entries. Like Kafka, refuses a maximum smaller than one entry.
    pub fn create(
        path: impl AsRef<Path>,
        entry_size_bytes: usize,
        max_index_bytes: u64,
    ) -> io::Result<Self> {
        assert!(entry_size_bytes > 0);
        let path = path.as_ref().to_path_buf();
        let length_bytes = round_down_to_entries(max_index_bytes, entry_size_bytes);
        if length_bytes == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "invalid max index size {max_index_bytes} for {}: smaller than one entry of {entry_size_bytes} bytes",
                    path.display()
                ),
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        file.set_len(length_bytes)?;
        let mmap = map(&file, length_bytes)?;
        drop(file);
        let index = MmapIndexFile {
            path,
            mmap,
            entry_size_bytes,
            reserved_bytes: 0,
            entries: 0,
            max_entries: entries_in(length_bytes, entry_size_bytes)?,
            length_bytes,
            opened_length_bytes: 0,
        };
        index.assert_invariants();
        Ok(index)
    }

    /// Opens the index file at `path`, creating it if it is missing.
    ///
    /// As in Kafka, every whole entry already in the file counts as an entry:
    /// the file has no entry count, so a zero-filled preallocated tail (an
    /// index that was never trimmed) shows up as entries, and the owner's
    /// sanity check must reject it. The file is then resized to
    /// `max_index_bytes` rounded down to whole entries, but never below the
    /// entries it holds, so that opening never loses data.
    pub fn open(
        path: impl AsRef<Path>,
        entry_size_bytes: usize,
        max_index_bytes: u64,
    ) -> io::Result<Self> {
        assert!(entry_size_bytes > 0);
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        let opened_length_bytes = file.metadata()?.len();
        let entries = entries_in(opened_length_bytes, entry_size_bytes)?;
        let entries_bytes = round_down_to_entries(opened_length_bytes, entry_size_bytes);
        let length_bytes =
            round_down_to_entries(max_index_bytes, entry_size_bytes).max(entries_bytes);
        if length_bytes != opened_length_bytes {
            file.set_len(length_bytes)?;
        }
        let mmap = map(&file, length_bytes)?;
        drop(file);
        let index = MmapIndexFile {
            path,
            mmap,
            entry_size_bytes,
            entries,
            max_entries: entries_in(length_bytes, entry_size_bytes)?,
            length_bytes,
            opened_length_bytes,
            // The entries written before were stored through a mapping, so
            // their blocks exist; the zero-filled tail beyond may be sparse.
            reserved_bytes: entries_bytes.min(length_bytes),
        };
        index.assert_invariants();
        Ok(index)
    }

    /// Makes sure the disk blocks for the next `n` entries (within the
    /// file) exist, reserving [`RESERVE_CHUNK_BYTES`] at a time, so that
    /// storing them cannot fault. Fails with the file system's error (ENOSPC
    /// on a full disk).
    pub fn reserve(&mut self, n: usize) -> io::Result<()> {
        let wanted = ((self.entries + n).min(self.max_entries) * self.entry_size_bytes) as u64;
        if wanted <= self.reserved_bytes {
            return Ok(());
        }
        let to = wanted
            .div_ceil(RESERVE_CHUNK_BYTES)
            .saturating_mul(RESERVE_CHUNK_BYTES)
            .min(self.length_bytes);
        let file = OpenOptions::new().write(true).open(&self.path)?;
        let (offset, len) = (self.reserved_bytes, to - self.reserved_bytes);
        // SAFETY: fallocate(2) on a descriptor we own, within the file's
        // length (mode 0 allocates blocks; the length stays as it is).
        let rc = unsafe {
            libc::fallocate(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
                offset as libc::off_t,
                len as libc::off_t,
            )
        };
        if rc != 0 {
            let error = io::Error::last_os_error();
            // A file system without fallocate (tmpfs has it; some FUSE ones
            // do not) cannot say ahead of time; stores then fault as before.
            if error.raw_os_error() == Some(libc::EOPNOTSUPP) {
                self.reserved_bytes = self.length_bytes;
                return Ok(());
            }
            return Err(error);
        }
        self.reserved_bytes = to;
        Ok(())
    }

    pub fn entries(&self) -> usize {
        self.entries
    }

    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// True when no slot is left (Kafka's `AbstractIndex.isFull`; the time
    /// index reserves one more slot on top of this).
    pub fn is_full(&self) -> bool {
        self.entries >= self.max_entries
    }

    pub fn entry_size_bytes(&self) -> usize {
        self.entry_size_bytes
    }

    /// The file's current length: preallocated, or trimmed to the entries.
    pub fn length_bytes(&self) -> u64 {
        self.length_bytes
    }

    /// The file's length when it was opened, before any resize; 0 for a
    /// created index.
    pub fn opened_length_bytes(&self) -> u64 {
        self.opened_length_bytes
    }

    /// Whether the file held a whole number of entries when it was opened. A
    /// torn trailing entry means the file is corrupt (Kafka's sanity check).
    pub fn length_was_aligned(&self) -> bool {
        self.opened_length_bytes % self.entry_size_bytes as u64 == 0
    }

    /// The bytes of entry `n`. Panics if `n >= entries()`: asking for an entry
    /// that does not exist is a bug in the caller.
    pub fn entry_bytes(&self, n: usize) -> &[u8] {
        assert!(
            n < self.entries,
            "entry {n} of index {} which has {} entries",
            self.path.display(),
            self.entries
        );
        let start = n * self.entry_size_bytes;
        match &self.mmap {
            Some(mmap) => &mmap[start..start + self.entry_size_bytes],
            None => unreachable!("an index with entries is always mapped"),
        }
    }

    /// Appends one entry, reserving its disk blocks first if that was not
    /// done yet ([`MmapIndexFile::reserve`]). The owner checks fullness and
    /// ordering first and reports them as typed errors; here they are
    /// invariants.
    pub fn push(&mut self, entry: &[u8]) -> Result<(), IndexAppendError> {
        assert!(
            !self.is_full(),
            "push to full index {}",
            self.path.display()
        );
        assert_eq!(entry.len(), self.entry_size_bytes);
        self.reserve(1).map_err(|e| IndexAppendError::Reserve {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        let start = self.entries * self.entry_size_bytes;
        match &mut self.mmap {
            Some(mmap) => mmap[start..start + entry.len()].copy_from_slice(entry),
            None => unreachable!("an index with free slots is always mapped"),
        }
        self.entries += 1;
        Ok(())
    }

    /// Forgets every entry from `entries` on. Like Kafka, the bytes stay in
    /// the file until they are overwritten or trimmed away.
    pub fn truncate_entries(&mut self, entries: usize) {
        assert!(
            entries <= self.entries,
            "truncate index {} to {entries} entries but it has {}",
            self.path.display(),
            self.entries
        );
        self.entries = entries;
    }

    /// Shrinks the file to exactly its entries (Kafka's `trimToValidSize`),
    /// so that reopening it finds exactly these entries. The index stays
    /// usable, and full, afterwards.
    pub fn trim_to_valid_size(&mut self) -> io::Result<()> {
        let valid_bytes = self.entries as u64 * self.entry_size_bytes as u64;
        self.resize_to(valid_bytes).map(|_| ())
    }

    /// Resizes the file to `max_index_bytes` rounded down to whole entries,
    /// but never below the current entries. Kafka grows a trimmed index this
    /// way when its segment becomes active again. Returns whether the length
    /// changed.
    pub fn resize(&mut self, max_index_bytes: u64) -> io::Result<bool> {
        let valid_bytes = self.entries as u64 * self.entry_size_bytes as u64;
        let length_bytes =
            round_down_to_entries(max_index_bytes, self.entry_size_bytes).max(valid_bytes);
        self.resize_to(length_bytes)
    }

    /// Changes the file's length to `length_bytes` (a whole number of entries,
    /// at least the current entries) and remaps it.
    ///
    /// The old mapping stays in place until the new one exists, so that a
    /// failure leaves a usable index. Shrinking the file under the old mapping
    /// is safe because nothing reads or writes past `max_entries`, which is
    /// lowered before this function returns, error or not.
    fn resize_to(&mut self, length_bytes: u64) -> io::Result<bool> {
        assert_eq!(length_bytes % self.entry_size_bytes as u64, 0);
        assert!(length_bytes >= self.entries as u64 * self.entry_size_bytes as u64);
        let mapped_bytes = self.mmap.as_ref().map_or(0, |mmap| mmap.len()) as u64;
        if length_bytes == self.length_bytes && mapped_bytes == length_bytes {
            return Ok(false);
        }
        let max_entries = entries_in(length_bytes, self.entry_size_bytes)?;
        let file = OpenOptions::new().read(true).write(true).open(&self.path)?;
        file.set_len(length_bytes)?;
        match map(&file, length_bytes) {
            Ok(mmap) => {
                self.mmap = mmap;
                self.max_entries = max_entries;
                self.length_bytes = length_bytes;
                self.reserved_bytes = self.reserved_bytes.min(length_bytes);
                self.assert_invariants();
                Ok(true)
            }
            Err(error) => {
                // The file has its new length but the old mapping, which is
                // valid up to the smaller of the two lengths; stay within it
                // until a later resize succeeds.
                self.length_bytes = length_bytes;
                self.max_entries = self.max_entries.min(max_entries);
                Err(error)
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the file, as Kafka does to mark a segment's files `.deleted`
    /// or `.cleaned`. The open file and the mapping follow the rename. The
    /// path changes only if the rename succeeded.
    pub fn rename_to(&mut self, new_path: impl AsRef<Path>) -> io::Result<()> {
        let new_path = new_path.as_ref().to_path_buf();
        std::fs::rename(&self.path, &new_path)?;
        self.path = new_path;
        Ok(())
    }

    /// Unmaps, closes and deletes the file. Returns false if the file was
    /// already gone (Kafka's `deleteIfExists`).
    pub fn delete(self) -> io::Result<bool> {
        let MmapIndexFile { path, mmap, .. } = self;
        drop(mmap);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// The index of the largest entry whose key is `<= target`, or `None` if
    /// the index is empty or every key is larger. Keys must not decrease from
    /// one entry to the next; among equal keys the last one is returned. On a
    /// corrupt (unsorted) index the answer is some entry, never a panic.
    ///
    /// The warm section (the last [`WARM_SECTION_BYTES`]) is searched first,
    /// as in Kafka, to keep lookups on pages that are in the page cache.
    pub fn largest_lower_bound(&self, key_of: impl Fn(&[u8]) -> i64, target: i64) -> Option<usize> {
        if self.entries == 0 {
            return None;
        }
        let key = |n: usize| key_of(self.entry_bytes(n));
        let last = self.entries - 1;
        let warm_entries = WARM_SECTION_BYTES / self.entry_size_bytes;
        let first_warm = last.saturating_sub(warm_entries);
        if key(first_warm) <= target {
            return Some(binary_search(key, target, first_warm, last));
        }
        if key(0) > target {
            return None;
        }
        Some(binary_search(key, target, 0, first_warm))
    }

    /// How many leading entries have a key `< target`: with non-decreasing
    /// keys, the number of entries to keep when truncating to `target`.
    pub fn entries_below(&self, key_of: impl Fn(&[u8]) -> i64, target: i64) -> usize {
        // Keys are integers, so `key < target` is `key <= target - 1`.
        match target.checked_sub(1) {
            None => 0,
            Some(bound) => self.largest_lower_bound(key_of, bound).map_or(0, |n| n + 1),
        }
    }

    fn assert_invariants(&self) {
        assert!(self.entries <= self.max_entries);
        assert_eq!(
            self.max_entries as u64 * self.entry_size_bytes as u64,
            self.length_bytes
        );
        let mapped_bytes = self.mmap.as_ref().map_or(0, |mmap| mmap.len());
        assert_eq!(mapped_bytes as u64, self.length_bytes);
    }
}

/// The largest `n` in `lo..=hi` with `key(n) <= target`, given that
/// `key(lo) <= target` and keys do not decrease.
fn binary_search(key: impl Fn(usize) -> i64, target: i64, lo: usize, hi: usize) -> usize {
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        // Round up so that `lo = mid` always makes progress.
        let mid = lo + (hi - lo).div_ceil(2);
        if key(mid) <= target {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

fn round_down_to_entries(length_bytes: u64, entry_size_bytes: usize) -> u64 {
    let entry_size_bytes = entry_size_bytes as u64;
    length_bytes / entry_size_bytes * entry_size_bytes
}

/// Whole entries in `length_bytes`, as a count that can index the mapping.
fn entries_in(length_bytes: u64, entry_size_bytes: usize) -> io::Result<usize> {
    usize::try_from(length_bytes / entry_size_bytes as u64).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("index of {length_bytes} bytes does not fit in memory"),
        )
    })
}

/// Maps the first `length_bytes` of `file` read-write and shared, or returns
/// `None` for an empty file.
fn map(file: &File, length_bytes: u64) -> io::Result<Option<MmapMut>> {
    if length_bytes == 0 {
        return Ok(None);
    }
    let length = usize::try_from(length_bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("index of {length_bytes} bytes does not fit in memory"),
        )
    })?;
    // SAFETY: the mapping is only sound while nobody truncates the file
    // below what is mapped or rewrites it behind our back. pinlog owns its
    // data directory (as a Kafka broker owns its log.dirs; the data-dir
    // flock keeps a second broker out, though not other tools). This type
    // shrinks the file only in `resize_to`, never below what it still reads
    // or writes; `create` truncates its path, so no other live
    // `MmapIndexFile` may map that path then (segments are created only
    // after the one they replace was deleted or dropped). One unsoundness
    // remains that mmap cannot avoid: the file is grown sparse, so a full
    // disk (or an I/O error) at the page fault of an entry write raises
    // SIGBUS instead of an error; see ARCHITECTURE.md, sharp edges.
    let mmap = unsafe { MmapOptions::new().len(length).map_mut(file)? };
    // Entries are appended a few bytes at a time and looked up by binary
    // search: no access here is sequential enough for read-ahead. Without
    // this hint, the first write to each page of a new (sparse) index
    // faulted in and zeroed a whole read-ahead window, on the shard's
    // thread: a new topic's first burst of produce stalled tens of ms.
    // Only a hint: a kernel that refuses it changes nothing else.
    if let Err(e) = mmap.advise(memmap2::Advice::Random) {
        tracing::debug!("madvise(MADV_RANDOM) of an index refused: {e}");
    }
    Ok(Some(mmap))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENTRY_SIZE_BYTES: usize = 8;

    fn entry(key: i64) -> [u8; ENTRY_SIZE_BYTES] {
        key.to_be_bytes()
    }

    fn key_of(bytes: &[u8]) -> i64 {
        let mut key = [0u8; 8];
        key.copy_from_slice(bytes);
        i64::from_be_bytes(key)
    }

    fn index_with_keys(dir: &tempfile::TempDir, keys: &[i64]) -> MmapIndexFile {
        let max_index_bytes = (keys.len().max(1) * ENTRY_SIZE_BYTES) as u64;
        let mut index = MmapIndexFile::create(
            dir.path().join("i.index"),
            ENTRY_SIZE_BYTES,
            max_index_bytes,
        )
        .expect("create");
        for &key in keys {
            index.push(&entry(key)).unwrap();
        }
        index
    }

    /// The file stays sparse but for the reserved chunk ahead of the
    /// entries, so that a store through the mapping never needs a new block.
    #[test]
    fn appends_reserve_blocks_a_chunk_ahead() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.index");
        let max_index_bytes = 16 * RESERVE_CHUNK_BYTES;
        let mut index = MmapIndexFile::create(&path, ENTRY_SIZE_BYTES, max_index_bytes).unwrap();
        let allocated = || std::fs::metadata(&path).unwrap().blocks() * 512;
        assert!(allocated() < RESERVE_CHUNK_BYTES, "a new index is sparse");
        index.push(&entry(1)).unwrap();
        assert!(allocated() >= RESERVE_CHUNK_BYTES);
        assert!(allocated() < 2 * RESERVE_CHUNK_BYTES);
        // Filling the first chunk exactly needs no more; one entry past it
        // reserves the next.
        let per_chunk = (RESERVE_CHUNK_BYTES as usize) / ENTRY_SIZE_BYTES;
        for key in 2..=per_chunk as i64 {
            index.push(&entry(key)).unwrap();
        }
        assert!(allocated() < 2 * RESERVE_CHUNK_BYTES);
        index.reserve(1).unwrap();
        assert!(allocated() >= 2 * RESERVE_CHUNK_BYTES);
        assert!(allocated() < max_index_bytes);
    }

    #[test]
    fn create_preallocates_rounded_down() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("i.index");
        let index = MmapIndexFile::create(&path, 12, 100).expect("create");
        assert_eq!(index.max_entries(), 8);
        assert_eq!(index.entries(), 0);
        assert_eq!(std::fs::metadata(&path).expect("metadata").len(), 96);
        assert!(index.length_was_aligned());
    }

    #[test]
    fn create_refuses_max_below_one_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let error =
            MmapIndexFile::create(dir.path().join("i.index"), 12, 11).expect_err("too small");
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn open_counts_whole_entries_and_remembers_torn_tail() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("i.index");
        std::fs::write(&path, [1u8; 19]).expect("write");
        let index = MmapIndexFile::open(&path, 8, 64).expect("open");
        assert_eq!(index.entries(), 2);
        assert_eq!(index.max_entries(), 8);
        assert_eq!(index.opened_length_bytes(), 19);
        assert!(!index.length_was_aligned());
        assert_eq!(index.entry_bytes(1), &[1u8; 8]);
    }

    #[test]
    fn open_never_shrinks_below_existing_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("i.index");
        std::fs::write(&path, [2u8; 40]).expect("write");
        let index = MmapIndexFile::open(&path, 8, 16).expect("open");
        assert_eq!(index.entries(), 5);
        assert_eq!(index.max_entries(), 5);
        assert!(index.is_full());
        assert_eq!(std::fs::metadata(&path).expect("metadata").len(), 40);
    }

    #[test]
    fn open_creates_missing_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("i.index");
        let index = MmapIndexFile::open(&path, 8, 64).expect("open");
        assert_eq!(index.entries(), 0);
        assert_eq!(index.max_entries(), 8);
        assert!(index.length_was_aligned());
    }

    #[test]
    fn trim_to_zero_entries_then_grow_and_push() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = index_with_keys(&dir, &[]);
        index.trim_to_valid_size().expect("trim");
        assert_eq!(index.max_entries(), 0);
        assert!(index.is_full());
        assert_eq!(index.largest_lower_bound(key_of, i64::MAX), None);
        assert_eq!(std::fs::metadata(index.path()).expect("metadata").len(), 0);
        assert!(index.resize(8 * 4).expect("resize"));
        index.push(&entry(7)).unwrap();
        assert_eq!(index.largest_lower_bound(key_of, 7), Some(0));
        assert!(!index
            .resize(8 * 4 + 3)
            .expect("resize to same rounded size"));
    }

    #[test]
    fn resize_never_drops_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = index_with_keys(&dir, &[1, 2, 3]);
        index.resize(8).expect("resize");
        assert_eq!(index.max_entries(), 3);
        assert_eq!(index.entries(), 3);
        assert_eq!(key_of(index.entry_bytes(2)), 3);
    }

    #[test]
    fn reopen_after_trim_finds_the_same_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("i.index");
        let mut index = MmapIndexFile::create(&path, 8, 800).expect("create");
        for key in [3, 5, 9] {
            index.push(&entry(key)).unwrap();
        }
        index.trim_to_valid_size().expect("trim");
        drop(index);
        let index = MmapIndexFile::open(&path, 8, 800).expect("open");
        assert_eq!(index.entries(), 3);
        assert_eq!(index.max_entries(), 100);
        let keys: Vec<i64> = (0..3).map(|n| key_of(index.entry_bytes(n))).collect();
        assert_eq!(keys, [3, 5, 9]);
    }

    #[test]
    fn largest_lower_bound_edges() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = index_with_keys(&dir, &[]);
        assert_eq!(empty.largest_lower_bound(key_of, 0), None);
        drop(empty);

        let index = index_with_keys(&dir, &[10]);
        assert_eq!(index.largest_lower_bound(key_of, 9), None);
        assert_eq!(index.largest_lower_bound(key_of, 10), Some(0));
        assert_eq!(index.largest_lower_bound(key_of, i64::MAX), Some(0));
        drop(index);

        let index = index_with_keys(&dir, &[10, 20, 30, 40]);
        assert_eq!(index.largest_lower_bound(key_of, i64::MIN), None);
        assert_eq!(index.largest_lower_bound(key_of, 9), None);
        assert_eq!(index.largest_lower_bound(key_of, 10), Some(0));
        assert_eq!(index.largest_lower_bound(key_of, 19), Some(0));
        assert_eq!(index.largest_lower_bound(key_of, 20), Some(1));
        assert_eq!(index.largest_lower_bound(key_of, 39), Some(2));
        assert_eq!(index.largest_lower_bound(key_of, 40), Some(3));
        assert_eq!(index.largest_lower_bound(key_of, 41), Some(3));
        drop(index);

        let index = index_with_keys(&dir, &[5, 7, 7, 7, 9]);
        assert_eq!(index.largest_lower_bound(key_of, 7), Some(3));
        assert_eq!(index.entries_below(key_of, 7), 1);
        assert_eq!(index.entries_below(key_of, 8), 4);
        assert_eq!(index.entries_below(key_of, i64::MIN), 0);
        assert_eq!(index.entries_below(key_of, i64::MAX), 5);
    }

    /// Large enough that the warm section does not cover the index, so both
    /// search paths run; checked against a linear scan.
    #[test]
    fn largest_lower_bound_matches_linear_scan_across_warm_boundary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let warm_entries = WARM_SECTION_BYTES / ENTRY_SIZE_BYTES;
        let keys: Vec<i64> = (0..(3 * warm_entries) as i64).map(|n| n * 3 + 1).collect();
        let index = index_with_keys(&dir, &keys);
        let first_warm = keys.len() - 1 - warm_entries;
        let boundary = keys[first_warm];
        let targets = [
            -5,
            0,
            1,
            2,
            boundary - 1,
            boundary,
            boundary + 1,
            keys[first_warm - 1],
            keys[keys.len() / 3],
            keys[keys.len() - 1] - 1,
            keys[keys.len() - 1],
            i64::MAX,
        ];
        for target in targets {
            let expected = keys.iter().rposition(|&key| key <= target);
            assert_eq!(
                index.largest_lower_bound(key_of, target),
                expected,
                "target {target}"
            );
        }
    }

    #[test]
    fn corrupt_unsorted_keys_do_not_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let index = index_with_keys(&dir, &[9, 3, 7, 1, 0, 0]);
        for target in [-1, 0, 1, 5, 100] {
            if let Some(n) = index.largest_lower_bound(key_of, target) {
                assert!(n < index.entries());
            }
        }
    }

    #[test]
    fn truncate_entries_then_push_overwrites() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = index_with_keys(&dir, &[1, 2, 3]);
        index.truncate_entries(1);
        assert_eq!(index.entries(), 1);
        index.push(&entry(8)).unwrap();
        assert_eq!(key_of(index.entry_bytes(1)), 8);
    }

    #[test]
    #[should_panic(expected = "push to full index")]
    fn push_to_full_index_panics() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = index_with_keys(&dir, &[1]);
        index.push(&entry(2)).unwrap();
    }

    #[test]
    fn rename_and_delete() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = index_with_keys(&dir, &[1, 2]);
        let new_path = dir.path().join("i.index.deleted");
        index.rename_to(&new_path).expect("rename");
        assert_eq!(index.path(), new_path);
        assert!(!dir.path().join("i.index").exists());
        // The mapping follows the file.
        assert_eq!(key_of(index.entry_bytes(1)), 2);
        assert!(index.delete().expect("delete"));
        assert!(!new_path.exists());
    }
}
