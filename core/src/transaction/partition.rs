//! One partition's transactions, as Kafka's `ProducerStateManager` tracks
//! them: which are open, which ended with a marker that is not yet
//! replicated, and from these the **last stable offset** (LSO).
//!
//! A transaction opens on a partition with its producer's first
//! transactional batch there, and ends with the COMMIT or ABORT marker the
//! coordinator writes. Until its marker is below the high watermark, its
//! outcome may still be lost by a leader change, so its data is *unstable*:
//!
//! ```text
//! LSO = min(first offset of any open or unreplicated transaction, HW)
//! ```
//!
//! read_committed consumers read below the LSO only, and skip the data of
//! aborted transactions, which the partition lists in its aborted index
//! (`.txnindex`): one [`AbortedTxn`] per aborted transaction, written when
//! its marker is appended. Each entry carries the LSO as of its marker
//! (ignoring the HW), which tells a fetch where to stop searching older
//! entries.
//!
//! Invariants, asserted after every change: an offset starts at most one
//! tracked transaction, and every completed transaction's marker lies after
//! its first offset.

use std::collections::BTreeMap;

/// A transaction a marker ended on this partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    /// Offset of the transaction's first batch on this partition.
    pub first_offset: i64,
    /// Offset of its marker.
    pub last_offset: i64,
    pub aborted: bool,
}

/// An entry of the aborted-transaction index (Kafka's `AbortedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// Offset of the ABORT marker.
    pub last_offset: i64,
    /// The LSO once this transaction ended, without the HW: the first
    /// offset of the oldest transaction still open then, or the offset
    /// after the marker.
    pub last_stable_offset: i64,
}

/// The open and unreplicated transactions of one partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionTxns {
    /// Open transactions: first offset to producer id.
    ongoing: BTreeMap<i64, i64>,
    /// Ended transactions whose marker is at or above the HW, by first
    /// offset.
    unreplicated: BTreeMap<i64, CompletedTxn>,
}

impl PartitionTxns {
    pub fn new() -> Self {
        Self::default()
    }

    /// A producer's transaction opened at `first_offset`.
    pub fn begin(&mut self, producer_id: i64, first_offset: i64) {
        let previous = self.ongoing.insert(first_offset, producer_id);
        assert!(
            previous.is_none(),
            "two transactions start at offset {first_offset}"
        );
        self.check_invariants();
    }

    /// A marker ended `txn`. Returns the aborted-index entry to write for
    /// an aborted one. A transaction not known as open (its start was
    /// before a snapshot that did not record it) is still tracked until
    /// its marker is replicated.
    pub fn complete(&mut self, txn: CompletedTxn) -> Option<AbortedTxn> {
        if let Some(producer) = self.ongoing.remove(&txn.first_offset) {
            assert_eq!(
                producer, txn.producer_id,
                "the transaction at {} is producer {producer}'s, not {}'s",
                txn.first_offset, txn.producer_id
            );
        }
        let last_stable_offset = self
            .ongoing
            .iter()
            .find(|(_, producer)| **producer != txn.producer_id)
            .map_or(txn.last_offset + 1, |(first, _)| *first);
        self.unreplicated.insert(txn.first_offset, txn);
        self.check_invariants();
        txn.aborted.then_some(AbortedTxn {
            producer_id: txn.producer_id,
            first_offset: txn.first_offset,
            last_offset: txn.last_offset,
            last_stable_offset,
        })
    }

    /// The HW moved: transactions whose marker is below it are stable.
    pub fn on_high_watermark(&mut self, high_watermark: i64) {
        self.unreplicated
            .retain(|_, txn| txn.last_offset >= high_watermark);
    }

    /// The first offset that read_committed consumers may not read yet
    /// whatever the HW: the start of the oldest open or unreplicated
    /// transaction.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        let ongoing = self.ongoing.keys().next().copied();
        let unreplicated = self.unreplicated.keys().next().copied();
        match (ongoing, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Where read_committed consumers stop (Kafka's `lastStableOffset`).
    pub fn last_stable_offset(&self, high_watermark: i64) -> i64 {
        self.first_unstable_offset()
            .map_or(high_watermark, |first| first.min(high_watermark))
    }

    /// Open transactions, oldest first: (first offset, producer id).
    pub fn ongoing(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.ongoing
            .iter()
            .map(|(first, producer)| (*first, *producer))
    }

    /// Whether an open transaction starts at `first_offset`.
    pub fn is_open_at(&self, first_offset: i64) -> bool {
        self.ongoing.contains_key(&first_offset)
    }

    pub fn ongoing_count(&self) -> usize {
        self.ongoing.len()
    }

    /// Forgets everything: the producer state is being rebuilt.
    pub fn clear(&mut self) {
        self.ongoing.clear();
        self.unreplicated.clear();
    }

    fn check_invariants(&self) {
        for (first, txn) in &self.unreplicated {
            assert!(
                txn.last_offset > *first,
                "transaction of producer {} ends at {} before its start {first}",
                txn.producer_id,
                txn.last_offset
            );
            assert!(
                !self.ongoing.contains_key(first),
                "offset {first} starts both an open and an ended transaction"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(producer_id: i64, first_offset: i64, last_offset: i64, aborted: bool) -> CompletedTxn {
        CompletedTxn {
            producer_id,
            first_offset,
            last_offset,
            aborted,
        }
    }

    #[test]
    fn the_lso_waits_for_the_oldest_open_transaction() {
        let mut t = PartitionTxns::new();
        assert_eq!(t.last_stable_offset(10), 10);
        t.begin(1, 3);
        t.begin(2, 5);
        assert_eq!(t.last_stable_offset(10), 3);
        assert_eq!(t.last_stable_offset(2), 2, "never past the HW");
        // Producer 1 commits at 7: producer 2's transaction still holds it.
        assert_eq!(t.complete(done(1, 3, 7, false)), None);
        assert_eq!(t.last_stable_offset(10), 3, "marker 7 not replicated");
        t.on_high_watermark(8);
        assert_eq!(t.last_stable_offset(8), 5);
        assert_eq!(t.ongoing().collect::<Vec<_>>(), vec![(5, 2)]);
    }

    #[test]
    fn an_abort_records_the_lso_of_its_marker() {
        let mut t = PartitionTxns::new();
        t.begin(1, 0);
        t.begin(2, 4);
        // Producer 2's transaction is still open when producer 1 aborts.
        assert_eq!(
            t.complete(done(1, 0, 6, true)),
            Some(AbortedTxn {
                producer_id: 1,
                first_offset: 0,
                last_offset: 6,
                last_stable_offset: 4,
            })
        );
        // Nothing open after this one: the LSO is just past the marker.
        assert_eq!(
            t.complete(done(2, 4, 9, true))
                .map(|a| a.last_stable_offset),
            Some(10)
        );
        t.on_high_watermark(10);
        assert_eq!(t.first_unstable_offset(), None);
    }

    #[test]
    fn a_marker_holds_the_lso_until_it_is_replicated() {
        let mut t = PartitionTxns::new();
        t.begin(1, 0);
        t.complete(done(1, 0, 2, false));
        t.on_high_watermark(2);
        assert_eq!(t.last_stable_offset(2), 0, "the marker at 2 is the HW");
        t.on_high_watermark(3);
        assert_eq!(t.last_stable_offset(3), 3);
    }

    #[test]
    fn a_transaction_begun_before_a_snapshot_still_completes() {
        let mut t = PartitionTxns::new();
        let aborted = t.complete(done(4, 10, 12, true)).unwrap();
        assert_eq!(aborted.last_stable_offset, 13);
        assert_eq!(t.first_unstable_offset(), Some(10));
    }

    #[test]
    #[should_panic(expected = "two transactions start at offset 3")]
    fn one_offset_starts_one_transaction() {
        let mut t = PartitionTxns::new();
        t.begin(1, 3);
        t.begin(2, 3);
    }
}
