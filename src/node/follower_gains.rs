//! The partitions a follower has just gained on this leader, until its
//! fetches ask for them.
//!
//! A follower's Fetch that finds nothing new is parked at the leader for up
//! to `replica.fetch.wait.max.ms` (500 ms). When a metadata image gives the
//! follower a partition on this leader (a new topic, a failover that moves
//! leadership here, a reassignment that adds the follower), its fetcher
//! adds the partition only to its next Fetch, so the partition's first
//! acks=all produces waited for the parked one to time out: half a second
//! for every new topic on a cluster that already replicates another
//! (`tuning/new-topics.sh`).
//!
//! So the leader answers a parked follower Fetch that lacks a partition the
//! follower gained here, and while the follower's Fetches still lack it
//! parks them only briefly (`FOLLOWER_JOIN_RECHECK_MS`): the follower
//! applies the same image at about the same time, and its next Fetch
//! carries the partition. The follower's side is unchanged; the Fetch that
//! is answered early is an ordinary answer, counted as every other (a Fetch
//! the follower dropped instead would be answered later with a stale
//! offset). A gain the follower never asks for (its replica is offline
//! there) is forgotten after `FOLLOWER_JOIN_GRACE_MS`, so it cannot keep a
//! follower's Fetches short for longer.
//!
//! Every shard applies every image, so each shard keeps this for the whole
//! node, and the fetch handler consults the one of the connection's shard.
//! Pure: the caller passes the time, and the tests drive it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::shard::shard::Shard;
use crate::topic_partition::TopicPartition;

/// Per follower broker: the partitions gained here and when each gain is
/// forgotten, in milliseconds on the caller's clock.
#[derive(Debug, Default)]
pub struct FollowerGains {
    by_follower: HashMap<i32, HashMap<TopicPartition, i64>>,
    /// Parked follower Fetches answered early for a gain
    /// (`pinlog_replica_fetches_answered_for_gains_total`).
    answered_early: u64,
}

impl FollowerGains {
    /// The shard's record.
    pub fn of(shard: &Shard) -> Rc<RefCell<FollowerGains>> {
        if let Some(g) = shard.extension::<RefCell<FollowerGains>>() {
            return g;
        }
        let g = Rc::new(RefCell::new(FollowerGains::default()));
        shard.set_extension(g.clone());
        g
    }

    /// `follower` gained `tp` on this leader; forgotten at `until_ms`.
    pub fn gain(&mut self, follower: i32, tp: TopicPartition, until_ms: i64) {
        self.by_follower
            .entry(follower)
            .or_default()
            .insert(tp, until_ms);
    }

    /// Forgets every gain past its time, of followers that stopped
    /// fetching too (a removed broker): [`FollowerGains::lacks`] forgets
    /// only the asking follower's. Called with each image's gains, so
    /// what is kept is at most the gains of the last grace period.
    pub fn forget_expired(&mut self, now_ms: i64) {
        self.by_follower.retain(|_, gained| {
            gained.retain(|_, until| now_ms < *until);
            !gained.is_empty()
        });
    }

    /// Whether a Fetch by `follower` over `fetched` lacks a partition it
    /// gained here. The gains it carries, and those past their time, are
    /// forgotten.
    pub fn lacks(
        &mut self,
        follower: i32,
        fetched: impl Fn(&TopicPartition) -> bool,
        now_ms: i64,
    ) -> bool {
        let Some(gained) = self.by_follower.get_mut(&follower) else {
            return false;
        };
        gained.retain(|tp, until| now_ms < *until && !fetched(tp));
        if gained.is_empty() {
            self.by_follower.remove(&follower);
            return false;
        }
        true
    }

    /// A parked Fetch was answered early because it lacked a gain.
    pub fn note_answered_early(&mut self) {
        self.answered_early += 1;
    }

    /// Parked follower Fetches answered early for a gain, since start.
    pub fn answered_early(&self) -> u64 {
        self.answered_early
    }

    /// Followers with gains not yet asked for.
    #[cfg(test)]
    fn pending(&self, follower: i32) -> usize {
        self.by_follower.get(&follower).map_or(0, HashMap::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    #[test]
    fn a_fetch_lacks_a_gain_until_it_carries_it() {
        let mut g = FollowerGains::default();
        g.gain(2, tp(0), 5_000);
        g.gain(2, tp(1), 5_000);
        // The follower's Fetch from before its fetcher added them.
        assert!(g.lacks(2, |p| p.partition == 7, 100));
        // One added: the other is still lacking.
        assert!(g.lacks(2, |p| p.partition <= 0, 120));
        assert_eq!(g.pending(2), 1);
        // Both: nothing left for that follower.
        assert!(!g.lacks(2, |p| p.partition <= 1, 140));
        assert_eq!(g.pending(2), 0);
        // Carried once is enough: a later Fetch without it lacks nothing.
        assert!(!g.lacks(2, |_| false, 160));
    }

    #[test]
    fn gains_are_per_follower() {
        let mut g = FollowerGains::default();
        g.gain(2, tp(0), 5_000);
        assert!(!g.lacks(3, |_| false, 100), "broker 3 gained nothing");
        assert!(g.lacks(2, |_| false, 100));
    }

    #[test]
    fn a_gain_never_asked_for_is_forgotten_in_time() {
        let mut g = FollowerGains::default();
        g.gain(2, tp(0), 5_000);
        assert!(g.lacks(2, |_| false, 4_999));
        assert!(!g.lacks(2, |_| false, 5_000));
        assert_eq!(g.pending(2), 0);
    }

    #[test]
    fn a_follower_that_never_fetches_again_is_forgotten_with_its_gains() {
        let mut g = FollowerGains::default();
        g.gain(4, tp(0), 1_000);
        g.gain(2, tp(1), 9_000);
        g.forget_expired(1_000);
        assert_eq!(g.pending(4), 0);
        assert!(!g.by_follower.contains_key(&4));
        assert_eq!(g.pending(2), 1);
    }

    #[test]
    fn a_second_gain_of_the_same_partition_moves_its_time() {
        let mut g = FollowerGains::default();
        g.gain(2, tp(0), 1_000);
        g.gain(2, tp(0), 9_000);
        assert!(g.lacks(2, |_| false, 5_000));
    }
}
