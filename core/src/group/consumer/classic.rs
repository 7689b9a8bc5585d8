//! Online migration between the classic and the consumer protocol
//! (Kafka's `group.consumer.migration.policy`), following Kafka's
//! `GroupMetadataManager`:
//!
//! - **Upgrade.** The first ConsumerGroupHeartbeat naming a live classic
//!   group whose members speak the consumer protocol converts it
//!   ([`ConsumerGroup::from_classic`]): each classic member becomes a
//!   member of a consumer group at the classic generation, holding what
//!   the leader last assigned it, so nobody loses a partition and the
//!   group's committed offsets stay where they are.
//! - **Classic members of a consumer group.** Until they restart with the
//!   new protocol, the converted members keep sending JoinGroup, SyncGroup,
//!   Heartbeat and LeaveGroup. Each JoinGroup is their "heartbeat": it
//!   carries their subscription and what they own, and reconciles them
//!   like any member ([`ConsumerGroup::classic_join`]); the answer comes at
//!   once, the member is never the leader, and SyncGroup hands it the
//!   partitions the coordinator assigned. A Heartbeat answers
//!   REBALANCE_IN_PROGRESS when the member should join again: the group
//!   moved on, or it must revoke, or the partitions it waits for are free.
//! - **Downgrade.** When the last member speaking the consumer protocol
//!   leaves or is fenced and classic members remain, the group becomes a
//!   classic group again ([`ConsumerGroup::downgrade_on_fence`]) and
//!   rebalances.
//!
//! As everywhere in this module, nothing here changes the group: each
//! call returns records, an answer and timer operations.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::broker_config::consumer_group::MigrationPolicy;
use crate::group::consumer::group::{
    current_assignment_record, member_metadata_record, member_tombstones, ConsumerGroup,
};
use crate::group::consumer::heartbeat::{
    err, HeartbeatContext, HeartbeatError, MemberChange, TimerOp,
};
use crate::group::consumer::member::{ClassicMemberMetadata, ConsumerGroupMember, MemberState};
use crate::group::consumer::records::{ConsumerGroupRecord, GroupMetadataValue};
use crate::group::consumer::subscription::{metadata_hash, SubscriptionCounts};
use crate::group::consumer::topics::{Assignment, TopicsImage};
use crate::group::consumer_protocol::{
    decode_assignment, decode_subscription, encode_assignment, version_of, NamedPartitions,
};
use crate::group::group::Group;
use crate::group::schema::{GroupValue, StoredMember};
use crate::protocol::error_code;

/// The protocol type of consumers in the classic protocol: the only
/// classic groups that can become consumer groups, and the only classic
/// members a consumer group takes.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// A JoinGroup to a consumer group.
#[derive(Debug, Clone)]
pub struct ClassicJoinRequest {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    pub client_id: String,
    pub client_host: String,
    /// JoinGroup v4+ without a member id: the member must ask again with
    /// the id it is given (KIP-394).
    pub require_known_member_id: bool,
}

/// The answer to a JoinGroup of a classic member of a consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicJoinResponse {
    /// NONE, or MEMBER_ID_REQUIRED with the id to join with.
    pub error_code: i16,
    pub member_id: String,
    pub generation_id: i32,
    pub protocol_name: String,
}

/// The records, answer and timers of a classic member's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicOutcome<T> {
    pub records: Vec<ConsumerGroupRecord>,
    pub response: T,
    pub timers: Vec<TimerOp>,
}

/// A consumer group turned back into a classic group: the records that
/// delete the consumer group, then the classic group's metadata to store.
/// The classic group then rebalances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downgrade {
    pub records: Vec<ConsumerGroupRecord>,
    pub classic: GroupValue,
    /// The classic group must rebalance: a member left, or the members do
    /// not all hold the current target assignment. Kafka skips the
    /// rebalance after a static member's replacement when the assignment
    /// is current, and so does this.
    pub rebalance: bool,
}

/// Kafka's `supportsClassicProtocols`: the consumer protocol type, and a
/// protocol every classic member supports (any, when none is classic).
fn supports_protocols(
    group: &ConsumerGroup,
    member_id: &str,
    protocol_type: &str,
    protocols: &[(String, Bytes)],
) -> bool {
    if protocol_type != CONSUMER_PROTOCOL_TYPE || protocols.is_empty() {
        return false;
    }
    let classic: Vec<&ClassicMemberMetadata> = group
        .members
        .values()
        .filter(|m| m.member_id != member_id)
        .filter_map(|m| m.classic.as_ref())
        .collect();
    protocols.iter().any(|(name, _)| {
        classic
            .iter()
            .all(|c| c.supported_protocols.iter().any(|(n, _)| n == name))
    })
}

/// Topic names to ids; partitions of unknown topics, or past a topic's
/// count, are left out (the topic was deleted or shrank).
fn to_assignment(named: &NamedPartitions, topics: &TopicsImage) -> Assignment {
    let mut out = Assignment::new();
    for (name, partitions) in named {
        let Some(t) = topics.by_name(name) else {
            continue;
        };
        for &p in partitions {
            if p >= 0 && (p as usize) < t.partition_racks.len() {
                out.insert(t.id, p);
            }
        }
    }
    out
}

fn to_named(a: &Assignment, topics: &TopicsImage) -> NamedPartitions {
    a.to_topic_partitions()
        .into_iter()
        .filter_map(|(id, ps)| topics.by_id(&id).map(|t| (t.name.clone(), ps)))
        .collect()
}

/// The assignment a classic member gets in SyncGroup, in the version of
/// its subscription.
pub fn classic_assignment_bytes(m: &ConsumerGroupMember, topics: &TopicsImage) -> Bytes {
    let version = m
        .classic
        .as_ref()
        .and_then(|c| c.supported_protocols.first())
        .and_then(|(_, metadata)| version_of(metadata))
        .unwrap_or(0);
    encode_assignment(version, &to_named(&m.assigned_partitions, topics))
}

impl ConsumerGroup {
    /// Whether every member other than `except` speaks the classic
    /// protocol.
    fn all_classic_except(&self, except: &str) -> bool {
        self.members
            .values()
            .filter(|m| m.member_id != except)
            .all(|m| m.uses_classic_protocol())
    }

    /// A member named by a classic request (Kafka's
    /// `validateConsumerGroupMember`), which must speak the classic
    /// protocol.
    fn classic_member(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<&ConsumerGroupMember, HeartbeatError> {
        let m = match instance_id {
            None => self.members.get(member_id).ok_or_else(|| {
                err(
                    error_code::UNKNOWN_MEMBER_ID,
                    format!(
                        "Member {member_id} is not a member of group {}.",
                        self.group_id
                    ),
                )
            })?,
            Some(instance) => {
                let m = self.static_member(instance).ok_or_else(|| {
                    err(
                        error_code::UNKNOWN_MEMBER_ID,
                        format!(
                            "Member with instance id {instance} is not a member of group {}.",
                            self.group_id
                        ),
                    )
                })?;
                if m.member_id != member_id {
                    return Err(err(
                        error_code::FENCED_INSTANCE_ID,
                        format!(
                            "Static member {member_id} with instance id {instance} was fenced by member {}.",
                            m.member_id
                        ),
                    ));
                }
                m
            }
        };
        if !m.uses_classic_protocol() {
            return Err(err(
                error_code::UNKNOWN_MEMBER_ID,
                format!("Member {} does not use the classic protocol.", m.member_id),
            ));
        }
        Ok(m)
    }

    /// Whether a partition of the member's target is still held by
    /// another member (Kafka's `waitingOnUnreleasedPartition`).
    fn waiting_on_unreleased(&self, m: &ConsumerGroupMember) -> bool {
        self.targets.get(&m.member_id).is_some_and(|target| {
            target.iter().any(|(t, p)| {
                !m.assigned_partitions.contains(&t, p)
                    && self
                        .owner(&t, p)
                        .is_some_and(|o| o.member_id != m.member_id)
            })
        })
    }

    /// A JoinGroup from a classic member (Kafka's
    /// `classicGroupJoinToConsumerGroup`), on a group with members.
    pub fn classic_join(
        &self,
        req: &ClassicJoinRequest,
        ctx: &HeartbeatContext<'_>,
    ) -> Result<ClassicOutcome<ClassicJoinResponse>, HeartbeatError> {
        let unknown = req.member_id.is_empty();
        let member_id = if unknown {
            ctx.fresh_member_id.to_string()
        } else {
            req.member_id.clone()
        };
        let full = self.members.len() >= ctx.config.max_size as usize;
        if full && !self.members.contains_key(&member_id) {
            return Err(err(
                error_code::GROUP_MAX_SIZE_REACHED,
                format!(
                    "The consumer group has reached its maximum capacity of {} members.",
                    ctx.config.max_size
                ),
            ));
        }
        if !supports_protocols(self, &member_id, &req.protocol_type, &req.protocols) {
            return Err(err(
                error_code::INCONSISTENT_GROUP_PROTOCOL,
                format!("Member {member_id}'s protocols are not supported."),
            ));
        }
        if req.require_known_member_id && unknown && req.instance_id.is_none() {
            return Ok(ClassicOutcome {
                records: Vec::new(),
                response: ClassicJoinResponse {
                    error_code: error_code::MEMBER_ID_REQUIRED,
                    member_id,
                    generation_id: -1,
                    protocol_name: String::new(),
                },
                timers: Vec::new(),
            });
        }
        let subscription = decode_subscription(&req.protocols[0].1).map_err(|e| {
            err(
                error_code::INCONSISTENT_GROUP_PROTOCOL,
                format!("Member {member_id}'s consumer protocol subscription is malformed: {e}"),
            )
        })?;

        let mut records = Vec::new();
        let mut replaced: Option<&ConsumerGroupMember> = None;
        let member = match &req.instance_id {
            None => match self.members.get(&member_id) {
                Some(m) if !m.uses_classic_protocol() => {
                    return Err(err(
                        error_code::UNKNOWN_MEMBER_ID,
                        format!("Member {member_id} does not use the classic protocol."),
                    ))
                }
                Some(m) => m.clone(),
                None => ConsumerGroupMember::new(&member_id),
            },
            Some(instance) => match self.static_member(instance) {
                None => ConsumerGroupMember::new(&member_id),
                Some(existing) if existing.member_id == member_id => existing.clone(),
                Some(existing) if !unknown => {
                    return Err(err(
                        error_code::FENCED_INSTANCE_ID,
                        format!(
                            "Static member {member_id} with instance id {instance} was fenced by member {}.",
                            existing.member_id
                        ),
                    ))
                }
                Some(existing) => {
                    // A restarted static member takes over its old place
                    // and partitions, as a classic group lets it.
                    let mut m = existing.clone();
                    m.member_id = member_id.clone();
                    records.extend(member_tombstones(&self.group_id, &existing.member_id));
                    records.push(member_metadata_record(&self.group_id, &m));
                    records.push(ConsumerGroupRecord::TargetAssignmentMember {
                        group_id: self.group_id.clone(),
                        member_id: member_id.clone(),
                        value: Some(
                            self.targets
                                .get(&existing.member_id)
                                .cloned()
                                .unwrap_or_default(),
                        ),
                    });
                    records.push(current_assignment_record(&self.group_id, &m));
                    replaced = Some(existing);
                    m
                }
            },
        };

        let mut updated = member.clone();
        updated.instance_id = req.instance_id.clone().or(updated.instance_id);
        if let Some(rack) = &subscription.rack_id {
            updated.rack_id = Some(rack.clone());
        }
        if req.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        let names: BTreeSet<&String> = subscription.topics.iter().collect();
        updated.subscribed_topic_names = names.into_iter().cloned().collect();
        updated.client_id = req.client_id.clone();
        updated.client_host = req.client_host.clone();
        updated.classic = Some(ClassicMemberMetadata {
            session_timeout_ms: req.session_timeout_ms,
            supported_protocols: req.protocols.clone(),
        });
        let owned = to_assignment(&subscription.owned_partitions, ctx.topics);
        let (reconciled, mut timers) = self.apply_change(
            MemberChange {
                member_id: &member_id,
                member: &member,
                updated,
                replaced,
                owned: Some(&owned),
            },
            ctx,
            &mut records,
        )?;
        timers.push(TimerOp::CancelClassicJoin {
            member_id: member_id.clone(),
        });
        timers.push(TimerOp::Session {
            member_id: member_id.clone(),
            deadline_ms: ctx.now_ms + req.session_timeout_ms as i64,
        });
        timers.push(TimerOp::ClassicSync {
            member_id: member_id.clone(),
            deadline_ms: ctx.now_ms + reconciled.rebalance_timeout_ms.max(0) as i64,
        });
        let protocol_name = req.protocols[0].0.clone();
        Ok(ClassicOutcome {
            records,
            response: ClassicJoinResponse {
                error_code: error_code::NONE,
                member_id,
                generation_id: reconciled.member_epoch,
                protocol_name,
            },
            timers,
        })
    }

    /// A SyncGroup from a classic member (Kafka's
    /// `classicGroupSyncToConsumerGroup`): the member's assigned
    /// partitions, in its subscription's version. No records.
    #[allow(clippy::too_many_arguments)]
    pub fn classic_sync(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
        generation_id: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        now_ms: i64,
        topics: &TopicsImage,
    ) -> Result<ClassicOutcome<Bytes>, HeartbeatError> {
        let m = self.classic_member(member_id, instance_id)?;
        check_generation(m, generation_id)?;
        let classic = m.classic.as_ref().expect("checked by classic_member");
        if protocol_type.is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE) {
            return Err(err(
                error_code::INCONSISTENT_GROUP_PROTOCOL,
                format!("The protocol type from member {member_id} is not consumer."),
            ));
        }
        if protocol_name.is_some_and(|n| n != classic.protocol_name()) {
            return Err(err(
                error_code::INCONSISTENT_GROUP_PROTOCOL,
                format!(
                    "The protocol name from member {member_id} is not {}, the one its join was answered with.",
                    classic.protocol_name()
                ),
            ));
        }
        if self.group_epoch > m.member_epoch && m.state != MemberState::UnrevokedPartitions {
            return Err(self.rejoin(m));
        }
        Ok(ClassicOutcome {
            records: Vec::new(),
            response: classic_assignment_bytes(m, topics),
            timers: vec![
                TimerOp::CancelClassicSync {
                    member_id: m.member_id.clone(),
                },
                TimerOp::Session {
                    member_id: m.member_id.clone(),
                    deadline_ms: now_ms + classic.session_timeout_ms as i64,
                },
            ],
        })
    }

    /// A Heartbeat from a classic member (Kafka's
    /// `classicGroupHeartbeatToConsumerGroup`): NONE, or
    /// REBALANCE_IN_PROGRESS when it should join again, which it must do
    /// within its rebalance timeout.
    pub fn classic_heartbeat(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
        generation_id: i32,
        now_ms: i64,
    ) -> Result<ClassicOutcome<i16>, HeartbeatError> {
        let m = self.classic_member(member_id, instance_id)?;
        check_generation(m, generation_id)?;
        let classic = m.classic.as_ref().expect("checked by classic_member");
        let mut timers = vec![TimerOp::Session {
            member_id: m.member_id.clone(),
            deadline_ms: now_ms + classic.session_timeout_ms as i64,
        }];
        let rejoin = m.member_epoch < self.group_epoch
            || m.state == MemberState::UnrevokedPartitions
            || (m.state == MemberState::UnreleasedPartitions && !self.waiting_on_unreleased(m));
        let code = if rejoin {
            timers.push(join_timer(m, now_ms));
            error_code::REBALANCE_IN_PROGRESS
        } else {
            error_code::NONE
        };
        Ok(ClassicOutcome {
            records: Vec::new(),
            response: code,
            timers,
        })
    }

    /// REBALANCE_IN_PROGRESS for `m`; the caller arms its join timer
    /// with [`ConsumerGroup::classic_rejoin_timer`].
    fn rejoin(&self, m: &ConsumerGroupMember) -> HeartbeatError {
        err(
            error_code::REBALANCE_IN_PROGRESS,
            format!(
                "A new rebalance is triggered in group {} and member {} should rejoin to catch up.",
                self.group_id, m.member_id
            ),
        )
    }

    /// The join timer a refused SyncGroup (REBALANCE_IN_PROGRESS) arms.
    pub fn classic_rejoin_timer(&self, member_id: &str, now_ms: i64) -> Option<TimerOp> {
        self.members.get(member_id).map(|m| join_timer(m, now_ms))
    }

    /// A LeaveGroup of classic members (Kafka's
    /// `classicGroupLeaveToConsumerGroup`): each member's code, and the
    /// records that remove those that may leave and bump the group epoch.
    pub fn classic_leave(&self, members: &[(String, Option<String>)]) -> ClassicOutcome<Vec<i16>> {
        let mut codes = Vec::with_capacity(members.len());
        let mut gone: Vec<&ConsumerGroupMember> = Vec::new();
        for (member_id, instance_id) in members {
            let found = match instance_id {
                // An admin may remove a static member by instance id alone.
                Some(instance) if member_id.is_empty() => self
                    .static_member(instance)
                    .map(|m| m.member_id.clone())
                    .ok_or(error_code::UNKNOWN_MEMBER_ID)
                    .and_then(|id| {
                        self.classic_member(&id, Some(instance))
                            .map_err(|e| e.error_code)
                    }),
                _ => self
                    .classic_member(member_id, instance_id.as_deref())
                    .map_err(|e| e.error_code),
            };
            match found {
                Ok(m) => {
                    if !gone.iter().any(|g| g.member_id == m.member_id) {
                        gone.push(m);
                    }
                    codes.push(error_code::NONE);
                }
                Err(code) => codes.push(code),
            }
        }
        let (records, timers) = if gone.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            self.fence_members(&gone)
        };
        ClassicOutcome {
            records,
            response: codes,
            timers,
        }
    }

    /// The downgrade that fencing `fenced` triggers, if any (Kafka's
    /// `validateOnlineDowngradeWithFencedMember`): every other member
    /// speaks the classic protocol, at least one remains, the policy
    /// allows it, and they fit in a classic group.
    pub fn downgrade_on_fence(
        &self,
        fenced: &str,
        policy: MigrationPolicy,
        classic_max_size: usize,
        now_ms: i64,
        topics: &TopicsImage,
    ) -> Option<Downgrade> {
        let remaining = self.members.len().saturating_sub(1);
        if !self.members.contains_key(fenced) || !self.all_classic_except(fenced) || remaining == 0
        {
            return None;
        }
        if !policy.downgrade_enabled() {
            tracing::info!(group = %self.group_id, "not downgrading to a classic group: group.consumer.migration.policy does not allow it");
            return None;
        }
        if remaining > classic_max_size {
            tracing::info!(group = %self.group_id, "not downgrading to a classic group: more members than group.max.size");
            return None;
        }
        let members: Vec<&ConsumerGroupMember> = self
            .members
            .values()
            .filter(|m| m.member_id != fenced)
            .collect();
        Some(self.to_classic(&members, now_ms, topics, true))
    }

    /// The downgrade a static classic member's join triggers when it took
    /// the place of the last member speaking the consumer protocol (Kafka's
    /// `validateOnlineDowngradeWithReplacedMember`), called once the join
    /// is applied: every member now speaks the classic protocol, the
    /// policy allows it, and they fit in a classic group.
    pub fn downgrade_after_replacement(
        &self,
        policy: MigrationPolicy,
        classic_max_size: usize,
        now_ms: i64,
        topics: &TopicsImage,
    ) -> Option<Downgrade> {
        if self.members.is_empty() || !self.members.values().all(|m| m.uses_classic_protocol()) {
            return None;
        }
        if !policy.downgrade_enabled() {
            tracing::info!(group = %self.group_id, "not downgrading to a classic group: group.consumer.migration.policy does not allow it");
            return None;
        }
        if self.members.len() > classic_max_size {
            tracing::info!(group = %self.group_id, "not downgrading to a classic group: more members than group.max.size");
            return None;
        }
        let members: Vec<&ConsumerGroupMember> = self.members.values().collect();
        let rebalance = !self.assignment_is_current();
        Some(self.to_classic(&members, now_ms, topics, rebalance))
    }

    /// Every member holds its target at the group epoch: the target is the
    /// latest group epoch's, and each member reconciled with it (its epoch
    /// is the group's, nothing awaits revocation, it holds exactly its
    /// target). A classic group of these members has nothing to rebalance.
    fn assignment_is_current(&self) -> bool {
        self.assignment_epoch == self.group_epoch
            && self.members.values().all(|m| {
                m.member_epoch == self.group_epoch
                    && m.partitions_pending_revocation.0.is_empty()
                    && self
                        .targets
                        .get(&m.member_id)
                        .map_or(m.assigned_partitions.0.is_empty(), |t| {
                            *t == m.assigned_partitions
                        })
            })
    }

    /// The records deleting this group and the classic group of `members`
    /// (all speaking the classic protocol, at least one) at the group
    /// epoch, each keeping its assignment; `rebalance` says whether the
    /// classic group must then rebalance.
    fn to_classic(
        &self,
        members: &[&ConsumerGroupMember],
        now_ms: i64,
        topics: &TopicsImage,
        rebalance: bool,
    ) -> Downgrade {
        let classic = |m: &ConsumerGroupMember| m.classic.clone().expect("all classic");
        // A protocol every remaining member supports, in the first
        // member's order of preference.
        let first = classic(members[0]);
        let protocol = first
            .supported_protocols
            .iter()
            .map(|(n, _)| n.clone())
            .find(|n| {
                members
                    .iter()
                    .all(|m| classic(m).supported_protocols.iter().any(|(p, _)| p == n))
            })
            .unwrap_or_else(|| first.protocol_name().to_string());
        // A member whose own first choice is another protocol was told that
        // one in its JoinGroup answer: its SyncGroup would not match the
        // classic group's, so the group rebalances to settle one.
        let unanimous = members.iter().all(|m| {
            classic(m)
                .supported_protocols
                .first()
                .is_some_and(|(n, _)| *n == protocol)
        });
        let stored = members
            .iter()
            .map(|m| {
                let c = classic(m);
                let subscription = c
                    .supported_protocols
                    .iter()
                    .find(|(n, _)| *n == protocol)
                    .map(|(_, s)| s.clone())
                    .unwrap_or_default();
                StoredMember {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: c.session_timeout_ms,
                    subscription,
                    assignment: classic_assignment_bytes(m, topics),
                }
            })
            .collect();
        Downgrade {
            records: self.delete_records(),
            classic: GroupValue {
                protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
                generation: self.group_epoch,
                protocol: Some(protocol),
                leader: Some(members[0].member_id.clone()),
                current_state_timestamp: now_ms,
                members: stored,
            },
            rebalance: rebalance || !unanimous,
        }
    }

    /// The records that turn a live classic group into a consumer group
    /// (Kafka's `ConsumerGroup.fromClassicGroup` and
    /// `createConsumerGroupRecords`): every classic member at the classic
    /// generation, holding what its last assignment gave it, which is also
    /// its target. The caller deletes the classic group's metadata first.
    /// An error when a member's subscription is not the consumer protocol.
    pub fn from_classic(
        classic: &Group,
        topics: &TopicsImage,
    ) -> Result<Vec<ConsumerGroupRecord>, String> {
        let group_id = classic.id.clone();
        let epoch = classic.generation;
        let protocol = classic.protocol.clone().unwrap_or_default();
        let mut members: Vec<ConsumerGroupMember> = Vec::new();
        let mut taken = BTreeSet::new();
        let mut by_arrival: Vec<_> = classic.members.values().collect();
        by_arrival.sort_by_key(|m| m.joined_seq);
        for cm in by_arrival {
            let subscription = decode_subscription(&cm.metadata_for(&protocol))
                .map_err(|e| format!("member {}'s subscription: {e}", cm.id))?;
            let assigned = decode_assignment(&cm.assignment)
                .map_err(|e| format!("member {}'s assignment: {e}", cm.id))?;
            let mut m = ConsumerGroupMember::new(&cm.id);
            m.member_epoch = epoch;
            m.previous_member_epoch = epoch;
            m.instance_id = cm.instance_id.clone();
            m.rack_id = subscription.rack_id.clone();
            m.rebalance_timeout_ms = cm.rebalance_timeout_ms;
            m.client_id = cm.client_id.clone();
            m.client_host = cm.client_host.clone();
            let names: BTreeSet<String> = subscription.topics.into_iter().collect();
            m.subscribed_topic_names = names.into_iter().collect();
            // A partition two stale assignments name goes to the first.
            for (t, p) in to_assignment(&assigned, topics).iter() {
                if taken.insert((t, p)) {
                    m.assigned_partitions.insert(t, p);
                }
            }
            // Kafka gives a converted member's partitions the classic
            // generation as their assignment epoch.
            m.set_assignment_epochs(|_, _| epoch);
            m.classic = Some(ClassicMemberMetadata {
                session_timeout_ms: cm.session_timeout_ms,
                supported_protocols: if cm.protocols.is_empty() {
                    vec![(protocol.clone(), cm.metadata_for(&protocol))]
                } else {
                    cm.protocols.clone()
                },
            });
            members.push(m);
        }
        let mut counts = SubscriptionCounts::default();
        for m in &members {
            counts.add(&m.subscribed_topic_names, None);
        }
        let hash = metadata_hash(&counts.topic_names(&BTreeMap::new()), topics);
        let mut records: Vec<ConsumerGroupRecord> = members
            .iter()
            .map(|m| member_metadata_record(&group_id, m))
            .collect();
        records.push(ConsumerGroupRecord::GroupMetadata {
            group_id: group_id.clone(),
            value: Some(GroupMetadataValue {
                epoch,
                metadata_hash: hash,
            }),
        });
        for m in &members {
            records.push(ConsumerGroupRecord::TargetAssignmentMember {
                group_id: group_id.clone(),
                member_id: m.member_id.clone(),
                value: Some(m.assigned_partitions.clone()),
            });
        }
        records.push(ConsumerGroupRecord::TargetAssignmentMetadata {
            group_id: group_id.clone(),
            value: Some(epoch),
        });
        for m in &members {
            records.push(current_assignment_record(&group_id, m));
        }
        Ok(records)
    }

    /// The session timers of a group just converted from a classic one:
    /// each member's own session timeout.
    pub fn classic_session_timers(&self, now_ms: i64) -> Vec<TimerOp> {
        self.members
            .values()
            .filter_map(|m| {
                m.classic.as_ref().map(|c| TimerOp::Session {
                    member_id: m.member_id.clone(),
                    deadline_ms: now_ms + c.session_timeout_ms as i64,
                })
            })
            .collect()
    }
}

/// Kafka's `throwIfGenerationIdUnmatched`.
fn check_generation(m: &ConsumerGroupMember, generation_id: i32) -> Result<(), HeartbeatError> {
    if m.member_epoch != generation_id {
        return Err(err(
            error_code::ILLEGAL_GENERATION,
            format!(
                "The request generation id {generation_id} is not equal to the member epoch {} of member {}.",
                m.member_epoch, m.member_id
            ),
        ));
    }
    Ok(())
}

/// The deadline by which a classic member told to rejoin must join.
fn join_timer(m: &ConsumerGroupMember, now_ms: i64) -> TimerOp {
    TimerOp::ClassicJoin {
        member_id: m.member_id.clone(),
        deadline_ms: now_ms + m.rebalance_timeout_ms.max(0) as i64,
    }
}
