//! One file per Kafka API. Each `handle` takes the decoded request and
//! returns the response; partition work runs on the owning shard through
//! `Shard::submit_to`.

pub mod alter_configs;
pub mod alter_partition_reassignments;
pub mod api_versions;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_quorum;
pub mod elect_leaders;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod incremental_alter_configs;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_config_resources;
pub mod list_groups;
pub mod list_offsets;
pub mod list_partition_reassignments;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod partition_shards;
pub mod produce;
pub mod sync_group;
pub mod unregister_broker;

// What some APIs keep beside their handler: produce's group commit per
// partition, fetch's incremental sessions (KIP-227), and FindCoordinator's
// creation of `__consumer_offsets`.
pub mod append_queue;
pub mod fetch_sessions;
pub mod offsets_topic;

use crate::error::{BatchError, LogError};
use crate::metadata::image::MetadataImage;
use crate::protocol::error_code;

/// Kafka's answer for each entry of a config resource a request names
/// more than once (`controller::topics::duplicated` finds them); the other
/// resources are applied.
pub fn duplicate_resource() -> (i16, String) {
    (
        error_code::INVALID_REQUEST,
        "each resource may appear at most once in a request; merge its changes into one entry"
            .to_string(),
    )
}

/// Kafka's error code for a storage-layer error.
pub fn error_code_for(e: &LogError) -> i16 {
    match e {
        LogError::InvalidBatch { source, .. } => match source {
            BatchError::TooLarge { .. } => error_code::MESSAGE_TOO_LARGE,
            BatchError::UnsupportedMagic { .. } => error_code::UNSUPPORTED_FOR_MESSAGE_FORMAT,
            BatchError::CrcMismatch { .. } => error_code::CORRUPT_MESSAGE,
            _ => error_code::INVALID_RECORD,
        },
        LogError::OffsetOutOfRange { .. } => error_code::OFFSET_OUT_OF_RANGE,
        LogError::NonMonotonicAppend { .. } => error_code::INVALID_RECORD,
        LogError::OutOfOrderSequence { .. } => error_code::OUT_OF_ORDER_SEQUENCE_NUMBER,
        LogError::InvalidProducerEpoch { .. } => error_code::INVALID_PRODUCER_EPOCH,
        LogError::InvalidTxnState { .. } => error_code::INVALID_TXN_STATE,
        LogError::TransactionCoordinatorFenced { .. } => error_code::TRANSACTION_COORDINATOR_FENCED,
        LogError::MixedDuplicateAppend { .. } => error_code::INVALID_RECORD,
        LogError::Io { .. } | LogError::Offline { .. } => error_code::KAFKA_STORAGE_ERROR,
        _ => error_code::UNKNOWN_SERVER_ERROR,
    }
}

/// Checks a request's current leader epoch against the partition's:
/// older is fenced, newer is not yet known here, -1 skips the check.
pub fn check_leader_epoch(
    image: &MetadataImage,
    topic: &str,
    partition: i32,
    requested: i32,
) -> Result<i32, i16> {
    let Some(p) = image.partition(topic, partition) else {
        return Err(error_code::UNKNOWN_TOPIC_OR_PARTITION);
    };
    if requested >= 0 && requested < p.leader_epoch {
        return Err(error_code::FENCED_LEADER_EPOCH);
    }
    if requested > p.leader_epoch {
        return Err(error_code::UNKNOWN_LEADER_EPOCH);
    }
    Ok(p.leader_epoch)
}
