//! Cluster metadata: records (after KRaft's), the image they build, the
//! settings of topics and of the broker that change at runtime. The local
//! log that persists them is the quorum's (`quorum/metadata_log.rs`).

pub mod dynamic_broker_config;
pub mod image;
pub mod records;
pub mod topic_config;

/// Kafka's internal topic for committed offsets and group metadata. Named
/// here, below the group coordinator and the controller, because both need
/// to know it (the controller refuses to delete it).
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// KRaft's name for the metadata log's topic.
pub const METADATA_TOPIC: &str = "__cluster_metadata";
