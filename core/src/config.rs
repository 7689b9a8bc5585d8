//! Per-topic log settings, named and defaulted as Kafka names them.
//!
//! Field names are Kafka's topic-level config names with `.` turned into `_`;
//! the broker-wide `log.*` defaults map onto the same struct.

use crate::constants::*;

/// `cleanup.policy`: what happens to old segments. Kafka accepts `delete`,
/// `compact`, or both (`compact,delete`, in either order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// Retention (`retention.ms`, `retention.bytes`) deletes whole segments.
    pub delete: bool,
    /// The log cleaner keeps only the latest record of each key.
    pub compact: bool,
}

impl CleanupPolicy {
    /// Kafka's default: `delete`.
    pub const DELETE: CleanupPolicy = CleanupPolicy {
        delete: true,
        compact: false,
    };
    pub const COMPACT: CleanupPolicy = CleanupPolicy {
        delete: false,
        compact: true,
    };

    /// Parses Kafka's comma-separated list; `None` for anything else.
    pub fn parse(value: &str) -> Option<CleanupPolicy> {
        let mut policy = CleanupPolicy {
            delete: false,
            compact: false,
        };
        for part in value.split(',') {
            match part.trim() {
                "delete" if !policy.delete => policy.delete = true,
                "compact" if !policy.compact => policy.compact = true,
                _ => return None,
            }
        }
        Some(policy)
    }
}

impl std::fmt::Display for CleanupPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match (self.compact, self.delete) {
            (true, true) => "compact,delete",
            (true, false) => "compact",
            _ => "delete",
        })
    }
}

/// Settings of one partition log. Kafka's topic-level names are in the
/// comments; defaults are Kafka's.
#[derive(Debug, Clone, PartialEq)]
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
    /// `preallocate`: a new segment's file is `segment.bytes` long at once
    /// (allocated, read as zeros), as Kafka's; cut back at roll and close.
    pub preallocate: bool,
    /// `cleanup.policy`: retention applies only with `delete`, the log
    /// cleaner only with `compact`.
    pub cleanup_policy: CleanupPolicy,
    /// `delete.retention.ms`: how long a tombstone survives after the
    /// cleaner first kept it, so that a consumer reading from the start
    /// within that time sees the delete.
    pub delete_retention_ms: i64,
    /// `min.cleanable.dirty.ratio`: dirty bytes over all cleanable bytes
    /// above which the log is cleaned.
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms`: records younger than this stay uncompacted.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: a log whose oldest uncleaned record is older
    /// than this is cleaned whatever its dirty ratio.
    pub max_compaction_lag_ms: i64,
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
            cleanup_policy: CleanupPolicy::DELETE,
            delete_retention_ms: DEFAULT_DELETE_RETENTION_MS,
            min_cleanable_dirty_ratio: DEFAULT_MIN_CLEANABLE_DIRTY_RATIO,
            min_compaction_lag_ms: DEFAULT_MIN_COMPACTION_LAG_MS,
            max_compaction_lag_ms: DEFAULT_MAX_COMPACTION_LAG_MS,
        }
    }
}

/// Broker-wide settings of the log cleaner (Kafka's `log.cleaner.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanerConfig {
    /// `log.cleaner.enable`: run the cleaner at all.
    pub enable: bool,
    /// `log.cleaner.backoff.ms`: pause between looks for a log to clean.
    pub backoff_ms: u64,
    /// `log.cleaner.dedupe.buffer.size`: memory for the key to offset maps
    /// of all shards together.
    pub dedupe_buffer_size: u64,
    /// `log.cleaner.io.buffer.size`: memory for the read and write buffers
    /// of all shards together.
    pub io_buffer_size: u64,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            enable: true,
            backoff_ms: DEFAULT_LOG_CLEANER_BACKOFF_MS,
            dedupe_buffer_size: DEFAULT_LOG_CLEANER_DEDUPE_BUFFER_SIZE,
            io_buffer_size: DEFAULT_LOG_CLEANER_IO_BUFFER_SIZE,
        }
    }
}

impl CleanerConfig {
    /// One shard's share of the dedupe buffer: Kafka divides it among its
    /// cleaner threads, pinlog among its shards (each cleans its own logs).
    pub fn dedupe_buffer_per_shard(&self, shards: usize) -> u64 {
        (self.dedupe_buffer_size / shards.max(1) as u64)
            .max(LOG_CLEANER_DEDUPE_BUFFER_PER_SHARD_MIN)
    }
    /// One shard's read buffer (and as much again for writing), as Kafka
    /// halves `log.cleaner.io.buffer.size` per thread.
    pub fn io_buffer_per_shard(&self, shards: usize) -> usize {
        (self.io_buffer_size / 2 / shards.max(1) as u64).max(LOG_CLEANER_IO_BUFFER_PER_SHARD_MIN)
            as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleanup_policy_parses_kafkas_lists() {
        assert_eq!(CleanupPolicy::parse("delete"), Some(CleanupPolicy::DELETE));
        assert_eq!(
            CleanupPolicy::parse("compact"),
            Some(CleanupPolicy::COMPACT)
        );
        let both = CleanupPolicy {
            delete: true,
            compact: true,
        };
        assert_eq!(CleanupPolicy::parse("compact,delete"), Some(both));
        assert_eq!(CleanupPolicy::parse("delete, compact"), Some(both));
        assert_eq!(both.to_string(), "compact,delete");
        for bad in ["", "delete,delete", "compacted", "compact,"] {
            assert_eq!(CleanupPolicy::parse(bad), None, "{bad:?}");
        }
    }
}
