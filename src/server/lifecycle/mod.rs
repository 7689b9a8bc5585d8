//! The broker's lifecycle: `pinlog serve` starting and stopping the shards
//! (`broker.rs`), its identity on disk, its registration and heartbeats
//! with the controller, controlled shutdown, and stopping on a failed disk.

pub mod broker;
pub mod cluster_id;
pub mod controlled_shutdown;
pub mod registration;
pub mod storage_failure;
