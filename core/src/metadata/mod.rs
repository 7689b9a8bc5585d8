//! Cluster metadata: records (after KRaft's), the image they build, the
//! settings of topics and of the broker that change at runtime, and the
//! feature levels pinlog implements. The local
//! log that persists them is the quorum's (`quorum/metadata_log.rs`).

pub mod dynamic_broker_config;
pub mod features;
pub mod group_config;
pub mod image;
pub mod records;
pub mod topic_config;

/// Kafka's internal topic for committed offsets and group metadata. Named
/// here, below the group coordinator and the controller, because both need
/// to know it (the controller refuses to delete it).
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Kafka's internal topic for the transaction coordinator's state.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// Kafka's internal topic for the share coordinator's state (KIP-932):
/// share partitions' delivery state, as ShareSnapshot and ShareUpdate
/// records.
pub const SHARE_GROUP_STATE_TOPIC: &str = "__share_group_state";

/// Whether `topic` is one of Kafka's internal topics, which only the
/// coordinators write and nobody deletes.
pub fn is_internal_topic(topic: &str) -> bool {
    topic == OFFSETS_TOPIC || topic == TRANSACTION_STATE_TOPIC || topic == SHARE_GROUP_STATE_TOPIC
}

/// KRaft's name for the metadata log's topic.
pub const METADATA_TOPIC: &str = "__cluster_metadata";
