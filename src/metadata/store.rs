//! The local metadata log: metadata records stored as a Kafka log of their
//! own (`__cluster_metadata-0`, as KRaft names it) through the same storage
//! engine, replayed into an image at startup.
//!
//! Only the controller shard (shard 0) owns the store. Every change is
//! appended and flushed before the new image is published, so an
//! acknowledged topic creation survives a crash. The cluster issue replaces
//! the local append with a Raft proposal; the records and the image stay.

use std::path::Path;
use std::sync::Arc;

use bytes::BytesMut;

use crate::config::LogConfig;
use crate::error::{LogError, LogResult};
use crate::log::batch::{self, BatchIter, CountRule, RecordSpec};
use crate::log::batch_cache::SharedBatchCache;
use crate::log::data_dir::{DataDirState, PartitionOffsets};
use crate::log::partition_log::{OpenParams, PartitionLog};
use crate::log::topic_partition::TopicPartition;
use crate::metadata::image::MetadataImage;
use crate::metadata::records::MetadataRecord;

/// KRaft's name for the metadata log's topic.
pub const METADATA_TOPIC: &str = "__cluster_metadata";
/// Metadata segments stay small: the log holds only topic and config changes.
const METADATA_SEGMENT_BYTES: u64 = 8 * 1024 * 1024;
/// Leader epoch of the single-node metadata log.
pub const METADATA_EPOCH: i32 = 0;

pub fn metadata_partition() -> TopicPartition {
    TopicPartition::new(METADATA_TOPIC, 0)
}

pub struct MetadataStore {
    log: PartitionLog,
    image: Arc<MetadataImage>,
}

impl MetadataStore {
    /// Opens (or creates) the metadata log and replays it.
    pub async fn open(
        data_dir: &Path,
        startup: &DataDirState,
        now_ms: i64,
        cache: Option<SharedBatchCache>,
    ) -> LogResult<MetadataStore> {
        let tp = metadata_partition();
        let config = LogConfig {
            segment_bytes: METADATA_SEGMENT_BYTES,
            segment_index_bytes: 1024 * 1024,
            retention_ms: -1,
            retention_bytes: -1,
            ..LogConfig::default()
        };
        let params = OpenParams {
            recovery_point: startup.recovery_point(&tp),
            log_start_offset: startup.log_start_offset(&tp),
            clean_shutdown: startup.clean_shutdown,
            now_ms,
        };
        let mut log = PartitionLog::open(data_dir, tp, config, params, cache).await?;
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
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
        Ok(MetadataStore {
            log,
            image: Arc::new(image),
        })
    }

    pub fn image(&self) -> Arc<MetadataImage> {
        self.image.clone()
    }

    /// Appends `records` durably and returns the image with them applied.
    pub async fn append(
        &mut self,
        records: &[MetadataRecord],
        now_ms: i64,
    ) -> LogResult<Arc<MetadataImage>> {
        if records.is_empty() {
            return Ok(self.image.clone());
        }
        let values: Vec<bytes::Bytes> = records.iter().map(MetadataRecord::encode).collect();
        let specs: Vec<RecordSpec> = values.iter().map(|v| (0i64, None, &v[..])).collect();
        let batch = batch::build_batch(&batch::BatchSpec {
            base_offset: 0,
            leader_epoch: METADATA_EPOCH,
            base_timestamp: now_ms,
            records: &specs,
        });
        let info = self
            .log
            .append_as_leader(BytesMut::from(&batch[..]), METADATA_EPOCH, None, now_ms)
            .await?;
        self.log.flush().await?;
        let leo = self.log.log_end_offset();
        self.log.set_high_watermark(leo);
        let mut image = (*self.image).clone();
        for (i, r) in records.iter().enumerate() {
            image.apply(info.first_offset + i as i64, r);
        }
        self.image = Arc::new(image);
        Ok(self.image.clone())
    }

    /// Closes the log cleanly and reports its offsets for the checkpoints.
    pub async fn close(self) -> LogResult<PartitionOffsets> {
        let offsets = PartitionOffsets {
            tp: metadata_partition(),
            recovery_point: self.log.log_end_offset(),
            log_start_offset: self.log.log_start_offset(),
            cleaner_offset: None,
        };
        self.log.close().await?;
        Ok(offsets)
    }
}

fn corrupt(position: usize, why: impl std::fmt::Display) -> LogError {
    LogError::CorruptMetadata {
        position,
        reason: why.to_string(),
    }
}
