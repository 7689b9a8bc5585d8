//! pinlog's pure cores: the decisions of replication, the controller, the
//! consumer-group state machine, a partition's transactions and their
//! markers, the fetch sessions (the leader's KIP-227
//! cache and the follower's side), the shard table and balancer, the
//! throttle meters, and the settings and metadata image they read. Nothing
//! here does I/O, reads a clock or draws randomness: time, ids and the
//! settings file's text are parameters, and the broker shell (the `pinlog`
//! crate) carries out what these return. This crate's Cargo.toml has no
//! glommio, so the compiler keeps it that way (ARCHITECTURE.md, "Layers").

pub mod acl;
pub mod broker_config;
pub mod config;
pub mod constants;
pub mod controller;
pub mod fetch_session_cache;
pub mod group;
pub mod metadata;
pub mod quota;
pub mod replica;
pub mod sasl;
pub mod shard;
pub mod ssl_principal;
pub mod topic_partition;
pub mod transaction;

// The wire protocol, under the name the modules used before the split.
pub use pinlog_protocol as protocol;
