//! Cluster metadata: records (after KRaft's), the image they build, the
//! local metadata log that persists them, and topic settings.

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
