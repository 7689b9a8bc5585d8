//! A segment file handed from the shard that owns a partition to the
//! connection's shard, which sends a range of it in a fetch response (the
//! network edge makes it a `protocol::chunks::StoredFile`; the log knows
//! nothing of the wire protocol).

use std::sync::Mutex;

use glommio::io::{DmaFile, OwnedDmaFile};

/// A segment file that can cross shards: a `dup` of the owner's O_DIRECT
/// descriptor, so the connection's shard reads it through its own io_uring
/// (never blocking on a page-cache miss), and it outlives a roll, a
/// truncation or a deletion of the segment on the owner.
pub struct SegmentFile(Mutex<Option<OwnedDmaFile>>);

impl SegmentFile {
    /// Duplicates the descriptor of an open segment file.
    pub fn dup_of(file: &DmaFile) -> std::io::Result<Self> {
        let dup = file.dup().map_err(std::io::Error::from)?;
        Ok(Self(Mutex::new(Some(OwnedDmaFile::from(dup)))))
    }

    /// The file, for the shard that reads it. A range is read once: its
    /// response is written once.
    pub fn take_for_this_shard(&self) -> std::io::Result<DmaFile> {
        let owned = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        owned.map(DmaFile::from).ok_or_else(|| {
            std::io::Error::other("a segment file range was sent twice; it can be read only once")
        })
    }
}

impl std::fmt::Debug for SegmentFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SegmentFile")
    }
}
