//! A segment's aborted-transaction index, `<base offset>.txnindex`, in
//! Kafka's format (its `TransactionIndex`): one fixed-size entry per
//! transaction whose ABORT marker is in the segment, in marker order.
//!
//! ```text
//! entry (34 bytes, big-endian): version i16 = 0 | producer_id i64 |
//!   first_offset i64 | last_offset i64 | last_stable_offset i64
//! ```
//!
//! A read_committed fetch lists the aborted transactions that overlap what
//! it returns ([`TransactionIndex::collect`]), and the consumer drops their
//! batches. Like Kafka, the file exists only once a segment has an entry,
//! is appended in place and synced with its segment, and is rebuilt from
//! the log whenever its segment is recovered; a size that is not a whole
//! number of entries, or an entry outside the segment, fails the sanity
//! check, and recovery rebuilds it too. The entries are also kept in
//! memory: they are few (one per aborted transaction) and every
//! read_committed fetch reads them.

use std::path::{Path, PathBuf};

use crate::error::{LogError, LogResult};
use crate::transaction::partition::AbortedTxn;

/// Bytes of one entry.
pub const TXN_INDEX_ENTRY_BYTES: usize = 2 + 8 + 8 + 8 + 8;
/// The only entry version Kafka writes.
pub const TXN_INDEX_VERSION: i16 = 0;
/// Suffix of the index files, as Kafka's `LogFileUtils.TXN_INDEX_FILE_SUFFIX`.
pub const TXN_INDEX_FILE_SUFFIX: &str = "txnindex";

/// Encodes one entry.
pub fn encode_entry(txn: &AbortedTxn) -> [u8; TXN_INDEX_ENTRY_BYTES] {
    let mut out = [0u8; TXN_INDEX_ENTRY_BYTES];
    out[..2].copy_from_slice(&TXN_INDEX_VERSION.to_be_bytes());
    out[2..10].copy_from_slice(&txn.producer_id.to_be_bytes());
    out[10..18].copy_from_slice(&txn.first_offset.to_be_bytes());
    out[18..26].copy_from_slice(&txn.last_offset.to_be_bytes());
    out[26..34].copy_from_slice(&txn.last_stable_offset.to_be_bytes());
    out
}

/// Decodes a whole index file. Says why when it is not one: a partial
/// entry, or an unknown version.
pub fn decode_entries(bytes: &[u8]) -> Result<Vec<AbortedTxn>, String> {
    if bytes.len() % TXN_INDEX_ENTRY_BYTES != 0 {
        return Err(format!(
            "{} bytes are not a whole number of {TXN_INDEX_ENTRY_BYTES}-byte entries",
            bytes.len()
        ));
    }
    let i64_at = |b: &[u8], at: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[at..at + 8]);
        i64::from_be_bytes(a)
    };
    bytes
        .chunks_exact(TXN_INDEX_ENTRY_BYTES)
        .enumerate()
        .map(|(i, e)| {
            let version = i16::from_be_bytes([e[0], e[1]]);
            if version != TXN_INDEX_VERSION {
                return Err(format!("entry {i} has unknown version {version}"));
            }
            Ok(AbortedTxn {
                producer_id: i64_at(e, 2),
                first_offset: i64_at(e, 10),
                last_offset: i64_at(e, 18),
                last_stable_offset: i64_at(e, 26),
            })
        })
        .collect()
}

/// What is wrong with the entries of the index of the segment starting at
/// `base_offset` and ending before `next_offset` (Kafka's `sanityCheck`,
/// and more): each marker lies in the segment, after its transaction's
/// first offset, and after the previous entry's marker.
pub fn check_entries(
    entries: &[AbortedTxn],
    base_offset: i64,
    next_offset: i64,
) -> Result<(), String> {
    let mut previous: Option<i64> = None;
    for (i, e) in entries.iter().enumerate() {
        if e.last_offset < base_offset || e.last_offset >= next_offset {
            return Err(format!(
                "entry {i}: marker offset {} is outside the segment [{base_offset}, {next_offset})",
                e.last_offset
            ));
        }
        if e.first_offset > e.last_offset {
            return Err(format!(
                "entry {i}: first offset {} is past the marker at {}",
                e.first_offset, e.last_offset
            ));
        }
        if previous.is_some_and(|p| e.last_offset <= p) {
            return Err(format!(
                "entry {i}: marker offset {} does not follow the previous entry's",
                e.last_offset
            ));
        }
        previous = Some(e.last_offset);
    }
    Ok(())
}

/// The entries of `entries` that a read of `[fetch_offset, upper_bound)`
/// must list, and whether the search may stop here (Kafka's
/// `collectAbortedTxns`): an entry whose LSO reaches the bound proves that
/// no later segment holds an older transaction overlapping the read.
pub fn collect(
    entries: &[AbortedTxn],
    fetch_offset: i64,
    upper_bound: i64,
) -> (Vec<AbortedTxn>, bool) {
    let mut found = Vec::new();
    for e in entries {
        if e.last_offset >= fetch_offset && e.first_offset < upper_bound {
            found.push(*e);
        }
        if e.last_stable_offset >= upper_bound {
            return (found, true);
        }
    }
    (found, false)
}

/// The aborted-transaction index of one segment.
pub struct TransactionIndex {
    path: PathBuf,
    entries: Vec<AbortedTxn>,
    /// Entries were written since the last sync.
    unsynced: bool,
}

impl TransactionIndex {
    /// The index of a new segment: no file until the first entry.
    pub fn empty(path: PathBuf) -> Self {
        TransactionIndex {
            path,
            entries: Vec::new(),
            unsynced: false,
        }
    }

    /// Reads the index of an existing segment (a blocking read: only when
    /// a partition opens). `Err` with the reason when the file is not a
    /// valid index; the segment then needs recovery, which rebuilds it.
    pub fn open(path: PathBuf) -> LogResult<Result<Self, String>> {
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ok(Self::empty(path))),
            Err(e) => return Err(LogError::io("read transaction index", &path, -1, e)),
        };
        Ok(decode_entries(&bytes).map(|entries| TransactionIndex {
            path,
            entries,
            unsynced: false,
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// Appends one entry at the end of the file. Markers come in offset
    /// order, so entries do too.
    pub async fn append(&mut self, txn: AbortedTxn) -> LogResult<()> {
        if let Some(last) = self.entries.last() {
            assert!(
                txn.last_offset > last.last_offset,
                "{}: aborted transaction at {} appended after one at {}",
                self.path.display(),
                txn.last_offset,
                last.last_offset
            );
        }
        let at = (self.entries.len() * TXN_INDEX_ENTRY_BYTES) as u64;
        let bytes = encode_entry(&txn);
        let path = self.path.clone();
        let r = crate::blocking_pool::run(move || {
            use std::os::unix::fs::FileExt;
            std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(&path)
                .and_then(|f| f.write_all_at(&bytes, at))
        })
        .await;
        r.map_err(|e| LogError::io("append transaction index", &self.path, txn.last_offset, e))?;
        self.entries.push(txn);
        self.unsynced = true;
        Ok(())
    }

    /// Replaces every entry (recovery's rebuild, a cleaned segment): writes
    /// the file whole, or removes it when there are none.
    pub async fn rewrite(&mut self, entries: Vec<AbortedTxn>) -> LogResult<()> {
        let bytes: Vec<u8> = entries.iter().flat_map(encode_entry).collect();
        let path = self.path.clone();
        let r = crate::blocking_pool::run(move || {
            if bytes.is_empty() {
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                }
            } else {
                std::fs::write(&path, &bytes)
            }
        })
        .await;
        r.map_err(|e| LogError::io("write transaction index", &self.path, -1, e))?;
        self.entries = entries;
        self.unsynced = !self.entries.is_empty();
        Ok(())
    }

    /// Drops the entries whose marker is at or after `offset` (Kafka's
    /// `truncateTo`).
    pub async fn truncate_to(&mut self, offset: i64) -> LogResult<()> {
        let keep = self.entries.partition_point(|e| e.last_offset < offset);
        if keep == self.entries.len() {
            return Ok(());
        }
        let mut kept = std::mem::take(&mut self.entries);
        kept.truncate(keep);
        self.rewrite(kept).await
    }

    /// Makes the entries durable, when any were written since the last time.
    pub async fn flush(&mut self) -> LogResult<()> {
        if !self.unsynced {
            return Ok(());
        }
        let path = self.path.clone();
        let r = crate::blocking_pool::run(move || std::fs::File::open(&path)?.sync_data()).await;
        match r {
            Ok(()) => {}
            // Rewritten to nothing since: nothing to sync.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(LogError::io(
                    "fdatasync transaction index",
                    &self.path,
                    -1,
                    e,
                ))
            }
        }
        self.unsynced = false;
        Ok(())
    }

    /// Removes the file, if there is one.
    pub async fn delete(self) -> LogResult<()> {
        self.delete_stale().await
    }

    /// Removes a file left at this index's path by an earlier segment of
    /// the same base offset, before the new segment writes any entry.
    pub async fn delete_stale(&self) -> LogResult<()> {
        let path = self.path.clone();
        let r = crate::blocking_pool::run(move || std::fs::remove_file(&path)).await;
        match r {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(LogError::io("delete transaction index", &self.path, -1, e))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(producer_id: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn entries_round_trip_in_kafkas_layout() {
        let entries = vec![txn(7, 0, 5, 6), txn(-2, 10, 20, 15)];
        let bytes: Vec<u8> = entries.iter().flat_map(encode_entry).collect();
        assert_eq!(bytes.len(), 2 * 34);
        assert_eq!(&bytes[..10], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 7]);
        assert_eq!(decode_entries(&bytes), Ok(entries));
        assert!(decode_entries(&bytes[..40]).is_err(), "a partial entry");
        let mut bad = bytes.clone();
        bad[1] = 1;
        assert!(decode_entries(&bad).is_err(), "an unknown version");
    }

    #[test]
    fn collect_lists_overlapping_aborts_and_knows_when_to_stop() {
        let entries = [txn(1, 0, 4, 5), txn(2, 3, 9, 10), txn(3, 12, 14, 15)];
        // A read of [5, 10): producer 2's overlaps; producer 1's ended
        // before it; the second entry's LSO (10) reaches the bound.
        let (found, complete) = collect(&entries, 5, 10);
        assert_eq!(found, vec![entries[1]]);
        assert!(complete);
        // A read of [0, 20) needs every entry and may need later segments.
        let (found, complete) = collect(&entries, 0, 20);
        assert_eq!(found.len(), 3);
        assert!(!complete);
    }

    #[test]
    fn the_sanity_check_finds_entries_outside_their_segment() {
        let ok = [txn(1, 0, 104, 105), txn(2, 50, 110, 111)];
        assert!(check_entries(&ok, 100, 200).is_ok());
        assert!(
            check_entries(&ok, 105, 200).is_err(),
            "marker before the base"
        );
        assert!(check_entries(&ok, 100, 110).is_err(), "marker past the end");
        assert!(
            check_entries(&[ok[1], ok[0]], 100, 200).is_err(),
            "out of order"
        );
        assert!(check_entries(&[txn(1, 120, 110, 111)], 100, 200).is_err());
    }
}
