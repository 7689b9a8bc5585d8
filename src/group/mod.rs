//! Consumer groups of the classic protocol: the coordinator each shard runs
//! for the groups of its `__consumer_offsets` partitions. The group state
//! machine, the stored schema and the offsets topic's partitioning are pure
//! and live in pinlog-core (`core/src/group/`); they are named here so that
//! the whole subsystem reads as one module.

pub mod coordinator;
pub mod offsets_log;

pub use pinlog_core::group::{consumer, consumer_protocol, group, offsets_topic, schema, share};
