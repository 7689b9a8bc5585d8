//! Where the classic and the consumer protocol meet, in the shell: the
//! classic APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) sent to a
//! consumer group by its classic members, and the online conversions of
//! `group.consumer.migration.policy`. The decisions are the core's
//! (`core/src/group/consumer/classic.rs`); this file persists them under
//! the offsets partition's write permit, as `consumer.rs` does for
//! ConsumerGroupHeartbeat.
//!
//! - **Upgrade:** a ConsumerGroupHeartbeat joining a live classic group
//!   writes, in one append, the classic group's tombstone, the converted
//!   group's records and the joining member's records. The classic group
//!   keeps only its committed offsets; its parked JoinGroup and SyncGroup
//!   calls are told REBALANCE_IN_PROGRESS and come back to the consumer
//!   group.
//! - **Downgrade:** when fencing the last consumer-protocol member leaves
//!   classic members only, one append deletes the consumer group and
//!   stores the classic group's metadata; the classic group then
//!   rebalances. So does a static classic member's JoinGroup that takes
//!   the place (its `group.instance.id`) of the last consumer-protocol
//!   member (`downgrade_after_replacement`), except that the classic group
//!   stays Stable when every member holds its current target, as Kafka's
//!   does.

use crate::group::consumer::classic::{ClassicJoinRequest, Downgrade, CONSUMER_PROTOCOL_TYPE};
use crate::group::consumer::heartbeat::{HeartbeatContext, HeartbeatError};
use crate::group::consumer::records::ConsumerGroupRecord;
use crate::group::consumer::{replay_into, ConsumerGroup};

use super::*;

impl GroupCoordinator {
    /// The downgrade that fencing `member_id` of `group_id` triggers now,
    /// if any.
    pub(super) fn downgrade_check(
        &self,
        shard: &Shard,
        group_id: &str,
        member_id: &str,
    ) -> Option<Downgrade> {
        let topics = self.consumer_topics(shard);
        let policy = BrokerState::of(shard)
            .config
            .consumer_group
            .migration_policy;
        let c = self.consumer.borrow();
        c.groups.get(group_id)?.downgrade_on_fence(
            member_id,
            policy,
            self.config.max_size.max(1) as usize,
            now_ms(),
            &topics,
        )
    }

    /// After a static classic member took the place of a member speaking
    /// the consumer protocol: if that was the last one, the group turns
    /// classic (Kafka's `validateOnlineDowngradeWithReplacedMember`). When
    /// every member holds its current target, the classic group is Stable
    /// with those assignments, and the joining member gets its own at its
    /// SyncGroup, as in Kafka; otherwise it rebalances, as after a
    /// downgrade on fencing, and the member learns of it at its SyncGroup
    /// and joins again. A failed write leaves the consumer group as it
    /// was. The caller holds the partition's write permit.
    async fn downgrade_after_replacement(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
    ) {
        let topics = self.consumer_topics(shard);
        let policy = BrokerState::of(shard)
            .config
            .consumer_group
            .migration_policy;
        let downgrade = {
            let c = self.consumer.borrow();
            c.groups.get(group_id).and_then(|g| {
                g.downgrade_after_replacement(
                    policy,
                    self.config.max_size.max(1) as usize,
                    now_ms(),
                    &topics,
                )
            })
        };
        let Some(d) = downgrade else {
            return;
        };
        tracing::info!(group = %group_id, "a static classic member took the place of the last consumer-protocol member; converting the group to a classic group");
        if let Err(code) = self.apply_downgrade(shard, partition, group_id, d).await {
            tracing::warn!(group = %group_id, code, "converting the group to a classic group after a static member's replacement failed; it stays a consumer group");
        }
    }

    /// Writes a downgrade and puts the classic group in place; the caller
    /// holds the partition's write permit.
    pub(super) async fn apply_downgrade(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
        d: Downgrade,
    ) -> Result<(), i16> {
        let mut encoded: Vec<(Bytes, Option<Bytes>)> = d
            .records
            .iter()
            .map(|r| (r.encode_key(), r.encode_value()))
            .collect();
        let key = RecordKey::Group {
            group: group_id.to_string(),
        };
        encoded.push((key.encode(), Some(d.classic.encode())));
        if let Err(code) = self.append(shard, partition, &encoded).await {
            self.reload(shard, partition);
            return Err(code);
        }
        {
            let mut c = self.consumer.borrow_mut();
            for r in &d.records {
                replay_into(&mut c.groups, r);
            }
            c.drop_groups(&[group_id.to_string()]);
        }
        let now = now_ms();
        let mut groups = self.groups.borrow_mut();
        let g = groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group::new(group_id.to_string(), now));
        g.load(d.classic, now);
        if d.rebalance {
            g.rebalance_after_downgrade(now, &self.limits());
        }
        self.group_partition
            .borrow_mut()
            .insert(group_id.to_string(), partition);
        tracing::info!(group = %group_id, members = g.members.len(), "consumer group converted to a classic group");
        Ok(())
    }

    /// The records that convert the live classic group `group_id` for a
    /// joining consumer-protocol member, and the converted group to run
    /// the heartbeat against; `None` when `group_id` is no live classic
    /// group. The caller holds the partition's write permit.
    pub(super) fn upgrade(
        &self,
        shard: &Shard,
        group_id: &str,
        member_epoch: i32,
    ) -> Option<Result<(Vec<ConsumerGroupRecord>, ConsumerGroup), HeartbeatError>> {
        if self.is_consumer_group(group_id) {
            return None;
        }
        let groups = self.groups.borrow();
        let g = groups.get(group_id)?;
        if g.is(GroupState::Empty) {
            return None;
        }
        let refuse = |why: &str| {
            tracing::info!(group = %group_id, "cannot upgrade the classic group to a consumer group: {why}");
            Some(Err(HeartbeatError {
                error_code: error_code::GROUP_ID_NOT_FOUND,
                message: format!(
                    "Group {group_id} is a classic group that cannot be upgraded: {why}."
                ),
            }))
        };
        let config = &BrokerState::of(shard).config.consumer_group;
        if member_epoch != 0 {
            return refuse("only a joining member may convert it");
        }
        if !config.migration_policy.upgrade_enabled() {
            return refuse("group.consumer.migration.policy does not allow upgrades");
        }
        if g.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return refuse("its members do not use the consumer protocol");
        }
        if g.members.len() > config.max_size as usize {
            return refuse("it has more members than group.consumer.max.size");
        }
        let topics = self.consumer_topics(shard);
        let records = match ConsumerGroup::from_classic(g, &topics) {
            Ok(r) => r,
            Err(why) => return refuse(&format!("a malformed consumer protocol ({why})")),
        };
        let mut converted = BTreeMap::new();
        for r in &records {
            replay_into(&mut converted, r);
        }
        let group = converted
            .remove(group_id)
            .unwrap_or_else(|| ConsumerGroup::new(group_id));
        tracing::info!(group = %group_id, members = g.members.len(), "upgrading a classic group to a consumer group");
        Some(Ok((records, group)))
    }

    /// A JoinGroup of a classic member to a consumer group with members.
    pub(super) async fn classic_join_to_consumer(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
        params: JoinParams,
        principal: HeartbeatPrincipal,
    ) -> JoinOutcome {
        let failed = |code: i16| JoinOutcome::error(code, &params.member_id);
        let Some(p) = self.partitions.borrow().get(&partition).cloned() else {
            return failed(error_code::NOT_COORDINATOR);
        };
        let Ok(_permit) = p.write.acquire_permit(1).await else {
            return failed(error_code::COORDINATOR_NOT_AVAILABLE);
        };
        if let Err(code) = self.ready(shard, partition) {
            return failed(code);
        }
        let config = BrokerState::of(shard).group_config(group_id).consumer;
        let topics = self.consumer_topics(shard);
        // Named as the classic coordinator names members.
        let fresh = format!(
            "{}-{}",
            params.instance_id.as_deref().unwrap_or(&params.client_id),
            params.fresh_id_suffix
        );
        let req = ClassicJoinRequest {
            member_id: params.member_id.clone(),
            instance_id: params.instance_id.clone(),
            session_timeout_ms: params.session_timeout_ms,
            rebalance_timeout_ms: params.rebalance_timeout_ms,
            protocol_type: params.protocol_type.clone(),
            protocols: params.protocols.clone(),
            client_id: params.client_id.clone(),
            client_host: params.client_host.clone(),
            require_known_member_id: params.require_known_member_id,
        };
        let state = BrokerState::of(shard);
        let image = state.image();
        let may_describe =
            |topic: &str| principal.may_describe(state.config.authorizer.as_ref(), &image, topic);
        let (outcome, replaces_consumer_member) = {
            let c = self.consumer.borrow();
            let session_deadline = |m: &str| c.session_deadline(group_id, m);
            // The group went away (or emptied, and a classic group may
            // take its id) while this waited: the client finds the
            // coordinator again and joins anew.
            let Some(g) = c.groups.get(group_id).filter(|g| !g.is_empty()) else {
                return failed(error_code::COORDINATOR_NOT_AVAILABLE);
            };
            // Kafka's downgrade with a replaced member: this static join
            // takes the place of a consumer-protocol member.
            let replaces = params
                .instance_id
                .as_deref()
                .and_then(|i| g.static_member(i))
                .is_some_and(|m| !m.uses_classic_protocol());
            let ctx = HeartbeatContext {
                now_ms: now_ms(),
                config: &config,
                topics: &topics,
                fresh_member_id: &fresh,
                may_describe: state
                    .config
                    .authorizer
                    .is_some()
                    .then_some(&may_describe as &dyn Fn(&str) -> bool),
                session_deadline_ms: Some(&session_deadline),
            };
            (g.classic_join(&req, &ctx), replaces)
        };
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                tracing::debug!(group = %group_id, member = %params.member_id, code = e.error_code, "JoinGroup to a consumer group refused: {}", e.message);
                return failed(e.error_code);
            }
        };
        if let Err(code) = self
            .persist_consumer(
                shard,
                partition,
                group_id,
                &outcome.records,
                &outcome.timers,
            )
            .await
        {
            return failed(code);
        }
        let r = outcome.response;
        if r.error_code != error_code::NONE {
            return JoinOutcome::error(r.error_code, &r.member_id);
        }
        if replaces_consumer_member {
            self.downgrade_after_replacement(shard, partition, group_id)
                .await;
        }
        JoinOutcome {
            error_code: error_code::NONE,
            generation_id: r.generation_id,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(r.protocol_name),
            // Never the leader: the coordinator assigns.
            leader: String::new(),
            skip_assignment: false,
            member_id: r.member_id,
            members: Vec::new(),
        }
    }

    /// A SyncGroup of a classic member of a consumer group.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn classic_sync_to_consumer(
        &self,
        shard: &Shard,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<String>,
        protocol_name: Option<String>,
    ) -> SyncOutcome {
        let topics = self.consumer_topics(shard);
        let now = now_ms();
        let mut c = self.consumer.borrow_mut();
        let Some(g) = c.groups.get(group_id) else {
            return SyncOutcome::error(error_code::UNKNOWN_MEMBER_ID);
        };
        let (answer, timers) = match g.classic_sync(
            member_id,
            instance_id,
            generation,
            protocol_type.as_deref(),
            protocol_name.as_deref(),
            now,
            &topics,
        ) {
            Ok(o) => (
                SyncOutcome {
                    error_code: error_code::NONE,
                    protocol_type,
                    protocol_name,
                    assignment: o.response,
                },
                o.timers,
            ),
            Err(e) => {
                // Told to rejoin: it must do so within its rebalance
                // timeout.
                let timers = if e.error_code == error_code::REBALANCE_IN_PROGRESS {
                    g.classic_rejoin_timer(member_id, now).into_iter().collect()
                } else {
                    Vec::new()
                };
                (SyncOutcome::error(e.error_code), timers)
            }
        };
        c.apply_timers(group_id, &timers);
        answer
    }

    /// A Heartbeat of a classic member of a consumer group.
    pub(super) fn classic_heartbeat_to_consumer(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> i16 {
        let mut c = self.consumer.borrow_mut();
        let Some(g) = c.groups.get(group_id) else {
            return error_code::UNKNOWN_MEMBER_ID;
        };
        match g.classic_heartbeat(member_id, instance_id, generation, now_ms()) {
            Ok(o) => {
                let code = o.response;
                c.apply_timers(group_id, &o.timers);
                code
            }
            Err(e) => e.error_code,
        }
    }

    /// A LeaveGroup of classic members of a consumer group.
    pub(super) async fn classic_leave_to_consumer(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<i16>, i16> {
        let Some(p) = self.partitions.borrow().get(&partition).cloned() else {
            return Err(error_code::NOT_COORDINATOR);
        };
        let _permit = p
            .write
            .acquire_permit(1)
            .await
            .map_err(|_| error_code::COORDINATOR_NOT_AVAILABLE)?;
        self.ready(shard, partition)?;
        let outcome = match self.consumer.borrow().groups.get(group_id) {
            Some(g) => g.classic_leave(members),
            None => return Ok(vec![error_code::UNKNOWN_MEMBER_ID; members.len()]),
        };
        self.persist_consumer(
            shard,
            partition,
            group_id,
            &outcome.records,
            &outcome.timers,
        )
        .await?;
        Ok(outcome.response)
    }
}
