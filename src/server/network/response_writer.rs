//! Writes a chunked response to the socket: memory chunks as they are, and
//! segment file ranges read with O_DIRECT through the shard's io_uring, a
//! few pieces ahead of the socket, then written from those buffers.
//!
//! Why not sendfile: segments are written with O_DIRECT, so their data is
//! not in the page cache, and a sendfile of it reads the disk synchronously
//! on the shard thread. That stalls every connection and partition of the
//! shard for the disk's latency, and the executor must never block. A DMA
//! read is asynchronous, lands in glommio's reusable aligned buffers rather
//! than in fresh page-cache pages, and the socket write waits for room
//! through io_uring instead of polling. The record bytes are still sent as
//! stored: nothing here decodes or re-encodes them.

use std::collections::VecDeque;
use std::io;
use std::rc::Rc;

use bytes::Bytes;
use futures_lite::AsyncWriteExt;
use glommio::io::{DmaFile, ReadResult};
use glommio::Task;

use crate::constants::{FILE_READS_AHEAD, FILE_READ_PIECE_BYTES};
use crate::log::segment_file::SegmentFile;
use crate::protocol::chunks::{Chunk, StoredFile};

const PIECE: u64 = FILE_READ_PIECE_BYTES as u64;
const _: () = assert!(FILE_READ_PIECE_BYTES.is_power_of_two());

/// A segment file is what a fetch response's file ranges hold.
impl StoredFile for SegmentFile {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// One write of a response, in order.
enum Step {
    Memory(Bytes),
    Read {
        file: Rc<DmaFile>,
        position: u64,
        len: usize,
    },
}

/// Cuts the response into writes, taking each file range's descriptor for
/// this shard and splitting ranges into pieces.
fn plan(chunks: Vec<Chunk>) -> io::Result<Vec<Step>> {
    let mut steps = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        match chunk {
            Chunk::Bytes(b) => steps.push(Step::Memory(b)),
            Chunk::File(range) => {
                let segment = range
                    .file
                    .as_any()
                    .downcast_ref::<SegmentFile>()
                    .ok_or_else(|| io::Error::other("a file range that is not a segment file"))?;
                let file = Rc::new(segment.take_for_this_shard()?);
                let end = range.position + range.len;
                let mut position = range.position;
                while position < end {
                    // Pieces end on piece-size boundaries of the file, so a
                    // piece's aligned read (from the block below `position`)
                    // never exceeds FILE_READ_PIECE_BYTES: a power of two,
                    // which glommio's buddy allocator serves without
                    // rounding up to the next one.
                    let piece_end = (position / PIECE + 1) * PIECE;
                    let len = (end.min(piece_end) - position) as usize;
                    steps.push(Step::Read {
                        file: file.clone(),
                        position,
                        len,
                    });
                    position += len as u64;
                }
            }
        }
    }
    Ok(steps)
}

/// Reads one piece; a short read means the segment lost bytes the response
/// already announced (truncated or deleted below the reader), and the
/// connection must close rather than send a response of the wrong length.
async fn read_piece(file: Rc<DmaFile>, position: u64, len: usize) -> io::Result<ReadResult> {
    let data = file.read_at(position, len).await.map_err(io::Error::from)?;
    if data.len() < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "segment file ended at {} while sending {len} bytes from position {position}",
                position + data.len() as u64
            ),
        ));
    }
    Ok(data)
}

/// Writes every chunk of a response, in order.
pub async fn write_response<W: futures_lite::AsyncWrite + Unpin>(
    writer: &mut W,
    chunks: Vec<Chunk>,
) -> io::Result<()> {
    let steps = plan(chunks)?;
    // Reads issued and not yet written, oldest first. Dropping a task
    // cancels it, so an error below leaves nothing running.
    let mut reads: VecDeque<Task<io::Result<ReadResult>>> = VecDeque::new();
    let mut next_to_issue = 0;
    for step in 0..steps.len() {
        while next_to_issue < steps.len() && reads.len() < FILE_READS_AHEAD {
            if let Step::Read {
                file,
                position,
                len,
            } = &steps[next_to_issue]
            {
                reads.push_back(glommio::spawn_local(read_piece(
                    file.clone(),
                    *position,
                    *len,
                )));
            }
            next_to_issue += 1;
        }
        match &steps[step] {
            Step::Memory(b) => writer.write_all(b).await?,
            Step::Read { .. } => {
                let data = reads
                    .pop_front()
                    .expect("every read step was issued before it is written")
                    .await?;
                writer.write_all(&data).await?;
            }
        }
    }
    writer.flush().await
}
