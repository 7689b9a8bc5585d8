//! Which shard owns which partition.
//!
//! Every shard holds its own copy of the table and consults it without
//! synchronisation. The default owner is a stable hash of the partition, so
//! every shard (and every restart) computes the same answer. A partition
//! moved to another shard (`pinlog partition move`, the core balancer) has
//! an override: the move broadcasts it to every shard as a message, and the
//! data directory's `shard-placement` file keeps it across restarts.

use std::collections::HashMap;

use crate::topic_partition::TopicPartition;

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

    /// The table with the stored placement of `present` partitions. An
    /// entry for a shard this broker no longer has (it restarted with fewer
    /// shards) is left out and returned, so the caller can say so: those
    /// partitions go back to their default shard.
    pub fn with_placement<'a>(
        shard_count: usize,
        placement: impl IntoIterator<Item = (&'a TopicPartition, i64)>,
        present: impl Fn(&TopicPartition) -> bool,
    ) -> (Self, Vec<(TopicPartition, i64)>) {
        let mut table = PartitionTable::new(shard_count);
        let mut ignored = Vec::new();
        for (tp, shard) in placement {
            if !present(tp) {
                continue;
            }
            match usize::try_from(shard) {
                Ok(s) if s < shard_count => table.set_owner(tp.clone(), s),
                _ => ignored.push((tp.clone(), shard)),
            }
        }
        ignored.sort();
        (table, ignored)
    }

    pub fn shard_count(&self) -> usize {
        self.shard_count
    }

    /// The shard that owns `tp`.
    pub fn owner(&self, tp: &TopicPartition) -> ShardId {
        if let Some(&s) = self.overrides.get(tp) {
            return s;
        }
        self.default_owner(tp)
    }

    /// The shard that owns `tp` when nothing moved it.
    pub fn default_owner(&self, tp: &TopicPartition) -> ShardId {
        (stable_hash(tp) % self.shard_count as u64) as ShardId
    }

    /// Moves `tp` to `shard`. The caller moves the partition's state first.
    /// A move back to the default shard removes the override.
    pub fn set_owner(&mut self, tp: TopicPartition, shard: ShardId) {
        assert!(shard < self.shard_count, "shard {shard} does not exist");
        if shard == self.default_owner(&tp) {
            self.overrides.remove(&tp);
        } else {
            self.overrides.insert(tp, shard);
        }
    }

    /// The partitions that live off their default shard, sorted: what the
    /// `shard-placement` file holds.
    pub fn placement(&self) -> Vec<(TopicPartition, ShardId)> {
        let mut v: Vec<_> = self
            .overrides
            .iter()
            .map(|(tp, &s)| (tp.clone(), s))
            .collect();
        v.sort();
        v
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
        assert_eq!(t.placement(), vec![(tp.clone(), other)]);
        // Back home: nothing left to store.
        t.set_owner(tp.clone(), before);
        assert_eq!(t.owner(&tp), before);
        assert!(t.placement().is_empty());
    }

    #[test]
    fn stored_placement_skips_gone_partitions_and_missing_shards() {
        let (a, b, c) = (
            TopicPartition::new("a", 0),
            TopicPartition::new("b", 0),
            TopicPartition::new("gone", 0),
        );
        let to_other = |tp: &TopicPartition| (PartitionTable::new(2).owner(tp) + 1) % 2;
        let stored = [(&a, to_other(&a) as i64), (&b, 7), (&c, 1)];
        let (t, ignored) = PartitionTable::with_placement(2, stored, |tp| tp.topic != "gone");
        assert_eq!(t.owner(&a), to_other(&a));
        assert_eq!(t.owner(&b), t.default_owner(&b));
        assert_eq!(ignored, vec![(b, 7)]);
        assert_eq!(t.placement().len(), 1);
    }
}
