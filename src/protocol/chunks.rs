//! Responses as a list of chunks, so that record bytes reach the socket
//! without being copied into the response buffer: cached batches travel as
//! the `Bytes` the log holds, and file ranges are read from the segment with
//! O_DIRECT reads on the connection's shard and sent from those buffers.

use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
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

/// A range of a segment file.
#[derive(Debug, Clone)]
pub struct FileRange {
    pub file: Arc<SegmentFile>,
    pub position: u64,
    pub len: u64,
}

#[derive(Debug, Clone)]
pub enum Chunk {
    Bytes(Bytes),
    File(FileRange),
}

impl Chunk {
    pub fn len(&self) -> usize {
        match self {
            Chunk::Bytes(b) => b.len(),
            Chunk::File(f) => f.len as usize,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Record data inside a message: plain bytes (decoded from a frame, or built
/// by a client), or chunks gathered from the log for a fetch response.
#[derive(Debug, Clone)]
pub enum RecordData {
    Bytes(Bytes),
    Chunks(Vec<Chunk>),
}

impl RecordData {
    pub fn len(&self) -> usize {
        match self {
            RecordData::Bytes(b) => b.len(),
            RecordData::Chunks(c) => c.iter().map(Chunk::len).sum(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The bytes, when they are in memory; `None` for file chunks.
    pub fn as_bytes(&self) -> Option<Bytes> {
        match self {
            RecordData::Bytes(b) => Some(b.clone()),
            RecordData::Chunks(chunks) => {
                let mut out = BytesMut::new();
                for c in chunks {
                    match c {
                        Chunk::Bytes(b) => out.extend_from_slice(b),
                        Chunk::File(_) => return None,
                    }
                }
                Some(out.freeze())
            }
        }
    }
}

impl PartialEq for RecordData {
    /// Equal when the bytes are equal; file chunks never compare equal.
    fn eq(&self, other: &Self) -> bool {
        match (self.as_bytes(), other.as_bytes()) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }
}
impl Eq for RecordData {}

/// Builds a chunked response: small fields go into a growing buffer, record
/// data is appended as its own chunks.
#[derive(Debug, Default)]
pub struct ChunkWriter {
    chunks: Vec<Chunk>,
    buf: BytesMut,
}

impl ChunkWriter {
    pub fn new() -> Self {
        Self::default()
    }
    /// The buffer for ordinary fields.
    pub fn buf(&mut self) -> &mut BytesMut {
        &mut self.buf
    }
    /// Appends record data without copying it.
    pub fn push_records(&mut self, data: &RecordData) {
        match data {
            RecordData::Bytes(b) => self.push(Chunk::Bytes(b.clone())),
            RecordData::Chunks(chunks) => {
                for c in chunks {
                    self.push(c.clone());
                }
            }
        }
    }
    fn push(&mut self, chunk: Chunk) {
        if chunk.is_empty() {
            return;
        }
        if !self.buf.is_empty() {
            let b = self.buf.split().freeze();
            self.chunks.push(Chunk::Bytes(b));
        }
        self.chunks.push(chunk);
    }
    pub fn len(&self) -> usize {
        self.chunks.iter().map(Chunk::len).sum::<usize>() + self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn finish(mut self) -> Vec<Chunk> {
        if !self.buf.is_empty() {
            let b = self.buf.split().freeze();
            self.chunks.push(Chunk::Bytes(b));
        }
        self.chunks
    }
    /// All chunks as one buffer; fails on file chunks. For tests and clients.
    pub fn into_bytes(self) -> Option<Bytes> {
        RecordData::Chunks(self.finish()).as_bytes()
    }
}
