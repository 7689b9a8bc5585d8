//! The bytes each partition took in and sent out on the shard that owns it:
//! the per-partition metrics (which also say where each partition lives),
//! and the load the core balancer weighs.
//!
//! In: batches appended, as leader (produce) or as follower (replication).
//! Out: bytes read for fetches, by consumers and by followers. Both are the
//! work a partition puts on its shard: the copy, the write, the read.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// One partition's counters since it came to this shard.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LoadCounters {
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl LoadCounters {
    pub fn total(&self) -> u64 {
        self.bytes_in.wrapping_add(self.bytes_out)
    }
}

/// A shard's counters, by partition.
#[derive(Default)]
pub struct PartitionLoad {
    counters: RefCell<HashMap<TopicPartition, LoadCounters>>,
}

impl PartitionLoad {
    pub fn of(shard: &Shard) -> Rc<PartitionLoad> {
        if let Some(l) = shard.extension::<PartitionLoad>() {
            return l;
        }
        let l = Rc::new(PartitionLoad::default());
        shard.set_extension(l.clone());
        l
    }

    pub fn record_in(&self, tp: &TopicPartition, bytes: u64) {
        self.with(tp, |c| c.bytes_in = c.bytes_in.wrapping_add(bytes));
    }

    pub fn record_out(&self, tp: &TopicPartition, bytes: u64) {
        self.with(tp, |c| c.bytes_out = c.bytes_out.wrapping_add(bytes));
    }

    /// The partition left this shard (moved, deleted): its counters go.
    pub fn forget(&self, tp: &TopicPartition) {
        self.counters.borrow_mut().remove(tp);
    }

    /// Every partition with traffic since it came here, sorted.
    pub fn snapshot(&self) -> Vec<(TopicPartition, LoadCounters)> {
        let mut v: Vec<_> = self
            .counters
            .borrow()
            .iter()
            .map(|(tp, c)| (tp.clone(), *c))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    fn with(&self, tp: &TopicPartition, f: impl FnOnce(&mut LoadCounters)) {
        if is_metadata_log(tp) {
            return;
        }
        let mut counters = self.counters.borrow_mut();
        match counters.get_mut(tp) {
            Some(c) => f(c),
            None => {
                let mut c = LoadCounters::default();
                f(&mut c);
                counters.insert(tp.clone(), c);
            }
        }
    }
}

/// The metadata log is not a partition any shard owns.
fn is_metadata_log(tp: &TopicPartition) -> bool {
    tp.topic == crate::metadata::METADATA_TOPIC
}
