//! The idempotent-producer state of a partition log.

use super::*;

/// Idempotent-producer state (`log/producer_state.rs`): rebuilding it from
/// snapshots and batch headers, and deleting snapshots with their segments.
impl PartitionLog {
    /// The idempotent-producer state, for tests and tools.
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producers
    }

    /// Sets `producer.id.expiration.ms` (Kafka's default is one day).
    pub fn set_producer_id_expiration_ms(&mut self, expiration_ms: i64) {
        self.producers.set_expiration_ms(expiration_ms);
    }

    /// Rebuilds the producer state as Kafka's log loader does: from the
    /// latest snapshot at or below the LEO, then the batch headers from its
    /// offset to the LEO. Snapshots the log no longer backs are deleted.
    ///
    /// `rebuild_txn_index_from`: the first segment whose `.txnindex` must be
    /// rebuilt (recovery found it torn or invalid). The replay then starts
    /// no later than that segment, and writes the aborted transactions it
    /// finds there and after into their segments' indexes.
    pub(super) async fn rebuild_producer_state(
        &mut self,
        now_ms: i64,
        rebuild_txn_index_from: Option<i64>,
    ) -> LogResult<()> {
        let r = self
            .replay_producer_state(now_ms, rebuild_txn_index_from)
            .await;
        self.fail(r)
    }

    async fn replay_producer_state(
        &mut self,
        now_ms: i64,
        rebuild_txn_index_from: Option<i64>,
    ) -> LogResult<()> {
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let leo = self.log_end_offset();
        let replay_by = rebuild_txn_index_from.unwrap_or(leo).min(leo);
        let from = self
            .producers
            .reload(&self.dir, &bases, leo, replay_by, now_ms)
            .await?;
        let start_base = self
            .segments
            .range(..=from)
            .next_back()
            .map(|(b, _)| *b)
            .unwrap_or(i64::MIN);
        let replayed: Vec<i64> = self.segments.range(start_base..).map(|(b, _)| *b).collect();
        for base in replayed {
            let segment = &self.segments[&base];
            let aborted = self.producers.replay_segment(segment, from).await?;
            if rebuild_txn_index_from.is_some_and(|first| base >= first) {
                if !aborted.is_empty() {
                    tracing::info!(
                        partition = %self.tp,
                        segment = base,
                        entries = aborted.len(),
                        "rebuilt the transaction index of a recovered segment"
                    );
                }
                let segment = self.segments.get_mut(&base).expect("replayed segment");
                segment.rewrite_txn_index(aborted).await?;
            }
        }
        self.producers.remove_expired(now_ms);
        self.producers.on_high_watermark(self.high_watermark);
        Ok(())
    }

    /// Kafka deletes a segment's producer snapshot with the segment: every
    /// snapshot below the first remaining segment goes.
    pub(super) async fn delete_producer_snapshots_of_deleted_segments(&mut self) -> LogResult<()> {
        let first = *self
            .segments
            .keys()
            .next()
            .expect("a log always has a segment");
        let r = self
            .producers
            .delete_snapshots_below(&self.dir, first)
            .await
            .map(|_| ());
        self.fail(r)
    }
}
