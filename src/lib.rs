//! pinlog: a Kafka-compatible commit-log broker, thread-per-core on glommio.
//!
//! See `ARCHITECTURE.md` for the map of this crate.

pub mod blocking_pool;
pub mod cgroup;
pub mod cli;
pub mod demo;
pub mod error;
pub mod group;
pub mod log;
pub mod memory;
pub mod node;
pub mod quorum;
pub mod security;
pub mod server;
pub mod shard;
pub mod ticks;
pub mod tools;

// The crates below this one, under the names the modules used before the
// split, so that every `crate::protocol::...` path still reads as it did.
pub use pinlog_core::{
    acl, broker_config, config, constants, controller, fetch_session_cache, metadata, quota,
    replica, sasl, ssl_principal, topic_partition, transaction,
};
pub use pinlog_protocol as protocol;
