//! Transactional offset commits (KIP-98's TxnOffsetCommit, KIP-447's
//! member checks): offsets a producer commits inside its transaction are
//! written to the group's partition as the producer's transactional batch,
//! and stay *pending* until the transaction's marker reaches that
//! partition. A COMMIT makes them the group's committed offsets; an ABORT
//! drops them. Until then OffsetFetch with `require_stable` answers
//! UNSTABLE_OFFSET_COMMIT for their partitions, so that a consumer taking
//! over does not start from offsets that may still change.
//!
//! The same happens on load: the records of a transactional batch wait for
//! their producer's marker in the log (`offsets_log.rs`), and those still
//! waiting at the log end become pending again.
//!
//! A pending offset becomes committed when its marker arrives, even if a
//! plain commit of the same partition came in between (Kafka keeps the
//! later of the two by log offset): a group that mixes both commit paths
//! for one partition gets the transaction's.

use super::*;
use crate::log::producer_state::TxnVerification;
use crate::node::internal_log::{append_replicated, InternalWriteError, TxnProducer};

/// One offset a transaction committed, not yet decided.
#[derive(Debug, Clone)]
pub(super) struct PendingOffset {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub value: OffsetValue,
}

impl GroupCoordinator {
    /// TxnOffsetCommit: checks the member (when the request names one, as
    /// KIP-447 clients do), writes the offsets as the producer's
    /// transactional batch, and keeps them pending.
    #[allow(clippy::too_many_arguments)]
    pub async fn txn_commit(
        self: Rc<Self>,
        shard: Rc<Shard>,
        partition: i32,
        group_id: String,
        producer: (i64, i16),
        generation: i32,
        member_id: String,
        instance_id: Option<String>,
        topics: Vec<(String, Vec<CommitPartition>)>,
        verification: TxnVerification,
    ) -> Vec<(String, Vec<(i32, i16)>)> {
        let all = |code: i16| {
            topics
                .iter()
                .map(|(t, ps)| (t.clone(), ps.iter().map(|p| (p.partition, code)).collect()))
                .collect::<Vec<_>>()
        };
        if let Err(code) = self.ready(&shard, partition) {
            return all(code);
        }
        let now = now_ms();
        // A consumer group's member commits with its member epoch.
        let consumer = if generation >= 0 || !member_id.is_empty() {
            self.consumer_commit_check(
                &shard,
                &group_id,
                &member_id,
                generation,
                CommitRequest::Transactional,
                &topics,
            )
        } else {
            None
        };
        if let Some(code) = consumer.filter(|c| *c != error_code::NONE) {
            return all(code);
        }
        let check = {
            let mut groups = self.groups.borrow_mut();
            let g = groups
                .entry(group_id.clone())
                .or_insert_with(|| Group::new(group_id.clone(), now));
            self.group_partition
                .borrow_mut()
                .insert(group_id.clone(), partition);
            // Kafka's validateOffsetCommit for transactions: a request
            // without a member (an old client) is not checked.
            if g.is(GroupState::Dead) {
                Err(error_code::COORDINATOR_NOT_AVAILABLE)
            } else if consumer.is_some() {
                Ok(())
            } else if generation >= 0 || !member_id.is_empty() || instance_id.is_some() {
                g.validate_member(&member_id, instance_id.as_deref(), generation)
            } else {
                Ok(())
            }
        };
        if let Err(code) = check {
            return all(code);
        }
        let (mut results, records, offsets) =
            self.offset_commit_records(&shard, &group_id, &topics, now);
        let pending: Vec<PendingOffset> = offsets
            .into_iter()
            .map(|((topic, partition), value)| PendingOffset {
                group: group_id.clone(),
                topic,
                partition,
                value,
            })
            .collect();
        if records.is_empty() {
            return results;
        }
        let tp = Self::tp(partition);
        let txn = TxnProducer {
            producer_id: producer.0,
            producer_epoch: producer.1,
            verification,
        };
        let timeout = self.write_timeout();
        // Pending before the write: the transaction's marker may reach the
        // partition (and be applied) as soon as the batch is in the log,
        // even before this write's replication wait ends.
        let count = pending.len();
        self.pending_txn
            .borrow_mut()
            .entry((partition, producer.0))
            .or_default()
            .extend(pending);
        let forget = || {
            if let Some(p) = self
                .pending_txn
                .borrow_mut()
                .get_mut(&(partition, producer.0))
            {
                let keep = p.len().saturating_sub(count);
                p.truncate(keep);
            }
        };
        let written = match append_replicated(&shard, &tp, &records, Some(txn), timeout).await {
            Ok(_) => Ok(()),
            Err(InternalWriteError::NotLeader) => Err(error_code::NOT_COORDINATOR),
            // The batch is in the log and may still commit: its offsets
            // stay pending for the marker, as they would after a reload.
            // Kafka's answer to a write that timed out (see `append`).
            Err(InternalWriteError::Timeout) => Err(error_code::COORDINATOR_NOT_AVAILABLE),
            Err(InternalWriteError::Unavailable) => {
                forget();
                Err(error_code::COORDINATOR_NOT_AVAILABLE)
            }
            Err(InternalWriteError::Log(e)) => {
                forget();
                tracing::info!(partition = %tp, "transactional offset commit refused: {e}");
                Err(match e {
                    LogError::InvalidProducerEpoch { .. } => error_code::PRODUCER_FENCED,
                    // A marker ended the transaction after the verification.
                    LogError::UnverifiedTxnBatch { .. } => error_code::INVALID_TXN_STATE,
                    LogError::InvalidBatch { .. } => error_code::INVALID_COMMIT_OFFSET_SIZE,
                    _ => error_code::COORDINATOR_NOT_AVAILABLE,
                })
            }
        };
        if let Err(code) = written {
            for (_, parts) in &mut results {
                for (_, c) in parts.iter_mut() {
                    if *c == error_code::NONE {
                        *c = code;
                    }
                }
            }
        }
        results
    }

    /// A marker for `producer_id` reached `__consumer_offsets` partition
    /// `partition` (and is replicated): its pending offsets there become
    /// committed, or go.
    pub fn on_txn_marker(&self, partition: i32, producer_id: i64, commit: bool) {
        let Some(pending) = self
            .pending_txn
            .borrow_mut()
            .remove(&(partition, producer_id))
        else {
            return;
        };
        if !commit {
            return;
        }
        let mut groups = self.groups.borrow_mut();
        let now = now_ms();
        for p in pending {
            let g = groups
                .entry(p.group.clone())
                .or_insert_with(|| Group::new(p.group.clone(), now));
            g.offsets.insert((p.topic, p.partition), p.value);
            self.group_partition.borrow_mut().insert(p.group, partition);
        }
    }

    /// Whether a transaction's offset for the partition is still undecided
    /// (OffsetFetch's `require_stable`).
    pub fn has_pending_offset(&self, group_id: &str, topic: &str, partition: i32) -> bool {
        self.pending_txn.borrow().values().any(|offsets| {
            offsets
                .iter()
                .any(|p| p.group == group_id && p.topic == topic && p.partition == partition)
        })
    }
}
