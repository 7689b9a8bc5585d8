//! One file per Kafka API. Each `handle` takes the decoded request and
//! returns the response; partition work runs on the owning shard through
//! `Shard::submit_to`.

pub mod access;
pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod alter_client_quotas;
pub mod alter_configs;
pub mod alter_partition_reassignments;
pub mod alter_share_group_offsets;
pub mod alter_user_scram_credentials;
pub mod api_versions;
pub mod config_sources;
pub mod consumer_connections;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_acls;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_acls;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_share_group_offsets;
pub mod delete_share_group_state;
pub mod delete_topics;
pub mod describe_acls;
pub mod describe_client_quotas;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_quorum;
pub mod describe_share_group_offsets;
pub mod describe_transactions;
pub mod describe_user_scram_credentials;
pub mod elect_leaders;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod incremental_alter_configs;
pub mod init_producer_id;
pub mod initialize_share_group_state;
pub mod join_group;
pub mod leave_group;
pub mod list_config_resources;
pub mod list_groups;
pub mod list_offsets;
pub mod list_partition_reassignments;
pub mod list_transactions;
pub mod listener_certificates;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod partition_shards;
pub mod produce;
pub mod produce_verification;
pub mod quota;
pub mod read_share_group_state;
pub mod read_share_group_state_summary;
pub mod share_acknowledge;
pub mod share_fetch;
pub mod share_group_describe;
pub mod share_group_heartbeat;
pub mod share_group_state;
pub mod share_sessions;
pub mod sync_group;
pub mod txn_offset_commit;
pub mod unregister_broker;
pub mod update_features;
pub mod write_share_group_state;
pub mod write_txn_markers;

// What some APIs keep beside their handler: produce's group commit per
// partition, fetch's incremental sessions (KIP-227), and FindCoordinator's
// creation of `__consumer_offsets`.
pub mod append_queue;
pub mod fetch_sessions;
pub mod offsets_topic;

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

/// Kafka's answer to a share-group request (ShareGroupHeartbeat,
/// ShareFetch, ShareAcknowledge) while the cluster's `share.version` is 0,
/// with what to do; `None` when share groups are on.
pub fn share_groups_disabled(
    image: &crate::metadata::image::MetadataImage,
) -> Option<(i16, String)> {
    use crate::metadata::features::{share_groups_enabled, SHARE_VERSION};
    (!share_groups_enabled(image.feature_level(SHARE_VERSION))).then(|| {
        (
            error_code::UNSUPPORTED_VERSION,
            format!(
                "share groups are off on this cluster ({SHARE_VERSION} is 0); switch them on with \
                 kafka-features.sh --bootstrap-server HOST:PORT upgrade --feature {SHARE_VERSION}=1"
            ),
        )
    })
}

/// Kafka's error code for a storage-layer error (named in `node/`, below
/// the coordinators that map log errors too).
pub use crate::node::error_codes::error_code_for;

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
