//! Where partitions live among this broker's shards: live moves of a
//! partition from one shard to another (`pinlog partition move`), the
//! core balancer's loop, and the per-partition load it weighs. The
//! balancer's decision and the shard table are pure and live in
//! pinlog-core (`crate::shard`).

pub mod balancer;
pub mod moves;
pub mod partition_load;
