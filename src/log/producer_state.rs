//! Idempotent-producer state of one partition: Kafka's
//! `ProducerStateManager`, `ProducerAppendInfo` and `ProducerStateEntry`.
//!
//! For every producer id seen in the log it remembers the producer epoch and
//! the sequence and offset ranges of the producer's last
//! [`NUM_BATCHES_TO_RETAIN`] batches. The leader checks each new batch against
//! it before anything is written:
//!
//! - an epoch older than the producer's current one is a zombie instance that
//!   a newer one fenced: [`LogError::InvalidProducerEpoch`];
//! - a batch equal (epoch, first and last sequence) to a retained one is a
//!   retry of a batch already in the log: the append writes nothing and
//!   answers with the original offsets;
//! - a sequence that does not continue the producer's last batch (or, in a new
//!   epoch, does not start at 0) means a batch was lost or reordered:
//!   [`LogError::OutOfOrderSequence`].
//!
//! Followers and log recovery apply batches without checks: the leader
//! already checked them.
//!
//! The state survives restarts in **snapshot files** of Kafka's format,
//! `<20-digit offset>.snapshot` in the partition directory, each holding the
//! state as of (exclusive) its offset. As in Kafka one is written whenever a
//! segment rolls (named after the new segment's base offset) and on a clean
//! close (named after the LEO). On open and after a truncation the state is
//! rebuilt from the latest snapshot at or below the LEO, then by replaying the
//! batch *headers* from the snapshot's offset to the LEO; the records are
//! never read. Snapshots are deleted with their segments, when they lie past
//! the LEO, and beyond [`SNAPSHOTS_RETAINED_MAX`].
//!
//! Like Kafka's format, a snapshot keeps only each producer's *last* batch, so
//! after a restart from a snapshot a retry is recognised as a duplicate only
//! if it is the producer's last batch (or one replayed after the snapshot).
//! Producers that wrote nothing for `producer.id.expiration.ms` are forgotten
//! lazily, checked at most every [`EXPIRATION_CHECK_INTERVAL_MS`].
//!
//! **Transactions.** A producer's first transactional batch opens its
//! transaction on the partition, and the COMMIT or ABORT marker the
//! coordinator writes ends it; [`PartitionTxns`] (a pure core in
//! `core/src/transaction/partition.rs`) derives the last stable offset from
//! the open ones, and an aborted one yields the [`AbortedTxn`] entry the log
//! writes to its `.txnindex`. The leader refuses a plain batch from a
//! producer whose transaction is open (INVALID_TXN_STATE), and a marker from
//! an older producer epoch or an older coordinator than the last one seen.
//! Snapshots carry each producer's coordinator epoch and open transaction,
//! so the open ones come back with the state.
//!
//! The checking and applying half ([`ProducerStateManager::check_leader_append`],
//! [`ProducerStateManager::apply`]) is pure; the snapshot files are read and
//! written on glommio's blocking pool, and listed only when a partition opens.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use crate::constants::{READ_SCAN_CHUNK_BYTES, RECORD_BATCH_HEADER_SIZE};
use crate::error::{BatchError, LogError, LogResult};
use crate::log::batch::{self, BatchHeader};
use crate::log::checkpoint;
use crate::log::control_batch;
use crate::log::segment::{parse_segment_file_name, segment_file_path, Segment};
use crate::topic_partition::TopicPartition;
use crate::transaction::marker::TxnMarker;
use crate::transaction::partition::{AbortedTxn, CompletedTxn, PartitionTxns};

/// The markers among a group of batches, by the marker batch's offset.
/// Batches are applied by their headers alone; a control batch's outcome
/// (COMMIT or ABORT) is in its record, which the caller decodes.
pub type MarkersByOffset = BTreeMap<i64, TxnMarker>;

/// Batches remembered per producer for duplicate detection: Kafka's
/// `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`, which matches the producer's
/// `max.in.flight.requests.per.connection` limit for idempotence.
pub const NUM_BATCHES_TO_RETAIN: usize = 5;
/// Kafka's `producer.id.expiration.ms` default: one day.
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;
/// How often expired producers are looked for: Kafka's
/// `producer.id.expiration.check.interval.ms` default, ten minutes.
pub const EXPIRATION_CHECK_INTERVAL_MS: i64 = 600_000;
/// Snapshot files kept per partition. Kafka keeps one per segment; pinlog
/// also bounds the count, because only the newest snapshots are ever loaded:
/// a truncation below the oldest kept one replays from the first segment
/// instead, which is slower but equally correct.
pub const SNAPSHOTS_RETAINED_MAX: usize = 8;
/// Suffix of snapshot files, as Kafka's `LogFileUtils.PRODUCER_SNAPSHOT_FILE_SUFFIX`.
pub const SNAPSHOT_FILE_SUFFIX: &str = "snapshot";
/// The only snapshot format version Kafka has written.
pub const SNAPSHOT_VERSION: i16 = 1;

/// Kafka's `RecordBatch.NO_PRODUCER_EPOCH`: a producer not seen yet.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Kafka's `RecordBatch.NO_SEQUENCE`.
pub const NO_SEQUENCE: i32 = -1;

/// Snapshot header: version (i16) and CRC (u32).
const SNAPSHOT_HEADER_BYTES: usize = 2 + 4;
/// Where the CRC-covered part of a snapshot starts: the entry count.
const SNAPSHOT_CRC_FROM: usize = SNAPSHOT_HEADER_BYTES;
/// One snapshot entry: producer id (i64), epoch (i16), last sequence (i32),
/// last offset (i64), offset delta (i32), timestamp (i64), coordinator epoch
/// (i32), current transaction's first offset (i64).
const SNAPSHOT_ENTRY_BYTES: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

const _: () = assert!(NUM_BATCHES_TO_RETAIN >= 1);
const _: () = assert!(SNAPSHOTS_RETAINED_MAX >= 1);
const _: () = assert!(EXPIRATION_CHECK_INTERVAL_MS <= DEFAULT_PRODUCER_ID_EXPIRATION_MS);

/// `sequence + increment` modulo 2^31, as Kafka's
/// `DefaultRecordBatch.incrementSequence`: sequences wrap from `i32::MAX` to 0.
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    (sequence as i64 + increment as i64).rem_euclid(i32::MAX as i64 + 1) as i32
}

/// `sequence - decrement` modulo 2^31, as Kafka's
/// `DefaultRecordBatch.decrementSequence`.
pub fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    (sequence as i64 - decrement as i64).rem_euclid(i32::MAX as i64 + 1) as i32
}

/// Sequence of the last record of a batch (Kafka's `lastSequence`).
pub fn last_sequence(h: &BatchHeader) -> i32 {
    if h.base_sequence == NO_SEQUENCE {
        return NO_SEQUENCE;
    }
    increment_sequence(h.base_sequence, h.last_offset_delta)
}

/// Whether `next` directly follows `last` (Kafka's `inSequence`).
fn in_sequence(last: i32, next: i32) -> bool {
    next as i64 == last as i64 + 1 || (next == 0 && last == i32::MAX)
}

/// The sequence that must follow `last`.
fn next_sequence(last: i32) -> i32 {
    if last == i32::MAX {
        0
    } else {
        last + 1
    }
}

/// One batch a producer wrote, as far as duplicate detection needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
}

impl BatchMetadata {
    /// The metadata of the batch `h` describes.
    pub fn of(h: &BatchHeader) -> Self {
        BatchMetadata {
            first_seq: h.base_sequence,
            last_seq: last_sequence(h),
            first_offset: h.base_offset,
            last_offset: h.last_offset(),
            max_timestamp: h.max_timestamp,
        }
    }
}

/// What the log knows about one producer id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerStateEntry {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Epoch of the transaction coordinator whose marker this producer saw
    /// last; -1 before any. An older coordinator's marker is refused.
    pub coordinator_epoch: i32,
    /// Max timestamp of the producer's last batch: what expiry measures from.
    pub last_timestamp: i64,
    /// First offset of the producer's open transaction here; -1 when none.
    pub current_txn_first_offset: i64,
    /// The newest batches of the current epoch, oldest first; at most
    /// [`NUM_BATCHES_TO_RETAIN`].
    batches: VecDeque<BatchMetadata>,
}

impl ProducerStateEntry {
    fn empty(producer_id: i64) -> Self {
        ProducerStateEntry {
            producer_id,
            producer_epoch: NO_PRODUCER_EPOCH,
            coordinator_epoch: -1,
            last_timestamp: -1,
            current_txn_first_offset: -1,
            batches: VecDeque::with_capacity(NUM_BATCHES_TO_RETAIN),
        }
    }

    /// The retained batches, oldest first.
    pub fn batches(&self) -> impl Iterator<Item = &BatchMetadata> {
        self.batches.iter()
    }

    pub fn last_batch(&self) -> Option<&BatchMetadata> {
        self.batches.back()
    }

    /// Sequence of the producer's last record, or [`NO_SEQUENCE`].
    pub fn last_seq(&self) -> i32 {
        self.last_batch().map_or(NO_SEQUENCE, |b| b.last_seq)
    }

    /// The retained batch that `h` repeats, if any (Kafka's
    /// `findDuplicateBatch`): same epoch and the same sequence range.
    pub fn find_duplicate(&self, h: &BatchHeader) -> Option<BatchMetadata> {
        if h.producer_epoch != self.producer_epoch {
            return None;
        }
        let last_seq = last_sequence(h);
        self.batches
            .iter()
            .find(|b| b.first_seq == h.base_sequence && b.last_seq == last_seq)
            .copied()
    }

    /// A new epoch starts with no batches: sequences restart at 0.
    fn maybe_update_epoch(&mut self, epoch: i16) {
        if self.producer_epoch != epoch {
            self.batches.clear();
            self.producer_epoch = epoch;
        }
    }

    fn add_batch(&mut self, epoch: i16, batch: BatchMetadata) {
        self.maybe_update_epoch(epoch);
        if self.batches.len() == NUM_BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.batches.push_back(batch);
        self.last_timestamp = batch.max_timestamp;
        assert!(self.batches.len() <= NUM_BATCHES_TO_RETAIN);
    }
}

/// A partition leader's proof that it verified a producer's transaction
/// with the coordinator (KIP-890 part 1): handed out when verification
/// starts, and valid for the append only if nothing ended the producer's
/// transaction here in between (a marker drops it). Kafka's
/// `VerificationGuard`; unique per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerificationGuard(u64);

impl VerificationGuard {
    fn next() -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        VerificationGuard(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// How a client append's transactional batches were verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TxnVerification {
    /// Not asked (`transaction.partition.verification.enable=false` for a
    /// version 1 producer, or an append of no transactional batch).
    #[default]
    Off,
    /// A transactional batch that does not continue an open transaction of
    /// its producer here needs this guard to be the producer's current one;
    /// `None` when the producer's transaction was open at the check.
    On(Option<VerificationGuard>),
}

/// What a leader must do before a producer's transactional batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerificationNeed {
    /// The producer's transaction is open here under this epoch.
    Ongoing,
    /// Ask the coordinator, then append with this guard.
    Verify(VerificationGuard),
}

/// A verification in progress for one producer (Kafka's
/// `VerificationStateEntry`). Leader memory only: a new leader verifies
/// again.
#[derive(Debug, Clone, Copy)]
struct VerificationState {
    guard: VerificationGuard,
    epoch: i16,
    /// Transaction version 2: its markers carry the epoch the next
    /// transaction starts with, so a marker of that epoch keeps the guard.
    supports_epoch_bump: bool,
    created_ms: i64,
}

/// The outcome of checking a leader append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaderAppendCheck {
    /// Every producer batch continues its producer's sequence: append it.
    Append,
    /// Every batch was appended before. Nothing must be written; the caller
    /// answers with these offsets, which span the original batches.
    Duplicate {
        first_offset: i64,
        last_offset: i64,
        max_timestamp: i64,
    },
}

/// One producer's view while a leader append is checked: the committed
/// state plus the batches of this append checked so far, as Kafka's
/// `ProducerAppendInfo` keeps it.
struct PendingProducer {
    /// Epoch of the committed entry; [`NO_PRODUCER_EPOCH`] for a new producer.
    committed_epoch: i16,
    /// Last sequence of the committed entry; [`NO_SEQUENCE`] if it has none.
    committed_last_seq: i32,
    /// Epoch after the batches of this append checked so far.
    epoch: i16,
    /// Last sequence among this append's batches under `epoch`.
    appended_last_seq: Option<i32>,
    /// Whether the producer has an open transaction here, counting the
    /// transactional batches of this append checked so far.
    txn_open: bool,
}

impl PendingProducer {
    fn new(committed: Option<&ProducerStateEntry>) -> Self {
        let committed_epoch = committed.map_or(NO_PRODUCER_EPOCH, |e| e.producer_epoch);
        PendingProducer {
            committed_epoch,
            committed_last_seq: committed.map_or(NO_SEQUENCE, |e| e.last_seq()),
            epoch: committed_epoch,
            appended_last_seq: None,
            txn_open: committed.is_some_and(|e| e.current_txn_first_offset >= 0),
        }
    }

    /// Kafka's `checkProducerEpoch` and `checkSequence` for one batch, then
    /// records it as appended. `Err` carries the variant-specific fields.
    fn check(&mut self, h: &BatchHeader) -> Result<(), PendingError> {
        if h.producer_epoch < self.epoch {
            return Err(PendingError::Epoch {
                current_epoch: self.epoch,
            });
        }
        if !h.is_control() {
            let first_seq = h.base_sequence;
            if h.producer_epoch != self.epoch {
                // A bumped epoch restarts sequences at 0. A producer never seen
                // before (its state expired or was never here) may start
                // anywhere, as in Kafka.
                if first_seq != 0 && self.epoch != NO_PRODUCER_EPOCH {
                    return Err(PendingError::Sequence { expected: 0 });
                }
            } else {
                let current_last = match self.appended_last_seq {
                    Some(seq) => seq,
                    None if h.producer_epoch == self.committed_epoch => self.committed_last_seq,
                    None => NO_SEQUENCE,
                };
                // Kafka accepts any sequence when there is no committed epoch,
                // e.g. after retention deleted all of a producer's batches.
                if self.committed_epoch != NO_PRODUCER_EPOCH
                    && !in_sequence(current_last, first_seq)
                {
                    return Err(PendingError::Sequence {
                        expected: next_sequence(current_last),
                    });
                }
            }
        }
        if !h.is_control() && !h.is_transactional() && self.txn_open {
            // Kafka's appendDataBatch: a plain write inside an open
            // transaction would be neither committed nor aborted with it.
            return Err(PendingError::TxnState);
        }
        if h.producer_epoch != self.epoch {
            self.epoch = h.producer_epoch;
            self.appended_last_seq = None;
        }
        if !h.is_control() {
            self.appended_last_seq = Some(last_sequence(h));
            self.txn_open |= h.is_transactional();
        }
        Ok(())
    }
}

enum PendingError {
    Epoch { current_epoch: i16 },
    Sequence { expected: i32 },
    TxnState,
}

/// The idempotent-producer state of one partition and the snapshot files
/// that persist it.
#[derive(Debug, Clone)]
pub struct ProducerStateManager {
    /// Ordered so that snapshots are written deterministically.
    producers: BTreeMap<i64, ProducerStateEntry>,
    /// Offsets of the snapshot files in the partition directory.
    snapshots: BTreeSet<i64>,
    /// `producer.id.expiration.ms`.
    expiration_ms: i64,
    /// When expired producers were last removed.
    last_expiry_check_ms: Option<i64>,
    /// Open and unreplicated transactions: what the LSO derives from.
    txns: PartitionTxns,
    /// Verifications in progress, by producer id; not persisted.
    verifications: BTreeMap<i64, VerificationState>,
}

impl ProducerStateManager {
    /// An empty state that knows of no snapshot files.
    pub fn new(expiration_ms: i64) -> Self {
        ProducerStateManager {
            producers: BTreeMap::new(),
            snapshots: BTreeSet::new(),
            expiration_ms,
            last_expiry_check_ms: None,
            txns: PartitionTxns::new(),
            verifications: BTreeMap::new(),
        }
    }

    /// An empty state that knows the snapshot files in `dir`. Lists the
    /// directory with a blocking call, so only when a partition opens.
    pub fn open(dir: &Path, expiration_ms: i64) -> LogResult<Self> {
        let mut state = ProducerStateManager::new(expiration_ms);
        state.snapshots = list_snapshot_offsets(dir)?;
        Ok(state)
    }

    pub fn producer_count(&self) -> usize {
        self.producers.len()
    }
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }
    pub fn entry(&self, producer_id: i64) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }
    pub fn entries(&self) -> impl Iterator<Item = &ProducerStateEntry> {
        self.producers.values()
    }
    /// Offsets of the snapshot files this state knows of, ascending.
    pub fn snapshot_offsets(&self) -> Vec<i64> {
        self.snapshots.iter().copied().collect()
    }
    pub fn expiration_ms(&self) -> i64 {
        self.expiration_ms
    }
    /// Sets `producer.id.expiration.ms`; it applies from the next check.
    pub fn set_expiration_ms(&mut self, expiration_ms: i64) {
        self.expiration_ms = expiration_ms;
    }

    /// Whether a producer's transactional batch at `epoch` needs the
    /// coordinator's verification first (Kafka's
    /// `maybeStartTransactionVerification`): not when its transaction is
    /// open here under that epoch; otherwise a guard to append with (the
    /// one in progress, if any). `Err` carries the producer's newer epoch:
    /// the batch is fenced already.
    pub fn begin_verification(
        &mut self,
        producer_id: i64,
        epoch: i16,
        supports_epoch_bump: bool,
        now_ms: i64,
    ) -> Result<VerificationNeed, i16> {
        if let Some(entry) = self.producers.get(&producer_id) {
            if epoch < entry.producer_epoch {
                return Err(entry.producer_epoch);
            }
            if entry.current_txn_first_offset >= 0 && entry.producer_epoch == epoch {
                return Ok(VerificationNeed::Ongoing);
            }
        }
        let state = self
            .verifications
            .entry(producer_id)
            .or_insert_with(|| VerificationState {
                guard: VerificationGuard::next(),
                epoch,
                supports_epoch_bump,
                created_ms: now_ms,
            });
        if epoch > state.epoch {
            state.epoch = epoch;
        }
        state.supports_epoch_bump |= supports_epoch_bump;
        state.created_ms = now_ms;
        Ok(VerificationNeed::Verify(state.guard))
    }

    /// Whether `verification` lets a transactional batch start a
    /// transaction of `producer_id` here.
    fn verified(&self, producer_id: i64, verification: TxnVerification) -> bool {
        match verification {
            TxnVerification::Off => true,
            TxnVerification::On(guard) => guard.is_some_and(|g| {
                self.verifications
                    .get(&producer_id)
                    .is_some_and(|s| s.guard == g)
            }),
        }
    }

    /// Checks the offset-assigned batches of a leader append against the
    /// state without changing it (Kafka's `analyzeAndValidateProducerState`
    /// for client appends). The append is all or nothing: any refused batch
    /// refuses it whole, and an append of retried batches is a duplicate
    /// only if every batch in it is one.
    pub fn check_leader_append(
        &self,
        tp: &TopicPartition,
        headers: &[BatchHeader],
        verification: TxnVerification,
    ) -> LogResult<LeaderAppendCheck> {
        // Bounded by the batches of this append, at most one per batch.
        let mut pending: BTreeMap<i64, PendingProducer> = BTreeMap::new();
        let mut duplicates: Vec<(BatchHeader, BatchMetadata)> = Vec::new();
        let mut new_batches = 0usize;
        let mut position = 0u64;
        for h in headers {
            let at = position;
            position += h.size_bytes() as u64;
            if h.producer_id < 0 {
                new_batches += 1;
                continue;
            }
            if h.base_sequence < 0 {
                // Kafka's LogValidator refuses these from clients: without a
                // sequence the batch can be neither checked nor deduplicated.
                return Err(LogError::InvalidBatch {
                    partition: tp.to_string(),
                    position: at,
                    source: BatchError::InvalidSequence {
                        producer_id: h.producer_id,
                        base_sequence: h.base_sequence,
                    },
                });
            }
            let committed = self.producers.get(&h.producer_id);
            if let Some(original) = committed.and_then(|e| e.find_duplicate(h)) {
                duplicates.push((*h, original));
                continue;
            }
            new_batches += 1;
            let producer = pending
                .entry(h.producer_id)
                .or_insert_with(|| PendingProducer::new(committed));
            // KIP-890: a batch that would open a transaction here needs a
            // verification that nothing ended since (a late batch of an
            // ended transaction would otherwise open one that never ends).
            if h.is_transactional()
                && !h.is_control()
                && !(producer.txn_open && producer.epoch == h.producer_epoch)
                && h.producer_epoch >= producer.epoch
                && !self.verified(h.producer_id, verification)
            {
                return Err(LogError::UnverifiedTxnBatch {
                    partition: tp.to_string(),
                    producer_id: h.producer_id,
                });
            }
            producer.check(h).map_err(|e| match e {
                PendingError::Epoch { current_epoch } => LogError::InvalidProducerEpoch {
                    partition: tp.to_string(),
                    producer_id: h.producer_id,
                    producer_epoch: h.producer_epoch,
                    current_epoch,
                    offset: h.base_offset,
                },
                PendingError::Sequence { expected } => LogError::OutOfOrderSequence {
                    partition: tp.to_string(),
                    producer_id: h.producer_id,
                    producer_epoch: h.producer_epoch,
                    offset: h.base_offset,
                    first_sequence: h.base_sequence,
                    expected_sequence: expected,
                },
                PendingError::TxnState => LogError::InvalidTxnState {
                    partition: tp.to_string(),
                    producer_id: h.producer_id,
                    offset: h.base_offset,
                },
            })?;
        }
        let (Some((first_header, first)), Some((_, last))) =
            (duplicates.first(), duplicates.last())
        else {
            return Ok(LeaderAppendCheck::Append);
        };
        if new_batches > 0 {
            // Kafka allows one batch per produce request and answers a retry
            // with its original offsets. A mix of retried and new batches has
            // no single answer: writing only the new ones would give them
            // offsets the caller does not expect, and dropping them would
            // lose data. Refuse, so the producer sends the new ones alone.
            return Err(LogError::MixedDuplicateAppend {
                partition: tp.to_string(),
                duplicates: duplicates.len(),
                producer_id: first_header.producer_id,
                first_sequence: first.first_seq,
                last_sequence: first.last_seq,
                original_offset: first.first_offset,
            });
        }
        let max_timestamp = duplicates
            .iter()
            .map(|(_, b)| b.max_timestamp)
            .max()
            .unwrap_or(-1);
        Ok(LeaderAppendCheck::Duplicate {
            first_offset: first.first_offset,
            last_offset: last.last_offset,
            max_timestamp,
        })
    }

    /// Checks a coordinator's append of records that belong to producers'
    /// transactions (KIP-447's transactional offsets; Kafka's
    /// `AppendOrigin.COORDINATOR`): the epoch may not be older than the
    /// producer's, and a batch that would open a transaction here needs the
    /// guard of a verification that no marker overtook (KIP-890), as a
    /// client's batch does: a late TxnOffsetCommit of an ended transaction
    /// would otherwise leave offsets pending for a marker that never comes.
    pub fn check_coordinator_append(
        &self,
        tp: &TopicPartition,
        headers: &[BatchHeader],
        verification: TxnVerification,
    ) -> LogResult<()> {
        for h in headers.iter().filter(|h| h.producer_id >= 0) {
            let entry = self.producers.get(&h.producer_id);
            if let Some(entry) = entry {
                if h.producer_epoch < entry.producer_epoch {
                    return Err(LogError::InvalidProducerEpoch {
                        partition: tp.to_string(),
                        producer_id: h.producer_id,
                        producer_epoch: h.producer_epoch,
                        current_epoch: entry.producer_epoch,
                        offset: h.base_offset,
                    });
                }
            }
            let open = entry.is_some_and(|e| {
                e.current_txn_first_offset >= 0 && e.producer_epoch == h.producer_epoch
            });
            if h.is_transactional() && !open && !self.verified(h.producer_id, verification) {
                return Err(LogError::UnverifiedTxnBatch {
                    partition: tp.to_string(),
                    producer_id: h.producer_id,
                });
            }
        }
        Ok(())
    }

    /// Checks a marker the leader is about to append for a producer (Kafka's
    /// `appendEndTxnMarker` checks): its epoch may not be older than the
    /// producer's (under transaction version 2, where every EndTxn bumps
    /// the epoch, it must be newer), and its coordinator may not be older
    /// than the last one whose marker the producer saw.
    pub fn check_marker(
        &self,
        tp: &TopicPartition,
        producer_id: i64,
        producer_epoch: i16,
        marker: &TxnMarker,
        transaction_version: i16,
        offset: i64,
    ) -> LogResult<()> {
        let Some(entry) = self.producers.get(&producer_id) else {
            return Ok(());
        };
        let stale = if transaction_version >= 2 {
            // The same epoch again is a retried marker when nothing is open
            // (KAFKA-19999), and the last epoch cannot be exceeded.
            let open = entry.current_txn_first_offset >= 0;
            producer_epoch < entry.producer_epoch
                || (producer_epoch == entry.producer_epoch && open && producer_epoch != i16::MAX)
        } else {
            producer_epoch < entry.producer_epoch
        };
        if stale && entry.producer_epoch != NO_PRODUCER_EPOCH {
            return Err(LogError::InvalidProducerEpoch {
                partition: tp.to_string(),
                producer_id,
                producer_epoch,
                current_epoch: entry.producer_epoch,
                offset,
            });
        }
        if marker.coordinator_epoch < entry.coordinator_epoch {
            return Err(LogError::TransactionCoordinatorFenced {
                partition: tp.to_string(),
                producer_id,
                coordinator_epoch: marker.coordinator_epoch,
                current_coordinator_epoch: entry.coordinator_epoch,
            });
        }
        Ok(())
    }

    /// Applies appended batches without checking them: after a checked
    /// leader append, for a follower append, and when replaying the log.
    /// Batches without a producer id are ignored. `markers` holds the
    /// decoded marker of each control batch among them. Returns the
    /// aborted-index entries of the transactions that aborted, in order.
    pub fn apply(&mut self, headers: &[BatchHeader], markers: &MarkersByOffset) -> Vec<AbortedTxn> {
        let mut aborted = Vec::new();
        for h in headers {
            aborted.extend(self.apply_one(h, markers.get(&h.base_offset)));
        }
        aborted
    }

    fn apply_one(&mut self, h: &BatchHeader, marker: Option<&TxnMarker>) -> Option<AbortedTxn> {
        if h.producer_id < 0 {
            return None;
        }
        if h.is_transactional() {
            // The transaction is open here now, or it ended: either way the
            // verification is used up, except that a version 2 marker of
            // the epoch the next transaction verified under keeps it.
            let keep = self.verifications.get(&h.producer_id).is_some_and(|s| {
                h.is_control() && s.supports_epoch_bump && s.epoch == h.producer_epoch
            });
            if !keep {
                self.verifications.remove(&h.producer_id);
            }
        }
        let entry = self
            .producers
            .entry(h.producer_id)
            .or_insert_with(|| ProducerStateEntry::empty(h.producer_id));
        if h.is_control() {
            // A transaction marker ends a transaction and may carry a bumped
            // epoch, but it has no sequence of its own.
            entry.maybe_update_epoch(h.producer_epoch);
            entry.last_timestamp = h.max_timestamp;
            let Some(marker) = marker else {
                // A control batch of another kind (never in a data
                // partition): it ends nothing.
                return None;
            };
            entry.coordinator_epoch = marker.coordinator_epoch;
            let first_offset = std::mem::replace(&mut entry.current_txn_first_offset, -1);
            // A marker for a producer with nothing open here (a retried
            // WriteTxnMarkers, an empty transaction) changes no offset.
            if first_offset < 0 {
                return None;
            }
            return self.txns.complete(CompletedTxn {
                producer_id: h.producer_id,
                first_offset,
                last_offset: h.base_offset,
                aborted: marker.kind.is_abort(),
            });
        }
        entry.add_batch(h.producer_epoch, BatchMetadata::of(h));
        if h.is_transactional() && entry.current_txn_first_offset < 0 {
            entry.current_txn_first_offset = h.base_offset;
            self.txns.begin(h.producer_id, h.base_offset);
        }
        None
    }

    /// The open and unreplicated transactions.
    pub fn txns(&self) -> &PartitionTxns {
        &self.txns
    }

    /// The high watermark moved: markers below it are stable.
    pub fn on_high_watermark(&mut self, high_watermark: i64) {
        self.txns.on_high_watermark(high_watermark);
    }

    /// Forgets every producer and transaction.
    pub fn clear(&mut self) {
        self.producers.clear();
        self.txns.clear();
        self.verifications.clear();
    }

    fn is_expired(&self, entry: &ProducerStateEntry, now_ms: i64) -> bool {
        // An open transaction keeps its producer, as in Kafka.
        entry.current_txn_first_offset < 0
            && now_ms.saturating_sub(entry.last_timestamp) >= self.expiration_ms
    }

    /// Forgets producers idle for `producer.id.expiration.ms` (Kafka's
    /// `removeExpiredProducers`). Returns how many went.
    pub fn remove_expired(&mut self, now_ms: i64) -> usize {
        let before = self.producers.len();
        let expired: Vec<i64> = self
            .producers
            .values()
            .filter(|e| self.is_expired(e, now_ms))
            .map(|e| e.producer_id)
            .collect();
        for id in expired {
            self.producers.remove(&id);
        }
        let expiration_ms = self.expiration_ms;
        self.verifications
            .retain(|_, s| now_ms.saturating_sub(s.created_ms) < expiration_ms);
        self.last_expiry_check_ms = Some(now_ms);
        before - self.producers.len()
    }

    /// [`Self::remove_expired`], at most once per
    /// [`EXPIRATION_CHECK_INTERVAL_MS`], so that appends stay cheap.
    pub fn maybe_remove_expired(&mut self, now_ms: i64) -> usize {
        let due = self
            .last_expiry_check_ms
            .is_none_or(|last| now_ms.saturating_sub(last) >= EXPIRATION_CHECK_INTERVAL_MS);
        if due {
            self.remove_expired(now_ms)
        } else {
            0
        }
    }

    /// The state in Kafka's snapshot format.
    pub fn encode_snapshot(&self) -> Vec<u8> {
        encode_snapshot(self.producers.values())
    }

    /// Replaces the state with the entries of a snapshot, skipping expired
    /// producers as Kafka's `loadFromSnapshot` does.
    /// The open transactions come back from each producer's
    /// `current_txn_first_offset`.
    pub fn load_entries(&mut self, entries: Vec<ProducerStateEntry>, now_ms: i64) {
        self.clear();
        for mut e in entries {
            if self.is_expired(&e, now_ms) {
                continue;
            }
            let first = e.current_txn_first_offset;
            if first >= 0 {
                if self.txns.is_open_at(first) {
                    // Two producers' transactions cannot start at one
                    // offset: the snapshot is damaged. Replay from the
                    // log finds the truth if the snapshot is dropped; the
                    // caller keeps it, so forget this one transaction.
                    tracing::warn!(
                        producer_id = e.producer_id,
                        first_offset = first,
                        "producer snapshot has two transactions at one offset"
                    );
                    e.current_txn_first_offset = -1;
                } else {
                    self.txns.begin(e.producer_id, first);
                }
            }
            self.producers.insert(e.producer_id, e);
        }
    }

    /// Writes the state as the snapshot for `offset` (atomically, off the
    /// shard thread), then deletes the oldest snapshots beyond
    /// [`SNAPSHOTS_RETAINED_MAX`].
    pub async fn take_snapshot(&mut self, dir: &Path, offset: i64) -> LogResult<()> {
        let path = snapshot_path(dir, offset);
        checkpoint::write_atomically(path, self.encode_snapshot()).await?;
        self.snapshots.insert(offset);
        tracing::debug!(
            dir = %dir.display(),
            offset,
            producers = self.producers.len(),
            "wrote producer state snapshot"
        );
        while self.snapshots.len() > SNAPSHOTS_RETAINED_MAX {
            let Some(oldest) = self.snapshots.pop_first() else {
                break;
            };
            delete_snapshot_file(dir, oldest).await?;
        }
        Ok(())
    }

    /// Deletes the snapshots below `offset`: those of deleted segments.
    pub async fn delete_snapshots_below(&mut self, dir: &Path, offset: i64) -> LogResult<usize> {
        let doomed: Vec<i64> = self.snapshots.range(..offset).copied().collect();
        for o in &doomed {
            self.snapshots.remove(o);
            delete_snapshot_file(dir, *o).await?;
        }
        Ok(doomed.len())
    }

    /// Forgets every producer and deletes every snapshot (Kafka's
    /// `truncateFullyAndStartAt`).
    pub async fn truncate_fully(&mut self, dir: &Path) -> LogResult<()> {
        self.clear();
        while let Some(o) = self.snapshots.pop_first() {
            delete_snapshot_file(dir, o).await?;
        }
        Ok(())
    }

    /// Resets the state to the latest usable snapshot and returns the offset
    /// from which the log must be replayed to reach `log_end_offset`.
    ///
    /// First deletes snapshots the log no longer backs: past the LEO, below
    /// the first segment (their segments are gone), and, as Kafka's
    /// `removeStraySnapshots`, those not at a segment's base offset except
    /// the newest one if it lies past every base offset (a clean close writes
    /// it at the LEO). A snapshot that fails to decode is deleted and the
    /// next older one tried. Without a snapshot the replay starts at the
    /// first segment with an empty state.
    ///
    /// `replay_by`: the replay must cover the log from this offset on (a
    /// segment whose transaction index is rebuilt), so no snapshot past it
    /// is loaded; such snapshots stay, valid for later.
    pub async fn reload(
        &mut self,
        dir: &Path,
        segment_bases: &[i64],
        log_end_offset: i64,
        replay_by: i64,
        now_ms: i64,
    ) -> LogResult<i64> {
        let first_base = segment_bases.first().copied().unwrap_or(log_end_offset);
        let last_base = segment_bases.last().copied().unwrap_or(log_end_offset);
        let bases: BTreeSet<i64> = segment_bases.iter().copied().collect();
        let newest_stray = self
            .snapshots
            .iter()
            .copied()
            .filter(|o| !bases.contains(o) && *o > last_base && *o <= log_end_offset)
            .max();
        let doomed: Vec<(i64, &'static str)> = self
            .snapshots
            .iter()
            .copied()
            .filter_map(|o| {
                if o > log_end_offset {
                    Some((o, "it lies past the log end offset"))
                } else if o < first_base {
                    Some((o, "its segment was deleted"))
                } else if !bases.contains(&o) && Some(o) != newest_stray {
                    Some((o, "no segment starts at its offset"))
                } else {
                    None
                }
            })
            .collect();
        for (o, why) in doomed {
            tracing::info!(
                snapshot = %snapshot_path(dir, o).display(),
                log_end_offset,
                "deleting producer state snapshot: {why}"
            );
            self.snapshots.remove(&o);
            delete_snapshot_file(dir, o).await?;
        }
        self.clear();
        while let Some(&offset) = self.snapshots.range(..=replay_by).next_back() {
            let path = snapshot_path(dir, offset);
            let bytes = read_file_off_thread(&path).await?;
            match bytes.as_deref().map(decode_snapshot) {
                Some(Ok(entries)) => {
                    tracing::debug!(
                        snapshot = %path.display(),
                        producers = entries.len(),
                        "loaded producer state snapshot"
                    );
                    self.load_entries(entries, now_ms);
                    return Ok(offset);
                }
                Some(Err(reason)) => {
                    tracing::warn!(
                        snapshot = %path.display(),
                        "deleting corrupt producer state snapshot: {reason}"
                    );
                }
                None => {
                    tracing::warn!(
                        snapshot = %path.display(),
                        "producer state snapshot vanished while loading"
                    );
                }
            }
            self.snapshots.remove(&offset);
            delete_snapshot_file(dir, offset).await?;
        }
        Ok(first_base)
    }

    /// Applies the header of every batch in `segment` that ends at or after
    /// `from_offset`, reading only headers, and the records of control
    /// batches (one small record each) for their markers. Returns the
    /// aborted-index entries of the transactions that ended in it.
    pub async fn replay_segment(
        &mut self,
        segment: &Segment,
        from_offset: i64,
    ) -> LogResult<Vec<AbortedTxn>> {
        let mut aborted = Vec::new();
        let Some(start) = segment.translate_offset(from_offset, 0).await? else {
            return Ok(aborted);
        };
        let partition = || segment.log_path().display().to_string();
        let mut position = start.position;
        while position < segment.size_bytes() {
            let chunk = segment.read_bytes(position, READ_SCAN_CHUNK_BYTES).await?;
            let mut at = 0usize;
            // Only the header need be in hand; the body may run past the chunk.
            while at + RECORD_BATCH_HEADER_SIZE <= chunk.len() {
                let h =
                    batch::parse_header_only(&chunk[at..]).map_err(|e| LogError::InvalidBatch {
                        partition: partition(),
                        position: position + at as u64,
                        source: e,
                    })?;
                let marker = if h.is_control() {
                    let whole;
                    let bytes = if at + h.size_bytes() <= chunk.len() {
                        &chunk[at..at + h.size_bytes()]
                    } else {
                        whole = segment
                            .read_bytes(position + at as u64, h.size_bytes())
                            .await?;
                        &whole[..]
                    };
                    control_batch::marker_of(bytes, &h).unwrap_or_else(|e| {
                        tracing::warn!(
                            segment = %partition(),
                            offset = h.base_offset,
                            "control batch holds no readable transaction marker: {e}"
                        );
                        None
                    })
                } else {
                    None
                };
                aborted.extend(self.apply_one(&h, marker.as_ref()));
                at += h.size_bytes();
            }
            if at == 0 {
                // Less than a header left: it cannot hold a batch.
                break;
            }
            position += at as u64;
        }
        Ok(aborted)
    }
}

/// `<20-digit offset>.snapshot` in `dir`.
pub fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    segment_file_path(dir, offset, SNAPSHOT_FILE_SUFFIX)
}

/// Offsets of the snapshot files in a partition directory. A blocking
/// listing: call it only when a partition opens.
pub fn list_snapshot_offsets(dir: &Path) -> LogResult<BTreeSet<i64>> {
    let mut offsets = BTreeSet::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| LogError::io("list partition dir", dir, -1, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| LogError::io("list partition dir", dir, -1, e))?;
        let name = entry.file_name();
        if let Some(offset) = name
            .to_str()
            .and_then(|n| parse_segment_file_name(n, SNAPSHOT_FILE_SUFFIX))
        {
            offsets.insert(offset);
        }
    }
    Ok(offsets)
}

/// Encodes producer entries in Kafka's snapshot format (all big-endian):
///
/// ```text
/// version i16 = 1 | crc u32 (CRC-32C of everything after it)
/// count i32 | count x { producer_id i64, epoch i16, last_sequence i32,
///   last_offset i64, offset_delta i32, timestamp i64,
///   coordinator_epoch i32, current_txn_first_offset i64 }
/// ```
///
/// Each record describes one batch: `last_offset` and `offset_delta` (last
/// minus first offset), with -1 and 0 for a producer without batches.
///
/// Kafka writes one record per producer, its last batch, so a producer
/// loaded from a snapshot can have only its last batch recognised as a
/// retry. A producer with 5 requests in flight (librdkafka's and the Java
/// client's default) may retry any of its last 5 after a broker restart,
/// and Kafka answers the older ones OUT_OF_ORDER_SEQUENCE_NUMBER, fatal to
/// librdkafka's idempotent producer. pinlog therefore writes a record for
/// each retained batch, oldest first and the last batch last, and reads
/// consecutive records of one producer back into its retained batches.
/// Kafka's reader keeps the last record of each producer, exactly the
/// entry it would have written itself; the older records carry a timestamp
/// no later than the last one's, so they expire with it.
pub fn encode_snapshot<'a>(
    entries: impl ExactSizeIterator<Item = &'a ProducerStateEntry>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        SNAPSHOT_HEADER_BYTES + 4 + entries.len() * NUM_BATCHES_TO_RETAIN * SNAPSHOT_ENTRY_BYTES,
    );
    out.extend_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    let mut count = 0usize;
    for e in entries {
        let older = e.batches.len().saturating_sub(1);
        for b in e.batches.iter().take(older) {
            let timestamp = b.max_timestamp.min(e.last_timestamp);
            encode_snapshot_record(&mut out, e, Some(b), timestamp);
            count += 1;
        }
        encode_snapshot_record(&mut out, e, e.last_batch(), e.last_timestamp);
        count += 1;
    }
    let count = i32::try_from(count).expect("fewer than 2^31 snapshot records per partition");
    out[SNAPSHOT_HEADER_BYTES..SNAPSHOT_HEADER_BYTES + 4].copy_from_slice(&count.to_be_bytes());
    let crc = crc32c::crc32c(&out[SNAPSHOT_CRC_FROM..]);
    out[2..SNAPSHOT_HEADER_BYTES].copy_from_slice(&crc.to_be_bytes());
    out
}

/// One snapshot record of `e`: its producer fields with one batch's (none:
/// -1 offsets and no sequence).
fn encode_snapshot_record(
    out: &mut Vec<u8>,
    e: &ProducerStateEntry,
    batch: Option<&BatchMetadata>,
    timestamp: i64,
) {
    let (last_seq, last_offset, offset_delta) = match batch {
        Some(b) => (
            b.last_seq,
            b.last_offset,
            (b.last_offset - b.first_offset) as i32,
        ),
        None => (NO_SEQUENCE, -1, 0),
    };
    out.extend_from_slice(&e.producer_id.to_be_bytes());
    out.extend_from_slice(&e.producer_epoch.to_be_bytes());
    out.extend_from_slice(&last_seq.to_be_bytes());
    out.extend_from_slice(&last_offset.to_be_bytes());
    out.extend_from_slice(&offset_delta.to_be_bytes());
    out.extend_from_slice(&timestamp.to_be_bytes());
    out.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
    out.extend_from_slice(&e.current_txn_first_offset.to_be_bytes());
}

/// Decodes a snapshot written by [`encode_snapshot`] or by Kafka. Says why
/// when the bytes are not a valid snapshot; never panics on bad input.
pub fn decode_snapshot(bytes: &[u8]) -> Result<Vec<ProducerStateEntry>, String> {
    if bytes.len() < SNAPSHOT_HEADER_BYTES + 4 {
        return Err(format!(
            "{} bytes are too few for the snapshot header",
            bytes.len()
        ));
    }
    let version = i16::from_be_bytes([bytes[0], bytes[1]]);
    if version != SNAPSHOT_VERSION {
        return Err(format!("unknown snapshot version {version}"));
    }
    let stored = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
    let computed = crc32c::crc32c(&bytes[SNAPSHOT_CRC_FROM..]);
    if stored != computed {
        return Err(format!(
            "CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"
        ));
    }
    let mut r = Reader {
        bytes,
        at: SNAPSHOT_HEADER_BYTES,
    };
    let count = r.i32();
    let body = bytes.len() - r.at;
    if count < 0 || count as usize * SNAPSHOT_ENTRY_BYTES != body {
        return Err(format!(
            "entry count {count} does not match the {body} bytes of entries"
        ));
    }
    let mut entries: Vec<ProducerStateEntry> = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let producer_id = r.i64();
        let producer_epoch = r.i16();
        let last_seq = r.i32();
        let last_offset = r.i64();
        let offset_delta = r.i32();
        let timestamp = r.i64();
        let coordinator_epoch = r.i32();
        let current_txn_first_offset = r.i64();
        let batch = (last_offset >= 0).then(|| BatchMetadata {
            first_seq: decrement_sequence(last_seq, offset_delta),
            last_seq,
            first_offset: last_offset - offset_delta as i64,
            last_offset,
            max_timestamp: timestamp,
        });
        // A record that continues the previous one's producer (see
        // `encode_snapshot`) keeps that record's batches before its own,
        // if they are of the same epoch and come before it in the log.
        // Anything else (another epoch, a gap, offsets out of order) keeps
        // only this record's batch, as Kafka would.
        let earlier = match entries.last() {
            Some(previous) if previous.producer_id == producer_id => {
                let previous = entries.pop().expect("the last entry exists");
                if previous.producer_epoch == producer_epoch {
                    previous.batches
                } else {
                    VecDeque::new()
                }
            }
            _ => VecDeque::new(),
        };
        let mut entry = ProducerStateEntry::empty(producer_id);
        entry.producer_epoch = producer_epoch;
        entry.coordinator_epoch = coordinator_epoch;
        entry.last_timestamp = timestamp;
        entry.current_txn_first_offset = current_txn_first_offset;
        if let Some(batch) = batch {
            let continued = earlier.back().is_some_and(|b| {
                b.last_offset < batch.first_offset && in_sequence(b.last_seq, batch.first_seq)
            });
            if continued {
                entry.batches = earlier;
            }
            // Keeps at most NUM_BATCHES_TO_RETAIN, as appends do.
            entry.add_batch(producer_epoch, batch);
        }
        entries.push(entry);
    }
    Ok(entries)
}

/// Big-endian reads from a buffer whose length the caller checked.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&self.bytes[self.at..self.at + N]);
        self.at += N;
        a
    }
    fn i16(&mut self) -> i16 {
        i16::from_be_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_be_bytes(self.take())
    }
}

/// Reads a whole file on glommio's blocking pool; `None` if it is missing.
async fn read_file_off_thread(path: &Path) -> LogResult<Option<Vec<u8>>> {
    let owned = path.to_path_buf();
    let result = crate::blocking_pool::run(move || std::fs::read(owned)).await;
    match result {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LogError::io("read producer snapshot", path, -1, e)),
    }
}

/// Deletes one snapshot file; one already gone is fine, as Kafka's
/// `deleteIfExists`.
async fn delete_snapshot_file(dir: &Path, offset: i64) -> LogResult<()> {
    let path = snapshot_path(dir, offset);
    match glommio::io::remove(&path).await {
        Ok(()) => Ok(()),
        Err(e) => {
            let e: std::io::Error = e.into();
            if e.kind() == std::io::ErrorKind::NotFound {
                Ok(())
            } else {
                Err(LogError::io("delete producer snapshot", &path, offset, e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PID: i64 = 1000;

    fn header(
        producer_id: i64,
        epoch: i16,
        base_sequence: i32,
        count: i32,
        base_offset: i64,
    ) -> BatchHeader {
        BatchHeader {
            base_offset,
            batch_length: 100,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: count - 1,
            base_timestamp: 10,
            max_timestamp: 10 + base_offset,
            producer_id,
            producer_epoch: epoch,
            base_sequence,
            record_count: count,
        }
    }

    fn tp() -> TopicPartition {
        TopicPartition::new("t", 0)
    }

    fn state_with(headers: &[BatchHeader]) -> ProducerStateManager {
        let mut s = ProducerStateManager::new(DEFAULT_PRODUCER_ID_EXPIRATION_MS);
        s.apply(headers, &MarkersByOffset::new());
        s
    }

    #[test]
    fn sequences_wrap_at_i32_max_as_kafka_does() {
        assert_eq!(increment_sequence(5, 3), 8);
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
        assert_eq!(decrement_sequence(1, 3), i32::MAX - 1);
        assert_eq!(decrement_sequence(8, 3), 5);
        assert!(in_sequence(i32::MAX, 0));
        assert!(in_sequence(-1, 0));
        assert!(!in_sequence(4, 6));
        // Three records from i32::MAX - 1: i32::MAX - 1, i32::MAX, 0.
        let mut h = header(PID, 0, i32::MAX - 1, 3, 0);
        assert_eq!(last_sequence(&h), 0);
        h.base_sequence = NO_SEQUENCE;
        assert_eq!(last_sequence(&h), NO_SEQUENCE);
    }

    #[test]
    fn in_sequence_batches_are_accepted_and_gaps_refused() {
        let s = state_with(&[header(PID, 0, 0, 5, 0)]);
        assert_eq!(
            s.check_leader_append(&tp(), &[header(PID, 0, 5, 2, 5)], TxnVerification::Off)
                .unwrap(),
            LeaderAppendCheck::Append
        );
        match s.check_leader_append(&tp(), &[header(PID, 0, 7, 1, 5)], TxnVerification::Off) {
            Err(LogError::OutOfOrderSequence {
                first_sequence: 7,
                expected_sequence: 5,
                ..
            }) => {}
            other => panic!("expected out of order, got {other:?}"),
        }
        // Within one append each batch continues the previous one.
        let two = [header(PID, 0, 5, 2, 5), header(PID, 0, 7, 1, 7)];
        assert_eq!(
            s.check_leader_append(&tp(), &two, TxnVerification::Off)
                .unwrap(),
            LeaderAppendCheck::Append
        );
        let gap = [header(PID, 0, 5, 2, 5), header(PID, 0, 8, 1, 7)];
        assert!(matches!(
            s.check_leader_append(&tp(), &gap, TxnVerification::Off),
            Err(LogError::OutOfOrderSequence {
                expected_sequence: 7,
                ..
            })
        ));
    }

    #[test]
    fn epochs_fence_and_new_epochs_restart_at_zero() {
        let s = state_with(&[header(PID, 3, 0, 5, 0)]);
        assert!(matches!(
            s.check_leader_append(&tp(), &[header(PID, 2, 5, 1, 5)], TxnVerification::Off),
            Err(LogError::InvalidProducerEpoch {
                producer_epoch: 2,
                current_epoch: 3,
                ..
            })
        ));
        assert_eq!(
            s.check_leader_append(&tp(), &[header(PID, 4, 0, 1, 5)], TxnVerification::Off)
                .unwrap(),
            LeaderAppendCheck::Append
        );
        assert!(matches!(
            s.check_leader_append(&tp(), &[header(PID, 4, 3, 1, 5)], TxnVerification::Off),
            Err(LogError::OutOfOrderSequence {
                expected_sequence: 0,
                ..
            })
        ));
        // After a bump inside the append, the old epoch is fenced.
        let bumped = [header(PID, 4, 0, 1, 5), header(PID, 3, 5, 1, 6)];
        assert!(matches!(
            s.check_leader_append(&tp(), &bumped, TxnVerification::Off),
            Err(LogError::InvalidProducerEpoch {
                current_epoch: 4,
                ..
            })
        ));
    }

    #[test]
    fn unknown_producers_may_start_at_any_sequence() {
        let s = state_with(&[]);
        assert_eq!(
            s.check_leader_append(&tp(), &[header(PID, 0, 42, 1, 0)], TxnVerification::Off)
                .unwrap(),
            LeaderAppendCheck::Append
        );
        assert!(matches!(
            s.check_leader_append(&tp(), &[header(PID, 0, -1, 1, 0)], TxnVerification::Off),
            Err(LogError::InvalidBatch {
                source: BatchError::InvalidSequence { .. },
                ..
            })
        ));
        // Batches without a producer id are never checked.
        assert_eq!(
            s.check_leader_append(&tp(), &[header(-1, -1, -1, 1, 0)], TxnVerification::Off)
                .unwrap(),
            LeaderAppendCheck::Append
        );
    }

    #[test]
    fn duplicates_of_the_last_five_batches_are_found() {
        let headers: Vec<BatchHeader> = (0..7)
            .map(|i| header(PID, 0, i * 2, 2, 100 + i as i64 * 2))
            .collect();
        let s = state_with(&headers);
        let entry = s.entry(PID).unwrap();
        assert_eq!(entry.batches().count(), NUM_BATCHES_TO_RETAIN);
        // The two oldest fell out; retrying them is a sequence error.
        assert!(matches!(
            s.check_leader_append(&tp(), &[header(PID, 0, 0, 2, 200)], TxnVerification::Off),
            Err(LogError::OutOfOrderSequence { .. })
        ));
        for i in 2..7 {
            assert_eq!(
                s.check_leader_append(
                    &tp(),
                    &[header(PID, 0, i * 2, 2, 200)],
                    TxnVerification::Off
                )
                .unwrap(),
                LeaderAppendCheck::Duplicate {
                    first_offset: 100 + i as i64 * 2,
                    last_offset: 101 + i as i64 * 2,
                    max_timestamp: 110 + i as i64 * 2,
                }
            );
        }
        // Same sequences in another epoch are not duplicates.
        assert!(s
            .check_leader_append(&tp(), &[header(PID, 1, 12, 2, 200)], TxnVerification::Off)
            .is_err());
        // A retried batch next to a new one is refused whole.
        let mixed = [header(PID, 0, 12, 2, 200), header(PID, 0, 14, 1, 202)];
        assert!(matches!(
            s.check_leader_append(&tp(), &mixed, TxnVerification::Off),
            Err(LogError::MixedDuplicateAppend { duplicates: 1, .. })
        ));
    }

    /// The records of a snapshot as (producer id, epoch, last sequence,
    /// last offset, offset delta, timestamp), in file order.
    fn snapshot_records(bytes: &[u8]) -> Vec<(i64, i16, i32, i64, i32, i64)> {
        let mut r = Reader {
            bytes,
            at: SNAPSHOT_HEADER_BYTES,
        };
        let count = r.i32();
        (0..count)
            .map(|_| {
                let record = (r.i64(), r.i16(), r.i32(), r.i64(), r.i32(), r.i64());
                let _coordinator_epoch = r.i32();
                let _txn_first_offset = r.i64();
                record
            })
            .collect()
    }

    #[test]
    fn snapshots_keep_every_retained_batch_and_end_each_producer_as_kafka_does() {
        // Seven batches of PID: the last five are retained.
        let batches: Vec<BatchHeader> = (0..7)
            .map(|i| header(PID, 3, i * 2, 2, 100 + i as i64 * 3))
            .collect();
        let mut s = state_with(&batches);
        s.apply(&[header(7, 0, 0, 1, 200)], &MarkersByOffset::new());
        let bytes = s.encode_snapshot();
        let records = snapshot_records(&bytes);
        assert_eq!(records.len(), NUM_BATCHES_TO_RETAIN + 1);
        // Oldest first, and the last record of PID is the one Kafka writes.
        let of_pid: Vec<_> = records.iter().filter(|r| r.0 == PID).collect();
        assert_eq!(of_pid.first().unwrap().3, 107);
        let last = s.entry(PID).unwrap().last_batch().copied().unwrap();
        assert_eq!(
            *of_pid[of_pid.len() - 1],
            (
                PID,
                3,
                13,
                last.last_offset,
                1,
                s.entry(PID).unwrap().last_timestamp
            )
        );
        // Kafka's reader keeps a producer's last record: the state of the
        // last batch, with nothing older than it carrying a later time.
        assert!(of_pid
            .windows(2)
            .all(|w| w[0].5 <= w[1].5 && w[0].3 < w[1].3));

        let decoded = decode_snapshot(&bytes).unwrap();
        assert_eq!(decoded.len(), 2);
        let pid = decoded.iter().find(|e| e.producer_id == PID).unwrap();
        let retained: Vec<BatchMetadata> = pid.batches().copied().collect();
        let expected: Vec<BatchMetadata> = s.entry(PID).unwrap().batches().copied().collect();
        assert_eq!(retained, expected);
        let mut loaded = ProducerStateManager::new(DEFAULT_PRODUCER_ID_EXPIRATION_MS);
        loaded.load_entries(decoded, 100);
        assert_eq!(loaded.encode_snapshot(), bytes);
        // Every retained batch is a duplicate for the loaded state too.
        for b in &batches[2..] {
            assert!(matches!(
                loaded.check_leader_append(&tp(), &[*b], TxnVerification::Off),
                Ok(LeaderAppendCheck::Duplicate { .. })
            ));
        }
    }

    #[test]
    fn snapshot_records_that_do_not_continue_a_producer_keep_only_the_last() {
        let encode = |records: &[(i16, BatchHeader)]| {
            let mut out = Vec::new();
            out.extend_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
            out.extend_from_slice(&0u32.to_be_bytes());
            out.extend_from_slice(&(records.len() as i32).to_be_bytes());
            for (epoch, h) in records {
                let mut e = ProducerStateEntry::empty(h.producer_id);
                e.producer_epoch = *epoch;
                e.last_timestamp = h.max_timestamp;
                let b = BatchMetadata::of(h);
                encode_snapshot_record(&mut out, &e, Some(&b), h.max_timestamp);
            }
            let crc = crc32c::crc32c(&out[SNAPSHOT_CRC_FROM..]);
            out[2..SNAPSHOT_HEADER_BYTES].copy_from_slice(&crc.to_be_bytes());
            out
        };
        let retained = |bytes: &[u8]| -> Vec<i32> {
            let decoded = decode_snapshot(bytes).unwrap();
            assert_eq!(decoded.len(), 1);
            decoded[0].batches().map(|b| b.first_seq).collect()
        };
        let a = header(PID, 1, 0, 2, 10);
        let b = header(PID, 1, 2, 2, 20);
        assert_eq!(retained(&encode(&[(1, a), (1, b)])), vec![0, 2]);
        // Another epoch, a sequence gap, offsets going back.
        assert_eq!(retained(&encode(&[(0, a), (1, b)])), vec![2]);
        assert_eq!(
            retained(&encode(&[(1, a), (1, header(PID, 1, 5, 2, 20))])),
            vec![5]
        );
        assert_eq!(
            retained(&encode(&[(1, a), (1, header(PID, 1, 2, 2, 5))])),
            vec![2]
        );
    }

    #[test]
    fn snapshots_round_trip_the_last_batch_of_each_producer() {
        let mut s = state_with(&[
            header(7, 2, i32::MAX - 1, 4, 40),
            header(PID, 0, 0, 3, 50),
            header(PID, 0, 3, 3, 53),
        ]);
        s.apply(
            &[BatchHeader {
                attributes: 0x20,
                ..header(9, 5, -1, 1, 60)
            }],
            &MarkersByOffset::new(),
        );
        let bytes = s.encode_snapshot();
        // PID's two batches are two records.
        assert_eq!(
            bytes.len(),
            SNAPSHOT_HEADER_BYTES + 4 + 4 * SNAPSHOT_ENTRY_BYTES
        );
        let decoded = decode_snapshot(&bytes).unwrap();
        assert_eq!(decoded.len(), 3);
        let by_id: BTreeMap<i64, &ProducerStateEntry> =
            decoded.iter().map(|e| (e.producer_id, e)).collect();
        let wrapped = by_id[&7].last_batch().unwrap();
        assert_eq!((wrapped.first_seq, wrapped.last_seq), (i32::MAX - 1, 1));
        assert_eq!((wrapped.first_offset, wrapped.last_offset), (40, 43));
        let last = by_id[&PID].last_batch().unwrap();
        assert_eq!(*last, *s.entry(PID).unwrap().last_batch().unwrap());
        assert_eq!(by_id[&9].producer_epoch, 5);
        assert!(by_id[&9].last_batch().is_none());
        assert_eq!(by_id[&9].last_seq(), NO_SEQUENCE);

        let mut loaded = ProducerStateManager::new(DEFAULT_PRODUCER_ID_EXPIRATION_MS);
        loaded.load_entries(decoded, 100);
        assert_eq!(loaded.encode_snapshot(), bytes);
    }

    #[test]
    fn corrupt_snapshots_are_refused_with_a_reason() {
        let s = state_with(&[header(PID, 0, 0, 3, 50)]);
        let good = s.encode_snapshot();
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(decode_snapshot(&flipped).unwrap_err().contains("CRC"));
        let mut version = good.clone();
        version[1] = 2;
        assert!(decode_snapshot(&version).unwrap_err().contains("version"));
        assert!(decode_snapshot(&good[..good.len() - 1]).is_err());
        assert!(decode_snapshot(&good[..3]).is_err());
        assert!(decode_snapshot(&[]).is_err());
        // A count that lies about the entries, with a valid CRC.
        let mut lying = good[..SNAPSHOT_HEADER_BYTES + 4].to_vec();
        lying[SNAPSHOT_HEADER_BYTES..].copy_from_slice(&2i32.to_be_bytes());
        let crc = crc32c::crc32c(&lying[SNAPSHOT_CRC_FROM..]);
        lying[2..6].copy_from_slice(&crc.to_be_bytes());
        assert!(decode_snapshot(&lying).unwrap_err().contains("count"));
    }

    #[test]
    fn idle_producers_expire() {
        let mut s = ProducerStateManager::new(1_000);
        s.apply(
            &[header(PID, 0, 0, 1, 0), header(2, 0, 0, 1, 500)],
            &MarkersByOffset::new(),
        );
        // Timestamps are 10 and 510.
        assert_eq!(s.maybe_remove_expired(1_009), 0);
        assert_eq!(s.producer_count(), 2);
        // Not due again until the check interval passed.
        assert_eq!(s.maybe_remove_expired(1_200), 0);
        assert_eq!(s.remove_expired(1_200), 1);
        assert!(s.entry(PID).is_none());
        let snapshot = decode_snapshot(&s.encode_snapshot()).unwrap();
        s.load_entries(snapshot, 10_000);
        assert!(s.is_empty());
    }

    fn txn(h: BatchHeader) -> BatchHeader {
        BatchHeader {
            attributes: 0x10,
            ..h
        }
    }

    /// A COMMIT marker of `pid` at `epoch`, at `offset`.
    fn commit(s: &mut ProducerStateManager, pid: i64, epoch: i16, offset: i64) {
        let marker = BatchHeader {
            attributes: 0x30,
            ..header(pid, epoch, -1, 1, offset)
        };
        let markers = MarkersByOffset::from([(
            offset,
            TxnMarker {
                kind: crate::transaction::marker::MarkerKind::Commit,
                coordinator_epoch: 0,
            },
        )]);
        s.apply(&[marker], &markers);
    }

    /// KIP-890 part 1: a transactional batch that would open a transaction
    /// needs the guard of a verification that no marker overtook.
    #[test]
    fn a_transaction_opens_only_with_a_current_verification_guard() {
        let mut s = ProducerStateManager::new(DEFAULT_PRODUCER_ID_EXPIRATION_MS);
        let first = [txn(header(PID, 0, 0, 1, 0))];
        let VerificationNeed::Verify(guard) = s.begin_verification(PID, 0, false, 0).unwrap()
        else {
            panic!("a new producer needs verification")
        };
        let refused = |s: &ProducerStateManager, v: TxnVerification| {
            matches!(
                s.check_leader_append(&tp(), &first, v),
                Err(LogError::UnverifiedTxnBatch { .. })
            )
        };
        assert!(refused(&s, TxnVerification::On(None)));
        assert!(refused(
            &s,
            TxnVerification::On(Some(VerificationGuard::next()))
        ));
        assert!(!refused(&s, TxnVerification::On(Some(guard))));
        assert!(!refused(&s, TxnVerification::Off), "verification off");
        s.apply(&first, &MarkersByOffset::new());
        assert_eq!(
            s.begin_verification(PID, 0, false, 1),
            Ok(VerificationNeed::Ongoing),
            "the open transaction needs no verification"
        );
        let second = [txn(header(PID, 0, 1, 1, 1))];
        s.check_leader_append(&tp(), &second, TxnVerification::On(None))
            .expect("a batch of the open transaction");
        assert_eq!(s.begin_verification(PID, -1, false, 1), Err(0), "fenced");

        // The ABA case: verified, then the transaction's marker lands first.
        commit(&mut s, PID, 0, 2);
        let VerificationNeed::Verify(late) = s.begin_verification(PID, 0, false, 3).unwrap() else {
            panic!("the transaction ended: verify again")
        };
        commit(&mut s, PID, 0, 3);
        let third = [txn(header(PID, 0, 2, 1, 4))];
        assert!(
            matches!(
                s.check_leader_append(&tp(), &third, TxnVerification::On(Some(late))),
                Err(LogError::UnverifiedTxnBatch { .. })
            ),
            "a marker after the verification voids its guard"
        );
    }

    /// KIP-890 for transactional offsets: the group coordinator's append of
    /// a producer's offsets needs a guard too, so a TxnOffsetCommit that a
    /// marker overtook cannot leave offsets waiting for a marker that never
    /// comes.
    #[test]
    fn a_coordinators_transactional_append_needs_a_current_guard() {
        let mut s = ProducerStateManager::new(DEFAULT_PRODUCER_ID_EXPIRATION_MS);
        let offsets = [txn(header(PID, 0, 0, 1, 0))];
        let VerificationNeed::Verify(guard) = s.begin_verification(PID, 0, false, 0).unwrap()
        else {
            panic!("a new producer needs verification")
        };
        let refused = |s: &ProducerStateManager, v: TxnVerification| {
            matches!(
                s.check_coordinator_append(&tp(), &offsets, v),
                Err(LogError::UnverifiedTxnBatch { .. })
            )
        };
        assert!(refused(&s, TxnVerification::On(None)));
        assert!(!refused(&s, TxnVerification::On(Some(guard))));
        assert!(!refused(&s, TxnVerification::Off), "verification off");
        // The transaction ended (its marker) after the verification.
        commit(&mut s, PID, 0, 1);
        assert!(refused(&s, TxnVerification::On(Some(guard))));
        // A batch of an open transaction needs nothing more.
        s.apply(&[txn(header(PID, 0, 0, 1, 2))], &MarkersByOffset::new());
        let more = [txn(header(PID, 0, 1, 1, 3))];
        s.check_coordinator_append(&tp(), &more, TxnVerification::On(None))
            .expect("offsets of the open transaction");
        assert!(matches!(
            s.check_coordinator_append(
                &tp(),
                &[txn(header(PID, -1, 0, 1, 3))],
                TxnVerification::Off
            ),
            Err(LogError::InvalidProducerEpoch { .. })
        ));
    }

    /// Version 2: the previous transaction's marker carries the epoch the
    /// next one verified under, and keeps its guard.
    #[test]
    fn a_version_2_marker_of_the_verified_epoch_keeps_the_guard() {
        let mut s = state_with(&[txn(header(PID, 0, 0, 1, 0))]);
        let VerificationNeed::Verify(guard) = s.begin_verification(PID, 1, true, 0).unwrap() else {
            panic!("a new epoch needs verification")
        };
        commit(&mut s, PID, 1, 1);
        s.check_leader_append(
            &tp(),
            &[txn(header(PID, 1, 0, 1, 2))],
            TxnVerification::On(Some(guard)),
        )
        .expect("the guard survived the marker of its epoch");
    }
}
