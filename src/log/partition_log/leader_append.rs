//! A leader's appends: validating producers' batches, giving them their
//! offsets and leader epoch, checking them against the producer state,
//! and writing a group commit with as few direct writes as the segment
//! boundaries allow.

use super::*;

/// A leader append validated and given its offsets, not yet written.
#[derive(Debug)]
pub(super) struct StagedAppend {
    pub(super) bytes: Bytes,
    /// The buffer `bytes` is in, which the read cache counts.
    pub(super) backing: Backing,
    pub(super) headers: Vec<BatchHeader>,
    /// The markers among the batches, by offset.
    pub(super) markers: MarkersByOffset,
    /// The aborted transactions its markers end, for the segment's
    /// `.txnindex` once the batches are written.
    pub(super) aborted: Vec<AbortedTxn>,
}

impl StagedAppend {
    fn max_timestamp(&self) -> i64 {
        max_timestamp(&self.headers)
    }
}

/// The largest batch max timestamp of `headers`; -1 for none.
pub(super) fn max_timestamp(headers: &[BatchHeader]) -> i64 {
    headers.iter().map(|h| h.max_timestamp).max().unwrap_or(-1)
}

/// A leader's direct write about to be submitted: whole batches, offsets
/// and leader epoch assigned, continuing the log from its end.
pub struct LeaderWrite<'a> {
    pub parts: &'a [Bytes],
    /// The batches of `parts`, back to back.
    pub headers: &'a [BatchHeader],
    pub log_start_offset: i64,
    pub last_stable_offset: i64,
}

/// The appends of a group commit staged for one write, with the slot of
/// each one's result.
#[derive(Debug, Default)]
struct StagedGroup {
    appends: Vec<(usize, StagedAppend)>,
}

impl StagedGroup {
    fn push(&mut self, slot: usize, append: StagedAppend) {
        self.appends.push((slot, append));
    }

    fn size_bytes(&self) -> u64 {
        self.appends.iter().map(|(_, a)| a.bytes.len() as u64).sum()
    }
}

/// Every append of a group has its result once the group is done.
fn finish(results: Vec<Option<LogResult<AppendInfo>>>) -> Vec<LogResult<AppendInfo>> {
    results
        .into_iter()
        .map(|r| r.expect("every append of the group is answered"))
        .collect()
}

impl PartitionLog {
    /// Validates producer batches, assigns their offsets from the LEO and the
    /// leader epoch, and appends them. Only header fields outside the CRC are
    /// rewritten, unless `log_append_time_ms` asks for LogAppendTime.
    pub async fn append_as_leader(
        &mut self,
        batches: impl Into<CacheCopy>,
        leader_epoch: i32,
        log_append_time_ms: Option<i64>,
        now_ms: i64,
    ) -> LogResult<AppendInfo> {
        let append = LeaderAppend {
            batches: batches.into(),
            log_append_time_ms,
            origin: AppendOrigin::Client,
            verification: TxnVerification::Off,
        };
        let mut results = self
            .append_many_as_leader(vec![append], leader_epoch, now_ms)
            .await;
        results.pop().expect("one result per append")
    }

    /// A group commit: appends several producers' requests for this partition
    /// in order, with as few direct writes as the segment boundaries allow
    /// (one, unless the group must roll). Each append is checked on its own
    /// and gets its own result: a refused one (a bad batch, a sequence gap)
    /// leaves the others unaffected, and a later one is checked against the
    /// producer state the earlier ones leave. The appends are in the file
    /// when this returns, as with [`PartitionLog::append_as_leader`]. A
    /// failed write takes the partition offline and fails every append of
    /// the group that was not written yet.
    pub async fn append_many_as_leader(
        &mut self,
        appends: Vec<LeaderAppend>,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Vec<LogResult<AppendInfo>> {
        self.append_many_as_leader_observed(appends, leader_epoch, now_ms, &|_| {})
            .await
    }

    /// [`PartitionLog::append_many_as_leader`], telling `on_write` about
    /// each direct write just before it is submitted (one, or two around a
    /// roll): the bytes are final then, and replication may take them
    /// while the write is in flight (`node::in_flight_appends`).
    pub async fn append_many_as_leader_observed(
        &mut self,
        appends: Vec<LeaderAppend>,
        leader_epoch: i32,
        now_ms: i64,
        on_write: &dyn Fn(LeaderWrite<'_>),
    ) -> Vec<LogResult<AppendInfo>> {
        let mut results: Vec<Option<LogResult<AppendInfo>>> = Vec::with_capacity(appends.len());
        if self.offline.is_some() {
            return appends.iter().map(|_| Err(self.offline_error())).collect();
        }
        self.producers.maybe_remove_expired(now_ms);
        let mut group = StagedGroup::default();
        let mut next_offset = self.log_end_offset();
        for append in appends {
            let slot = results.len();
            results.push(None);
            let (origin, verification) = (append.origin, append.verification);
            let mut staged = match self.stage_leader_batches(append, next_offset, leader_epoch) {
                Ok(staged) => staged,
                Err(e) => {
                    results[slot] = Some(Err(e));
                    continue;
                }
            };
            // Idempotent producers: a fenced epoch or a sequence gap refuses
            // the append, and a retry is answered with the original offsets
            // without writing anything (Kafka's analyzeAndValidateProducerState).
            // The state includes the earlier appends of this group.
            match self.check_producer_state(&staged, origin, verification) {
                Err(e) => {
                    results[slot] = Some(Err(e));
                    continue;
                }
                Ok(LeaderAppendCheck::Duplicate {
                    first_offset,
                    last_offset,
                    max_timestamp,
                }) => {
                    results[slot] = Some(Ok(AppendInfo {
                        first_offset,
                        last_offset,
                        max_timestamp,
                        batch_count: 0,
                        size_bytes: 0,
                        duplicate: true,
                    }));
                    continue;
                }
                Ok(LeaderAppendCheck::Append) => {}
            }
            let first = staged.headers[0];
            let last = staged.headers[staged.headers.len() - 1];
            let max_timestamp = staged.max_timestamp();
            if self.group_needs_roll(
                &group,
                staged.bytes.len() as u64,
                max_timestamp,
                last.last_offset(),
                now_ms,
            ) {
                // Everything staged so far belongs before the roll, and the
                // roll's producer snapshot must hold exactly that.
                if let Err(e) = self
                    .write_group(&mut group, &mut results, leader_epoch, now_ms, on_write)
                    .await
                {
                    self.fail_unanswered(&mut results, e);
                    return finish(results);
                }
                if let Err(e) = self.roll(first.base_offset, now_ms).await {
                    self.fail_unanswered(&mut results, e);
                    return finish(results);
                }
            }
            // Applied before the write so that the next append of the group
            // is checked against it; a failed write takes the partition
            // offline, and recovery rebuilds the state from the log.
            staged.aborted = self.producers.apply(&staged.headers, &staged.markers);
            next_offset = last.next_offset();
            group.push(slot, staged);
        }
        if let Err(e) = self
            .write_group(&mut group, &mut results, leader_epoch, now_ms, on_write)
            .await
        {
            self.fail_unanswered(&mut results, e);
            return finish(results);
        }
        // The flush policy counts the whole group as one append, as Kafka
        // counts one produce request, even when a roll split it into two
        // writes. A failed flush leaves durability unknown, so none of the
        // group's appends is acknowledged, and the partition goes offline
        // because the producer state holds them.
        if let Err(e) = self.maybe_flush(now_ms).await {
            if self.offline.is_none() {
                self.take_offline(&e);
            }
            for r in results.iter_mut() {
                if matches!(r, Some(Ok(info)) if !info.duplicate) {
                    *r = Some(Err(self.offline_error()));
                }
            }
        }
        finish(results)
    }

    /// Validates one request's batches for this partition and rewrites their
    /// offsets (from `next_offset`), leader epoch and, for LogAppendTime, time.
    fn stage_leader_batches(
        &self,
        append: LeaderAppend,
        mut next_offset: i64,
        leader_epoch: i32,
    ) -> LogResult<StagedAppend> {
        let LeaderAppend {
            mut batches,
            log_append_time_ms,
            origin,
            verification: _,
        } = append;
        let markers_only = matches!(origin, AppendOrigin::TxnMarkers { .. });
        let mut headers = Vec::new();
        let mut position = 0usize;
        while position < batches.len() {
            let h = batch::validate(&batches[position..], CountRule::Exact)
                .map_err(|e| self.invalid(position as u64, e))?;
            if h.is_control() != markers_only {
                // Kafka's LogValidator: control batches (transaction markers)
                // come from the broker, never from a Produce. One with a
                // forged producer id would bump that producer's epoch and
                // fence the real producer.
                return Err(self.invalid(position as u64, BatchError::ControlBatch));
            }
            if self.config.cleanup_policy.compact {
                // Kafka's LogValidator: a compacted topic needs a key on every
                // record. The one place the write path reads records.
                batch::check_keys(&batches[position..])
                    .map_err(|e| self.invalid(position as u64, e))?;
            }
            if h.size_bytes() > self.config.max_batch_bytes {
                return Err(self.invalid(
                    position as u64,
                    BatchError::TooLarge {
                        size: h.size_bytes(),
                        max: self.config.max_batch_bytes,
                    },
                ));
            }
            let b = &mut batches[position..position + h.size_bytes()];
            batch::set_base_offset(b, next_offset);
            batch::set_partition_leader_epoch(b, leader_epoch);
            if let Some(ts) = log_append_time_ms {
                batch::set_log_append_time(b, ts);
            }
            let h = batch::parse_header(b).map_err(|e| self.invalid(position as u64, e))?;
            next_offset = h.next_offset();
            position += h.size_bytes();
            headers.push(h);
        }
        if headers.is_empty() {
            return Err(self.invalid(
                0,
                BatchError::Truncated {
                    needed: crate::constants::RECORD_BATCH_HEADER_SIZE,
                    available: 0,
                },
            ));
        }
        let (bytes, backing) = batches.freeze();
        let markers = self.markers_in(&bytes, &headers)?;
        Ok(StagedAppend {
            bytes,
            backing,
            headers,
            markers,
            aborted: Vec::new(),
        })
    }

    /// Kafka's roll rule for the next append, with the group staged so far
    /// counted as if it were already in the active segment.
    fn group_needs_roll(
        &self,
        group: &StagedGroup,
        append_bytes: u64,
        max_timestamp: i64,
        last_offset: i64,
        now_ms: i64,
    ) -> bool {
        let active = self.active();
        let staged = group.size_bytes();
        if staged > 0 && active.size_bytes() + staged + append_bytes > self.config.segment_bytes {
            return true;
        }
        active.should_roll(
            &self.config,
            staged + append_bytes,
            max_timestamp,
            last_offset,
            now_ms,
        )
    }

    /// Writes the staged group (if any) in one segment append and answers
    /// its appends. The new epoch is in the epoch cache before any of its
    /// batches is in the file.
    async fn write_group(
        &mut self,
        group: &mut StagedGroup,
        results: &mut [Option<LogResult<AppendInfo>>],
        leader_epoch: i32,
        now_ms: i64,
        on_write: &dyn Fn(LeaderWrite<'_>),
    ) -> LogResult<()> {
        if group.appends.is_empty() {
            return Ok(());
        }
        let staged = std::mem::take(group);
        if leader_epoch >= 0 {
            let first = staged.appends[0].1.headers[0].base_offset;
            self.assign_epoch_start_offset(leader_epoch, first).await?;
        }
        let mut parts = Vec::with_capacity(staged.appends.len());
        let mut backings = Vec::with_capacity(staged.appends.len());
        let mut headers = Vec::new();
        let mut aborted = Vec::new();
        for (_, a) in &staged.appends {
            parts.push(a.bytes.clone());
            backings.push(a.backing);
            headers.extend_from_slice(&a.headers);
            aborted.extend_from_slice(&a.aborted);
        }
        on_write(LeaderWrite {
            parts: &parts,
            headers: &headers,
            log_start_offset: self.log_start_offset(),
            last_stable_offset: self.last_stable_offset(),
        });
        self.write_validated(&parts, &backings, &headers, now_ms)
            .await?;
        self.index_aborted_txns(aborted).await?;
        for (slot, a) in staged.appends {
            results[slot] = Some(Ok(AppendInfo {
                first_offset: a.headers[0].base_offset,
                last_offset: a.headers[a.headers.len() - 1].last_offset(),
                max_timestamp: a.max_timestamp(),
                batch_count: a.headers.len(),
                size_bytes: a.bytes.len() as u64,
                duplicate: false,
            }));
        }
        Ok(())
    }
}
