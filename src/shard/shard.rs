//! One shard: the partitions a core owns, its tail cache, and the way to
//! reach every other shard.
//!
//! A shard's state is touched only by its own executor thread. Work on a
//! partition owned elsewhere becomes a [`ShardRequest`] to the owner; the
//! caller awaits the reply. Partition logs sit behind glommio's async
//! `RwLock`, so an append that awaits disk I/O keeps other tasks on the shard
//! (reads of other partitions, requests from peers) running.

use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use glommio::channels::channel_mesh::Senders;
use glommio::sync::RwLock;

use crate::config::LogConfig;
use crate::constants::{
    PARTITION_OPENS_IN_FLIGHT, PARTITION_OPEN_LOCK_STRIPES, SHUTDOWN_LOG_HOLDERS_WAIT_MS,
};
use crate::error::{LogError, LogResult};
use crate::log::batch_cache::{BatchCache, SharedBatchCache};
use crate::log::cleaner::{self, CleanOutcome, CleanerOptions};
use crate::log::data_dir::{DataDirState, PartitionOffsets};
use crate::log::partition_log::{
    AppendInfo, OpenParams, PartitionLog, RecoveryReport, StorageFailures,
};
use crate::shard::cross_shard::{reply_channel, ReplySender};
use crate::shard::messages::{PartitionOffsetsView, ShardRequest};
use crate::shard::partition_table::{PartitionTable, ShardId};
use crate::shard::runtime::ShardConfig;
use crate::topic_partition::TopicPartition;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Where one partition stands, for tools and status output.
#[derive(Debug, Clone)]
pub struct PartitionSummary {
    pub tp: TopicPartition,
    pub shard: ShardId,
    pub log_start_offset: i64,
    pub high_watermark: i64,
    pub log_end_offset: i64,
    pub segments: usize,
    pub size_bytes: u64,
    pub recovery: RecoveryReport,
}

pub struct Shard {
    id: ShardId,
    config: Arc<ShardConfig>,
    startup: Arc<DataDirState>,
    table: RefCell<PartitionTable>,
    logs: RefCell<HashMap<TopicPartition, Rc<RwLock<PartitionLog>>>>,
    cache: SharedBatchCache,
    senders: Senders<ShardRequest>,
    /// Set after a shard-level I/O failure; kept for stats and shutdown.
    offline_partitions: Cell<usize>,
    /// How many of this shard's logs an I/O error took offline.
    storage_failures: StorageFailures,
    /// Serialise opens of the same partition (striped by partition): two
    /// tasks opening one partition would both recover it and hold two logs
    /// over the same files.
    open_locks: Vec<glommio::sync::Semaphore>,
    /// Shard-local state of the layers above (server, metadata), by type.
    extensions: RefCell<HashMap<TypeId, Rc<dyn Any>>>,
    /// Offsets of logs that layers above own and closed themselves (the
    /// metadata log), added to the shutdown checkpoints.
    extra_offsets: RefCell<Vec<PartitionOffsets>>,
    /// Partitions whose clean failed (a corrupt batch, say): the cleaner
    /// skips them until restart, as Kafka marks them uncleanable.
    uncleanable: RefCell<HashSet<TopicPartition>>,
    /// Partitions leaving this shard for another: closed here, and not
    /// opened again here by a metadata image applied meanwhile.
    moving_out: RefCell<HashSet<TopicPartition>>,
    /// Where partitions handed over by another shard stood when it closed
    /// them: their open here starts from these, not from the startup
    /// checkpoints, which are older.
    handed_over: RefCell<HashMap<TopicPartition, PartitionOffsets>>,
    /// Partitions deleted here since startup: the startup checkpoints'
    /// offsets were those of the deleted directory, so a partition of the
    /// same name opened again (a topic created again, or the new topic
    /// that a stray made way for) starts from nothing, not from them.
    deleted_since_startup: RefCell<HashSet<TopicPartition>>,
}

fn hop_failed(to: ShardId) -> LogError {
    LogError::io(
        "cross-shard request",
        format!("shard-{to}"),
        -1,
        std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            "the owning shard has stopped",
        ),
    )
}

impl Shard {
    pub(crate) fn new(
        id: ShardId,
        config: Arc<ShardConfig>,
        startup: Arc<DataDirState>,
        senders: Senders<ShardRequest>,
    ) -> Shard {
        let present: HashSet<&TopicPartition> = startup.partitions.iter().collect();
        let (table, ignored) = PartitionTable::with_placement(
            config.shard_count,
            startup.shard_placement.iter().map(|(tp, &s)| (tp, s)),
            |tp| present.contains(tp),
        );
        if id == 0 && !ignored.is_empty() {
            tracing::warn!(
                "{} partitions were placed on shards this broker no longer has (it runs {} \
                 shards now); they go back to their default shards: {:?}",
                ignored.len(),
                config.shard_count,
                ignored
            );
        }
        Shard {
            id,
            table: RefCell::new(table),
            cache: BatchCache::shared(config.read_cache_bytes),
            config,
            startup,
            logs: RefCell::new(HashMap::new()),
            senders,
            offline_partitions: Cell::new(0),
            storage_failures: Rc::new(Cell::new(0)),
            open_locks: (0..PARTITION_OPEN_LOCK_STRIPES)
                .map(|_| glommio::sync::Semaphore::new(1))
                .collect(),
            extensions: RefCell::new(HashMap::new()),
            extra_offsets: RefCell::new(Vec::new()),
            deleted_since_startup: RefCell::new(HashSet::new()),
            uncleanable: RefCell::new(HashSet::new()),
            moving_out: RefCell::new(HashSet::new()),
            handed_over: RefCell::new(HashMap::new()),
        }
    }

    /// Shard-local state of type `T`, if set.
    pub fn extension<T: 'static>(&self) -> Option<Rc<T>> {
        let e = self.extensions.borrow().get(&TypeId::of::<T>()).cloned()?;
        e.downcast::<T>().ok()
    }

    /// Sets shard-local state of type `T`, replacing any earlier value.
    pub fn set_extension<T: 'static>(&self, value: Rc<T>) {
        self.extensions
            .borrow_mut()
            .insert(TypeId::of::<T>(), value);
    }

    /// Records offsets of a log closed by a layer above, for the checkpoints.
    pub fn add_closed_log_offsets(&self, offsets: PartitionOffsets) {
        self.extra_offsets.borrow_mut().push(offsets);
    }

    /// Runs `f` on shard `to` and returns its result: the way to reach a
    /// partition's owner from any shard. Runs inline when `to` is this shard.
    pub async fn submit_to<R, F, Fut>(self: &Rc<Self>, to: ShardId, f: F) -> LogResult<R>
    where
        R: Send + 'static,
        F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = R> + 'static,
    {
        if to == self.id {
            return Ok(f(self.clone()).await);
        }
        self.ask(to, move |reply| {
            ShardRequest::Run(Box::new(move |shard| {
                Box::pin(async move {
                    let _ = reply.send(f(shard).await);
                })
            }))
        })
        .await
    }

    /// The open log of a local partition.
    pub fn local_log(&self, tp: &TopicPartition) -> Option<Rc<RwLock<PartitionLog>>> {
        self.logs.borrow().get(tp).cloned()
    }

    /// Opens (or creates) a partition on this shard with its settings.
    pub async fn open_local_partition(
        &self,
        tp: TopicPartition,
        config: LogConfig,
    ) -> LogResult<()> {
        self.open_local(tp, Some(config)).await
    }

    /// Closes and deletes a local partition's directory.
    pub async fn delete_local_partition(&self, tp: &TopicPartition) -> LogResult<()> {
        let Some(log) = self.logs.borrow_mut().remove(tp) else {
            return Ok(());
        };
        self.uncleanable.borrow_mut().remove(tp);
        self.deleted_since_startup.borrow_mut().insert(tp.clone());
        let dir = self.config.data_dir.join(tp.dir_name());
        match Rc::try_unwrap(log) {
            Ok(log) => {
                if let Ok(log) = log.into_inner() {
                    if !log.is_offline() {
                        log.close().await?;
                    }
                }
            }
            Err(shared) => {
                // The log cleaner (or a request) still holds the log. Fence it
                // under its lock so that it changes no file of the directory
                // about to go, nor of a partition created again under the
                // same name.
                if let Ok(mut log) = shared.write().await {
                    log.mark_deleted();
                }
            }
        }
        // Rename now, remove later (Kafka's `-delete` directories): the
        // caller applies a metadata image, and a topic deletion answers
        // only once every shard applied it. Removing gigabytes of segments
        // took seconds under load, past the controller's request timeout.
        // A start removes what a crash left renamed.
        let unique = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let doomed = self.config.data_dir.join(tp.deleted_dir_name(unique));
        let (from, to) = (dir.clone(), doomed.clone());
        crate::blocking_pool::run(move || std::fs::rename(from, to))
            .await
            .map_err(|e| LogError::io("rename deleted partition dir", &dir, -1, e))?;
        glommio::spawn_local(async move {
            let d = doomed.clone();
            if let Err(e) = crate::blocking_pool::run(move || std::fs::remove_dir_all(d)).await {
                tracing::warn!(
                    "removing the deleted partition directory {} failed: {e}; the next start \
                     removes it",
                    doomed.display()
                );
            }
        })
        .detach();
        Ok(())
    }

    /// The count of this shard's logs that an I/O error took offline; a
    /// log the shard does not own (the metadata log) may report to it too
    /// ([`PartitionLog::report_failures_to`]).
    pub fn storage_failures(&self) -> StorageFailures {
        self.storage_failures.clone()
    }

    pub fn id(&self) -> ShardId {
        self.id
    }
    pub fn shard_count(&self) -> usize {
        self.config.shard_count
    }
    pub fn owner(&self, tp: &TopicPartition) -> ShardId {
        self.table.borrow().owner(tp)
    }
    /// Records that `tp` now lives on `shard` (this shard's copy of the
    /// table; a move sets it on every shard).
    pub fn set_owner(&self, tp: TopicPartition, shard: ShardId) {
        self.table.borrow_mut().set_owner(tp, shard);
    }
    /// The partitions that live off their default shard.
    pub fn placement(&self) -> Vec<(TopicPartition, ShardId)> {
        self.table.borrow().placement()
    }
    /// The HW `tp` was last checkpointed with: where the shard that handed
    /// it over left it, or the startup checkpoint.
    pub fn checkpointed_high_watermark(&self, tp: &TopicPartition) -> i64 {
        match self.handed_over.borrow().get(tp) {
            Some(h) => h.high_watermark,
            None if self.deleted_since_startup.borrow().contains(tp) => 0,
            None => self.startup.high_watermark(tp),
        }
    }

    /// First step of moving `tp` off this shard: takes its log out of the
    /// shard, so that requests find it gone (and answer with a retriable
    /// error) and images applied meanwhile do not open it again. Returns
    /// the log, still open, for [`close_for_move`](Self::close_for_move).
    pub fn detach_for_move(&self, tp: &TopicPartition) -> Option<Rc<RwLock<PartitionLog>>> {
        let log = self.logs.borrow_mut().remove(tp)?;
        self.moving_out.borrow_mut().insert(tp.clone());
        Some(log)
    }

    /// Closes a detached log once the work in flight on it is done (the
    /// write lock waits for it) and returns where it stands, for the shard
    /// that opens it next. Whoever still holds the log finds it fenced.
    pub async fn close_for_move(
        &self,
        tp: &TopicPartition,
        log: Rc<RwLock<PartitionLog>>,
    ) -> LogResult<PartitionOffsets> {
        let mut log = log.write().await.map_err(|_| hop_failed(self.id))?;
        let offsets = PartitionOffsets {
            tp: tp.clone(),
            recovery_point: log.log_end_offset(),
            log_start_offset: log.log_start_offset(),
            high_watermark: log.high_watermark(),
            cleaner_offset: log.cleaner_checkpoint(),
        };
        log.close_in_place().await?;
        self.uncleanable.borrow_mut().remove(tp);
        Ok(offsets)
    }

    /// Ends a move off this shard: `tp` may be opened here again (by a
    /// later move back).
    pub fn finish_move_out(&self, tp: &TopicPartition) {
        self.moving_out.borrow_mut().remove(tp);
    }

    /// First step of taking `tp` over from another shard: its next open
    /// here starts from `offsets`.
    pub fn hand_over(&self, offsets: PartitionOffsets) {
        self.handed_over
            .borrow_mut()
            .insert(offsets.tp.clone(), offsets);
    }

    /// Ends a move onto this shard, once the partition is open here.
    pub fn finish_move_in(&self, tp: &TopicPartition) {
        self.handed_over.borrow_mut().remove(tp);
    }
    pub(crate) fn senders(&self) -> &Senders<ShardRequest> {
        &self.senders
    }
    /// What the data directory said at startup.
    pub fn startup(&self) -> &DataDirState {
        &self.startup
    }
    /// The shard runtime's settings.
    pub fn config(&self) -> &ShardConfig {
        &self.config
    }
    pub fn cache(&self) -> &SharedBatchCache {
        &self.cache
    }
    /// The open logs of the partitions this shard owns.
    pub fn local_logs(&self) -> Vec<Rc<RwLock<PartitionLog>>> {
        self.logs.borrow().values().cloned().collect()
    }
    /// Partitions this shard owns and has open.
    pub fn local_partitions(&self) -> Vec<TopicPartition> {
        let mut v: Vec<_> = self.logs.borrow().keys().cloned().collect();
        v.sort();
        v
    }

    fn local(&self, tp: &TopicPartition) -> LogResult<Rc<RwLock<PartitionLog>>> {
        self.logs
            .borrow()
            .get(tp)
            .cloned()
            .ok_or_else(|| LogError::OffsetOutOfRange {
                partition: format!("{tp} (not open on shard {})", self.id),
                offset: -1,
                log_start_offset: -1,
                log_end_offset: -1,
            })
    }

    /// A summary of every partition this shard owns.
    pub async fn local_summaries(&self) -> Vec<PartitionSummary> {
        let logs: Vec<_> = self
            .logs
            .borrow()
            .iter()
            .map(|(tp, l)| (tp.clone(), l.clone()))
            .collect();
        let mut out = Vec::with_capacity(logs.len());
        for (tp, log) in logs {
            let Ok(log) = log.read().await else { continue };
            out.push(PartitionSummary {
                tp,
                shard: self.id,
                log_start_offset: log.log_start_offset(),
                high_watermark: log.high_watermark(),
                log_end_offset: log.log_end_offset(),
                segments: log.segment_count(),
                size_bytes: log.size_bytes(),
                recovery: log.recovery_report().clone(),
            });
        }
        out.sort_by(|a, b| a.tp.cmp(&b.tp));
        out
    }

    /// Opens every partition in the data directory that this shard owns.
    /// [`PARTITION_OPENS_IN_FLIGHT`] at a time, stopping at the first
    /// failure.
    pub(crate) async fn open_owned_partitions(self: &Rc<Self>) -> LogResult<()> {
        let mine: Vec<TopicPartition> = self
            .startup
            .partitions
            .iter()
            // The metadata log is opened by the metadata layer, not here.
            .filter(|tp| tp.topic != crate::metadata::METADATA_TOPIC)
            .filter(|tp| self.owner(tp) == self.id)
            .cloned()
            .collect();
        // After a failure the remaining opens are skipped, as a sequential
        // open would stop at the first error.
        let failed = Rc::new(Cell::new(false));
        let shard = self.clone();
        let total = mine.len();
        let opened = Rc::new(Cell::new(0usize));
        let progress = self.config.startup_progress.clone();
        progress.set(self.id, format!("opening its {total} partitions"));
        let results = map_concurrently(mine, PARTITION_OPENS_IN_FLIGHT, move |tp| {
            let (shard, failed) = (shard.clone(), failed.clone());
            let (opened, progress) = (opened.clone(), progress.clone());
            async move {
                if failed.get() {
                    return Ok(());
                }
                progress.set(
                    shard.id,
                    format!(
                        "opening its {total} partitions ({} done, now {tp})",
                        opened.get()
                    ),
                );
                let r = shard.open_local(tp, None).await;
                opened.set(opened.get() + 1);
                failed.set(failed.get() || r.is_err());
                r
            }
        })
        .await;
        results.into_iter().collect()
    }

    fn open_lock_for(&self, tp: &TopicPartition) -> &glommio::sync::Semaphore {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        tp.hash(&mut h);
        &self.open_locks[(h.finish() as usize) % self.open_locks.len()]
    }

    async fn open_local(&self, tp: TopicPartition, config: Option<LogConfig>) -> LogResult<()> {
        let _permit = self
            .open_lock_for(&tp)
            .acquire_permit(1)
            .await
            .map_err(|_| hop_failed(self.id))?;
        if self.logs.borrow().contains_key(&tp) {
            return Ok(());
        }
        if self.moving_out.borrow().contains(&tp) {
            // Closed for a move to another shard, which opens it.
            return Ok(());
        }
        let handed_over = self.handed_over.borrow().get(&tp).cloned();
        let params = match &handed_over {
            // The other shard closed it cleanly a moment ago.
            Some(h) => OpenParams {
                recovery_point: h.recovery_point,
                log_start_offset: h.log_start_offset,
                clean_shutdown: true,
                now_ms: now_ms(),
            },
            // A new directory where a deleted one was: nothing to trust
            // from the checkpoints (and nothing to scan).
            None if self.deleted_since_startup.borrow().contains(&tp) => OpenParams {
                recovery_point: 0,
                log_start_offset: 0,
                clean_shutdown: false,
                now_ms: now_ms(),
            },
            None => OpenParams {
                recovery_point: self.startup.recovery_point(&tp),
                log_start_offset: self.startup.log_start_offset(&tp),
                clean_shutdown: self.startup.clean_shutdown,
                now_ms: now_ms(),
            },
        };
        let config = config.unwrap_or_else(|| self.config.log_defaults.clone());
        let mut log = PartitionLog::open(
            &self.config.data_dir,
            tp.clone(),
            config,
            params,
            Some(self.cache.clone()),
        )
        .await?;
        log.report_failures_to(self.storage_failures.clone());
        let cleaner_offset = match &handed_over {
            Some(h) => h.cleaner_offset,
            None if self.deleted_since_startup.borrow().contains(&tp) => None,
            None => self.startup.cleaner_offset(&tp),
        };
        if let Some(offset) = cleaner_offset {
            log.set_cleaner_checkpoint(offset);
        }
        let r = log.recovery_report();
        if r.segments_recovered > 0 {
            tracing::info!(
                shard = self.id,
                partition = %tp,
                segments = r.segments_recovered,
                bytes_scanned = r.bytes_scanned,
                bytes_truncated = r.bytes_truncated,
                "recovered partition"
            );
        }
        self.logs.borrow_mut().insert(tp, Rc::new(RwLock::new(log)));
        Ok(())
    }

    /// Sends shard `to` the request `make` builds around a reply sender, and
    /// waits for the reply. Every cross-shard wait in pinlog goes through
    /// here: the reply lands in a detached relay task, never in the caller's
    /// own waker (see `cross_shard`: glommio 0.9 can free a task with a live
    /// `JoinHandle` that another thread wakes).
    async fn ask<T: Send + 'static>(
        &self,
        to: ShardId,
        make: impl FnOnce(ReplySender<T>) -> ShardRequest,
    ) -> Result<T, LogError> {
        let (tx, rx) = reply_channel();
        if self.senders.send_to(to, make(tx)).await.is_err() {
            return Err(hop_failed(to));
        }
        rx.recv().await.map_err(|_| hop_failed(to))
    }

    /// Opens (or creates) `tp` on its owning shard.
    pub async fn open_partition(
        &self,
        tp: TopicPartition,
        config: Option<LogConfig>,
    ) -> LogResult<()> {
        let owner = self.owner(&tp);
        if owner == self.id {
            return self.open_local(tp, config).await;
        }
        self.ask(owner, |reply| ShardRequest::OpenPartition {
            tp,
            config,
            reply,
        })
        .await?
    }

    /// Appends producer batches to `tp` as its leader, on the owning shard.
    pub async fn append(
        &self,
        tp: TopicPartition,
        batches: BytesMut,
        leader_epoch: i32,
    ) -> LogResult<AppendInfo> {
        let owner = self.owner(&tp);
        if owner == self.id {
            let log = self.local(&tp)?;
            let mut log = log.write().await.map_err(|_| hop_failed(self.id))?;
            return log
                .append_as_leader(batches, leader_epoch, None, now_ms())
                .await;
        }
        self.ask(owner, |reply| ShardRequest::Append {
            tp,
            batches,
            leader_epoch,
            reply,
        })
        .await?
    }

    /// Reads whole batches from `offset` below the HW. Across shards the
    /// bytes travel as reference-counted `Bytes`; file ranges are read into
    /// memory by the owner (the fetch path reads them on the connection's
    /// shard instead).
    pub async fn read(
        &self,
        tp: TopicPartition,
        offset: i64,
        max_bytes: usize,
    ) -> LogResult<Vec<Bytes>> {
        let owner = self.owner(&tp);
        if owner == self.id {
            let log = self.local(&tp)?;
            let r = {
                let mut log = log.write().await.map_err(|_| hop_failed(self.id))?;
                let hw = log.high_watermark();
                log.read(offset, max_bytes, hw, true).await?
            };
            // The file ranges are read without the log's lock.
            return crate::log::read_through::into_memory(r).await;
        }
        self.ask(owner, |reply| ShardRequest::Read {
            tp,
            offset,
            max_bytes,
            reply,
        })
        .await?
    }

    /// Sets the HW of `tp` on its owner and returns its offsets.
    pub async fn set_high_watermark(
        &self,
        tp: TopicPartition,
        high_watermark: i64,
    ) -> LogResult<PartitionOffsetsView> {
        let owner = self.owner(&tp);
        if owner == self.id {
            let log = self.local(&tp)?;
            let mut log = log.write().await.map_err(|_| hop_failed(self.id))?;
            log.set_high_watermark(high_watermark);
            return Ok(PartitionOffsetsView {
                log_start_offset: log.log_start_offset(),
                high_watermark: log.high_watermark(),
                log_end_offset: log.log_end_offset(),
            });
        }
        self.ask(owner, |reply| ShardRequest::SetHighWatermark {
            tp,
            high_watermark,
            reply,
        })
        .await?
    }

    /// Flushes every partition this shard owns.
    pub async fn flush_local(&self) -> LogResult<()> {
        for log in self.local_logs() {
            let mut log = log.write().await.map_err(|_| hop_failed(self.id))?;
            if !log.is_offline() {
                log.flush().await?;
            }
        }
        Ok(())
    }

    /// Where every local partition stands, for the periodic checkpoints.
    pub async fn local_offsets(&self) -> Vec<PartitionOffsets> {
        let logs: Vec<_> = self
            .logs
            .borrow()
            .iter()
            .map(|(tp, l)| (tp.clone(), l.clone()))
            .collect();
        let mut out = Vec::with_capacity(logs.len());
        for (tp, log) in logs {
            let Ok(log) = log.read().await else { continue };
            out.push(PartitionOffsets {
                tp,
                recovery_point: log.recovery_point(),
                log_start_offset: log.log_start_offset(),
                high_watermark: log.high_watermark(),
                cleaner_offset: log.cleaner_checkpoint(),
            });
        }
        out
    }

    /// Applies retention (`retention.ms`, `retention.bytes`) to local
    /// partitions, logging what it deleted.
    pub async fn retention_tick(&self) {
        let logs: Vec<_> = self.logs.borrow().values().cloned().collect();
        let now = now_ms();
        for log in logs {
            let Ok(mut log) = log.write().await else {
                continue;
            };
            if log.is_offline() {
                continue;
            }
            match log.apply_retention(now).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    partition = %log.topic_partition(),
                    segments = n,
                    log_start_offset = log.log_start_offset(),
                    "retention deleted old segments"
                ),
                Err(e) => {
                    tracing::error!(partition = %log.topic_partition(), "retention failed: {e}")
                }
            }
        }
    }

    /// The log cleaner's turn on this shard: cleans the dirtiest local
    /// compacted log that needs it, then the next, each at most once, until
    /// none is left or `abort` says stop. Returns how many were cleaned.
    /// The cleaning yields to other tasks after every batch and holds a
    /// log's lock only to look and to swap (see `log/cleaner.rs`).
    pub async fn cleaner_tick(&self, options: &CleanerOptions, abort: &dyn Fn() -> bool) -> usize {
        let mut done: HashSet<TopicPartition> = HashSet::new();
        let mut cleaned = 0;
        while !abort() {
            let logs: Vec<_> = self
                .logs
                .borrow()
                .iter()
                .filter(|(tp, _)| !done.contains(*tp) && !self.uncleanable.borrow().contains(*tp))
                .map(|(tp, l)| (tp.clone(), l.clone()))
                .collect();
            let now = now_ms();
            let mut dirtiest: Option<(f64, TopicPartition, Rc<RwLock<PartitionLog>>)> = None;
            for (tp, log) in logs {
                let Ok(guard) = log.read().await else {
                    continue;
                };
                if guard.is_offline() || !guard.config().cleanup_policy.compact {
                    continue;
                }
                let plan = cleaner::view_to_clean(&guard.cleaner_view(), now);
                let ratio = plan.dirty_ratio();
                if plan.should_clean(guard.config().min_cleanable_dirty_ratio)
                    && dirtiest.as_ref().is_none_or(|(r, _, _)| ratio > *r)
                {
                    drop(guard);
                    dirtiest = Some((ratio, tp, log));
                }
            }
            let Some((_, tp, log)) = dirtiest else {
                break;
            };
            done.insert(tp.clone());
            match cleaner::clean_log(&log, options, now_ms(), abort).await {
                Ok(CleanOutcome::Cleaned(_)) => cleaned += 1,
                Ok(CleanOutcome::Nothing | CleanOutcome::Aborted) => {}
                // Deleted meanwhile, or offline after an I/O error that was
                // logged where it happened: nothing more for the cleaner.
                Err(LogError::Offline { .. }) => {}
                Err(e) => {
                    tracing::error!(
                        shard = self.id,
                        partition = %tp,
                        "log cleaner failed; skipping this partition until restart: {e}"
                    );
                    self.uncleanable.borrow_mut().insert(tp);
                }
            }
        }
        cleaned
    }

    /// Flushes every shard's partitions.
    pub async fn flush_all(&self) -> LogResult<()> {
        for s in 0..self.shard_count() {
            if s == self.id {
                self.flush_local().await?;
            } else {
                self.ask(s, |reply| ShardRequest::FlushAll { reply })
                    .await??;
            }
        }
        Ok(())
    }

    /// One round trip to shard `to` with no work: the cost of a hop.
    pub async fn ping(&self, to: ShardId) -> LogResult<usize> {
        if to == self.id {
            return Ok(self.id);
        }
        self.ask(to, |reply| ShardRequest::Ping { reply }).await
    }

    /// Serves one request from a peer. Reply send errors mean the asker
    /// gave up waiting; there is nobody left to tell.
    pub(crate) async fn handle(self: Rc<Self>, req: ShardRequest) {
        match req {
            ShardRequest::Run(task) => task(self.clone()).await,
            ShardRequest::OpenPartition { tp, config, reply } => {
                let _ = reply.send(self.open_local(tp, config).await);
            }
            ShardRequest::Append {
                tp,
                batches,
                leader_epoch,
                reply,
            } => {
                let _ = reply.send(self.append(tp, batches, leader_epoch).await);
            }
            ShardRequest::Read {
                tp,
                offset,
                max_bytes,
                reply,
            } => {
                let _ = reply.send(self.read(tp, offset, max_bytes).await);
            }
            ShardRequest::SetHighWatermark {
                tp,
                high_watermark,
                reply,
            } => {
                let _ = reply.send(self.set_high_watermark(tp, high_watermark).await);
            }
            ShardRequest::FlushAll { reply } => {
                let _ = reply.send(self.flush_local().await);
            }
            ShardRequest::Ping { reply } => {
                let _ = reply.send(self.id);
            }
            ShardRequest::Done => {}
        }
    }

    /// Closes every local partition cleanly and reports where each stands.
    /// Returns `false` in the second field if any partition could not be
    /// closed cleanly (the caller then writes no clean-shutdown marker).
    pub(crate) async fn close_all(&self) -> (Vec<PartitionOffsets>, bool) {
        let logs: Vec<_> = self.logs.borrow_mut().drain().collect();
        let mut offsets: Vec<PartitionOffsets> =
            self.extra_offsets.borrow_mut().drain(..).collect();
        let mut clean = true;
        // Closes write each partition's producer snapshot and flush: waits on
        // the disk, so several run at once, as opens do.
        let closed = map_concurrently(logs, PARTITION_OPENS_IN_FLIGHT, |(tp, log)| async move {
            let Ok(log) = sole_owner(log).await else {
                tracing::error!(partition = %tp, "partition still in use at shutdown");
                return Err(false);
            };
            let log = log.into_inner().expect("lock not poisoned");
            let entry = PartitionOffsets {
                tp: tp.clone(),
                recovery_point: log.log_end_offset(),
                log_start_offset: log.log_start_offset(),
                high_watermark: log.high_watermark(),
                cleaner_offset: log.cleaner_checkpoint(),
            };
            log.close().await.map(|()| entry).map_err(|e| {
                tracing::error!(partition = %tp, "clean close failed: {e}");
                true
            })
        })
        .await;
        // `Err(true)`: the close failed; `Err(false)`: the log was in use.
        for r in closed {
            match r {
                Ok(entry) => offsets.push(entry),
                Err(close_failed) => {
                    clean = false;
                    if close_failed {
                        self.offline_partitions
                            .set(self.offline_partitions.get() + 1);
                    }
                }
            }
        }
        (offsets, clean)
    }

    /// Drops every local partition without closing: what a crash leaves.
    /// For crash tests and the demo only.
    pub(crate) fn abandon_all(&self) {
        self.logs.borrow_mut().clear();
    }
}

/// `rc`'s value once no one else holds it. A task that took a log before
/// the shutdown began (a background epoch-checkpoint write, a read in
/// flight) lets go once its step is done; nothing signals an `Rc`'s last
/// clone going away, so this looks again every few milliseconds, for at
/// most `SHUTDOWN_LOG_HOLDERS_WAIT_MS`.
async fn sole_owner<T>(mut rc: Rc<T>) -> Result<T, Rc<T>> {
    let deadline =
        std::time::Instant::now() + std::time::Duration::from_millis(SHUTDOWN_LOG_HOLDERS_WAIT_MS);
    loop {
        match Rc::try_unwrap(rc) {
            Ok(value) => return Ok(value),
            Err(held) if std::time::Instant::now() < deadline => {
                rc = held;
                glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
            }
            Err(held) => return Err(held),
        }
    }
}

/// Runs `work` on every item, at most `in_flight` at a time, on this shard,
/// and returns the results (in no particular order).
pub async fn map_concurrently<T, R, F, Fut>(items: Vec<T>, in_flight: usize, work: F) -> Vec<R>
where
    T: 'static,
    R: 'static,
    F: Fn(T) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = R> + 'static,
{
    let queue = Rc::new(RefCell::new(VecDeque::from(items)));
    let workers: Vec<_> = (0..in_flight.max(1))
        .map(|_| {
            let queue = queue.clone();
            let work = work.clone();
            glommio::spawn_local(async move {
                let mut done = Vec::new();
                loop {
                    let next = queue.borrow_mut().pop_front();
                    match next {
                        Some(item) => done.push(work(item).await),
                        None => return done,
                    }
                }
            })
        })
        .collect();
    let mut out = Vec::new();
    for w in workers {
        out.extend(w.await);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use glommio::LocalExecutorBuilder;

    #[test]
    fn the_close_waits_for_a_task_holding_the_log_to_let_go() {
        LocalExecutorBuilder::default()
            .spawn(|| async {
                let log = Rc::new(7u32);
                let held = log.clone();
                let holder = glommio::spawn_local(async move {
                    glommio::timer::sleep(std::time::Duration::from_millis(30)).await;
                    drop(held);
                });
                assert_eq!(sole_owner(log).await.ok(), Some(7));
                holder.await;
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
