//! Consumer groups of the classic protocol: the coordinator each shard runs
//! for the groups of its `__consumer_offsets` partitions.

pub mod coordinator;
#[allow(clippy::module_inception)]
pub mod group;
pub mod offsets_log;
pub mod offsets_topic;
pub mod schema;
