//! The controller's decisions, as pure functions: a request and the current
//! metadata image in, the metadata records to append (or Kafka's error for
//! each part) out. Nothing here does I/O, reads the clock or draws random
//! numbers; what the decisions need from outside (this node's id, the
//! broker's defaults, new topic ids, the open-files budget) comes in a
//! [`Context`]. The broker's controller room (`server/controller/`) applies
//! the plans: it serialises the requests and commits the records through
//! the metadata quorum; the image applier (`server/image_applier/`) brings
//! each committed image onto the shards. `placement.rs` places new replicas on brokers (rack-aware
//! striping) and `brokers.rs` decides registrations, heartbeats and
//! session expiry, for the cluster controller to come; `features.rs`
//! decides UpdateFeatures; `acls.rs` decides CreateAcls and DeleteAcls.
//!
//! **Architecture Invariant:** this module knows nothing of shards, glommio
//! or the network, so tests drive it directly, and the Raft controller of
//! the cluster issue reuses it unchanged behind its quorum.

pub mod acls;
pub mod brokers;
pub mod elections;
pub mod features;
pub mod group_configs;
pub mod partitions;
pub mod placement;
pub mod quotas;
pub mod reassignment;
pub mod scram;
pub mod topics;

pub use topics::{
    plan_alter_broker_configs, plan_alter_topic_configs, plan_create_partitions,
    plan_create_topics, plan_delete_topics, validate_topic_name, Context, CreatedTopic,
    NewPartitions, NewTopic, Plan, TopicError, PARTITIONS_PER_TOPIC_MAX, TOPIC_NAME_MAX_LEN,
};
