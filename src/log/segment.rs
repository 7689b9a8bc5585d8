//! One log segment: a `.log` file of RecordBatch v2 bytes written with
//! direct I/O, plus its memory-mapped `.index` and `.timeindex`.
//!
//! Direct I/O writes whole aligned blocks. The segment therefore keeps the
//! bytes of its last, partial block in memory (`tail_block`) and rewrites that
//! block together with new data on every append. The file may end in zero
//! padding up to the next block boundary while the segment is active; its
//! logical size (`size_bytes`) is what counts, and the file is cut back to it
//! when the segment is closed or rolled. After a crash recovery treats the
//! padding as a torn tail and truncates it.
//!
//! The active segment's file is also grown ahead of its writes, zeros
//! included in its size (`SEGMENT_ALLOCATE_AHEAD_BYTES`, or the whole
//! segment with Kafka's `preallocate`): an O_DIRECT write that extends a
//! file waits for block allocation, so io_uring hands it to a worker thread,
//! while a write inside the file is submitted inline. The same cut at roll
//! and close, and the same recovery, deal with those zeros.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use glommio::io::{DmaFile, OpenOptions, ReadResult};

use crate::config::LogConfig;
use crate::constants::{
    DMA_ALIGNMENT, DMA_WRITE_BYTES_MAX, LOG_OVERHEAD, READ_SCAN_CHUNK_BYTES,
    RECORD_BATCH_HEADER_SIZE, RECOVERY_READ_CHUNK_BYTES, SEGMENT_ALLOCATE_AHEAD_BYTES,
    SEGMENT_ALLOCATE_AHEAD_MIN_BYTES, SEGMENT_NAME_DIGITS,
};
use crate::error::{LogError, LogResult};
use crate::log::batch::{self, BatchHeader};
use crate::log::offset_index::OffsetIndex;
use crate::log::time_index::TimeIndex;
use crate::log::transaction_index::{check_entries, TransactionIndex, TXN_INDEX_FILE_SUFFIX};
use crate::transaction::partition::AbortedTxn;

/// Kafka's `RecordBatch.NO_TIMESTAMP`.
pub const NO_TIMESTAMP: i64 = -1;

/// Suffix of the files the log cleaner is still writing (Kafka's
/// `LogFileUtils.CLEANED_FILE_SUFFIX`).
pub const CLEANED_FILE_SUFFIX: &str = ".cleaned";
/// Suffix of cleaned files that replace old segments once the old ones are
/// gone (Kafka's `SWAP_FILE_SUFFIX`).
pub const SWAP_FILE_SUFFIX: &str = ".swap";
/// The files of a segment, by Kafka's suffixes; the log file last, as the
/// cleaner's swap renames it last. The transaction index exists only for a
/// segment with an aborted transaction ([`OPTIONAL_FILE_KINDS`]).
pub const SEGMENT_FILE_KINDS: [&str; 4] = ["index", "timeindex", TXN_INDEX_FILE_SUFFIX, "log"];
/// The segment files that may be absent.
pub const OPTIONAL_FILE_KINDS: [&str; 1] = [TXN_INDEX_FILE_SUFFIX];

/// `<20-digit base offset>.<suffix>` in `dir`, as Kafka names segment files.
pub fn segment_file_path(dir: &Path, base_offset: i64, suffix: &str) -> PathBuf {
    dir.join(format!(
        "{:0width$}.{suffix}",
        base_offset,
        width = SEGMENT_NAME_DIGITS
    ))
}

/// Parses the base offset out of a segment file name such as
/// `00000000000000000042.log`.
pub fn parse_segment_file_name(name: &str, suffix: &str) -> Option<i64> {
    let stem = name.strip_suffix(suffix)?.strip_suffix('.')?;
    if stem.len() != SEGMENT_NAME_DIGITS || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

fn align_down(v: u64) -> u64 {
    v - v % DMA_ALIGNMENT
}
fn align_up(v: u64) -> u64 {
    align_down(v + DMA_ALIGNMENT - 1)
}

/// Where a batch starts in a segment file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchPosition {
    pub position: u64,
    pub header: BatchHeader,
}

/// One segment of a partition log.
pub struct Segment {
    base_offset: i64,
    log_path: PathBuf,
    file: Rc<DmaFile>,
    /// Bytes of valid batches in the file. Everything past it is padding or
    /// garbage.
    size_bytes: u64,
    /// Bytes of the file from `align_down(size_bytes)` to `size_bytes`: the
    /// partial block that the next DMA write must rewrite.
    tail_block: Vec<u8>,
    /// Bytes written but not yet fdatasync'ed start here.
    flushed_size_bytes: u64,
    /// The file's length as this segment last set it: at least the logical
    /// size and its DMA padding, and up to the space allocated ahead.
    file_len: u64,
    /// Whether to grow the file ahead of the writes. Cleared for this
    /// segment when the file system refuses `fallocate` (then each write
    /// extends the file, as before) or it fails otherwise (the write that
    /// follows reports what is wrong, if anything is).
    allocates_ahead: bool,
    /// `segment.bytes` when the segment was made: space is never allocated
    /// ahead past it.
    segment_bytes: u64,
    /// False for a segment this process created until the first flush
    /// fsyncs its directory: until then a power loss may take the new
    /// files' names, whatever was fdatasync'ed into them.
    names_durable: bool,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    bytes_since_last_index_entry: u64,
    max_timestamp_so_far: i64,
    offset_of_max_timestamp_so_far: i64,
    /// Max timestamp of the first batch: what `segment.ms` is measured from.
    rolling_based_timestamp: Option<i64>,
    created_ms: i64,
    /// `index.interval.bytes` of the owning log.
    index_interval_bytes: u64,
    /// `segment.index.bytes`: the size an active segment's indexes have.
    index_max_bytes: u64,
    /// One past the last offset stored here; the base offset when empty.
    next_offset: i64,
    /// An index file was absent at open: the indexes must be rebuilt by
    /// recovery, as Kafka's log loader does, not trusted as empty.
    indexes_missing: bool,
    /// The aborted transactions whose ABORT marker is here. Rebuilt by the
    /// log, which replays producer state, when the segment is recovered.
    txn_index: TransactionIndex,
}

impl Segment {
    /// Creates an empty segment, truncating any stale files of that name.
    pub async fn create(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> LogResult<Segment> {
        Self::create_named(dir, base_offset, config, now_ms, "").await
    }

    /// Creates the segment the log cleaner writes: its files carry Kafka's
    /// `.cleaned` suffix (`<base>.log.cleaned`, `.index.cleaned`,
    /// `.timeindex.cleaned`) until the swap renames them.
    pub async fn create_cleaned(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> LogResult<Segment> {
        Self::create_named(dir, base_offset, config, now_ms, CLEANED_FILE_SUFFIX).await
    }

    async fn create_named(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
        extra_suffix: &str,
    ) -> LogResult<Segment> {
        crate::log::direct_io::ensure_probed(dir).await?;
        let path = |kind: &str| {
            let mut p = segment_file_path(dir, base_offset, kind).into_os_string();
            p.push(extra_suffix);
            PathBuf::from(p)
        };
        let log_path = path("log");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .dma_open(&log_path)
            .await
            .map_err(|e| LogError::io("create segment", &log_path, base_offset, e))?;
        let offset_index =
            OffsetIndex::create(path("index"), base_offset, config.segment_index_bytes)?;
        let time_index =
            TimeIndex::create(path("timeindex"), base_offset, config.segment_index_bytes)?;
        let txn_index = TransactionIndex::empty(path(TXN_INDEX_FILE_SUFFIX));
        // A stale index of that name would describe other batches.
        txn_index.delete_stale().await?;
        let mut segment = Segment {
            base_offset,
            log_path,
            file: Rc::new(file),
            size_bytes: 0,
            tail_block: Vec::new(),
            flushed_size_bytes: 0,
            file_len: 0,
            allocates_ahead: true,
            segment_bytes: config.segment_bytes,
            names_durable: false,
            offset_index,
            time_index,
            bytes_since_last_index_entry: 0,
            max_timestamp_so_far: NO_TIMESTAMP,
            offset_of_max_timestamp_so_far: base_offset,
            rolling_based_timestamp: None,
            created_ms: now_ms,
            index_interval_bytes: config.index_interval_bytes,
            index_max_bytes: config.segment_index_bytes,
            next_offset: base_offset,
            indexes_missing: false,
            txn_index,
        };
        if config.preallocate {
            // Kafka's `preallocate`: the file is `segment.bytes` long from
            // the start (Kafka's setLength), and cut back at roll and close.
            segment.allocate_to(align_up(config.segment_bytes)).await;
        }
        Ok(segment)
    }

    /// Opens the files of an existing segment without validating its batches.
    /// The caller then either [`Segment::recover`]s it or, after a clean
    /// shutdown, [`Segment::load_clean`]s it.
    pub async fn open(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> LogResult<Segment> {
        crate::log::direct_io::ensure_probed(dir).await?;
        let log_path = segment_file_path(dir, base_offset, "log");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .dma_open(&log_path)
            .await
            .map_err(|e| LogError::io("open segment", &log_path, base_offset, e))?;
        let size_bytes = file
            .file_size()
            .await
            .map_err(|e| LogError::io("stat segment", &log_path, base_offset, e))?;
        let index_paths = [
            segment_file_path(dir, base_offset, "index"),
            segment_file_path(dir, base_offset, "timeindex"),
        ];
        let mut indexes_missing = index_paths.iter().any(|p| !p.exists());
        let txn_index_path = segment_file_path(dir, base_offset, TXN_INDEX_FILE_SUFFIX);
        let txn_index = match TransactionIndex::open(txn_index_path.clone())? {
            Ok(index) => index,
            Err(reason) => {
                tracing::warn!(
                    index = %txn_index_path.display(),
                    "transaction index is invalid, recovering its segment: {reason}"
                );
                indexes_missing = true;
                TransactionIndex::empty(txn_index_path)
            }
        };
        // The indexes keep the length they have (0: never grown). As in
        // Kafka, only the active segment's are grown, by the log once it
        // knows which that is: a sealed segment's index grown here stayed
        // grown until the next clean close, so a crash in between left a
        // zero tail that failed the sanity check at the next start, and
        // every sealed segment was recovered, not only those past the
        // recovery point.
        let offset_index =
            OffsetIndex::open(segment_file_path(dir, base_offset, "index"), base_offset, 0)?;
        let time_index = TimeIndex::open(
            segment_file_path(dir, base_offset, "timeindex"),
            base_offset,
            0,
        )?;
        let mut segment = Segment {
            base_offset,
            log_path,
            file: Rc::new(file),
            size_bytes,
            tail_block: Vec::new(),
            flushed_size_bytes: size_bytes,
            file_len: size_bytes,
            allocates_ahead: true,
            segment_bytes: config.segment_bytes,
            names_durable: true,
            offset_index,
            time_index,
            bytes_since_last_index_entry: 0,
            max_timestamp_so_far: NO_TIMESTAMP,
            offset_of_max_timestamp_so_far: base_offset,
            rolling_based_timestamp: None,
            created_ms: now_ms,
            index_interval_bytes: config.index_interval_bytes,
            index_max_bytes: config.segment_index_bytes,
            next_offset: base_offset,
            indexes_missing,
            txn_index,
        };
        segment.reload_tail_block().await?;
        Ok(segment)
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }
    pub fn is_empty(&self) -> bool {
        self.size_bytes == 0
    }
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }
    pub fn file(&self) -> &Rc<DmaFile> {
        &self.file
    }
    pub fn offset_index(&self) -> &OffsetIndex {
        &self.offset_index
    }
    pub fn time_index(&self) -> &TimeIndex {
        &self.time_index
    }
    pub fn has_unflushed_bytes(&self) -> bool {
        self.flushed_size_bytes < self.size_bytes
    }
    pub fn flushed_size_bytes(&self) -> u64 {
        self.flushed_size_bytes
    }
    /// Offset of the batch holding the largest timestamp.
    pub fn offset_of_max_timestamp(&self) -> i64 {
        self.offset_of_max_timestamp_so_far
    }
    /// Largest record timestamp in the segment, or [`NO_TIMESTAMP`].
    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp_so_far
    }
    /// Max timestamp of the first batch, or [`NO_TIMESTAMP`]: what
    /// `max.compaction.lag.ms` measures a segment's age from (Kafka's
    /// `getFirstBatchTimestamp`).
    pub fn first_batch_timestamp(&self) -> i64 {
        self.rolling_based_timestamp.unwrap_or(NO_TIMESTAMP)
    }
    /// Bytes of the offset and time index entries: what Kafka's
    /// `groupSegmentsBySize` adds up against `segment.index.bytes`.
    pub fn index_sizes_bytes(&self) -> (u64, u64) {
        (
            (self.offset_index.entries() * crate::constants::OFFSET_INDEX_ENTRY_SIZE) as u64,
            (self.time_index.entries() * crate::constants::TIME_INDEX_ENTRY_SIZE) as u64,
        )
    }
    /// What retention by time compares against: the largest timestamp, or the
    /// creation time for a segment whose records carry no timestamps.
    pub fn largest_timestamp(&self) -> i64 {
        if self.max_timestamp_so_far >= 0 {
            self.max_timestamp_so_far
        } else {
            self.created_ms
        }
    }

    /// Whether appending `size` more bytes with timestamps up to
    /// `max_timestamp` needs a new segment first (Kafka's `shouldRoll`).
    pub fn should_roll(
        &self,
        config: &LogConfig,
        append_bytes: u64,
        max_timestamp: i64,
        last_offset: i64,
        now_ms: i64,
    ) -> bool {
        if self.is_empty() {
            // An empty segment can only be full in its indexes' offset range.
            return last_offset - self.base_offset > i32::MAX as i64;
        }
        let waited_ms = match self.rolling_based_timestamp {
            // Client timestamps are not bounded (Kafka's are not either).
            Some(ts) => max_timestamp.saturating_sub(ts),
            None => now_ms - self.created_ms,
        };
        self.size_bytes + append_bytes > config.segment_bytes
            || waited_ms > config.segment_ms
            || self.offset_index.is_full()
            || self.time_index.is_full()
            || last_offset - self.base_offset > i32::MAX as i64
    }

    /// Appends validated, offset-assigned batches laid end to end. `headers`
    /// describes each batch in order. The bytes reach the file with direct
    /// I/O before this returns; durability needs [`Segment::flush`].
    pub async fn append(&mut self, bytes: &[u8], headers: &[BatchHeader]) -> LogResult<()> {
        self.append_parts(&[bytes], headers).await
    }

    /// [`Segment::append`] of batches held in several buffers, in order (a
    /// group commit of several produce requests): they are copied into the
    /// DMA buffers without being joined first.
    pub async fn append_parts(
        &mut self,
        parts: &[&[u8]],
        headers: &[BatchHeader],
    ) -> LogResult<()> {
        assert!(!headers.is_empty(), "append of no batches");
        assert!(
            headers[0].base_offset >= self.next_offset,
            "segment append must be monotonic"
        );
        // The index blocks these batches may need are reserved before any
        // byte is written, so that a full disk fails the append as a whole.
        let entries = headers.len();
        self.offset_index
            .reserve(entries)
            .and_then(|()| self.time_index.reserve(entries))
            .map_err(|e| {
                LogError::io(
                    "reserve index space",
                    &self.log_path,
                    headers[0].base_offset,
                    e,
                )
            })?;
        self.write_bytes(parts).await?;
        let mut position = self.size_bytes;
        for h in headers {
            self.index_batch(h, position)?;
            position += h.size_bytes() as u64;
        }
        let len: usize = parts.iter().map(|p| p.len()).sum();
        assert_eq!(position, self.size_bytes + len as u64);
        self.size_bytes = position;
        self.next_offset = headers[headers.len() - 1].next_offset();
        Ok(())
    }

    /// Updates the sparse indexes and timestamp bookkeeping for one batch
    /// stored at `position`, following Kafka's `LogSegment.append`.
    fn index_batch(&mut self, h: &BatchHeader, position: u64) -> LogResult<()> {
        if self.rolling_based_timestamp.is_none() {
            self.rolling_based_timestamp = Some(h.max_timestamp);
        }
        if h.max_timestamp > self.max_timestamp_so_far {
            self.max_timestamp_so_far = h.max_timestamp;
            self.offset_of_max_timestamp_so_far = h.last_offset();
        }
        // One append may carry many batches (follower fetches do), and each
        // may earn an index entry. A sparse index can skip one, so a full
        // index never fails an append; the next append rolls the segment.
        let room = !self.offset_index.is_full() && !self.time_index.is_full();
        if self.bytes_since_last_index_entry > self.index_interval_bytes && room {
            self.offset_index
                .append(h.last_offset(), position as u32)
                .map_err(|e| self.index_error("append offset index", h.last_offset(), e))?;
            self.time_index
                .maybe_append(
                    self.max_timestamp_so_far,
                    self.offset_of_max_timestamp_so_far,
                    false,
                )
                .map_err(|e| self.index_error("append time index", h.last_offset(), e))?;
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += h.size_bytes() as u64;
        Ok(())
    }

    fn index_error(&self, op: &'static str, offset: i64, e: impl std::fmt::Display) -> LogError {
        LogError::io(
            op,
            &self.log_path,
            offset,
            std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
        )
    }

    /// Writes `parts`, in order, at the logical end with aligned DMA writes
    /// that start at the block holding the current tail. Each step writes
    /// at most [`DMA_WRITE_BYTES_MAX`] and rewrites the previous partial
    /// block, so the writes of one segment never overlap in flight.
    ///
    /// A step that rewrites a partial block and goes on past it is two
    /// writes, submitted together: that block, and the blocks after it. The
    /// partial block is written already, while the blocks after it are
    /// allocated ahead and not yet written, and ext4 submits a direct write
    /// inline only when it falls within one extent (an "overwrite"); a
    /// write across both would be handed to an io-wq worker every time.
    async fn write_bytes(&mut self, parts: &[&[u8]]) -> LogResult<()> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let mut source = WriteSource {
            parts,
            part: 0,
            within: 0,
        };
        let mut written = 0usize;
        while written < total {
            let block_start = align_down(self.size_bytes + written as u64);
            let tail_len = self.tail_block.len();
            let chunk_len = (total - written).min(DMA_WRITE_BYTES_MAX - tail_len);
            let data_len = tail_len + chunk_len;
            let padded_len = align_up(data_len as u64) as usize;
            let write_end = block_start + padded_len as u64;
            self.allocate_for(write_end).await;
            // The first write: the partial block alone when there is one
            // and the step goes past it, the whole step otherwise.
            let block = DMA_ALIGNMENT as usize;
            let first_len = if tail_len > 0 && padded_len > block {
                block
            } else {
                padded_len
            };
            let mut first = self.file.alloc_dma_buffer(first_len);
            let out = first.as_bytes_mut();
            out[..tail_len].copy_from_slice(&self.tail_block);
            let first_data = data_len.min(first_len);
            source.copy_into(&mut out[tail_len..first_data]);
            out[first_data..].fill(0);
            let mut second = None;
            if first_len < padded_len {
                let mut rest = self.file.alloc_dma_buffer(padded_len - first_len);
                let out = rest.as_bytes_mut();
                source.copy_into(&mut out[..data_len - first_len]);
                out[data_len - first_len..].fill(0);
                second = Some(rest);
            }
            // The new tail is whatever of this step lies past its last full
            // block; keep it before the buffers move into the writes.
            let full_blocks_len = align_down(data_len as u64) as usize;
            let new_tail = match &second {
                Some(rest) => {
                    rest.as_bytes()[full_blocks_len - first_len..data_len - first_len].to_vec()
                }
                None => first.as_bytes()[full_blocks_len..data_len].to_vec(),
            };
            let write_first = self.file.write_at(first, block_start);
            let (first_written, rest_written) = match second {
                Some(rest) => {
                    let write_rest = self.file.write_at(rest, block_start + first_len as u64);
                    let (a, b) = futures_lite::future::zip(write_first, write_rest).await;
                    (a, Some((b, padded_len - first_len)))
                }
                None => (write_first.await, None),
            };
            self.check_written(first_written, first_len)?;
            if let Some((written, len)) = rest_written {
                self.check_written(written, len)?;
            }
            self.tail_block = new_tail;
            self.file_len = self.file_len.max(write_end);
            written += chunk_len;
        }
        Ok(())
    }

    /// The outcome of one direct write of `expected` bytes: a short write
    /// is an error too, since the log's bytes would not all be there.
    fn check_written(&self, written: glommio::Result<usize, ()>, expected: usize) -> LogResult<()> {
        let n = written
            .map_err(|e| LogError::io("write segment", &self.log_path, self.next_offset, e))?;
        if n != expected {
            return Err(LogError::io(
                "write segment",
                &self.log_path,
                self.next_offset,
                std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    format!("short direct write: {n} of {expected} bytes"),
                ),
            ));
        }
        Ok(())
    }

    /// Grows the file ahead of a write that would end at `write_end` past
    /// its length, so that this write and the next ones land inside the
    /// file and io_uring submits them inline: by as much as the segment
    /// holds, between `SEGMENT_ALLOCATE_AHEAD_MIN_BYTES` and
    /// `SEGMENT_ALLOCATE_AHEAD_BYTES` (a segment that fills slowly reserves
    /// little disk), and not past `segment.bytes` unless the write is.
    async fn allocate_for(&mut self, write_end: u64) {
        if !self.allocates_ahead || write_end <= self.file_len {
            return;
        }
        let ahead = write_end.clamp(
            SEGMENT_ALLOCATE_AHEAD_MIN_BYTES,
            SEGMENT_ALLOCATE_AHEAD_BYTES,
        );
        let target = (write_end + ahead)
            .next_multiple_of(SEGMENT_ALLOCATE_AHEAD_MIN_BYTES)
            .min(align_up(self.segment_bytes))
            .max(write_end);
        self.allocate_to(target).await;
    }

    /// `fallocate` of the file up to `len`, its size included: the blocks
    /// are reserved and read as zeros until written. Not fatal when it
    /// fails: the segment then extends its file by writing, as a file
    /// system without `fallocate` needs, and a real fault (a full disk)
    /// shows in the write that follows.
    async fn allocate_to(&mut self, len: u64) {
        match self.file.pre_allocate(len, false).await {
            Ok(()) => self.file_len = self.file_len.max(len),
            Err(e) => {
                self.allocates_ahead = false;
                let e = std::io::Error::from(e);
                if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
                    tracing::debug!(
                        segment = %self.log_path.display(),
                        "the file system does not allocate ahead (fallocate): writes extend the file"
                    );
                } else {
                    tracing::warn!(
                        segment = %self.log_path.display(),
                        len,
                        "could not allocate segment space ahead of the writes: {e}"
                    );
                }
            }
        }
    }

    /// Re-reads the partial last block after the logical size changed
    /// underneath the write path (open, truncate).
    async fn reload_tail_block(&mut self) -> LogResult<()> {
        let block_start = align_down(self.size_bytes);
        let tail_len = (self.size_bytes - block_start) as usize;
        self.tail_block.clear();
        if tail_len > 0 {
            let r = self
                .file
                .read_at_aligned(block_start, DMA_ALIGNMENT as usize)
                .await
                .map_err(|e| LogError::io("read segment tail", &self.log_path, -1, e))?;
            if r.len() < tail_len {
                return Err(LogError::io(
                    "read segment tail",
                    &self.log_path,
                    -1,
                    std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "file shorter than its logical size",
                    ),
                ));
            }
            self.tail_block.extend_from_slice(&r[..tail_len]);
        }
        Ok(())
    }

    /// Reads `len` bytes at `position` into memory. Used by recovery, tools,
    /// tests and the offset scan; the fetch path hands out file ranges instead.
    pub async fn read_bytes(&self, position: u64, len: usize) -> LogResult<Vec<u8>> {
        let len = len.min(self.size_bytes.saturating_sub(position) as usize);
        if len == 0 {
            return Ok(Vec::new());
        }
        let r = self
            .file
            .read_at(position, len)
            .await
            .map_err(|e| LogError::io("read segment", &self.log_path, -1, e))?;
        Ok(r[..r.len().min(len)].to_vec())
    }

    /// Finds the first batch whose last offset is at least `offset`, starting
    /// the scan no earlier than `start_position` (Kafka's `translateOffset`).
    pub async fn translate_offset(
        &self,
        offset: i64,
        start_position: u64,
    ) -> LogResult<Option<BatchPosition>> {
        let (_, index_position) = self.offset_index.lookup(offset);
        let mut position = start_position.max(index_position as u64);
        while position < self.size_bytes {
            let chunk = self.read_bytes(position, READ_SCAN_CHUNK_BYTES).await?;
            let mut at = 0usize;
            while at + RECORD_BATCH_HEADER_SIZE <= chunk.len() {
                // Only the header need be in hand; the body may lie past the chunk.
                let h =
                    batch::parse_header_only(&chunk[at..]).map_err(|e| LogError::InvalidBatch {
                        partition: self.log_path.display().to_string(),
                        position: position + at as u64,
                        source: e,
                    })?;
                if h.last_offset() >= offset {
                    return Ok(Some(BatchPosition {
                        position: position + at as u64,
                        header: h,
                    }));
                }
                at += h.size_bytes();
            }
            if at == 0 {
                // Less than a header left in the file: it cannot hold a batch.
                break;
            }
            position += at as u64;
        }
        Ok(None)
    }

    /// Byte position where the batch containing `offset` starts, or the end
    /// of the segment when every batch lies below it.
    pub async fn position_of(&self, offset: i64) -> LogResult<u64> {
        Ok(self
            .translate_offset(offset, 0)
            .await?
            .map(|b| b.position)
            .unwrap_or(self.size_bytes))
    }

    /// Drops every batch whose last offset is at least `offset` (Kafka's
    /// `LogSegment.truncateTo`): the batch containing `offset` goes whole.
    /// Returns the number of bytes removed.
    pub async fn truncate_to(&mut self, offset: i64) -> LogResult<u64> {
        let Some(found) = self.translate_offset(offset, 0).await? else {
            return Ok(0);
        };
        let removed = self.size_bytes - found.position;
        self.offset_index.truncate_to(offset);
        self.time_index.truncate_to(offset);
        self.txn_index.truncate_to(offset).await?;
        crate::blocking_pool::gated(self.file.truncate(found.position))
            .await
            .map_err(|e| LogError::io("truncate segment", &self.log_path, offset, e))?;
        self.size_bytes = found.position;
        self.file_len = found.position;
        self.flushed_size_bytes = self.flushed_size_bytes.min(found.position);
        // A rolled segment had its indexes trimmed; it is active again now.
        self.resize_indexes(self.index_max_bytes)?;
        self.reload_tail_block().await?;
        self.rescan_tail_state().await?;
        Ok(removed)
    }

    /// Recomputes the next offset, the max timestamp and the index spacing of
    /// a segment whose batches are trusted, scanning only from the last
    /// offset-index entry to the end.
    async fn rescan_tail_state(&mut self) -> LogResult<()> {
        let start = match self.offset_index.entries() {
            0 => 0,
            n => self.offset_index.entry(n - 1).1 as u64,
        };
        // The time index covers every batch up to its last entry; the scan
        // covers the rest.
        let (ts, ts_offset) = self.time_index.last_entry();
        self.max_timestamp_so_far = ts;
        self.offset_of_max_timestamp_so_far = ts_offset;
        self.next_offset = self.base_offset;
        self.bytes_since_last_index_entry = 0;
        let mut position = start;
        while position < self.size_bytes {
            let chunk = self.read_bytes(position, READ_SCAN_CHUNK_BYTES).await?;
            let mut at = 0usize;
            // Only headers are needed, so a body running past the chunk is fine.
            while at + RECORD_BATCH_HEADER_SIZE <= chunk.len() {
                let h =
                    batch::parse_header_only(&chunk[at..]).map_err(|e| LogError::InvalidBatch {
                        partition: self.log_path.display().to_string(),
                        position: position + at as u64,
                        source: e,
                    })?;
                if h.max_timestamp > self.max_timestamp_so_far {
                    self.max_timestamp_so_far = h.max_timestamp;
                    self.offset_of_max_timestamp_so_far = h.last_offset();
                }
                self.next_offset = h.next_offset();
                self.bytes_since_last_index_entry += h.size_bytes() as u64;
                at += h.size_bytes();
            }
            if at == 0 {
                break;
            }
            position += at as u64;
        }
        self.rolling_based_timestamp = None;
        if !self.is_empty() {
            let head = self.read_bytes(0, RECORD_BATCH_HEADER_SIZE).await?;
            if let Ok(h) = batch::parse_header_only(&head) {
                self.rolling_based_timestamp = Some(h.max_timestamp);
            }
        }
        Ok(())
    }

    /// Opens a segment that a clean shutdown closed: its indexes and size are
    /// trusted after a cheap sanity check. Returns `false` when the check
    /// fails and the caller must run full recovery instead.
    pub async fn load_clean(&mut self) -> LogResult<bool> {
        if self.indexes_missing
            || self.offset_index.sanity_check(self.size_bytes).is_err()
            || self.time_index.sanity_check(self.size_bytes).is_err()
        {
            return Ok(false);
        }
        self.rescan_tail_state().await?;
        if let Err(reason) =
            check_entries(self.txn_index.entries(), self.base_offset, self.next_offset)
        {
            tracing::warn!(
                index = %self.txn_index.path().display(),
                "transaction index fails its sanity check, recovering its segment: {reason}"
            );
            return Ok(false);
        }
        Ok(true)
    }

    /// The aborted transactions whose marker is in this segment.
    pub fn txn_index(&self) -> &TransactionIndex {
        &self.txn_index
    }

    /// Records an aborted transaction whose ABORT marker was just appended
    /// here.
    pub async fn append_aborted_txn(&mut self, txn: AbortedTxn) -> LogResult<()> {
        self.txn_index.append(txn).await
    }

    /// Replaces the transaction index: recovery rebuilt it from the log,
    /// or the cleaner wrote this segment.
    pub async fn rewrite_txn_index(&mut self, entries: Vec<AbortedTxn>) -> LogResult<()> {
        self.txn_index.rewrite(entries).await
    }

    /// Validates every batch from the start, rebuilds both indexes, and cuts
    /// the file at the first invalid byte (Kafka's `LogSegment.recover`).
    /// Returns the number of bytes truncated. Never panics on bad bytes.
    pub async fn recover(&mut self) -> LogResult<u64> {
        // Room to rebuild every entry; trimmed again at the end.
        self.resize_indexes(self.index_max_bytes)?;
        self.offset_index.truncate_to(self.base_offset);
        self.time_index.truncate_to(self.base_offset);
        self.max_timestamp_so_far = NO_TIMESTAMP;
        self.offset_of_max_timestamp_so_far = self.base_offset;
        self.rolling_based_timestamp = None;
        self.bytes_since_last_index_entry = 0;
        self.next_offset = self.base_offset;
        let file_size = self.size_bytes;
        let mut position = 0u64;
        let mut failure: Option<String> = None;
        let mut zeros_only = false;
        'scan: while position < file_size {
            let want = (file_size - position).min(RECOVERY_READ_CHUNK_BYTES as u64);
            let chunk = self.read_range(position, want as usize).await?;
            if chunk.is_empty() {
                break;
            }
            let mut at = 0usize;
            while at < chunk.len() {
                let rest = &chunk[at..];
                if at > 0
                    && rest.len() < LOG_OVERHEAD
                    && position + (chunk.len() as u64) < file_size
                {
                    // The chunk boundary cut the next batch's length prefix
                    // and the file goes on: re-read from its start. Taking
                    // the stub for damage cut valid batches, and every
                    // segment after them, at a 4 MiB boundary.
                    break;
                }
                if let Some((_, len)) = batch::peek_offset_and_size(rest) {
                    let need = len as i64 + LOG_OVERHEAD as i64;
                    let in_file = position + at as u64 + need.max(0) as u64 <= file_size;
                    if len > 0 && need > rest.len() as i64 && in_file {
                        if at > 0 {
                            // Cut by the chunk boundary: re-read from its start.
                            break;
                        }
                        // A single batch larger than the chunk: read it alone.
                        let whole = self.read_range(position, need as usize).await?;
                        match self.accept_recovered(&whole, position) {
                            Ok(size) => {
                                position += size;
                                continue 'scan;
                            }
                            Err(why) => {
                                failure = Some(why);
                                break 'scan;
                            }
                        }
                    }
                }
                match self.accept_recovered(rest, position + at as u64) {
                    Ok(size) => at += size as usize,
                    Err(why) => {
                        // Zeros past the data are what a direct-I/O write
                        // leaves up to the end of its block, and what space
                        // allocated ahead reads as: not damage.
                        zeros_only = rest.iter().all(|&b| b == 0);
                        position += at as u64;
                        failure = Some(why);
                        break 'scan;
                    }
                }
            }
            position += at as u64;
        }
        let valid_end = position.min(file_size);
        let truncated = file_size - valid_end;
        if truncated > 0 {
            let why = failure.unwrap_or_else(|| "incomplete batch".to_string());
            if zeros_only {
                tracing::debug!(
                    segment = %self.log_path.display(),
                    position = valid_end,
                    bytes = truncated,
                    "recovery dropped the zeros past the last batch (direct-I/O padding or space allocated ahead)"
                );
            } else {
                tracing::warn!(
                segment = %self.log_path.display(),
                position = valid_end,
                bytes = truncated,
                    "recovery dropped invalid bytes at the segment tail: {why}"
                );
            }
            crate::blocking_pool::gated(self.file.truncate(valid_end))
                .await
                .map_err(|e| LogError::io("truncate segment", &self.log_path, -1, e))?;
        }
        self.size_bytes = valid_end;
        self.file_len = valid_end;
        self.flushed_size_bytes = valid_end;
        self.indexes_missing = false;
        // As Kafka's LogSegment.recover: the time index gets the segment's
        // max timestamp as its last entry and both indexes are trimmed. The
        // log re-extends the active segment's indexes afterwards.
        self.seal_time_index()?;
        self.offset_index.trim_to_valid_size()?;
        self.time_index.trim_to_valid_size()?;
        self.reload_tail_block().await?;
        Ok(truncated)
    }

    /// Grows (or shrinks) both index files to `max_index_bytes`: the active
    /// segment needs room for new entries after recovery trimmed it.
    pub fn resize_indexes(&mut self, max_index_bytes: u64) -> LogResult<()> {
        self.offset_index.resize(max_index_bytes)?;
        self.time_index.resize(max_index_bytes)?;
        Ok(())
    }

    /// Validates the batch at the front of `bytes` (stored at `position`)
    /// during recovery and indexes it. Returns its size or why it was refused.
    fn accept_recovered(&mut self, bytes: &[u8], position: u64) -> Result<u64, String> {
        let h = batch::validate(bytes, batch::CountRule::Compacted).map_err(|e| e.to_string())?;
        if h.base_offset < self.next_offset {
            return Err(format!(
                "batch base offset {} is below the previous batch's end {}",
                h.base_offset, self.next_offset
            ));
        }
        if h.last_offset() - self.base_offset > i32::MAX as i64 {
            return Err(format!(
                "batch last offset {} overflows the segment",
                h.last_offset()
            ));
        }
        self.index_batch(&h, position).map_err(|e| e.to_string())?;
        self.next_offset = h.next_offset();
        Ok(h.size_bytes() as u64)
    }

    /// Reads `len` bytes at `position` with direct reads, whatever the
    /// logical size says: recovery trusts the file size, not the state.
    async fn read_range(&self, position: u64, len: usize) -> LogResult<ReadResult> {
        self.file
            .read_at(position, len)
            .await
            .map_err(|e| LogError::io("read segment", &self.log_path, -1, e))
    }

    /// Makes everything written so far durable: fdatasync of the log and of
    /// both index files, all through io_uring.
    pub async fn flush(&mut self) -> LogResult<()> {
        self.file
            .fdatasync()
            .await
            .map_err(|e| LogError::io("fdatasync segment", &self.log_path, self.next_offset, e))?;
        sync_index_file(self.offset_index.path()).await?;
        sync_index_file(self.time_index.path()).await?;
        self.txn_index.flush().await?;
        if !self.names_durable {
            // The files' names live in the partition directory: fsync it
            // too, as Kafka's LocalLog.flush does for new segments.
            if let Some(dir) = self.log_path.parent() {
                crate::log::swap::sync_dir(dir).await?;
            }
            self.names_durable = true;
        }
        self.flushed_size_bytes = self.size_bytes;
        Ok(())
    }

    /// Prepares a segment that stops being the active one: the time index gets
    /// its final entry, indexes shrink to their used size, and the log file is
    /// cut back to its logical size (dropping DMA padding). None of it is
    /// synced here: the caller flushes the segment after.
    pub async fn on_become_inactive(&mut self) -> LogResult<()> {
        self.seal_time_index()?;
        self.offset_index.trim_to_valid_size()?;
        self.time_index.trim_to_valid_size()?;
        self.truncate_padding().await
    }

    fn seal_time_index(&mut self) -> LogResult<()> {
        if self.max_timestamp_so_far >= 0 {
            self.time_index
                .maybe_append(
                    self.max_timestamp_so_far,
                    self.offset_of_max_timestamp_so_far,
                    true,
                )
                .map_err(|e| self.index_error("append time index", self.next_offset, e))?;
        }
        Ok(())
    }

    async fn truncate_padding(&mut self) -> LogResult<()> {
        let on_disk = self
            .file
            .file_size()
            .await
            .map_err(|e| LogError::io("stat segment", &self.log_path, -1, e))?;
        if on_disk != self.size_bytes {
            // Not durable yet: the caller flushes the sealed segment next
            // (`PartitionLog::roll`, `close`). Padding a power loss brought
            // back would make recovery see a torn segment here and delete
            // every later one (bug 14).
            crate::blocking_pool::gated(self.file.truncate(self.size_bytes))
                .await
                .map_err(|e| LogError::io("truncate segment", &self.log_path, -1, e))?;
        }
        self.file_len = self.size_bytes;
        Ok(())
    }

    /// Clean close: seal and trim like a rolled segment, flush, close.
    pub async fn close(mut self) -> LogResult<()> {
        self.on_become_inactive().await?;
        self.flush().await?;
        let path = self.log_path.clone();
        drop(self.offset_index);
        drop(self.time_index);
        match Rc::try_unwrap(self.file) {
            Ok(file) => file
                .close()
                .await
                .map_err(|e| LogError::io("close segment", &path, -1, e)),
            // A reader still holds the file; it closes when the last one drops.
            Err(_) => Ok(()),
        }
    }

    /// Deletes the segment's files.
    pub async fn delete(self) -> LogResult<()> {
        let path = self.log_path.clone();
        self.offset_index.delete()?;
        self.time_index.delete()?;
        self.txn_index.delete().await?;
        if let Ok(file) = Rc::try_unwrap(self.file) {
            file.close()
                .await
                .map_err(|e| LogError::io("close segment", &path, -1, e))?;
        }
        glommio::io::remove(&path)
            .await
            .map_err(|e| LogError::io("delete segment", &path, -1, e))
    }

    /// `(offset, timestamp)` of the first record with a timestamp at least
    /// `target_ms`, at or after `start_offset`: the time index gives a
    /// starting batch, then batch headers and (for uncompressed batches) the
    /// records themselves narrow it down. `None` when no batch qualifies.
    pub async fn find_offset_by_timestamp(
        &self,
        target_ms: i64,
        start_offset: i64,
    ) -> LogResult<Option<(i64, i64)>> {
        let (_, hint_offset) = self.time_index.lookup(target_ms);
        let (_, index_position) = self.offset_index.lookup(hint_offset.max(start_offset));
        let mut position = index_position as u64;
        while position < self.size_bytes {
            let head = self.read_bytes(position, RECORD_BATCH_HEADER_SIZE).await?;
            let h = batch::parse_header_only(&head).map_err(|e| LogError::InvalidBatch {
                partition: self.log_path.display().to_string(),
                position,
                source: e,
            })?;
            if h.max_timestamp >= target_ms && h.last_offset() >= start_offset {
                let whole = self.read_bytes(position, h.size_bytes()).await?;
                let (offset, timestamp) = batch::first_offset_at_or_after(&whole, target_ms)
                    .unwrap_or((h.base_offset, h.max_timestamp));
                return Ok(Some((offset.max(start_offset), timestamp)));
            }
            position += h.size_bytes() as u64;
        }
        Ok(None)
    }
}

/// The bytes an append writes, consumed in order across its parts.
struct WriteSource<'a> {
    parts: &'a [&'a [u8]],
    /// The next byte: part index and position inside it.
    part: usize,
    within: usize,
}

impl WriteSource<'_> {
    /// Fills `out` with the next `out.len()` bytes.
    fn copy_into(&mut self, out: &mut [u8]) {
        let mut filled = 0;
        while filled < out.len() {
            let src = &self.parts[self.part][self.within..];
            let n = src.len().min(out.len() - filled);
            out[filled..filled + n].copy_from_slice(&src[..n]);
            filled += n;
            self.within += n;
            if self.within == self.parts[self.part].len() {
                self.part += 1;
                self.within = 0;
            }
        }
    }
}

/// fdatasync of an mmap'ed index through the shard's io_uring (open,
/// fdatasync, close), so that the shard thread never blocks and no other
/// thread is involved. The index keeps no descriptor, so this opens one:
/// fdatasync writes back the file's dirty pages whichever descriptor asks,
/// pages dirtied through the mapping included.
async fn sync_index_file(path: &Path) -> LogResult<()> {
    let file = glommio::io::BufferedFile::open(path)
        .await
        .map_err(|e| LogError::io("open index for fdatasync", path, -1, e))?;
    file.fdatasync()
        .await
        .map_err(|e| LogError::io("fdatasync index", path, -1, e))?;
    file.close()
        .await
        .map_err(|e| LogError::io("close index", path, -1, e))
}
