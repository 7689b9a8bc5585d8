//! The broker shell on glommio, in rooms by subsystem (ARCHITECTURE.md,
//! "Code map"): the network edge, the API handlers, the broker's side of
//! the controller (forwarding, broker sessions), the metadata image
//! applier, the replication shell, the transaction coordinator, the share
//! partitions of share groups, shard placement, the lifecycle and metrics. The
//! decisions they carry out are in pinlog-core.

pub mod controller;
pub mod handlers;
pub mod image_applier;
pub mod lifecycle;
pub mod metrics;
pub mod network;
pub mod replication;
pub mod shard_placement;
pub mod share_partitions;
pub mod share_state;
pub mod txn_coordinator;
