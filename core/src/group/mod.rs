//! The pure parts of consumer groups: the classic group state machine, the
//! KIP-848 consumer-group coordinator (`consumer/`), the schema of what
//! `__consumer_offsets` stores, and which of its partitions holds a group. The coordinator that runs them on a shard, with the log
//! and timers, is the broker's (`src/group/`).

pub mod consumer;
pub mod consumer_protocol;
#[allow(clippy::module_inception)]
pub mod group;
pub mod offsets_topic;
pub mod schema;
pub mod share;
