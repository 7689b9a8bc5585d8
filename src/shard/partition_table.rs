//! Which shard owns which partition.
//!
//! Every shard holds its own copy of the table and consults it without
//! synchronisation. The default owner is a stable hash of the partition, so
//! every shard (and every restart) computes the same answer; explicit moves
//! are overrides that the runtime broadcasts to every shard as a message.

use std::collections::HashMap;

use crate::log::topic_partition::TopicPartition;

/// Index of a shard: 0..shard_count.
pub type ShardId = usize;

#[derive(Debug, Clone)]
pub struct PartitionTable {
    shard_count: usize,
    overrides: HashMap<TopicPartition, ShardId>,
}

impl PartitionTable {
    pub fn new(shard_count: usize) -> Self {
        assert!(shard_count > 0, "a broker needs at least one shard");
        PartitionTable {
            shard_count,
            overrides: HashMap::new(),
        }
    }

    pub fn shard_count(&self) -> usize {
        self.shard_count
    }

    /// The shard that owns `tp`.
    pub fn owner(&self, tp: &TopicPartition) -> ShardId {
        if let Some(&s) = self.overrides.get(tp) {
            return s;
        }
        (stable_hash(tp) % self.shard_count as u64) as ShardId
    }

    /// Moves `tp` to `shard`. The caller moves the partition's state first.
    pub fn set_owner(&mut self, tp: TopicPartition, shard: ShardId) {
        assert!(shard < self.shard_count, "shard {shard} does not exist");
        self.overrides.insert(tp, shard);
    }
}

/// FNV-1a over the topic and partition: stable across processes and
/// releases, unlike `std`'s randomly seeded hasher. Partitions of one topic
/// are spread round-robin from a per-topic starting shard.
fn stable_hash(tp: &TopicPartition) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in tp.topic.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h.wrapping_add(tp.partition as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_of_a_topic_spread_over_all_shards() {
        let t = PartitionTable::new(4);
        let mut seen = [0usize; 4];
        for p in 0..16 {
            seen[t.owner(&TopicPartition::new("orders", p))] += 1;
        }
        assert_eq!(seen, [4, 4, 4, 4]);
    }

    #[test]
    fn overrides_win_and_owner_is_stable() {
        let mut t = PartitionTable::new(3);
        let tp = TopicPartition::new("a", 1);
        let before = t.owner(&tp);
        assert_eq!(before, PartitionTable::new(3).owner(&tp));
        let other = (before + 1) % 3;
        t.set_owner(tp.clone(), other);
        assert_eq!(t.owner(&tp), other);
    }
}
