//! The shard runtime: one pinned glommio executor per core, each owning a
//! disjoint set of partitions, talking to the others only by messages.

pub mod balancer;
pub mod cross_shard;
pub mod messages;
pub mod partition_table;
pub mod runtime;
#[allow(clippy::module_inception)]
pub mod shard;
