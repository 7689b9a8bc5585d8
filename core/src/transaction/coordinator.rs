//! The transaction coordinator's decisions, as pure functions of an id's
//! state (Kafka's `TransactionCoordinator` checks and
//! `TransactionMetadata.prepare*` transitions), for transaction versions 1
//! and 2 (KIP-890 part 2: the epoch is bumped at every EndTxn, so a late
//! EndTxn or produce of one transaction cannot touch the next).
//!
//! Each request is decided against the id's [`TxnEntry`]: either it is
//! answered at once (an error, or a retry of something already done), or
//! the decision is a new [`TxnMetadata`] that the shell writes to
//! `__transaction_state`, marks as the id's pending state while it
//! replicates, and then applies. Time, fresh producer ids and limits are
//! parameters; nothing here does I/O.

use std::collections::BTreeSet;

use crate::protocol::error_code;
use crate::topic_partition::TopicPartition;
use crate::transaction::metadata::{
    TxnMetadata, TxnState, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TRANSACTION_VERSION_2,
};

/// An id at its coordinator: its state, and the transition being written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnEntry {
    pub metadata: TxnMetadata,
    /// The state a write in flight moves to; requests wait it out with
    /// CONCURRENT_TRANSACTIONS.
    pub pending: Option<TxnState>,
}

impl TxnEntry {
    pub fn new(metadata: TxnMetadata) -> Self {
        TxnEntry {
            metadata,
            pending: None,
        }
    }
}

/// What a request leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to write: answer with this code (NONE: already done).
    Answer(i16),
    /// Write this state, then answer.
    Write(TxnMetadata),
    /// Write this `PrepareAbort` (with a bumped epoch that fences the
    /// producer), write the markers, complete the abort; the request itself
    /// is answered CONCURRENT_TRANSACTIONS so that the client retries.
    FenceAndAbort(TxnMetadata),
    /// The id needs a new producer id (it is new, or its epochs are spent):
    /// allocate one and decide again with it.
    NeedProducerId,
}

/// InitProducerId for a transactional id (Kafka's `handleInitProducerId`).
/// `expected`: the (producer id, epoch) a v3+ client already holds
/// (KIP-360), if any. `fresh_producer_id`: a newly allocated id, when the
/// previous decision asked for one. `transaction_version`: the cluster's,
/// under which a fencing abort is written.
#[allow(clippy::too_many_arguments)]
pub fn init_producer_id(
    entry: Option<&TxnEntry>,
    transactional_id: &str,
    txn_timeout_ms: i32,
    max_txn_timeout_ms: i32,
    expected: Option<(i64, i16)>,
    fresh_producer_id: Option<i64>,
    transaction_version: i16,
    now_ms: i64,
) -> Decision {
    if transactional_id.is_empty() {
        return Decision::Answer(error_code::INVALID_REQUEST);
    }
    if txn_timeout_ms <= 0 || txn_timeout_ms > max_txn_timeout_ms {
        return Decision::Answer(error_code::INVALID_TRANSACTION_TIMEOUT);
    }
    let Some(entry) = entry else {
        let Some(producer_id) = fresh_producer_id else {
            return Decision::NeedProducerId;
        };
        let new = TxnMetadata::new(
            transactional_id.to_string(),
            producer_id,
            txn_timeout_ms,
            now_ms,
        );
        return bump_epoch(&new, txn_timeout_ms, expected.map(|(_, e)| e), now_ms);
    };
    if entry.pending.is_some() {
        return Decision::Answer(error_code::CONCURRENT_TRANSACTIONS);
    }
    let m = &entry.metadata;
    if let Some((producer_id, epoch)) = expected {
        // KIP-360: fence unless the id was just created, the producer holds
        // the current id, or it holds the previous id at a spent epoch (a
        // retry of the rotation that it never heard back from).
        let valid = m.producer_epoch == NO_PRODUCER_EPOCH
            || producer_id == m.producer_id
            || (producer_id == m.previous_producer_id && TxnMetadata::is_epoch_exhausted(epoch));
        if !valid {
            return Decision::Answer(error_code::PRODUCER_FENCED);
        }
    }
    match m.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort => {
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        }
        TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
            let spent = TxnMetadata::is_epoch_exhausted(m.producer_epoch);
            if spent && expected.is_none_or(|(_, e)| e == m.producer_epoch) {
                let Some(producer_id) = fresh_producer_id else {
                    return Decision::NeedProducerId;
                };
                let mut next = m.clone();
                next.previous_producer_id = m.producer_id;
                next.producer_id = producer_id;
                next.producer_epoch = 0;
                next.last_producer_epoch = if expected.is_some() {
                    m.producer_epoch
                } else {
                    NO_PRODUCER_EPOCH
                };
                return Decision::Write(to_empty(next, txn_timeout_ms, now_ms));
            }
            bump_epoch(m, txn_timeout_ms, expected.map(|(_, e)| e), now_ms)
        }
        TxnState::Ongoing => fence_and_abort(m, transaction_version, fresh_producer_id, now_ms),
        TxnState::Dead | TxnState::PrepareEpochFence => {
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        }
    }
}

/// Kafka's `prepareIncrementProducerEpoch`.
fn bump_epoch(
    m: &TxnMetadata,
    txn_timeout_ms: i32,
    expected_epoch: Option<i16>,
    now_ms: i64,
) -> Decision {
    // InitProducerId never bumps a spent epoch (it moves to a new id
    // first), but a fence may have left the last one.
    let Some(bumped) = m.producer_epoch.checked_add(1) else {
        return Decision::Answer(error_code::CONCURRENT_TRANSACTIONS);
    };
    let (epoch, last_epoch) = match expected_epoch {
        // A new producer, or one that lost its state: bump.
        None => (bumped, NO_PRODUCER_EPOCH),
        // It continues after an error, and nobody else initialised since.
        Some(e) if m.producer_epoch == NO_PRODUCER_EPOCH || e == m.producer_epoch => {
            (bumped, m.producer_epoch)
        }
        // A retry of a bump that succeeded: the same answer again.
        Some(e) if e == m.last_producer_epoch => (m.producer_epoch, m.last_producer_epoch),
        Some(_) => return Decision::Answer(error_code::PRODUCER_FENCED),
    };
    let mut next = m.clone();
    next.producer_epoch = epoch;
    next.last_producer_epoch = last_epoch;
    Decision::Write(to_empty(next, txn_timeout_ms, now_ms))
}

fn to_empty(mut next: TxnMetadata, txn_timeout_ms: i32, now_ms: i64) -> TxnMetadata {
    next.state = TxnState::Empty;
    next.txn_timeout_ms = txn_timeout_ms;
    next.partitions.clear();
    next.txn_start_timestamp_ms = -1;
    next.txn_last_update_timestamp_ms = now_ms;
    next
}

/// Aborts the open transaction under a bumped epoch, which fences the
/// producer that opened it: its markers carry the new epoch, so the
/// partitions refuse the old one (Kafka's `prepareFenceProducerEpoch`
/// followed by the abort). At the last epoch there is nothing to bump to;
/// the abort then keeps the epoch.
/// `transaction_version` is the cluster's finalized `transaction.version`:
/// the abort's markers are written under it, as Kafka's are. Under version
/// 2 a producer whose retried EndTxn(abort) is answered goes on with the
/// fence's epoch, so a fence from a spent epoch also names the producer id
/// the completion moves to (`fresh_producer_id`, asked for with
/// `NeedProducerId`): no producer ever runs at the last epoch, where no
/// later abort could fence it and a late marker of the fenced transaction
/// would be taken for the next one's.
pub fn fence_and_abort(
    m: &TxnMetadata,
    transaction_version: i16,
    fresh_producer_id: Option<i64>,
    now_ms: i64,
) -> Decision {
    let mut next = m.clone();
    next.client_transaction_version = transaction_version;
    if transaction_version >= TRANSACTION_VERSION_2
        && TxnMetadata::is_epoch_exhausted(m.producer_epoch)
        && m.next_producer_id < 0
    {
        let Some(fresh) = fresh_producer_id else {
            return Decision::NeedProducerId;
        };
        next.next_producer_id = fresh;
    }
    if m.producer_epoch < i16::MAX {
        next.producer_epoch = m.producer_epoch + 1;
    }
    next.last_producer_epoch = NO_PRODUCER_EPOCH;
    next.state = TxnState::PrepareAbort;
    next.txn_last_update_timestamp_ms = now_ms;
    Decision::FenceAndAbort(next)
}

/// Checks a client's producer id and epoch against the id's (the common
/// head of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn).
fn check_producer(
    entry: Option<&TxnEntry>,
    producer_id: i64,
    epoch: i16,
) -> Result<&TxnEntry, i16> {
    let Some(entry) = entry else {
        return Err(error_code::INVALID_PRODUCER_ID_MAPPING);
    };
    if entry.metadata.producer_id != producer_id {
        return Err(error_code::INVALID_PRODUCER_ID_MAPPING);
    }
    if entry.metadata.producer_epoch != epoch {
        return Err(error_code::PRODUCER_FENCED);
    }
    if entry.pending.is_some() {
        return Err(error_code::CONCURRENT_TRANSACTIONS);
    }
    Ok(entry)
}

/// Whether a request comes from the producer identity a version 2
/// Prepare* handed out (its EndTxn answer: the bumped epoch, or a new
/// producer id at epoch 0), while that Prepare's markers are still being
/// written. It is the next transaction of a live producer, not a zombie:
/// it waits with CONCURRENT_TRANSACTIONS until the completion, instead of
/// being refused for an identity the coordinator has not moved to yet.
/// Fencing them (PRODUCER_FENCED to such an EndTxn,
/// INVALID_PRODUCER_ID_MAPPING to such an add after a producer id
/// rotation) would be fatal to a live client; waiting is safe, since
/// nothing is decided until the completion is written.
fn is_next_identity_during_markers(m: &TxnMetadata, producer_id: i64, epoch: i16) -> bool {
    m.state.is_prepare()
        && m.client_transaction_version >= TRANSACTION_VERSION_2
        && end_txn_answer_ids(m) == (producer_id, epoch)
}

/// Whether a request of `(producer_id, epoch)` is the next transaction of
/// a version 2 producer whose previous transaction's markers are being
/// written: it will be let in once they are, so the shell may hold it
/// until the completion instead of answering CONCURRENT_TRANSACTIONS at
/// once.
pub fn waits_for_markers(entry: Option<&TxnEntry>, producer_id: i64, epoch: i16) -> bool {
    entry.is_some_and(|e| is_next_identity_during_markers(&e.metadata, producer_id, epoch))
}

/// AddPartitionsToTxn (and AddOffsetsToTxn, which adds the group's
/// `__consumer_offsets` partition): Kafka's `handleAddPartitionsToTransaction`.
/// `client_transaction_version` is 2 when a partition leader adds the
/// partition for a producer on transaction version 2 (KIP-890 part 2's
/// implicit add), else 0; the transaction remembers it, and its markers
/// carry it.
pub fn add_partitions(
    entry: Option<&TxnEntry>,
    producer_id: i64,
    epoch: i16,
    partitions: &BTreeSet<TopicPartition>,
    client_transaction_version: i16,
    now_ms: i64,
) -> Decision {
    if entry.is_some_and(|e| is_next_identity_during_markers(&e.metadata, producer_id, epoch)) {
        return Decision::Answer(error_code::CONCURRENT_TRANSACTIONS);
    }
    let entry = match check_producer(entry, producer_id, epoch) {
        Ok(e) => e,
        Err(code) => return Decision::Answer(code),
    };
    let m = &entry.metadata;
    match m.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort => {
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        }
        TxnState::Ongoing if partitions.is_subset(&m.partitions) => {
            Decision::Answer(error_code::NONE)
        }
        TxnState::Ongoing
        | TxnState::Empty
        | TxnState::CompleteCommit
        | TxnState::CompleteAbort => {
            let mut next = m.clone();
            if m.state != TxnState::Ongoing {
                next.txn_start_timestamp_ms = now_ms;
            }
            next.state = TxnState::Ongoing;
            next.partitions.extend(partitions.iter().cloned());
            next.txn_last_update_timestamp_ms = now_ms;
            next.client_transaction_version = client_transaction_version;
            Decision::Write(next)
        }
        TxnState::Dead | TxnState::PrepareEpochFence => {
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        }
    }
}

/// Whether a partition is in the id's open transaction (KIP-890 part 1's
/// verification, for a partition leader that received the producer's first
/// transactional batch; Kafka's `handleVerifyPartitionsInTransaction`). A
/// pending write does not matter here: nothing is written.
pub fn verify_partition(
    entry: Option<&TxnEntry>,
    producer_id: i64,
    epoch: i16,
    tp: &TopicPartition,
) -> i16 {
    let Some(m) = entry.map(|e| &e.metadata) else {
        return error_code::INVALID_PRODUCER_ID_MAPPING;
    };
    if is_next_identity_during_markers(m, producer_id, epoch) {
        return error_code::CONCURRENT_TRANSACTIONS;
    }
    if m.producer_id != producer_id {
        return error_code::INVALID_PRODUCER_ID_MAPPING;
    }
    if m.producer_epoch != epoch {
        return error_code::PRODUCER_FENCED;
    }
    if m.state.is_prepare() {
        return error_code::CONCURRENT_TRANSACTIONS;
    }
    if m.state == TxnState::Ongoing && m.partitions.contains(tp) {
        error_code::NONE
    } else {
        // The producer writes to a partition it never added: a bug or a
        // late batch of an ended transaction. It must abort.
        error_code::TRANSACTION_ABORTABLE
    }
}

/// EndTxn from a client (Kafka's `handleEndTransaction`): `Write` is the
/// `PrepareCommit` or `PrepareAbort` to write, after which the markers go
/// out. `transaction_version` is the request's (2 from EndTxn v5).
/// `fresh_producer_id`: a newly allocated id, when the previous decision
/// asked for one (version 2 moves to a new id when the epoch runs out).
pub fn end_txn(
    entry: Option<&TxnEntry>,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    transaction_version: i16,
    fresh_producer_id: Option<i64>,
    now_ms: i64,
) -> Decision {
    if transaction_version >= TRANSACTION_VERSION_2 {
        return end_txn_v2(entry, producer_id, epoch, commit, fresh_producer_id, now_ms);
    }
    let entry = match check_producer(entry, producer_id, epoch) {
        Ok(e) => e,
        Err(code) => return Decision::Answer(code),
    };
    let m = &entry.metadata;
    let invalid = Decision::Answer(error_code::INVALID_TXN_STATE);
    match (m.state, commit) {
        (TxnState::Ongoing, _) => {
            let mut next = m.clone();
            next.state = if commit {
                TxnState::PrepareCommit
            } else {
                TxnState::PrepareAbort
            };
            next.txn_last_update_timestamp_ms = now_ms;
            next.client_transaction_version = transaction_version;
            Decision::Write(next)
        }
        // A retry of an EndTxn that completed.
        (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => {
            Decision::Answer(error_code::NONE)
        }
        // While the markers are still being written, Kafka keeps the
        // completion pending: any EndTxn waits (a retry, and an opposite
        // outcome too, which the completed state then refuses).
        (TxnState::PrepareCommit | TxnState::PrepareAbort, _) => {
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        }
        (TxnState::CompleteCommit, false)
        | (TxnState::CompleteAbort, true)
        | (TxnState::Empty, _) => invalid,
        (TxnState::Dead | TxnState::PrepareEpochFence, _) => {
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        }
    }
}

/// EndTxn under transaction version 2 (Kafka's `endTransaction` with a
/// client version that supports the epoch bump). The Prepare write bumps
/// the epoch, and the markers carry the bumped one, so a partition refuses
/// anything the producer sent before it under the old epoch: a delayed
/// EndTxn or produce of this transaction cannot end or join the next one
/// (KAFKA-17754). The client learns the new epoch from the answer; a retry
/// of an EndTxn whose answer was lost comes with the epoch before the bump.
fn end_txn_v2(
    entry: Option<&TxnEntry>,
    producer_id: i64,
    epoch: i16,
    commit: bool,
    fresh_producer_id: Option<i64>,
    now_ms: i64,
) -> Decision {
    let Some(entry) = entry else {
        return Decision::Answer(error_code::INVALID_PRODUCER_ID_MAPPING);
    };
    if entry.pending.is_some() {
        return Decision::Answer(error_code::CONCURRENT_TRANSACTIONS);
    }
    let m = &entry.metadata;
    if is_next_identity_during_markers(m, producer_id, epoch) {
        return Decision::Answer(error_code::CONCURRENT_TRANSACTIONS);
    }
    // The retry of an EndTxn that moved the id to a new producer id.
    let retry_on_overflow =
        m.previous_producer_id == producer_id && epoch == i16::MAX - 1 && m.producer_epoch == 0;
    let retry_on_bump = i32::from(m.producer_epoch) == i32::from(epoch) + 1;
    if producer_id != m.producer_id && !retry_on_overflow {
        return Decision::Answer(error_code::INVALID_PRODUCER_ID_MAPPING);
    }
    let valid_epoch = match m.state {
        TxnState::Ongoing | TxnState::Empty => epoch == m.producer_epoch,
        TxnState::PrepareCommit | TxnState::PrepareAbort => retry_on_bump,
        TxnState::CompleteCommit | TxnState::CompleteAbort => {
            retry_on_bump || retry_on_overflow || epoch == m.producer_epoch
        }
        TxnState::Dead | TxnState::PrepareEpochFence => false,
    };
    if !valid_epoch {
        return Decision::Answer(error_code::PRODUCER_FENCED);
    }
    let retry = retry_on_bump || retry_on_overflow;
    let invalid = Decision::Answer(error_code::INVALID_TXN_STATE);
    let prepare = |commit: bool| prepare_end_v2(m, commit, fresh_producer_id, now_ms);
    match (m.state, commit) {
        (TxnState::Ongoing, _) => prepare(commit),
        // Nothing was produced: an abort still bumps the epoch.
        (TxnState::Empty, false) => prepare(false),
        (TxnState::Empty, true) => invalid,
        (TxnState::CompleteAbort, false) if retry => Decision::Answer(error_code::NONE),
        (TxnState::CompleteCommit, true) if retry => Decision::Answer(error_code::NONE),
        (TxnState::CompleteAbort | TxnState::CompleteCommit, false) if !retry => prepare(false),
        (TxnState::CompleteAbort | TxnState::CompleteCommit, _) => invalid,
        (TxnState::PrepareAbort, false) | (TxnState::PrepareCommit, true) => {
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        }
        (TxnState::PrepareAbort, true) | (TxnState::PrepareCommit, false) => invalid,
        (TxnState::Dead | TxnState::PrepareEpochFence, _) => {
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        }
    }
}

/// The Prepare* of a version 2 EndTxn: the epoch goes up by one; a spent
/// epoch also names the producer id the completion moves to.
fn prepare_end_v2(
    m: &TxnMetadata,
    commit: bool,
    fresh_producer_id: Option<i64>,
    now_ms: i64,
) -> Decision {
    let mut next = m.clone();
    if TxnMetadata::is_epoch_exhausted(m.producer_epoch) && m.next_producer_id < 0 {
        let Some(fresh) = fresh_producer_id else {
            return Decision::NeedProducerId;
        };
        next.next_producer_id = fresh;
    }
    // At the very last epoch (a fencing abort took it) an abort keeps it.
    if m.producer_epoch < i16::MAX {
        next.producer_epoch = m.producer_epoch + 1;
    }
    next.last_producer_epoch = m.producer_epoch;
    next.state = if commit {
        TxnState::PrepareCommit
    } else {
        TxnState::PrepareAbort
    };
    if m.partitions.is_empty() {
        next.txn_start_timestamp_ms = now_ms;
    }
    next.txn_last_update_timestamp_ms = now_ms;
    next.client_transaction_version = TRANSACTION_VERSION_2;
    Decision::Write(next)
}

/// The producer id and epoch an EndTxn v5 answers with: those the client
/// uses next (a new id at epoch 0 when the epoch ran out).
pub fn end_txn_answer_ids(m: &TxnMetadata) -> (i64, i16) {
    if m.next_producer_id >= 0 {
        (m.next_producer_id, 0)
    } else {
        (m.producer_id, m.producer_epoch)
    }
}

/// Every partition acknowledged its marker: the transaction is complete
/// (Kafka's `prepareComplete`).
pub fn complete(m: &TxnMetadata, now_ms: i64) -> TxnMetadata {
    assert!(
        m.state.is_prepare(),
        "completing {} from {:?}",
        m.transactional_id,
        m.state
    );
    let mut next = m.clone();
    next.state = if m.state == TxnState::PrepareCommit {
        TxnState::CompleteCommit
    } else {
        TxnState::CompleteAbort
    };
    next.partitions.clear();
    next.txn_last_update_timestamp_ms = now_ms;
    if m.next_producer_id >= 0 {
        // Version 2 ran out of epochs: the next transaction uses the new id.
        next.previous_producer_id = m.producer_id;
        next.producer_id = m.next_producer_id;
        next.producer_epoch = 0;
        next.next_producer_id = NO_PRODUCER_ID;
    }
    next
}

/// Checks that `next` is a legal successor of `current` (asserted by the
/// shell before every write).
pub fn check_transition(current: &TxnMetadata, next: &TxnMetadata) -> Result<(), String> {
    let same =
        current.state == next.state && matches!(current.state, TxnState::Empty | TxnState::Ongoing);
    if !same && !next.state.valid_previous().contains(&current.state) {
        return Err(format!(
            "{}: {:?} cannot follow {:?}",
            current.transactional_id, next.state, current.state
        ));
    }
    let rotated = next.producer_id != current.producer_id;
    if !rotated && next.producer_epoch < current.producer_epoch {
        return Err(format!(
            "{}: epoch {} would go back from {}",
            current.transactional_id, next.producer_epoch, current.producer_epoch
        ));
    }
    if rotated && next.previous_producer_id != current.producer_id {
        return Err(format!(
            "{}: producer id {} replaced without recording {} as the previous one",
            current.transactional_id, next.producer_id, current.producer_id
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: i32 = 900_000;

    fn tps(names: &[(&str, i32)]) -> BTreeSet<TopicPartition> {
        names
            .iter()
            .map(|(t, p)| TopicPartition::new(t.to_string(), *p))
            .collect()
    }

    /// Applies a written decision as the shell does after replication.
    fn applied(d: Decision) -> TxnEntry {
        match d {
            Decision::Write(m) | Decision::FenceAndAbort(m) => TxnEntry::new(m),
            other => panic!("expected a write, got {other:?}"),
        }
    }

    fn initialised(id: &str) -> TxnEntry {
        assert_eq!(
            init_producer_id(None, id, 60_000, MAX, None, None, 1, 0),
            Decision::NeedProducerId
        );
        applied(init_producer_id(None, id, 60_000, MAX, None, Some(7), 1, 0))
    }

    #[test]
    fn a_transaction_runs_from_init_to_complete_commit() {
        let e = initialised("t");
        assert_eq!((e.metadata.producer_id, e.metadata.producer_epoch), (7, 0));
        assert_eq!(e.metadata.state, TxnState::Empty);
        let added = applied(add_partitions(
            Some(&e),
            7,
            0,
            &tps(&[("a", 0), ("b", 1)]),
            0,
            10,
        ));
        assert_eq!(added.metadata.state, TxnState::Ongoing);
        assert_eq!(added.metadata.txn_start_timestamp_ms, 10);
        // Adding what is there already writes nothing.
        assert_eq!(
            add_partitions(Some(&added), 7, 0, &tps(&[("a", 0)]), 0, 11),
            Decision::Answer(error_code::NONE)
        );
        let more = applied(add_partitions(Some(&added), 7, 0, &tps(&[("c", 0)]), 0, 12));
        assert_eq!(more.metadata.partitions.len(), 3);
        assert_eq!(more.metadata.txn_start_timestamp_ms, 10, "the start stays");
        let prepared = applied(end_txn(Some(&more), 7, 0, true, 0, None, 20));
        assert_eq!(prepared.metadata.state, TxnState::PrepareCommit);
        assert_eq!(
            end_txn(Some(&prepared), 7, 0, true, 0, None, 21),
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS),
            "a retry while markers are written"
        );
        assert_eq!(
            end_txn(Some(&prepared), 7, 0, false, 0, None, 21),
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS),
            "the opposite outcome waits for the completion too"
        );
        let done = TxnEntry::new(complete(&prepared.metadata, 30));
        assert_eq!(done.metadata.state, TxnState::CompleteCommit);
        assert!(done.metadata.partitions.is_empty());
        assert_eq!(
            end_txn(Some(&done), 7, 0, true, 0, None, 31),
            Decision::Answer(error_code::NONE)
        );
        assert_eq!(
            end_txn(Some(&done), 7, 0, false, 0, None, 31),
            Decision::Answer(error_code::INVALID_TXN_STATE)
        );
        for pair in [
            (&e, &added),
            (&added, &more),
            (&more, &prepared),
            (&prepared, &done),
        ] {
            check_transition(&pair.0.metadata, &pair.1.metadata).unwrap();
        }
    }

    #[test]
    fn stale_producers_and_pending_writes_are_refused() {
        let e = initialised("t");
        let one = tps(&[("a", 0)]);
        assert_eq!(
            add_partitions(Some(&e), 8, 0, &one, 0, 1),
            Decision::Answer(error_code::INVALID_PRODUCER_ID_MAPPING)
        );
        assert_eq!(
            add_partitions(Some(&e), 7, 1, &one, 0, 1),
            Decision::Answer(error_code::PRODUCER_FENCED)
        );
        assert_eq!(
            add_partitions(None, 7, 0, &one, 0, 1),
            Decision::Answer(error_code::INVALID_PRODUCER_ID_MAPPING)
        );
        let mut pending = e.clone();
        pending.pending = Some(TxnState::Ongoing);
        assert_eq!(
            add_partitions(Some(&pending), 7, 0, &one, 0, 1),
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        );
        assert_eq!(
            end_txn(Some(&e), 7, 0, true, 0, None, 1),
            Decision::Answer(error_code::INVALID_TXN_STATE),
            "nothing to end"
        );
        assert_eq!(
            init_producer_id(Some(&e), "t", MAX + 1, MAX, None, None, 1, 1),
            Decision::Answer(error_code::INVALID_TRANSACTION_TIMEOUT)
        );
    }

    #[test]
    fn a_new_instance_fences_an_open_transaction_by_aborting_it_under_a_new_epoch() {
        let e = initialised("t");
        let open = applied(add_partitions(Some(&e), 7, 0, &tps(&[("a", 0)]), 0, 1));
        let fenced = init_producer_id(Some(&open), "t", 60_000, MAX, None, None, 1, 5);
        let Decision::FenceAndAbort(abort) = fenced else {
            panic!("{fenced:?}")
        };
        assert_eq!(
            (abort.state, abort.producer_epoch),
            (TxnState::PrepareAbort, 1)
        );
        assert_eq!(
            abort.partitions, open.metadata.partitions,
            "markers go to every partition"
        );
        check_transition(&open.metadata, &abort).unwrap();
        // The old instance is fenced from here on.
        let aborting = TxnEntry::new(abort);
        assert_eq!(
            end_txn(Some(&aborting), 7, 0, true, 0, None, 6),
            Decision::Answer(error_code::PRODUCER_FENCED)
        );
        assert_eq!(
            init_producer_id(Some(&aborting), "t", 60_000, MAX, None, None, 1, 6),
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS),
            "the new instance retries until the abort completes"
        );
        let aborted = TxnEntry::new(complete(&aborting.metadata, 7));
        let fresh = applied(init_producer_id(
            Some(&aborted),
            "t",
            60_000,
            MAX,
            None,
            None,
            1,
            8,
        ));
        assert_eq!(
            (fresh.metadata.producer_id, fresh.metadata.producer_epoch),
            (7, 2)
        );
    }

    #[test]
    fn kip_360_retries_get_the_same_epoch_and_strangers_are_fenced() {
        let e = initialised("t"); // epoch 0
        let bumped = applied(init_producer_id(
            Some(&e),
            "t",
            60_000,
            MAX,
            Some((7, 0)),
            None,
            1,
            1,
        ));
        assert_eq!(
            (
                bumped.metadata.producer_epoch,
                bumped.metadata.last_producer_epoch
            ),
            (1, 0)
        );
        // The same request again (its answer was lost): the same epoch.
        let again = applied(init_producer_id(
            Some(&bumped),
            "t",
            60_000,
            MAX,
            Some((7, 0)),
            None,
            1,
            2,
        ));
        assert_eq!(again.metadata.producer_epoch, 1);
        assert_eq!(
            init_producer_id(Some(&bumped), "t", 60_000, MAX, Some((99, 0)), None, 1, 2),
            Decision::Answer(error_code::PRODUCER_FENCED)
        );
        assert_eq!(
            init_producer_id(Some(&bumped), "t", 60_000, MAX, Some((7, 5)), None, 1, 2),
            Decision::Answer(error_code::PRODUCER_FENCED)
        );
    }

    #[test]
    fn a_spent_epoch_moves_to_a_new_producer_id() {
        let mut e = initialised("t");
        e.metadata.producer_epoch = i16::MAX - 1;
        assert_eq!(
            init_producer_id(Some(&e), "t", 60_000, MAX, None, None, 1, 1),
            Decision::NeedProducerId
        );
        let rotated = applied(init_producer_id(
            Some(&e),
            "t",
            60_000,
            MAX,
            None,
            Some(8),
            1,
            1,
        ));
        assert_eq!(
            (
                rotated.metadata.producer_id,
                rotated.metadata.producer_epoch,
                rotated.metadata.previous_producer_id
            ),
            (8, 0, 7)
        );
        check_transition(&e.metadata, &rotated.metadata).unwrap();
    }

    #[test]
    fn state_ids_and_names_round_trip() {
        for s in TxnState::ALL {
            assert_eq!(TxnState::from_id(s.id()), Some(s));
            assert_eq!(TxnState::from_name(s.name()), Some(s));
        }
        assert_eq!(TxnState::from_id(8), None);
    }

    #[test]
    fn timeouts_count_from_the_transactions_start() {
        let e = initialised("t");
        let open = applied(add_partitions(Some(&e), 7, 0, &tps(&[("a", 0)]), 0, 1_000));
        assert!(!open.metadata.has_timed_out(61_000));
        assert!(open.metadata.has_timed_out(61_001));
        assert!(!e.metadata.has_timed_out(i64::MAX), "nothing open");
    }

    /// Transaction version 2: every EndTxn bumps the epoch, so a delayed
    /// EndTxn of a finished transaction cannot end the next (KAFKA-17754).
    #[test]
    fn version_2_bumps_the_epoch_at_every_end_and_fences_a_delayed_end_txn() {
        let e = initialised("t");
        let open = applied(add_partitions(Some(&e), 7, 0, &tps(&[("a", 0)]), 2, 1));
        assert_eq!(open.metadata.client_transaction_version, 2);
        let prepared = applied(end_txn(Some(&open), 7, 0, true, 2, None, 2));
        assert_eq!(
            (prepared.metadata.state, prepared.metadata.producer_epoch),
            (TxnState::PrepareCommit, 1)
        );
        assert_eq!(end_txn_answer_ids(&prepared.metadata), (7, 1));
        check_transition(&open.metadata, &prepared.metadata).unwrap();
        // The client begins its next transaction before the markers are
        // written: under the epoch it was answered with, it waits.
        for commit in [true, false] {
            assert_eq!(
                end_txn(Some(&prepared), 7, 1, commit, 2, None, 3),
                Decision::Answer(error_code::CONCURRENT_TRANSACTIONS),
                "the next transaction's EndTxn (commit={commit})"
            );
        }
        assert_eq!(
            add_partitions(Some(&prepared), 7, 1, &tps(&[("b", 0)]), 2, 3),
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        );
        assert_eq!(
            verify_partition(
                Some(&prepared),
                7,
                1,
                &TopicPartition::new("b".to_string(), 0)
            ),
            error_code::CONCURRENT_TRANSACTIONS
        );
        assert_eq!(
            end_txn(Some(&prepared), 7, 2, true, 2, None, 3),
            Decision::Answer(error_code::PRODUCER_FENCED),
            "an epoch nobody was given"
        );
        // The shell may hold those until the completion; not the others.
        assert!(waits_for_markers(Some(&prepared), 7, 1));
        assert!(!waits_for_markers(Some(&prepared), 7, 0), "a retry");
        assert!(!waits_for_markers(Some(&open), 7, 0), "nothing to wait for");
        assert_eq!(
            end_txn(Some(&prepared), 7, 0, true, 2, None, 3),
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS),
            "a retry (old epoch) while the markers are written"
        );
        let done = TxnEntry::new(complete(&prepared.metadata, 4));
        assert_eq!(
            end_txn(Some(&done), 7, 0, true, 2, None, 5),
            Decision::Answer(error_code::NONE),
            "a retry after the completion"
        );
        assert_eq!(
            end_txn(Some(&done), 7, 0, false, 2, None, 5),
            Decision::Answer(error_code::INVALID_TXN_STATE),
            "an abort retried with the old epoch cannot undo the commit"
        );
        // The next transaction, under the new epoch.
        let next = applied(add_partitions(Some(&done), 7, 1, &tps(&[("b", 0)]), 2, 6));
        assert_eq!(next.metadata.state, TxnState::Ongoing);
        assert_eq!(
            end_txn(Some(&next), 7, 0, false, 2, None, 7),
            Decision::Answer(error_code::PRODUCER_FENCED),
            "the delayed EndTxn of the first transaction"
        );
        assert_eq!(
            add_partitions(Some(&next), 7, 0, &tps(&[("c", 0)]), 2, 7),
            Decision::Answer(error_code::PRODUCER_FENCED),
            "a delayed produce of the first transaction"
        );
        // An abort with nothing open still bumps the epoch.
        let idle = TxnEntry::new(complete(
            &applied(end_txn(Some(&next), 7, 1, false, 2, None, 8)).metadata,
            9,
        ));
        let empty_abort = applied(end_txn(Some(&idle), 7, 2, false, 2, None, 10));
        assert_eq!(
            (
                empty_abort.metadata.state,
                empty_abort.metadata.producer_epoch
            ),
            (TxnState::PrepareAbort, 3)
        );
        check_transition(&idle.metadata, &empty_abort.metadata).unwrap();
    }

    #[test]
    fn version_2_moves_to_a_new_producer_id_when_the_epoch_runs_out() {
        let mut e = initialised("t");
        e.metadata.producer_epoch = i16::MAX - 1;
        let open = applied(add_partitions(
            Some(&e),
            7,
            i16::MAX - 1,
            &tps(&[("a", 0)]),
            2,
            1,
        ));
        assert_eq!(
            end_txn(Some(&open), 7, i16::MAX - 1, true, 2, None, 2),
            Decision::NeedProducerId
        );
        let prepared = applied(end_txn(Some(&open), 7, i16::MAX - 1, true, 2, Some(9), 2));
        assert_eq!(
            prepared.metadata.producer_epoch,
            i16::MAX,
            "markers carry it"
        );
        assert_eq!(end_txn_answer_ids(&prepared.metadata), (9, 0));
        // The new producer id's first transaction waits for the markers of
        // the last one under the old id.
        assert_eq!(
            add_partitions(Some(&prepared), 9, 0, &tps(&[("b", 0)]), 2, 3),
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        );
        assert_eq!(
            end_txn(Some(&prepared), 9, 0, false, 2, None, 3),
            Decision::Answer(error_code::CONCURRENT_TRANSACTIONS)
        );
        assert_eq!(
            add_partitions(Some(&prepared), 9, 1, &tps(&[("b", 0)]), 2, 3),
            Decision::Answer(error_code::INVALID_PRODUCER_ID_MAPPING)
        );
        let done = complete(&prepared.metadata, 3);
        assert_eq!(
            (
                done.producer_id,
                done.producer_epoch,
                done.previous_producer_id
            ),
            (9, 0, 7)
        );
        check_transition(&prepared.metadata, &done).unwrap();
        let done = TxnEntry::new(done);
        assert_eq!(
            end_txn(Some(&done), 7, i16::MAX - 1, true, 2, None, 4),
            Decision::Answer(error_code::NONE),
            "a retry under the old id is recognised"
        );
    }

    /// Version 2: a timeout (or new-instance) abort from a spent epoch
    /// moves the id to a new producer id, so the producer whose retried
    /// EndTxn(abort) is answered never runs at the last epoch.
    #[test]
    fn version_2_fence_from_a_spent_epoch_moves_to_a_new_producer_id() {
        let mut e = initialised("t");
        e.metadata.producer_epoch = i16::MAX - 1;
        let open = applied(add_partitions(
            Some(&e),
            7,
            i16::MAX - 1,
            &tps(&[("a", 0)]),
            2,
            1,
        ));
        assert_eq!(
            fence_and_abort(&open.metadata, 2, None, 2),
            Decision::NeedProducerId
        );
        let Decision::FenceAndAbort(abort) = fence_and_abort(&open.metadata, 2, Some(9), 2) else {
            panic!("a fencing abort")
        };
        assert_eq!(
            (
                abort.producer_id,
                abort.producer_epoch,
                abort.next_producer_id
            ),
            (7, i16::MAX, 9),
            "the markers fence the old id at the last epoch"
        );
        check_transition(&open.metadata, &abort).unwrap();
        let done = complete(&abort, 3);
        assert_eq!((done.producer_id, done.producer_epoch), (9, 0));
        check_transition(&abort, &done).unwrap();
        let done = TxnEntry::new(done);
        // The timed-out producer aborts (its retry of the abort): it is told
        // the new id, not the last epoch.
        assert_eq!(
            end_txn(Some(&done), 7, i16::MAX - 1, false, 2, None, 4),
            Decision::Answer(error_code::NONE)
        );
        assert_eq!(end_txn_answer_ids(&done.metadata), (9, 0));
        // Version 1 keeps the id: its producers move on at InitProducerId.
        assert!(matches!(
            fence_and_abort(&open.metadata, 1, None, 2),
            Decision::FenceAndAbort(m) if m.producer_id == 7 && m.next_producer_id < 0
        ));
    }

    #[test]
    fn verification_answers_per_partition() {
        let e = initialised("t");
        let open = applied(add_partitions(Some(&e), 7, 0, &tps(&[("a", 0)]), 0, 1));
        let a = TopicPartition::new("a".to_string(), 0);
        let b = TopicPartition::new("b".to_string(), 0);
        assert_eq!(verify_partition(Some(&open), 7, 0, &a), error_code::NONE);
        assert_eq!(
            verify_partition(Some(&open), 7, 0, &b),
            error_code::TRANSACTION_ABORTABLE
        );
        assert_eq!(
            verify_partition(Some(&open), 7, 1, &a),
            error_code::PRODUCER_FENCED
        );
        assert_eq!(
            verify_partition(Some(&open), 8, 0, &a),
            error_code::INVALID_PRODUCER_ID_MAPPING
        );
        let prepared = applied(end_txn(Some(&open), 7, 0, true, 0, None, 2));
        assert_eq!(
            verify_partition(Some(&prepared), 7, 0, &a),
            error_code::CONCURRENT_TRANSACTIONS
        );
    }
}
