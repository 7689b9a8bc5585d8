//! Typed errors for the storage layer.
//!
//! Every variant an operator can cause carries the context needed to act on
//! it: the partition, the file, the byte position or offset, and the
//! operation that failed. I/O errors keep their `std::io::Error` cause.

use std::path::PathBuf;

/// Why a record batch was rejected. Kept separate from [`LogError`] so that
/// the batch validator stays a pure function with no file context.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("record batch needs at least {needed} bytes but only {available} remain")]
    Truncated { needed: usize, available: usize },
    #[error("record batch length {length} is below the v2 header size")]
    LengthTooSmall { length: i32 },
    #[error("record batch magic {magic} is not supported; only RecordBatch v2 (magic 2) is")]
    UnsupportedMagic { magic: i8 },
    #[error("record batch CRC mismatch: header says {stored:#010x}, bytes give {computed:#010x}")]
    CrcMismatch { stored: u32, computed: u32 },
    #[error(
        "record batch claims {count} records but its last offset delta is {last_offset_delta}"
    )]
    InconsistentCount { count: i32, last_offset_delta: i32 },
    #[error(
        "records of a batch compressed with codec {codec} cannot be read without decompressing it"
    )]
    Compressed { codec: u8 },
    #[error("record batch of {size} bytes exceeds the limit of {max} bytes")]
    TooLarge { size: usize, max: usize },
    #[error("compacted topic cannot accept a record without a key (record {index}, offset delta {offset_delta}): the log cleaner keeps each key's latest record, so every record needs a key")]
    MissingKey { offset_delta: i64, index: usize },
    #[error("records of the batch do not decode: {reason}")]
    InvalidRecords { reason: String },
    #[error(
        "clients are not allowed to write control records (the batch has the control flag set)"
    )]
    ControlBatch,
    #[error("control batch holds no valid transaction marker: {reason}")]
    InvalidControlRecord { reason: String },
    #[error("record batch of idempotent producer {producer_id} has base sequence {base_sequence}; a batch with a producer id needs a sequence >= 0")]
    InvalidSequence {
        producer_id: i64,
        base_sequence: i32,
    },
}

/// Errors from a partition log and the files under it.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{op} failed on {path} at offset {offset}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        offset: i64,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid record batch for {partition} at byte {position}: {source}")]
    InvalidBatch {
        partition: String,
        position: u64,
        #[source]
        source: BatchError,
    },
    #[error("follower append to {partition} starts at offset {first_offset} but the log ends at {log_end_offset}; offsets must be monotonic")]
    NonMonotonicAppend {
        partition: String,
        first_offset: i64,
        log_end_offset: i64,
    },
    #[error("offset {offset} is out of range for {partition}: valid offsets are [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        partition: String,
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    #[error("partition {partition} is offline after an I/O error ({reason}); check the disk, then restart the broker")]
    Offline { partition: String, reason: String },
    #[error(
        "invalid leader epoch entry for {partition}: epoch {epoch}, start offset {start_offset}"
    )]
    InvalidEpochEntry {
        partition: String,
        epoch: i32,
        start_offset: i64,
    },
    #[error("corrupt checkpoint file {path} at line {line}: {reason}")]
    CorruptCheckpoint {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("corrupt metadata log at byte {position}: {reason}; restore the data directory from a replica or backup")]
    CorruptMetadata { position: usize, reason: String },
    #[error("invalid partition directory name {name:?}: expected <topic>-<partition>")]
    InvalidPartitionDir { name: String },
    #[error("out-of-order sequence from producer {producer_id} (epoch {producer_epoch}) on {partition}: the batch for offset {offset} starts at sequence {first_sequence} but the next expected sequence is {expected_sequence}; a batch was lost or reordered, nothing was written")]
    OutOfOrderSequence {
        partition: String,
        producer_id: i64,
        producer_epoch: i16,
        offset: i64,
        first_sequence: i32,
        expected_sequence: i32,
    },
    #[error("producer {producer_id} sent epoch {producer_epoch} to {partition} for offset {offset}, older than its current epoch {current_epoch}: a newer instance of the producer fenced this one, nothing was written")]
    InvalidProducerEpoch {
        partition: String,
        producer_id: i64,
        producer_epoch: i16,
        current_epoch: i16,
        offset: i64,
    },
    #[error("producer {producer_id} sent a non-transactional batch to {partition} for offset {offset} while its transaction there is open; nothing was written: end the transaction first")]
    InvalidTxnState {
        partition: String,
        producer_id: i64,
        offset: i64,
    },
    #[error("producer {producer_id}'s transactional batch to {partition} was not verified with its transaction coordinator, or its transaction ended since: the record is not part of an ongoing transaction; nothing was written")]
    UnverifiedTxnBatch { partition: String, producer_id: i64 },
    #[error("transaction marker for producer {producer_id} on {partition} comes from coordinator epoch {coordinator_epoch}, older than epoch {current_coordinator_epoch} already seen: a newer transaction coordinator took over, nothing was written")]
    TransactionCoordinatorFenced {
        partition: String,
        producer_id: i64,
        coordinator_epoch: i32,
        current_coordinator_epoch: i32,
    },
    #[error("append to {partition} mixes {duplicates} retried batch(es) already in the log (first: producer {producer_id}, sequences {first_sequence}..={last_sequence}, originally at offset {original_offset}) with new batches; nothing was written, send the new batches on their own")]
    MixedDuplicateAppend {
        partition: String,
        duplicates: usize,
        producer_id: i64,
        first_sequence: i32,
        last_sequence: i32,
        original_offset: i64,
    },
}

impl LogError {
    /// Wraps an I/O error with the operation, file and offset it concerned.
    pub fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
        offset: i64,
        source: impl Into<std::io::Error>,
    ) -> Self {
        LogError::Io {
            op,
            path: path.into(),
            offset,
            source: source.into(),
        }
    }
}

pub type LogResult<T> = Result<T, LogError>;
