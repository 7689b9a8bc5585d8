//! Upgrades from the release before the quorum: its `__cluster_metadata-0`
//! holds batches of metadata records appended by a single-node controller,
//! not Raft entries. On the first start of this release, that log becomes
//! the quorum's first snapshot: the image it builds is written as a
//! snapshot ending at its last offset, `quorum-state` records the entries
//! up to there as purged, and the log restarts at its old end, so offsets
//! keep growing.
//!
//! Crash-safe: `quorum-state` is written last, and a log without it is
//! migrated again (the snapshot is rewritten identically).

use std::collections::BTreeMap;
use std::path::Path;

use openraft::impls::BasicNode;

use crate::error::{LogError, LogResult};
use crate::log::checkpoint::write_atomically;
use crate::log::partition_log::{OpenParams, PartitionLog};
use crate::quorum::log_store::{purged_quorum_state, QUORUM_STATE_FILE};
use crate::quorum::metadata_log::{metadata_log_config, metadata_partition, replay_pre_quorum_log};
use crate::quorum::state_machine::{encode_snapshot, snapshot_file_name};
use crate::quorum::types::{log_id, Membership, SnapshotMeta, StoredMembership};

/// Migrates the metadata log in `data_dir` if it predates the quorum; does
/// nothing for a new or an already migrated one.
pub async fn migrate_pre_quorum_log(
    data_dir: &Path,
    params: OpenParams,
    voters: &BTreeMap<u64, BasicNode>,
) -> LogResult<()> {
    let tp = metadata_partition();
    let dir = data_dir.join(tp.dir_name());
    if !dir.exists() || dir.join(QUORUM_STATE_FILE).exists() {
        return Ok(());
    }
    let now = params.now_ms;
    let mut log = PartitionLog::open(data_dir, tp, metadata_log_config(), params, None).await?;
    let end = log.log_end_offset();
    if end == 0 {
        return log.close().await;
    }
    let mut image = replay_pre_quorum_log(&mut log).await?;
    let last = log_id(0, (end - 1) as u64);
    image.offset = end - 1;
    let membership = Membership::new(vec![voters.keys().copied().collect()], voters.clone())
        .map_err(|e| LogError::CorruptMetadata {
            position: 0,
            reason: format!("the voter set is not valid: {e}"),
        })?;
    let meta = SnapshotMeta {
        last_log_id: Some(last),
        last_membership: StoredMembership::new(Some(last), membership),
    };
    let snapshot = encode_snapshot(&meta, &image).map_err(|e| LogError::CorruptMetadata {
        position: 0,
        reason: e.to_string(),
    })?;
    write_atomically(dir.join(snapshot_file_name(&last)), snapshot).await?;
    write_atomically(dir.join(QUORUM_STATE_FILE), purged_quorum_state(last)).await?;
    log.truncate_fully_and_start_at(end, now).await?;
    log.close().await?;
    tracing::info!(
        topics = image.topics.len(),
        end_offset = end,
        "migrated the metadata log of the release before the quorum to its first snapshot"
    );
    Ok(())
}
