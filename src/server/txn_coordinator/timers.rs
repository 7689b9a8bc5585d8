//! The coordinator's timer: every
//! `transaction.abort.timed.out.transaction.cleanup.interval.ms` it aborts
//! the open transactions that outlived their `transaction.timeout.ms`
//! (Kafka's `abortTimedOutTransactions`), fencing their producer with a
//! bumped epoch so that a producer that only paused cannot go on writing to
//! a transaction that no longer exists.

use super::*;
use crate::node::stop::StopHandle;

impl TxnCoordinator {
    /// Aborts this shard's timed-out transactions.
    async fn abort_timed_out(self: &Rc<Self>, shard: &Rc<Shard>) {
        let now = now_ms();
        let expired: Vec<(String, i32)> = {
            let entries = self.entries.borrow();
            let where_ = self.id_partition.borrow();
            entries
                .iter()
                .filter(|(_, e)| e.pending.is_none() && e.metadata.has_timed_out(now))
                .filter_map(|(id, _)| where_.get(id).map(|p| (id.clone(), *p)))
                .collect()
        };
        for (id, partition) in expired {
            let Ok(epoch) = self.ready(shard, partition) else {
                continue;
            };
            let Some(entry) = self.entry(&id) else {
                continue;
            };
            if entry.pending.is_some() || !entry.metadata.has_timed_out(now) {
                continue;
            }
            let Decision::FenceAndAbort(next) = decide::fence_and_abort(&entry.metadata, now)
            else {
                continue;
            };
            tracing::info!(
                transactional_id = %id,
                producer_id = next.producer_id,
                timeout_ms = entry.metadata.txn_timeout_ms,
                "aborting a transaction that outlived its timeout"
            );
            match self.write_transition(shard, partition, next).await {
                Ok(()) => self.spawn_complete(shard, partition, epoch, id),
                Err(code) => {
                    tracing::warn!(transactional_id = %id, code, "aborting a timed-out transaction failed; retrying at the next check")
                }
            }
        }
    }
}

/// Installs the coordinator on `shard` and runs its timer until `stop` is
/// requested. Partitions load when the image makes this broker their
/// leader (`on_became_leader`).
pub fn start(shard: &Rc<Shard>, stop: StopHandle) {
    let c = TxnCoordinator::of(shard);
    let s = shard.clone();
    glommio::spawn_local(async move {
        let interval = Duration::from_millis(c.config.abort_interval_ms);
        while !stop.is_requested() {
            glommio::timer::sleep(interval.min(Duration::from_secs(1))).await;
            if c.last_abort_check.get().elapsed() >= interval {
                c.last_abort_check.set(std::time::Instant::now());
                c.abort_timed_out(&s).await;
            }
        }
    })
    .detach();
}
