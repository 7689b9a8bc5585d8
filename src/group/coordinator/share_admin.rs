//! Admin changes to an empty share group's state (AlterShareGroupOffsets,
//! DeleteShareGroupOffsets, DeleteGroups), made in one step with the
//! emptiness check that allows them, as Kafka makes them.
//!
//! The change itself is written to the share coordinator, which is not
//! this shard's append: it takes as long as those writes, and the group's
//! `__consumer_offsets` partition must not stop for it. So the check is
//! made under the partition's write permit, and the group is then closed
//! to new members by its gate until the change is done: a
//! ShareGroupHeartbeat that would join (member epoch 0) sees the gate held,
//! under the same permit, gives the permit back and waits for the gate.
//! A member that joined before the check makes the group non-empty, and
//! the change is refused (NON_EMPTY_GROUP); none can join after it.

use std::future::Future;

use glommio::sync::Semaphore;

use super::*;

impl GroupCoordinator {
    /// Runs `change` while share group `group_id` is empty and no member
    /// may join it. `change` is told whether the group exists (an
    /// AlterShareGroupOffsets may set the offsets of a group not yet
    /// created). Refused with NON_EMPTY_GROUP while the group has members,
    /// GROUP_ID_NOT_FOUND when the id is another type's group.
    pub async fn while_share_group_empty<R, F, Fut>(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
        change: F,
    ) -> Result<R, i16>
    where
        F: FnOnce(Rc<Shard>, bool) -> Fut,
        Fut: Future<Output = R>,
    {
        let gate = self.share_admin_gate(&group_id);
        let Ok(closed) = gate.acquire_permit(1).await else {
            return Err(error_code::COORDINATOR_NOT_AVAILABLE);
        };
        let exists = self
            .share_group_emptiness(&shard, partition, &group_id)
            .await;
        let result = match exists {
            Ok(exists) => Ok(change(shard, exists).await),
            Err(code) => Err(code),
        };
        drop(closed);
        self.forget_share_admin_gate(&group_id, gate);
        result
    }

    /// Deletes share group `group_id` once `delete_state` deleted the state
    /// of the share partitions it held (given as topic id and partition),
    /// all while no member may join it. `None` when it is not a share
    /// group here.
    pub async fn delete_share_group_with_state<F, Fut>(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
        delete_state: F,
    ) -> Option<i16>
    where
        F: FnOnce(Rc<Shard>, Vec<([u8; 16], i32)>) -> Fut,
        Fut: Future<Output = Result<(), i16>>,
    {
        if !self.is_share_group(&group_id) {
            return None;
        }
        let me = self.clone();
        let gid = group_id.clone();
        let deleted = self
            .while_share_group_empty(shard, partition, group_id, |shard, exists| async move {
                if !exists {
                    return Err(error_code::GROUP_ID_NOT_FOUND);
                }
                let held = me.share_state_partitions(&gid);
                delete_state(shard.clone(), held).await?;
                me.delete_share_group(&shard, partition, &gid).await
            })
            .await;
        Some(match deleted {
            Ok(Ok(())) => error_code::NONE,
            Ok(Err(code)) | Err(code) => code,
        })
    }

    /// The share partitions `group_id` ever initialized: their state is
    /// deleted with it.
    fn share_state_partitions(&self, group_id: &str) -> Vec<([u8; 16], i32)> {
        self.share
            .borrow()
            .groups
            .get(group_id)
            .map(|g| {
                g.state_partitions
                    .values()
                    .flat_map(|t| t.partitions.iter().map(|&p| (t.topic_id, p)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether `group_id` exists as an empty share group, checked under
    /// its partition's write permit: `Ok(false)` when there is no such
    /// group, NON_EMPTY_GROUP with members, GROUP_ID_NOT_FOUND when the id
    /// is another type's group.
    async fn share_group_emptiness(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        partition: i32,
        group_id: &str,
    ) -> Result<bool, i16> {
        let Some(p) = self.partitions.borrow().get(&partition).cloned() else {
            return Err(error_code::NOT_COORDINATOR);
        };
        let _permit = p
            .write
            .acquire_permit(1)
            .await
            .map_err(|_| error_code::COORDINATOR_NOT_AVAILABLE)?;
        self.ready(shard, partition)?;
        if self.is_consumer_group(group_id) || self.has_classic_members(group_id) {
            return Err(error_code::GROUP_ID_NOT_FOUND);
        }
        match self.share.borrow().groups.get(group_id) {
            None => Ok(false),
            Some(g) if g.members.is_empty() => Ok(true),
            Some(_) => Err(error_code::NON_EMPTY_GROUP),
        }
    }

    /// The gate of `group_id`, made when first asked for.
    fn share_admin_gate(&self, group_id: &str) -> Rc<Semaphore> {
        self.share
            .borrow_mut()
            .admin_gates
            .entry(group_id.to_string())
            .or_insert_with(|| Rc::new(Semaphore::new(1)))
            .clone()
    }

    /// Drops `gate` of `group_id`, and the gate itself once nobody else
    /// holds or waits for it (an admin change done, or a join that waited).
    pub(super) fn forget_share_admin_gate(&self, group_id: &str, gate: Rc<Semaphore>) {
        let mut s = self.share.borrow_mut();
        let unused = s
            .admin_gates
            .get(group_id)
            .is_some_and(|g| Rc::ptr_eq(g, &gate) && Rc::strong_count(g) == 2);
        if unused {
            s.admin_gates.remove(group_id);
        }
    }

    /// The gate of `group_id` while an admin change holds it: a join must
    /// wait for it.
    pub(super) fn share_group_closed(&self, group_id: &str) -> Option<Rc<Semaphore>> {
        self.share
            .borrow()
            .admin_gates
            .get(group_id)
            .filter(|g| g.available() == 0)
            .cloned()
    }
}
