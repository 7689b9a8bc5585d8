//! One consumer group of the classic protocol: its members, generation and
//! committed offsets, and the state machine Kafka's group coordinator runs
//! (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead).
//!
//! Everything here is synchronous and in memory. A JoinGroup or SyncGroup
//! that has to wait for the rest of the group parks a oneshot sender in its
//! member; the transition that completes the round answers every parked
//! sender. Writing records to `__consumer_offsets` is the coordinator's job
//! (`coordinator.rs`): transitions that must be persisted say so in their
//! return value.

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;
use futures_channel::oneshot;

use crate::group::schema::{GroupValue, OffsetValue, StoredMember};
use crate::protocol::error_code;

mod handover;

/// Kafka's group states, named as DescribeGroups and ListGroups report them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// What a JoinGroup gets back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JoinOutcome {
    pub error_code: i16,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    /// Whether the leader may skip computing an assignment (a static leader
    /// rejoining an unchanged group, KIP-814).
    pub skip_assignment: bool,
    pub member_id: String,
    /// Only the leader gets the members and their metadata.
    pub members: Vec<JoinedMember>,
}

impl JoinOutcome {
    pub fn error(code: i16, member_id: &str) -> JoinOutcome {
        JoinOutcome {
            error_code: code,
            generation_id: -1,
            member_id: member_id.to_string(),
            ..JoinOutcome::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

/// What a SyncGroup gets back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncOutcome {
    pub error_code: i16,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncOutcome {
    pub fn error(code: i16) -> SyncOutcome {
        SyncOutcome {
            error_code: code,
            ..SyncOutcome::default()
        }
    }
}

/// One member of a group.
#[derive(Debug)]
pub struct Member {
    pub id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// Supported protocols in preference order, with their metadata.
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    /// Order of arrival; the first member to arrive leads by default.
    pub joined_seq: u64,
    /// When the member is considered dead without a heartbeat.
    pub session_deadline_ms: i64,
    pub join_waiter: Option<oneshot::Sender<JoinOutcome>>,
    pub sync_waiter: Option<oneshot::Sender<SyncOutcome>>,
}

impl Member {
    /// The member's metadata for `protocol`.
    pub fn metadata_for(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }

    fn same_protocols(&self, other: &[(String, Bytes)]) -> bool {
        self.protocols == other
    }

    fn refresh(&mut self, now_ms: i64) {
        self.session_deadline_ms = now_ms + self.session_timeout_ms as i64;
    }
}

/// What a member asks for when it joins.
#[derive(Debug, Clone)]
pub struct JoinParams {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    /// JoinGroup v4+: a member without an id must ask again with the one it
    /// is given (KIP-394).
    pub require_known_member_id: bool,
    /// A fresh UUID, the end of the id this member gets if the join gives
    /// it a new one (`<client or instance id>-<uuid>`, as Kafka names
    /// members). The caller draws it, so that the group state machine draws
    /// no randomness and tests drive it deterministically. Only a join
    /// without a member id needs one; the others may pass it empty.
    pub fresh_id_suffix: String,
}

/// The result of a JoinGroup step: an immediate answer, or a parked one.
pub enum JoinStep {
    Answer(JoinOutcome),
    /// Store the group's metadata first, then answer (a static member took
    /// over its old place: a coordinator restart must know the new id).
    AnswerAfterStore(JoinOutcome),
    Wait(oneshot::Receiver<JoinOutcome>),
}

pub enum SyncStep {
    Answer(SyncOutcome),
    Wait(oneshot::Receiver<SyncOutcome>),
    /// The leader's assignment: persist `value`, then call
    /// [`Group::finish_sync`] with the result; the leader's own answer
    /// arrives on the receiver.
    Persist {
        generation: i32,
        value: GroupValue,
        assignments: HashMap<String, Bytes>,
        wait: oneshot::Receiver<SyncOutcome>,
    },
}

/// Settings the state machine needs (Kafka's `group.*` broker settings).
#[derive(Debug, Clone, Copy)]
pub struct GroupLimits {
    pub initial_rebalance_delay_ms: i64,
    pub max_size: usize,
}

/// A rebalance that waits for members to (re)join.
#[derive(Debug, Clone, Copy)]
struct JoinTimer {
    deadline_ms: i64,
    /// Kafka's InitialDelayedJoin: a new group waits
    /// `group.initial.rebalance.delay.ms` for more members, extending while
    /// they keep arriving, up to the rebalance timeout.
    initial: bool,
    /// Latest moment an initial delay may extend to.
    initial_limit_ms: i64,
    new_member_added: bool,
}

/// A consumer group.
#[derive(Debug)]
pub struct Group {
    pub id: String,
    pub state: GroupState,
    pub state_since_ms: i64,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub generation: i32,
    pub leader: Option<String>,
    pub members: HashMap<String, Member>,
    /// Ids handed out with MEMBER_ID_REQUIRED, and until when they may join.
    pub pending_members: HashMap<String, i64>,
    /// Static members: instance id to member id.
    pub static_members: HashMap<String, String>,
    /// Members that have not yet sent SyncGroup in this generation.
    awaiting_sync: HashSet<String>,
    sync_deadline_ms: Option<i64>,
    join_timer: Option<JoinTimer>,
    next_seq: u64,
    pub offsets: BTreeMap<(String, i32), OffsetValue>,
}

impl Group {
    pub fn new(id: String, now_ms: i64) -> Group {
        Group {
            id,
            state: GroupState::Empty,
            state_since_ms: now_ms,
            protocol_type: None,
            protocol: None,
            generation: 0,
            leader: None,
            members: HashMap::new(),
            pending_members: HashMap::new(),
            static_members: HashMap::new(),
            awaiting_sync: HashSet::new(),
            sync_deadline_ms: None,
            join_timer: None,
            next_seq: 0,
            offsets: BTreeMap::new(),
        }
    }

    fn set_state(&mut self, state: GroupState, now_ms: i64) {
        self.state = state;
        self.state_since_ms = now_ms;
    }

    pub fn is(&self, state: GroupState) -> bool {
        self.state == state
    }

    /// What to persist for this group now.
    pub fn to_value(&self) -> GroupValue {
        let protocol = self.protocol.clone();
        let mut members: Vec<&Member> = self.members.values().collect();
        members.sort_by_key(|m| m.joined_seq);
        GroupValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: protocol.clone(),
            leader: self.leader.clone(),
            current_state_timestamp: self.state_since_ms,
            members: members
                .into_iter()
                .map(|m| StoredMember {
                    member_id: m.id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: protocol
                        .as_deref()
                        .map(|p| m.metadata_for(p))
                        .unwrap_or_default(),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    /// Rebuilds a group from its stored metadata (after a restart). Members
    /// get a fresh session: if they are still alive they keep heartbeating
    /// with the generation they hold, and the group carries on without a
    /// rebalance.
    pub fn load(&mut self, value: GroupValue, now_ms: i64) {
        self.protocol_type = (!value.protocol_type.is_empty()).then_some(value.protocol_type);
        self.generation = value.generation;
        self.protocol = value.protocol;
        self.leader = value.leader;
        self.members.clear();
        self.static_members.clear();
        for m in value.members {
            let seq = self.next_seq;
            self.next_seq += 1;
            if let Some(i) = &m.group_instance_id {
                self.static_members.insert(i.clone(), m.member_id.clone());
            }
            let protocols = match &self.protocol {
                Some(p) => vec![(p.clone(), m.subscription)],
                None => Vec::new(),
            };
            self.members.insert(
                m.member_id.clone(),
                Member {
                    id: m.member_id,
                    instance_id: m.group_instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    protocols,
                    assignment: m.assignment,
                    joined_seq: seq,
                    session_deadline_ms: now_ms + m.session_timeout_ms as i64,
                    join_waiter: None,
                    sync_waiter: None,
                },
            );
        }
        let state = if self.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        self.state = state;
        self.state_since_ms = if value.current_state_timestamp >= 0 {
            value.current_state_timestamp
        } else {
            now_ms
        };
    }

    fn max_rebalance_timeout_ms(&self) -> i64 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms as i64)
            .max()
            .unwrap_or(0)
    }

    /// Whether every member could use one of `protocols`.
    fn supports(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols
                .iter()
                .any(|(name, _)| self.candidate_protocols().contains(name))
    }

    /// Protocols every member supports.
    fn candidate_protocols(&self) -> HashSet<String> {
        let mut it = self.members.values();
        let Some(first) = it.next() else {
            return HashSet::new();
        };
        let mut set: HashSet<String> = first.protocols.iter().map(|(n, _)| n.clone()).collect();
        for m in it {
            let theirs: HashSet<&String> = m.protocols.iter().map(|(n, _)| n).collect();
            set.retain(|n| theirs.contains(n));
        }
        set
    }

    /// Kafka's protocol selection: each member votes for its most preferred
    /// candidate; the most votes win (ties to the lexicographically first,
    /// to be deterministic).
    fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some((n, _)) = m.protocols.iter().find(|(n, _)| candidates.contains(n)) {
                *votes.entry(n.as_str()).or_default() += 1;
            }
        }
        let best = votes.values().copied().max()?;
        votes
            .into_iter()
            .find(|(_, v)| *v == best)
            .map(|(n, _)| n.to_string())
    }

    fn has_all_members_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.values().all(|m| m.join_waiter.is_some())
    }

    fn new_member_id(params: &JoinParams) -> String {
        let prefix = params
            .instance_id
            .as_deref()
            .unwrap_or(params.client_id.as_str());
        assert!(
            !params.fresh_id_suffix.is_empty(),
            "a join without a member id comes with a fresh id suffix"
        );
        format!("{prefix}-{}", params.fresh_id_suffix)
    }

    /// Starts (or restarts) a rebalance.
    fn prepare_rebalance(&mut self, now_ms: i64, limits: &GroupLimits, reason: &str) {
        if self.is(GroupState::CompletingRebalance) {
            self.reset_sync_round(error_code::REBALANCE_IN_PROGRESS);
        }
        let was_empty = self.is(GroupState::Empty);
        tracing::info!(
            group = %self.id,
            generation = self.generation,
            members = self.members.len(),
            "preparing to rebalance: {reason}"
        );
        self.set_state(GroupState::PreparingRebalance, now_ms);
        let rebalance = self.max_rebalance_timeout_ms();
        self.join_timer = Some(if was_empty && limits.initial_rebalance_delay_ms > 0 {
            JoinTimer {
                deadline_ms: now_ms + limits.initial_rebalance_delay_ms.min(rebalance),
                initial: true,
                initial_limit_ms: now_ms + rebalance,
                new_member_added: false,
            }
        } else {
            JoinTimer {
                deadline_ms: now_ms + rebalance,
                initial: false,
                initial_limit_ms: 0,
                new_member_added: false,
            }
        });
    }

    /// Answers every parked SyncGroup with `code` and forgets assignments.
    fn reset_sync_round(&mut self, code: i16) {
        for m in self.members.values_mut() {
            m.assignment = Bytes::new();
            if let Some(tx) = m.sync_waiter.take() {
                let _ = tx.send(SyncOutcome::error(code));
            }
        }
        self.awaiting_sync.clear();
        self.sync_deadline_ms = None;
    }

    fn add_member(&mut self, id: String, params: &JoinParams, now_ms: i64) -> &mut Member {
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.members.is_empty() {
            self.protocol_type = Some(params.protocol_type.clone());
        }
        if let Some(i) = &params.instance_id {
            self.static_members.insert(i.clone(), id.clone());
        }
        if let Some(t) = &mut self.join_timer {
            t.new_member_added = true;
        }
        let member = Member {
            id: id.clone(),
            instance_id: params.instance_id.clone(),
            client_id: params.client_id.clone(),
            client_host: params.client_host.clone(),
            rebalance_timeout_ms: params.rebalance_timeout_ms,
            session_timeout_ms: params.session_timeout_ms,
            protocols: params.protocols.clone(),
            assignment: Bytes::new(),
            joined_seq: seq,
            session_deadline_ms: now_ms + params.session_timeout_ms as i64,
            join_waiter: None,
            sync_waiter: None,
        };
        self.members.entry(id).or_insert(member)
    }

    /// Removes a member, answering anything it has parked.
    fn remove_member(&mut self, id: &str) -> Option<Member> {
        let mut m = self.members.remove(id)?;
        if let Some(i) = &m.instance_id {
            if self.static_members.get(i).map(String::as_str) == Some(id) {
                self.static_members.remove(i);
            }
        }
        if let Some(tx) = m.join_waiter.take() {
            let _ = tx.send(JoinOutcome::error(error_code::UNKNOWN_MEMBER_ID, id));
        }
        if let Some(tx) = m.sync_waiter.take() {
            let _ = tx.send(SyncOutcome::error(error_code::UNKNOWN_MEMBER_ID));
        }
        self.awaiting_sync.remove(id);
        if self.leader.as_deref() == Some(id) {
            self.leader = None;
        }
        Some(m)
    }

    /// After a member left or expired: rebalance, or finish the join round
    /// if the departed member was the one everybody waited for.
    fn on_member_departed(&mut self, now_ms: i64, limits: &GroupLimits, why: &str) -> bool {
        match self.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.prepare_rebalance(now_ms, limits, why);
                self.maybe_complete_join(now_ms)
            }
            GroupState::PreparingRebalance => self.maybe_complete_join(now_ms),
            GroupState::Empty | GroupState::Dead => false,
        }
    }

    /// Completes the join round if every member has rejoined (never during
    /// the initial delay, whose point is to wait). Returns whether the group
    /// became Empty and should be persisted.
    fn maybe_complete_join(&mut self, now_ms: i64) -> bool {
        if !self.is(GroupState::PreparingRebalance) {
            return false;
        }
        let initial = self.join_timer.is_some_and(|t| t.initial);
        if !initial && self.has_all_members_joined() {
            return self.complete_join(now_ms);
        }
        false
    }

    /// Kafka's onCompleteJoin: drops members that did not rejoin, bumps the
    /// generation, picks the protocol and leader, and answers every parked
    /// JoinGroup. Returns whether the group is now Empty (to be persisted).
    fn complete_join(&mut self, now_ms: i64) -> bool {
        self.join_timer = None;
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| m.join_waiter.is_none())
            .map(|m| m.id.clone())
            .collect();
        for id in gone {
            tracing::info!(group = %self.id, member = %id, "member did not rejoin in time; removed");
            self.remove_member(&id);
        }
        self.generation += 1;
        if self.members.is_empty() {
            self.protocol = None;
            self.leader = None;
            self.set_state(GroupState::Empty, now_ms);
            tracing::info!(group = %self.id, generation = self.generation, "group is empty");
            return true;
        }
        self.protocol = self.select_protocol();
        let leader_ok = self
            .leader
            .as_ref()
            .is_some_and(|l| self.members.contains_key(l));
        if !leader_ok {
            self.leader = self
                .members
                .values()
                .min_by_key(|m| m.joined_seq)
                .map(|m| m.id.clone());
        }
        self.set_state(GroupState::CompletingRebalance, now_ms);
        self.awaiting_sync = self.members.keys().cloned().collect();
        self.sync_deadline_ms = Some(now_ms + self.max_rebalance_timeout_ms());
        let protocol = self.protocol.clone().unwrap_or_default();
        let leader = self.leader.clone().unwrap_or_default();
        let mut all: Vec<&Member> = self.members.values().collect();
        all.sort_by_key(|m| m.joined_seq);
        let listing: Vec<JoinedMember> = all
            .iter()
            .map(|m| JoinedMember {
                member_id: m.id.clone(),
                group_instance_id: m.instance_id.clone(),
                metadata: m.metadata_for(&protocol),
            })
            .collect();
        tracing::info!(
            group = %self.id,
            generation = self.generation,
            members = self.members.len(),
            protocol = %protocol,
            leader = %leader,
            "rebalance: generation complete, waiting for the leader's assignment"
        );
        for m in self.members.values_mut() {
            m.refresh(now_ms);
            if let Some(tx) = m.join_waiter.take() {
                let _ = tx.send(JoinOutcome {
                    error_code: error_code::NONE,
                    generation_id: self.generation,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: Some(protocol.clone()),
                    leader: leader.clone(),
                    skip_assignment: false,
                    member_id: m.id.clone(),
                    members: if m.id == leader {
                        listing.clone()
                    } else {
                        Vec::new()
                    },
                });
            }
        }
        false
    }

    fn current_join_outcome(&self, member_id: &str) -> JoinOutcome {
        let protocol = self.protocol.clone().unwrap_or_default();
        let leader = self.leader.clone().unwrap_or_default();
        let members = if member_id == leader {
            let mut all: Vec<&Member> = self.members.values().collect();
            all.sort_by_key(|m| m.joined_seq);
            all.iter()
                .map(|m| JoinedMember {
                    member_id: m.id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    metadata: m.metadata_for(&protocol),
                })
                .collect()
        } else {
            Vec::new()
        };
        JoinOutcome {
            error_code: error_code::NONE,
            generation_id: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: Some(protocol),
            leader,
            skip_assignment: false,
            member_id: member_id.to_string(),
            members,
        }
    }

    /// Parks a JoinGroup for `member_id` and completes the round if it was
    /// the last one awaited.
    fn park_join(&mut self, member_id: &str, now_ms: i64) -> (JoinStep, bool) {
        let (tx, rx) = oneshot::channel();
        if let Some(m) = self.members.get_mut(member_id) {
            if let Some(old) = m.join_waiter.replace(tx) {
                // A retried JoinGroup replaces the earlier one, whose client
                // has given up on it.
                let _ = old.send(JoinOutcome::error(error_code::UNKNOWN_MEMBER_ID, member_id));
            }
            m.refresh(now_ms);
        }
        let persist = self.maybe_complete_join(now_ms);
        (JoinStep::Wait(rx), persist)
    }

    /// Handles a JoinGroup. The second value says the group became Empty
    /// and must be persisted.
    pub fn join(&mut self, p: JoinParams, now_ms: i64, limits: &GroupLimits) -> (JoinStep, bool) {
        let answer = |code: i16, id: &str| (JoinStep::Answer(JoinOutcome::error(code, id)), false);
        if self.is(GroupState::Dead) {
            return answer(error_code::COORDINATOR_NOT_AVAILABLE, &p.member_id);
        }
        if !self.supports(&p.protocol_type, &p.protocols) {
            return answer(error_code::INCONSISTENT_GROUP_PROTOCOL, &p.member_id);
        }
        if p.member_id.is_empty() {
            return self.join_unknown_member(p, now_ms, limits);
        }
        if self.pending_members.remove(&p.member_id).is_some() {
            if self.members.len() >= limits.max_size {
                return answer(error_code::GROUP_MAX_SIZE_REACHED, &p.member_id);
            }
            self.add_member(p.member_id.clone(), &p, now_ms);
            self.rebalance_for_join(now_ms, limits, "a new member joined");
            return self.park_join(&p.member_id, now_ms);
        }
        let Some(member) = self.members.get(&p.member_id) else {
            if let Some(i) = &p.instance_id {
                if self.static_members.contains_key(i) {
                    return answer(error_code::FENCED_INSTANCE_ID, &p.member_id);
                }
            }
            return answer(error_code::UNKNOWN_MEMBER_ID, &p.member_id);
        };
        if member.instance_id != p.instance_id && p.instance_id.is_some() {
            return answer(error_code::FENCED_INSTANCE_ID, &p.member_id);
        }
        let unchanged = member.same_protocols(&p.protocols);
        let is_leader = self.leader.as_deref() == Some(p.member_id.as_str());
        match self.state {
            GroupState::PreparingRebalance => {
                self.update_member(&p);
                self.park_join(&p.member_id, now_ms)
            }
            GroupState::CompletingRebalance if unchanged => {
                // The member missed its JoinGroup answer: send it again.
                (
                    JoinStep::Answer(self.current_join_outcome(&p.member_id)),
                    false,
                )
            }
            GroupState::Stable if unchanged && !is_leader => {
                if let Some(m) = self.members.get_mut(&p.member_id) {
                    m.refresh(now_ms);
                }
                (
                    JoinStep::Answer(self.current_join_outcome(&p.member_id)),
                    false,
                )
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member(&p);
                self.prepare_rebalance(
                    now_ms,
                    limits,
                    if is_leader {
                        "the leader rejoined"
                    } else {
                        "a member changed its subscription"
                    },
                );
                self.park_join(&p.member_id, now_ms)
            }
            GroupState::Empty | GroupState::Dead => {
                answer(error_code::UNKNOWN_MEMBER_ID, &p.member_id)
            }
        }
    }

    fn update_member(&mut self, p: &JoinParams) {
        if let Some(m) = self.members.get_mut(&p.member_id) {
            m.protocols = p.protocols.clone();
            m.rebalance_timeout_ms = p.rebalance_timeout_ms;
            m.session_timeout_ms = p.session_timeout_ms;
            m.client_id = p.client_id.clone();
            m.client_host = p.client_host.clone();
        }
    }

    fn rebalance_for_join(&mut self, now_ms: i64, limits: &GroupLimits, why: &str) {
        if matches!(
            self.state,
            GroupState::Empty | GroupState::Stable | GroupState::CompletingRebalance
        ) {
            self.prepare_rebalance(now_ms, limits, why);
        }
    }

    fn join_unknown_member(
        &mut self,
        p: JoinParams,
        now_ms: i64,
        limits: &GroupLimits,
    ) -> (JoinStep, bool) {
        if let Some(instance) = p.instance_id.clone() {
            if let Some(old_id) = self.static_members.get(&instance).cloned() {
                return self.replace_static_member(&old_id, p, now_ms, limits);
            }
        }
        if self.members.len() + self.pending_members.len() >= limits.max_size {
            return (
                JoinStep::Answer(JoinOutcome::error(error_code::GROUP_MAX_SIZE_REACHED, "")),
                false,
            );
        }
        let id = Self::new_member_id(&p);
        if p.require_known_member_id && p.instance_id.is_none() {
            self.pending_members
                .insert(id.clone(), now_ms + p.session_timeout_ms as i64);
            return (
                JoinStep::Answer(JoinOutcome::error(error_code::MEMBER_ID_REQUIRED, &id)),
                false,
            );
        }
        self.add_member(id.clone(), &p, now_ms);
        self.rebalance_for_join(now_ms, limits, "a new member joined");
        self.park_join(&id, now_ms)
    }

    /// A static member came back with a new process (KIP-345): it takes
    /// over the old member's place under a new id, and the old id is fenced.
    fn replace_static_member(
        &mut self,
        old_id: &str,
        mut p: JoinParams,
        now_ms: i64,
        limits: &GroupLimits,
    ) -> (JoinStep, bool) {
        let Some(mut old) = self.members.remove(old_id) else {
            self.static_members
                .remove(p.instance_id.as_deref().unwrap_or_default());
            p.instance_id = None;
            return self.join_unknown_member(p, now_ms, limits);
        };
        if let Some(tx) = old.join_waiter.take() {
            let _ = tx.send(JoinOutcome::error(error_code::FENCED_INSTANCE_ID, old_id));
        }
        if let Some(tx) = old.sync_waiter.take() {
            let _ = tx.send(SyncOutcome::error(error_code::FENCED_INSTANCE_ID));
        }
        let new_id = Self::new_member_id(&p);
        old.id = new_id.clone();
        old.protocols = p.protocols.clone();
        old.rebalance_timeout_ms = p.rebalance_timeout_ms;
        old.session_timeout_ms = p.session_timeout_ms;
        old.client_id = p.client_id.clone();
        old.client_host = p.client_host.clone();
        old.refresh(now_ms);
        if self.awaiting_sync.remove(old_id) {
            self.awaiting_sync.insert(new_id.clone());
        }
        let was_leader = self.leader.as_deref() == Some(old_id);
        if was_leader {
            self.leader = Some(new_id.clone());
        }
        self.members.insert(new_id.clone(), old);
        if let Some(i) = &p.instance_id {
            self.static_members.insert(i.clone(), new_id.clone());
        }
        tracing::info!(group = %self.id, old = %old_id, new = %new_id, "static member replaced");
        // As Kafka: a Stable group rebalances only if the protocol it would
        // now select changes. The subscription bytes themselves may differ
        // (the Java client writes its last generation into them).
        let unchanged = self.select_protocol() == self.protocol;
        match self.state {
            GroupState::Stable if unchanged => {
                let mut out = self.current_join_outcome(&new_id);
                // The leader already computed this generation's assignment.
                out.skip_assignment = was_leader;
                (JoinStep::AnswerAfterStore(out), false)
            }
            GroupState::PreparingRebalance => self.park_join(&new_id, now_ms),
            _ => {
                self.prepare_rebalance(now_ms, limits, "a static member rejoined changed");
                self.park_join(&new_id, now_ms)
            }
        }
    }

    /// Checks member and generation as every request of a member must.
    pub fn validate_member(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), i16> {
        if self.is(GroupState::Dead) {
            return Err(error_code::COORDINATOR_NOT_AVAILABLE);
        }
        if let Some(i) = instance_id {
            match self.static_members.get(i) {
                Some(id) if id != member_id => return Err(error_code::FENCED_INSTANCE_ID),
                None if !self.members.contains_key(member_id) => {
                    return Err(error_code::UNKNOWN_MEMBER_ID)
                }
                _ => {}
            }
        }
        if !self.members.contains_key(member_id) {
            return Err(error_code::UNKNOWN_MEMBER_ID);
        }
        if generation != self.generation {
            return Err(error_code::ILLEGAL_GENERATION);
        }
        Ok(())
    }

    /// Handles a SyncGroup.
    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Bytes)>,
        now_ms: i64,
    ) -> SyncStep {
        let answer = |code| SyncStep::Answer(SyncOutcome::error(code));
        if self.is(GroupState::Empty) && !self.members.contains_key(member_id) {
            return answer(error_code::UNKNOWN_MEMBER_ID);
        }
        if let Err(code) = self.validate_member(member_id, instance_id, generation) {
            return answer(code);
        }
        if protocol_type.is_some_and(|t| Some(t) != self.protocol_type.as_deref())
            || protocol_name.is_some_and(|n| Some(n) != self.protocol.as_deref())
        {
            return answer(error_code::INCONSISTENT_GROUP_PROTOCOL);
        }
        if let Some(m) = self.members.get_mut(member_id) {
            m.refresh(now_ms);
        }
        match self.state {
            GroupState::Empty | GroupState::Dead => answer(error_code::UNKNOWN_MEMBER_ID),
            GroupState::PreparingRebalance => answer(error_code::REBALANCE_IN_PROGRESS),
            GroupState::Stable => SyncStep::Answer(self.sync_outcome(member_id)),
            GroupState::CompletingRebalance => {
                let (tx, rx) = oneshot::channel();
                if let Some(m) = self.members.get_mut(member_id) {
                    if let Some(old) = m.sync_waiter.replace(tx) {
                        let _ = old.send(SyncOutcome::error(error_code::REBALANCE_IN_PROGRESS));
                    }
                }
                self.awaiting_sync.remove(member_id);
                if self.leader.as_deref() != Some(member_id) {
                    return SyncStep::Wait(rx);
                }
                // Members the leader left out get an empty assignment.
                let mut map: HashMap<String, Bytes> = self
                    .members
                    .keys()
                    .map(|id| (id.clone(), Bytes::new()))
                    .collect();
                for (id, a) in assignments {
                    if map.contains_key(&id) {
                        map.insert(id, a);
                    }
                }
                let mut value = self.to_value();
                for m in &mut value.members {
                    m.assignment = map.get(&m.member_id).cloned().unwrap_or_default();
                }
                SyncStep::Persist {
                    generation: self.generation,
                    value,
                    assignments: map,
                    wait: rx,
                }
            }
        }
    }

    fn sync_outcome(&self, member_id: &str) -> SyncOutcome {
        SyncOutcome {
            error_code: error_code::NONE,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            assignment: self
                .members
                .get(member_id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default(),
        }
    }

    /// After the leader's assignment was persisted (or failed to be).
    pub fn finish_sync(
        &mut self,
        generation: i32,
        assignments: HashMap<String, Bytes>,
        persisted: Result<(), i16>,
        now_ms: i64,
        limits: &GroupLimits,
    ) {
        if generation != self.generation || !self.is(GroupState::CompletingRebalance) {
            return;
        }
        match persisted {
            Ok(()) => {
                for (id, a) in assignments {
                    if let Some(m) = self.members.get_mut(&id) {
                        m.assignment = a;
                    }
                }
                self.set_state(GroupState::Stable, now_ms);
                self.sync_deadline_ms = None;
                self.awaiting_sync.clear();
                let ids: Vec<String> = self.members.keys().cloned().collect();
                for id in ids {
                    let out = self.sync_outcome(&id);
                    if let Some(tx) = self.members.get_mut(&id).and_then(|m| m.sync_waiter.take()) {
                        let _ = tx.send(out);
                    }
                }
                tracing::info!(group = %self.id, generation, "group is stable");
            }
            Err(code) => {
                self.reset_sync_round(code);
                self.prepare_rebalance(now_ms, limits, "storing the assignment failed");
            }
        }
    }

    /// Handles a Heartbeat.
    pub fn heartbeat(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        now_ms: i64,
    ) -> i16 {
        if self.is(GroupState::Empty) {
            return error_code::UNKNOWN_MEMBER_ID;
        }
        if let Err(code) = self.validate_member(member_id, instance_id, generation) {
            return code;
        }
        if let Some(m) = self.members.get_mut(member_id) {
            m.refresh(now_ms);
        }
        match self.state {
            GroupState::PreparingRebalance => error_code::REBALANCE_IN_PROGRESS,
            _ => error_code::NONE,
        }
    }

    /// Handles one member of a LeaveGroup. Returns the member's error code
    /// and whether the group became Empty (to be persisted).
    pub fn leave(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        now_ms: i64,
        limits: &GroupLimits,
    ) -> (i16, bool) {
        if self.is(GroupState::Dead) {
            return (error_code::COORDINATOR_NOT_AVAILABLE, false);
        }
        let id = match instance_id {
            Some(i) => match self.static_members.get(i) {
                Some(id) if member_id.is_empty() || id == member_id => id.clone(),
                Some(_) => return (error_code::FENCED_INSTANCE_ID, false),
                None => return (error_code::UNKNOWN_MEMBER_ID, false),
            },
            None => member_id.to_string(),
        };
        if self.pending_members.remove(&id).is_some() {
            let persist = self.maybe_complete_join(now_ms);
            return (error_code::NONE, persist);
        }
        if self.remove_member(&id).is_none() {
            return (error_code::UNKNOWN_MEMBER_ID, false);
        }
        tracing::info!(group = %self.id, member = %id, "member left the group");
        (
            error_code::NONE,
            self.on_member_departed(now_ms, limits, "a member left"),
        )
    }

    /// Expires members and finishes rounds whose time is up. Returns whether
    /// the group became Empty (to be persisted).
    pub fn tick(&mut self, now_ms: i64, limits: &GroupLimits) -> bool {
        let mut persist = false;
        self.pending_members
            .retain(|_, deadline| *deadline > now_ms);
        // Members that are waiting on the coordinator are alive by
        // definition: their session starts over when they are answered.
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| {
                m.join_waiter.is_none()
                    && m.sync_waiter.is_none()
                    && m.session_deadline_ms <= now_ms
            })
            .map(|m| m.id.clone())
            .collect();
        for id in expired {
            tracing::info!(group = %self.id, member = %id, "member session expired");
            self.remove_member(&id);
            persist |= self.on_member_departed(now_ms, limits, "a member's session expired");
        }
        if self.is(GroupState::CompletingRebalance)
            && self.sync_deadline_ms.is_some_and(|d| d <= now_ms)
        {
            let late: Vec<String> = self.awaiting_sync.iter().cloned().collect();
            for id in late {
                tracing::info!(group = %self.id, member = %id, "member did not sync in time; removed");
                self.remove_member(&id);
            }
            self.prepare_rebalance(now_ms, limits, "members did not sync in time");
            persist |= self.maybe_complete_join(now_ms);
        }
        if let Some(t) = self.join_timer {
            if self.is(GroupState::PreparingRebalance) && t.deadline_ms <= now_ms {
                if t.initial && t.new_member_added && now_ms < t.initial_limit_ms {
                    self.join_timer = Some(JoinTimer {
                        deadline_ms: (now_ms + limits.initial_rebalance_delay_ms)
                            .min(t.initial_limit_ms),
                        new_member_added: false,
                        ..t
                    });
                } else {
                    persist |= self.complete_join(now_ms);
                }
            }
        }
        persist
    }

    /// Kafka's offset expiration (KIP-211): the offsets of an empty group
    /// expire `retention_ms` after it became empty; those of a group that
    /// only commits (no protocol, no members ever) expire that long after
    /// each commit; a v1 value's explicit expire timestamp wins. Offsets of
    /// a group with members never expire.
    pub fn expired_offsets(&self, now_ms: i64, retention_ms: i64) -> Vec<(String, i32)> {
        if !self.is(GroupState::Empty) {
            return Vec::new();
        }
        self.offsets
            .iter()
            .filter(|(_, v)| {
                if v.expire_timestamp >= 0 {
                    return now_ms >= v.expire_timestamp;
                }
                let since = if self.protocol_type.is_some() {
                    self.state_since_ms
                } else {
                    v.commit_timestamp
                };
                now_ms.saturating_sub(since) >= retention_ms
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The coordinator is going away (broker shutdown): every parked
    /// JoinGroup and SyncGroup is answered with `code`, so clients look for
    /// the coordinator again instead of waiting out their timeouts.
    pub fn abandon_waiters(&mut self, code: i16) {
        for m in self.members.values_mut() {
            if let Some(tx) = m.join_waiter.take() {
                let _ = tx.send(JoinOutcome::error(code, &m.id));
            }
            if let Some(tx) = m.sync_waiter.take() {
                let _ = tx.send(SyncOutcome::error(code));
            }
        }
    }

    /// Whether the group holds nothing worth keeping.
    pub fn is_removable(&self) -> bool {
        self.is(GroupState::Empty) && self.offsets.is_empty() && self.pending_members.is_empty()
    }

    /// The topics the group's members subscribe to, when they speak the
    /// consumer protocol.
    pub fn subscribed_topics(&self) -> Option<HashSet<String>> {
        if self.protocol_type.as_deref() != Some("consumer") || self.is(GroupState::Empty) {
            return None;
        }
        let protocol = self.protocol.as_deref()?;
        let mut topics = HashSet::new();
        for m in self.members.values() {
            topics.extend(crate::group::schema::subscribed_topics(
                &m.metadata_for(protocol),
            )?);
        }
        Some(topics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: GroupLimits = GroupLimits {
        initial_rebalance_delay_ms: 0,
        max_size: 10,
    };

    fn params(member_id: &str, protocols: &[&str]) -> JoinParams {
        JoinParams {
            member_id: member_id.into(),
            instance_id: None,
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            protocol_type: "consumer".into(),
            protocols: protocols
                .iter()
                .map(|p| (p.to_string(), Bytes::from(format!("meta-{p}"))))
                .collect(),
            require_known_member_id: false,
            fresh_id_suffix: next_suffix(),
        }
    }

    /// Member-id suffixes for the tests: unique, and the same sequence in
    /// every run of a test (each test runs on a thread of its own).
    fn next_suffix() -> String {
        thread_local!(static NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) });
        NEXT.with(|n| {
            n.set(n.get() + 1);
            format!("suffix-{}", n.get())
        })
    }

    fn answered(step: JoinStep) -> JoinOutcome {
        match step {
            JoinStep::Answer(o) | JoinStep::AnswerAfterStore(o) => o,
            JoinStep::Wait(mut rx) => rx
                .try_recv()
                .expect("sender alive")
                .expect("answered already"),
        }
    }

    /// Joins a dynamic member through the KIP-394 two-step join.
    fn join_new(g: &mut Group, now: i64) -> (String, JoinStep) {
        let mut p = params("", &["range"]);
        p.require_known_member_id = true;
        let first = answered(g.join(p.clone(), now, &LIMITS).0);
        assert_eq!(first.error_code, error_code::MEMBER_ID_REQUIRED);
        p.member_id = first.member_id.clone();
        let (step, _) = g.join(p, now, &LIMITS);
        (first.member_id, step)
    }

    fn sync_all(g: &mut Group, gen: i32, leader: &str, ids: &[&str], now: i64) {
        let mut waits = Vec::new();
        for id in ids.iter().filter(|id| **id != leader) {
            match g.sync(id, None, gen, None, None, vec![], now) {
                SyncStep::Wait(rx) => waits.push(rx),
                _ => panic!("followers wait for the leader"),
            }
        }
        let assignment: Vec<(String, Bytes)> = ids
            .iter()
            .map(|id| (id.to_string(), Bytes::from(format!("assign-{id}"))))
            .collect();
        match g.sync(leader, None, gen, None, None, assignment, now) {
            SyncStep::Persist {
                generation,
                assignments,
                mut wait,
                value,
            } => {
                assert_eq!(value.members.len(), ids.len());
                g.finish_sync(generation, assignments, Ok(()), now, &LIMITS);
                let out = wait.try_recv().unwrap().unwrap();
                assert_eq!(out.assignment, Bytes::from(format!("assign-{leader}")));
            }
            _ => panic!("the leader persists"),
        }
        for mut rx in waits {
            let out = rx.try_recv().unwrap().unwrap();
            assert_eq!(out.error_code, error_code::NONE);
            assert!(out.assignment.starts_with(b"assign-"));
        }
        assert!(g.is(GroupState::Stable));
    }

    #[test]
    fn two_members_join_sync_and_become_stable() {
        let mut g = Group::new("g".into(), 0);
        let (a, step_a) = join_new(&mut g, 0);
        // Alone, `a` completes the round at once (no initial delay here).
        let out_a = answered(step_a);
        assert_eq!(
            (out_a.generation_id, out_a.leader.as_str()),
            (1, a.as_str())
        );
        assert_eq!(out_a.members.len(), 1);
        sync_all(&mut g, 1, &a, &[&a], 0);
        // `b` arrives: the group rebalances; `a` learns from its heartbeat.
        let (b, step_b) = join_new(&mut g, 1);
        assert!(g.is(GroupState::PreparingRebalance));
        assert_eq!(
            g.heartbeat(&a, None, 1, 1),
            error_code::REBALANCE_IN_PROGRESS
        );
        assert!(matches!(step_b, JoinStep::Wait(_)));
        let (step_a, _) = g.join(params(&a, &["range"]), 2, &LIMITS);
        let (out_a, out_b) = (answered(step_a), answered(step_b));
        assert_eq!(out_a.generation_id, 2);
        assert_eq!(out_b.generation_id, 2);
        assert_eq!(out_a.leader, a, "the leader keeps leading");
        assert_eq!(out_a.members.len(), 2);
        assert!(out_b.members.is_empty(), "only the leader sees members");
        assert_eq!(out_a.protocol_name.as_deref(), Some("range"));
        sync_all(&mut g, 2, &a, &[&a, &b], 2);
        assert_eq!(g.heartbeat(&b, None, 2, 3), error_code::NONE);
        assert_eq!(g.heartbeat(&b, None, 1, 3), error_code::ILLEGAL_GENERATION);
        assert_eq!(
            g.heartbeat("nobody", None, 2, 3),
            error_code::UNKNOWN_MEMBER_ID
        );
    }

    #[test]
    fn an_expired_session_removes_the_member_and_rebalances() {
        let mut g = Group::new("g".into(), 0);
        let (a, s) = join_new(&mut g, 0);
        answered(s);
        sync_all(&mut g, 1, &a, &[&a], 0);
        let (b, s) = join_new(&mut g, 0);
        let (sa, _) = g.join(params(&a, &["range"]), 0, &LIMITS);
        answered(sa);
        answered(s);
        sync_all(&mut g, 2, &a, &[&a, &b], 0);
        // Only `b` heartbeats; `a`'s 10 s session runs out.
        assert_eq!(g.heartbeat(&b, None, 2, 9_000), error_code::NONE);
        assert!(!g.tick(10_001, &LIMITS));
        assert!(!g.members.contains_key(&a));
        assert!(g.is(GroupState::PreparingRebalance));
        let (sb, _) = g.join(params(&b, &["range"]), 10_002, &LIMITS);
        let out = answered(sb);
        assert_eq!((out.generation_id, out.leader.as_str()), (3, b.as_str()));
    }

    #[test]
    fn the_last_member_leaving_empties_the_group_for_persisting() {
        let mut g = Group::new("g".into(), 0);
        let (a, s) = join_new(&mut g, 0);
        answered(s);
        sync_all(&mut g, 1, &a, &[&a], 0);
        let (code, persist) = g.leave(&a, None, 5, &LIMITS);
        assert_eq!(code, error_code::NONE);
        assert!(persist, "an empty group is stored");
        assert!(g.is(GroupState::Empty));
        assert_eq!(g.generation, 2);
        assert_eq!(
            g.leave(&a, None, 6, &LIMITS).0,
            error_code::UNKNOWN_MEMBER_ID
        );
        assert_eq!(g.protocol_type.as_deref(), Some("consumer"));
    }

    #[test]
    fn members_that_do_not_rejoin_are_dropped_at_the_deadline() {
        let mut g = Group::new("g".into(), 0);
        let (a, s) = join_new(&mut g, 0);
        answered(s);
        sync_all(&mut g, 1, &a, &[&a], 0);
        let (_b, step_b) = join_new(&mut g, 100);
        // `a` keeps heartbeating but never rejoins; the 30 s rebalance
        // timeout ends the round without it.
        assert_eq!(
            g.heartbeat(&a, None, 1, 20_000),
            error_code::REBALANCE_IN_PROGRESS
        );
        g.tick(30_101, &LIMITS);
        let out = answered(step_b);
        assert_eq!(out.generation_id, 2);
        assert!(!g.members.contains_key(&a));
    }

    #[test]
    fn the_leader_not_syncing_in_time_restarts_the_round() {
        let mut g = Group::new("g".into(), 0);
        let (a, s) = join_new(&mut g, 0);
        answered(s);
        assert!(g.is(GroupState::CompletingRebalance));
        g.tick(30_001, &LIMITS);
        assert!(!g.members.contains_key(&a));
        assert!(g.is(GroupState::Empty));
    }

    #[test]
    fn inconsistent_protocols_and_max_size_are_refused() {
        let mut g = Group::new("g".into(), 0);
        let (a, s) = join_new(&mut g, 0);
        answered(s);
        let out = answered(g.join(params("", &["roundrobin"]), 0, &LIMITS).0);
        assert_eq!(out.error_code, error_code::INCONSISTENT_GROUP_PROTOCOL);
        let mut other = params("", &["range"]);
        other.protocol_type = "connect".into();
        let out = answered(g.join(other, 0, &LIMITS).0);
        assert_eq!(out.error_code, error_code::INCONSISTENT_GROUP_PROTOCOL);
        let small = GroupLimits {
            max_size: 1,
            ..LIMITS
        };
        let out = answered(g.join(params("", &["range"]), 0, &small).0);
        assert_eq!(out.error_code, error_code::GROUP_MAX_SIZE_REACHED);
        assert!(g.members.contains_key(&a));
    }

    #[test]
    fn protocol_selection_follows_member_preferences() {
        let mut g = Group::new("g".into(), 0);
        let mut p = params("", &["cooperative-sticky", "range"]);
        let (s1, _) = g.join(p.clone(), 0, &LIMITS);
        let first = answered(s1);
        assert_eq!(first.protocol_name.as_deref(), Some("cooperative-sticky"));
        // A second member that only speaks range forces range.
        p.protocols = vec![("range".into(), Bytes::new())];
        p.fresh_id_suffix = next_suffix();
        let (s2, _) = g.join(p, 1, &LIMITS);
        let mut p1 = params(&first.member_id, &["cooperative-sticky", "range"]);
        p1.member_id = first.member_id.clone();
        let (s1, _) = g.join(p1, 1, &LIMITS);
        assert_eq!(answered(s1).protocol_name.as_deref(), Some("range"));
        assert_eq!(answered(s2).protocol_name.as_deref(), Some("range"));
    }

    #[test]
    fn a_static_member_rejoining_unchanged_keeps_its_assignment() {
        let mut g = Group::new("g".into(), 0);
        let mut p = params("", &["range"]);
        p.instance_id = Some("host-1".into());
        let out = answered(g.join(p.clone(), 0, &LIMITS).0);
        let a = out.member_id.clone();
        sync_all(&mut g, 1, &a, &[&a], 0);
        let mut p2 = params("", &["range"]);
        p2.instance_id = Some("host-2".into());
        let (s2, _) = g.join(p2, 0, &LIMITS);
        let (s1, _) = g.join(
            JoinParams {
                member_id: a.clone(),
                ..p.clone()
            },
            0,
            &LIMITS,
        );
        let (o1, o2) = (answered(s1), answered(s2));
        sync_all(&mut g, 2, &a, &[&a, &o2.member_id], 0);
        assert_eq!(o1.generation_id, 2);
        // host-2 restarts and comes back without its member id: no
        // rebalance, same generation, the old id is fenced.
        let mut again = params("", &["range"]);
        again.instance_id = Some("host-2".into());
        let out = answered(g.join(again, 10, &LIMITS).0);
        assert_eq!(out.error_code, error_code::NONE);
        assert_eq!(out.generation_id, 2);
        assert_ne!(out.member_id, o2.member_id);
        assert!(g.is(GroupState::Stable));
        assert_eq!(
            g.heartbeat(&o2.member_id, Some("host-2"), 2, 11),
            error_code::FENCED_INSTANCE_ID
        );
        assert_eq!(
            g.heartbeat(&out.member_id, Some("host-2"), 2, 11),
            error_code::NONE
        );
        let assignment = match g.sync(&out.member_id, Some("host-2"), 2, None, None, vec![], 12) {
            SyncStep::Answer(o) => o.assignment,
            _ => panic!("a stable group answers at once"),
        };
        assert_eq!(assignment, Bytes::from(format!("assign-{}", o2.member_id)));
    }

    #[test]
    fn a_static_member_with_new_subscription_bytes_but_the_same_protocol_does_not_rebalance() {
        // The Java client writes its last generation into its subscription,
        // so a restarted static member's bytes differ from its old ones.
        let mut g = Group::new("g".into(), 0);
        let mut p = params("", &["range"]);
        p.instance_id = Some("host-1".into());
        let a = answered(g.join(p.clone(), 0, &LIMITS).0).member_id;
        sync_all(&mut g, 1, &a, &[&a], 0);
        p.protocols = vec![("range".into(), Bytes::from_static(b"generation-1"))];
        let (step, _) = g.join(p.clone(), 10, &LIMITS);
        let JoinStep::AnswerAfterStore(out) = step else {
            panic!("the replacement is stored before the answer");
        };
        assert_eq!((out.error_code, out.generation_id), (error_code::NONE, 1));
        assert!(g.is(GroupState::Stable));
        assert_eq!(
            g.to_value().members[0].member_id,
            out.member_id,
            "stored under the new id"
        );
        // A protocol the group would not select now does rebalance.
        p.protocols = vec![
            ("roundrobin".into(), Bytes::new()),
            ("range".into(), Bytes::new()),
        ];
        let (step, _) = g.join(p, 20, &LIMITS);
        let out = answered(step);
        assert_eq!(out.protocol_name.as_deref(), Some("roundrobin"));
        assert_eq!(out.generation_id, 2, "a new generation");
    }

    #[test]
    fn the_initial_delay_waits_for_more_members() {
        let limits = GroupLimits {
            initial_rebalance_delay_ms: 3000,
            max_size: 10,
        };
        let mut g = Group::new("g".into(), 0);
        let (s1, _) = g.join(params("", &["range"]), 0, &limits);
        let JoinStep::Wait(mut rx1) = s1 else {
            panic!("a new group waits for the initial delay");
        };
        g.tick(1000, &limits);
        assert!(rx1.try_recv().unwrap().is_none());
        let (s2, _) = g.join(params("", &["range"]), 2000, &limits);
        // Expires at 3000 but a member arrived: extends by another delay.
        g.tick(3000, &limits);
        assert!(rx1.try_recv().unwrap().is_none());
        g.tick(6000, &limits);
        let o1 = rx1.try_recv().unwrap().unwrap();
        assert_eq!(o1.generation_id, 1);
        assert_eq!(o1.members.len(), 2);
        assert_eq!(answered(s2).generation_id, 1);
    }

    fn offset(commit_timestamp: i64) -> OffsetValue {
        OffsetValue {
            offset: 1,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp,
            expire_timestamp: -1,
        }
    }

    #[test]
    fn offsets_expire_only_for_empty_groups_after_the_retention() {
        let mut g = Group::new("g".into(), 0);
        let (a, s) = join_new(&mut g, 0);
        answered(s);
        sync_all(&mut g, 1, &a, &[&a], 0);
        g.offsets.insert(("t".into(), 0), offset(0));
        assert!(
            g.expired_offsets(1_000_000, 10).is_empty(),
            "members keep offsets"
        );
        // The group empties at 500: retention counts from then, not from
        // the commit.
        g.leave(&a, None, 500, &LIMITS);
        assert!(g.expired_offsets(509, 10).is_empty());
        assert_eq!(g.expired_offsets(510, 10), vec![("t".to_string(), 0)]);
        // A group that only commits expires per commit.
        let mut standalone = Group::new("s".into(), 0);
        standalone.offsets.insert(("t".into(), 0), offset(100));
        standalone.offsets.insert(("t".into(), 1), offset(200));
        assert_eq!(
            standalone.expired_offsets(150, 50),
            vec![("t".to_string(), 0)]
        );
        assert_eq!(standalone.expired_offsets(250, 50).len(), 2);
        // An explicit expire timestamp (v1 values) wins.
        let mut v1 = offset(0);
        v1.expire_timestamp = 5;
        standalone.offsets.insert(("u".into(), 0), v1);
        assert!(standalone
            .expired_offsets(5, 1_000)
            .contains(&("u".to_string(), 0)));
    }

    #[test]
    fn stored_groups_reload_as_stable() {
        let mut g = Group::new("g".into(), 0);
        let (a, s) = join_new(&mut g, 0);
        answered(s);
        sync_all(&mut g, 1, &a, &[&a], 0);
        let value = g.to_value();
        let mut loaded = Group::new("g".into(), 100);
        loaded.load(value, 100);
        assert!(loaded.is(GroupState::Stable));
        assert_eq!(loaded.generation, 1);
        assert_eq!(loaded.heartbeat(&a, None, 1, 101), error_code::NONE);
        let SyncStep::Answer(o) = loaded.sync(&a, None, 1, None, None, vec![], 102) else {
            panic!("stable");
        };
        assert_eq!(o.assignment, Bytes::from(format!("assign-{a}")));
    }
}
