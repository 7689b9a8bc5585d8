//! Per-topic log settings, named and defaulted as Kafka names them.
//!
//! Field names are Kafka's topic-level config names with `.` turned into `_`;
//! the broker-wide `log.*` defaults map onto the same struct.

use crate::constants::*;

/// Settings of one partition log. Kafka's topic-level names are in the
/// comments; defaults are Kafka's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// `segment.bytes`: roll the active segment when it would exceed this.
    pub segment_bytes: u64,
    /// `segment.ms`: roll when the active segment's first batch is older.
    pub segment_ms: i64,
    /// `segment.index.bytes`: preallocated size of each index file.
    pub segment_index_bytes: u64,
    /// `index.interval.bytes`: bytes of log between two index entries.
    pub index_interval_bytes: u64,
    /// `flush.messages`: fdatasync after this many unflushed records.
    pub flush_messages: u64,
    /// `flush.ms`: fdatasync when the oldest unflushed append is this old.
    pub flush_ms: u64,
    /// `retention.ms`: delete segments whose newest record is older (-1: never).
    pub retention_ms: i64,
    /// `retention.bytes`: delete old segments while the log is larger (-1: never).
    pub retention_bytes: i64,
    /// `max.message.bytes`: largest record batch accepted.
    pub max_batch_bytes: usize,
    /// `preallocate`: reserve `segment.bytes` of disk when a segment is created.
    pub preallocate: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            segment_ms: DEFAULT_SEGMENT_MS,
            segment_index_bytes: DEFAULT_SEGMENT_INDEX_BYTES,
            index_interval_bytes: DEFAULT_INDEX_INTERVAL_BYTES,
            flush_messages: DEFAULT_FLUSH_MESSAGES,
            flush_ms: DEFAULT_FLUSH_MS,
            retention_ms: DEFAULT_RETENTION_MS,
            retention_bytes: DEFAULT_RETENTION_BYTES,
            max_batch_bytes: DEFAULT_MAX_BATCH_BYTES,
            preallocate: false,
        }
    }
}
