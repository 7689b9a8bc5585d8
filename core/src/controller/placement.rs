//! Replica placement for new partitions, after Kafka's
//! `StripedReplicaPlacer`: leaders are striped across racks and brokers so
//! that consecutive partitions start on different racks, each partition's
//! replicas land on as many racks as it can, and within a rack brokers are
//! taken in turn. Brokers without a `broker.rack` share one unnamed rack.
//!
//! Where it differs from Kafka: fenced brokers are never placed on (Kafka
//! uses them as followers when a rack runs out of unfenced ones), and the
//! replication factor is checked against the *unfenced* brokers, so a new
//! partition never starts with a replica that cannot follow.
//!
//! Pure: the randomness (start offsets and reshuffles, which keep leaders
//! from piling onto the lowest broker ids across topics) comes from the
//! caller, so tests pin it.

use std::collections::BTreeMap;

use crate::controller::topics::TopicError;
use crate::protocol::error_code;

/// A registered broker, as placement sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsableBroker {
    pub id: i32,
    pub rack: Option<String>,
    pub fenced: bool,
}

/// A source of random numbers: `below(n)` is uniform in `0..n` (`n > 0`).
pub trait Random {
    fn below(&mut self, n: usize) -> usize;

    /// Fisher-Yates over `items`.
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// The brokers of one rack, handed out in turn: each at most once per
/// epoch (one partition), starting one further on each epoch.
#[derive(Debug)]
struct BrokerList {
    brokers: Vec<i32>,
    epoch: usize,
    index: usize,
    offset: usize,
}

impl BrokerList {
    fn new(mut brokers: Vec<i32>, random: &mut impl Random) -> BrokerList {
        brokers.sort_unstable();
        assert!(!brokers.is_empty(), "a rack has at least one broker");
        let offset = random.below(brokers.len());
        BrokerList {
            brokers,
            epoch: 0,
            index: 0,
            offset,
        }
    }

    fn next(&mut self, epoch: usize) -> Option<i32> {
        if epoch != self.epoch {
            self.epoch = epoch;
            self.index = 0;
            self.offset = (self.offset + 1) % self.brokers.len();
        }
        if self.index >= self.brokers.len() {
            return None;
        }
        let b = self.brokers[(self.index + self.offset) % self.brokers.len()];
        self.index += 1;
        Some(b)
    }
}

/// Places `partitions` new partitions of `replication_factor` replicas on
/// `brokers`; each inner list is one partition's replicas, leader first.
pub fn place(
    brokers: &[UsableBroker],
    partitions: usize,
    replication_factor: i16,
    random: &mut impl Random,
) -> Result<Vec<Vec<i32>>, TopicError> {
    let refuse = |why: String| {
        Err((
            error_code::INVALID_REPLICATION_FACTOR,
            format!("Unable to replicate the partition {replication_factor} time(s): {why}"),
        ))
    };
    if replication_factor <= 0 {
        return refuse(format!(
            "the replication factor must be positive, got {replication_factor}"
        ));
    }
    let rf = replication_factor as usize;
    let mut by_rack: BTreeMap<Option<String>, Vec<i32>> = BTreeMap::new();
    for b in brokers.iter().filter(|b| !b.fenced) {
        by_rack.entry(b.rack.clone()).or_default().push(b.id);
    }
    let unfenced: usize = by_rack.values().map(Vec::len).sum();
    if unfenced == 0 {
        return refuse(format!(
            "all {} registered broker(s) are fenced; start brokers or wait for them to catch up with the metadata log",
            brokers.len()
        ));
    }
    if rf > unfenced {
        return refuse(format!(
            "only {unfenced} broker(s) are available (unfenced, of {} registered); use a replication factor of at most {unfenced} or start more brokers",
            brokers.len()
        ));
    }
    // Racks in name order, the unnamed rack first.
    let mut racks: Vec<BrokerList> = by_rack
        .into_values()
        .map(|ids| BrokerList::new(ids, random))
        .collect();
    let mut rack_offset = random.below(racks.len());
    let mut epoch = 0usize;
    let mut placed = Vec::with_capacity(partitions);
    for _ in 0..partitions {
        if epoch == unfenced && unfenced > 1 {
            // Every broker led once in this round: reshuffle, so that the
            // next round's stripes differ.
            random.shuffle(&mut racks);
            for r in &mut racks {
                random.shuffle(&mut r.brokers);
            }
            epoch = 0;
        }
        if rack_offset >= racks.len() {
            rack_offset = 0;
        }
        let mut replicas = Vec::with_capacity(rf);
        // The leader: the first rack from the offset with a broker left.
        let mut leader_rack = None;
        for i in 0..racks.len() {
            let r = (rack_offset + i) % racks.len();
            if let Some(b) = racks[r].next(epoch) {
                replicas.push(b);
                leader_rack = Some(r);
                break;
            }
        }
        assert!(
            leader_rack.is_some(),
            "every epoch starts with all brokers free"
        );
        // Followers: one per rack in turn from the offset, skipping the
        // leader's rack the first time round.
        let mut r = rack_offset;
        // Each step either places a replica or passes a rack; every broker
        // is free once per epoch, so this bounds the walk.
        let mut steps_left = (racks.len() + 1) * (rf + 1) + unfenced;
        while replicas.len() < rf {
            assert!(steps_left > 0, "placement walked past every broker");
            steps_left -= 1;
            if Some(r) == leader_rack {
                leader_rack = None;
                r = (r + 1) % racks.len();
                continue;
            }
            let next = racks[r].next(epoch);
            r = (r + 1) % racks.len();
            if let Some(b) = next {
                replicas.push(b);
            }
        }
        debug_assert!(
            {
                let mut s = replicas.clone();
                s.sort_unstable();
                s.windows(2).all(|w| w[0] != w[1])
            },
            "a partition's replicas are distinct: {replicas:?}"
        );
        placed.push(replicas);
        epoch += 1;
        rack_offset += 1;
    }
    Ok(placed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashMap};

    /// A fixed sequence: tests see the same placement every run.
    struct Lcg(u64);

    impl Random for Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    /// Always 0: no shuffles, offsets at the start.
    struct Zero;

    impl Random for Zero {
        fn below(&mut self, _: usize) -> usize {
            0
        }
    }

    fn broker(id: i32, rack: Option<&str>) -> UsableBroker {
        UsableBroker {
            id,
            rack: rack.map(str::to_string),
            fenced: false,
        }
    }

    #[test]
    fn leaders_stripe_over_brokers_without_racks() {
        let brokers: Vec<_> = (1..=3).map(|i| broker(i, None)).collect();
        let placed = place(&brokers, 6, 2, &mut Zero).unwrap();
        let leaders: Vec<i32> = placed.iter().map(|r| r[0]).collect();
        // Every broker leads twice in six partitions.
        let mut count: HashMap<i32, usize> = HashMap::new();
        for l in &leaders {
            *count.entry(*l).or_default() += 1;
        }
        assert_eq!(
            count.values().copied().collect::<BTreeSet<_>>(),
            BTreeSet::from([2])
        );
        for r in &placed {
            assert_eq!(r.len(), 2);
            assert_ne!(r[0], r[1]);
        }
    }

    #[test]
    fn replicas_spread_over_racks_when_they_can() {
        let brokers = vec![
            broker(1, Some("a")),
            broker(2, Some("a")),
            broker(3, Some("b")),
            broker(4, Some("b")),
            broker(5, Some("c")),
            broker(6, Some("c")),
        ];
        let rack_of: HashMap<i32, &str> = brokers
            .iter()
            .map(|b| (b.id, b.rack.as_deref().unwrap()))
            .collect();
        for seed in 0..20 {
            let placed = place(&brokers, 12, 3, &mut Lcg(seed)).unwrap();
            for r in &placed {
                let racks: BTreeSet<&str> = r.iter().map(|b| rack_of[b]).collect();
                assert_eq!(racks.len(), 3, "seed {seed}: {r:?} covers every rack");
            }
            // Leaders are spread: no broker leads more than twice its share.
            let mut count: HashMap<i32, usize> = HashMap::new();
            for r in &placed {
                *count.entry(r[0]).or_default() += 1;
            }
            assert!(count.values().all(|&c| c <= 4), "seed {seed}: {count:?}");
        }
    }

    #[test]
    fn more_replicas_than_racks_reuse_racks_evenly() {
        let brokers = vec![
            broker(1, Some("a")),
            broker(2, Some("a")),
            broker(3, Some("b")),
            broker(4, Some("b")),
        ];
        for seed in 0..10 {
            for r in place(&brokers, 8, 3, &mut Lcg(seed)).unwrap() {
                let in_a = r.iter().filter(|b| **b <= 2).count();
                assert!((1..=2).contains(&in_a), "seed {seed}: {r:?}");
                assert_eq!(r.iter().collect::<BTreeSet<_>>().len(), 3);
            }
        }
    }

    #[test]
    fn fenced_brokers_get_no_replicas() {
        let mut brokers: Vec<_> = (1..=4).map(|i| broker(i, None)).collect();
        brokers[1].fenced = true;
        for seed in 0..10 {
            for r in place(&brokers, 9, 3, &mut Lcg(seed)).unwrap() {
                assert!(!r.contains(&2), "seed {seed}: {r:?}");
            }
        }
    }

    #[test]
    fn too_few_unfenced_brokers_is_invalid_replication_factor() {
        let mut brokers: Vec<_> = (1..=3).map(|i| broker(i, None)).collect();
        brokers[2].fenced = true;
        let (code, msg) = place(&brokers, 1, 3, &mut Zero).unwrap_err();
        assert_eq!(code, error_code::INVALID_REPLICATION_FACTOR);
        assert!(msg.contains("only 2 broker(s) are available"), "{msg}");
        for b in &mut brokers {
            b.fenced = true;
        }
        let (code, msg) = place(&brokers, 1, 1, &mut Zero).unwrap_err();
        assert_eq!(code, error_code::INVALID_REPLICATION_FACTOR);
        assert!(msg.contains("fenced"), "{msg}");
        let (code, _) = place(&brokers[..1], 1, 0, &mut Zero).unwrap_err();
        assert_eq!(code, error_code::INVALID_REPLICATION_FACTOR);
    }

    #[test]
    fn one_broker_takes_every_partition() {
        let placed = place(&[broker(7, None)], 5, 1, &mut Lcg(3)).unwrap();
        assert_eq!(placed, vec![vec![7]; 5]);
    }
}
