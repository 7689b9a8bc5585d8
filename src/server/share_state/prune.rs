//! Pruning `__share_group_state`. The topic is not compacted, so nothing
//! else would bound it: every `share.coordinator.state.topic.prune.interval.ms`
//! each loaded partition's log start offset moves up to the oldest of its
//! share partitions' latest snapshots (`ShareStateStore::prune_point`,
//! Kafka's `lastRedundantOffset`), never past the high watermark, as
//! DeleteRecords moves it on a leader (followers learn it from fetches).
//! A load from there rebuilds the same state.

use std::rc::Rc;
use std::time::Duration;

use super::{ShareStateCoordinator, StatePartition};
use crate::metadata::SHARE_GROUP_STATE_TOPIC;
use crate::node::stop::StopHandle;
use crate::shard::shard::Shard;

/// How often the loop looks whether it is time to prune, and whether to
/// stop: short, so that a stopping broker is not held up.
const PRUNE_TICK_MAX: Duration = Duration::from_secs(1);

/// Installs the coordinator on `shard` and prunes its partitions until
/// `stop` is requested. Partitions load when the image makes this broker
/// their leader (`on_became_leader`).
pub fn start(shard: &Rc<Shard>, stop: StopHandle) {
    let c = ShareStateCoordinator::of(shard);
    let s = shard.clone();
    glommio::spawn_local(async move {
        let interval = Duration::from_millis(c.config.state_topic_prune_interval_ms);
        let tick = interval.min(PRUNE_TICK_MAX);
        let mut last = std::time::Instant::now();
        while !stop.is_requested() {
            crate::ticks::sleep_to_next_tick(tick).await;
            if last.elapsed() >= interval {
                last = std::time::Instant::now();
                c.prune_all(&s).await;
            }
        }
    })
    .detach();
}

impl ShareStateCoordinator {
    /// Prunes every loaded partition of this shard once.
    pub async fn prune_all(self: &Rc<Self>, shard: &Rc<Shard>) {
        for (partition, p) in self.loaded() {
            self.prune(shard, partition, &p).await;
        }
    }

    async fn prune(&self, shard: &Rc<Shard>, partition: i32, p: &Rc<StatePartition>) {
        // Under the write permit: no record is in flight, so the store
        // knows of everything the log holds.
        let Ok(_permit) = p.write.acquire_permit(1).await else {
            return;
        };
        if !self.is_current(partition, p) {
            return;
        }
        let point = p.store.borrow().prune_point();
        let tp = Self::tp(partition);
        let Some(log) = crate::node::state::led_log(shard, &tp) else {
            return;
        };
        let Ok(mut log) = log.write().await else {
            return;
        };
        let before = log.log_start_offset();
        let target = point.min(log.high_watermark());
        if target <= before {
            return;
        }
        match log.delete_records_before(target).await {
            Ok(start) => tracing::info!(
                partition,
                from = before,
                to = start,
                "pruned {SHARE_GROUP_STATE_TOPIC}: moved the log start offset"
            ),
            Err(e) => tracing::warn!(
                partition,
                offset = target,
                "pruning {SHARE_GROUP_STATE_TOPIC} failed: {e}"
            ),
        }
    }
}
