//! The core balancer's decision, as a pure function: given each
//! partition's rate (bytes in + out per second, averaged over a window) and
//! the shard that owns it, whether to move a partition, which, and where.
//! The loop around it (`server/shard_placement/balancer.rs`) measures and moves.
//!
//! A shard is hot when its load exceeds the mean over the shards by more
//! than the threshold, and carries at least a minimum rate (below it the
//! imbalance is noise and moving costs more than it gains). Only a
//! sustained imbalance moves anything: the rates must be averaged over at
//! least `sustain_ms`, so a spike shorter than that, or a pause in the load,
//! weighs only its share. Then one partition moves, from the hottest shard
//! to the coldest: the one whose move lowers the higher of the two loads
//! the most. A move that would only swap which shard is hot (one partition
//! carries the whole load) is not made. After a move the loop starts a new
//! window, so the rates re-measure before the next move and two shards
//! never trade a partition back and forth.

use crate::shard::partition_table::ShardId;
use crate::topic_partition::TopicPartition;

/// How the balancer decides (settings `shard.balancer.*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BalancerSettings {
    /// A shard is hot above `mean * (1 + threshold)`.
    pub threshold: f64,
    /// The shortest window the rates must be averaged over.
    pub sustain_ms: i64,
    /// A hot shard below this rate (bytes/s) is left alone.
    pub min_bytes_per_sec: f64,
}

/// One partition's rate on the shard that owns it.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionRate {
    pub tp: TopicPartition,
    pub shard: ShardId,
    pub bytes_per_sec: f64,
}

/// A move the balancer asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedMove {
    pub tp: TopicPartition,
    pub from: ShardId,
    pub to: ShardId,
    /// The two shards' loads before the move, and what they should be after.
    pub loads_before: (f64, f64),
    pub loads_after: (f64, f64),
}

/// The move to make, if any, given `rates` averaged over the last
/// `window_ms`.
pub fn decide(
    settings: &BalancerSettings,
    window_ms: i64,
    shard_count: usize,
    rates: &[PartitionRate],
) -> Option<PlannedMove> {
    if shard_count < 2 || window_ms < settings.sustain_ms {
        return None;
    }
    let mut loads = vec![0.0f64; shard_count];
    for r in rates {
        if r.shard < shard_count {
            loads[r.shard] += r.bytes_per_sec.max(0.0);
        }
    }
    let mean = loads.iter().sum::<f64>() / shard_count as f64;
    let by_load = |a: &(usize, &f64), b: &(usize, &f64)| a.1.total_cmp(b.1);
    let (hot, &hot_load) = loads.iter().enumerate().max_by(by_load)?;
    let (cold, &cold_load) = loads.iter().enumerate().min_by(by_load)?;
    if hot_load <= mean * (1.0 + settings.threshold) || hot_load < settings.min_bytes_per_sec {
        return None;
    }
    // The partition of the hot shard whose move leaves the lower maximum
    // of the two loads, if it is lower than now.
    let (r, after, _) = rates
        .iter()
        .filter(|r| r.shard == hot && r.bytes_per_sec > 0.0)
        .map(|r| {
            let after = (hot_load - r.bytes_per_sec, cold_load + r.bytes_per_sec);
            (r, after, after.0.max(after.1))
        })
        .filter(|(_, _, max_after)| *max_after < hot_load)
        .min_by(|a, b| a.2.total_cmp(&b.2).then_with(|| a.0.tp.cmp(&b.0.tp)))?;
    Some(PlannedMove {
        tp: r.tp.clone(),
        from: hot,
        to: cold,
        loads_before: (hot_load, cold_load),
        loads_after: after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: f64 = 1024.0 * 1024.0;

    fn settings() -> BalancerSettings {
        BalancerSettings {
            threshold: 0.2,
            sustain_ms: 30_000,
            min_bytes_per_sec: MB,
        }
    }

    fn rate(topic: &str, p: i32, shard: usize, mb: f64) -> PartitionRate {
        PartitionRate {
            tp: TopicPartition::new(topic, p),
            shard,
            bytes_per_sec: mb * MB,
        }
    }

    #[test]
    fn two_hot_partitions_on_one_shard_are_split_once_measured_long_enough() {
        let rates = [
            rate("hot", 0, 0, 50.0),
            rate("hot", 1, 0, 40.0),
            rate("cold", 0, 1, 1.0),
        ];
        // Not before the rates cover sustain_ms.
        assert_eq!(decide(&settings(), 29_999, 2, &rates), None);
        let m = decide(&settings(), 30_000, 2, &rates).expect("a move");
        // Moving hot-1 (40) leaves max(50, 41) = 50; hot-0 (50) leaves
        // max(40, 51) = 51: hot-1 goes.
        assert_eq!(m.tp, TopicPartition::new("hot", 1));
        assert_eq!((m.from, m.to), (0, 1));
        assert_eq!(m.loads_after, (50.0 * MB, 41.0 * MB));
    }

    #[test]
    fn a_balanced_load_moves_nothing() {
        let rates = [rate("a", 0, 0, 50.0), rate("a", 1, 1, 45.0)];
        assert_eq!(decide(&settings(), 600_000, 2, &rates), None);
        // 20% over the mean of 47.5 is 57: 56 on one shard is within it.
        let rates = [rate("a", 0, 0, 56.0), rate("a", 1, 1, 39.0)];
        assert_eq!(decide(&settings(), 600_000, 2, &rates), None);
    }

    #[test]
    fn one_partition_carrying_the_load_stays_where_it_is() {
        // Moving it would only make the other shard the hot one.
        let rates = [rate("big", 0, 0, 80.0), rate("small", 0, 1, 5.0)];
        assert_eq!(decide(&settings(), 600_000, 2, &rates), None);
    }

    #[test]
    fn a_light_load_is_left_alone_however_skewed() {
        let rates = [rate("a", 0, 0, 0.4), rate("a", 1, 0, 0.4)];
        assert_eq!(decide(&settings(), 600_000, 2, &rates), None);
    }

    #[test]
    fn one_shard_has_nothing_to_balance() {
        let rates = [rate("a", 0, 0, 50.0), rate("a", 1, 0, 50.0)];
        assert_eq!(decide(&settings(), 600_000, 1, &rates), None);
    }

    #[test]
    fn moves_go_from_the_hottest_shard_to_the_coldest() {
        let rates = [
            rate("a", 0, 0, 10.0),
            rate("a", 1, 1, 60.0),
            rate("a", 2, 1, 20.0),
            rate("a", 3, 2, 30.0),
            rate("a", 4, 3, 0.0),
        ];
        let m = decide(&settings(), 30_000, 4, &rates).expect("a move");
        assert_eq!((m.from, m.to), (1, 3));
        // a-1 (60): max(20, 60) = 60; a-2 (20): max(60, 20) = 60; equal:
        // the first by name.
        assert_eq!(m.tp, TopicPartition::new("a", 1));
    }
}
