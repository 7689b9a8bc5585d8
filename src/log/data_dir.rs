//! Per-data-directory state: the clean-shutdown marker and Kafka's
//! `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint` and
//! `cleaner-offset-checkpoint`.
//!
//! These files belong to the whole directory while partitions belong to
//! shards, so they are read before the shards start and written after they
//! stop, on the main thread. Blocking file I/O here never runs on a shard.

use std::collections::HashMap;
use std::path::Path;

use crate::constants::{
    BOOT_ID_PATH, CLEANER_OFFSET_CHECKPOINT_FILE, CLEAN_SHUTDOWN_FILE, LAST_REGISTRATION_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE, RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE, SHARD_PLACEMENT_FILE,
};
use crate::error::{LogError, LogResult};
use crate::log::checkpoint::{self, OffsetCheckpointEntry};
use crate::topic_partition::TopicPartition;

/// What a data directory says about the last shutdown.
#[derive(Debug, Clone, Default)]
pub struct DataDirState {
    pub clean_shutdown: bool,
    /// The broker epoch the next registration sends as KIP-966's
    /// `PreviousBrokerEpoch`, telling the controller that nothing this
    /// broker wrote was lost: the one the clean-shutdown marker recorded,
    /// or, after a process crash on a machine that kept running, the last
    /// registration's (see [`previous_broker_epoch`]). `None` otherwise.
    pub previous_broker_epoch: Option<i64>,
    pub recovery_points: HashMap<TopicPartition, i64>,
    pub log_start_offsets: HashMap<TopicPartition, i64>,
    /// Where the last clean of each compacted partition ended.
    pub cleaner_offsets: HashMap<TopicPartition, i64>,
    /// From `replication-offset-checkpoint`: each partition's HW.
    pub high_watermarks: HashMap<TopicPartition, i64>,
    /// From `shard-placement`: partitions moved off their default shard.
    pub shard_placement: HashMap<TopicPartition, i64>,
    pub partitions: Vec<TopicPartition>,
}

impl DataDirState {
    pub fn recovery_point(&self, tp: &TopicPartition) -> i64 {
        self.recovery_points.get(tp).copied().unwrap_or(0)
    }
    pub fn log_start_offset(&self, tp: &TopicPartition) -> i64 {
        self.log_start_offsets.get(tp).copied().unwrap_or(0)
    }
    /// The checkpointed HW; 0 when unknown (the HW then starts at the log
    /// start and catches up as the leader reports it).
    pub fn high_watermark(&self, tp: &TopicPartition) -> i64 {
        self.high_watermarks.get(tp).copied().unwrap_or(0)
    }
    pub fn cleaner_offset(&self, tp: &TopicPartition) -> Option<i64> {
        self.cleaner_offsets.get(tp).copied()
    }
}

/// Where one partition stood when its shard stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionOffsets {
    pub tp: TopicPartition,
    pub recovery_point: i64,
    pub log_start_offset: i64,
    pub high_watermark: i64,
    /// Where the last clean ended; `None` for a log never cleaned.
    pub cleaner_offset: Option<i64>,
}

/// Reads the directory's state at startup, creating the directory if needed,
/// and removes the clean-shutdown marker: from here on a crash must be
/// detected as one, as in Kafka.
pub fn load_data_dir(dir: &Path) -> LogResult<DataDirState> {
    create_dir_durably(dir).map_err(|e| LogError::io("create data dir", dir, -1, e))?;
    let marker = dir.join(CLEAN_SHUTDOWN_FILE);
    let clean_shutdown = marker.exists();
    let previous_broker_epoch = previous_broker_epoch(dir, clean_shutdown)?;
    let read = |name: &str| -> LogResult<HashMap<TopicPartition, i64>> {
        let path = dir.join(name);
        let Some(bytes) = checkpoint::read_checkpoint_file(&path)? else {
            return Ok(HashMap::new());
        };
        Ok(checkpoint::decode_offset_checkpoint(&path, &bytes)?
            .into_iter()
            .map(|e| (TopicPartition::new(e.topic, e.partition), e.offset))
            .collect())
    };
    let recovery_points = read(RECOVERY_POINT_CHECKPOINT_FILE)?;
    let log_start_offsets = read(LOG_START_OFFSET_CHECKPOINT_FILE)?;
    let cleaner_offsets = read(CLEANER_OFFSET_CHECKPOINT_FILE)?;
    let high_watermarks = read(REPLICATION_OFFSET_CHECKPOINT_FILE)?;
    let shard_placement = read(SHARD_PLACEMENT_FILE)?;
    let partitions = list_partitions(dir)?;
    if clean_shutdown {
        std::fs::remove_file(&marker)
            .map_err(|e| LogError::io("remove clean-shutdown marker", &marker, -1, e))?;
        sync_dir(dir)?;
    }
    Ok(DataDirState {
        clean_shutdown,
        previous_broker_epoch,
        recovery_points,
        log_start_offsets,
        cleaner_offsets,
        high_watermarks,
        shard_placement,
        partitions,
    })
}

/// Partition directories (`<topic>-<partition>`) under `dir`, sorted.
/// Removes the directories of deleted partitions found on the way.
pub fn list_partitions(dir: &Path) -> LogResult<Vec<TopicPartition>> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| LogError::io("list data dir", dir, -1, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| LogError::io("list data dir", dir, -1, e))?;
        let is_dir = entry
            .file_type()
            .map_err(|e| LogError::io("stat", entry.path(), -1, e))?
            .is_dir();
        if !is_dir {
            continue;
        }
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if TopicPartition::is_deleted_dir_name(name) {
            // A deleted partition whose removal a crash or a stop cut
            // short (see `Shard::delete_local_partition`).
            let path = entry.path();
            match std::fs::remove_dir_all(&path) {
                Ok(()) => tracing::info!("removed the deleted partition directory {name}"),
                Err(e) => tracing::warn!(
                    "cannot remove the deleted partition directory {}: {e}; remove it by hand",
                    path.display()
                ),
            }
            continue;
        }
        if let Some(tp) = TopicPartition::parse_dir_name(name) {
            out.push(tp);
        }
    }
    out.sort();
    Ok(out)
}

/// Writes the offset checkpoints and, when every shard closed its logs
/// cleanly, the clean-shutdown marker last, so that a crash while writing
/// leaves no marker.
/// KIP-966's previous broker epoch for a data directory. Kafka trusts only
/// a clean shutdown. pinlog also trusts a process crash while the machine
/// kept running: every write the kernel completed (direct-I/O appends,
/// checkpoints in the page cache) survives the process, and what was in
/// flight was never reported to a leader or a client. Only a machine crash
/// or power loss can lose completed writes, and it changes the boot id, so
/// the last registration counts only when it was made in this boot.
fn previous_broker_epoch(dir: &Path, clean_shutdown: bool) -> LogResult<Option<i64>> {
    if clean_shutdown {
        let marker = dir.join(CLEAN_SHUTDOWN_FILE);
        let bytes = std::fs::read(&marker)
            .map_err(|e| LogError::io("read clean-shutdown marker", &marker, -1, e))?;
        if let Some(epoch) = marker_broker_epoch(&bytes) {
            return Ok(Some(epoch));
        }
    }
    let path = dir.join(LAST_REGISTRATION_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LogError::io("read last registration", &path, -1, e)),
    };
    Ok(match (registration_in_boot(&bytes), current_boot_id()) {
        (Some((epoch, boot)), Some(now)) if boot == now => Some(epoch),
        _ => None,
    })
}

/// Test hook: a boot id that replaces the kernel's. The power-loss tests
/// set a new one for each simulated power cut, as the reboot that follows
/// a real one would; their file system forgets unsynced writes but cannot
/// change the kernel's boot id.
pub const TEST_BOOT_ID_ENV: &str = "PINLOG_TEST_BOOT_ID";

/// The id of the running boot of this machine, `None` where the kernel
/// does not say (then no crash is trusted).
pub fn current_boot_id() -> Option<String> {
    if let Some(id) = std::env::var(TEST_BOOT_ID_ENV)
        .ok()
        .filter(|id| !id.is_empty())
    {
        return Some(id);
    }
    let id = std::fs::read_to_string(BOOT_ID_PATH).ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_string())
}

/// The last-registration file's contents.
pub fn registration_contents(broker_epoch: i64, boot_id: &str) -> Vec<u8> {
    serde_json::json!({"version": 0, "brokerEpoch": broker_epoch, "bootId": boot_id})
        .to_string()
        .into_bytes()
}

/// The broker epoch and boot id a last-registration file holds.
pub fn registration_in_boot(bytes: &[u8]) -> Option<(i64, String)> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let epoch = value.get("brokerEpoch")?.as_i64().filter(|&e| e >= 0)?;
    let boot = value.get("bootId")?.as_str()?.to_string();
    Some((epoch, boot))
}

/// Records a registration (its broker epoch, in this boot), so that a
/// process crash can still prove its log intact at the next start. Runs
/// the blocking write off the shard thread. Without a boot id there is
/// nothing to record.
pub async fn record_registration(dir: &Path, broker_epoch: i64) -> LogResult<()> {
    let Some(boot_id) = current_boot_id() else {
        return Ok(());
    };
    let path = dir.join(LAST_REGISTRATION_FILE);
    crate::blocking_pool::run(move || {
        checkpoint::write_atomically_blocking(&path, &registration_contents(broker_epoch, &boot_id))
            .map_err(|e| LogError::io("write last registration", &path, -1, e))
    })
    .await
}

/// The clean-shutdown marker's contents, as Kafka's
/// `CleanShutdownFileHandler` writes them: `{"version":0,"brokerEpoch":N}`
/// (N is -1 for a broker that never registered).
pub fn marker_contents(broker_epoch: i64) -> Vec<u8> {
    format!("{{\"version\":0,\"brokerEpoch\":{broker_epoch}}}").into_bytes()
}

/// The broker epoch in a clean-shutdown marker: `None` for an empty marker
/// (earlier releases), one that does not parse, or an epoch of -1.
pub fn marker_broker_epoch(bytes: &[u8]) -> Option<i64> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    value
        .get("brokerEpoch")
        .and_then(serde_json::Value::as_i64)
        .filter(|&e| e >= 0)
}

/// Writes the checkpoints, and the clean-shutdown marker with
/// `broker_epoch` when `clean`.
pub fn write_shutdown_state(
    dir: &Path,
    offsets: &[PartitionOffsets],
    clean: bool,
    broker_epoch: i64,
) -> LogResult<()> {
    let entries = |f: fn(&PartitionOffsets) -> i64| -> Vec<OffsetCheckpointEntry> {
        offsets
            .iter()
            .map(|o| OffsetCheckpointEntry {
                topic: o.tp.topic.clone(),
                partition: o.tp.partition,
                offset: f(o),
            })
            .collect()
    };
    write(
        dir,
        RECOVERY_POINT_CHECKPOINT_FILE,
        &entries(|o| o.recovery_point),
    )?;
    write(
        dir,
        LOG_START_OFFSET_CHECKPOINT_FILE,
        &entries(|o| o.log_start_offset),
    )?;
    write(
        dir,
        REPLICATION_OFFSET_CHECKPOINT_FILE,
        &entries(|o| o.high_watermark),
    )?;
    // Kafka lists only the partitions the cleaner has seen. Losing an entry
    // (a crash before this write) only makes the next clean redo work.
    let cleaned: Vec<OffsetCheckpointEntry> = offsets
        .iter()
        .filter_map(|o| {
            o.cleaner_offset.map(|offset| OffsetCheckpointEntry {
                topic: o.tp.topic.clone(),
                partition: o.tp.partition,
                offset,
            })
        })
        .collect();
    write(dir, CLEANER_OFFSET_CHECKPOINT_FILE, &cleaned)?;
    if clean {
        let marker = dir.join(CLEAN_SHUTDOWN_FILE);
        checkpoint::write_atomically_blocking(&marker, &marker_contents(broker_epoch))
            .map_err(|e| LogError::io("write clean-shutdown marker", &marker, -1, e))?;
    }
    Ok(())
}

/// Writes both offset checkpoints while the broker runs (Kafka's
/// `log.flush.offset.checkpoint.interval.ms`), so that a crash rescans only
/// what was written since. Runs the blocking writes off the shard thread.
pub async fn write_checkpoints(dir: &Path, offsets: Vec<PartitionOffsets>) -> LogResult<()> {
    let dir = dir.to_path_buf();
    crate::blocking_pool::run(move || write_shutdown_state(&dir, &offsets, false, -1)).await
}

/// Replaces the directory's `shard-placement` file with `placement`: the
/// partitions that live off their default shard, and where.
pub async fn write_shard_placement(
    dir: &Path,
    placement: Vec<(TopicPartition, usize)>,
) -> LogResult<()> {
    let entries: Vec<OffsetCheckpointEntry> = placement
        .into_iter()
        .map(|(tp, shard)| OffsetCheckpointEntry {
            topic: tp.topic,
            partition: tp.partition,
            offset: shard as i64,
        })
        .collect();
    let dir = dir.to_path_buf();
    crate::blocking_pool::run(move || write(&dir, SHARD_PLACEMENT_FILE, &entries)).await
}

fn write(dir: &Path, name: &str, entries: &[OffsetCheckpointEntry]) -> LogResult<()> {
    let path = dir.join(name);
    checkpoint::write_atomically_blocking(&path, &checkpoint::encode_offset_checkpoint(entries))
        .map_err(|e| LogError::io("write checkpoint", &path, -1, e))
}

/// Creates `dir` and any missing ancestors, then fsyncs the parent of each
/// directory it created, so that a power loss cannot take the new data
/// directory, and everything later made durable inside it, away (Kafka's
/// LogManager flushes the parent of a log directory it creates likewise).
/// Blocking: runs once at startup, before the shards.
pub fn create_dir_durably(dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        missing.push(d.to_path_buf());
        at = d.parent();
    }
    std::fs::create_dir_all(dir)?;
    for created in &missing {
        let parent = match created.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::File::open(parent)?.sync_all()?;
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> LogResult<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| LogError::io("fsync data dir", dir, -1, e))
}

/// The lock file Kafka also keeps in every log directory.
pub const DATA_DIR_LOCK_FILE: &str = ".lock";

/// An exclusive `flock` on the data directory's `.lock` file, held for as
/// long as a broker serves from it. Two brokers on one directory would
/// append to the same segments and overwrite each other's checkpoints. The
/// kernel drops the lock when the process dies, kill -9 included, so a
/// crashed broker never leaves a stale lock behind.
#[derive(Debug)]
pub struct DataDirLock {
    _file: std::fs::File,
}

impl DataDirLock {
    pub fn acquire(dir: &Path) -> Result<Self, String> {
        create_dir_durably(dir)
            .map_err(|e| format!("cannot create data directory {}: {e}", dir.display()))?;
        let path = dir.join(DATA_DIR_LOCK_FILE);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        // SAFETY: flock on a descriptor we own; no memory is passed.
        let r = unsafe {
            libc::flock(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            return Err(if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                format!(
                    "data directory {} is in use by another pinlog process (it holds {}); stop that broker first, or choose another --data-dir",
                    dir.display(),
                    path.display()
                )
            } else {
                format!("cannot lock {}: {e}", path.display())
            });
        }
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_carries_the_broker_epoch_as_kafka_writes_it() {
        assert_eq!(marker_contents(42), br#"{"version":0,"brokerEpoch":42}"#);
        assert_eq!(marker_broker_epoch(&marker_contents(42)), Some(42));
        assert_eq!(marker_broker_epoch(&marker_contents(-1)), None);
        // Earlier releases wrote an empty marker.
        assert_eq!(marker_broker_epoch(b""), None);
        assert_eq!(marker_broker_epoch(b"{\"version\":0}"), None);
    }

    #[test]
    fn a_crash_keeps_the_last_registration_only_within_the_same_boot() {
        let dir = std::env::temp_dir().join(format!("pinlog-boot-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let boot = current_boot_id().expect("Linux gives a boot id");
        let file = dir.join(LAST_REGISTRATION_FILE);
        std::fs::write(&file, registration_contents(12, &boot)).unwrap();
        assert_eq!(load_data_dir(&dir).unwrap().previous_broker_epoch, Some(12));
        // Another boot: the machine went down, unflushed writes may be gone.
        std::fs::write(&file, registration_contents(12, "another-boot")).unwrap();
        assert_eq!(load_data_dir(&dir).unwrap().previous_broker_epoch, None);
        // A clean shutdown's marker wins over the last registration.
        write_shutdown_state(&dir, &[], true, 15).unwrap();
        assert_eq!(load_data_dir(&dir).unwrap().previous_broker_epoch, Some(15));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_clean_shutdown_hands_its_broker_epoch_to_the_next_start() {
        let dir = std::env::temp_dir().join(format!("pinlog-marker-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        write_shutdown_state(&dir, &[], true, 7).unwrap();
        let state = load_data_dir(&dir).unwrap();
        assert!(state.clean_shutdown);
        assert_eq!(state.previous_broker_epoch, Some(7));
        // The marker is gone: a crash from here on is seen as one.
        let state = load_data_dir(&dir).unwrap();
        assert!(!state.clean_shutdown);
        assert_eq!(state.previous_broker_epoch, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_start_removes_deleted_partitions_and_loads_the_rest() {
        let dir = std::env::temp_dir().join(format!("pinlog-deleted-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let kept = TopicPartition::new("orders", 0);
        let deleted = TopicPartition::new("orders", 1).deleted_dir_name(0xabc);
        std::fs::create_dir_all(dir.join(kept.dir_name())).unwrap();
        std::fs::create_dir_all(dir.join(&deleted)).unwrap();
        std::fs::write(dir.join(&deleted).join("00000000000000000000.log"), b"x").unwrap();
        assert_eq!(list_partitions(&dir).unwrap(), vec![kept]);
        assert!(
            !dir.join(&deleted).exists(),
            "a crash's leftover is removed"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
