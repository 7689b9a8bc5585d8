//! openraft's type configuration for the metadata quorum, and the one
//! application payload it replicates: a batch of encoded metadata records.
//!
//! Log ids follow KRaft: one leader per term (`leader_id_std`), so a log id
//! is (term, index), stored as (partition leader epoch, offset) in
//! `__cluster_metadata-0`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::metadata::records::MetadataRecord;
use crate::quorum::runtime::GlommioRuntime;

/// The records of one controller decision, committed atomically: every
/// record of a CreateTopics is in one Raft entry, so a failover never
/// leaves a topic without its partitions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// Each element is one `MetadataRecord::encode`.
    pub records: Vec<Vec<u8>>,
}

impl Proposal {
    pub fn new(records: &[MetadataRecord]) -> Self {
        Proposal {
            records: records.iter().map(|r| r.encode().to_vec()).collect(),
        }
    }
}

impl fmt::Display for Proposal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} metadata records", self.records.len())
    }
}

/// What applying a proposal answers: the offset (Raft index) it took.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub offset: u64,
}

openraft::declare_raft_types!(
    /// The metadata quorum's types.
    pub MetadataRaft:
        D = Proposal,
        R = Applied,
        NodeId = u64,
        Node = openraft::impls::BasicNode,
        Term = u64,
        LeaderId = openraft::impls::leader_id_std::LeaderId<u64, u64>,
        AsyncRuntime = GlommioRuntime,
);

pub type Entry = openraft::type_config::alias::EntryOf<MetadataRaft>;
pub type EntryPayload = openraft::type_config::alias::EntryPayloadOf<MetadataRaft>;
pub type LogId = openraft::type_config::alias::LogIdOf<MetadataRaft>;
pub type Vote = openraft::type_config::alias::VoteOf<MetadataRaft>;
pub type Membership = openraft::Membership<u64, openraft::impls::BasicNode>;
pub type StoredMembership = openraft::type_config::alias::StoredMembershipOf<MetadataRaft>;
pub type SnapshotMeta = openraft::type_config::alias::SnapshotMetaOf<MetadataRaft>;
pub type Raft = openraft::Raft<MetadataRaft, crate::quorum::state_machine::StateMachine>;

/// A log id from its stored form.
pub fn log_id(term: u64, index: u64) -> LogId {
    LogId::new_term_index(term, index)
}
