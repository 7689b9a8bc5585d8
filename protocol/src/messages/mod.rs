//! One file per Kafka API: its request and response structs, each with
//! `decode(&mut Reader, version)` and `encode(&self, &mut BytesMut, version)`.
//! Brokers decode requests and encode responses; the load generator and the
//! tests do the reverse, with the same code.

pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod alter_client_quotas;
pub mod alter_configs;
pub mod alter_partition;
pub mod alter_partition_reassignments;
pub mod alter_share_group_offsets;
pub mod alter_user_scram_credentials;
pub mod api_versions;
pub mod broker_registration;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_acls;
pub mod create_partitions;
pub mod create_topics;
pub mod default_principal_data;
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
pub mod envelope;
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
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod partition_shards;
pub mod produce;
pub mod read_share_group_state;
pub mod read_share_group_state_summary;
pub mod sasl_authenticate;
pub mod sasl_handshake;
pub mod share_acknowledge;
pub mod share_fetch;
pub mod share_group_describe;
pub mod share_group_heartbeat;
pub mod share_group_state;
pub mod sync_group;
pub mod txn_offset_commit;
pub mod unregister_broker;
pub mod update_features;
pub mod write_share_group_state;
pub mod write_txn_markers;

#[cfg(test)]
mod test_support;

use bytes::{BufMut, BytesMut};

use crate::codec::{
    min_array_bytes, min_string_bytes, min_tags_bytes, DecodeResult, Reader, Writer,
};

/// The smallest encoding of a topic entry: an empty name, an empty
/// partition array and (when flexible) an empty tagged-field section.
const fn min_topic_bytes(flexible: bool) -> usize {
    min_string_bytes(flexible) + min_array_bytes(flexible) + min_tags_bytes(flexible)
}

/// A topic named by its name, or (`by_id`: the versions that replaced the
/// name with the id, such as OffsetCommit v10) by its 16-byte id; the
/// other field reads as its default.
fn read_topic_name_or_id(
    r: &mut Reader,
    by_id: bool,
    flexible: bool,
) -> DecodeResult<(String, [u8; 16])> {
    Ok(if by_id {
        (String::new(), r.uuid("topic_id")?)
    } else {
        (r.string("name", flexible)?, [0; 16])
    })
}

/// Writes what [`read_topic_name_or_id`] reads.
fn put_topic_name_or_id(
    w: &mut BytesMut,
    name: &str,
    topic_id: &[u8; 16],
    by_id: bool,
    flexible: bool,
) {
    if by_id {
        w.put_slice(topic_id);
    } else {
        w.put_string(name, flexible);
    }
}
