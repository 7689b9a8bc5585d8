//! What the coordinator knows of the cluster's topics, and the partition
//! sets it hands around.
//!
//! The broker builds a [`TopicsImage`] from its metadata image and passes
//! it to every call that may need it; the coordinator keeps no reference to
//! it. Assignments name topics by id, as Kafka's records do, so a topic
//! deleted and re-created under the same name is a different topic.

use std::collections::{BTreeMap, BTreeSet};

/// A topic id, Kafka's UUID.
pub type TopicId = [u8; 16];

/// Partitions by topic id: an assignment, a revocation set, an owned set.
/// Ordered maps, so iteration (and thus every decision and every record)
/// is deterministic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Assignment(pub BTreeMap<TopicId, BTreeSet<i32>>);

impl Assignment {
    pub fn new() -> Assignment {
        Assignment::default()
    }

    pub fn from_pairs(pairs: impl IntoIterator<Item = (TopicId, i32)>) -> Assignment {
        let mut a = Assignment::new();
        for (t, p) in pairs {
            a.insert(t, p);
        }
        a
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.values().map(BTreeSet::len).sum()
    }

    pub fn contains(&self, topic: &TopicId, partition: i32) -> bool {
        self.0.get(topic).is_some_and(|s| s.contains(&partition))
    }

    pub fn insert(&mut self, topic: TopicId, partition: i32) {
        self.0.entry(topic).or_default().insert(partition);
    }

    /// Removes one partition; a topic left without partitions goes too, so
    /// that equal sets compare equal.
    pub fn remove(&mut self, topic: &TopicId, partition: i32) -> bool {
        let Some(set) = self.0.get_mut(topic) else {
            return false;
        };
        let removed = set.remove(&partition);
        if set.is_empty() {
            self.0.remove(topic);
        }
        removed
    }

    pub fn iter(&self) -> impl Iterator<Item = (TopicId, i32)> + '_ {
        self.0
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
    }

    /// Whether every partition of `self` is in `other`.
    pub fn is_subset_of(&self, other: &Assignment) -> bool {
        self.iter().all(|(t, p)| other.contains(&t, p))
    }

    /// Whether the two share a partition.
    pub fn intersects(&self, other: &Assignment) -> bool {
        self.iter().any(|(t, p)| other.contains(&t, p))
    }

    /// The partitions as `(topic, sorted partitions)` pairs, the shape of
    /// Kafka's `TopicPartitions` arrays.
    pub fn to_topic_partitions(&self) -> Vec<(TopicId, Vec<i32>)> {
        self.0
            .iter()
            .map(|(t, ps)| (*t, ps.iter().copied().collect()))
            .collect()
    }

    pub fn from_topic_partitions(list: &[(TopicId, Vec<i32>)]) -> Assignment {
        let mut a = Assignment::new();
        for (t, ps) in list {
            for p in ps {
                a.insert(*t, *p);
            }
        }
        a
    }
}

/// One topic as the coordinator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub id: TopicId,
    pub name: String,
    /// The racks of each partition's replicas, by partition index; its
    /// length is the partition count. Empty inner lists when racks are
    /// unknown.
    pub partition_racks: Vec<Vec<String>>,
}

impl TopicInfo {
    pub fn num_partitions(&self) -> i32 {
        self.partition_racks.len() as i32
    }
}

/// The cluster's topics by name, with the version of the metadata they
/// come from (the metadata log offset in the broker): a regular
/// expression resolved against one version need not be resolved again
/// until the version changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicsImage {
    pub version: i64,
    pub topics: BTreeMap<String, TopicInfo>,
}

impl TopicsImage {
    pub fn by_name(&self, name: &str) -> Option<&TopicInfo> {
        self.topics.get(name)
    }

    pub fn by_id(&self, id: &TopicId) -> Option<&TopicInfo> {
        // Linear, but only used where a name is unknown (the answers and
        // the checks of tests); decisions go through `by_name`.
        self.topics.values().find(|t| &t.id == id)
    }

    /// A test and simulation helper: a topic with `partitions` partitions
    /// and no racks, its id derived from its name.
    pub fn with_topic(mut self, name: &str, partitions: i32) -> TopicsImage {
        self.add_topic(name, partitions, &[]);
        self
    }

    /// Adds (or replaces) a topic whose id is derived from its name; the
    /// partition racks cycle through `racks` (none when empty).
    pub fn add_topic(&mut self, name: &str, partitions: i32, racks: &[&str]) {
        let mut id = [0u8; 16];
        for (i, b) in name.bytes().enumerate() {
            id[i % 16] ^= b.wrapping_add(i as u8);
        }
        id[15] ^= 0x80;
        let partition_racks = (0..partitions.max(0) as usize)
            .map(|p| {
                if racks.is_empty() {
                    Vec::new()
                } else {
                    vec![racks[p % racks.len()].to_string()]
                }
            })
            .collect();
        self.topics.insert(
            name.to_string(),
            TopicInfo {
                id,
                name: name.to_string(),
                partition_racks,
            },
        );
        self.version += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_drop_empty_topics_so_equal_sets_compare_equal() {
        let t = [1u8; 16];
        let mut a = Assignment::from_pairs([(t, 0), (t, 1)]);
        assert!(a.remove(&t, 0));
        assert!(a.remove(&t, 1));
        assert_eq!(a, Assignment::new());
        assert!(!a.remove(&t, 1));
    }

    #[test]
    fn subsets_and_topic_partitions() {
        let (t, u) = ([1u8; 16], [2u8; 16]);
        let a = Assignment::from_pairs([(t, 0), (u, 3)]);
        let b = Assignment::from_pairs([(t, 0), (t, 1), (u, 3)]);
        assert!(a.is_subset_of(&b));
        assert!(!b.is_subset_of(&a));
        assert!(a.intersects(&b));
        assert_eq!(
            Assignment::from_topic_partitions(&b.to_topic_partitions()),
            b
        );
        assert_eq!(b.len(), 3);
    }
}
