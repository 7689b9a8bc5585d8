//! ConsumerGroupHeartbeat, leaving, and the two timeouts, following
//! Kafka's `GroupMetadataManager.consumerGroupHeartbeat`:
//!
//! 1. Validate the request and the member's epoch (the errors below).
//! 2. Update the member; a new subscription, a newly resolved regex or a
//!    change in the subscribed topics' metadata bumps the group epoch.
//! 3. A group epoch past the target assignment's computes a new target.
//! 4. Reconcile the member towards its target (`reconcile.rs`).
//!
//! Nothing here changes the group: each call returns the records that
//! carry the change, the answer, and the timer operations. The caller
//! persists the records, applies them with `ConsumerGroup::replay`, arms
//! the timers, then answers; and it handles one request of a group at a
//! time, each against the state the previous one's records produced. If a
//! write fails the group must be reloaded from the log.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

use crate::broker_config::consumer_group::{ConsumerGroupConfig, DISCONNECT_GRACE_DISABLED};
use crate::group::consumer::assignor::AssignorKind;
use crate::group::consumer::group::{
    current_assignment_record, member_metadata_record, member_tombstones, ConsumerGroup,
};
use crate::group::consumer::member::{
    ConsumerGroupMember, MemberState, JOIN_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
};
use crate::group::consumer::reconcile::reconcile;
use crate::group::consumer::records::{ConsumerGroupRecord, GroupMetadataValue, RegexValue};
use crate::group::consumer::subscription::{compile, metadata_hash, resolve};
use crate::group::consumer::target::{self, TargetMember};
use crate::group::consumer::topics::{Assignment, TopicId, TopicsImage};
use crate::protocol::error_code;

/// The heartbeat interval told to a member waiting for partitions that
/// other members still own (UNRELEASED_PARTITIONS), when the group's is
/// longer. Such a member learns that its partitions are free only from a
/// heartbeat answer: at the group's interval (5 s by default) that wait
/// would add up to a whole interval to every rebalance that moves
/// partitions to it. A pinlog choice within the protocol: Kafka always
/// answers with the group's interval, and clients follow the interval of
/// each answer. The member is back at the group's interval once it holds
/// its target.
pub const UNRELEASED_PARTITIONS_HEARTBEAT_INTERVAL_MS: i32 = 100;

/// The interval told to `member` in its heartbeat answer; `settled` when
/// the request acknowledged its target (it reported owning exactly its
/// assignment, which clients send only when what they own changed).
///
/// A member that settles is told a shorter interval, by an amount spread
/// over up to half the interval by a hash of its id and epoch. Members
/// that settle together (every member acknowledging the end of one
/// rebalance within milliseconds, each client restarting its timer at its
/// acknowledgement) would otherwise heartbeat in step for good: nobody
/// would be due for most of each interval, so the next rebalance, which
/// reaches each member only at its next heartbeat, would wait for the
/// whole bunch, and the coordinator would take the heartbeats in bursts.
/// Spread out, some member is always due soon, and the uniform assignor
/// moves partitions from and to exactly those. Only ever shorter, so no
/// session comes closer to its end; and by at most half, so a client that
/// reported what it owns in every heartbeat would heartbeat at most twice
/// as often.
pub fn heartbeat_interval_for(
    member: &ConsumerGroupMember,
    settled: bool,
    config: &ConsumerGroupConfig,
) -> i32 {
    let interval = config.heartbeat_interval_ms;
    if member.state == MemberState::UnreleasedPartitions {
        return interval.min(UNRELEASED_PARTITIONS_HEARTBEAT_INTERVAL_MS);
    }
    if !settled || interval <= UNRELEASED_PARTITIONS_HEARTBEAT_INTERVAL_MS {
        return interval;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&member.member_id, member.member_epoch).hash(&mut h);
    let span = (interval / 2) as u64;
    interval - (h.finish() % span) as i32
}

/// ConsumerGroupHeartbeat v1 (KIP-1082): the client makes up its member
/// id, so every request must carry one.
pub const FIRST_VERSION_WITH_CLIENT_MEMBER_ID: i16 = 1;
/// Kafka's FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR
/// and INVALID_REGULAR_EXPRESSION codes.
pub const FENCED_MEMBER_EPOCH: i16 = 110;
pub const UNRELEASED_INSTANCE_ID: i16 = 111;
pub const UNSUPPORTED_ASSIGNOR: i16 = 112;
pub const INVALID_REGULAR_EXPRESSION: i16 = 128;

/// A ConsumerGroupHeartbeat request, with what the connection knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeartbeatRequest {
    pub api_version: i16,
    pub group_id: String,
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1 when unchanged.
    pub rebalance_timeout_ms: i32,
    /// `None` when unchanged.
    pub subscribed_topic_names: Option<Vec<String>>,
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    /// What the member owns; `None` when unchanged.
    pub topic_partitions: Option<Vec<(TopicId, Vec<i32>)>>,
    pub client_id: String,
    pub client_host: String,
}

/// The answer. `assignment` is sent when the member's assignment changed
/// or the request was a full one (a join, or a member resending all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatResponse {
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    pub assignment: Option<Vec<(TopicId, Vec<i32>)>>,
}

/// A refused request: Kafka's error code and message; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatError {
    pub error_code: i16,
    pub message: String,
}

pub(super) fn err(error_code: i16, message: impl Into<String>) -> HeartbeatError {
    HeartbeatError {
        error_code,
        message: message.into(),
    }
}

/// Timers as data: the coordinator keeps one session timer and at most one
/// rebalance timer per member, keyed by member id; scheduling replaces the
/// previous one. When a timer fires the coordinator calls
/// [`ConsumerGroup::session_expired`] or
/// [`ConsumerGroup::rebalance_expired`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimerOp {
    Session {
        member_id: String,
        deadline_ms: i64,
    },
    /// The member must finish revoking before `deadline_ms` or be fenced;
    /// it fires only if the member is still at `member_epoch`.
    Rebalance {
        member_id: String,
        member_epoch: i32,
        deadline_ms: i64,
    },
    CancelRebalance {
        member_id: String,
    },
    CancelAll {
        member_id: String,
    },
    /// A classic member told to rejoin must send JoinGroup before
    /// `deadline_ms` or be fenced; armed only if none is armed already.
    ClassicJoin {
        member_id: String,
        deadline_ms: i64,
    },
    CancelClassicJoin {
        member_id: String,
    },
    /// A classic member that joined must send SyncGroup before
    /// `deadline_ms` or be fenced.
    ClassicSync {
        member_id: String,
        deadline_ms: i64,
    },
    CancelClassicSync {
        member_id: String,
    },
}

/// One member's change, as [`ConsumerGroup::apply_change`] takes it.
pub(super) struct MemberChange<'a> {
    pub member_id: &'a str,
    /// The member as the group holds it (new members: fresh).
    pub member: &'a ConsumerGroupMember,
    /// The member with the request's metadata.
    pub updated: ConsumerGroupMember,
    /// The static member this one replaces, whose place and target it takes.
    pub replaced: Option<&'a ConsumerGroupMember>,
    /// What the member reported owning; `None` when unknown.
    pub owned: Option<&'a Assignment>,
}

/// What the caller provides besides the request.
pub struct HeartbeatContext<'a> {
    pub now_ms: i64,
    pub config: &'a ConsumerGroupConfig,
    pub topics: &'a TopicsImage,
    /// A fresh UUID string, the member id of a v0 member joining without
    /// one. The caller draws it so that this code draws no randomness.
    pub fresh_member_id: &'a str,
    /// Whether the member sending this heartbeat may DESCRIBE a topic;
    /// `None` when no authorizer runs. A regex resolved at this heartbeat
    /// keeps only the topics it may (Kafka 4.x resolves with the context
    /// of the member whose heartbeat triggers the resolution, KAFKA-18813):
    /// a regex must not hand a member topics it may not even see.
    pub may_describe: Option<&'a dyn Fn(&str) -> bool>,
    /// Each member's session deadline, as the caller's timers hold it;
    /// `None` when the caller keeps none (see
    /// [`MemberSpec::session_deadline_ms`](crate::group::consumer::assignor::MemberSpec)).
    pub session_deadline_ms: Option<SessionDeadlines<'a>>,
}

/// Each member's session deadline by member id, as the caller holds it.
pub type SessionDeadlines<'a> = &'a dyn Fn(&str) -> Option<i64>;

impl HeartbeatContext<'_> {
    /// The topics `regex` matches that the member may describe.
    fn resolve_regex(&self, regex: &str) -> Vec<String> {
        let mut topics = resolve(regex, self.topics);
        if let Some(may_describe) = self.may_describe {
            topics.retain(|t| may_describe(t));
        }
        topics
    }
}

/// The records, answer and timers of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatOutcome {
    pub records: Vec<ConsumerGroupRecord>,
    pub response: HeartbeatResponse,
    pub timers: Vec<TimerOp>,
}

/// The checks that need no group (Kafka's
/// `throwIfConsumerGroupHeartbeatRequestIsInvalid`).
pub fn validate_request(
    req: &HeartbeatRequest,
    config: &ConsumerGroupConfig,
) -> Result<(), HeartbeatError> {
    let invalid = |m: &str| Err(err(error_code::INVALID_REQUEST, m));
    if req.group_id.is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if req.instance_id.as_deref() == Some("") {
        return invalid("InstanceId can't be empty.");
    }
    if req.rack_id.as_deref() == Some("") {
        return invalid("RackId can't be empty.");
    }
    if req.api_version >= FIRST_VERSION_WITH_CLIENT_MEMBER_ID && req.member_id.is_empty() {
        return invalid("MemberId can't be empty.");
    }
    match req.member_epoch {
        e if e > 0 || e == LEAVE_GROUP_MEMBER_EPOCH => {
            if req.member_id.is_empty() {
                return invalid("MemberId can't be empty.");
            }
        }
        JOIN_GROUP_MEMBER_EPOCH => {
            if req.rebalance_timeout_ms == -1 {
                return invalid("RebalanceTimeoutMs must be provided in first request.");
            }
            if req
                .topic_partitions
                .as_ref()
                .is_none_or(|tp| !tp.is_empty())
            {
                return invalid("TopicPartitions must be empty when (re-)joining.");
            }
            let names = req
                .subscribed_topic_names
                .as_ref()
                .is_some_and(|n| !n.is_empty());
            let regex = req
                .subscribed_topic_regex
                .as_ref()
                .is_some_and(|r| !r.is_empty());
            if !names && !regex {
                return invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                );
            }
        }
        LEAVE_GROUP_STATIC_MEMBER_EPOCH => {
            if req.member_id.is_empty() {
                return invalid("MemberId can't be empty.");
            }
            if req.instance_id.is_none() {
                return invalid("InstanceId can't be null.");
            }
        }
        _ => return invalid("MemberEpoch is invalid."),
    }
    if let Some(a) = &req.server_assignor {
        if !config.assignors.iter().any(|n| n == a) {
            return Err(err(
                UNSUPPORTED_ASSIGNOR,
                format!(
                    "ServerAssignor {a} is not supported. Supported assignors: {}.",
                    config.assignors.join(", ")
                ),
            ));
        }
    }
    if let Some(r) = req
        .subscribed_topic_regex
        .as_deref()
        .filter(|r| !r.is_empty())
    {
        compile(r).map_err(|m| err(INVALID_REGULAR_EXPRESSION, m))?;
    }
    Ok(())
}

/// The answer to a heartbeat for a group the coordinator does not have
/// when the request is not a join (Kafka's GROUP_ID_NOT_FOUND).
pub fn unknown_group_error(group_id: &str) -> HeartbeatError {
    err(
        error_code::GROUP_ID_NOT_FOUND,
        format!("Consumer group {group_id} not found."),
    )
}

/// Whether the member owns only partitions of `assigned`.
fn owned_subset(owned: Option<&Assignment>, assigned: &Assignment) -> bool {
    owned.is_some_and(|o| o.is_subset_of(assigned))
}

/// Kafka's member-epoch check, with KAFKA-19233: epoch 0 is a member that
/// was told it is fenced and rejoins under its id, always accepted.
fn check_member_epoch(
    member: &ConsumerGroupMember,
    received: i32,
    owned: Option<&Assignment>,
) -> Result<(), HeartbeatError> {
    if received == JOIN_GROUP_MEMBER_EPOCH {
        return Ok(());
    }
    if received > member.member_epoch {
        return Err(err(
            FENCED_MEMBER_EPOCH,
            format!(
                "The consumer group member has a greater member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                member.member_epoch
            ),
        ));
    }
    if received < member.member_epoch
        && (received != member.previous_member_epoch
            || !owned_subset(owned, &member.assigned_partitions))
    {
        // A member that lost the answer carrying its bump retries with the
        // previous epoch; it is accepted while it owns nothing new.
        return Err(err(
            FENCED_MEMBER_EPOCH,
            format!(
                "The consumer group member has a smaller member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                member.member_epoch
            ),
        ));
    }
    Ok(())
}

impl ConsumerGroup {
    /// Handles a ConsumerGroupHeartbeat of this group (create the group
    /// with [`ConsumerGroup::new`] when a join names an unknown one).
    pub fn heartbeat(
        &self,
        req: &HeartbeatRequest,
        ctx: &HeartbeatContext<'_>,
    ) -> Result<HeartbeatOutcome, HeartbeatError> {
        validate_request(req, ctx.config)?;
        if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
            || req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
        {
            return self.leave(req);
        }
        let owned = req
            .topic_partitions
            .as_ref()
            .map(|tp| Assignment::from_topic_partitions(tp));
        let joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH;
        let full = self.members.len() >= ctx.config.max_size as usize;
        if full && (req.member_id.is_empty() || !self.members.contains_key(&req.member_id)) {
            return Err(err(
                error_code::GROUP_MAX_SIZE_REACHED,
                format!(
                    "The consumer group has reached its maximum capacity of {} members.",
                    ctx.config.max_size
                ),
            ));
        }
        let member_id = if req.member_id.is_empty() {
            ctx.fresh_member_id.to_string()
        } else {
            req.member_id.clone()
        };
        assert!(!member_id.is_empty(), "a member id from the caller");

        let mut records = Vec::new();
        // The static member this one replaces (a restart under the same
        // instance id), whose place and target it takes.
        let mut replaced: Option<&ConsumerGroupMember> = None;
        let member: ConsumerGroupMember = match &req.instance_id {
            None => match self.members.get(&member_id) {
                Some(m) => {
                    check_member_epoch(m, req.member_epoch, owned.as_ref())?;
                    m.clone()
                }
                None if joining => ConsumerGroupMember::new(&member_id),
                None => return Err(unknown_member(&member_id, &self.group_id)),
            },
            Some(instance) => match self.static_member(instance) {
                None if joining => self
                    .members
                    .get(&member_id)
                    .cloned()
                    .unwrap_or_else(|| ConsumerGroupMember::new(&member_id)),
                None => {
                    return Err(err(
                        error_code::UNKNOWN_MEMBER_ID,
                        format!("Instance id {instance} is unknown."),
                    ))
                }
                Some(existing) if joining => {
                    if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                        return Err(err(
                            UNRELEASED_INSTANCE_ID,
                            format!(
                                "Static member {member_id} with instance id {instance} cannot join the group because the instance id is owned by {} member.",
                                existing.member_id
                            ),
                        ));
                    }
                    // Takes over the departed member's place and partitions
                    // at epoch 0; reconciliation then moves it to the
                    // target epoch without a new group epoch.
                    let mut m = existing.clone();
                    m.member_id = member_id.clone();
                    m.member_epoch = 0;
                    m.previous_member_epoch = 0;
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
                Some(existing) => {
                    if existing.member_id != member_id {
                        return Err(err(
                            error_code::FENCED_INSTANCE_ID,
                            format!(
                                "Static member {member_id} with instance id {instance} was fenced by member {}.",
                                existing.member_id
                            ),
                        ));
                    }
                    check_member_epoch(existing, req.member_epoch, owned.as_ref())?;
                    existing.clone()
                }
            },
        };

        // 1. The member's new metadata; the group epoch moves with the
        //    subscription or the subscribed topics' metadata.
        let mut updated = member.clone();
        if let Some(i) = &req.instance_id {
            updated.instance_id = Some(i.clone());
        }
        if let Some(r) = &req.rack_id {
            updated.rack_id = Some(r.clone());
        }
        if req.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        if let Some(a) = &req.server_assignor {
            updated.server_assignor = Some(a.clone());
        }
        if let Some(names) = &req.subscribed_topic_names {
            // Kept as a sorted set: the same topics in another order are
            // the same subscription.
            let set: BTreeSet<&String> = names.iter().collect();
            updated.subscribed_topic_names = set.into_iter().cloned().collect();
        }
        if let Some(r) = &req.subscribed_topic_regex {
            updated.subscribed_topic_regex = (!r.is_empty()).then(|| r.clone());
        }
        updated.client_id = req.client_id.clone();
        updated.client_host = req.client_host.clone();
        updated.classic = None;

        let (reconciled, mut timers) = self.apply_change(
            MemberChange {
                member_id: &member_id,
                member: &member,
                updated,
                replaced,
                owned: owned.as_ref(),
            },
            ctx,
            &mut records,
        )?;
        timers.push(TimerOp::Session {
            member_id: member_id.clone(),
            deadline_ms: ctx.now_ms + ctx.config.session_timeout_ms as i64,
        });
        let full_request = joining
            || (req.rebalance_timeout_ms != -1
                && (req.subscribed_topic_names.is_some() || req.subscribed_topic_regex.is_some())
                && req.topic_partitions.is_some());
        let changed = reconciled.assigned_partitions != member.assigned_partitions;
        // The member reports owning exactly its target: the
        // acknowledgement that ends its reconciliation (clients send what
        // they own only when it changed, or in a full request).
        let settled = reconciled.state == MemberState::Stable
            && owned
                .as_ref()
                .is_some_and(|o| *o == reconciled.assigned_partitions);
        let response = HeartbeatResponse {
            member_id: member_id.clone(),
            member_epoch: reconciled.member_epoch,
            heartbeat_interval_ms: heartbeat_interval_for(&reconciled, settled, ctx.config),
            assignment: (full_request || changed)
                .then(|| reconciled.assigned_partitions.to_topic_partitions()),
        };
        Ok(HeartbeatOutcome {
            records,
            response,
            timers,
        })
    }

    /// Steps 1-3 of a member's heartbeat or classic join, against the
    /// group as it is: the member's metadata record, the group epoch, a
    /// new target assignment when the epoch moved past it, and the
    /// member's reconciliation. Appends the records; returns the member
    /// as reconciled and its rebalance timer operations.
    pub(super) fn apply_change(
        &self,
        change: MemberChange<'_>,
        ctx: &HeartbeatContext<'_>,
        records: &mut Vec<ConsumerGroupRecord>,
    ) -> Result<(ConsumerGroupMember, Vec<TimerOp>), HeartbeatError> {
        let MemberChange {
            member_id,
            member,
            updated,
            replaced,
            owned,
        } = change;
        let member_id = member_id.to_string();
        let is_new = replaced.is_none() && !self.members.contains_key(&member_id);
        let mut bump = false;
        if is_new || !updated.same_metadata(member) {
            records.push(member_metadata_record(&self.group_id, &updated));
            bump = is_new || !updated.same_subscription(member);
        }

        // The group's subscriptions with this member's change.
        let mut counts = self.counts.clone();
        let old_for_counts = replaced.or(self.members.get(&member_id));
        if let Some(old) = old_for_counts {
            counts.remove(
                &old.subscribed_topic_names,
                old.subscribed_topic_regex.as_deref(),
            );
        }
        counts.add(
            &updated.subscribed_topic_names,
            updated.subscribed_topic_regex.as_deref(),
        );
        let refresh = self.metadata_version_checked.get() != Some(ctx.topics.version);
        let mut resolved: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for regex in counts.regexes.keys() {
            let known = self.regexes.get(regex);
            let topics = match known {
                Some(v) if !refresh => v.topics.clone(),
                _ => ctx.resolve_regex(regex),
            };
            if known.is_none_or(|v| v.topics != topics) {
                records.push(ConsumerGroupRecord::RegularExpression {
                    group_id: self.group_id.clone(),
                    regex: regex.clone(),
                    value: Some(RegexValue {
                        topics: topics.clone(),
                        version: ctx.topics.version,
                        timestamp_ms: ctx.now_ms,
                    }),
                });
            }
            resolved.insert(regex.clone(), topics);
        }
        for regex in self.regexes.keys() {
            if !counts.regexes.contains_key(regex) {
                records.push(regex_tombstone(&self.group_id, regex));
            }
        }

        let mut group_epoch = self.group_epoch;
        let mut hash = self.metadata_hash;
        if bump || refresh || resolved_changed(&self.regexes, &resolved) {
            hash = metadata_hash(&counts.topic_names(&resolved), ctx.topics);
            if hash != self.metadata_hash {
                bump = true;
            }
        }
        if bump {
            group_epoch += 1;
            records.push(ConsumerGroupRecord::GroupMetadata {
                group_id: self.group_id.clone(),
                value: Some(GroupMetadataValue {
                    epoch: group_epoch,
                    metadata_hash: hash,
                }),
            });
        }

        // 2. A new target assignment when the group epoch moved past it.
        let (target_epoch, target) = if group_epoch > self.assignment_epoch {
            let mut members: Vec<TargetMember<'_>> = Vec::with_capacity(self.members.len() + 1);
            for (id, m) in &self.members {
                if *id == member_id || replaced.is_some_and(|r| r.member_id == *id) {
                    continue;
                }
                members.push(TargetMember {
                    member: m,
                    current_target: self.targets.get(id),
                    session_deadline_ms: ctx.session_deadline_ms.and_then(|f| f(id)),
                });
            }
            let inherited = match replaced {
                Some(r) => self.targets.get(&r.member_id),
                None => self.targets.get(&member_id),
            };
            // This member was heard from just now: due last.
            members.push(TargetMember {
                member: &updated,
                current_target: inherited,
                session_deadline_ms: Some(ctx.now_ms + ctx.config.session_timeout_ms as i64),
            });
            let assignor = self.preferred_assignor(&members, ctx.config);
            let mut old_targets = self.targets.clone();
            if let Some(r) = replaced {
                // The records above already moved the old target over.
                if let Some(t) = old_targets.remove(&r.member_id) {
                    old_targets.insert(member_id.clone(), t);
                }
            }
            let result = target::build(
                &self.group_id,
                group_epoch,
                assignor,
                &members,
                &resolved,
                ctx.topics,
                &old_targets,
            );
            records.extend(result.records);
            let mine = result.targets.get(&member_id).cloned().unwrap_or_default();
            (group_epoch, mine)
        } else {
            let mine = match replaced {
                Some(r) => self.targets.get(&r.member_id),
                None => self.targets.get(&member_id),
            };
            (self.assignment_epoch, mine.cloned().unwrap_or_default())
        };

        // 3. Reconcile the member towards its target.
        let mut timers = Vec::new();
        let reconciled = if updated.is_reconciled_to(target_epoch) {
            updated.clone()
        } else {
            let owner_epoch = |t: &TopicId, p: i32| self.owner(t, p).map(|o| o.epoch);
            let next = reconcile(&updated, target_epoch, &target, &owner_epoch, owned)
                .map_err(|_| {
                    err(
                        FENCED_MEMBER_EPOCH,
                        "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin.",
                    )
                })?;
            if !next.same_current_assignment(&updated) {
                records.push(current_assignment_record(&self.group_id, &next));
                if next.state == MemberState::UnrevokedPartitions {
                    timers.push(TimerOp::Rebalance {
                        member_id: member_id.clone(),
                        member_epoch: next.member_epoch,
                        deadline_ms: ctx.now_ms + next.rebalance_timeout_ms.max(0) as i64,
                    });
                } else {
                    timers.push(TimerOp::CancelRebalance {
                        member_id: member_id.clone(),
                    });
                }
            }
            next
        };
        // Checked only now: a refused request must not count as a check.
        self.metadata_version_checked.set(Some(ctx.topics.version));
        Ok((reconciled, timers))
    }

    /// The assignor most members name, else the group default. Ties go to
    /// the one listed first in `group.consumer.assignors`, so the choice
    /// is deterministic.
    fn preferred_assignor(
        &self,
        members: &[TargetMember<'_>],
        config: &ConsumerGroupConfig,
    ) -> AssignorKind {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for m in members {
            if let Some(a) = &m.member.server_assignor {
                *counts.entry(a.as_str()).or_default() += 1;
            }
        }
        let best = config
            .assignors
            .iter()
            .filter_map(|name| counts.get(name.as_str()).map(|n| (*n, name)))
            .fold(None::<(usize, &String)>, |best, (n, name)| match best {
                Some((b, _)) if b >= n => best,
                _ => Some((n, name)),
            })
            .map(|(_, name)| name.as_str())
            .unwrap_or(config.default_assignor());
        AssignorKind::from_name(best).unwrap_or(AssignorKind::Uniform)
    }

    /// A member's leave (epoch -1), or a static member's temporary leave
    /// (epoch -2, which keeps its place and partitions until its session
    /// times out).
    fn leave(&self, req: &HeartbeatRequest) -> Result<HeartbeatOutcome, HeartbeatError> {
        let member = match &req.instance_id {
            None => self
                .members
                .get(&req.member_id)
                .ok_or_else(|| unknown_member(&req.member_id, &self.group_id))?,
            Some(instance) => {
                let m = self.static_member(instance).ok_or_else(|| {
                    err(
                        error_code::UNKNOWN_MEMBER_ID,
                        format!("Instance id {instance} is unknown."),
                    )
                })?;
                if m.member_id != req.member_id {
                    return Err(err(
                        error_code::FENCED_INSTANCE_ID,
                        format!(
                            "Static member {} with instance id {instance} was fenced by member {}.",
                            req.member_id, m.member_id
                        ),
                    ));
                }
                m
            }
        };
        let response = HeartbeatResponse {
            member_id: member.member_id.clone(),
            member_epoch: req.member_epoch,
            heartbeat_interval_ms: 0,
            assignment: None,
        };
        if req.instance_id.is_some() && req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
            let mut away = member.clone();
            away.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
            away.partitions_pending_revocation = Assignment::new();
            // Kafka resets a leaving static member's assignment epochs to
            // 0: its replacement takes the partitions over at epoch 0 and
            // may commit for them at any epoch it has been given since.
            away.set_assignment_epochs(|_, _| 0);
            return Ok(HeartbeatOutcome {
                records: vec![current_assignment_record(&self.group_id, &away)],
                response,
                timers: Vec::new(),
            });
        }
        let (records, timers) = self.fence(member);
        Ok(HeartbeatOutcome {
            records,
            response,
            timers,
        })
    }

    /// The records that remove `member` and bump the group epoch, so that
    /// its partitions go to the others.
    fn fence(&self, member: &ConsumerGroupMember) -> (Vec<ConsumerGroupRecord>, Vec<TimerOp>) {
        self.fence_members(&[member])
    }

    /// The records that remove `members` (each once) and bump the group
    /// epoch once, so that their partitions go to the others.
    pub(super) fn fence_members(
        &self,
        members: &[&ConsumerGroupMember],
    ) -> (Vec<ConsumerGroupRecord>, Vec<TimerOp>) {
        let mut records = Vec::new();
        let mut timers = Vec::new();
        let mut counts = self.counts.clone();
        for m in members {
            records.extend(member_tombstones(&self.group_id, &m.member_id));
            counts.remove(
                &m.subscribed_topic_names,
                m.subscribed_topic_regex.as_deref(),
            );
            timers.push(TimerOp::CancelAll {
                member_id: m.member_id.clone(),
            });
        }
        for regex in self.regexes.keys() {
            if !counts.regexes.contains_key(regex) {
                records.push(regex_tombstone(&self.group_id, regex));
            }
        }
        // The hash of what is left, against the metadata the group last
        // saw: resolved regexes as recorded. A later heartbeat refreshes
        // both against newer metadata.
        records.push(ConsumerGroupRecord::GroupMetadata {
            group_id: self.group_id.clone(),
            value: Some(GroupMetadataValue {
                epoch: self.group_epoch + 1,
                metadata_hash: self.metadata_hash,
            }),
        });
        (records, timers)
    }

    /// The session deadline of `member_id` now that the connection it
    /// last heartbeated on closed at `now_ms`
    /// (`group.consumer.disconnect.grace.ms`): its heartbeat interval and
    /// the grace from now, for the caller to keep if earlier than the
    /// session's. `None` for a member that keeps its session: a static
    /// member (its point is to restart without a rebalance), a classic
    /// member, an unknown one, or when the grace is off.
    pub fn disconnected_session_deadline(
        &self,
        member_id: &str,
        now_ms: i64,
        config: &ConsumerGroupConfig,
    ) -> Option<i64> {
        if config.disconnect_grace_ms == DISCONNECT_GRACE_DISABLED {
            return None;
        }
        let m = self.members.get(member_id)?;
        if m.instance_id.is_some() || m.uses_classic_protocol() {
            return None;
        }
        Some(now_ms + config.heartbeat_interval_ms as i64 + config.disconnect_grace_ms as i64)
    }

    /// The session timer of `member_id` fired: the member is fenced.
    /// Nothing when it is gone already (a stale timer).
    pub fn session_expired(&self, member_id: &str) -> (Vec<ConsumerGroupRecord>, Vec<TimerOp>) {
        match self.members.get(member_id) {
            Some(m) => self.fence(m),
            None => (Vec::new(), Vec::new()),
        }
    }

    /// The rebalance timer of `member_id` at `member_epoch` fired: the
    /// member did not revoke in time and is fenced, unless it moved on.
    pub fn rebalance_expired(
        &self,
        member_id: &str,
        member_epoch: i32,
    ) -> (Vec<ConsumerGroupRecord>, Vec<TimerOp>) {
        match self.members.get(member_id) {
            Some(m) if m.member_epoch == member_epoch => self.fence(m),
            _ => (Vec::new(), Vec::new()),
        }
    }

    /// The timers of a group just loaded from the log (Kafka's
    /// `onLoaded`): a session timer for every member (a classic member's
    /// own session timeout) and a rebalance timer for every member still
    /// revoking.
    pub fn on_loaded(&self, now_ms: i64, config: &ConsumerGroupConfig) -> Vec<TimerOp> {
        let mut out = Vec::new();
        for m in self.members.values() {
            out.push(TimerOp::Session {
                member_id: m.member_id.clone(),
                deadline_ms: now_ms + m.session_timeout_ms(config.session_timeout_ms) as i64,
            });
            if m.state == MemberState::UnrevokedPartitions {
                out.push(TimerOp::Rebalance {
                    member_id: m.member_id.clone(),
                    member_epoch: m.member_epoch,
                    deadline_ms: now_ms + m.rebalance_timeout_ms.max(0) as i64,
                });
            }
        }
        out
    }
}

fn unknown_member(member_id: &str, group_id: &str) -> HeartbeatError {
    err(
        error_code::UNKNOWN_MEMBER_ID,
        format!("Member {member_id} is not a member of group {group_id}."),
    )
}

fn regex_tombstone(group_id: &str, regex: &str) -> ConsumerGroupRecord {
    ConsumerGroupRecord::RegularExpression {
        group_id: group_id.to_string(),
        regex: regex.to_string(),
        value: None,
    }
}

fn resolved_changed(
    known: &BTreeMap<String, RegexValue>,
    now: &BTreeMap<String, Vec<String>>,
) -> bool {
    now.iter()
        .any(|(r, topics)| known.get(r).is_none_or(|v| &v.topics != topics))
}
