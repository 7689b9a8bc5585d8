//! The shell around the share-group membership core
//! (`core/src/group/share/group.rs`): ShareGroupHeartbeat,
//! ShareGroupDescribe, the session deadlines, loading and listing.
//!
//! The contract is the consumer group's (`consumer.rs`): under the write
//! permit of the group's `__consumer_offsets` partition, the core computes
//! records and an answer without changing the group; the records (Kafka's
//! key types 10-15) are appended with the replicated group write, then
//! replayed with `replay_into` (the function loading uses too), and the
//! session deadline is armed. A failed write reloads the partition.
//!
//! A share group owns its group id: a classic or consumer group of the same
//! id refuses it, and it refuses them (Kafka answers that the group is not
//! a share group, or an inconsistent protocol).

use std::collections::BTreeMap;

use crate::group::consumer::heartbeat::TimerOp;
use crate::group::share::{replay_into, ShareGroup, ShareGroupRecord, ShareHeartbeatContext};
use crate::protocol::messages::share_group_describe::{
    DescribedGroup as ShareDescribedGroup, DescribedMember as ShareDescribedMember,
    DescribedTopicPartitions as ShareDescribedTopicPartitions,
};
use crate::protocol::messages::share_group_heartbeat::{
    ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse,
};

use super::*;

/// The group type ListGroups and kafka-share-groups.sh show.
pub const SHARE_GROUP_TYPE: &str = "share";

/// The share groups of one shard, with their session deadlines.
#[derive(Default)]
pub(super) struct ShareGroups {
    pub(super) groups: BTreeMap<String, ShareGroup>,
    /// (group, member) to the session deadline.
    sessions: HashMap<(String, String), i64>,
    /// The groups an admin change of their state may hold closed to new
    /// members (`share_admin.rs`).
    pub(super) admin_gates: HashMap<String, Rc<glommio::sync::Semaphore>>,
}

impl ShareGroups {
    fn apply_timer(&mut self, group_id: &str, op: Option<&TimerOp>) {
        let key = |m: &str| (group_id.to_string(), m.to_string());
        match op {
            Some(TimerOp::Session {
                member_id,
                deadline_ms,
            }) => {
                self.sessions.insert(key(member_id), *deadline_ms);
            }
            Some(TimerOp::CancelAll { member_id }) => {
                self.sessions.remove(&key(member_id));
            }
            // The share core arms sessions only.
            Some(_) | None => {}
        }
    }

    /// Forgets `ids` and their deadlines (their partition was unloaded).
    pub(super) fn drop_groups(&mut self, ids: &[String]) {
        for id in ids {
            self.groups.remove(id);
        }
        self.sessions
            .retain(|(g, _), _| self.groups.contains_key(g));
    }

    fn take_due(&mut self, now: i64) -> Vec<(String, String)> {
        let mut due = Vec::new();
        self.sessions.retain(|(g, m), deadline| {
            let keep = *deadline > now;
            if !keep {
                due.push((g.clone(), m.clone()));
            }
            keep
        });
        due
    }
}

impl GroupCoordinator {
    /// Whether `group_id` is a share group on this shard.
    pub(super) fn is_share_group(&self, group_id: &str) -> bool {
        self.share.borrow().groups.contains_key(group_id)
    }

    /// Replays the share-group records a load read, replacing what this
    /// shard held for the partition, and gives every member a fresh
    /// session (Kafka's `onLoaded`).
    pub(super) fn load_share_groups(
        &self,
        shard: &Shard,
        partition: i32,
        loaded: BTreeMap<String, ShareGroup>,
    ) -> usize {
        let now = now_ms();
        let state = BrokerState::of(shard);
        let mut s = self.share.borrow_mut();
        let stale: Vec<String> = self
            .group_partition
            .borrow()
            .iter()
            .filter(|(g, &p)| p == partition && s.groups.contains_key(*g))
            .map(|(g, _)| g.clone())
            .collect();
        s.drop_groups(&stale);
        let mut by_partition = self.group_partition.borrow_mut();
        let count = loaded.len();
        for (id, g) in loaded {
            let session = i64::from(state.group_config(&id).share.group.session_timeout_ms);
            for m in g.members.keys() {
                s.sessions.insert((id.clone(), m.clone()), now + session);
            }
            s.groups.insert(id.clone(), g);
            by_partition.insert(id, partition);
        }
        count
    }

    /// Appends `records`, then replays them and applies `timer`; the
    /// caller holds the partition's write permit.
    async fn persist_share(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
        records: &[ShareGroupRecord],
        timer: Option<&TimerOp>,
    ) -> Result<(), i16> {
        if !records.is_empty() {
            let encoded: Vec<(Bytes, Option<Bytes>)> = records
                .iter()
                .map(|r| (r.encode_key(), r.encode_value()))
                .collect();
            if let Err(code) = self.append(shard, partition, &encoded).await {
                tracing::warn!(group = %group_id, code, "writing share group records failed; reloading the partition");
                self.reload(shard, partition);
                return Err(code);
            }
        }
        let mut s = self.share.borrow_mut();
        for r in records {
            replay_into(&mut s.groups, r);
        }
        if s.groups.contains_key(group_id) {
            self.group_partition
                .borrow_mut()
                .insert(group_id.to_string(), partition);
        }
        s.apply_timer(group_id, timer);
        Ok(())
    }

    /// ShareGroupHeartbeat on the group's coordinator shard.
    pub async fn share_heartbeat(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        req: ShareGroupHeartbeatRequest,
        client_id: String,
        client_host: String,
    ) -> ShareGroupHeartbeatResponse {
        let fail = |code: i16, message: Option<String>| ShareGroupHeartbeatResponse {
            error_code: code,
            error_message: message,
            ..Default::default()
        };
        if let Err(code) = self.ready(&shard, partition) {
            return fail(code, None);
        }
        let Some(p) = self.partitions.borrow().get(&partition).cloned() else {
            return fail(error_code::NOT_COORDINATOR, None);
        };
        let group_id = req.group_id.clone();
        let _permit = loop {
            let Ok(permit) = p.write.acquire_permit(1).await else {
                return fail(error_code::COORDINATOR_NOT_AVAILABLE, None);
            };
            // The load may have been replaced while this waited.
            if let Err(code) = self.ready(&shard, partition) {
                return fail(code, None);
            }
            // A join waits while an admin change of the empty group's
            // state is under way (`share_admin.rs`), then starts over.
            match self.share_group_closed(&group_id) {
                Some(gate) if req.member_epoch == 0 => {
                    drop(permit);
                    let _ = gate.acquire_permit(1).await;
                    self.forget_share_admin_gate(&group_id, gate);
                }
                _ => break permit,
            }
        };
        if self.is_consumer_group(&group_id) || self.has_classic_members(&group_id) {
            return fail(
                error_code::GROUP_ID_NOT_FOUND,
                Some(format!("Group {group_id} is not a share group.")),
            );
        }
        let topics = self.consumer_topics(&shard);
        // The group's own share.session.timeout.ms and
        // share.heartbeat.interval.ms over the broker's.
        let settings = BrokerState::of(&shard).group_config(&group_id).share;
        let outcome = {
            let s = self.share.borrow();
            let ctx = ShareHeartbeatContext {
                now_ms: now_ms(),
                config: &settings.group,
                topics: &topics,
                client_id: &client_id,
                client_host: &client_host,
            };
            match s.groups.get(&group_id) {
                Some(g) => g.heartbeat(&req, ctx),
                None => ShareGroup::new(&group_id).heartbeat(&req, ctx),
            }
        };
        if outcome.response.error_code != error_code::NONE {
            return outcome.response;
        }
        if let Err(code) = self
            .persist_share(
                &shard,
                partition,
                &group_id,
                &outcome.records,
                outcome.timer.as_ref(),
            )
            .await
        {
            return fail(code, None);
        }
        outcome.response
    }

    /// Fences the share-group members whose sessions ran out, each in a
    /// task of its own under its partition's write permit.
    pub(super) fn tick_share(self: &Rc<Self>, shard: &Rc<Shard>) {
        let due = self.share.borrow_mut().take_due(now_ms());
        for (group_id, member_id) in due {
            let (me, shard) = (self.clone(), shard.clone());
            glommio::spawn_local(async move {
                me.fence_share_member(&shard, group_id, member_id).await;
            })
            .detach();
        }
    }

    async fn fence_share_member(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        group_id: String,
        member: String,
    ) {
        let Some(partition) = self.group_partition.borrow().get(&group_id).copied() else {
            return;
        };
        let Some(p) = self.partitions.borrow().get(&partition).cloned() else {
            return;
        };
        let Ok(_permit) = p.write.acquire_permit(1).await else {
            return;
        };
        let topics = self.consumer_topics(shard);
        let records = match self.share.borrow().groups.get(&group_id) {
            Some(g) => g.fence_member(&member, &topics, now_ms()),
            None => return,
        };
        if records.is_empty() {
            return;
        }
        tracing::info!(group = %group_id, member = %member, "share group member fenced because its session expired");
        let cancel = TimerOp::CancelAll {
            member_id: member.clone(),
        };
        if let Err(code) = self
            .persist_share(shard, partition, &group_id, &records, Some(&cancel))
            .await
        {
            tracing::warn!(group = %group_id, code, "fencing an expired share group member failed");
        }
    }

    /// The listing of this shard's share groups on `led` partitions.
    pub(super) fn list_share(&self, led: &std::collections::BTreeSet<i32>) -> Vec<ListedGroup> {
        let s = self.share.borrow();
        let partition_of = self.group_partition.borrow();
        s.groups
            .values()
            .filter(|g| {
                partition_of
                    .get(&g.group_id)
                    .is_some_and(|p| led.contains(p))
            })
            .map(|g| ListedGroup {
                group_id: g.group_id.clone(),
                protocol_type: SHARE_GROUP_TYPE.to_string(),
                state: g.state().name().to_string(),
                group_type: SHARE_GROUP_TYPE,
            })
            .collect()
    }

    /// ShareGroupDescribe of one group on its coordinator shard.
    pub async fn share_describe(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
    ) -> ShareDescribedGroup {
        let mut out = ShareDescribedGroup {
            group_id: group_id.clone(),
            ..ShareDescribedGroup::default()
        };
        if let Err(code) = self.ready(&shard, partition) {
            out.error_code = code;
            return out;
        }
        let topics = self.consumer_topics(&shard);
        let s = self.share.borrow();
        let Some(g) = s.groups.get(&group_id) else {
            out.error_code = error_code::GROUP_ID_NOT_FOUND;
            out.error_message = Some(
                if self.groups.borrow().contains_key(&group_id) || self.is_consumer_group(&group_id)
                {
                    format!("Group {group_id} is not a share group.")
                } else {
                    format!("Group {group_id} not found.")
                },
            );
            return out;
        };
        out.group_state = g.state().name().to_string();
        out.group_epoch = g.group_epoch;
        out.assignment_epoch = g.assignment_epoch;
        out.assignor_name = crate::group::share::assignor::SIMPLE_ASSIGNOR.to_string();
        out.members = g
            .members
            .values()
            .map(|m| ShareDescribedMember {
                member_id: m.member_id.clone(),
                rack_id: m.rack_id.clone(),
                member_epoch: m.member_epoch,
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                subscribed_topic_names: m.subscribed_topic_names.clone(),
                assignment: m
                    .assignment
                    .to_topic_partitions()
                    .into_iter()
                    .map(|(id, partitions)| ShareDescribedTopicPartitions {
                        topic_id: id,
                        topic_name: topics
                            .by_id(&id)
                            .map(|t| t.name.clone())
                            .unwrap_or_default(),
                        partitions,
                    })
                    .collect(),
            })
            .collect();
        out
    }

    /// The topics a share group may hold state for (its state partitions'
    /// record) or its members subscribe to, for DescribeShareGroupOffsets:
    /// GROUP_ID_NOT_FOUND when it is not a share group here.
    pub async fn share_group_topics(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
    ) -> Result<Vec<String>, i16> {
        self.ready(&shard, partition)?;
        let s = self.share.borrow();
        let g = s
            .groups
            .get(&group_id)
            .ok_or(error_code::GROUP_ID_NOT_FOUND)?;
        let topics: std::collections::BTreeSet<String> = g
            .members
            .values()
            .flat_map(|m| m.subscribed_topic_names.iter().cloned())
            .chain(g.state_partitions.values().map(|t| t.topic_name.clone()))
            .filter(|name| !name.is_empty())
            .collect();
        Ok(topics.into_iter().collect())
    }

    /// DeleteGroups of a share group once its state is deleted
    /// (`share_admin.rs`): tombstones for its records.
    pub(super) async fn delete_share_group(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
    ) -> Result<(), i16> {
        let Some(p) = self.partitions.borrow().get(&partition).cloned() else {
            return Err(error_code::NOT_COORDINATOR);
        };
        let _permit = p
            .write
            .acquire_permit(1)
            .await
            .map_err(|_| error_code::COORDINATOR_NOT_AVAILABLE)?;
        self.ready(shard, partition)?;
        let records = {
            let s = self.share.borrow();
            let g = s
                .groups
                .get(group_id)
                .ok_or(error_code::GROUP_ID_NOT_FOUND)?;
            if !g.members.is_empty() {
                return Err(error_code::NON_EMPTY_GROUP);
            }
            g.tombstones()
        };
        self.persist_share(shard, partition, group_id, &records, None)
            .await?;
        self.group_partition.borrow_mut().remove(group_id);
        tracing::info!(group = %group_id, "share group deleted");
        Ok(())
    }

    /// A JoinGroup or ConsumerGroupHeartbeat naming a share group is
    /// refused: the id is the share group's.
    pub(super) fn share_group_conflict(&self, group_id: &str) -> Option<i16> {
        self.is_share_group(group_id)
            .then_some(error_code::INCONSISTENT_GROUP_PROTOCOL)
    }

    /// Whether a classic group of this id has members or a protocol (an
    /// offsets-only entry does not count: a share group may take the id).
    pub(super) fn has_classic_members(&self, group_id: &str) -> bool {
        self.groups
            .borrow()
            .get(group_id)
            .is_some_and(|g| g.protocol_type.is_some() || !g.members.is_empty())
    }
}
