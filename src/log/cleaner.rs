//! The log cleaner: compaction of `cleanup.policy=compact` logs with Kafka's
//! semantics (`LogCleaner`, `Cleaner`, `LogCleanerManager`).
//!
//! **What is cleaned.** A log is split at its cleaner checkpoint (where the
//! last clean ended) into a clean head and a dirty tail. The dirty part
//! that may be cleaned ends at the *first uncleanable offset*: the lowest of
//! the active segment's base, the last stable offset (the high watermark,
//! or the start of the oldest transaction not yet decided there), and the
//! base of the first segment holding a record newer than
//! `min.compaction.lag.ms`. A log is
//! chosen when its dirty ratio (dirty bytes over clean plus dirty bytes)
//! exceeds `min.cleanable.dirty.ratio`, or when its oldest dirty batch is
//! older than `max.compaction.lag.ms`, or when tombstones the last clean
//! kept have passed their delete horizon; among those, the dirtiest.
//!
//! **How.** The dirty range is read once to build a map from each key to
//! its latest offset ([`OffsetMap`], bounded memory: when it fills, the
//! clean ends at the last batch mapped whole). Then every segment from the
//! log start to the end of that range is rewritten, in groups whose sizes
//! add up to at most `segment.bytes` (and `segment.index.bytes` for the
//! indexes), each group into one new segment, through the record filter
//! of `log/record_filter.rs`. A record stays if it is past
//! the mapped range or is its key's latest, and, for a tombstone (null
//! value), only until its delete horizon: the first clean that keeps a
//! tombstone stamps its batch with `now + delete.retention.ms` (KIP-534's
//! delete-horizon flag), and cleans after that time drop it. Records
//! without a key are dropped, as Kafka's cleaner does, and so are the
//! records of aborted transactions (they never enter the key map, so they
//! hide no committed record). A transaction marker stays while any batch
//! of its transaction does; after that, the first clean stamps it with a
//! delete horizon of `now + delete.retention.ms` and a clean after the
//! horizon drops it, with its `.txnindex` entry (a producer's last batch
//! stays, as for data). The cleaned segment carries the other `.txnindex`
//! entries of the segments it replaces.
//! Offsets never
//! change: a batch keeps its base offset and last offset delta, only its
//! records thin out, and empty batches vanish except, as in Kafka, the last
//! batch of each idempotent producer (so that producer state survives a
//! rebuild from the log) and the batch that ends the cleanable range, which
//! stay as empty batches (headers only). A cleaned segment may be empty;
//! reads skip it. Compressed batches are decompressed, filtered and
//! compressed again with the same codec.
//!
//! Empty batches are kept to a minimum on purpose: librdkafka (2.0, the
//! version Debian's kcat links) takes about ten fetch responses in a row
//! without a record for a sign of a message too large to fetch, and stops.
//!
//! **Without stalling the shard.** The cleaner reads the old segments and
//! writes the new one without the log's lock: segments below the active one
//! never change except by retention, DeleteRecords or truncation, which
//! the swap detects (same file, same size, still present) under the write
//! lock, abandoning the clean if anything moved. Only the swap itself holds
//! the lock. Work yields to the shard's other tasks after every batch.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use glommio::io::DmaFile;
use glommio::sync::RwLock;

use crate::config::LogConfig;
use crate::constants::{LOG_CLEANER_IO_BUFFER_LOAD_FACTOR, RECORD_BATCH_HEADER_SIZE};
use crate::error::{LogError, LogResult};
use crate::log::batch::{self, BatchHeader, CountRule};
use crate::log::compression;
use crate::log::offset_map::OffsetMap;
use crate::log::partition_log::PartitionLog;
use crate::log::record_filter::{
    filter_batch, filter_marker, AbortedBatches, FilterContext, Filtered, TxnDataSeen,
};
use crate::log::segment::Segment;
use crate::log::swap::{delete_cleaned_files, SwapFailpoint};
use crate::topic_partition::TopicPartition;
use crate::transaction::partition::AbortedTxn;

/// The sizes and times of one segment that the cleaner plans with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentStats {
    pub base_offset: i64,
    pub next_offset: i64,
    pub size_bytes: u64,
    pub offset_index_bytes: u64,
    pub time_index_bytes: u64,
    pub first_batch_timestamp: i64,
    pub largest_timestamp: i64,
}

/// One non-active segment as the log cleaner sees it. `file` identifies the
/// segment too: the cleaner reads it without the log's lock, and the swap
/// checks that the same file is still in the log.
#[derive(Clone)]
pub struct CleanableSegment {
    pub stats: SegmentStats,
    pub file: Rc<DmaFile>,
    pub path: PathBuf,
    /// The log's truncation count when the view was taken: a swap after
    /// any truncation is abandoned (`PartitionLog::segments_unchanged`).
    pub log_truncations: u64,
    /// Its `.txnindex` entries, which the cleaned segment carries on: a
    /// marker stays, so a read_committed consumer still needs its entry.
    pub aborted_txns: Vec<AbortedTxn>,
}

/// The offsets of a log that the cleaner plans with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanerOffsets {
    pub log_start_offset: i64,
    pub high_watermark: i64,
    /// Never cleaned past, as Kafka: an open transaction's data may still
    /// abort, and its outcome decides what the cleaner may drop.
    pub last_stable_offset: i64,
    pub log_end_offset: i64,
    pub active_base_offset: i64,
    /// Where the last clean ended, if known.
    pub cleaner_checkpoint: Option<i64>,
    /// The earliest delete horizon of tombstones the last clean kept.
    pub tombstone_horizon_ms: Option<i64>,
}

/// What the log cleaner reads of a log under its lock before working
/// without it.
pub struct CleanerView {
    pub tp: TopicPartition,
    pub dir: PathBuf,
    pub config: LogConfig,
    pub offsets: CleanerOffsets,
    /// Every segment but the active one, in offset order.
    pub segments: Vec<CleanableSegment>,
    /// Last offset of each idempotent producer's last batch: the cleaner
    /// keeps those batches (empty if need be) so producer state survives.
    pub producer_last_offsets: HashMap<i64, i64>,
    /// Every aborted transaction of the log: their data is dropped.
    pub aborted_txns: Vec<AbortedTxn>,
}

/// How one clean is run.
#[derive(Clone)]
pub struct CleanerOptions {
    /// This shard's share of `log.cleaner.dedupe.buffer.size`.
    pub dedupe_buffer_bytes: u64,
    /// This shard's read buffer (and write buffer) size, from
    /// `log.cleaner.io.buffer.size`.
    pub io_buffer_bytes: usize,
    /// A test's simulated crash in the swap.
    pub failpoint: Option<SwapFailpoint>,
}

/// Where a log stands for the cleaner (Kafka's `LogToClean`).
#[derive(Debug, Clone, PartialEq)]
pub struct LogToClean {
    /// Where cleaning starts: the cleaner checkpoint, or the log start.
    pub first_dirty_offset: i64,
    /// Where it must stop (exclusive).
    pub first_uncleanable_offset: i64,
    /// Bytes of segments wholly below the first dirty offset.
    pub clean_bytes: u64,
    /// Bytes of the segments holding the cleanable dirty range.
    pub dirty_bytes: u64,
    /// The oldest dirty batch is older than `max.compaction.lag.ms`.
    pub needs_compaction_now: bool,
    /// Tombstones kept by the last clean have passed their delete horizon.
    pub tombstones_expired: bool,
}

impl LogToClean {
    /// Dirty bytes over clean plus dirty bytes (Kafka's `cleanableRatio`).
    pub fn dirty_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.dirty_bytes;
        if total == 0 {
            0.0
        } else {
            self.dirty_bytes as f64 / total as f64
        }
    }

    /// Kafka's selection rule (`grabFilthiestCompactedLog`), plus the
    /// tombstone horizon, which Kafka leaves to the next dirty clean.
    pub fn should_clean(&self, min_cleanable_dirty_ratio: f64) -> bool {
        let dirty = self.dirty_bytes > 0
            && (self.needs_compaction_now || self.dirty_ratio() > min_cleanable_dirty_ratio);
        dirty || (self.tombstones_expired && self.clean_bytes > 0)
    }
}

/// What one clean did, for the log line and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanStats {
    pub first_dirty_offset: i64,
    /// Where the clean ended: the next clean starts here.
    pub end_offset: i64,
    pub segments_in: usize,
    pub segments_out: usize,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub records_in: u64,
    pub records_removed: u64,
    pub keys_mapped: usize,
    /// Compressed batches kept whole because they could not be opened.
    pub batches_kept_whole: u64,
    /// Transaction markers dropped: their data was gone, and so was their
    /// delete horizon.
    pub markers_removed: u64,
    pub duration_ms: u64,
}

/// How a clean ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanOutcome {
    Cleaned(CleanStats),
    /// Nothing to do: the range was empty or no batch fit the map.
    Nothing,
    /// The log changed underneath (retention, DeleteRecords, truncation)
    /// or the caller asked to stop; nothing was swapped from then on.
    Aborted,
}

/// Computes where a log stands at `now_ms` (Kafka's `cleanableOffsets`
/// and `calculateCleanableBytes`) from its non-active segments.
pub fn log_to_clean(
    segments: &[SegmentStats],
    offsets: &CleanerOffsets,
    config: &LogConfig,
    now_ms: i64,
) -> LogToClean {
    // A checkpoint outside the log (truncation, DeleteRecords, a lost
    // clean) means the whole log may need cleaning, as Kafka resets it.
    let first_dirty_offset = match offsets.cleaner_checkpoint {
        Some(c) if c >= offsets.log_start_offset && c <= offsets.log_end_offset => c,
        _ => offsets.log_start_offset,
    };
    let min_lag_ms = config.min_compaction_lag_ms.max(0);
    let lag_bound = (min_lag_ms > 0)
        .then(|| {
            segments
                .iter()
                .filter(|s| s.next_offset > first_dirty_offset)
                .find(|s| s.largest_timestamp > now_ms.saturating_sub(min_lag_ms))
                .map(|s| s.base_offset)
        })
        .flatten()
        .unwrap_or(i64::MAX);
    let first_uncleanable_offset = offsets
        .high_watermark
        .min(offsets.last_stable_offset)
        .min(offsets.active_base_offset)
        .min(lag_bound)
        .max(first_dirty_offset);
    let dirty = || {
        segments.iter().filter(move |s| {
            s.next_offset > first_dirty_offset && s.base_offset < first_uncleanable_offset
        })
    };
    let clean_bytes = segments
        .iter()
        .filter(|s| s.next_offset <= first_dirty_offset)
        .map(|s| s.size_bytes)
        .sum();
    let dirty_bytes = dirty().map(|s| s.size_bytes).sum();
    let max_lag_ms = config.max_compaction_lag_ms.max(0);
    let needs_compaction_now = dirty()
        .map(|s| s.first_batch_timestamp)
        .filter(|t| *t > 0)
        .min()
        .is_some_and(|oldest| oldest < now_ms.saturating_sub(max_lag_ms));
    LogToClean {
        first_dirty_offset,
        first_uncleanable_offset,
        clean_bytes,
        dirty_bytes,
        needs_compaction_now,
        tombstones_expired: offsets.tombstone_horizon_ms.is_some_and(|h| h <= now_ms),
    }
}

/// [`log_to_clean`] of a log's view.
pub fn view_to_clean(view: &CleanerView, now_ms: i64) -> LogToClean {
    let stats: Vec<SegmentStats> = view.segments.iter().map(|s| s.stats).collect();
    log_to_clean(&stats, &view.offsets, &view.config, now_ms)
}

/// Splits segments into groups whose log bytes add up to at most
/// `max_bytes` and whose index bytes to at most `max_index_bytes`, and
/// whose offsets fit one segment's 32-bit relative offsets (Kafka's
/// `groupSegmentsBySize`); returns index ranges into `segments`. Each group
/// becomes one cleaned segment.
pub fn group_segments_by_size(
    segments: &[SegmentStats],
    max_bytes: u64,
    max_index_bytes: u64,
    first_uncleanable_offset: i64,
) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < segments.len() {
        let first = &segments[start];
        let (mut log_bytes, mut offset_index, mut time_index) = (
            first.size_bytes,
            first.offset_index_bytes,
            first.time_index_bytes,
        );
        let mut end = start + 1;
        while let Some(next) = segments.get(end) {
            // The next segment's offsets end before the one after it starts.
            let next_last_offset = segments
                .get(end + 1)
                .map_or(first_uncleanable_offset, |s| s.base_offset)
                - 1;
            let fits = log_bytes + next.size_bytes <= max_bytes
                && offset_index + next.offset_index_bytes <= max_index_bytes
                && time_index + next.time_index_bytes <= max_index_bytes
                && (next.size_bytes == 0
                    || next_last_offset - first.base_offset <= i32::MAX as i64);
            if !fits {
                break;
            }
            log_bytes += next.size_bytes;
            offset_index += next.offset_index_bytes;
            time_index += next.time_index_bytes;
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    groups
}

/// Reads whole batches of a segment in chunks of about `io_bytes`, without
/// the log's lock (see the module docs).
struct BatchReader<'a> {
    segment: &'a CleanableSegment,
    position: u64,
    io_bytes: usize,
}

impl BatchReader<'_> {
    /// The next chunk: its bytes and the whole batches in it as (position
    /// in the chunk, header). Empty at the end of the segment.
    async fn next_chunk(&mut self) -> LogResult<(Vec<u8>, Vec<(usize, BatchHeader)>)> {
        let size = self.segment.stats.size_bytes;
        if self.position >= size {
            return Ok((Vec::new(), Vec::new()));
        }
        let want = (size - self.position).min(self.io_bytes as u64) as usize;
        let mut chunk =
            read_at(&self.segment.file, &self.segment.path, self.position, want).await?;
        let first = batch::parse_header_only(&chunk).map_err(|e| self.invalid(0, e))?;
        if first.size_bytes() > chunk.len() {
            // A batch larger than the buffer is read on its own, as Kafka
            // grows its buffers.
            chunk = read_at(
                &self.segment.file,
                &self.segment.path,
                self.position,
                first.size_bytes(),
            )
            .await?;
        }
        let mut batches = Vec::new();
        let mut at = 0usize;
        while at < chunk.len() {
            let Ok(h) = batch::parse_header_only(&chunk[at..]) else {
                break;
            };
            if at + h.size_bytes() > chunk.len() {
                break;
            }
            let h = batch::validate(&chunk[at..], CountRule::Compacted)
                .map_err(|e| self.invalid(at, e))?;
            batches.push((at, h));
            at += h.size_bytes();
        }
        if batches.is_empty() {
            return Err(self.invalid(
                0,
                crate::error::BatchError::Truncated {
                    needed: first.size_bytes(),
                    available: chunk.len(),
                },
            ));
        }
        chunk.truncate(at);
        self.position += at as u64;
        Ok((chunk, batches))
    }

    fn invalid(&self, at: usize, source: crate::error::BatchError) -> LogError {
        LogError::InvalidBatch {
            partition: self.segment.path.display().to_string(),
            position: self.position + at as u64,
            source,
        }
    }
}

async fn read_at(
    file: &Rc<DmaFile>,
    path: &std::path::Path,
    position: u64,
    len: usize,
) -> LogResult<Vec<u8>> {
    let r = file
        .read_at(position, len)
        .await
        .map_err(|e| LogError::io("cleaner read", path, -1, e))?;
    Ok(r[..r.len().min(len)].to_vec())
}

/// Cleans `log` if its state at `now_ms` calls for it (see
/// [`LogToClean::should_clean`]); `abort` is asked between batches and
/// stops the clean before its next swap. The log's lock is held only to
/// look and to swap.
pub async fn clean_log(
    log: &RwLock<PartitionLog>,
    options: &CleanerOptions,
    now_ms: i64,
    abort: &dyn Fn() -> bool,
) -> LogResult<CleanOutcome> {
    let started = Instant::now();
    let view = {
        let guard = log.read().await.map_err(|_| closed())?;
        guard.cleaner_view()
    };
    let plan = view_to_clean(&view, now_ms);
    let mut stats = CleanStats {
        first_dirty_offset: plan.first_dirty_offset,
        ..CleanStats::default()
    };
    let aborted = AbortedBatches::new(&view.aborted_txns);
    let map = build_offset_map(&view, &plan, &aborted, options, abort).await?;
    let Some(mut map) = map else {
        return Ok(CleanOutcome::Aborted);
    };
    let end_offset = (map.latest_offset() + 1).max(plan.first_dirty_offset);
    // Everything below the end is decided by this clean, also when nothing
    // was dirty (a clean for expired tombstones).
    map.update_latest_offset(end_offset - 1);
    stats.end_offset = end_offset;
    stats.keys_mapped = map.len();
    if end_offset == plan.first_dirty_offset
        && plan.first_dirty_offset < plan.first_uncleanable_offset
    {
        tracing::warn!(
            partition = %view.tp,
            offset = plan.first_dirty_offset,
            keys = map.max_entries(),
            "log cleaner: the first dirty batch holds more keys than the dedupe buffer; raise log.cleaner.dedupe.buffer.size"
        );
        return Ok(CleanOutcome::Nothing);
    }
    let to_rewrite: Vec<SegmentStats> = view
        .segments
        .iter()
        .map(|s| s.stats)
        .filter(|s| s.base_offset < end_offset)
        .collect();
    if to_rewrite.is_empty() {
        return Ok(CleanOutcome::Nothing);
    }
    let groups = group_segments_by_size(
        &to_rewrite,
        view.config.segment_bytes,
        view.config.segment_index_bytes,
        plan.first_uncleanable_offset,
    );
    let ctx = FilterContext {
        map: &map,
        aborted: &aborted,
        now_ms,
        delete_retention_ms: view.config.delete_retention_ms,
        producer_last_offsets: &view.producer_last_offsets,
        upper_bound_offset: plan.first_uncleanable_offset,
    };
    let mut horizon: Option<i64> = None;
    // Across the groups: a transaction's data and its marker may lie in
    // different ones.
    let mut txn_data = TxnDataSeen::default();
    for range in groups {
        let group = &view.segments[range];
        let base = group[0].stats.base_offset;
        let written = clean_group(
            &view,
            group,
            &ctx,
            &mut txn_data,
            options,
            now_ms,
            abort,
            &mut stats,
        )
        .await;
        let group_horizon = match written {
            Ok(Some(h)) => h,
            Ok(None) => {
                delete_cleaned_files(&view.dir, base).await?;
                return Ok(CleanOutcome::Aborted);
            }
            Err(e) => {
                // Keep the error that stopped the clean; the cleaned files are
                // of no use either way.
                if let Err(d) = delete_cleaned_files(&view.dir, base).await {
                    tracing::error!(partition = %view.tp, "deleting cleaned files failed: {d}");
                }
                return Err(e);
            }
        };
        let swapped = {
            let mut guard = log.write().await.map_err(|_| closed())?;
            guard
                .replace_segments(group, now_ms, options.failpoint)
                .await?
        };
        if !swapped {
            delete_cleaned_files(&view.dir, base).await?;
            tracing::info!(
                partition = %view.tp,
                base_offset = base,
                "log cleaner: segments changed during the clean (retention, DeleteRecords or truncation); abandoned it"
            );
            return Ok(CleanOutcome::Aborted);
        }
        horizon = min_opt(horizon, group_horizon);
        stats.segments_in += group.len();
        stats.segments_out += 1;
    }
    {
        let mut guard = log.write().await.map_err(|_| closed())?;
        let end = end_offset.min(guard.log_end_offset());
        guard.set_cleaner_checkpoint(end);
        guard.set_tombstone_horizon_ms(horizon);
    }
    stats.duration_ms = started.elapsed().as_millis() as u64;
    tracing::info!(
        partition = %view.tp,
        first_dirty_offset = stats.first_dirty_offset,
        end_offset = stats.end_offset,
        segments_in = stats.segments_in,
        segments_out = stats.segments_out,
        bytes_in = stats.bytes_in,
        bytes_out = stats.bytes_out,
        records_removed = stats.records_removed,
        markers_removed = stats.markers_removed,
        keys = stats.keys_mapped,
        duration_ms = stats.duration_ms,
        "log cleaner: cleaned partition"
    );
    Ok(CleanOutcome::Cleaned(stats))
}

fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn closed() -> LogError {
    LogError::io(
        "log cleaner",
        "<partition>",
        -1,
        std::io::Error::other("the partition log was closed"),
    )
}

/// Maps every key of the dirty range to its latest offset, stopping when
/// the map is full. `None` when aborted.
async fn build_offset_map(
    view: &CleanerView,
    plan: &LogToClean,
    aborted: &AbortedBatches,
    options: &CleanerOptions,
    abort: &dyn Fn() -> bool,
) -> LogResult<Option<OffsetMap>> {
    let (start, end) = (plan.first_dirty_offset, plan.first_uncleanable_offset);
    let expected_keys = (end - start).max(0) as u64;
    let mut map = OffsetMap::new(
        options.dedupe_buffer_bytes,
        LOG_CLEANER_IO_BUFFER_LOAD_FACTOR,
        expected_keys,
    );
    let dirty: Vec<&CleanableSegment> = view
        .segments
        .iter()
        .filter(|s| s.stats.next_offset > start && s.stats.base_offset < end)
        .collect();
    for (i, segment) in dirty.iter().enumerate() {
        let mut reader = BatchReader {
            segment,
            position: 0,
            io_bytes: options.io_buffer_bytes,
        };
        loop {
            let (chunk, batches) = reader.next_chunk().await?;
            if batches.is_empty() {
                break;
            }
            for (at, h) in batches {
                if abort() {
                    return Ok(None);
                }
                if h.last_offset() >= end {
                    return Ok(Some(map));
                }
                if h.last_offset() < start {
                    continue;
                }
                // An aborted batch's keys hide nothing: it goes itself.
                if !aborted.contains(&h)
                    && !map_batch(&mut map, &chunk[at..at + h.size_bytes()], &h, start)
                {
                    return Ok(Some(map));
                }
                map.update_latest_offset(h.last_offset());
                glommio::yield_if_needed().await;
            }
        }
        // Offsets between this segment's last batch and the next segment (or
        // the end) are gaps compaction left: nothing there to map.
        let next = dirty
            .get(i + 1)
            .map_or(end, |s| s.stats.base_offset.min(end));
        map.update_latest_offset(next - 1);
    }
    Ok(Some(map))
}

/// Puts the keys of one batch into the map; `false` when it filled up
/// before the batch was done (the batch then does not count as mapped).
fn map_batch(map: &mut OffsetMap, bytes: &[u8], h: &BatchHeader, start: i64) -> bool {
    if h.is_control() {
        return true;
    }
    let body_bytes = &bytes[RECORD_BATCH_HEADER_SIZE..h.size_bytes()];
    let Ok(body) = compression::decompress_records(h.compression(), body_bytes) else {
        // Its keys stay unknown: nothing older is dropped on its account,
        // and the filter keeps the batch whole.
        return true;
    };
    for r in batch::records_of_body(&body, h.record_count) {
        let Ok(r) = r else { return true };
        let offset = h.base_offset.saturating_add(r.offset_delta);
        if let (Some(key), true) = (r.key, offset >= start) {
            if !map.put(key, offset) {
                return false;
            }
        }
    }
    true
}

/// Writes one group's cleaned segment (`.cleaned` files, flushed and
/// closed). Returns the earliest delete horizon of the tombstones and
/// markers it kept, or `None` (outer) when aborted. A dropped ABORT
/// marker's `.txnindex` entry goes with it: a read_committed consumer would
/// otherwise skip that producer's later data, waiting for the marker.
#[allow(clippy::too_many_arguments)]
async fn clean_group(
    view: &CleanerView,
    group: &[CleanableSegment],
    ctx: &FilterContext<'_>,
    txn_data: &mut TxnDataSeen,
    options: &CleanerOptions,
    now_ms: i64,
    abort: &dyn Fn() -> bool,
    stats: &mut CleanStats,
) -> LogResult<Option<Option<i64>>> {
    let base = group[0].stats.base_offset;
    let mut cleaned = Segment::create_cleaned(&view.dir, base, &view.config, now_ms).await?;
    let mut out = Vec::with_capacity(options.io_buffer_bytes);
    let mut headers = Vec::new();
    let mut horizon = None;
    let mut dropped_markers: HashSet<(i64, i64)> = HashSet::new();
    for segment in group {
        stats.bytes_in += segment.stats.size_bytes;
        let mut reader = BatchReader {
            segment,
            position: 0,
            io_bytes: options.io_buffer_bytes,
        };
        loop {
            let (chunk, batches) = reader.next_chunk().await?;
            if batches.is_empty() {
                break;
            }
            for (at, h) in batches {
                if abort() {
                    drop(cleaned);
                    return Ok(None);
                }
                let bytes = &chunk[at..at + h.size_bytes()];
                let r = if h.is_control() {
                    let data_gone = txn_data.on_marker(&h);
                    filter_marker(bytes, &h, ctx, data_gone)
                } else {
                    txn_data.on_data(&h);
                    filter_batch(bytes, &h, ctx)
                };
                if h.is_control() && r.filtered == Filtered::Dropped {
                    dropped_markers.insert((h.producer_id, h.base_offset));
                    stats.markers_removed += 1;
                }
                stats.records_in += r.records_in;
                stats.records_removed += r.records_removed;
                if r.kept_whole {
                    stats.batches_kept_whole += 1;
                    tracing::warn!(
                        partition = %view.tp,
                        offset = h.base_offset,
                        codec = h.compression(),
                        "log cleaner: kept a batch whole that it cannot open"
                    );
                }
                horizon = min_opt(horizon, r.tombstone_horizon_ms);
                let kept: &[u8] = match &r.filtered {
                    Filtered::Unchanged => bytes,
                    Filtered::Rewritten(b) => b,
                    Filtered::Dropped => continue,
                };
                let kept_header =
                    batch::parse_header(kept).expect("the filter writes whole, valid batches");
                out.extend_from_slice(kept);
                headers.push(kept_header);
                if out.len() >= options.io_buffer_bytes {
                    cleaned.append(&out, &headers).await?;
                    stats.bytes_out += out.len() as u64;
                    out.clear();
                    headers.clear();
                }
                glommio::yield_if_needed().await;
            }
        }
    }
    if !out.is_empty() {
        cleaned.append(&out, &headers).await?;
        stats.bytes_out += out.len() as u64;
    }
    let aborted_txns = group
        .iter()
        .flat_map(|s| s.aborted_txns.iter().copied())
        .filter(|t| !dropped_markers.contains(&(t.producer_id, t.last_offset)))
        .collect();
    cleaned.rewrite_txn_index(aborted_txns).await?;
    // Seals the indexes, cuts the DMA padding, fdatasyncs, closes.
    cleaned.close().await?;
    Ok(Some(horizon))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::BatchFields;

    const NOW: i64 = 1_000_000;

    fn stats(base: i64, next: i64, size: u64) -> SegmentStats {
        SegmentStats {
            base_offset: base,
            next_offset: next,
            size_bytes: size,
            offset_index_bytes: size / 100,
            time_index_bytes: size / 100 * 3 / 2,
            first_batch_timestamp: 1_000,
            largest_timestamp: 2_000,
        }
    }

    fn offsets(checkpoint: Option<i64>) -> CleanerOffsets {
        CleanerOffsets {
            log_start_offset: 0,
            high_watermark: 400,
            last_stable_offset: 400,
            log_end_offset: 400,
            active_base_offset: 300,
            cleaner_checkpoint: checkpoint,
            tombstone_horizon_ms: None,
        }
    }

    fn segments() -> Vec<SegmentStats> {
        vec![
            stats(0, 100, 1000),
            stats(100, 200, 1000),
            stats(200, 300, 2000),
        ]
    }

    #[test]
    fn dirty_ratio_counts_segments_on_each_side_of_the_checkpoint() {
        let config = LogConfig::default();
        let p = log_to_clean(&segments(), &offsets(Some(100)), &config, NOW);
        assert_eq!(p.first_dirty_offset, 100);
        assert_eq!(p.first_uncleanable_offset, 300, "the active segment's base");
        assert_eq!((p.clean_bytes, p.dirty_bytes), (1000, 3000));
        assert!((p.dirty_ratio() - 0.75).abs() < 1e-9);
        assert!(p.should_clean(0.5));
        assert!(!p.should_clean(0.8));
        // Never cleaned: everything is dirty.
        let p = log_to_clean(&segments(), &offsets(None), &config, NOW);
        assert_eq!(
            (p.first_dirty_offset, p.clean_bytes, p.dirty_bytes),
            (0, 0, 4000)
        );
        // A checkpoint outside the log resets to the log start.
        let p = log_to_clean(&segments(), &offsets(Some(9_999)), &config, NOW);
        assert_eq!(p.first_dirty_offset, 0);
    }

    #[test]
    fn uncleanable_offset_honours_hw_and_min_compaction_lag() {
        let mut config = LogConfig::default();
        let mut o = offsets(Some(0));
        o.high_watermark = 150;
        assert_eq!(
            log_to_clean(&segments(), &o, &config, NOW).first_uncleanable_offset,
            150
        );
        // Segment 200.. holds a record newer than the lag allows.
        let mut segs = segments();
        segs[2].largest_timestamp = NOW - 10;
        config.min_compaction_lag_ms = 100;
        let p = log_to_clean(&segs, &offsets(Some(0)), &config, NOW);
        assert_eq!(p.first_uncleanable_offset, 200);
        assert_eq!(p.dirty_bytes, 2000);
    }

    #[test]
    fn max_compaction_lag_forces_a_clean_below_the_ratio() {
        let mut config = LogConfig::default();
        let mut segs = segments();
        segs.push(stats(300, 300, 0));
        let o = offsets(Some(200));
        let p = log_to_clean(&segs, &o, &config, NOW);
        assert!(!p.should_clean(0.99));
        config.max_compaction_lag_ms = NOW - 1_000 - 1;
        let p = log_to_clean(&segs, &o, &config, NOW);
        assert!(p.needs_compaction_now);
        assert!(p.should_clean(0.99));
    }

    #[test]
    fn expired_tombstones_make_a_clean_log_cleanable() {
        let config = LogConfig::default();
        let mut o = offsets(Some(300));
        let p = log_to_clean(&segments(), &o, &config, NOW);
        assert_eq!(p.dirty_bytes, 0);
        assert!(!p.should_clean(0.0));
        o.tombstone_horizon_ms = Some(NOW);
        assert!(log_to_clean(&segments(), &o, &config, NOW).should_clean(0.5));
        o.tombstone_horizon_ms = Some(NOW + 1);
        assert!(!log_to_clean(&segments(), &o, &config, NOW).should_clean(0.5));
    }

    #[test]
    fn groups_respect_segment_and_index_sizes() {
        let segs = vec![
            stats(0, 10, 400),
            stats(10, 20, 400),
            stats(20, 30, 400),
            stats(30, 40, 100),
        ];
        let g = group_segments_by_size(&segs, 1000, 1 << 20, 40);
        assert_eq!(g, vec![0..2, 2..4]);
        // Index bytes bound the groups too.
        let g = group_segments_by_size(&segs, 10_000, 8, 40);
        assert_eq!(g, vec![0..1, 1..2, 2..4]);
        // Offsets must fit 32-bit relative offsets.
        let wide = vec![
            stats(0, 10, 1),
            stats(i32::MAX as i64 + 5, i32::MAX as i64 + 9, 1),
        ];
        let g = group_segments_by_size(&wide, 10_000, 1 << 20, i32::MAX as i64 + 9);
        assert_eq!(g, vec![0..1, 1..2]);
    }

    #[test]
    fn empty_segments_join_a_group() {
        let segs = vec![stats(0, 10, 400), stats(10, 10, 0), stats(20, 30, 2000)];
        let g = group_segments_by_size(&segs, 1000, 1 << 20, 30);
        assert_eq!(g, vec![0..2, 2..3]);
    }

    #[test]
    fn hostile_record_offset_deltas_never_panic() {
        // A record claiming offset delta i64::MAX in a batch at a high base
        // offset: CRC-valid, since the producer computed the CRC.
        let mut body = Vec::new();
        batch::encode_record(&mut body, i64::MAX, 0, Some(b"k"), Some(b"v"), &[0]);
        let fields = BatchFields {
            base_offset: i64::MAX - 10,
            partition_leader_epoch: 0,
            attributes: 0,
            last_offset_delta: 0,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
        };
        let b = batch::encode_batch(&fields, 1, &body);
        let h = batch::validate(&b, CountRule::Exact).unwrap();
        let mut map = OffsetMap::new(1 << 20, 0.9, 100);
        map.update_latest_offset(i64::MAX - 1);
        assert!(map_batch(&mut map, &b, &h, 0));
        let none = HashMap::new();
        let ctx = FilterContext {
            map: &map,
            aborted: &AbortedBatches::default(),
            now_ms: NOW,
            delete_retention_ms: 100,
            producer_last_offsets: &none,
            upper_bound_offset: i64::MAX,
        };
        let _ = filter_batch(&b, &h, &ctx);
    }
}
