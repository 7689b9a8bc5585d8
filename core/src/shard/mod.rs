//! The pure decisions of the shard layer: which shard owns which partition,
//! and which partitions the core balancer moves. The runtime that carries
//! them out is the broker's (`src/shard/`).

pub mod balancer;
pub mod partition_table;
