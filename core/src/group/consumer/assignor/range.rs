//! The `range` assignor, as Kafka's server-side one: for each topic, the
//! members subscribed to it in a fixed order (static members by instance
//! id first, then the others by member id) each get one contiguous range
//! of its partitions, the first `partitions % members` of them one more.
//! Topics with the same partition count are therefore co-partitioned:
//! a member gets the same partition numbers of each, which joins of
//! co-partitioned topics rely on.
//!
//! Like Kafka's, it ignores racks and current ownership: its ranges are a
//! function of the membership alone, and stickiness follows from that
//! (an unchanged membership gives the same ranges).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::group::consumer::assignor::{GroupSpec, MemberSpec};
use crate::group::consumer::topics::Assignment;

fn member_order(a: &(&String, &MemberSpec), b: &(&String, &MemberSpec)) -> Ordering {
    match (&a.1.instance_id, &b.1.instance_id) {
        (Some(x), Some(y)) => x.cmp(y).then_with(|| a.0.cmp(b.0)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.0.cmp(b.0),
    }
}

pub fn assign(spec: &GroupSpec) -> BTreeMap<String, Assignment> {
    let mut members: Vec<(&String, &MemberSpec)> = spec.members.iter().collect();
    members.sort_by(member_order);
    let mut out: BTreeMap<String, Assignment> = spec
        .members
        .keys()
        .map(|id| (id.clone(), Assignment::new()))
        .collect();
    for (t, topic) in &spec.topics {
        let subscribers: Vec<&String> = members
            .iter()
            .filter(|(_, m)| m.topics.contains(t))
            .map(|(id, _)| *id)
            .collect();
        if subscribers.is_empty() {
            continue;
        }
        let n = topic.num_partitions();
        let per_member = n / subscribers.len() as i32;
        let mut extra = n % subscribers.len() as i32;
        let mut next = 0;
        for id in subscribers {
            let mut quota = per_member;
            if extra > 0 {
                quota += 1;
                extra -= 1;
            }
            let end = (next + quota).min(n);
            let a = out.get_mut(id).expect("every member has an entry");
            for p in next..end {
                a.insert(*t, p);
            }
            next = end;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::consumer::assignor::check_assignment;
    use crate::group::consumer::assignor::test_support::*;

    #[test]
    fn ranges_are_contiguous_and_the_first_members_get_the_extra() {
        let s = spec(
            &[("a", &[1, 2], None), ("b", &[1, 2], None)],
            &[(1, 3, &[]), (2, 3, &[])],
        );
        let out = assign(&s);
        check_assignment(&s, &out).unwrap();
        let (t1, t2) = (topic(1), topic(2));
        // Co-partitioned: a gets 0-1 of both topics, b gets 2 of both.
        assert_eq!(
            out["a"],
            Assignment::from_pairs([(t1, 0), (t1, 1), (t2, 0), (t2, 1)])
        );
        assert_eq!(out["b"], Assignment::from_pairs([(t1, 2), (t2, 2)]));
    }

    #[test]
    fn static_members_come_first_by_instance_id() {
        let mut s = spec(
            &[("a", &[1], None), ("b", &[1], None), ("c", &[1], None)],
            &[(1, 4, &[])],
        );
        s.members.get_mut("c").unwrap().instance_id = Some("i1".into());
        let out = assign(&s);
        let t = topic(1);
        assert_eq!(out["c"], Assignment::from_pairs([(t, 0), (t, 1)]));
        assert_eq!(out["a"], Assignment::from_pairs([(t, 2)]));
        assert_eq!(out["b"], Assignment::from_pairs([(t, 3)]));
    }

    #[test]
    fn heterogeneous_subscriptions_split_each_topic_among_its_subscribers() {
        let s = spec(
            &[("a", &[1], None), ("b", &[1, 2], None)],
            &[(1, 2, &[]), (2, 2, &[])],
        );
        let out = assign(&s);
        check_assignment(&s, &out).unwrap();
        assert_eq!(counts(&out), vec![1, 3]);
    }
}
