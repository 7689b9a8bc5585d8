//! A share group's membership (KIP-932's ShareGroupHeartbeat), as a pure
//! core modelled on the consumer group's (`group/consumer/`): a heartbeat
//! computes the records to append to `__consumer_offsets` and the answer,
//! without changing the group; the caller persists the records and applies
//! each with [`ShareGroup::replay`], which is also how a load rebuilds the
//! group. One change of a group at a time.
//!
//! Simpler than KIP-848: a member draws its own id, has no instance id,
//! regex or assignor choice, and owns nothing exclusively, so there is no
//! revocation. A change of membership, subscriptions or the subscribed
//! topics' metadata starts a new group epoch and a new target assignment
//! (the `simple` assignor, `assignor.rs`); each member moves to its target,
//! and to the assignment epoch, at its next heartbeat. A heartbeat with
//! another epoch than the member's is fenced (FENCED_MEMBER_EPOCH), and the
//! member joins again.
//!
//! Timers are data: every answer sets the member's session deadline
//! (`group.share.session.timeout.ms`); when it fires, the caller fences the
//! member with [`ShareGroup::fence_member`].

use std::collections::{BTreeMap, BTreeSet};

use crate::broker_config::share_group::ShareGroupConfig;
use crate::group::consumer::heartbeat::{TimerOp, FENCED_MEMBER_EPOCH};
use crate::group::consumer::subscription::metadata_hash;
use crate::group::consumer::topics::{Assignment, TopicId, TopicsImage};
use crate::group::share::assignor;
use crate::group::share::records::{
    CurrentAssignmentValue, GroupMetadataValue, MemberMetadataValue, ShareGroupRecord,
    StatePartitionMetadataValue, TargetAssignmentMetadataValue, TopicPartitionsInfo,
};
use crate::protocol::error_code::{
    GROUP_MAX_SIZE_REACHED, INVALID_REQUEST, NONE, UNKNOWN_MEMBER_ID,
};
use crate::protocol::messages::share_group_heartbeat::{
    ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, TopicPartitions,
};

/// Kafka's `MemberState.STABLE`: a share member is always at its target.
const MEMBER_STATE_STABLE: i8 = 0;
/// The member epoch of a leave.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// The member epoch of a join.
pub const JOIN_GROUP_MEMBER_EPOCH: i32 = 0;

/// A member of a share group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupMember {
    pub member_id: String,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Sorted, without duplicates.
    pub subscribed_topic_names: Vec<String>,
    pub assignment: Assignment,
}

/// Kafka's share group states (ShareGroupDescribe, ListGroups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareGroupState {
    Empty,
    Stable,
}

impl ShareGroupState {
    pub fn name(self) -> &'static str {
        match self {
            ShareGroupState::Empty => "Empty",
            ShareGroupState::Stable => "Stable",
        }
    }
}

/// One share group, as its records describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroup {
    pub group_id: String,
    pub group_epoch: i32,
    pub metadata_hash: i64,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, ShareGroupMember>,
    /// The target assignment of `assignment_epoch`, per member.
    pub target: BTreeMap<String, Assignment>,
    /// The share partitions the group may hold state for (every partition
    /// ever in a target), by topic id: its StatePartitionMetadata record,
    /// from which DescribeShareGroupOffsets knows where to look once the
    /// group is empty.
    pub state_partitions: BTreeMap<TopicId, TopicPartitionsInfo>,
}

/// What the caller knows besides the request.
#[derive(Debug, Clone, Copy)]
pub struct ShareHeartbeatContext<'a> {
    pub now_ms: i64,
    pub config: &'a ShareGroupConfig,
    pub topics: &'a TopicsImage,
    pub client_id: &'a str,
    pub client_host: &'a str,
}

/// A heartbeat's records (to persist, then replay), answer and timer.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareHeartbeatOutcome {
    pub records: Vec<ShareGroupRecord>,
    pub response: ShareGroupHeartbeatResponse,
    pub timer: Option<TimerOp>,
}

impl ShareHeartbeatOutcome {
    fn error(code: i16, message: String) -> ShareHeartbeatOutcome {
        ShareHeartbeatOutcome {
            records: Vec::new(),
            response: ShareGroupHeartbeatResponse {
                error_code: code,
                error_message: Some(message),
                ..Default::default()
            },
            timer: None,
        }
    }
}

impl ShareGroup {
    pub fn new(group_id: &str) -> ShareGroup {
        ShareGroup {
            group_id: group_id.to_string(),
            group_epoch: 0,
            metadata_hash: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            state_partitions: BTreeMap::new(),
        }
    }

    pub fn state(&self) -> ShareGroupState {
        if self.members.is_empty() {
            ShareGroupState::Empty
        } else {
            ShareGroupState::Stable
        }
    }

    /// Answers a ShareGroupHeartbeat; the group is not changed.
    pub fn heartbeat(
        &self,
        req: &ShareGroupHeartbeatRequest,
        ctx: ShareHeartbeatContext<'_>,
    ) -> ShareHeartbeatOutcome {
        if let Err(message) = validate_request(req) {
            return ShareHeartbeatOutcome::error(INVALID_REQUEST, message);
        }
        let existing = self.members.get(&req.member_id);
        if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH {
            if existing.is_none() {
                return unknown_member(&req.member_id);
            }
            let mut out = ShareHeartbeatOutcome {
                records: self.remove_member_records(&req.member_id, ctx.topics, ctx.now_ms),
                response: ShareGroupHeartbeatResponse {
                    member_id: Some(req.member_id.clone()),
                    member_epoch: LEAVE_GROUP_MEMBER_EPOCH,
                    ..Default::default()
                },
                timer: Some(TimerOp::CancelAll {
                    member_id: req.member_id.clone(),
                }),
            };
            out.response.heartbeat_interval_ms = ctx.config.heartbeat_interval_ms;
            return out;
        }
        match existing {
            None if req.member_epoch != JOIN_GROUP_MEMBER_EPOCH => {
                return unknown_member(&req.member_id)
            }
            None if self.members.len() as i64 >= i64::from(ctx.config.max_size) => {
                return ShareHeartbeatOutcome::error(
                    GROUP_MAX_SIZE_REACHED,
                    format!(
                        "The share group has reached its maximum size of {}.",
                        ctx.config.max_size
                    ),
                );
            }
            Some(m)
                if req.member_epoch != JOIN_GROUP_MEMBER_EPOCH
                    && req.member_epoch != m.member_epoch =>
            {
                return ShareHeartbeatOutcome::error(
                    FENCED_MEMBER_EPOCH,
                    format!(
                        "The share group member has epoch {} but the request has {}.",
                        m.member_epoch, req.member_epoch
                    ),
                );
            }
            _ => {}
        }

        // The member as this heartbeat leaves it.
        let mut member = existing.cloned().unwrap_or_else(|| ShareGroupMember {
            member_id: req.member_id.clone(),
            member_epoch: 0,
            previous_member_epoch: 0,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: Vec::new(),
            assignment: Assignment::new(),
        });
        if let Some(names) = &req.subscribed_topic_names {
            let set: BTreeSet<String> = names.iter().cloned().collect();
            member.subscribed_topic_names = set.into_iter().collect();
        }
        if req.rack_id.is_some() {
            member.rack_id = req.rack_id.clone();
        }
        member.client_id = ctx.client_id.to_string();
        member.client_host = ctx.client_host.to_string();

        let mut records = Vec::new();
        let metadata_changed = existing.is_none_or(|old| {
            old.subscribed_topic_names != member.subscribed_topic_names
                || old.rack_id != member.rack_id
                || old.client_id != member.client_id
                || old.client_host != member.client_host
        });
        if metadata_changed {
            records.push(ShareGroupRecord::MemberMetadata {
                group_id: self.group_id.clone(),
                member_id: member.member_id.clone(),
                value: Some(MemberMetadataValue {
                    rack_id: member.rack_id.clone(),
                    client_id: member.client_id.clone(),
                    client_host: member.client_host.clone(),
                    subscribed_topic_names: member.subscribed_topic_names.clone(),
                }),
            });
        }
        let subscription_changed =
            existing.is_none_or(|old| old.subscribed_topic_names != member.subscribed_topic_names);

        // A new epoch when the membership, a subscription or the topics'
        // metadata changed.
        let mut subscriptions = self.subscriptions();
        subscriptions.insert(
            member.member_id.clone(),
            member.subscribed_topic_names.iter().cloned().collect(),
        );
        let hash = metadata_hash(&subscribed_names(&subscriptions), ctx.topics);
        let (epoch, target) = if subscription_changed || hash != self.metadata_hash {
            let epoch = self.group_epoch + 1;
            records.push(ShareGroupRecord::GroupMetadata {
                group_id: self.group_id.clone(),
                value: Some(GroupMetadataValue {
                    epoch,
                    metadata_hash: hash,
                }),
            });
            let target = assignor::assign(&subscriptions, ctx.topics);
            self.push_target_records(&mut records, epoch, &target, ctx.now_ms);
            records.extend(self.state_partition_record(&target, ctx.topics));
            (epoch, target)
        } else {
            (self.assignment_epoch, self.target.clone())
        };

        // The member moves to its target at once: nothing to revoke.
        let member_target = target.get(&member.member_id).cloned().unwrap_or_default();
        let moves = member.member_epoch != epoch || member.assignment != member_target;
        let answer_assignment = moves || req.member_epoch == JOIN_GROUP_MEMBER_EPOCH;
        if moves {
            records.push(ShareGroupRecord::CurrentMemberAssignment {
                group_id: self.group_id.clone(),
                member_id: member.member_id.clone(),
                value: Some(CurrentAssignmentValue {
                    member_epoch: epoch,
                    previous_member_epoch: member.member_epoch,
                    state: MEMBER_STATE_STABLE,
                    assigned_partitions: member_target.clone(),
                }),
            });
        }
        let assignment = answer_assignment.then(|| {
            member_target
                .to_topic_partitions()
                .into_iter()
                .map(|(topic_id, partitions)| TopicPartitions {
                    topic_id,
                    partitions,
                })
                .collect()
        });
        ShareHeartbeatOutcome {
            records,
            response: ShareGroupHeartbeatResponse {
                throttle_time_ms: 0,
                error_code: NONE,
                error_message: None,
                member_id: Some(member.member_id.clone()),
                member_epoch: epoch,
                heartbeat_interval_ms: ctx.config.heartbeat_interval_ms,
                assignment,
            },
            timer: Some(TimerOp::Session {
                member_id: member.member_id,
                deadline_ms: ctx.now_ms + i64::from(ctx.config.session_timeout_ms),
            }),
        }
    }

    /// The records that fence a member whose session expired: as a leave.
    /// Empty when the member is gone already.
    pub fn fence_member(
        &self,
        member_id: &str,
        topics: &TopicsImage,
        now_ms: i64,
    ) -> Vec<ShareGroupRecord> {
        if !self.members.contains_key(member_id) {
            return Vec::new();
        }
        self.remove_member_records(member_id, topics, now_ms)
    }

    /// The tombstones that delete the group (DeleteGroups of an empty
    /// group), in Kafka's order: each member's and each target's records,
    /// the target and state-partition metadata, and the group's metadata
    /// last, whose tombstone removes the group when replayed.
    pub fn tombstones(&self) -> Vec<ShareGroupRecord> {
        let g = || self.group_id.clone();
        let mut records = Vec::new();
        for member_id in self.members.keys() {
            records.push(ShareGroupRecord::CurrentMemberAssignment {
                group_id: g(),
                member_id: member_id.clone(),
                value: None,
            });
            records.push(ShareGroupRecord::MemberMetadata {
                group_id: g(),
                member_id: member_id.clone(),
                value: None,
            });
        }
        for member_id in self.target.keys() {
            records.push(ShareGroupRecord::TargetAssignmentMember {
                group_id: g(),
                member_id: member_id.clone(),
                value: None,
            });
        }
        records.push(ShareGroupRecord::TargetAssignmentMetadata {
            group_id: g(),
            value: None,
        });
        records.push(ShareGroupRecord::StatePartitionMetadata {
            group_id: g(),
            value: None,
        });
        records.push(ShareGroupRecord::GroupMetadata {
            group_id: g(),
            value: None,
        });
        records
    }

    /// Applies one persisted record.
    pub fn replay(&mut self, record: &ShareGroupRecord) {
        assert_eq!(record.group_id(), self.group_id);
        match record {
            ShareGroupRecord::GroupMetadata { value, .. } => match value {
                Some(v) => {
                    assert!(v.epoch >= self.group_epoch, "the group epoch went back");
                    self.group_epoch = v.epoch;
                    self.metadata_hash = v.metadata_hash;
                }
                None => *self = ShareGroup::new(&self.group_id),
            },
            ShareGroupRecord::MemberMetadata {
                member_id, value, ..
            } => match value {
                Some(v) => {
                    let m =
                        self.members
                            .entry(member_id.clone())
                            .or_insert_with(|| ShareGroupMember {
                                member_id: member_id.clone(),
                                member_epoch: 0,
                                previous_member_epoch: 0,
                                rack_id: None,
                                client_id: String::new(),
                                client_host: String::new(),
                                subscribed_topic_names: Vec::new(),
                                assignment: Assignment::new(),
                            });
                    m.rack_id = v.rack_id.clone();
                    m.client_id = v.client_id.clone();
                    m.client_host = v.client_host.clone();
                    m.subscribed_topic_names = v.subscribed_topic_names.clone();
                }
                None => {
                    self.members.remove(member_id);
                }
            },
            ShareGroupRecord::TargetAssignmentMetadata { value, .. } => {
                if let Some(v) = value {
                    assert!(v.assignment_epoch <= self.group_epoch);
                    self.assignment_epoch = v.assignment_epoch;
                }
            }
            ShareGroupRecord::TargetAssignmentMember {
                member_id, value, ..
            } => match value {
                Some(a) => {
                    self.target.insert(member_id.clone(), a.clone());
                }
                None => {
                    self.target.remove(member_id);
                }
            },
            ShareGroupRecord::CurrentMemberAssignment {
                member_id, value, ..
            } => {
                if let (Some(v), Some(m)) = (value, self.members.get_mut(member_id)) {
                    m.member_epoch = v.member_epoch;
                    m.previous_member_epoch = v.previous_member_epoch;
                    m.assignment = v.assigned_partitions.clone();
                }
            }
            ShareGroupRecord::StatePartitionMetadata { value, .. } => {
                self.state_partitions = value
                    .iter()
                    .flat_map(|v| v.initializing_topics.iter().chain(&v.initialized_topics))
                    .map(|t| (t.topic_id, t.clone()))
                    .collect();
            }
        }
        self.check_invariants();
    }

    /// Invariants that hold between records.
    pub fn check_invariants(&self) {
        assert!(self.assignment_epoch <= self.group_epoch);
        for m in self.members.values() {
            assert!(
                m.member_epoch <= self.assignment_epoch,
                "member {} at epoch {} past the assignment epoch {}",
                m.member_id,
                m.member_epoch,
                self.assignment_epoch
            );
        }
    }

    fn subscriptions(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.members
            .values()
            .map(|m| {
                (
                    m.member_id.clone(),
                    m.subscribed_topic_names.iter().cloned().collect(),
                )
            })
            .collect()
    }

    /// A member leaving: its tombstones, then the group's next epoch and
    /// the others' new targets.
    fn remove_member_records(
        &self,
        member_id: &str,
        topics: &TopicsImage,
        now_ms: i64,
    ) -> Vec<ShareGroupRecord> {
        let g = || self.group_id.clone();
        let m = || member_id.to_string();
        let mut records = vec![
            ShareGroupRecord::CurrentMemberAssignment {
                group_id: g(),
                member_id: m(),
                value: None,
            },
            ShareGroupRecord::TargetAssignmentMember {
                group_id: g(),
                member_id: m(),
                value: None,
            },
            ShareGroupRecord::MemberMetadata {
                group_id: g(),
                member_id: m(),
                value: None,
            },
        ];
        let mut subscriptions = self.subscriptions();
        subscriptions.remove(member_id);
        let epoch = self.group_epoch + 1;
        records.push(ShareGroupRecord::GroupMetadata {
            group_id: g(),
            value: Some(GroupMetadataValue {
                epoch,
                metadata_hash: metadata_hash(&subscribed_names(&subscriptions), topics),
            }),
        });
        let target = assignor::assign(&subscriptions, topics);
        // The leaving member's target is tombstoned above.
        let mut others = self.clone();
        others.target.remove(member_id);
        others.push_target_records(&mut records, epoch, &target, now_ms);
        records
    }

    /// The StatePartitionMetadata record that adds the partitions of
    /// `target` the group did not have yet; `None` when it has them all.
    fn state_partition_record(
        &self,
        target: &BTreeMap<String, Assignment>,
        topics: &TopicsImage,
    ) -> Option<ShareGroupRecord> {
        let mut all = self.state_partitions.clone();
        let mut grew = false;
        for a in target.values() {
            for (id, partitions) in a.to_topic_partitions() {
                let name = topics
                    .by_id(&id)
                    .map(|t| t.name.clone())
                    .unwrap_or_default();
                let entry = all.entry(id).or_insert_with(|| TopicPartitionsInfo {
                    topic_id: id,
                    topic_name: name,
                    partitions: Vec::new(),
                });
                for p in partitions {
                    if !entry.partitions.contains(&p) {
                        entry.partitions.push(p);
                        grew = true;
                    }
                }
                entry.partitions.sort_unstable();
            }
        }
        grew.then(|| ShareGroupRecord::StatePartitionMetadata {
            group_id: self.group_id.clone(),
            value: Some(StatePartitionMetadataValue {
                initializing_topics: Vec::new(),
                initialized_topics: all.into_values().collect(),
                deleting_topics: Vec::new(),
            }),
        })
    }

    /// The records of a new target: each member whose target changed, then
    /// the assignment epoch.
    fn push_target_records(
        &self,
        records: &mut Vec<ShareGroupRecord>,
        epoch: i32,
        target: &BTreeMap<String, Assignment>,
        now_ms: i64,
    ) {
        for (member_id, a) in target {
            if self.target.get(member_id) != Some(a) {
                records.push(ShareGroupRecord::TargetAssignmentMember {
                    group_id: self.group_id.clone(),
                    member_id: member_id.clone(),
                    value: Some(a.clone()),
                });
            }
        }
        records.push(ShareGroupRecord::TargetAssignmentMetadata {
            group_id: self.group_id.clone(),
            value: Some(TargetAssignmentMetadataValue {
                assignment_epoch: epoch,
                assignment_timestamp_ms: now_ms,
            }),
        });
    }
}

/// Applies one persisted record to the share groups it may create or
/// delete: the first record of a group creates it, the tombstone of its
/// metadata deletes it (as loading and writing both apply them).
pub fn replay_into(groups: &mut BTreeMap<String, ShareGroup>, record: &ShareGroupRecord) {
    let id = record.group_id();
    if let ShareGroupRecord::GroupMetadata { value: None, .. } = record {
        groups.remove(id);
        return;
    }
    match groups.get_mut(id) {
        Some(g) => g.replay(record),
        None if record.is_tombstone() => {}
        None => {
            let mut g = ShareGroup::new(id);
            g.replay(record);
            groups.insert(id.to_string(), g);
        }
    }
}

/// Kafka's checks of a ShareGroupHeartbeat before it reaches the group.
pub fn validate_request(req: &ShareGroupHeartbeatRequest) -> Result<(), String> {
    if req.group_id.is_empty() {
        return Err("GroupId can't be empty.".into());
    }
    if req.member_id.is_empty() {
        return Err("MemberId can't be empty.".into());
    }
    if req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH {
        return Err(format!("MemberEpoch {} is invalid.", req.member_epoch));
    }
    if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        && req
            .subscribed_topic_names
            .as_ref()
            .is_none_or(Vec::is_empty)
    {
        return Err("SubscribedTopicNames must be set in first request.".into());
    }
    Ok(())
}

fn unknown_member(member_id: &str) -> ShareHeartbeatOutcome {
    ShareHeartbeatOutcome::error(
        UNKNOWN_MEMBER_ID,
        format!("Member {member_id} is not a member of the share group."),
    )
}

fn subscribed_names(subscriptions: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    subscriptions.values().flatten().cloned().collect()
}
