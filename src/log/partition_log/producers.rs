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
    pub(super) async fn rebuild_producer_state(&mut self, now_ms: i64) -> LogResult<()> {
        let r = self.replay_producer_state(now_ms).await;
        self.fail(r)
    }

    pub(super) async fn replay_producer_state(&mut self, now_ms: i64) -> LogResult<()> {
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let leo = self.log_end_offset();
        let from = self
            .producers
            .reload(&self.dir, &bases, leo, now_ms)
            .await?;
        let start_base = self
            .segments
            .range(..=from)
            .next_back()
            .map(|(b, _)| *b)
            .unwrap_or(i64::MIN);
        for segment in self.segments.range(start_base..).map(|(_, s)| s) {
            self.producers.replay_segment(segment, from).await?;
        }
        self.producers.remove_expired(now_ms);
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
