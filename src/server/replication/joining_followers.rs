//! Partitions that become followers while a metadata image is applied join
//! their fetchers together, when the image is done, as Kafka's
//! `ReplicaManager.applyDelta` hands one delta's followers to
//! `addFetcherForPartitions` in one call.
//!
//! Why it matters: a fetcher that starts (or starts a round) with the first
//! of a new topic's partitions sends a Fetch that the leader parks for up
//! to `replica.fetch.wait.max.ms` when that partition has no data yet, and
//! the partitions the image adds meanwhile wait for that Fetch to come
//! back. Under `acks=all` load on a new topic, every produce to them then
//! waits the same (measured: the first second's p99 followed
//! `replica.fetch.wait.max.ms`, about 0.6 s at its default of 500).
//!
//! A partition's follower state and its need to truncate first are set as
//! before, at once; only the moment its fetcher takes it up is held.
//!
//! A fetcher that runs already (it follows other partitions of that
//! leader) takes new followers up in its next round, after the Fetch it has
//! in flight. The leader answers that Fetch early, as it lacks a partition
//! the follower gained there (`node::follower_gains`); Kafka's fetcher
//! thread waits for it, up to `replica.fetch.wait.max.ms`. Cutting that
//! Fetch short from this side (dropping its connection) was tried and left
//! out: the leader still answers the dropped Fetch when its wait ends, and
//! counts the follower's stale fetch offset then, after the newer Fetch of
//! the new connection (ARCHITECTURE.md, "Replication").

use std::collections::{BTreeSet, HashMap};

use crate::topic_partition::TopicPartition;

/// The followers waiting for the image being applied to finish.
#[derive(Debug, Default)]
pub struct JoiningFollowers {
    /// Images being applied now (a shard applies one at a time; a count
    /// keeps an overlapping hold correct anyway).
    holds: u32,
    /// Each waiting partition and the leader it follows: a partition that
    /// joined another leader earlier in the same image follows the last.
    waiting: HashMap<TopicPartition, i32>,
}

impl JoiningFollowers {
    /// An image starts being applied: followers it makes wait for it.
    pub fn hold(&mut self) {
        self.holds += 1;
    }

    /// `tp` now follows `leader`. Returns whether its fetcher takes it up
    /// now (no image is being applied); otherwise it waits for `release`.
    pub fn join(&mut self, tp: TopicPartition, leader: i32) -> bool {
        if self.holds == 0 {
            return true;
        }
        self.waiting.insert(tp, leader);
        false
    }

    /// The image is applied. Returns the leaders whose fetchers take up the
    /// partitions that waited (in order, once each), once the last hold is
    /// released.
    pub fn release(&mut self) -> Vec<i32> {
        self.holds = self.holds.saturating_sub(1);
        if self.holds > 0 {
            return Vec::new();
        }
        let leaders: BTreeSet<i32> = self.waiting.drain().map(|(_, leader)| leader).collect();
        leaders.into_iter().collect()
    }

    /// Whether `tp` waits for the image: its fetcher leaves it out.
    pub fn waits(&self, tp: &TopicPartition) -> bool {
        self.waiting.contains_key(tp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    #[test]
    fn without_an_image_being_applied_a_follower_joins_at_once() {
        let mut j = JoiningFollowers::default();
        assert!(j.join(tp(0), 2));
        assert!(!j.waits(&tp(0)));
        assert!(j.release().is_empty());
    }

    #[test]
    fn one_images_followers_join_together_when_it_is_applied() {
        let mut j = JoiningFollowers::default();
        j.hold();
        for p in 0..12 {
            assert!(!j.join(tp(p), 2 + p % 2));
        }
        assert!((0..12).all(|p| j.waits(&tp(p))));
        assert_eq!(j.release(), vec![2, 3]);
        assert!((0..12).all(|p| !j.waits(&tp(p))));
        // Released: the next follower joins at once again.
        assert!(j.join(tp(20), 2));
    }

    #[test]
    fn a_partition_that_changes_leader_within_an_image_joins_the_last_one() {
        let mut j = JoiningFollowers::default();
        j.hold();
        j.join(tp(0), 2);
        j.join(tp(0), 3);
        assert_eq!(j.release(), vec![3]);
    }

    #[test]
    fn overlapping_holds_release_with_the_last() {
        let mut j = JoiningFollowers::default();
        j.hold();
        j.hold();
        j.join(tp(0), 2);
        assert!(j.release().is_empty());
        assert!(j.waits(&tp(0)));
        assert_eq!(j.release(), vec![2]);
        // A release without a hold (never expected) changes nothing.
        assert!(j.release().is_empty());
        assert!(j.join(tp(1), 2));
    }
}
