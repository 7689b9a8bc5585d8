//! The metadata log's partition: `__cluster_metadata-0`, as KRaft names
//! it, stored through the same storage engine. Since the quorum it holds
//! Raft entries (`quorum::log_store`); this module keeps its name
//! and settings, and reads the log of the release before the quorum so
//! that an upgrade starts with every topic.

use crate::config::LogConfig;
use crate::error::{LogError, LogResult};
use crate::log::batch::{self, BatchIter, CountRule};
use crate::log::partition_log::PartitionLog;
use crate::metadata::image::MetadataImage;
use crate::metadata::records::MetadataRecord;
use crate::metadata::METADATA_TOPIC;
use crate::topic_partition::TopicPartition;

/// Metadata segments stay small: the log holds only topic and config changes.
const METADATA_SEGMENT_BYTES: u64 = 8 * 1024 * 1024;

pub fn metadata_partition() -> TopicPartition {
    TopicPartition::new(METADATA_TOPIC, 0)
}

/// The settings of the metadata partition.
pub fn metadata_log_config() -> LogConfig {
    LogConfig {
        segment_bytes: METADATA_SEGMENT_BYTES,
        segment_index_bytes: 1024 * 1024,
        retention_ms: -1,
        retention_bytes: -1,
        ..LogConfig::default()
    }
}

/// Replays a metadata log written before the quorum (pinlog 0.1: batches
/// of metadata records appended by the single-node controller) into the
/// image it describes.
pub async fn replay_pre_quorum_log(log: &mut PartitionLog) -> LogResult<MetadataImage> {
    let mut image = MetadataImage::empty();
    let bytes = log.read_all().await?;
    for item in BatchIter::new(&bytes, CountRule::Compacted) {
        let (position, h) = item.map_err(|(p, e)| LogError::InvalidBatch {
            partition: METADATA_TOPIC.to_string(),
            position: p as u64,
            source: e,
        })?;
        let batch_bytes = &bytes[position..position + h.size_bytes()];
        let records = batch::records(batch_bytes).map_err(|e| LogError::InvalidBatch {
            partition: METADATA_TOPIC.to_string(),
            position: position as u64,
            source: e,
        })?;
        for r in records {
            let r = r.map_err(|e| corrupt(position, e))?;
            let value = r
                .value
                .ok_or_else(|| corrupt(position, "record without a value"))?;
            let record = MetadataRecord::decode(bytes::Bytes::copy_from_slice(value))
                .map_err(|e| corrupt(position, e))?;
            image.apply(h.base_offset.saturating_add(r.offset_delta), &record);
        }
    }
    Ok(image)
}

fn corrupt(position: usize, why: impl std::fmt::Display) -> LogError {
    LogError::CorruptMetadata {
        position,
        reason: why.to_string(),
    }
}
