//! The share groups' `simple` assignor (KIP-932): every subscribed
//! partition goes to at least one of its subscribers, and when a topic has
//! more subscribers than partitions, its partitions are shared, several
//! members to a partition. Share groups need no revocation: records of a
//! shared partition are handed out by the share partition's locks, not by
//! exclusive ownership.
//!
//! Per topic, with its subscribers sorted by member id: with no more
//! members than partitions, partition `p` goes to member `p mod M` (each
//! partition to one member, counts differing by at most one); with more,
//! member `i` gets partition `i mod P` (each member one partition, each
//! partition to `M / P` or one more members). Deterministic, so replaying a
//! group computes the same target; not sticky across membership changes
//! (Kafka's is), which costs share sessions a re-fetch, never correctness.

use std::collections::{BTreeMap, BTreeSet};

use crate::group::consumer::topics::{Assignment, TopicsImage};

/// The assignor's name, as ShareGroupDescribe reports it.
pub const SIMPLE_ASSIGNOR: &str = "simple";

/// Assigns the partitions of `topics` to `subscriptions` (member id ->
/// subscribed topic names). Every member gets an entry, possibly empty.
pub fn assign(
    subscriptions: &BTreeMap<String, BTreeSet<String>>,
    topics: &TopicsImage,
) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = subscriptions
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    let mut subscribers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (member, names) in subscriptions {
        for name in names {
            subscribers.entry(name).or_default().push(member);
        }
    }
    for (name, members) in subscribers {
        let Some(topic) = topics.by_name(name) else {
            continue;
        };
        let partitions = topic.num_partitions();
        if partitions <= 0 {
            continue;
        }
        let count = members.len() as i32;
        assert!(count > 0);
        if count <= partitions {
            for p in 0..partitions {
                let member = members[(p % count) as usize];
                out.get_mut(member)
                    .expect("every member has an entry")
                    .insert(topic.id, p);
            }
        } else {
            for (i, member) in members.iter().enumerate() {
                let p = i as i32 % partitions;
                out.get_mut(*member)
                    .expect("every member has an entry")
                    .insert(topic.id, p);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subs(list: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        list.iter()
            .map(|(m, ts)| (m.to_string(), ts.iter().map(|t| t.to_string()).collect()))
            .collect()
    }

    /// Every partition has a member; counts per member differ by at most one.
    fn check_cover(a: &BTreeMap<String, Assignment>, topics: &TopicsImage, name: &str) {
        let t = topics.by_name(name).unwrap();
        for p in 0..t.num_partitions() {
            assert!(
                a.values().any(|x| x.contains(&t.id, p)),
                "{name}-{p} unassigned"
            );
        }
    }

    #[test]
    fn fewer_members_than_partitions_split_them() {
        let topics = TopicsImage::default().with_topic("t", 5);
        let a = assign(&subs(&[("a", &["t"]), ("b", &["t"])]), &topics);
        assert_eq!(a["a"].len(), 3);
        assert_eq!(a["b"].len(), 2);
        assert!(!a["a"].intersects(&a["b"]));
        check_cover(&a, &topics, "t");
    }

    #[test]
    fn more_members_than_partitions_share_them() {
        let topics = TopicsImage::default().with_topic("t", 2);
        let a = assign(
            &subs(&[
                ("a", &["t"]),
                ("b", &["t"]),
                ("c", &["t"]),
                ("d", &["t"]),
                ("e", &["t"]),
            ]),
            &topics,
        );
        for m in ["a", "b", "c", "d", "e"] {
            assert_eq!(a[m].len(), 1, "{m}");
        }
        let t = topics.by_name("t").unwrap().id;
        let sharing0 = a.values().filter(|x| x.contains(&t, 0)).count();
        let sharing1 = a.values().filter(|x| x.contains(&t, 1)).count();
        assert_eq!((sharing0, sharing1), (3, 2));
    }

    #[test]
    fn members_get_only_what_they_subscribe_to() {
        let topics = TopicsImage::default().with_topic("t", 2).with_topic("u", 1);
        let a = assign(
            &subs(&[("a", &["t", "u"]), ("b", &["u"]), ("c", &["gone"])]),
            &topics,
        );
        let (t, u) = (
            topics.by_name("t").unwrap().id,
            topics.by_name("u").unwrap().id,
        );
        assert_eq!(a["a"], Assignment::from_pairs([(t, 0), (t, 1), (u, 0)]));
        assert_eq!(a["b"], Assignment::from_pairs([(u, 0)]));
        assert!(a["c"].is_empty());
        check_cover(&a, &topics, "u");
    }
}
