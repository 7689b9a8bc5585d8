//! The coordinator's timers: every
//! `transaction.abort.timed.out.transaction.cleanup.interval.ms` it aborts
//! the open transactions that outlived their `transaction.timeout.ms`
//! (Kafka's `abortTimedOutTransactions`), fencing their producer with a
//! bumped epoch so that a producer that only paused cannot go on writing to
//! a transaction that no longer exists; and every
//! `transaction.remove.expired.transaction.cleanup.interval.ms` it forgets
//! the ids without a transaction that saw no request for
//! `transactional.id.expiration.ms` (a tombstone in their partition, which
//! compaction then removes).

use super::*;
use crate::node::stop::StopHandle;
use crate::transaction::metadata::TxnState;

impl TxnCoordinator {
    /// Removes this shard's expired ids (Kafka's
    /// `removeExpiredTransactionalIds`).
    async fn remove_expired_ids(self: &Rc<Self>, shard: &Rc<Shard>) {
        let now = now_ms();
        let expiration = self.config.id_expiration_ms;
        let expired: Vec<(String, i32)> = {
            let entries = self.entries.borrow();
            let where_ = self.id_partition.borrow();
            entries
                .iter()
                .filter(|(_, e)| {
                    e.pending.is_none()
                        && e.metadata.state.is_idle()
                        && now.saturating_sub(e.metadata.txn_last_update_timestamp_ms) >= expiration
                })
                .filter_map(|(id, _)| where_.get(id).map(|p| (id.clone(), *p)))
                .collect()
        };
        for (id, partition) in expired {
            let Ok(epoch) = self.ready(shard, partition) else {
                continue;
            };
            let snapshot = {
                let mut entries = self.entries.borrow_mut();
                let Some(e) = entries.get_mut(&id).filter(|e| e.pending.is_none()) else {
                    continue;
                };
                e.pending = Some(TxnState::Dead);
                e.metadata.clone()
            };
            let tombstone = (log_record::encode_key(&id), None);
            let written = append_replicated(
                shard,
                &Self::tp(partition),
                &[tombstone],
                None,
                STATE_WRITE_TIMEOUT,
            )
            .await;
            if !self.still_leading(partition, epoch) {
                // Unloaded meanwhile: the state this changed is gone.
                continue;
            }
            let mut entries = self.entries.borrow_mut();
            match written {
                Ok(_) => {
                    // A request that came in meanwhile waited on the pending
                    // state; the id is gone for it and the next one.
                    entries.remove(&id);
                    self.id_partition.borrow_mut().remove(&id);
                    tracing::info!(
                        transactional_id = %id,
                        producer_id = snapshot.producer_id,
                        "expired an idle transactional id"
                    );
                }
                Err(e) => {
                    if let Some(entry) = entries.get_mut(&id) {
                        entry.pending = None;
                    }
                    tracing::warn!(transactional_id = %id, "expiring a transactional id failed: {e:?}; retrying at the next check");
                }
            }
        }
    }

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
            if self.ready(shard, partition).is_err() {
                continue;
            }
            let Some(entry) = self.entry(&id) else {
                continue;
            };
            if entry.pending.is_some() || !entry.metadata.has_timed_out(now) {
                continue;
            }
            let version = cluster_transaction_version(shard);
            let mut decision = decide::fence_and_abort(&entry.metadata, version, None, now);
            if decision == Decision::NeedProducerId {
                // A spent epoch: the abort moves the id to a new producer id.
                match controller::allocate_producer_id(shard).await {
                    Ok(fresh) => {
                        decision =
                            decide::fence_and_abort(&entry.metadata, version, Some(fresh), now)
                    }
                    Err(e) => {
                        tracing::warn!(transactional_id = %id, "allocating a producer id for a timeout abort failed: {e}; retrying at the next check");
                        continue;
                    }
                }
                // The allocation waited: the id may have moved meanwhile.
                if self.entry(&id).is_none_or(|e| e != entry) {
                    continue;
                }
            }
            let Decision::FenceAndAbort(next) = decision else {
                continue;
            };
            tracing::info!(
                transactional_id = %id,
                producer_id = next.producer_id,
                timeout_ms = entry.metadata.txn_timeout_ms,
                "aborting a transaction that outlived its timeout"
            );
            match self.write_transition(shard, partition, next).await {
                Ok(epoch) => self.spawn_complete(shard, partition, epoch, id),
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
        let expiry_interval = Duration::from_millis(c.config.remove_expired_interval_ms);
        let mut last_expiry_check = std::time::Instant::now();
        let tick = interval.min(expiry_interval).min(Duration::from_secs(1));
        while !stop.is_requested() {
            crate::ticks::sleep_to_next_tick(tick).await;
            if c.last_abort_check.get().elapsed() >= interval {
                c.last_abort_check.set(std::time::Instant::now());
                c.abort_timed_out(&s).await;
                c.resume_stalled(&s);
            }
            if last_expiry_check.elapsed() >= expiry_interval {
                last_expiry_check = std::time::Instant::now();
                c.remove_expired_ids(&s).await;
            }
        }
    })
    .detach();
}
