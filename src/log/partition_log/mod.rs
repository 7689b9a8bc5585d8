//! A partition log: an ordered set of segments with Kafka's offsets (log
//! start, high watermark, log end, recovery point), the leader-epoch cache,
//! the flush policy and retention.
//!
//! Offsets by durability: the *log end offset* (LEO) is one past the last
//! batch written to the files (dirty); the *recovery point* is one past the
//! last fdatasync'ed batch (committed to disk); the *high watermark* (HW) is
//! set by replication and bounds what consumers may read.
//!
//! Invariants, asserted on every change: log start <= HW <= LEO, recovery
//! point <= LEO, offsets dense and increasing across segments, epoch entries
//! strictly increasing in epoch and start offset and all below the LEO.
//!
//! This file opens the log, appends, rolls and flushes; reads are in
//! `read.rs`, removing records (truncation, DeleteRecords, retention) in
//! `truncation.rs`, the idempotent-producer state in `producers.rs`, and
//! the log cleaner's view and swap in `cleaning.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use glommio::io::DmaFile;

use crate::config::LogConfig;
use crate::constants::{DEFAULT_FLUSH_MESSAGES, DEFAULT_FLUSH_MS};
use crate::error::{BatchError, LogError, LogResult};
use crate::log::batch::{self, BatchHeader, CountRule};
use crate::log::batch_cache::{
    Backing, BatchCache, CacheFill, CacheKey, CachedBatch, SharedBatchCache,
};
use crate::log::cache_blocks::CacheCopy;
use crate::log::checkpoint;
use crate::log::cleaner::{CleanableSegment, CleanerOffsets, CleanerView, SegmentStats};
use crate::log::partition_metadata::{self, TopicId};

use crate::log::epoch_cache::{EpochEntry, LeaderEpochCache};
use crate::log::producer_state::{
    LeaderAppendCheck, MarkersByOffset, ProducerStateManager, TxnVerification,
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
};
use crate::log::segment::{parse_segment_file_name, segment_file_path, Segment};
use crate::log::swap;
pub use crate::log::swap::{delete_cleaned_files, SwapFailpoint};
use crate::topic_partition::TopicPartition;
use crate::transaction::partition::AbortedTxn;
pub use leader_append::LeaderWrite;
use leader_append::{max_timestamp, StagedAppend};

mod cleaning;
mod leader_append;
mod producers;
mod read;
mod transactions;
mod truncation;

/// Where fetched bytes are: in memory or in a segment file. The network layer
/// writes `Cached` as it is and reads `File` with O_DIRECT into the buffers it
/// sends (`server/network/response_writer.rs`); nothing here copies record bytes.
#[derive(Clone)]
pub enum ReadSlice {
    Cached(Bytes),
    File {
        file: Rc<DmaFile>,
        position: u64,
        len: u64,
    },
}

impl ReadSlice {
    pub fn len(&self) -> u64 {
        match self {
            ReadSlice::Cached(b) => b.len() as u64,
            ReadSlice::File { len, .. } => *len,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The answer to a read.
#[derive(Clone, Default)]
pub struct LogReadResult {
    pub slices: Vec<ReadSlice>,
    pub from_cache: bool,
    /// Set when the read missed the read cache: the file range may be read
    /// through it (`read_through::into_memory`) without the log's lock.
    pub fill: Option<CacheFill>,
    /// For a read through the cache: where the written bytes of the file
    /// slice's segment ended when the read was planned. The read may go on
    /// to there (`READ_AHEAD_BYTES`) and cache what the fetch does not take.
    pub readable_end: u64,
}

impl LogReadResult {
    pub fn len_bytes(&self) -> u64 {
        self.slices.iter().map(ReadSlice::len).sum()
    }
    /// Copies the bytes into one buffer: for tools and tests, never the
    /// fetch path.
    pub async fn to_vec(&self) -> LogResult<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len_bytes() as usize);
        for s in &self.slices {
            match s {
                ReadSlice::Cached(b) => out.extend_from_slice(b),
                ReadSlice::File {
                    file,
                    position,
                    len,
                    ..
                } => {
                    let r = file
                        .read_at(*position, *len as usize)
                        .await
                        .map_err(|e| LogError::io("read segment", "<segment>", -1, e))?;
                    out.extend_from_slice(&r[..(*len as usize).min(r.len())]);
                }
            }
        }
        Ok(out)
    }
}

/// What an append stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub batch_count: usize,
    pub size_bytes: u64,
    /// The batches repeat ones an idempotent producer already wrote: nothing
    /// was stored (`batch_count` and `size_bytes` are 0) and the offsets and
    /// max timestamp are those of the original batches.
    pub duplicate: bool,
}

/// One producer request's batches for a leader append.
#[derive(Debug)]
pub struct LeaderAppend {
    /// The batches as the producer sent them, copied for the leader to
    /// rewrite their headers (`BatchCache::copy`, or any `BytesMut`).
    pub batches: CacheCopy,
    /// LogAppendTime topics: the time written into every batch.
    pub log_append_time_ms: Option<i64>,
    /// Who appends: a producer, or a transaction coordinator's markers.
    pub origin: AppendOrigin,
    /// A client append's KIP-890 verification of transactional batches.
    pub verification: TxnVerification,
}

/// Who a leader append comes from, as Kafka's `AppendOrigin`: producers
/// may not write control batches, and markers are all a marker append
/// holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOrigin {
    Client,
    /// A coordinator's own records, which may belong to a producer's
    /// transaction (KIP-447's offsets): the producer's epoch is checked,
    /// its sequence is not (the coordinator numbers nothing).
    Coordinator,
    /// Transaction markers (WriteTxnMarkers), each checked against the
    /// producer's epoch and the coordinator epoch it last saw.
    TxnMarkers {
        /// The transaction version the markers were written under: from 2
        /// on, every marker carries a newer producer epoch (KIP-890).
        transaction_version: i16,
    },
}

/// The record found by an offset-for-timestamp lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    pub timestamp: i64,
    pub offset: i64,
}

/// A count of the partitions that an I/O error took offline, shared by the
/// logs of one owner (a shard), so that the layer above can react to a
/// failing disk as a whole (a broker of a cluster stops, as Kafka does).
pub type StorageFailures = Rc<std::cell::Cell<u64>>;

/// What the caller knows about a partition when opening it.
#[derive(Debug, Clone)]
pub struct OpenParams {
    /// From `recovery-point-offset-checkpoint`; 0 when unknown.
    pub recovery_point: i64,
    /// From `log-start-offset-checkpoint`; 0 when unknown.
    pub log_start_offset: i64,
    /// Whether the data directory holds a clean-shutdown marker.
    pub clean_shutdown: bool,
    pub now_ms: i64,
}

/// What opening a partition found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub segments: usize,
    pub segments_recovered: usize,
    pub bytes_scanned: u64,
    pub bytes_truncated: u64,
    pub segments_deleted: usize,
}

/// One partition's log. Owned by exactly one shard.
pub struct PartitionLog {
    tp: TopicPartition,
    dir: PathBuf,
    config: LogConfig,
    segments: BTreeMap<i64, Segment>,
    log_start_offset: i64,
    high_watermark: i64,
    recovery_point: i64,
    epochs: LeaderEpochCache,
    /// The entries the checkpoint file holds, so that a persist that would
    /// write the same content (an idle partition's restart) costs nothing.
    persisted_epochs: Vec<EpochEntry>,
    cache: Option<(SharedBatchCache, CacheKey)>,
    /// The topic id `partition.metadata` records; `None` until the image's
    /// id is recorded in a directory without the file.
    topic_id: Option<TopicId>,
    unflushed_records: u64,
    first_unflushed_ms: Option<i64>,
    /// Set after an I/O error: every later operation fails with `Offline`.
    offline: Option<String>,
    /// Told when an I/O error takes this log offline.
    failures: Option<StorageFailures>,
    recovery: RecoveryReport,
    /// Idempotent producers' epochs and recent sequences.
    producers: ProducerStateManager,
    /// Where the last clean ended (Kafka's `cleaner-offset-checkpoint`
    /// entry): offsets below it were cleaned. `None` before the first clean.
    cleaner_checkpoint: Option<i64>,
    /// The earliest KIP-534 delete horizon among tombstones the last clean
    /// kept: once it passes, a clean can drop them even if nothing is dirty.
    /// Not persisted; after a restart tombstones wait for the next clean
    /// that dirt triggers, as in Kafka.
    tombstone_horizon_ms: Option<i64>,
    /// How many truncations removed batches from this log since it opened.
    /// A truncation can cut a sealed segment and make it active again, and
    /// appends can then refill it to the very size the cleaner saw; the
    /// cleaner compares this count (Kafka pauses cleaning while it
    /// truncates) so that it never swaps in bytes a truncation removed.
    truncations: u64,
}

/// A log dropped without a close (deleted while a request held it, or
/// taken offline by an I/O error) still gives its read-cache room back.
impl Drop for PartitionLog {
    fn drop(&mut self) {
        if let Some((cache, key)) = self.cache.take() {
            // Never expected to be borrowed here (no borrow is held across
            // an await), but a drop must not panic.
            if let Ok(mut cache) = cache.try_borrow_mut() {
                cache.unregister(key);
            }
        }
    }
}

impl PartitionLog {
    /// Opens (or creates) the partition directory `data_dir/<topic>-<partition>`,
    /// recovering any segment past the recovery point unless the shutdown
    /// was clean.
    pub async fn open(
        data_dir: &Path,
        tp: TopicPartition,
        config: LogConfig,
        params: OpenParams,
        cache: Option<SharedBatchCache>,
    ) -> LogResult<PartitionLog> {
        let dir = data_dir.join(tp.dir_name());
        // A new directory's name is durable only once the data directory
        // is fsynced (Kafka's LogManager does the same). Those fsyncs wait
        // for the disk, so they run on the blocking pool: on the shard
        // thread, creating a 1,000-partition topic blocked it about 3,000
        // times (an off-CPU profile, tuning/results-groups.md), and every
        // request of the shard waited. Opening a partition is rare
        // (startup, topic creation): the directory listing below stays a
        // blocking call here and nowhere else.
        let created = dir.clone();
        crate::blocking_pool::run(move || crate::log::data_dir::create_dir_durably(&created))
            .await
            .map_err(|e| LogError::io("create partition dir", &dir, -1, e))?;
        swap::complete_interrupted_swaps(&dir)?;
        let base_offsets = list_segments(&dir)?;
        let mut report = RecoveryReport::default();
        let mut segments = BTreeMap::new();
        for base in &base_offsets {
            let s = Segment::open(&dir, *base, &config, params.now_ms).await?;
            segments.insert(*base, s);
        }
        report.segments = segments.len();

        // Segments holding offsets at or past the recovery point may hold
        // torn or unflushed bytes; so may any segment whose index is bad.
        let first_unsafe = if params.clean_shutdown {
            i64::MAX
        } else {
            segments
                .range(..=params.recovery_point)
                .next_back()
                .map(|(b, _)| *b)
                .unwrap_or(i64::MIN)
        };
        let mut corrupt_at: Option<i64> = None;
        let mut first_recovered: Option<i64> = None;
        for (base, segment) in segments.iter_mut() {
            let needs_recovery = *base >= first_unsafe || !segment.load_clean().await?;
            if needs_recovery {
                first_recovered.get_or_insert(*base);
                report.segments_recovered += 1;
                report.bytes_scanned += segment.size_bytes();
                let truncated = segment.recover().await?;
                report.bytes_truncated += truncated;
                if truncated > 0 {
                    corrupt_at = Some(*base);
                    break;
                }
            }
        }
        // Kafka deletes every segment after one that had invalid bytes: their
        // offsets no longer follow on.
        if let Some(base) = corrupt_at {
            let doomed: Vec<i64> = segments.range(base + 1..).map(|(b, _)| *b).collect();
            for b in doomed {
                if let Some(s) = segments.remove(&b) {
                    tracing::warn!(
                        segment = %s.log_path().display(),
                        "deleting segment that follows a truncated one"
                    );
                    report.bytes_truncated += s.size_bytes();
                    report.segments_deleted += 1;
                    s.delete().await?;
                }
            }
        }
        if segments.is_empty() {
            let start = params.log_start_offset.max(0);
            segments.insert(
                start,
                Segment::create(&dir, start, &config, params.now_ms).await?,
            );
        }
        if let Some(active) = segments.values_mut().next_back() {
            active.resize_indexes(config.segment_index_bytes)?;
        }
        let first_base = *segments.keys().next().expect("at least one segment");
        let log_end = segments.values().next_back().expect("active").next_offset();
        let log_start_offset = params.log_start_offset.max(first_base).min(log_end);

        let epoch_path = dir.join(crate::constants::LEADER_EPOCH_CHECKPOINT_FILE);
        let entries = checkpoint::read_epoch_checkpoint(&epoch_path).await?;
        let mut epochs = LeaderEpochCache::from_entries(entries).map_err(|reason| {
            LogError::CorruptCheckpoint {
                path: epoch_path.clone(),
                line: 0,
                reason,
            }
        })?;
        let persisted_epochs = epochs.entries().to_vec();
        // Trimmed in memory only, as Kafka's load does (its flush is
        // asynchronous): the next change persists the whole list, and the
        // trim is deterministic, so a crash before then trims again. A new
        // leader re-adds an entry at the LEO straight away, which then
        // matches the file and writes nothing.
        epochs.truncate_from_end(log_end);
        epochs.truncate_from_start(log_start_offset);

        let cache = cache.map(|c| {
            let key = c.borrow_mut().register();
            (c, key)
        });
        let producers = ProducerStateManager::open(&dir, DEFAULT_PRODUCER_ID_EXPIRATION_MS)?;
        let topic_id = partition_metadata::read_blocking(&dir)?;
        let mut log = PartitionLog {
            tp,
            dir,
            config,
            segments,
            log_start_offset,
            high_watermark: log_start_offset,
            // After a crash, bytes recovery found were never proven durable:
            // keep the checkpointed point so the next flush syncs them (as
            // Kafka's LogLoader keeps min(checkpoint, LEO)).
            recovery_point: if params.clean_shutdown {
                log_end
            } else {
                params.recovery_point.clamp(0, log_end)
            },
            epochs,
            persisted_epochs,
            cache,
            topic_id,
            unflushed_records: 0,
            first_unflushed_ms: None,
            offline: None,
            failures: None,
            recovery: report,
            producers,
            cleaner_checkpoint: None,
            tombstone_horizon_ms: None,
            truncations: 0,
        };
        // A recovered segment's transaction index is rebuilt from the
        // replay, which must then start no later than that segment.
        log.rebuild_producer_state(params.now_ms, first_recovered)
            .await?;
        log.check_invariants();
        Ok(log)
    }

    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The topic id the directory's `partition.metadata` records.
    pub fn topic_id(&self) -> Option<TopicId> {
        self.topic_id
    }
    /// Records `id` in `partition.metadata`, durably, unless it is there
    /// already: before the partition takes a role, so that a later start
    /// can tell this directory from one of a topic of the same name
    /// created after it.
    pub async fn record_topic_id(&mut self, id: TopicId) -> LogResult<()> {
        if self.topic_id == Some(id) {
            return Ok(());
        }
        partition_metadata::write(&self.dir, &id).await?;
        self.topic_id = Some(id);
        Ok(())
    }
    pub fn config(&self) -> &LogConfig {
        &self.config
    }
    /// Applies new topic settings; they take effect from the next append.
    pub fn set_config(&mut self, config: LogConfig) {
        self.config = config;
    }
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }
    pub fn log_end_offset(&self) -> i64 {
        self.active().next_offset()
    }
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.recovery
    }
    pub fn epoch_cache(&self) -> &LeaderEpochCache {
        &self.epochs
    }
    /// Counts this log in `failures` when an I/O error takes it offline.
    pub fn report_failures_to(&mut self, failures: StorageFailures) {
        self.failures = Some(failures);
    }

    pub fn is_offline(&self) -> bool {
        self.offline.is_some()
    }
    /// Fences a log whose partition is being deleted while something still
    /// holds it: every later operation fails, so none touches the files.
    pub fn mark_deleted(&mut self) {
        self.offline = Some("the partition was deleted".to_string());
        // Its batches are of no use to anyone now: free their room at once,
        // not when the last holder lets go.
        self.release_cache();
    }

    /// A leader's copy of a producer's `records`, to rewrite and append: in
    /// the read cache's blocks (`cache_blocks`), so that the copy the cache
    /// keeps takes its pages in bulk or reuses them.
    pub fn copy_for_append(&self, records: &[u8]) -> CacheCopy {
        match &self.cache {
            Some((cache, _)) => cache.borrow_mut().copy(records),
            None => BytesMut::from(records).into(),
        }
    }

    /// Forgets this log's batches in the read cache, and its key, so that a
    /// fill still in flight caches nothing.
    fn release_cache(&mut self) {
        if let Some((cache, key)) = self.cache.take() {
            cache.borrow_mut().unregister(key);
        }
    }
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.keys().copied().collect()
    }
    pub fn size_bytes(&self) -> u64 {
        self.segments.values().map(Segment::size_bytes).sum()
    }

    fn active(&self) -> &Segment {
        self.segments
            .values()
            .next_back()
            .expect("a log always has an active segment")
    }
    fn active_mut(&mut self) -> &mut Segment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a log always has an active segment")
    }

    /// Asserted after every mutation; these hold in release builds too.
    fn check_invariants(&self) {
        let leo = self.log_end_offset();
        assert!(
            self.log_start_offset <= self.high_watermark && self.high_watermark <= leo,
            "{}: log start {} <= HW {} <= LEO {} violated",
            self.tp,
            self.log_start_offset,
            self.high_watermark,
            leo
        );
        assert!(
            self.recovery_point <= leo,
            "{}: recovery point past LEO",
            self.tp
        );
        let mut prev_end = i64::MIN;
        for s in self.segments.values() {
            assert!(
                s.base_offset() >= prev_end,
                "{}: segments overlap at {}",
                self.tp,
                s.base_offset()
            );
            prev_end = s.next_offset();
        }
        if let Some(last) = self.epochs.latest_entry() {
            assert!(
                last.start_offset <= leo,
                "{}: epoch {} starts past LEO",
                self.tp,
                last.epoch
            );
        }
    }

    fn ensure_online(&self) -> LogResult<()> {
        match &self.offline {
            Some(_) => Err(self.offline_error()),
            None => Ok(()),
        }
    }

    fn offline_error(&self) -> LogError {
        LogError::Offline {
            partition: self.tp.to_string(),
            reason: self.offline.clone().unwrap_or_default(),
        }
    }

    /// A group commit failed part-way: the producer state already holds the
    /// appends staged for the write, so the partition goes offline whatever
    /// the error (recovery rebuilds the state from the log), and every
    /// append not answered yet fails.
    fn fail_unanswered(&mut self, results: &mut [Option<LogResult<AppendInfo>>], e: LogError) {
        if self.offline.is_none() {
            self.take_offline(&e);
        }
        // A retry answered as a duplicate of a batch staged in the failed
        // write is not in the log either.
        let leo = self.log_end_offset();
        for r in results.iter_mut() {
            let written = matches!(r, Some(Ok(info)) if info.last_offset < leo);
            if !written && !matches!(r, Some(Err(_))) {
                *r = Some(Err(self.offline_error()));
            }
        }
    }

    /// Takes the partition offline on an I/O error: the state on disk is no
    /// longer known, so serving on would risk acknowledging lost data.
    fn fail<T>(&mut self, result: LogResult<T>) -> LogResult<T> {
        if let Err(e @ LogError::Io { .. }) = &result {
            self.take_offline(e);
        }
        result
    }

    /// Records `e` as the reason the partition is offline, counting it in
    /// the owner's failures the first time.
    fn take_offline(&mut self, e: &LogError) {
        tracing::error!(partition = %self.tp, "taking partition offline: {e}");
        if self.offline.is_none() {
            if let Some(failures) = &self.failures {
                failures.set(failures.get() + 1);
            }
        }
        self.offline = Some(e.to_string());
    }

    /// Whether the leader-epoch checkpoint file lags the entries in memory.
    fn epoch_checkpoint_lags(&self) -> bool {
        self.epochs.entries() != self.persisted_epochs.as_slice()
    }

    async fn persist_epochs(&mut self) -> LogResult<()> {
        if !self.epoch_checkpoint_lags() {
            return Ok(());
        }
        let path = self
            .dir
            .join(crate::constants::LEADER_EPOCH_CHECKPOINT_FILE);
        let r = checkpoint::write_epoch_checkpoint(&path, self.epochs.entries()).await;
        self.fail(r)?;
        self.persisted_epochs = self.epochs.entries().to_vec();
        Ok(())
    }

    fn invalid(&self, position: u64, source: BatchError) -> LogError {
        LogError::InvalidBatch {
            partition: self.tp.to_string(),
            position,
            source,
        }
    }

    /// Appends batches fetched from the leader: offsets and epochs are given
    /// and must continue the log exactly.
    pub async fn append_as_follower(
        &mut self,
        batches: Bytes,
        now_ms: i64,
    ) -> LogResult<AppendInfo> {
        let backing = Backing::of(&batches);
        self.append_fetched(batches, backing, now_ms).await
    }

    /// [`append_as_follower`](Self::append_as_follower) of batches that are
    /// a slice of `backing` (a fetch response holding other partitions'
    /// too), which the read cache counts whole while it keeps them.
    pub async fn append_fetched(
        &mut self,
        batches: Bytes,
        backing: Backing,
        now_ms: i64,
    ) -> LogResult<AppendInfo> {
        self.ensure_online()?;
        let mut headers: Vec<BatchHeader> = Vec::new();
        let mut expected = self.log_end_offset();
        for item in batch::BatchIter::new(&batches, CountRule::Compacted) {
            let (position, h) = item.map_err(|(p, e)| self.invalid(p as u64, e))?;
            if h.base_offset < expected {
                return Err(LogError::NonMonotonicAppend {
                    partition: self.tp.to_string(),
                    first_offset: h.base_offset,
                    log_end_offset: expected,
                });
            }
            let _ = position;
            expected = h.next_offset();
            headers.push(h);
        }
        if headers.is_empty() {
            return Err(self.invalid(
                0,
                BatchError::Truncated {
                    needed: crate::constants::RECORD_BATCH_HEADER_SIZE,
                    available: batches.len(),
                },
            ));
        }
        // Followers learn epochs from the batches themselves.
        for h in &headers {
            let newer = self
                .epochs
                .latest_epoch()
                .is_none_or(|latest| h.partition_leader_epoch > latest);
            if h.partition_leader_epoch >= 0 && newer {
                self.assign_epoch_start_offset(h.partition_leader_epoch, h.base_offset)
                    .await?;
            }
        }
        let first = headers[0];
        let last = headers[headers.len() - 1];
        let max_timestamp = max_timestamp(&headers);
        let roll = self.active().should_roll(
            &self.config,
            batches.len() as u64,
            max_timestamp,
            last.last_offset(),
            now_ms,
        );
        if roll {
            self.roll(first.base_offset, now_ms).await?;
        }
        let markers = self.markers_in(&batches, &headers)?;
        self.write_validated(std::slice::from_ref(&batches), &[backing], &headers, now_ms)
            .await?;
        let aborted = self.producers.apply(&headers, &markers);
        self.index_aborted_txns(aborted).await?;
        self.maybe_flush(now_ms).await?;
        Ok(AppendInfo {
            first_offset: first.base_offset,
            last_offset: last.last_offset(),
            max_timestamp,
            batch_count: headers.len(),
            size_bytes: batches.len() as u64,
            duplicate: false,
        })
    }

    /// Writes batches whose offsets are assigned, in `parts` laid end to
    /// end, to the active segment (the caller has rolled if needed), then
    /// caches them. Producer state and the flush policy are the caller's.
    /// The cache counts each part's buffer whole: `backings[i]` is the
    /// buffer of `parts[i]` (a leader's part is a request's records, copied
    /// into a block of the cache or an allocation of its own).
    async fn write_validated(
        &mut self,
        parts: &[Bytes],
        backings: &[Backing],
        headers: &[BatchHeader],
        now_ms: i64,
    ) -> LogResult<()> {
        let slices: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
        let r = self.active_mut().append_parts(&slices, headers).await;
        self.fail(r)?;
        if let Some((cache, key)) = &self.cache {
            let cached = batch::split_parts(parts, headers)
                .map(|(part, h, bytes)| CachedBatch {
                    base_offset: h.base_offset,
                    last_offset: h.last_offset(),
                    bytes,
                    backing: backings[part],
                })
                .collect();
            cache.borrow_mut().append(*key, cached);
        }
        let records: i64 = headers.iter().map(|h| h.record_count as i64).sum();
        self.unflushed_records += records.max(0) as u64;
        self.first_unflushed_ms.get_or_insert(now_ms);
        self.check_invariants();
        Ok(())
    }

    /// Records that `epoch` starts at `start_offset` (Kafka's
    /// `maybeAssignEpochStartOffset`) before batches of that epoch are
    /// written, and persists the checkpoint if it differs from the file.
    /// That includes an entry a new leader recorded in memory only
    /// ([`assign_leader_epoch_in_memory`](Self::assign_leader_epoch_in_memory)):
    /// an epoch's entry is durable before any of its batches is written.
    pub async fn assign_epoch_start_offset(
        &mut self,
        epoch: i32,
        start_offset: i64,
    ) -> LogResult<()> {
        self.assign_epoch(epoch, start_offset)?;
        self.persist_epochs().await
    }

    /// A new leader's entry (Kafka's makeLeader: the epoch starts at the
    /// LEO), recorded in memory; returns whether the checkpoint file now
    /// lags. The file is written by the first append of the epoch, before
    /// its batches ([`assign_epoch_start_offset`](Self::assign_epoch_start_offset)),
    /// by [`persist_epoch_checkpoint`](Self::persist_epoch_checkpoint), or
    /// at close, whichever comes first. Kafka writes it at once; here a
    /// restart with thousands of idle partitions would create thousands
    /// of files before serving. An entry lost to a crash before it was
    /// written names an epoch with no batches, which the next leader's
    /// entry supersedes: OffsetsForLeaderEpoch then answers the epoch
    /// before it with the same end offset.
    pub fn assign_leader_epoch_in_memory(
        &mut self,
        epoch: i32,
        start_offset: i64,
    ) -> LogResult<bool> {
        self.assign_epoch(epoch, start_offset)?;
        Ok(self.epoch_checkpoint_lags())
    }

    /// Writes the leader-epoch checkpoint if it lags the entries in memory.
    pub async fn persist_epoch_checkpoint(&mut self) -> LogResult<()> {
        self.ensure_online()?;
        self.persist_epochs().await
    }

    fn assign_epoch(&mut self, epoch: i32, start_offset: i64) -> LogResult<bool> {
        self.epochs
            .assign(epoch, start_offset)
            .map_err(|_| LogError::InvalidEpochEntry {
                partition: self.tp.to_string(),
                epoch,
                start_offset,
            })
    }

    /// Kafka's `endOffsetForEpoch`: what OffsetsForLeaderEpoch answers.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.epochs.end_offset_for(epoch, self.log_end_offset())
    }

    /// Starts a new active segment at `base_offset` (the next offset).
    pub async fn roll(&mut self, base_offset: i64, now_ms: i64) -> LogResult<()> {
        self.ensure_online()?;
        let base_offset = base_offset.max(self.log_end_offset());
        if self.active().is_empty() && self.active().base_offset() == base_offset {
            return Ok(());
        }
        let r = self.active_mut().on_become_inactive().await;
        self.fail(r)?;
        if self.recovery_point >= base_offset {
            // Every byte was flushed already (`flush.messages=1`), so the
            // flush below has nothing to do; but the seal is new: the
            // padding cut (bug 14), the time index's last entry and both
            // indexes cut to their used size (bug 20). Otherwise that flush
            // covers the sealed segment.
            let r = self.active_mut().flush().await;
            self.fail(r)?;
        }
        // As Kafka's roll (its flush up to the new segment's base offset):
        // every byte before the new segment is durable before the new one
        // gets any, and the recovery point moves there. A power loss then
        // cannot keep later segments' bytes while it takes earlier ones
        // (offsets with a hole in the middle, which recovery cannot see),
        // and a crash recovers only the active segment.
        self.flush_up_to(base_offset).await?;
        if self.active().is_empty() {
            // An empty active segment is replaced rather than kept around.
            let (&b, _) = self.segments.iter().next_back().expect("active");
            let old = self.segments.remove(&b).expect("active");
            let r = old.delete().await;
            self.fail(r)?;
        }
        let r = Segment::create(&self.dir, base_offset, &self.config, now_ms).await;
        let segment = self.fail(r)?;
        tracing::debug!(partition = %self.tp, base_offset, "rolled new segment");
        self.segments.insert(base_offset, segment);
        // As Kafka: a producer-state snapshot at every roll, so that recovery
        // replays at most the active segment's batch headers.
        let r = self.producers.take_snapshot(&self.dir, base_offset).await;
        self.fail(r)?;
        self.check_invariants();
        Ok(())
    }

    /// Whether `flush.ms` or `flush.messages` is set (their defaults,
    /// Long.MAX_VALUE as in Kafka, mean never).
    pub fn has_flush_policy(&self) -> bool {
        self.config.flush_ms < DEFAULT_FLUSH_MS
            || self.config.flush_messages < DEFAULT_FLUSH_MESSAGES
    }

    /// Applies the flush policy (`flush.messages`, `flush.ms`).
    pub async fn maybe_flush(&mut self, now_ms: i64) -> LogResult<bool> {
        let by_count = self.unflushed_records >= self.config.flush_messages;
        let by_time = self
            .first_unflushed_ms
            .is_some_and(|t| now_ms.saturating_sub(t) as u64 >= self.config.flush_ms);
        if by_count || by_time {
            self.flush().await?;
            return Ok(true);
        }
        Ok(false)
    }

    /// fdatasyncs every segment holding bytes past the recovery point and
    /// moves the recovery point to the LEO.
    pub async fn flush(&mut self) -> LogResult<()> {
        self.ensure_online()?;
        let log_end = self.log_end_offset();
        self.flush_up_to(log_end).await?;
        self.unflushed_records = 0;
        self.first_unflushed_ms = None;
        Ok(())
    }

    /// fdatasyncs every segment holding bytes between the recovery point
    /// and `offset` (a segment boundary, or the LEO), and moves the
    /// recovery point to `offset` (Kafka's `flushUptoOffsetExclusive`).
    async fn flush_up_to(&mut self, offset: i64) -> LogResult<()> {
        if offset <= self.recovery_point {
            return Ok(());
        }
        let from = self
            .segments
            .range(..=self.recovery_point)
            .next_back()
            .map(|(b, _)| *b)
            .unwrap_or(i64::MIN);
        let bases: Vec<i64> = self
            .segments
            .range(from..)
            .map(|(b, _)| *b)
            .take_while(|&b| b < offset)
            .collect();
        for b in bases {
            let r = match self.segments.get_mut(&b) {
                Some(s) => s.flush().await,
                None => Ok(()),
            };
            self.fail(r)?;
        }
        self.recovery_point = offset;
        Ok(())
    }

    /// Sets the high watermark, clamped to `[log start, LEO]`.
    pub fn set_high_watermark(&mut self, hw: i64) {
        self.high_watermark = hw.clamp(self.log_start_offset, self.log_end_offset());
        self.producers.on_high_watermark(self.high_watermark);
        self.check_invariants();
    }

    /// Clean close: seal and trim every segment, flush, close the files.
    pub async fn close(mut self) -> LogResult<()> {
        self.close_in_place().await
    }

    /// [`close`](Self::close) for a log that others may still hold (a
    /// partition moving to another shard): closes the files, and fences
    /// the log so that every later operation fails without touching them.
    pub async fn close_in_place(&mut self) -> LogResult<()> {
        self.close_files().await?;
        self.offline = Some("the log was closed: the partition moved to another shard".into());
        Ok(())
    }

    async fn close_files(&mut self) -> LogResult<()> {
        self.ensure_online()?;
        self.flush().await?;
        // An epoch trim made at open and never followed by a change.
        self.persist_epochs().await?;
        // As Kafka's close: a snapshot at the LEO spares the next open any
        // replay. One taken at this LEO already holds this state (producer
        // state changes only with appends), as on an idle partition's
        // restart.
        let leo = self.log_end_offset();
        if !self.producers.snapshot_offsets().contains(&leo) {
            let r = self.producers.take_snapshot(&self.dir, leo).await;
            self.fail(r)?;
        }
        self.release_cache();
        let segments = std::mem::take(&mut self.segments);
        for (_, s) in segments {
            s.close().await?;
        }
        Ok(())
    }

    /// Stored bytes of every batch from the log start, for tools and tests.
    pub async fn read_all(&mut self) -> LogResult<Vec<u8>> {
        let mut out = Vec::new();
        for s in self.segments.values() {
            let skip = if s.base_offset() <= self.log_start_offset {
                s.position_of(self.log_start_offset).await?
            } else {
                0
            };
            out.extend(s.read_bytes(skip, (s.size_bytes() - skip) as usize).await?);
        }
        Ok(out)
    }
}

/// Base offsets of the `.log` files in a partition directory, sorted.
/// Leftover temporary files of an interrupted operation are removed.
fn list_segments(dir: &Path) -> LogResult<Vec<i64>> {
    let mut bases = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| LogError::io("list partition dir", dir, -1, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| LogError::io("list partition dir", dir, -1, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(base) = parse_segment_file_name(name, "log") {
            bases.push(base);
        } else if name.ends_with(".deleted") || name.ends_with(".tmp") {
            std::fs::remove_file(entry.path())
                .map_err(|e| LogError::io("remove leftover file", entry.path(), -1, e))?;
        }
    }
    bases.sort_unstable();
    Ok(bases)
}

/// Entries of a leader-epoch cache for tests and tools.
pub fn epoch_entries(log: &PartitionLog) -> Vec<EpochEntry> {
    log.epochs.entries().to_vec()
}
