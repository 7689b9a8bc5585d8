//! Removing records: a follower's truncation, DeleteRecords and
//! retention, and the segments they delete.

use super::*;

impl PartitionLog {
    /// Removes every batch at or past `offset` (Kafka's `truncateTo`): for a
    /// follower after OffsetsForLeaderEpoch. Returns whether any batch went.
    pub async fn truncate_to(&mut self, offset: i64, now_ms: i64) -> LogResult<bool> {
        self.ensure_online()?;
        let leo = self.log_end_offset();
        if offset >= leo {
            // As Kafka: the epoch cache is truncated even so. A replica that
            // became leader and was replaced before it appended anything
            // holds an entry starting at its LEO; left in place, it would
            // ask the new leader about that epoch again and again, and never
            // fetch (found by the simulation, seed 1796163106).
            if self.epochs.truncate_from_end(leo) {
                self.persist_epochs().await?;
            }
            return Ok(false);
        }
        if offset < *self.segments.keys().next().expect("segments") {
            self.truncate_fully_and_start_at(offset, now_ms).await?;
            return Ok(true);
        }
        self.truncations += 1;
        let doomed: Vec<i64> = self.segments.range(offset + 1..).map(|(b, _)| *b).collect();
        let keep_one = doomed.len() == self.segments.len();
        for b in doomed {
            if keep_one && self.segments.len() == 1 {
                break;
            }
            if let Some(s) = self.segments.remove(&b) {
                let r = s.delete().await;
                self.fail(r)?;
            }
        }
        let r = self.active_mut().truncate_to(offset).await;
        self.fail(r)?;
        let leo = self.log_end_offset();
        if let Some((cache, key)) = &self.cache {
            cache.borrow_mut().truncate(*key, leo);
        }
        if self.epochs.truncate_from_end(leo) {
            self.persist_epochs().await?;
        }
        self.recovery_point = self.recovery_point.min(leo);
        self.high_watermark = self.high_watermark.min(leo);
        self.log_start_offset = self.log_start_offset.min(leo);
        // Kafka's maybeTruncateCheckpoint: a clean cannot have ended past
        // the new log end.
        self.cleaner_checkpoint = self.cleaner_checkpoint.map(|c| c.min(leo));
        self.rebuild_producer_state(now_ms, None).await?;
        self.check_invariants();
        Ok(true)
    }

    /// Deletes every segment and restarts the log at `offset` (Kafka's
    /// `truncateFullyAndStartAt`), clearing the epoch cache.
    pub async fn truncate_fully_and_start_at(&mut self, offset: i64, now_ms: i64) -> LogResult<()> {
        self.ensure_online()?;
        self.truncations += 1;
        // Snapshots go first: one a crash left behind must not describe
        // batches that no longer exist.
        let r = self.producers.truncate_fully(&self.dir).await;
        self.fail(r)?;
        let all: Vec<i64> = self.segments.keys().copied().collect();
        for b in all {
            if let Some(s) = self.segments.remove(&b) {
                let r = s.delete().await;
                self.fail(r)?;
            }
        }
        let r = Segment::create(&self.dir, offset, &self.config, now_ms).await;
        let segment = self.fail(r)?;
        self.segments.insert(offset, segment);
        if let Some((cache, key)) = &self.cache {
            cache.borrow_mut().remove(*key);
        }
        self.epochs.clear();
        self.persist_epochs().await?;
        self.cleaner_checkpoint = None;
        self.tombstone_horizon_ms = None;
        self.log_start_offset = offset;
        self.high_watermark = offset;
        self.recovery_point = offset;
        self.unflushed_records = 0;
        self.first_unflushed_ms = None;
        self.check_invariants();
        Ok(())
    }

    /// Moves the log start offset forward (DeleteRecords), up to the HW, and
    /// deletes segments that lie wholly below it. Returns the new log start.
    pub async fn delete_records_before(&mut self, offset: i64) -> LogResult<i64> {
        self.ensure_online()?;
        if offset > self.high_watermark {
            return Err(LogError::OffsetOutOfRange {
                partition: self.tp.to_string(),
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.high_watermark,
            });
        }
        if offset > self.log_start_offset {
            self.advance_log_start(offset).await?;
        }
        self.delete_segments_below_log_start().await?;
        Ok(self.log_start_offset)
    }

    pub(super) async fn advance_log_start(&mut self, offset: i64) -> LogResult<()> {
        self.log_start_offset = offset;
        if let Some((cache, key)) = &self.cache {
            cache.borrow_mut().truncate_front(*key, offset);
        }
        if self.epochs.truncate_from_start(offset) {
            self.persist_epochs().await?;
        }
        Ok(())
    }

    pub(super) async fn delete_segments_below_log_start(&mut self) -> LogResult<usize> {
        let mut deleted = 0;
        loop {
            let mut it = self.segments.iter();
            let (Some((&first, _)), Some((&second, _))) = (it.next(), it.next()) else {
                break;
            };
            if second > self.log_start_offset {
                break;
            }
            let s = self.segments.remove(&first).expect("first segment");
            let r = s.delete().await;
            self.fail(r)?;
            deleted += 1;
        }
        self.delete_producer_snapshots_of_deleted_segments().await?;
        Ok(deleted)
    }

    /// Deletes whole segments past `retention.ms` or beyond `retention.bytes`,
    /// oldest first, never past the HW, and advances the log start offset.
    /// The active segment is rolled first when it too has expired. Only
    /// under `cleanup.policy` `delete` (alone or with `compact`): a
    /// compact-only log keeps every key's latest record however old.
    pub async fn apply_retention(&mut self, now_ms: i64) -> LogResult<usize> {
        self.ensure_online()?;
        if !self.config.cleanup_policy.delete {
            return Ok(0);
        }
        let mut deleted = 0;
        loop {
            let count = self.segments.len();
            let total = self.size_bytes();
            let Some((&first, segment)) = self.segments.iter().next() else {
                break;
            };
            let expired = self.config.retention_ms >= 0
                && now_ms - segment.largest_timestamp() > self.config.retention_ms;
            let oversize = self.config.retention_bytes >= 0
                && total - segment.size_bytes() >= self.config.retention_bytes as u64;
            // The cleaner can leave a segment with no batch at all; below
            // the active one it holds nothing to keep.
            let empty_sealed = segment.is_empty() && count > 1;
            if !(expired || oversize || empty_sealed) || (segment.is_empty() && count == 1) {
                break;
            }
            let next_start = if empty_sealed {
                *self.segments.keys().nth(1).expect("count > 1")
            } else {
                segment.next_offset()
            };
            if next_start > self.high_watermark {
                break;
            }
            if count == 1 {
                // All data expired: roll so the old segment can go.
                self.roll(next_start, now_ms).await?;
            }
            let s = self.segments.remove(&first).expect("first segment");
            let r = s.delete().await;
            self.fail(r)?;
            deleted += 1;
            let new_start = *self.segments.keys().next().expect("segments");
            if new_start > self.log_start_offset {
                self.advance_log_start(new_start).await?;
            }
        }
        self.delete_producer_snapshots_of_deleted_segments().await?;
        self.check_invariants();
        Ok(deleted)
    }
}
