//! The log cleaner's side of a partition log.

use super::*;

/// The log cleaner's side of the log: what it reads before cleaning without
/// the lock, and the swap of cleaned segments for the ones they replace
/// (the protocol is in `log/swap.rs`).
impl PartitionLog {
    /// Where the last clean ended, for the `cleaner-offset-checkpoint`.
    pub fn cleaner_checkpoint(&self) -> Option<i64> {
        self.cleaner_checkpoint
    }

    /// Sets where the last clean ended: from the `cleaner-offset-checkpoint`
    /// at open, and by the cleaner after a clean.
    pub fn set_cleaner_checkpoint(&mut self, offset: i64) {
        self.cleaner_checkpoint = Some(offset);
    }

    /// Records the earliest delete horizon of the tombstones a clean kept.
    pub fn set_tombstone_horizon_ms(&mut self, horizon_ms: Option<i64>) {
        self.tombstone_horizon_ms = horizon_ms;
    }

    /// A snapshot of what the cleaner needs, taken under the log's lock.
    pub fn cleaner_view(&self) -> CleanerView {
        let active = self.active().base_offset();
        let segments = self
            .segments
            .range(..active)
            .map(|(_, s)| {
                let (offset_index_bytes, time_index_bytes) = s.index_sizes_bytes();
                CleanableSegment {
                    stats: SegmentStats {
                        base_offset: s.base_offset(),
                        next_offset: s.next_offset(),
                        size_bytes: s.size_bytes(),
                        offset_index_bytes,
                        time_index_bytes,
                        first_batch_timestamp: s.first_batch_timestamp(),
                        largest_timestamp: s.largest_timestamp(),
                    },
                    file: s.file().clone(),
                    path: s.log_path().to_path_buf(),
                    log_truncations: self.truncations,
                    aborted_txns: s.txn_index().entries().to_vec(),
                }
            })
            .collect();
        CleanerView {
            tp: self.tp.clone(),
            dir: self.dir.clone(),
            config: self.config.clone(),
            offsets: CleanerOffsets {
                log_start_offset: self.log_start_offset,
                high_watermark: self.high_watermark,
                last_stable_offset: self.last_stable_offset(),
                log_end_offset: self.log_end_offset(),
                active_base_offset: active,
                cleaner_checkpoint: self.cleaner_checkpoint,
                tombstone_horizon_ms: self.tombstone_horizon_ms,
            },
            segments,
            producer_last_offsets: self
                .producers
                .entries()
                .filter_map(|e| e.last_batch().map(|b| (e.producer_id, b.last_offset)))
                .collect(),
            aborted_txns: self
                .segments
                .values()
                .flat_map(|s| s.txn_index().entries().iter().copied())
                .collect(),
        }
    }

    /// Whether every segment the cleaner read is still in the log, unchanged
    /// and not active: retention, DeleteRecords and truncation may have
    /// removed or cut some while the cleaner worked without the lock. Any
    /// truncation since the cleaner's view counts as a change: it may have
    /// cut a segment that appends then refilled to the same size.
    pub fn segments_unchanged(&self, replaced: &[CleanableSegment]) -> bool {
        let active = self.active().base_offset();
        !self.is_offline()
            && replaced.iter().all(|r| {
                r.log_truncations == self.truncations
                    && r.stats.base_offset < active
                    && self.segments.get(&r.stats.base_offset).is_some_and(|s| {
                        Rc::ptr_eq(s.file(), &r.file) && s.size_bytes() == r.stats.size_bytes
                    })
            })
    }

    /// Swaps the cleaned segment written (and closed) as
    /// `<replaced[0].base>.*.cleaned` in for the `replaced` segments, by the
    /// protocol in `log/swap.rs`. Returns `false`, touching nothing, when the replaced
    /// segments changed meanwhile; the caller then deletes the cleaned files.
    /// An I/O error takes the partition offline; the next open finishes or
    /// undoes the swap. `failpoint` stops at a step as a crash would.
    pub async fn replace_segments(
        &mut self,
        replaced: &[CleanableSegment],
        now_ms: i64,
        failpoint: Option<SwapFailpoint>,
    ) -> LogResult<bool> {
        self.ensure_online()?;
        assert!(!replaced.is_empty(), "a swap replaces at least one segment");
        if !self.segments_unchanged(replaced) {
            return Ok(false);
        }
        let base = replaced[0].stats.base_offset;
        let r = self.swap_in(replaced, base, now_ms, failpoint).await;
        let r = self.fail(r);
        if r.is_ok() {
            if let Some((cache, key)) = &self.cache {
                // Cached batches are the uncleaned bytes; reads of these
                // offsets must see the cleaned segment from now on.
                let first_kept = self
                    .segments
                    .range(base + 1..)
                    .next()
                    .map(|(b, _)| *b)
                    .unwrap_or(i64::MAX);
                cache.borrow_mut().truncate_front(*key, first_kept);
            }
            self.check_invariants();
        }
        r.map(|()| true)
    }

    pub(super) async fn swap_in(
        &mut self,
        replaced: &[CleanableSegment],
        base: i64,
        now_ms: i64,
        failpoint: Option<SwapFailpoint>,
    ) -> LogResult<()> {
        let crash = |at: SwapFailpoint| -> LogResult<()> {
            if failpoint == Some(at) {
                return Err(LogError::io(
                    "cleaner swap",
                    segment_file_path(&self.dir, base, "log"),
                    base,
                    std::io::Error::other(format!("simulated crash at {at:?}")),
                ));
            }
            Ok(())
        };
        crash(SwapFailpoint::BeforeSwap)?;
        swap::commit_cleaned(&self.dir, base).await?;
        crash(SwapFailpoint::AfterSwapCommitted)?;
        for (i, r) in replaced.iter().enumerate() {
            let old = self
                .segments
                .remove(&r.stats.base_offset)
                .expect("checked under the same lock");
            old.delete().await?;
            if i == 0 {
                crash(SwapFailpoint::AfterFirstOldDeleted)?;
            }
        }
        swap::sync_dir(&self.dir).await?;
        crash(SwapFailpoint::AfterOldDeleted)?;
        swap::rename_swap_to_final(&self.dir, base).await?;
        let mut segment = Segment::open(&self.dir, base, &self.config, now_ms).await?;
        if !segment.load_clean().await? {
            // The indexes were flushed before the swap; if they fail the
            // check anyway, rebuild them from the log like recovery would.
            segment.recover().await?;
        }
        self.segments.insert(base, segment);
        Ok(())
    }
}
