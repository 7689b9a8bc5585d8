//! DeleteGroups and OffsetDelete on the coordinator shard: a group, or
//! some of its committed offsets, removed with tombstones once nothing
//! still uses them (Kafka's NON_EMPTY_GROUP and GROUP_SUBSCRIBED_TO_TOPIC
//! otherwise).

use super::*;

impl GroupCoordinator {
    /// Deletes an empty group with its offsets (a share group's state is
    /// the handler's to delete first: `handlers/delete_groups.rs`).
    pub async fn delete_group(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
    ) -> i16 {
        if let Err(code) = self.ready(&shard, partition) {
            return code;
        }
        if self.is_share_group(&group_id) {
            return self
                .delete_share_group(&shard, partition, &group_id)
                .await
                .err()
                .unwrap_or(error_code::NONE);
        }
        if self.is_consumer_group(&group_id) {
            return self
                .delete_consumer_group(&shard, partition, &group_id, true)
                .await
                .err()
                .unwrap_or(error_code::NONE);
        }
        let records = {
            let groups = self.groups.borrow();
            let Some(g) = groups.get(&group_id) else {
                return error_code::GROUP_ID_NOT_FOUND;
            };
            if g.is(GroupState::Dead) {
                return error_code::GROUP_ID_NOT_FOUND;
            }
            if !g.is(GroupState::Empty) {
                return error_code::NON_EMPTY_GROUP;
            }
            tombstones(g, g.offsets.keys().cloned())
        };
        let gid = group_id.clone();
        let r = self
            .write(&shard, partition, records, move |groups| {
                if let Some(mut g) = groups.remove(&gid) {
                    g.state = GroupState::Dead;
                }
            })
            .await;
        if r.is_ok() {
            self.group_partition.borrow_mut().remove(&group_id);
            tracing::info!(group = %group_id, "group deleted");
        }
        r.err().unwrap_or(error_code::NONE)
    }

    /// OffsetDelete: removes committed offsets the group no longer uses.
    pub async fn delete_offsets(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
        topics: Vec<(String, Vec<i32>)>,
    ) -> Result<Vec<(String, Vec<(i32, i16)>)>, i16> {
        self.ready(&shard, partition)?;
        let (results, keys) = {
            let groups = self.groups.borrow();
            let Some(g) = groups.get(&group_id) else {
                return Err(error_code::GROUP_ID_NOT_FOUND);
            };
            if g.is(GroupState::Dead) {
                return Err(error_code::GROUP_ID_NOT_FOUND);
            }
            let subscribed = g.subscribed_topics();
            if !g.is(GroupState::Empty) && subscribed.is_none() {
                return Err(error_code::NON_EMPTY_GROUP);
            }
            let mut keys = Vec::new();
            let results: Vec<(String, Vec<(i32, i16)>)> = topics
                .into_iter()
                .map(|(t, ps)| {
                    let in_use = subscribed.as_ref().is_some_and(|s| s.contains(&t));
                    let out = ps
                        .into_iter()
                        .map(|p| {
                            if in_use {
                                (p, error_code::GROUP_SUBSCRIBED_TO_TOPIC)
                            } else {
                                if g.offsets.contains_key(&(t.clone(), p)) {
                                    keys.push((t.clone(), p));
                                }
                                (p, error_code::NONE)
                            }
                        })
                        .collect();
                    (t, out)
                })
                .collect();
            (results, keys)
        };
        let records = tombstones_for(&group_id, keys.iter().cloned());
        let gid = group_id.clone();
        self.write(&shard, partition, records, move |groups| {
            if let Some(g) = groups.get_mut(&gid) {
                for k in &keys {
                    g.offsets.remove(k);
                }
            }
        })
        .await?;
        Ok(results)
    }
}
