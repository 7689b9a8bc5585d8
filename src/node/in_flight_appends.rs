//! Replication that overlaps the leader's write (issue 33, direction 3).
//!
//! A leader's group commit holds its partition's write lock from before its
//! direct write to after it, so a follower's fetch that took the lock would
//! wait for the write, and acks=all would pay the leader's write and then
//! the follower's, one after the other. Instead the writer publishes the
//! group here, on the owning shard, just before its write, and wakes the
//! followers' long polls. A follower's fetch at an offset the group covers
//! (or at its end) is served from these bytes without the lock, so the
//! follower fetches and writes the group while the leader writes it.
//!
//! Nothing is acknowledged earlier: the HW counts only what the leader has
//! written (`ReplicaState::on_append_started` lets followers report up to
//! the group's end, and `on_appended` moves the leader's own end), so a
//! record is acknowledged once the leader's write and the ISR's have both
//! completed, in either order. A leader that crashes before its write
//! completes leaves followers holding records nobody acknowledged, as a
//! Kafka leader's lost page cache does; a new leader keeps them, or the
//! followers truncate them by leader epoch.
//!
//! The entry lives exactly while the writer runs the group: the writer
//! removes it after the append returns, whatever its outcome.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use bytes::Bytes;

use crate::log::batch::{self, BatchHeader};
use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// One batch of a group being written: `[base_offset, next_offset)`.
struct InFlightBatch {
    base_offset: i64,
    next_offset: i64,
    bytes: Bytes,
}

/// A leader's group commit whose direct write is in flight: whole batches,
/// offsets and leader epoch assigned, exactly the bytes being written.
pub struct InFlightAppend {
    batches: Vec<InFlightBatch>,
    /// The partition's log start offset when the group was staged.
    pub log_start_offset: i64,
    /// Its last stable offset then (followers do not use it).
    pub last_stable_offset: i64,
}

impl InFlightAppend {
    /// The group from the parts being written and their batch headers, in
    /// order (`headers` describes `parts` back to back).
    pub fn new(
        parts: &[Bytes],
        headers: &[BatchHeader],
        log_start_offset: i64,
        last_stable_offset: i64,
    ) -> InFlightAppend {
        let batches: Vec<InFlightBatch> = batch::split_parts(parts, headers)
            .map(|(_, h, bytes)| InFlightBatch {
                base_offset: h.base_offset,
                next_offset: h.next_offset(),
                bytes,
            })
            .collect();
        assert!(!batches.is_empty(), "a group being written holds a batch");
        InFlightAppend {
            batches,
            log_start_offset,
            last_stable_offset,
        }
    }

    /// The group's first offset: the leader's LEO when its write began.
    pub fn base_offset(&self) -> i64 {
        self.batches[0].base_offset
    }

    /// The offset after the group's last record.
    pub fn end_offset(&self) -> i64 {
        self.batches[self.batches.len() - 1].next_offset
    }

    /// Whether a fetch from `offset` can be answered from the group: it
    /// starts within it or at its end (nothing new yet).
    pub fn covers(&self, offset: i64) -> bool {
        (self.base_offset()..=self.end_offset()).contains(&offset)
    }

    /// The batches from the one holding `offset` on, up to `max_bytes`
    /// (the first batch always, as Kafka's fetch returns at least one).
    pub fn read_from(&self, offset: i64, max_bytes: usize) -> Vec<Bytes> {
        let mut out = Vec::new();
        let mut total = 0usize;
        for b in self.batches.iter().filter(|b| b.next_offset > offset) {
            if !out.is_empty() && total + b.bytes.len() > max_bytes {
                break;
            }
            total += b.bytes.len();
            out.push(b.bytes.clone());
        }
        out
    }
}

/// The shard's groups being written, by partition.
#[derive(Default)]
pub struct InFlightAppends {
    groups: RefCell<HashMap<TopicPartition, Rc<InFlightAppend>>>,
    /// Followers' fetches answered with records from a group in flight
    /// (`pinlog_replica_fetches_of_writes_in_flight_total`).
    fetches_served: Cell<u64>,
}

impl InFlightAppends {
    pub fn of(shard: &Shard) -> Rc<InFlightAppends> {
        if let Some(a) = shard.extension::<InFlightAppends>() {
            return a;
        }
        let a = Rc::new(InFlightAppends::default());
        shard.set_extension(a.clone());
        a
    }

    /// `tp`'s writer starts writing `group` (replacing the group it wrote
    /// before, when a roll split its commit in two).
    pub fn publish(&self, tp: &TopicPartition, group: InFlightAppend) {
        self.groups.borrow_mut().insert(tp.clone(), Rc::new(group));
    }

    /// `tp`'s writer is done with its group.
    pub fn clear(&self, tp: &TopicPartition) {
        self.groups.borrow_mut().remove(tp);
    }

    pub fn get(&self, tp: &TopicPartition) -> Option<Rc<InFlightAppend>> {
        self.groups.borrow().get(tp).cloned()
    }

    /// A follower's fetch took records from a group in flight.
    pub fn count_fetch_served(&self) {
        self.fetches_served.set(self.fetches_served.get() + 1);
    }

    pub fn fetches_served(&self) -> u64 {
        self.fetches_served.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{build_batch, parse_header, BatchSpec, RecordSpec};

    fn batch(base_offset: i64, records: usize) -> Vec<u8> {
        let recs: Vec<RecordSpec<'_>> = (0..records)
            .map(|i| (i as i64, None, &b"value"[..]))
            .collect();
        build_batch(&BatchSpec {
            base_offset,
            leader_epoch: 3,
            base_timestamp: 1_000,
            records: &recs,
        })
    }

    fn group(sizes: &[(i64, usize)]) -> InFlightAppend {
        let mut parts = Vec::new();
        let mut headers = Vec::new();
        for &(base, records) in sizes {
            let b = Bytes::from(batch(base, records));
            headers.push(parse_header(&b).unwrap());
            parts.push(b);
        }
        InFlightAppend::new(&parts, &headers, 0, 0)
    }

    #[test]
    fn a_fetch_reads_from_the_batch_holding_its_offset_within_its_limit() {
        let g = group(&[(10, 2), (12, 3), (15, 1)]);
        assert_eq!((g.base_offset(), g.end_offset()), (10, 16));
        assert!(g.covers(10) && g.covers(13) && g.covers(16));
        assert!(!g.covers(9) && !g.covers(17));
        let all = g.read_from(10, usize::MAX);
        assert_eq!(all.len(), 3);
        let from_middle = g.read_from(13, usize::MAX);
        assert_eq!(from_middle.len(), 2, "from the batch holding 13");
        assert_eq!(parse_header(&from_middle[0]).unwrap().base_offset, 12);
        assert_eq!(g.read_from(10, 1).len(), 1, "one batch, whatever the limit");
        let two = all[0].len() + all[1].len();
        assert_eq!(g.read_from(10, two).len(), 2);
        assert!(
            g.read_from(16, usize::MAX).is_empty(),
            "nothing past the end"
        );
    }
}
