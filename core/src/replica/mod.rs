//! Replication decisions for one partition, as a pure state machine.
//!
//! [`ReplicaState`] holds what Kafka's `Partition` holds about replication:
//! this replica's role, the leader and partition epochs, the committed ISR
//! and any ISR change in flight, each follower's progress, and the high
//! watermark. The shard that owns the partition feeds it events (an
//! assignment from the metadata image, a local append, a follower's fetch,
//! a leader's fetch response, a truncation, a tick) and carries out what the
//! returned values say (advance the HW, send AlterPartition, truncate). It
//! does no I/O and reads no clock, so tests drive it deterministically.
//!
//! # The contract with the I/O around it
//! - **Leader, new epoch:** the epoch-cache entry `[epoch, LEO]` is written
//!   (and its checkpoint persisted) before the first append of the epoch.
//! - **Follower:** the fetched batches are appended to the log before the
//!   next fetch reports the new LEO; the LEO a follower reports is never
//!   ahead of what its log holds (fsync is the flush policy's business, as
//!   in Kafka).
//! - **Follower, new epoch:** it truncates to the divergence point
//!   ([`truncation_offset`]) before its first fetch in that epoch, and calls
//!   [`ReplicaState::on_truncated`] after the truncation.
//! - **HW:** the value from [`ReplicaState::high_watermark`] is what
//!   consumers may read up to. It is checkpointed periodically
//!   (`replication-offset-checkpoint`); a checkpoint behind the true HW is
//!   safe, because the HW only decides visibility and never truncation.
//! - **ISR:** a change is proposed with AlterPartition and counts only when
//!   the metadata image commits it ([`ReplicaState::apply_assignment`]).
//!
//! # Invariants, asserted in release builds
//! - On the leader, whenever the HW moves, HW ≤ the minimum LEO of the ISR
//!   (committed and pending members alike, KIP-497's "maximal ISR").
//! - After every change, on every replica, HW ≤ its own LEO.
//! - The leader and partition epochs never go back.
//! - The leader's HW never goes back during its leadership.
//! - A replica never truncates below an HW it served as leader, except by an
//!   unclean election. Not asserted: [`ReplicaState::on_truncated`] returns
//!   the loss, the broker logs it as an error (stopping the process would
//!   take every other partition offline too), and the tests assert it
//!   never happens.

//!
//! [`FollowerFetchSession`] is the follower's side of the incremental fetch
//! session its fetcher holds with a leader: which partitions each request
//! must name.

mod fetch_session;
mod state;
pub mod throttle;

pub use fetch_session::{FetchPlan, FollowerFetchSession, PartitionFetch};

pub use state::{
    truncation_offset, AlterIsr, Assignment, FetchRefused, FetchedActions, FetchedAnswer,
    FollowerFetch, LocalLog, ReplicaState, Role, Transition, Truncation, UNKNOWN_BROKER_EPOCH,
};
