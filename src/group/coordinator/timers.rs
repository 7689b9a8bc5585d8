//! The coordinator's timers: session, rebalance and sync deadlines every
//! tick, and the expiry of committed offsets (`offsets.retention.minutes`).

use super::*;

/// How often sessions, rebalance and sync deadlines are checked. Kafka
/// schedules a timer per deadline; a short fixed tick is simpler and costs
/// one pass over the shard's groups.
const COORDINATOR_TICK: Duration = Duration::from_millis(50);

impl GroupCoordinator {
    /// Session, rebalance and sync deadlines of every group on this shard.
    pub(super) fn tick(self: &Rc<Self>, shard: &Rc<Shard>) {
        let now = now_ms();
        let limits = self.limits();
        let mut persist = Vec::new();
        {
            let mut groups = self.groups.borrow_mut();
            for g in groups.values_mut() {
                if g.tick(now, &limits) {
                    persist.push(g.id.clone());
                }
            }
        }
        for id in persist {
            let partition = self.group_partition.borrow().get(&id).copied();
            if let Some(p) = partition {
                self.spawn_persist_group(shard, p, id);
            }
        }
        self.tick_consumer(shard);
        self.tick_share(shard);
    }

    /// Kafka's offset expiration: offsets of an empty group expire
    /// `offsets.retention.minutes` after it became empty; those of a group
    /// that only commits (no members ever, no protocol) expire that long
    /// after each commit. A group left empty with no offsets is deleted.
    pub(super) async fn expire_offsets(self: &Rc<Self>, shard: &Rc<Shard>) {
        let now = now_ms();
        let retention = self.config.offsets_retention_ms();
        // (partition, group, expired offsets, whether the group goes too)
        type Expiry = (i32, String, Vec<(String, i32)>, bool);
        let mut work: Vec<Expiry> = Vec::new();
        {
            let groups = self.groups.borrow();
            let where_ = self.group_partition.borrow();
            for g in groups.values() {
                let Some(&partition) = where_.get(&g.id) else {
                    continue;
                };
                // A consumer group's offsets stay while it has members, and
                // its entry goes with the group (DeleteGroups).
                if self.is_consumer_group(&g.id) {
                    if self
                        .consumer_state(&g.id)
                        .is_some_and(|s| s != crate::group::consumer::ConsumerGroupState::Empty)
                    {
                        continue;
                    }
                    let expired = g.expired_offsets(now, retention);
                    if !expired.is_empty() {
                        work.push((partition, g.id.clone(), expired, false));
                    }
                    continue;
                }
                let expired = g.expired_offsets(now, retention);
                let drop_group = expired.len() == g.offsets.len() && g.pending_members.is_empty();
                if !expired.is_empty() || drop_group {
                    work.push((partition, g.id.clone(), expired, drop_group));
                }
            }
        }
        for (partition, group_id, expired, drop_group) in work {
            let records = {
                let groups = self.groups.borrow();
                let Some(g) = groups.get(&group_id) else {
                    continue;
                };
                if drop_group && g.is(GroupState::Empty) {
                    tombstones(g, expired.iter().cloned())
                } else {
                    tombstones_for(&group_id, expired.iter().cloned())
                }
            };
            let count = expired.len();
            let gid = group_id.clone();
            let r = self
                .write(shard, partition, records, move |groups| {
                    if let Some(g) = groups.get_mut(&gid) {
                        for k in &expired {
                            g.offsets.remove(k);
                        }
                        if drop_group && g.is_removable() {
                            groups.remove(&gid);
                        }
                    }
                })
                .await;
            match r {
                Ok(()) => {
                    if !self.groups.borrow().contains_key(&group_id) {
                        self.group_partition.borrow_mut().remove(&group_id);
                    }
                    tracing::info!(group = %group_id, offsets = count, removed = drop_group, "expired committed offsets");
                }
                Err(code) => {
                    tracing::warn!(group = %group_id, code, "offset expiration failed; retrying later")
                }
            }
        }
    }
}

/// Installs the coordinator on `shard`, starts loading the offsets
/// partitions it owns, and runs its timers until `stop` is requested.
pub fn start(shard: &Rc<Shard>, stop: StopHandle) {
    // No load here: the partitions this node leads were loaded when the
    // first image made it their leader (`on_became_leader`). Loading every
    // local `__consumer_offsets` partition, as this did, made a follower a
    // second coordinator that answered OffsetFetch from its stale copy
    // (found by the fault suite: committed offsets seemed to go back).
    let c = GroupCoordinator::of(shard);
    let s = shard.clone();
    glommio::spawn_local(async move {
        let interval = Duration::from_millis(c.config.offsets_retention_check_interval_ms);
        let mut last_expiry = std::time::Instant::now();
        while !stop.is_requested() {
            crate::ticks::sleep_to_next_tick(COORDINATOR_TICK).await;
            c.tick(&s);
            if last_expiry.elapsed() >= interval {
                last_expiry = std::time::Instant::now();
                c.expire_offsets(&s).await;
            }
        }
        for g in c.groups.borrow_mut().values_mut() {
            g.abandon_waiters(error_code::NOT_COORDINATOR);
        }
    })
    .detach();
}
