//! One consumer group of the KIP-848 protocol: its epochs, members, target
//! assignment, resolved regular expressions, and who owns which partition
//! at which epoch. This file holds the state and how records rebuild it
//! (`replay`); the requests that produce those records are in
//! `heartbeat.rs`.
//!
//! Every change to a group is a record. A request computes its records
//! from the state as it is, without changing it; the coordinator persists
//! them and then applies each with [`ConsumerGroup::replay`], the same
//! function that rebuilds the group from `__consumer_offsets` after a
//! failover. A group rebuilt from its records therefore equals the group
//! that wrote them, and members keep their assignments and epochs.

use std::cell::Cell;
use std::collections::BTreeMap;

use crate::group::consumer::member::{ConsumerGroupMember, LEAVE_GROUP_MEMBER_EPOCH};
use crate::group::consumer::records::{
    ConsumerGroupRecord, CurrentAssignmentValue, MemberMetadataValue, RegexValue,
};
use crate::group::consumer::subscription::SubscriptionCounts;
use crate::group::consumer::topics::{Assignment, TopicId};

/// The group's state, as ConsumerGroupDescribe and ListGroups name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerGroupState {
    /// No members.
    Empty,
    /// The group epoch moved past the target assignment's.
    Assigning,
    /// Some member does not hold its target yet.
    Reconciling,
    Stable,
}

impl ConsumerGroupState {
    pub fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

/// Who holds a partition now (assigned, or pending revocation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub member_id: String,
    pub epoch: i32,
}

/// A consumer group.
#[derive(Debug)]
pub struct ConsumerGroup {
    pub(super) group_id: String,
    /// Moves whenever the members' subscriptions or the subscribed
    /// topics' metadata change: a new target assignment is due.
    pub(super) group_epoch: i32,
    /// The subscribed topics' metadata hash at `group_epoch`.
    pub(super) metadata_hash: i64,
    /// The epoch of the target assignment; -1 before the first.
    pub(super) assignment_epoch: i32,
    pub(super) members: BTreeMap<String, ConsumerGroupMember>,
    /// Instance id to member id.
    pub(super) static_members: BTreeMap<String, String>,
    pub(super) targets: BTreeMap<String, Assignment>,
    /// Each held partition's owner; never two owners for one partition.
    pub(super) owners: BTreeMap<(TopicId, i32), Owner>,
    pub(super) regexes: BTreeMap<String, RegexValue>,
    pub(super) counts: SubscriptionCounts,
    /// Soft state, not persisted and not compared: the metadata version
    /// the hash and regexes were last checked against. A fresh or
    /// replayed group starts unchecked, so its first heartbeat checks.
    pub(super) metadata_version_checked: Cell<Option<i64>>,
}

impl PartialEq for ConsumerGroup {
    fn eq(&self, other: &ConsumerGroup) -> bool {
        self.group_id == other.group_id
            && self.group_epoch == other.group_epoch
            && self.metadata_hash == other.metadata_hash
            && self.assignment_epoch == other.assignment_epoch
            && self.members == other.members
            && self.static_members == other.static_members
            && self.targets == other.targets
            && self.owners == other.owners
            && self.regexes == other.regexes
            && self.counts == other.counts
    }
}

impl ConsumerGroup {
    pub fn new(group_id: &str) -> ConsumerGroup {
        ConsumerGroup {
            group_id: group_id.to_string(),
            group_epoch: 0,
            metadata_hash: 0,
            assignment_epoch: -1,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            targets: BTreeMap::new(),
            owners: BTreeMap::new(),
            regexes: BTreeMap::new(),
            counts: SubscriptionCounts::default(),
            metadata_version_checked: Cell::new(None),
        }
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    pub fn group_epoch(&self) -> i32 {
        self.group_epoch
    }

    pub fn assignment_epoch(&self) -> i32 {
        self.assignment_epoch
    }

    pub fn metadata_hash(&self) -> i64 {
        self.metadata_hash
    }

    pub fn members(&self) -> &BTreeMap<String, ConsumerGroupMember> {
        &self.members
    }

    pub fn member(&self, member_id: &str) -> Option<&ConsumerGroupMember> {
        self.members.get(member_id)
    }

    /// The member holding `instance_id`, if any.
    pub fn static_member(&self, instance_id: &str) -> Option<&ConsumerGroupMember> {
        self.static_members
            .get(instance_id)
            .and_then(|id| self.members.get(id))
    }

    pub fn target(&self, member_id: &str) -> Option<&Assignment> {
        self.targets.get(member_id)
    }

    pub fn targets(&self) -> &BTreeMap<String, Assignment> {
        &self.targets
    }

    pub fn regexes(&self) -> &BTreeMap<String, RegexValue> {
        &self.regexes
    }

    /// Who holds the partition now, if anyone.
    pub fn owner(&self, topic: &TopicId, partition: i32) -> Option<&Owner> {
        self.owners.get(&(*topic, partition))
    }

    pub fn owners(&self) -> &BTreeMap<(TopicId, i32), Owner> {
        &self.owners
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| !m.is_reconciled_to(self.assignment_epoch))
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// The records that delete the group (DeleteGroups, or an empty group
    /// whose offsets expired): tombstones for every member, regex, the
    /// target assignment epoch and the group. Kafka's order: a replay
    /// meets the members' tombstones before the group's.
    pub fn delete_records(&self) -> Vec<ConsumerGroupRecord> {
        let mut out = Vec::new();
        for id in self.members.keys() {
            out.extend(member_tombstones(&self.group_id, id));
        }
        for regex in self.regexes.keys() {
            out.push(ConsumerGroupRecord::RegularExpression {
                group_id: self.group_id.clone(),
                regex: regex.clone(),
                value: None,
            });
        }
        out.push(ConsumerGroupRecord::TargetAssignmentMetadata {
            group_id: self.group_id.clone(),
            value: None,
        });
        out.push(ConsumerGroupRecord::GroupMetadata {
            group_id: self.group_id.clone(),
            value: None,
        });
        out
    }

    /// Applies one record of this group: after the coordinator persisted
    /// it, and when loading `__consumer_offsets`. Records must come in the
    /// order they were produced. A group-metadata tombstone leaves an
    /// empty group that the caller drops (see [`replay_into`]).
    pub fn replay(&mut self, record: &ConsumerGroupRecord) {
        assert_eq!(
            record.group_id(),
            self.group_id,
            "a record of another group"
        );
        match record {
            ConsumerGroupRecord::GroupMetadata { value, .. } => match value {
                Some(v) => {
                    self.group_epoch = v.epoch;
                    self.metadata_hash = v.metadata_hash;
                }
                None => {
                    assert!(
                        self.members.is_empty() && self.targets.is_empty(),
                        "group {} deleted with members or targets left",
                        self.group_id
                    );
                    self.group_epoch = 0;
                    self.metadata_hash = 0;
                }
            },
            // Superseded by the hash (KIP-1101); nothing to rebuild.
            ConsumerGroupRecord::PartitionMetadata { .. } => {}
            ConsumerGroupRecord::MemberMetadata {
                member_id, value, ..
            } => match value {
                Some(v) => self.replay_member_metadata(member_id, v),
                None => {
                    let Some(m) = self.members.get(member_id) else {
                        return;
                    };
                    assert_eq!(
                        m.member_epoch, LEAVE_GROUP_MEMBER_EPOCH,
                        "member {member_id} deleted before its current assignment"
                    );
                    assert!(
                        !self.targets.contains_key(member_id),
                        "member {member_id} deleted before its target assignment"
                    );
                    let m = self.members.remove(member_id).expect("checked above");
                    self.counts.remove(
                        &m.subscribed_topic_names,
                        m.subscribed_topic_regex.as_deref(),
                    );
                    if let Some(i) = &m.instance_id {
                        if self.static_members.get(i) == Some(member_id) {
                            self.static_members.remove(i);
                        }
                    }
                }
            },
            ConsumerGroupRecord::TargetAssignmentMetadata { value, .. } => match value {
                Some(epoch) => self.assignment_epoch = *epoch,
                None => {
                    assert!(
                        self.targets.is_empty(),
                        "assignment epoch deleted before the targets"
                    );
                    self.assignment_epoch = -1;
                }
            },
            ConsumerGroupRecord::TargetAssignmentMember {
                member_id, value, ..
            } => match value {
                Some(a) => {
                    self.targets.insert(member_id.clone(), a.clone());
                }
                None => {
                    self.targets.remove(member_id);
                }
            },
            ConsumerGroupRecord::CurrentMemberAssignment {
                member_id, value, ..
            } => {
                let Some(old) = self.members.get(member_id).cloned() else {
                    match value {
                        None => return,
                        Some(v) => {
                            let mut m = ConsumerGroupMember::new(member_id);
                            apply_current(&mut m, v);
                            self.add_owners(&m);
                            self.members.insert(member_id.clone(), m);
                            return;
                        }
                    }
                };
                let mut m = old.clone();
                match value {
                    Some(v) => apply_current(&mut m, v),
                    None => {
                        // Kafka's replay: the member stays until its
                        // metadata tombstone, holding nothing at epoch -1.
                        m.member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                        m.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                        m.assigned_partitions = Assignment::new();
                        m.partitions_pending_revocation = Assignment::new();
                        m.assignment_epochs.clear();
                    }
                }
                self.remove_owners(&old);
                self.add_owners(&m);
                self.members.insert(member_id.clone(), m);
            }
            ConsumerGroupRecord::RegularExpression { regex, value, .. } => match value {
                Some(v) => {
                    self.regexes.insert(regex.clone(), v.clone());
                }
                None => {
                    self.regexes.remove(regex);
                }
            },
        }
    }

    fn replay_member_metadata(&mut self, member_id: &str, v: &MemberMetadataValue) {
        let mut m = match self.members.get(member_id) {
            Some(old) => {
                self.counts.remove(
                    &old.subscribed_topic_names,
                    old.subscribed_topic_regex.as_deref(),
                );
                if let Some(i) = &old.instance_id {
                    if self.static_members.get(i).map(String::as_str) == Some(member_id) {
                        self.static_members.remove(i);
                    }
                }
                old.clone()
            }
            None => ConsumerGroupMember::new(member_id),
        };
        m.instance_id = v.instance_id.clone();
        m.rack_id = v.rack_id.clone();
        m.client_id = v.client_id.clone();
        m.client_host = v.client_host.clone();
        m.subscribed_topic_names = v.subscribed_topic_names.clone();
        m.subscribed_topic_regex = v.subscribed_topic_regex.clone();
        m.rebalance_timeout_ms = v.rebalance_timeout_ms;
        m.server_assignor = v.server_assignor.clone();
        m.classic = v.classic.clone();
        self.counts.add(
            &m.subscribed_topic_names,
            m.subscribed_topic_regex.as_deref(),
        );
        if let Some(i) = &m.instance_id {
            self.static_members.insert(i.clone(), member_id.to_string());
        }
        self.members.insert(member_id.to_string(), m);
    }

    fn remove_owners(&mut self, m: &ConsumerGroupMember) {
        for (t, p) in m
            .assigned_partitions
            .iter()
            .chain(m.partitions_pending_revocation.iter())
        {
            let owner = self.owners.remove(&(t, p));
            assert!(
                owner.as_ref().is_some_and(|o| o.member_id == m.member_id),
                "partition {p} was not held by member {}",
                m.member_id
            );
        }
    }

    /// Records `m`'s partitions as held by it. The invariant of the whole
    /// protocol is checked here: a partition is never held by two members.
    fn add_owners(&mut self, m: &ConsumerGroupMember) {
        for (t, p) in m
            .assigned_partitions
            .iter()
            .chain(m.partitions_pending_revocation.iter())
        {
            let previous = self.owners.insert(
                (t, p),
                Owner {
                    member_id: m.member_id.clone(),
                    epoch: m.member_epoch,
                },
            );
            assert!(
                previous.is_none(),
                "group {}: partition {p} given to {} while {:?} still holds it",
                self.group_id,
                m.member_id,
                previous
            );
        }
    }
}

fn apply_current(m: &mut ConsumerGroupMember, v: &CurrentAssignmentValue) {
    m.member_epoch = v.member_epoch;
    m.previous_member_epoch = v.previous_member_epoch;
    m.state = v.state;
    m.assigned_partitions = v.assigned_partitions.clone();
    m.partitions_pending_revocation = v.partitions_pending_revocation.clone();
    m.assignment_epochs = v.assignment_epochs.clone();
}

/// The records that remove a member, in Kafka's order: its current
/// assignment (releasing its partitions), its target, then its metadata.
pub fn member_tombstones(group_id: &str, member_id: &str) -> [ConsumerGroupRecord; 3] {
    [
        ConsumerGroupRecord::CurrentMemberAssignment {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
            value: None,
        },
        ConsumerGroupRecord::TargetAssignmentMember {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
            value: None,
        },
        ConsumerGroupRecord::MemberMetadata {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
            value: None,
        },
    ]
}

/// The current-assignment record of a member.
pub fn current_assignment_record(group_id: &str, m: &ConsumerGroupMember) -> ConsumerGroupRecord {
    ConsumerGroupRecord::CurrentMemberAssignment {
        group_id: group_id.to_string(),
        member_id: m.member_id.clone(),
        value: Some(CurrentAssignmentValue {
            member_epoch: m.member_epoch,
            previous_member_epoch: m.previous_member_epoch,
            state: m.state,
            assigned_partitions: m.assigned_partitions.clone(),
            partitions_pending_revocation: m.partitions_pending_revocation.clone(),
            assignment_epochs: m.held_assignment_epochs(),
        }),
    }
}

/// The member-metadata record of a member.
pub fn member_metadata_record(group_id: &str, m: &ConsumerGroupMember) -> ConsumerGroupRecord {
    ConsumerGroupRecord::MemberMetadata {
        group_id: group_id.to_string(),
        member_id: m.member_id.clone(),
        value: Some(MemberMetadataValue {
            instance_id: m.instance_id.clone(),
            rack_id: m.rack_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            subscribed_topic_names: m.subscribed_topic_names.clone(),
            subscribed_topic_regex: m.subscribed_topic_regex.clone(),
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            server_assignor: m.server_assignor.clone(),
            classic: m.classic.clone(),
        }),
    }
}

/// Applies a record to a coordinator's groups: creates the group a value
/// names, and drops a group on its metadata tombstone. Tombstones of an
/// unknown group are ignored, as Kafka does.
pub fn replay_into(groups: &mut BTreeMap<String, ConsumerGroup>, record: &ConsumerGroupRecord) {
    let id = record.group_id();
    if !groups.contains_key(id) {
        if record.is_tombstone() {
            return;
        }
        groups.insert(id.to_string(), ConsumerGroup::new(id));
    }
    let group = groups.get_mut(id).expect("inserted above");
    group.replay(record);
    if matches!(
        record,
        ConsumerGroupRecord::GroupMetadata { value: None, .. }
    ) {
        groups.remove(id);
    }
}
