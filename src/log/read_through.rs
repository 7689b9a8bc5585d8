//! Read-through: a read that missed the read cache is read from the segment
//! file into memory on the partition's own shard, cut into whole batches,
//! and cached, so that the next reader of these offsets is served from
//! memory as Kafka's is from the page cache.
//!
//! It runs without the partition's lock: the log may change meanwhile, and
//! the cache drops the fill if it did (see `batch_cache`). The bytes read
//! are still the stored bytes, sent as they are: nothing is re-encoded.

use std::collections::VecDeque;
use std::io;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use glommio::io::{DmaFile, ReadResult};
use glommio::sync::{Semaphore, StaticPermit};
use glommio::Task;

use crate::constants::{FILE_READS_AHEAD, FILE_READ_PIECE_BYTES, READ_AHEAD_BYTES};
use crate::error::{LogError, LogResult};
use crate::log::batch::parse_header_only;
use crate::log::batch_cache::{Backing, CacheFill, CachedBatch};
use crate::log::cache_blocks::CacheCopy;
use crate::log::partition_log::{LogReadResult, ReadSlice};

/// Read-through pieces in flight on one shard, over all its reads. With
/// `FILE_READ_PIECE_BYTES` each that is 16 MiB, half of the shard's
/// default I/O memory (`shard.io.memory.bytes`): a fetch reads all its
/// partitions at once, and past the pool glommio takes read buffers from
/// the heap, which costs a page fault per 4 KiB.
pub const READ_THROUGH_PIECES_IN_FLIGHT: u64 = 16;

thread_local! {
    static PIECES: Rc<Semaphore> = Rc::new(Semaphore::new(READ_THROUGH_PIECES_IN_FLIGHT));
}

/// Reads `len` bytes of `file` from `position` (the start of a batch), and
/// on up to `READ_AHEAD_BYTES` from `position` where the segment's written
/// bytes (`readable_end`) allow. Returns the whole batches within `len`,
/// and caches every whole batch read through `fill`. Bytes past the last
/// whole batch within `len` are not returned: the client asks for them
/// with its next fetch, which then finds them in the cache. If the bytes
/// do not start with a readable batch header, the first `len` are returned
/// as read and nothing is cached.
async fn read_batches(
    file: Rc<DmaFile>,
    position: u64,
    len: u64,
    readable_end: u64,
    fill: &CacheFill,
) -> io::Result<Vec<Bytes>> {
    let read_len = read_length(position, len, readable_end);
    let (bytes, backing) = read_range(file, position, read_len, Some(fill)).await?;
    let batches = split_batches(&bytes, backing);
    if batches.is_empty() {
        return Ok(vec![bytes.slice(..bytes.len().min(len as usize))]);
    }
    let mut end = 0u64;
    let out = batches
        .iter()
        .take_while(|b| {
            end += b.bytes.len() as u64;
            end <= len
        })
        .map(|b| b.bytes.clone())
        .collect();
    fill.fill(batches);
    Ok(out)
}

/// The memory a read takes when it is read through the cache: each file
/// range's bytes, or its read-ahead where that is longer. A fetch counts
/// this, not just the bytes it will send, against its response's limit, so
/// that many cold partitions cannot make one fetch read ahead gigabytes.
pub fn memory_needed(result: &LogReadResult) -> u64 {
    result
        .slices
        .iter()
        .map(|slice| match slice {
            ReadSlice::Cached(_) => 0,
            ReadSlice::File { position, len, .. } => {
                read_length(*position, *len, result.readable_end)
            }
        })
        .sum()
}

/// How much `read_batches` reads for `len` bytes from `position`.
fn read_length(position: u64, len: u64, readable_end: u64) -> u64 {
    len.max(READ_AHEAD_BYTES.min(readable_end.saturating_sub(position)))
}

/// Reads a file range into one buffer, `FILE_READS_AHEAD` pieces at a time:
/// for a read to cache (`fill`), a block of the cache's memory
/// (`cache_blocks`), else an allocation of its own. Returns the bytes
/// and the buffer they are in. A short read (the file was truncated under
/// the reader) returns what was read.
async fn read_range(
    file: Rc<DmaFile>,
    position: u64,
    len: u64,
    fill: Option<&CacheFill>,
) -> io::Result<(Bytes, Backing)> {
    const PIECE: u64 = FILE_READ_PIECE_BYTES as u64;
    let len = usize::try_from(len).map_err(|_| io::Error::other("read range too large"))?;
    let mut block = fill.and_then(|fill| fill.cache.borrow_mut().block_piece(len));
    let mut out = BytesMut::with_capacity(if block.is_some() { 0 } else { len });
    let mut filled = 0usize;
    let pieces = PIECES.with(Rc::clone);
    let mut reads: VecDeque<(Task<io::Result<ReadResult>>, usize, StaticPermit)> = VecDeque::new();
    let mut next = 0usize;
    loop {
        while next < len && reads.len() < FILE_READS_AHEAD {
            // A read waits for a piece only while it has none in flight, so
            // reads holding pieces never wait on each other.
            let permit = if reads.is_empty() {
                pieces
                    .acquire_static_permit(1)
                    .await
                    .map_err(|e| io::Error::other(e.to_string()))?
            } else {
                match pieces.try_acquire_static_permit(1) {
                    Ok(permit) => permit,
                    Err(_) => break,
                }
            };
            // Pieces end on piece-size boundaries of the file, so that an
            // aligned read never exceeds a power of two (as the response
            // writer's pieces). A piece waits only on this shard's
            // io_uring, so its task's handle may be kept.
            let at = position + next as u64;
            let piece = (len - next).min((PIECE - at % PIECE) as usize);
            let file = file.clone();
            let task = glommio::spawn_local(async move {
                file.read_at(at, piece).await.map_err(io::Error::from)
            });
            reads.push_back((task, piece, permit));
            next += piece;
        }
        let Some((read, piece, permit)) = reads.pop_front() else {
            break;
        };
        let data = read.await?;
        match &mut block {
            Some(block) => block.write_at(filled, &data),
            None => out.extend_from_slice(&data),
        }
        filled += data.len();
        let short = data.len() < piece;
        // The piece's buffer goes back to the pool with `data`.
        drop(data);
        drop(permit);
        if short {
            break;
        }
    }
    Ok(match block {
        Some(block) => {
            let (bytes, backing) = CacheCopy::Block(block).freeze();
            (bytes.slice(..filled), backing)
        }
        None => CacheCopy::Heap(out).freeze(),
    })
}

/// The whole batches at the front of `bytes`, in order, each a slice of
/// `bytes`, which is in `backing` (which the cache counts whole while any
/// of them is cached).
pub fn split_batches(bytes: &Bytes, backing: Backing) -> Vec<CachedBatch> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Ok(header) = parse_header_only(&bytes[at..]) {
        let end = at + header.size_bytes();
        if end > bytes.len() {
            break;
        }
        out.push(CachedBatch {
            base_offset: header.base_offset,
            last_offset: header.last_offset(),
            bytes: bytes.slice(at..end),
            backing,
        });
        at = end;
    }
    out
}

/// The bytes of a read, in memory: cached slices as they are, and file
/// ranges read, through the read cache when the read missed it. For reads
/// whose bytes cross shards as `Bytes`; the fetch path sends file ranges
/// that are not read through straight from the file instead.
pub async fn into_memory(result: LogReadResult) -> LogResult<Vec<Bytes>> {
    let mut out = Vec::with_capacity(result.slices.len());
    for slice in result.slices {
        match (slice, &result.fill) {
            (ReadSlice::Cached(b), _) => out.push(b),
            (
                ReadSlice::File {
                    file,
                    position,
                    len,
                },
                Some(fill),
            ) => out.extend(
                read_batches(file, position, len, result.readable_end, fill)
                    .await
                    .map_err(|e| LogError::io("read segment", "<segment>", position as i64, e))?,
            ),
            (
                ReadSlice::File {
                    file,
                    position,
                    len,
                },
                None,
            ) => out.push(
                read_range(file, position, len, None)
                    .await
                    .map_err(|e| LogError::io("read segment", "<segment>", position as i64, e))?
                    .0,
            ),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_through_needs_its_read_ahead_unless_the_segment_ends_first() {
        let mib = 1024 * 1024;
        // A small read takes the whole read-ahead when the segment has it.
        assert_eq!(read_length(0, 1000, 1 << 30), READ_AHEAD_BYTES);
        // A read longer than the read-ahead takes its own length.
        assert_eq!(read_length(0, 9 * mib, 1 << 30), 9 * mib);
        // Near the segment's written end, only what is left.
        assert_eq!(read_length(10 * mib, 1000, 10 * mib + 5000), 5000);
        // A position past the written end (the log shrank) needs just `len`.
        assert_eq!(read_length(10 * mib, 1000, mib), 1000);
    }
}
