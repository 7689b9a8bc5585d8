//! Reads: fetches from the read cache or a segment file, and offsets by
//! timestamp.

use super::*;

impl PartitionLog {
    /// Reads from `fetch_offset`: whole batches from the tail cache, or a
    /// byte range of one segment file, below `max_offset` (exclusive; the HW
    /// for consumers, the LEO for followers). With `min_one_batch`, the first
    /// batch is returned even when larger than `max_bytes` (Kafka's
    /// min-one-message rule).
    pub async fn read(
        &mut self,
        fetch_offset: i64,
        max_bytes: usize,
        max_offset: i64,
        min_one_batch: bool,
    ) -> LogResult<LogReadResult> {
        self.ensure_online()?;
        let leo = self.log_end_offset();
        if fetch_offset < self.log_start_offset || fetch_offset > leo {
            return Err(LogError::OffsetOutOfRange {
                partition: self.tp.to_string(),
                offset: fetch_offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: leo,
            });
        }
        let max_offset = max_offset.min(leo);
        if fetch_offset >= max_offset {
            return Ok(LogReadResult::default());
        }
        if let Some((cache, key)) = &self.cache {
            let hit =
                cache
                    .borrow_mut()
                    .read(*key, fetch_offset, max_offset, max_bytes, min_one_batch);
            if let Some(slices) = hit {
                return Ok(LogReadResult {
                    slices: slices.into_iter().map(ReadSlice::Cached).collect(),
                    from_cache: true,
                    ..LogReadResult::default()
                });
            }
        }
        let r = self
            .read_from_segments(fetch_offset, max_bytes, max_offset, min_one_batch)
            .await;
        let mut r = self.fail(r)?;
        if let Some((cache, key)) = &self.cache {
            if cache.borrow().capacity_bytes() > 0 && !r.slices.is_empty() {
                r.fill = BatchCache::fill_ticket(cache, *key);
            }
        }
        Ok(r)
    }

    pub(super) async fn read_from_segments(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
        max_offset: i64,
        min_one_batch: bool,
    ) -> LogResult<LogReadResult> {
        let start_base = self
            .segments
            .range(..=fetch_offset)
            .next_back()
            .map(|(b, _)| *b)
            .unwrap_or(i64::MIN);
        for segment in self.segments.range(start_base..).map(|(_, s)| s) {
            let Some(found) = segment.translate_offset(fetch_offset, 0).await? else {
                // Compaction or truncation may leave the offset past this
                // segment's batches; the next segment holds what follows.
                continue;
            };
            if found.header.base_offset >= max_offset {
                return Ok(LogReadResult::default());
            }
            let end = if max_offset < segment.next_offset() {
                segment.position_of(max_offset).await?
            } else {
                segment.size_bytes()
            };
            let available = end - found.position;
            let first_size = (found.header.size_bytes() as u64).min(available);
            let mut len = available.min(max_bytes as u64);
            if len < first_size {
                if !min_one_batch {
                    // Not even one whole batch fits: send nothing rather than
                    // a fragment the client must throw away.
                    return Ok(LogReadResult::default());
                }
                len = first_size;
            }
            if len == 0 {
                return Ok(LogReadResult::default());
            }
            return Ok(LogReadResult {
                slices: vec![ReadSlice::File {
                    file: segment.file().clone(),
                    position: found.position,
                    len,
                }],
                from_cache: false,
                fill: None,
                readable_end: segment.size_bytes(),
            });
        }
        Ok(LogReadResult::default())
    }

    /// Kafka's `fetchOffsetByTimestamp` for a real timestamp: the first record
    /// with a timestamp at or after `target_ms`, or `None`.
    pub async fn offset_for_timestamp(&self, target_ms: i64) -> LogResult<Option<TimestampOffset>> {
        self.ensure_online()?;
        for segment in self.segments.values() {
            if segment.max_timestamp() < target_ms || segment.next_offset() <= self.log_start_offset
            {
                continue;
            }
            if let Some(found) = segment
                .find_offset_by_timestamp(target_ms, self.log_start_offset)
                .await?
            {
                return Ok(Some(TimestampOffset {
                    timestamp: found.1,
                    offset: found.0,
                }));
            }
        }
        Ok(None)
    }

    /// The record with the largest timestamp (ListOffsets MAX_TIMESTAMP).
    pub fn max_timestamp_offset(&self) -> Option<TimestampOffset> {
        self.segments
            .values()
            .filter(|s| s.max_timestamp() >= 0)
            .max_by_key(|s| s.max_timestamp())
            .map(|s| TimestampOffset {
                timestamp: s.max_timestamp(),
                offset: s.offset_of_max_timestamp(),
            })
    }
}
