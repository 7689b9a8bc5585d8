//! The Kafka broker: connections on every shard, request handlers (one
//! file per API), and the single-node controller.

pub mod append_queue;
pub mod broker;
pub mod broker_lifecycle;
pub mod cluster_id;
pub mod controlled_shutdown;
pub mod controller;
pub mod fetch_sessions;
pub mod fetcher_test_hooks;
pub mod handlers;
pub mod isr_changes;
pub mod kafka_peer;
pub mod metrics;
pub mod metrics_http;
pub mod network;
pub mod offsets_topic;
pub mod partition_load;
pub mod replica_fetcher;
pub mod replication_quotas;
pub mod shard_balancer;
pub mod shard_moves;
pub mod storage_failure;
