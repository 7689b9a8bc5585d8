//! Where partitions live among this broker's shards: live moves of a
//! partition from one shard to another (`pinlog partition move`), the
//! core balancer's loop. The load it weighs is counted in
//! `node/partition_load.rs`, where produce, fetch and replication count
//! it; the balancer's decision and the shard table are pure and live in
//! pinlog-core (`crate::shard`).

pub mod balancer;
pub mod moves;
