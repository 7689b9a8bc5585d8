//! The consumer-group protocol of KIP-848 (ConsumerGroupHeartbeat): the
//! coordinator's decisions as a pure core, without an executor or I/O.
//!
//! The contract with the broker shell:
//! - **In:** a [`heartbeat::HeartbeatRequest`], the time, the settings
//!   ([`crate::broker_config::consumer_group::ConsumerGroupConfig`]), the
//!   cluster's topics ([`topics::TopicsImage`]) and a fresh member id
//!   drawn by the caller; or a fired timer.
//! - **Out:** the records to append to the group's `__consumer_offsets`
//!   partition ([`records::ConsumerGroupRecord`], Kafka's schemas), the
//!   answer, and timer operations ([`heartbeat::TimerOp`]).
//! - **Order:** persist the records, apply each with
//!   [`group::ConsumerGroup::replay`], arm the timers, answer. One request
//!   of a group at a time. Loading a partition replays its records the
//!   same way ([`group::replay_into`]) and then arms
//!   [`group::ConsumerGroup::on_loaded`]'s timers.
//!
//! Files, one concern each: `member.rs` (a member and its epochs),
//! `topics.rs` (partition sets and the topics image), `subscription.rs`
//! (names, regexes, metadata hash), `assignor/` (uniform and range),
//! `target.rs` (the target assignment of an epoch), `reconcile.rs`
//! (revoke before assign), `group.rs` (state and replay), `heartbeat.rs`
//! (requests and timeouts), `classic.rs` (classic members and the online
//! migration between the protocols), `records.rs` (the stored schemas).

pub mod assignor;
pub mod classic;
pub mod commit;
#[allow(clippy::module_inception)]
pub mod group;
pub mod heartbeat;
pub mod member;
pub mod reconcile;
pub mod records;
pub mod subscription;
pub mod target;
pub mod topics;

pub use group::{replay_into, ConsumerGroup, ConsumerGroupState};
pub use heartbeat::{
    HeartbeatContext, HeartbeatError, HeartbeatOutcome, HeartbeatRequest, HeartbeatResponse,
    TimerOp,
};
pub use member::{ConsumerGroupMember, MemberState};
pub use records::ConsumerGroupRecord;
pub use topics::{Assignment, TopicId, TopicInfo, TopicsImage};

#[cfg(test)]
mod heartbeat_tests;

#[cfg(test)]
mod classic_tests;
