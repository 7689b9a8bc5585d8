//! `dump_file`: prints a partition file the way Kafka's `kafka-dump-log.sh`
//! (`org.apache.kafka.tools.DumpLogSegments`) does.
//!
//! The file type comes from the name, as in Kafka:
//!
//! | file                                   | one line per                                   |
//! |----------------------------------------|------------------------------------------------|
//! | `<20-digit base offset>.log`           | record batch (Kafka's shallow iteration)       |
//! | `<base>.index`                         | entry: `offset: O position: P`                 |
//! | `<base>.timeindex`                     | entry: `timestamp: T offset: O`                |
//! | `<base>.txnindex`                      | aborted transaction: `version: 0 producerId: P firstOffset: F lastOffset: L lastStableOffset: S` |
//! | `leader-epoch-checkpoint`              | entry: `epoch: E start offset: O`              |
//! | `recovery-point-offset-checkpoint` etc.| entry: `topic: T partition: P offset: O`       |
//!
//! Batch and index lines are Kafka's, field for field, so that the output of
//! the two tools can be diffed. Where they differ, it is on purpose:
//!
//! - `isvalid` is pinlog's full header validation (CRC-32C *and* the record
//!   count against the offset range, as recovery checks them), not only the
//!   CRC; an invalid batch gets a second line saying why.
//! - The dump stops at the first byte that cannot start a batch and prints
//!   `invalid bytes at the end: N bytes at position P: <reason>`. Kafka
//!   prints a similar line for a torn batch but throws on zero padding; here
//!   the reason says whether the tail is all zeros (padding or preallocated
//!   space left by an unclean shutdown) or garbage.
//! - An index dump stops at the first all-zero entry after the first, as
//!   Kafka's does for a preallocated, untrimmed index, and then says how many
//!   zero entries it skipped. Kafka stops at any later entry whose relative
//!   offset is 0; here such an entry with a non-zero position is printed,
//!   because it is corruption an operator should see.
//! - Under every control batch it prints the transaction marker's record
//!   (`| offset: O ... endTxnMarker: COMMIT coordinatorEpoch: E`), which
//!   Kafka prints only with `--deep-iteration`.
//! - Index dumps print entries only (and, like Kafka, `<path> is empty.` for
//!   an offset index without entries). Cross-checking them against the log
//!   is the verifier's job ([`crate::tools::verify`]).
//!
//! Files are read with blocking `std::fs`, one batch or one buffered entry at
//! a time (see [`crate::tools`] for why).

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::constants::{
    LEADER_EPOCH_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE, OFFSET_INDEX_ENTRY_SIZE,
    RECORD_BATCH_HEADER_SIZE, RECOVERY_POINT_CHECKPOINT_FILE, TIME_INDEX_ENTRY_SIZE,
};
use crate::error::{BatchError, LogError};
use crate::log::batch::{self, BatchHeader, CountRule};
use crate::log::checkpoint;
use crate::log::control_batch;
use crate::log::segment::parse_segment_file_name;
use crate::log::transaction_index::{decode_entries, TXN_INDEX_ENTRY_BYTES, TXN_INDEX_FILE_SUFFIX};

/// Kafka's per-data-directory checkpoint of each partition's high watermark.
/// pinlog does not write it, but it has the same format as the others.
pub const REPLICATION_OFFSET_CHECKPOINT_FILE: &str = "replication-offset-checkpoint";
/// Kafka's log cleaner checkpoint; same format.
pub const CLEANER_OFFSET_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";

/// Bytes read at a time when scanning an unreadable tail for non-zero bytes
/// or when reading index entries.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Kafka's `DefaultRecordBatch.DELETE_HORIZON_FLAG_MASK`: the log cleaner
/// stored its delete horizon in the base timestamp.
const DELETE_HORIZON_FLAG: i16 = 0x40;

/// What a file in a partition (or data) directory is, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A segment's record batches.
    Log { base_offset: i64 },
    /// A segment's offset index.
    OffsetIndex { base_offset: i64 },
    /// A segment's time index.
    TimeIndex { base_offset: i64 },
    /// A segment's aborted-transaction index.
    TxnIndex { base_offset: i64 },
    /// A partition's `leader-epoch-checkpoint`.
    LeaderEpochCheckpoint,
    /// A data directory's `topic partition offset` checkpoint.
    OffsetCheckpoint,
}

impl FileKind {
    /// Classifies `path` by its file name; `None` for anything else.
    pub fn of(path: &Path) -> Option<FileKind> {
        let name = path.file_name()?.to_str()?;
        if let Some(base_offset) = parse_segment_file_name(name, "log") {
            return Some(FileKind::Log { base_offset });
        }
        if let Some(base_offset) = parse_segment_file_name(name, "index") {
            return Some(FileKind::OffsetIndex { base_offset });
        }
        if let Some(base_offset) = parse_segment_file_name(name, "timeindex") {
            return Some(FileKind::TimeIndex { base_offset });
        }
        if let Some(base_offset) = parse_segment_file_name(name, TXN_INDEX_FILE_SUFFIX) {
            return Some(FileKind::TxnIndex { base_offset });
        }
        match name {
            LEADER_EPOCH_CHECKPOINT_FILE => Some(FileKind::LeaderEpochCheckpoint),
            RECOVERY_POINT_CHECKPOINT_FILE
            | LOG_START_OFFSET_CHECKPOINT_FILE
            | REPLICATION_OFFSET_CHECKPOINT_FILE
            | CLEANER_OFFSET_CHECKPOINT_FILE => Some(FileKind::OffsetCheckpoint),
            _ => None,
        }
    }
}

/// Why a file could not be dumped at all. Bad bytes inside a file are not
/// errors: they are printed and counted in [`DumpSummary`].
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error(
        "cannot dump {path}: the name is neither a segment file (<20-digit base offset>.log, \
         .index, .timeindex or .txnindex) nor a checkpoint ({LEADER_EPOCH_CHECKPOINT_FILE}, \
         {RECOVERY_POINT_CHECKPOINT_FILE}, {LOG_START_OFFSET_CHECKPOINT_FILE}, \
         {REPLICATION_OFFSET_CHECKPOINT_FILE}, {CLEANER_OFFSET_CHECKPOINT_FILE})"
    )]
    UnknownFile { path: PathBuf },
    #[error("{op} failed on {path} at byte {position}: {source}")]
    Read {
        op: &'static str,
        path: PathBuf,
        position: u64,
        #[source]
        source: io::Error,
    },
    #[error("writing the dump of {path} failed: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The checkpoint does not parse; the error names the file and line.
    #[error(transparent)]
    Checkpoint(LogError),
}

/// Bytes at the end of a file that hold no batch or no whole entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTail {
    /// Where the unreadable bytes start.
    pub position: u64,
    /// How many bytes there are, up to the end of the file.
    pub len_bytes: u64,
    /// Whether every one of them is zero: padding from a direct-I/O write or
    /// preallocated space, which a clean shutdown trims.
    pub all_zero: bool,
    /// Why the first of them cannot start a batch (or an entry).
    pub reason: String,
}

impl fmt::Display for InvalidTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid bytes at the end: {} bytes at position {}: {}",
            self.len_bytes, self.position, self.reason
        )?;
        if self.all_zero {
            write!(
                f,
                " (all zero: padding or preallocated space that a clean shutdown trims)"
            )?;
        }
        Ok(())
    }
}

/// What a dump found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpSummary {
    pub kind: FileKind,
    /// Batches, index entries or checkpoint entries printed.
    pub entries: u64,
    /// `.log` only: batches printed with `isvalid: false`.
    pub invalid_batches: u64,
    /// Bytes at the end that were not printed because they are unreadable.
    pub invalid_tail: Option<InvalidTail>,
    /// Index files only: all-zero entries not printed (an untrimmed index).
    pub zero_entries: u64,
}

impl DumpSummary {
    fn new(kind: FileKind) -> Self {
        DumpSummary {
            kind,
            entries: 0,
            invalid_batches: 0,
            invalid_tail: None,
            zero_entries: 0,
        }
    }

    /// True when every byte of the file was printed as valid content.
    pub fn is_clean(&self) -> bool {
        self.invalid_batches == 0 && self.invalid_tail.is_none() && self.zero_entries == 0
    }
}

/// Prints the contents of `path` to `out`, one line per batch or entry, and
/// returns what it found. See the module documentation for the formats.
pub fn dump_file(path: &Path, out: &mut impl Write) -> Result<DumpSummary, DumpError> {
    let kind = FileKind::of(path).ok_or_else(|| DumpError::UnknownFile {
        path: path.to_path_buf(),
    })?;
    let mut out = Out { out, path };
    out.line(format_args!("Dumping {}", path.display()))?;
    match kind {
        FileKind::Log { base_offset } => dump_log(path, base_offset, kind, &mut out),
        FileKind::OffsetIndex { base_offset } => dump_index(
            path,
            kind,
            OFFSET_INDEX_ENTRY_SIZE,
            |entry| {
                let (offset, position) = decode_offset_entry(base_offset, entry);
                format!("offset: {offset} position: {position}")
            },
            &mut out,
        ),
        FileKind::TimeIndex { base_offset } => dump_index(
            path,
            kind,
            TIME_INDEX_ENTRY_SIZE,
            |entry| {
                let (timestamp, offset) = decode_time_entry(base_offset, entry);
                format!("timestamp: {timestamp} offset: {offset}")
            },
            &mut out,
        ),
        FileKind::TxnIndex { .. } => dump_index(
            path,
            kind,
            TXN_INDEX_ENTRY_BYTES,
            |entry| {
                // Kafka's DumpLogSegments line for an AbortedTxn.
                let version = i16::from_be_bytes([entry[0], entry[1]]);
                match decode_entries(entry) {
                    Ok(e) => format!(
                        "version: {version} producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
                        e[0].producer_id, e[0].first_offset, e[0].last_offset, e[0].last_stable_offset
                    ),
                    Err(reason) => format!("invalid entry: {reason}"),
                }
            },
            &mut out,
        ),
        FileKind::LeaderEpochCheckpoint => {
            let text = read_small_file(path)?;
            let entries =
                checkpoint::decode_epoch_checkpoint(path, &text).map_err(DumpError::Checkpoint)?;
            for entry in &entries {
                out.line(format_args!(
                    "epoch: {} start offset: {}",
                    entry.epoch, entry.start_offset
                ))?;
            }
            let mut summary = DumpSummary::new(kind);
            summary.entries = entries.len() as u64;
            Ok(summary)
        }
        FileKind::OffsetCheckpoint => {
            let text = read_small_file(path)?;
            let entries =
                checkpoint::decode_offset_checkpoint(path, &text).map_err(DumpError::Checkpoint)?;
            for entry in &entries {
                out.line(format_args!(
                    "topic: {} partition: {} offset: {}",
                    entry.topic, entry.partition, entry.offset
                ))?;
            }
            let mut summary = DumpSummary::new(kind);
            summary.entries = entries.len() as u64;
            Ok(summary)
        }
    }
}

/// The dump's output, with write errors labelled by the file being dumped.
struct Out<'a, W: Write> {
    out: &'a mut W,
    path: &'a Path,
}

impl<W: Write> Out<'_, W> {
    fn line(&mut self, args: fmt::Arguments<'_>) -> Result<(), DumpError> {
        writeln!(self.out, "{args}").map_err(|source| DumpError::Write {
            path: self.path.to_path_buf(),
            source,
        })
    }
}

fn dump_log(
    path: &Path,
    base_offset: i64,
    kind: FileKind,
    out: &mut Out<'_, impl Write>,
) -> Result<DumpSummary, DumpError> {
    let mut summary = DumpSummary::new(kind);
    let mut reader = LogFileReader::open(path)?;
    out.line(format_args!("Log starting offset: {base_offset}"))?;
    while let Some(item) = reader.next_item()? {
        match item {
            LogItem::Batch {
                position,
                header,
                error,
            } => {
                summary.entries += 1;
                out.line(format_args!(
                    "{}",
                    BatchLine {
                        header: &header,
                        position,
                        is_valid: error.is_none(),
                    }
                ))?;
                if let Some(error) = error {
                    summary.invalid_batches += 1;
                    out.line(format_args!(
                        "invalid batch at position {position}: {error}"
                    ))?;
                } else if header.is_control() {
                    out.line(format_args!(
                        "{}",
                        MarkerLine {
                            header: &header,
                            batch: reader.batch_bytes(),
                        }
                    ))?;
                }
            }
            LogItem::Unreadable(tail) => {
                out.line(format_args!("{tail}"))?;
                summary.invalid_tail = Some(tail);
            }
        }
    }
    Ok(summary)
}

/// A transaction marker's record, as Kafka's `--deep-iteration` prints it
/// (`| offset: ... endTxnMarker: COMMIT coordinatorEpoch: 0`): pinlog's
/// dump prints it under every control batch, also without deep iteration.
struct MarkerLine<'a> {
    header: &'a BatchHeader,
    batch: &'a [u8],
}

impl fmt::Display for MarkerLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = self.header;
        let timestamp_type = if h.is_log_append_time() {
            "LogAppendTime"
        } else {
            "CreateTime"
        };
        let record = batch::records(self.batch)
            .ok()
            .and_then(|mut records| records.next())
            .and_then(Result::ok);
        let Some(r) = record else {
            return write!(
                f,
                "| offset: {} control record does not decode",
                h.base_offset
            );
        };
        let len = |field: Option<&[u8]>| field.map_or(-1, |b| b.len() as i64);
        write!(
            f,
            "| offset: {} {timestamp_type}: {} keySize: {} valueSize: {} sequence: {} headerKeys: []",
            h.base_offset.saturating_add(r.offset_delta),
            h.base_timestamp.saturating_add(r.timestamp_delta),
            len(r.key),
            len(r.value),
            h.base_sequence,
        )?;
        match control_batch::marker_of(self.batch, h) {
            Ok(Some(m)) => write!(
                f,
                " endTxnMarker: {} coordinatorEpoch: {}",
                m.kind.name(),
                m.coordinator_epoch
            ),
            Ok(None) => write!(f, " (not a transaction marker)"),
            Err(reason) => write!(f, " invalid marker: {reason}"),
        }
    }
}

/// Kafka's shallow-iteration line for a v2 batch (`DumpLogSegments`'
/// `printBatchLevel`), field for field.
struct BatchLine<'a> {
    header: &'a BatchHeader,
    position: u64,
    is_valid: bool,
}

impl fmt::Display for BatchLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = self.header;
        let delete_horizon = if h.attributes & DELETE_HORIZON_FLAG != 0 {
            format!("OptionalLong[{}]", h.base_timestamp)
        } else {
            "OptionalLong.empty".to_string()
        };
        let timestamp_type = if h.is_log_append_time() {
            "LogAppendTime"
        } else {
            "CreateTime"
        };
        write!(
            f,
            "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} \
             producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} \
             isControl: {} deleteHorizonMs: {} position: {} {}: {} size: {} magic: {} \
             compresscodec: {} crc: {} isvalid: {}",
            h.base_offset,
            // Wrapping, so that a garbage delta prints instead of panicking.
            h.base_offset.wrapping_add(i64::from(h.last_offset_delta)),
            h.record_count,
            h.base_sequence,
            last_sequence(h.base_sequence, h.last_offset_delta),
            h.producer_id,
            h.producer_epoch,
            h.partition_leader_epoch,
            h.is_transactional(),
            h.is_control(),
            delete_horizon,
            self.position,
            timestamp_type,
            h.max_timestamp,
            h.size_bytes(),
            h.magic,
            compression_name(h.compression()),
            h.crc,
            self.is_valid,
        )
    }
}

/// Kafka's `DefaultRecordBatch.lastSequence`: sequences wrap at `i32::MAX`
/// back to 0, and -1 means the producer is not idempotent.
fn last_sequence(base_sequence: i32, last_offset_delta: i32) -> i32 {
    if base_sequence == -1 {
        return -1;
    }
    if last_offset_delta >= 0 && base_sequence > i32::MAX - last_offset_delta {
        return last_offset_delta
            .wrapping_sub(i32::MAX.wrapping_sub(base_sequence))
            .wrapping_sub(1);
    }
    base_sequence.wrapping_add(last_offset_delta)
}

/// Kafka's `CompressionType.name` for the codec id in the attributes.
fn compression_name(codec: u8) -> &'static str {
    match codec {
        0 => "none",
        1 => "gzip",
        2 => "snappy",
        3 => "lz4",
        4 => "zstd",
        _ => "unknown",
    }
}

/// `(offset, position)` of an offset-index entry, read the way pinlog reads
/// it: the relative offset is unsigned.
pub(crate) fn decode_offset_entry(base_offset: i64, entry: &[u8]) -> (i64, u32) {
    let relative_offset = u32_at(entry, 0);
    (
        base_offset.saturating_add(i64::from(relative_offset)),
        u32_at(entry, 4),
    )
}

/// `(timestamp, offset)` of a time-index entry.
pub(crate) fn decode_time_entry(base_offset: i64, entry: &[u8]) -> (i64, i64) {
    let mut timestamp = [0u8; 8];
    if let Some(bytes) = entry.get(0..8) {
        timestamp.copy_from_slice(bytes);
    }
    (
        i64::from_be_bytes(timestamp),
        base_offset.saturating_add(i64::from(u32_at(entry, 8))),
    )
}

/// The big-endian `u32` at `at`, or 0 when the slice is too short (callers
/// always pass whole entries; this only keeps a bug from becoming a panic).
pub(crate) fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    if let Some(b) = bytes.get(at..at + 4) {
        word.copy_from_slice(b);
    }
    u32::from_be_bytes(word)
}

fn dump_index(
    path: &Path,
    kind: FileKind,
    entry_size_bytes: usize,
    describe: impl Fn(&[u8]) -> String,
    out: &mut Out<'_, impl Write>,
) -> Result<DumpSummary, DumpError> {
    let mut summary = DumpSummary::new(kind);
    let mut entries = IndexEntries::open(path, entry_size_bytes)?;
    if entries.whole_entries() == 0 && matches!(kind, FileKind::OffsetIndex { .. }) {
        // Kafka's line for an offset index without entries (it prints
        // nothing for an empty time index).
        out.line(format_args!("{} is empty.", path.display()))?;
    }
    while let Some((n, entry)) = entries.next_entry()? {
        if n > 0 && entry.iter().all(|&b| b == 0) {
            // A preallocated index that was never trimmed: the rest is the
            // zero-filled reserve, as Kafka's dump assumes too.
            summary.zero_entries = entries.whole_entries() - n;
            out.line(format_args!(
                "skipped {} all-zero entries from entry {n} (byte {}): preallocated space that a clean shutdown trims",
                summary.zero_entries,
                n * entry_size_bytes as u64
            ))?;
            return Ok(summary);
        }
        out.line(format_args!("{}", describe(entry)))?;
        summary.entries += 1;
    }
    if let Some(tail) = entries.partial_tail() {
        out.line(format_args!("{tail}"))?;
        summary.invalid_tail = Some(tail);
    }
    Ok(summary)
}

/// Reads a checkpoint whole. They are a few hundred bytes; the allocation is
/// bounded by the file's length.
fn read_small_file(path: &Path) -> Result<Vec<u8>, DumpError> {
    std::fs::read(path).map_err(|source| DumpError::Read {
        op: "read checkpoint",
        path: path.to_path_buf(),
        position: 0,
        source,
    })
}

/// Index entries read through a buffer, one at a time.
pub(crate) struct IndexEntries {
    path: PathBuf,
    reader: BufReader<File>,
    len_bytes: u64,
    entry_size_bytes: usize,
    next: u64,
    entry: Vec<u8>,
}

impl IndexEntries {
    pub(crate) fn open(path: &Path, entry_size_bytes: usize) -> Result<Self, DumpError> {
        let (file, len_bytes) = open_with_len(path, "open index")?;
        Ok(IndexEntries {
            path: path.to_path_buf(),
            reader: BufReader::with_capacity(READ_CHUNK_BYTES, file),
            len_bytes,
            entry_size_bytes,
            next: 0,
            entry: vec![0; entry_size_bytes],
        })
    }

    /// Whole entries in the file, zero-filled ones included.
    pub(crate) fn whole_entries(&self) -> u64 {
        self.len_bytes / self.entry_size_bytes as u64
    }

    /// The next entry and its number, or `None` after the last whole entry.
    pub(crate) fn next_entry(&mut self) -> Result<Option<(u64, &[u8])>, DumpError> {
        if self.next >= self.whole_entries() {
            return Ok(None);
        }
        let n = self.next;
        self.reader
            .read_exact(&mut self.entry)
            .map_err(|source| DumpError::Read {
                op: "read index entry",
                path: self.path.clone(),
                position: n * self.entry_size_bytes as u64,
                source,
            })?;
        self.next += 1;
        Ok(Some((n, &self.entry)))
    }

    /// Bytes after the last whole entry, which no reader can use.
    pub(crate) fn partial_tail(&self) -> Option<InvalidTail> {
        let whole_bytes = self.whole_entries() * self.entry_size_bytes as u64;
        let len_bytes = self.len_bytes - whole_bytes;
        (len_bytes > 0).then(|| InvalidTail {
            position: whole_bytes,
            len_bytes,
            all_zero: false,
            reason: format!(
                "the file is {} bytes long, not a multiple of the {}-byte entry size",
                self.len_bytes, self.entry_size_bytes
            ),
        })
    }
}

fn open_with_len(path: &Path, op: &'static str) -> Result<(File, u64), DumpError> {
    let read_error = |source| DumpError::Read {
        op,
        path: path.to_path_buf(),
        position: 0,
        source,
    };
    let file = File::open(path).map_err(read_error)?;
    let len_bytes = file.metadata().map_err(read_error)?.len();
    Ok((file, len_bytes))
}

/// What reading the next batch of a `.log` file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LogItem {
    /// A batch whose header is readable and whose claimed length fits in the
    /// file. `error` says why it is nevertheless invalid (CRC, record count).
    Batch {
        position: u64,
        header: BatchHeader,
        error: Option<BatchError>,
    },
    /// The bytes from a position to the end of the file, which hold no
    /// readable batch. Always the last item.
    Unreadable(InvalidTail),
}

/// Reads a `.log` file one batch at a time with positioned reads.
///
/// Like Kafka's `FileRecords` iteration, it trusts a batch's length once the
/// header parses, so a batch with a bad CRC is reported and stepped over. It
/// stops at a header that does not parse or a length that runs past the end
/// of the file; everything from there is one [`LogItem::Unreadable`].
pub(crate) struct LogFileReader {
    path: PathBuf,
    file: File,
    len_bytes: u64,
    position: u64,
    /// The current batch. Never longer than the bytes left in the file.
    buf: Vec<u8>,
    finished: bool,
}

impl LogFileReader {
    pub(crate) fn open(path: &Path) -> Result<Self, DumpError> {
        let (file, len_bytes) = open_with_len(path, "open segment")?;
        Ok(LogFileReader {
            path: path.to_path_buf(),
            file,
            len_bytes,
            position: 0,
            buf: Vec::new(),
            finished: false,
        })
    }

    pub(crate) fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    /// The bytes of the batch last returned by [`LogFileReader::next_item`].
    pub(crate) fn batch_bytes(&self) -> &[u8] {
        &self.buf
    }

    pub(crate) fn next_item(&mut self) -> Result<Option<LogItem>, DumpError> {
        if self.finished || self.position >= self.len_bytes {
            return Ok(None);
        }
        let position = self.position;
        let remaining = self.len_bytes - position;
        let head_len = remaining.min(RECORD_BATCH_HEADER_SIZE as u64) as usize;
        self.buf.clear();
        self.buf.resize(head_len, 0);
        read_exact_at(&self.file, &self.path, &mut self.buf, position)?;
        let header = match batch::parse_header_only(&self.buf) {
            Ok(header) => header,
            Err(error) => return self.finish(error.to_string()).map(Some),
        };
        let size_bytes = header.size_bytes() as u64;
        if size_bytes > remaining {
            return self
                .finish(format!(
                    "the batch claims {size_bytes} bytes but only {remaining} remain in the file"
                ))
                .map(Some);
        }
        // Bounded: size_bytes <= remaining <= the file's length.
        self.buf.resize(size_bytes as usize, 0);
        read_exact_at(
            &self.file,
            &self.path,
            &mut self.buf[head_len..],
            position + head_len as u64,
        )?;
        let error = batch::validate(&self.buf, CountRule::Compacted).err();
        self.position += size_bytes;
        Ok(Some(LogItem::Batch {
            position,
            header,
            error,
        }))
    }

    /// Ends the iteration with the rest of the file as one unreadable tail.
    fn finish(&mut self, reason: String) -> Result<LogItem, DumpError> {
        self.finished = true;
        self.buf.clear();
        let position = self.position;
        let all_zero = self.is_zero_from(position)?;
        Ok(LogItem::Unreadable(InvalidTail {
            position,
            len_bytes: self.len_bytes - position,
            all_zero,
            reason,
        }))
    }

    /// Whether every byte from `position` to the end is zero, read in
    /// bounded chunks.
    fn is_zero_from(&self, mut position: u64) -> Result<bool, DumpError> {
        let mut chunk = vec![0u8; READ_CHUNK_BYTES.min((self.len_bytes - position) as usize)];
        while position < self.len_bytes {
            let len = chunk.len().min((self.len_bytes - position) as usize);
            read_exact_at(&self.file, &self.path, &mut chunk[..len], position)?;
            if chunk[..len].iter().any(|&b| b != 0) {
                return Ok(false);
            }
            position += len as u64;
        }
        Ok(true)
    }
}

fn read_exact_at(file: &File, path: &Path, buf: &mut [u8], position: u64) -> Result<(), DumpError> {
    file.read_exact_at(buf, position)
        .map_err(|source| DumpError::Read {
            op: "read segment",
            path: path.to_path_buf(),
            position,
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{build_batch, set_log_append_time, BatchSpec, RecordSpec};

    fn batch(base_offset: i64, records: usize, leader_epoch: i32, base_timestamp: i64) -> Vec<u8> {
        let value = b"value";
        let specs: Vec<RecordSpec> = (0..records)
            .map(|i| (i as i64, Some(&b"k"[..]), &value[..]))
            .collect();
        build_batch(&BatchSpec {
            base_offset,
            leader_epoch,
            base_timestamp,
            records: &specs,
        })
    }

    fn dump(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> (DumpSummary, String) {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        let mut out = Vec::new();
        let summary = dump_file(&path, &mut out).expect("dump");
        (summary, String::from_utf8(out).expect("utf-8"))
    }

    #[test]
    fn log_lines_match_kafkas_format() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = batch(100, 2, 3, 1_000);
        let mut second = batch(102, 3, 4, 2_000);
        set_log_append_time(&mut second, 9_999);
        let mut bytes = first.clone();
        bytes.extend_from_slice(&second);
        let (summary, text) = dump(&dir, "00000000000000000100.log", &bytes);
        assert!(summary.is_clean(), "{summary:?}");
        assert_eq!(summary.entries, 2);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("Dumping ") && lines[0].ends_with(".log"));
        assert_eq!(lines[1], "Log starting offset: 100");
        let crc = batch::parse_header(&first).expect("header").crc;
        assert_eq!(
            lines[2],
            format!(
                "baseOffset: 100 lastOffset: 101 count: 2 baseSequence: -1 lastSequence: -1 \
                 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: false \
                 isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1001 \
                 size: {} magic: 2 compresscodec: none crc: {crc} isvalid: true",
                first.len()
            )
        );
        assert!(
            lines[3].contains(&format!(
                "partitionLeaderEpoch: 4 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: {} LogAppendTime: 9999",
                first.len()
            )),
            "{}",
            lines[3]
        );
    }

    #[test]
    fn bad_crc_is_printed_and_stepped_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut first = batch(0, 2, 0, 1_000);
        let last = first.len() - 1;
        first[last] ^= 0x01;
        let mut bytes = first.clone();
        bytes.extend_from_slice(&batch(2, 1, 0, 1_000));
        let (summary, text) = dump(&dir, "00000000000000000000.log", &bytes);
        assert_eq!(summary.entries, 2);
        assert_eq!(summary.invalid_batches, 1);
        assert!(summary.invalid_tail.is_none());
        assert!(text.contains("isvalid: false"), "{text}");
        assert!(text.contains("invalid batch at position 0: record batch CRC mismatch"));
        assert!(text.contains("baseOffset: 2 lastOffset: 2"), "{text}");
    }

    #[test]
    fn torn_batch_and_zero_padding_end_the_dump() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = batch(0, 2, 0, 1_000);
        let second = batch(2, 2, 0, 1_000);
        let mut torn = first.clone();
        torn.extend_from_slice(&second[..second.len() - 5]);
        let (summary, text) = dump(&dir, "00000000000000000000.log", &torn);
        let tail = summary.invalid_tail.expect("torn tail");
        assert_eq!(tail.position, first.len() as u64);
        assert_eq!(tail.len_bytes, second.len() as u64 - 5);
        assert!(!tail.all_zero);
        assert!(
            text.contains(&format!(
                "invalid bytes at the end: {} bytes at position {}",
                second.len() - 5,
                first.len()
            )),
            "{text}"
        );

        let mut padded = first.clone();
        padded.resize(4096, 0);
        let (summary, text) = dump(&dir, "00000000000000000000.log", &padded);
        let tail = summary.invalid_tail.expect("padding");
        assert!(tail.all_zero, "{tail:?}");
        assert_eq!(tail.len_bytes, 4096 - first.len() as u64);
        assert!(text.contains("all zero"), "{text}");
    }

    #[test]
    fn index_dumps_stop_at_the_zero_filled_reserve() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index = Vec::new();
        for (relative_offset, position) in [(4u32, 0u32), (9, 4_200)] {
            index.extend_from_slice(&relative_offset.to_be_bytes());
            index.extend_from_slice(&position.to_be_bytes());
        }
        index.resize(80, 0);
        let (summary, text) = dump(&dir, "00000000000000000050.index", &index);
        assert_eq!(summary.entries, 2);
        assert_eq!(summary.zero_entries, 8);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "offset: 54 position: 0");
        assert_eq!(lines[2], "offset: 59 position: 4200");
        assert!(lines[3].starts_with("skipped 8 all-zero entries from entry 2 (byte 16)"));

        let mut time_index = Vec::new();
        time_index.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        time_index.extend_from_slice(&7u32.to_be_bytes());
        time_index.extend_from_slice(&[1, 2, 3]);
        let (summary, text) = dump(&dir, "00000000000000000050.timeindex", &time_index);
        assert_eq!(summary.entries, 1);
        assert!(
            text.contains("timestamp: 1700000000000 offset: 57"),
            "{text}"
        );
        let tail = summary.invalid_tail.expect("partial entry");
        assert_eq!((tail.position, tail.len_bytes), (12, 3));
    }

    #[test]
    fn a_first_entry_of_zeros_is_a_real_entry() {
        // Offset == base offset at position 0 is what a one-record first
        // batch gives; only later zero entries are preallocation.
        let dir = tempfile::tempdir().expect("tempdir");
        let (summary, text) = dump(&dir, "00000000000000000000.index", &[0; 8]);
        assert_eq!(summary.entries, 1);
        assert!(text.contains("offset: 0 position: 0"));
        let (summary, text) = dump(&dir, "00000000000000000000.index", &[]);
        assert_eq!(summary.entries, 0);
        assert!(summary.is_clean());
        assert!(
            text.ends_with("00000000000000000000.index is empty.\n"),
            "{text}"
        );
    }

    #[test]
    fn checkpoints_are_printed_entry_by_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (summary, text) = dump(&dir, "leader-epoch-checkpoint", b"0\n2\n0 0\n3 120\n");
        assert_eq!(summary.entries, 2);
        assert!(text.contains("epoch: 0 start offset: 0\nepoch: 3 start offset: 120\n"));
        let (summary, text) = dump(
            &dir,
            "recovery-point-offset-checkpoint",
            b"0\n1\nmy-topic 4 900\n",
        );
        assert_eq!(summary.entries, 1);
        assert!(
            text.contains("topic: my-topic partition: 4 offset: 900"),
            "{text}"
        );

        let path = dir.path().join("leader-epoch-checkpoint");
        std::fs::write(&path, b"0\n2\n0 0\n").expect("write");
        let error = dump_file(&path, &mut Vec::new()).expect_err("short checkpoint");
        assert!(matches!(
            error,
            DumpError::Checkpoint(LogError::CorruptCheckpoint { line: 4, .. })
        ));
    }

    #[test]
    fn unknown_names_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in ["notes.txt", "segment.log", "0001.index"] {
            let path = dir.path().join(name);
            std::fs::write(&path, b"x").expect("write");
            assert!(matches!(
                dump_file(&path, &mut Vec::new()),
                Err(DumpError::UnknownFile { .. })
            ));
        }
    }

    #[test]
    fn last_sequence_wraps_like_kafka() {
        assert_eq!(last_sequence(-1, 5), -1);
        assert_eq!(last_sequence(10, 4), 14);
        assert_eq!(last_sequence(i32::MAX - 1, 3), 1);
        assert_eq!(last_sequence(i32::MAX, 0), i32::MAX);
    }

    #[test]
    fn random_bytes_never_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let valid = batch(0, 3, 1, 5_000);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..300 {
            let len = (next() % 400) as usize;
            let mut bytes: Vec<u8> = if round % 2 == 0 {
                (0..len).map(|_| next() as u8).collect()
            } else {
                // Mostly valid: a real batch with a few bytes flipped, so the
                // header parses and the later checks run.
                let mut b = valid.clone();
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % b.len();
                    b[at] = next() as u8;
                }
                b
            };
            if round % 7 == 0 {
                bytes.truncate(len.min(bytes.len()));
            }
            for name in [
                "00000000000000000000.log",
                "00000000000000000000.index",
                "00000000000000000000.timeindex",
                "leader-epoch-checkpoint",
                "log-start-offset-checkpoint",
            ] {
                let path = dir.path().join(name);
                std::fs::write(&path, &bytes).expect("write");
                let mut out = Vec::new();
                match dump_file(&path, &mut out) {
                    Ok(_) | Err(DumpError::Checkpoint(_)) => {}
                    Err(other) => panic!("{name}: unexpected error {other}"),
                }
            }
        }
    }
}
