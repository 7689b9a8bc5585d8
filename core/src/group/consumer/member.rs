//! One member of a consumer group (KIP-848): what it subscribes to, its
//! epochs and the partitions it holds. Everything here is persisted (in
//! the member-metadata and current-assignment records), so a replayed
//! member equals the one that wrote them.

use bytes::Bytes;

use std::collections::BTreeMap;

use crate::group::consumer::topics::{Assignment, TopicId};

/// The member epoch a member sends to leave the group.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// The member epoch a static member sends to leave for a while: it keeps
/// its place and partitions until its session times out.
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;
/// The member epoch a member sends to join (or rejoin after being fenced).
pub const JOIN_GROUP_MEMBER_EPOCH: i32 = 0;

/// Where a member is in its reconciliation (Kafka's `MemberState`; the
/// numbers are the `State` field of the current-assignment record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberState {
    /// The member holds its whole target assignment at its epoch.
    Stable,
    /// The member must give up partitions (`partitions_pending_revocation`)
    /// before it may move to the next epoch.
    UnrevokedPartitions,
    /// The member is at the target epoch but waits for partitions that
    /// their previous owners have not released yet.
    UnreleasedPartitions,
    /// A state a newer coordinator wrote; the member is fenced and starts
    /// over.
    Unknown,
}

impl MemberState {
    pub fn value(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
            MemberState::Unknown => 127,
        }
    }

    pub fn from_value(v: i8) -> MemberState {
        match v {
            0 => MemberState::Stable,
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Unknown,
        }
    }

    /// The name ConsumerGroupDescribe and the tools show.
    pub fn name(self) -> &'static str {
        match self {
            MemberState::Stable => "STABLE",
            MemberState::UnrevokedPartitions => "UNREVOKED_PARTITIONS",
            MemberState::UnreleasedPartitions => "UNRELEASED_PARTITIONS",
            MemberState::Unknown => "UNKNOWN",
        }
    }
}

/// What a member that joined with the classic protocol (JoinGroup) sent:
/// a consumer group keeps such members during an online migration
/// (Kafka's `ClassicMemberMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMemberMetadata {
    pub session_timeout_ms: i32,
    /// Its protocols (assignor names) in preference order, each with the
    /// member's `ConsumerProtocolSubscription`.
    pub supported_protocols: Vec<(String, Bytes)>,
}

impl ClassicMemberMetadata {
    /// The protocol the member is told to use: its first, as Kafka
    /// answers a classic member of a consumer group.
    pub fn protocol_name(&self) -> &str {
        self.supported_protocols
            .first()
            .map(|(n, _)| n.as_str())
            .unwrap_or_default()
    }
}

/// A member of a consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupMember {
    pub member_id: String,
    /// The epoch the member must send in its next heartbeat.
    pub member_epoch: i32,
    /// The epoch before the last bump: a member whose answer carrying the
    /// bump was lost retries with it and is accepted (see
    /// `group.rs`, the epoch check).
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub client_id: String,
    pub client_host: String,
    /// Sorted, as Kafka compares subscriptions as sets.
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    /// `group.remote.assignor`, if the member named one.
    pub server_assignor: Option<String>,
    /// The partitions the member may own at its epoch.
    pub assigned_partitions: Assignment,
    /// Partitions the member still owns but must give up.
    pub partitions_pending_revocation: Assignment,
    /// The epoch at which the member was given each partition it holds,
    /// assigned or pending revocation (Kafka 4.4's assignment epochs,
    /// KIP-1251): a partition kept across epochs keeps its epoch. An offset
    /// commit with an older member epoch is still the owner's commit for a
    /// partition given at or before that epoch. A partition held without
    /// an entry counts as given at the member's epoch, the strict check.
    pub assignment_epochs: BTreeMap<(TopicId, i32), i32>,
    /// Set while the member speaks the classic protocol.
    pub classic: Option<ClassicMemberMetadata>,
}

impl ConsumerGroupMember {
    /// A new member, before its first heartbeat has filled it in.
    pub fn new(member_id: &str) -> ConsumerGroupMember {
        ConsumerGroupMember {
            member_id: member_id.to_string(),
            member_epoch: 0,
            previous_member_epoch: 0,
            state: MemberState::Stable,
            instance_id: None,
            rack_id: None,
            rebalance_timeout_ms: -1,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: Vec::new(),
            subscribed_topic_regex: None,
            server_assignor: None,
            assigned_partitions: Assignment::new(),
            partitions_pending_revocation: Assignment::new(),
            assignment_epochs: BTreeMap::new(),
            classic: None,
        }
    }

    /// The epoch at which the member was given `partition` of `topic`, while
    /// it holds it (assigned, or pending revocation); `None` otherwise.
    pub fn assignment_epoch(&self, topic: &TopicId, partition: i32) -> Option<i32> {
        if !self.assigned_partitions.contains(topic, partition)
            && !self
                .partitions_pending_revocation
                .contains(topic, partition)
        {
            return None;
        }
        Some(
            self.assignment_epochs
                .get(&(*topic, partition))
                .copied()
                .unwrap_or_else(|| default_assignment_epoch(self.member_epoch)),
        )
    }

    /// Sets the assignment epochs to `epoch_of` of every partition the
    /// member holds now, and forgets the others: called after its
    /// assignment changed.
    pub fn set_assignment_epochs(&mut self, epoch_of: impl Fn(&TopicId, i32) -> i32) {
        self.assignment_epochs = self
            .assigned_partitions
            .iter()
            .chain(self.partitions_pending_revocation.iter())
            .map(|(t, p)| ((t, p), epoch_of(&t, p)))
            .collect();
    }

    /// Whether the member joined with JoinGroup (the classic protocol).
    pub fn uses_classic_protocol(&self) -> bool {
        self.classic.is_some()
    }

    /// The session timeout of the member: its own for a classic member,
    /// else the group's `group.consumer.session.timeout.ms`.
    pub fn session_timeout_ms(&self, group_session_timeout_ms: i32) -> i32 {
        self.classic
            .as_ref()
            .map_or(group_session_timeout_ms, |c| c.session_timeout_ms)
    }

    /// Whether the member holds exactly its target at `target_epoch`.
    pub fn is_reconciled_to(&self, target_epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == target_epoch
    }

    /// Moves the member to `epoch`, remembering the one it leaves.
    pub fn update_member_epoch(&mut self, epoch: i32) {
        self.previous_member_epoch = self.member_epoch;
        self.member_epoch = epoch;
    }

    /// The subscription-related fields, compared to decide whether the
    /// group epoch must move.
    pub fn same_subscription(&self, other: &ConsumerGroupMember) -> bool {
        self.subscribed_topic_names == other.subscribed_topic_names
            && self.subscribed_topic_regex == other.subscribed_topic_regex
    }

    /// The fields of the member-metadata record.
    pub fn same_metadata(&self, other: &ConsumerGroupMember) -> bool {
        self.instance_id == other.instance_id
            && self.rack_id == other.rack_id
            && self.client_id == other.client_id
            && self.client_host == other.client_host
            && self.subscribed_topic_names == other.subscribed_topic_names
            && self.subscribed_topic_regex == other.subscribed_topic_regex
            && self.rebalance_timeout_ms == other.rebalance_timeout_ms
            && self.server_assignor == other.server_assignor
            && self.classic == other.classic
    }

    /// The fields of the current-assignment record.
    pub fn same_current_assignment(&self, other: &ConsumerGroupMember) -> bool {
        self.member_epoch == other.member_epoch
            && self.previous_member_epoch == other.previous_member_epoch
            && self.state == other.state
            && self.assigned_partitions == other.assigned_partitions
            && self.partitions_pending_revocation == other.partitions_pending_revocation
            && self.held_assignment_epochs() == other.held_assignment_epochs()
    }

    /// Every held partition's assignment epoch, defaults filled in.
    pub fn held_assignment_epochs(&self) -> BTreeMap<(TopicId, i32), i32> {
        self.assigned_partitions
            .iter()
            .chain(self.partitions_pending_revocation.iter())
            .filter_map(|(t, p)| Some(((t, p), self.assignment_epoch(&t, p)?)))
            .collect()
    }
}

/// The assignment epoch of a partition whose record carries none (a log
/// written before Kafka 4.4): the member's epoch, as Kafka reads it, so
/// only a commit at the member's own epoch passes for it. A static member
/// that left holds epoch -2, and its partitions count from 0.
pub fn default_assignment_epoch(member_epoch: i32) -> i32 {
    member_epoch.max(0)
}
