//! The shard runtime: one pinned glommio executor per core, each owning a
//! disjoint set of partitions, talking to the others only by messages. The
//! partition-to-shard table and the core balancer's decision are pure and
//! live in pinlog-core (`core/src/shard/`); they are named here so that the
//! whole subsystem reads as one module.

pub mod cache_budget;
pub mod checkpoints;
pub mod cross_shard;
pub mod flush_policy;
pub mod messages;
pub mod runtime;
#[allow(clippy::module_inception)]
pub mod shard;
pub mod spin;
pub mod startup_progress;

pub use pinlog_core::shard::{balancer, partition_table};
