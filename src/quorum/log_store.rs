//! The Raft log of the metadata quorum, stored as the partition
//! `__cluster_metadata-0` through pinlog's own storage engine, as KRaft
//! stores it: Raft index = offset, Raft term = the batch's partition leader
//! epoch. Each entry is one record batch of one record, whose value is the
//! postcard encoding of the entry's payload.
//!
//! The vote and the id of the last purged entry live beside the segments
//! in `quorum-state` (Kafka's name for the file), written atomically.
//!
//! The entries above the purge point are also kept in memory: the metadata
//! log is small (snapshots truncate it), openraft reads recent entries on
//! every replication round, and the reader must not await the disk while
//! appends hold the log.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use glommio::sync::RwLock;
use openraft::entry::RaftEntry;
use openraft::storage::{IOFlushed, LogState, RaftLogReader, RaftLogStorage};
use serde::{Deserialize, Serialize};

use crate::error::LogError;
use crate::log::batch::{self, BatchIter, CountRule};
use crate::log::checkpoint::{read_checkpoint_file, write_atomically};
use crate::log::data_dir::PartitionOffsets;
use crate::log::partition_log::{OpenParams, PartitionLog, StorageFailures};
use crate::metadata::METADATA_TOPIC;
use crate::quorum::metadata_log::{metadata_log_config, metadata_partition};
use crate::quorum::types::{log_id, Entry, EntryPayload, LogId, MetadataRaft, Vote};

/// The vote and purge point, beside the segments.
pub const QUORUM_STATE_FILE: &str = "quorum-state";
/// Largest entry payload accepted from the log or a peer. A CreateTopics of
/// thousands of partitions is a few hundred kilobytes.
pub const ENTRY_PAYLOAD_BYTES_MAX: usize = 64 * 1024 * 1024;

/// `quorum-state`: what must survive a crash besides the entries.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct QuorumState {
    vote: Option<Vote>,
    purged: Option<LogId>,
}

/// The `quorum-state` of a log whose entries up to `purged` live only in a
/// snapshot (an upgraded pre-quorum log).
pub fn purged_quorum_state(purged: LogId) -> Vec<u8> {
    serde_json::to_vec(&QuorumState {
        vote: None,
        purged: Some(purged),
    })
    .expect("plain data serialises")
}

/// What the log and its readers share.
#[derive(Default)]
struct Mirror {
    entries: BTreeMap<u64, Entry>,
    vote: Option<Vote>,
    purged: Option<LogId>,
}

/// openraft's log storage on `__cluster_metadata-0`.
pub struct LogStore {
    /// Shared with [`LogCloser`], which closes it after openraft stopped.
    log: Rc<RwLock<Option<PartitionLog>>>,
    state_path: PathBuf,
    mirror: Rc<RefCell<Mirror>>,
}

/// A reader of the in-memory entries and the vote.
#[derive(Clone)]
pub struct LogStoreReader {
    mirror: Rc<RefCell<Mirror>>,
}

/// The open partition, locked.
struct LogGuard<'a>(glommio::sync::RwLockWriteGuard<'a, Option<PartitionLog>>);

impl std::ops::Deref for LogGuard<'_> {
    type Target = PartitionLog;
    fn deref(&self) -> &PartitionLog {
        self.0.as_ref().expect("checked when locked")
    }
}

impl std::ops::DerefMut for LogGuard<'_> {
    fn deref_mut(&mut self) -> &mut PartitionLog {
        self.0.as_mut().expect("checked when locked")
    }
}

/// Closes the metadata partition for a clean shutdown.
#[derive(Clone)]
pub struct LogCloser(Rc<RwLock<Option<PartitionLog>>>);

impl LogCloser {
    /// Closes the partition and reports its offsets for the data
    /// directory's checkpoints; `None` if it was closed already.
    pub async fn close(&self) -> Result<Option<PartitionOffsets>, LogError> {
        let Ok(mut guard) = self.0.write().await else {
            return Ok(None);
        };
        let Some(log) = guard.take() else {
            return Ok(None);
        };
        let offsets = PartitionOffsets {
            tp: metadata_partition(),
            recovery_point: log.log_end_offset(),
            log_start_offset: log.log_start_offset(),
            high_watermark: log.high_watermark(),
            cleaner_offset: None,
        };
        log.close().await?;
        Ok(Some(offsets))
    }
}

fn other(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

impl LogStore {
    /// Opens the metadata partition in `data_dir` and reads its entries;
    /// an I/O error that later takes it offline counts in `failures`.
    /// Startup only: reads `quorum-state` with a blocking call.
    pub async fn open(
        data_dir: &Path,
        params: OpenParams,
        failures: Option<StorageFailures>,
    ) -> Result<LogStore, LogError> {
        let tp = metadata_partition();
        let mut log = PartitionLog::open(data_dir, tp, metadata_log_config(), params, None).await?;
        if let Some(failures) = failures {
            log.report_failures_to(failures);
        }
        let state_path = log.dir().join(QUORUM_STATE_FILE);
        let state = match read_checkpoint_file(&state_path)? {
            Some(bytes) => serde_json::from_slice::<QuorumState>(&bytes).map_err(|e| {
                LogError::CorruptMetadata {
                    position: 0,
                    reason: format!("{}: {e}", state_path.display()),
                }
            })?,
            None => QuorumState::default(),
        };
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        let bytes = log.read_all().await?;
        let mut entries = BTreeMap::new();
        let purged_index = state.purged.map(|p| p.index);
        for item in BatchIter::new(&bytes, CountRule::Compacted) {
            let (position, h) = item.map_err(|(p, e)| LogError::InvalidBatch {
                partition: METADATA_TOPIC.to_string(),
                position: p as u64,
                source: e,
            })?;
            let index = h.base_offset as u64;
            // A crash between writing the purge point and deleting the
            // segments leaves entries the state says are gone.
            if purged_index.is_some_and(|p| index <= p) {
                continue;
            }
            let batch_bytes = &bytes[position..position + h.size_bytes()];
            let entry =
                decode_entry(batch_bytes, h.partition_leader_epoch, index).map_err(|e| {
                    LogError::CorruptMetadata {
                        position,
                        reason: e.to_string(),
                    }
                })?;
            entries.insert(index, entry);
        }
        Ok(LogStore {
            log: Rc::new(RwLock::new(Some(log))),
            state_path,
            mirror: Rc::new(RefCell::new(Mirror {
                entries,
                vote: state.vote,
                purged: state.purged,
            })),
        })
    }

    /// True when the partition holds no entry and no vote was ever cast:
    /// a new quorum member, or a data directory of a release before the
    /// quorum (whose metadata log is migrated by the caller).
    pub fn is_pristine(&self) -> bool {
        let m = self.mirror.borrow();
        m.entries.is_empty() && m.vote.is_none() && m.purged.is_none()
    }

    async fn log(&self) -> io::Result<LogGuard<'_>> {
        let guard = self.log.write().await.map_err(other)?;
        if guard.is_none() {
            return Err(other("the metadata log is closed"));
        }
        Ok(LogGuard(guard))
    }

    /// The handle that closes the partition once openraft has stopped.
    pub fn closer(&self) -> LogCloser {
        LogCloser(self.log.clone())
    }

    async fn write_state(&self) -> io::Result<()> {
        let state = {
            let m = self.mirror.borrow();
            QuorumState {
                vote: m.vote,
                purged: m.purged,
            }
        };
        let bytes = serde_json::to_vec(&state).map_err(other)?;
        write_atomically(self.state_path.clone(), bytes)
            .await
            .map_err(other)
    }
}

/// The record batch that stores `entry`.
pub fn encode_entry(entry: &Entry, now_ms: i64) -> io::Result<Vec<u8>> {
    let term = entry.log_id.leader_id.term;
    let epoch = i32::try_from(term)
        .map_err(|_| other(format!("term {term} does not fit a partition leader epoch")))?;
    let index = i64::try_from(entry.log_id.index).map_err(other)?;
    let value = postcard::to_stdvec(&entry.payload).map_err(other)?;
    Ok(batch::build_batch(&batch::BatchSpec {
        base_offset: index,
        leader_epoch: epoch,
        base_timestamp: now_ms,
        records: &[(0, None, &value[..])],
    }))
}

/// The entry stored in one batch.
pub fn decode_entry(batch_bytes: &[u8], epoch: i32, index: u64) -> io::Result<Entry> {
    let mut records = batch::records(batch_bytes).map_err(other)?;
    let record = records
        .next()
        .ok_or_else(|| other(format!("metadata batch at offset {index} has no record")))?
        .map_err(other)?;
    let value = record
        .value
        .ok_or_else(|| other(format!("metadata record at offset {index} has no value")))?;
    if value.len() > ENTRY_PAYLOAD_BYTES_MAX {
        return Err(other(format!(
            "metadata entry at offset {index} is {} bytes, over {ENTRY_PAYLOAD_BYTES_MAX}",
            value.len()
        )));
    }
    let payload: EntryPayload = postcard::from_bytes(value).map_err(|e| {
        other(format!(
            "metadata entry at offset {index} does not decode: {e}"
        ))
    })?;
    let term = u64::try_from(epoch).map_err(|_| {
        other(format!(
            "metadata batch at offset {index} has epoch {epoch}"
        ))
    })?;
    Ok(Entry::new(log_id(term, index), payload))
}

fn range_of<RB: RangeBounds<u64>>(entries: &BTreeMap<u64, Entry>, range: RB) -> Vec<Entry> {
    entries.range(range).map(|(_, e)| e.clone()).collect()
}

impl RaftLogReader<MetadataRaft> for LogStoreReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        Ok(range_of(&self.mirror.borrow().entries, range))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.mirror.borrow().vote)
    }
}

impl RaftLogReader<MetadataRaft> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        Ok(range_of(&self.mirror.borrow().entries, range))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.mirror.borrow().vote)
    }
}

impl RaftLogStorage<MetadataRaft> for LogStore {
    type LogReader = LogStoreReader;

    async fn get_log_state(&mut self) -> Result<LogState<MetadataRaft>, io::Error> {
        let m = self.mirror.borrow();
        let last = m
            .entries
            .values()
            .next_back()
            .map(|e| e.log_id)
            .or(m.purged);
        Ok(LogState {
            last_purged_log_id: m.purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        LogStoreReader {
            mirror: self.mirror.clone(),
        }
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        self.mirror.borrow_mut().vote = Some(*vote);
        self.write_state().await
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: IOFlushed<MetadataRaft>,
    ) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry>,
    {
        let now = crate::shard::shard::now_ms();
        let entries: Vec<Entry> = entries.into_iter().collect();
        let mut batches = BytesMut::new();
        for entry in &entries {
            batches.extend_from_slice(&encode_entry(entry, now)?);
        }
        if !batches.is_empty() {
            let mut log = self.log().await?;
            // The first entry after a snapshot install can start past the
            // log's end: the log restarts there.
            let first = entries[0].log_id.index as i64;
            if first > log.log_end_offset() {
                log.truncate_fully_and_start_at(first, now)
                    .await
                    .map_err(other)?;
            }
            let result = async {
                log.append_as_follower(Bytes::from(batches), now).await?;
                log.flush().await?;
                let leo = log.log_end_offset();
                log.set_high_watermark(leo);
                Ok::<(), LogError>(())
            }
            .await;
            if let Err(e) = result {
                let e = other(e);
                callback.io_completed(Err(other(&e)));
                return Err(e);
            }
            let mut m = self.mirror.borrow_mut();
            for entry in entries {
                m.entries.insert(entry.log_id.index, entry);
            }
        }
        callback.io_completed(Ok(()));
        Ok(())
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let keep_below = last_log_id.map_or(0, |l| l.index + 1);
        let now = crate::shard::shard::now_ms();
        let mut log = self.log().await?;
        if (keep_below as i64) < log.log_end_offset() {
            log.truncate_to(keep_below as i64, now)
                .await
                .map_err(other)?;
        }
        self.mirror.borrow_mut().entries.split_off(&keep_below);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        {
            let mut m = self.mirror.borrow_mut();
            if m.purged.is_some_and(|p| p.index >= log_id.index) {
                return Ok(());
            }
            m.purged = Some(log_id);
            let keep = m.entries.split_off(&(log_id.index + 1));
            m.entries = keep;
        }
        // The purge point is durable before the entries go, so a crash in
        // between only leaves entries that the next start skips.
        self.write_state().await?;
        let now = crate::shard::shard::now_ms();
        let start = log_id.index as i64 + 1;
        let mut log = self.log().await?;
        if start >= log.log_end_offset() {
            log.truncate_fully_and_start_at(start, now)
                .await
                .map_err(other)?;
        } else {
            log.delete_records_before(start).await.map_err(other)?;
        }
        Ok(())
    }
}
