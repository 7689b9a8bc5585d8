//! Share groups (KIP-932): the pure parts, without an executor or I/O.
//!
//! - `records.rs`: what a share group stores in `__consumer_offsets`
//!   (Kafka's key types 10-15).
//! - `state_records.rs`: what the share coordinator stores in
//!   `__share_group_state` (ShareSnapshot, ShareUpdate).
//! - `partition.rs`: a share partition's delivery state (Kafka's
//!   `SharePartition`) as a state machine: the window, acquisition with
//!   locks, acknowledgement, lock expiry, the delivery limit, and the state
//!   writes that make it durable.
//! - `partition_state.rs`: that durable state as the share coordinator
//!   keeps it, folded from snapshots and updates (or writes), from which a
//!   partition is loaded again.
//! - `state_store.rs`: the share coordinator's decisions: the state of
//!   every share partition of a `__share_group_state` partition, the
//!   record each state API writes (fencing, snapshot or update), and how
//!   much of the log a load still needs.
//! - `group.rs`: a share group's membership (ShareGroupHeartbeat): member
//!   epochs, subscriptions, the target assignment, sessions; records out,
//!   replayed in, as the consumer group's core does.
//! - `assignor.rs`: the `simple` assignor, which may give one partition to
//!   several members.
//! - `session.rs`: share sessions (ShareFetch and ShareAcknowledge epochs,
//!   the partitions a member fetches from one broker).

pub mod assignor;
pub mod group;
pub mod partition;
pub mod partition_state;
pub mod records;
pub mod session;
pub mod state_records;
pub mod state_store;

#[cfg(test)]
mod group_tests;
#[cfg(test)]
mod partition_tests;

pub use group::{
    replay_into, ShareGroup, ShareGroupMember, ShareGroupState, ShareHeartbeatContext,
    ShareHeartbeatOutcome,
};
pub use partition::{
    AcknowledgeError, AcknowledgeType, Acknowledgement, Acquisition, RecordState, SharePartition,
    StateWrite,
};
pub use partition_state::DurableShareState;
pub use records::ShareGroupRecord;
pub use state_records::{SharePartitionKey, ShareStateRecord};
