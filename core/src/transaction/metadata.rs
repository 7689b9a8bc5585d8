//! A transactional id's state at its coordinator (Kafka's
//! `TransactionMetadata` and `TransactionState`), and the state machine's
//! legal transitions.
//!
//! ```text
//!            InitProducerId                AddPartitions / AddOffsets
//!  (new) ─────────────────> Empty ─────────────────────────────> Ongoing
//!                             ^                                   │ EndTxn
//!                             │ InitProducerId      ┌─────────────┴──────────┐
//!                             │ (epoch + 1)         v                        v
//!            CompleteCommit / CompleteAbort <── PrepareCommit       PrepareAbort
//!                             (all markers written)                (also: timeout,
//!                                                                   fencing)
//! ```
//!
//! Every transition is written to `__transaction_state` and replicated
//! before it takes effect; while it is in flight the id has a *pending*
//! state and every other request for it gets CONCURRENT_TRANSACTIONS.
//! `PrepareEpochFence` is Kafka's in-memory marker for a fencing abort; it
//! is never written, and pinlog goes straight to `PrepareAbort` with the
//! bumped epoch instead.

use std::collections::BTreeSet;

use crate::topic_partition::TopicPartition;

/// Kafka's `RecordBatch.NO_PRODUCER_ID`.
pub const NO_PRODUCER_ID: i64 = -1;
/// Kafka's `RecordBatch.NO_PRODUCER_EPOCH`.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// KIP-890 part 2's transaction version: the epoch is bumped at every
/// EndTxn, and markers must carry a newer epoch than the data.
pub const TRANSACTION_VERSION_2: i16 = 2;

/// Kafka's `TransactionState`, with its ids in the transaction log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    Dead,
    PrepareEpochFence,
}

impl TxnState {
    pub const ALL: [TxnState; 8] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
        TxnState::Dead,
        TxnState::PrepareEpochFence,
    ];

    /// The byte that stands for it in a `__transaction_state` value.
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    pub fn from_id(id: i8) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|s| s.id() == id)
    }

    /// Kafka's name, as DescribeTransactions and ListTransactions report it.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    pub fn from_name(name: &str) -> Option<TxnState> {
        TxnState::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }

    /// The states a transition to this one may start from (Kafka's
    /// `validPreviousStates`).
    pub fn valid_previous(self) -> &'static [TxnState] {
        use TxnState::*;
        match self {
            Empty => &[Empty, CompleteCommit, CompleteAbort],
            Ongoing => &[Ongoing, Empty, CompleteCommit, CompleteAbort],
            PrepareCommit => &[Ongoing],
            // Version 2 may abort with nothing open, to bump the epoch.
            PrepareAbort => &[
                Ongoing,
                PrepareEpochFence,
                Empty,
                CompleteCommit,
                CompleteAbort,
            ],
            CompleteCommit => &[PrepareCommit],
            CompleteAbort => &[PrepareAbort],
            Dead => &[Empty, CompleteAbort, CompleteCommit],
            PrepareEpochFence => &[Ongoing],
        }
    }

    /// Whether markers are being written: the outcome is decided.
    pub fn is_prepare(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }

    /// Whether the id holds no open transaction.
    pub fn is_idle(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }
}

/// What the coordinator knows of one transactional id; also the content of
/// its `__transaction_state` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    pub transactional_id: String,
    pub producer_id: i64,
    /// The id before the last rotation (epoch exhaustion), so that a retry
    /// of the InitProducerId that rotated it is recognised.
    pub previous_producer_id: i64,
    /// The id the next rotation moves to, once chosen (transaction version 2).
    pub next_producer_id: i64,
    pub producer_epoch: i16,
    /// The epoch before the last bump from InitProducerId, so that a retry
    /// of it gets the same answer (KIP-360).
    pub last_producer_epoch: i16,
    pub txn_timeout_ms: i32,
    pub state: TxnState,
    /// The partitions of the open transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// When the open transaction started; -1 when none.
    pub txn_start_timestamp_ms: i64,
    pub txn_last_update_timestamp_ms: i64,
    /// The transaction version the client uses (1 or 2; 0 before KIP-890).
    pub client_transaction_version: i16,
}

impl TxnMetadata {
    /// A new id: no epoch yet, so InitProducerId's bump makes it 0.
    pub fn new(
        transactional_id: String,
        producer_id: i64,
        txn_timeout_ms: i32,
        now_ms: i64,
    ) -> Self {
        TxnMetadata {
            transactional_id,
            producer_id,
            previous_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            txn_start_timestamp_ms: -1,
            txn_last_update_timestamp_ms: now_ms,
            client_transaction_version: 0,
        }
    }

    /// Whether the epoch cannot be bumped again: the next bump moves to a
    /// new producer id (Kafka's `isEpochExhausted`, which keeps one epoch
    /// in reserve for the fencing abort).
    pub fn is_epoch_exhausted(epoch: i16) -> bool {
        epoch >= i16::MAX - 1
    }

    /// Whether the open transaction has outlived its timeout.
    pub fn has_timed_out(&self, now_ms: i64) -> bool {
        self.state == TxnState::Ongoing
            && self.txn_start_timestamp_ms >= 0
            && now_ms.saturating_sub(self.txn_start_timestamp_ms) > i64::from(self.txn_timeout_ms)
    }
}
