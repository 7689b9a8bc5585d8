//! The node context: per-broker state that the layers above the shard
//! runtime share (the server, the group coordinator, and the controller and
//! replication to come), kept below all of them so that none imports
//! another for it.
//!
//! - [`state::BrokerState`]: settings, identity and the current metadata
//!   image, one per shard;
//! - [`append_waiters::AppendWaiters`]: long polls woken by appends;
//! - [`follower_gains::FollowerGains`]: partitions followers just gained
//!   on this leader, until their fetches ask for them;
//! - [`in_flight_appends::InFlightAppends`]: the leader's group commits
//!   being written, which followers may fetch meanwhile;
//! - [`replicas::Replicas`]: each local partition's replication state, and
//!   the helpers that move a log's HW from it;
//! - [`internal_log`]: a coordinator's replicated write to a partition of
//!   an internal topic;
//! - [`error_codes`]: Kafka's code for each log error;
//! - [`stop::StopHandle`]: the per-broker stop request;
//! - [`ids`]: random ids (UUIDs, cluster ids, member ids);
//! - [`partition_load::PartitionLoad`]: the bytes each partition took in
//!   and sent out on its shard, which produce, fetch and replication count
//!   and the metrics and the core balancer read.
//!
//! **Architecture Invariant:** `node` imports only the shard runtime, the
//! metadata image and the broker settings; `server` and `group` import
//! `node`, never the other way round.

pub mod append_waiters;
pub mod error_codes;
pub mod follower_gains;
pub mod ids;
pub mod in_flight_appends;
pub mod internal_log;
pub mod partition_load;
pub mod replicas;
pub mod state;
pub mod stop;
