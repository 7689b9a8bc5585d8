//! Share groups (KIP-932): the pure parts, without an executor or I/O.
//!
//! - `records.rs`: what a share group stores in `__consumer_offsets`
//!   (Kafka's key types 10-15).
//! - `state_records.rs`: what the share coordinator stores in
//!   `__share_group_state` (ShareSnapshot, ShareUpdate).

pub mod records;
pub mod state_records;

pub use records::ShareGroupRecord;
pub use state_records::{SharePartitionKey, ShareStateRecord};
