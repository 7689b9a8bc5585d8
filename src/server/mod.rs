//! The Kafka broker: connections on every shard, request handlers (one
//! file per API), and the single-node controller.

pub mod append_queue;
pub mod controller;
pub mod fetch_sessions;
pub mod handlers;
pub mod lifecycle;
pub mod metrics;
pub mod network;
pub mod offsets_topic;
pub mod replication;
pub mod shard_placement;
