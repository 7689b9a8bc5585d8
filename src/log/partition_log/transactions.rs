//! Transactions on a partition log: the markers among appended batches,
//! the aborted-transaction index they feed, the last stable offset, and
//! the aborted transactions a read_committed fetch must list.

use super::*;
use crate::log::control_batch::{self, MarkerSpec};
use crate::log::producer_state::VerificationNeed;

impl PartitionLog {
    /// Where read_committed consumers stop (Kafka's `lastStableOffset`):
    /// the start of the oldest transaction that is open or whose marker is
    /// not yet replicated, or the HW when it is lower. Never below the log
    /// start: what lies there is gone whatever its transaction's outcome.
    pub fn last_stable_offset(&self) -> i64 {
        self.producers
            .txns()
            .last_stable_offset(self.high_watermark)
            .max(self.log_start_offset)
    }

    /// The aborted transactions a read of `[fetch_offset, upper_bound)`
    /// overlaps, oldest marker first (Kafka's `collectAbortedTransactions`):
    /// searched from the segment holding `fetch_offset` on, until an
    /// entry's LSO shows that no later one can overlap the read. A segment
    /// past the bound is searched too: a transaction with data in the read
    /// may have its ABORT marker, and so its entry, in any later segment.
    pub fn aborted_txns(&self, fetch_offset: i64, upper_bound: i64) -> Vec<AbortedTxn> {
        let from = self
            .segments
            .range(..=fetch_offset)
            .next_back()
            .map_or(i64::MIN, |(b, _)| *b);
        let mut found = Vec::new();
        for segment in self.segments.range(from..).map(|(_, s)| s) {
            let (entries, complete) = crate::log::transaction_index::collect(
                segment.txn_index().entries(),
                fetch_offset,
                upper_bound,
            );
            found.extend(entries);
            if complete {
                break;
            }
        }
        found
    }

    /// Appends transaction markers as the leader (what WriteTxnMarkers does
    /// on each partition): one control batch per marker, each checked
    /// against its producer's epoch and the coordinator epoch the producer
    /// last saw. Each marker gets its own result, as the appends of a
    /// group commit do.
    pub async fn append_markers_as_leader(
        &mut self,
        markers: &[MarkerSpec],
        transaction_version: i16,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Vec<LogResult<AppendInfo>> {
        let appends = markers
            .iter()
            .map(|m| LeaderAppend {
                batches: BytesMut::from(&control_batch::build_marker_batch(m)[..]).into(),
                log_append_time_ms: None,
                origin: AppendOrigin::TxnMarkers {
                    transaction_version,
                },
                verification: TxnVerification::Off,
            })
            .collect();
        self.append_many_as_leader(appends, leader_epoch, now_ms)
            .await
    }

    /// The decoded marker of every control batch among `headers`, whose
    /// bytes are `bytes` laid end to end. A control batch whose marker
    /// does not decode is refused: it would end a transaction with an
    /// unknown outcome.
    pub(super) fn markers_in(
        &self,
        bytes: &[u8],
        headers: &[BatchHeader],
    ) -> LogResult<MarkersByOffset> {
        let mut markers = MarkersByOffset::new();
        let mut position = 0usize;
        for h in headers {
            if h.is_control() {
                let batch = &bytes[position..position + h.size_bytes()];
                match control_batch::marker_of(batch, h) {
                    Ok(Some(m)) => {
                        markers.insert(h.base_offset, m);
                    }
                    Ok(None) => {}
                    Err(reason) => {
                        return Err(self
                            .invalid(position as u64, BatchError::InvalidControlRecord { reason }))
                    }
                }
            }
            position += h.size_bytes();
        }
        Ok(markers)
    }

    /// KIP-890: whether a producer's transactional batch needs the
    /// coordinator's verification before it is appended here, and the
    /// guard to append it with. `Err` is the producer's newer epoch.
    pub fn begin_txn_verification(
        &mut self,
        producer_id: i64,
        epoch: i16,
        supports_epoch_bump: bool,
        now_ms: i64,
    ) -> Result<VerificationNeed, i16> {
        self.producers
            .begin_verification(producer_id, epoch, supports_epoch_bump, now_ms)
    }

    /// Checks a staged leader append against the producer state: a
    /// producer's batches for their epoch and sequence, a coordinator's
    /// markers for their producer and coordinator epochs.
    pub(super) fn check_producer_state(
        &self,
        staged: &StagedAppend,
        origin: AppendOrigin,
        verification: TxnVerification,
    ) -> LogResult<LeaderAppendCheck> {
        match origin {
            AppendOrigin::Client => {
                self.producers
                    .check_leader_append(&self.tp, &staged.headers, verification)
            }
            AppendOrigin::Coordinator => {
                self.producers
                    .check_coordinator_append(&self.tp, &staged.headers, verification)?;
                Ok(LeaderAppendCheck::Append)
            }
            AppendOrigin::TxnMarkers {
                transaction_version,
            } => {
                for h in &staged.headers {
                    let Some(marker) = staged.markers.get(&h.base_offset) else {
                        return Err(self.invalid(
                            0,
                            BatchError::InvalidControlRecord {
                                reason: "a coordinator append holds a batch that is not a transaction marker".into(),
                            },
                        ));
                    };
                    self.producers.check_marker(
                        &self.tp,
                        h.producer_id,
                        h.producer_epoch,
                        marker,
                        transaction_version,
                        h.base_offset,
                    )?;
                }
                Ok(LeaderAppendCheck::Append)
            }
        }
    }

    /// Records aborted transactions whose markers were just written to the
    /// active segment in its `.txnindex`.
    pub(super) async fn index_aborted_txns(&mut self, aborted: Vec<AbortedTxn>) -> LogResult<()> {
        for txn in aborted {
            let r = self.active_mut().append_aborted_txn(txn).await;
            self.fail(r)?;
        }
        Ok(())
    }
}
