//! Responses as a list of chunks, so that record bytes reach the socket
//! without being copied into the response buffer: cached batches travel as
//! the `Bytes` the log holds, and file ranges are read from the segment with
//! O_DIRECT reads on the connection's shard and sent from those buffers
//! (`server/network/response_writer.rs`).

use std::any::Any;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

/// A file whose bytes a response sends without copying them into memory
/// first. The protocol only carries it and counts its length; the network
/// edge, which knows the concrete type (`log::segment_file::SegmentFile`),
/// reads it. A trait, so that this layer names no I/O type.
pub trait StoredFile: Any + std::fmt::Debug + Send + Sync {
    /// For the reader to recover the concrete type.
    fn as_any(&self) -> &dyn Any;
}

/// A range of a stored file.
#[derive(Debug, Clone)]
pub struct FileRange {
    pub file: Arc<dyn StoredFile>,
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
