//! The `uniform` assignor: spreads partitions evenly over the members that
//! subscribe to them, keeping every member's current partitions where
//! that does not unbalance the group (sticky), and preferring members on
//! a partition's replica racks when racks are known.
//!
//! Three passes, each deterministic:
//! 1. Keep: every member keeps the partitions of its current target that
//!    still exist and that it still subscribes to.
//! 2. Place: each partition nobody kept goes to the eligible member with
//!    the fewest partitions; the most constrained partitions (fewest
//!    eligible members) go first, and among equally loaded members one on
//!    the partition's rack wins.
//! 3. Balance: while some member holds two or more partitions more than
//!    an eligible member, one partition moves from the first to the second
//!    (one whose rack matches the receiver first). Every move lowers the
//!    sum of the squared counts, so the pass ends; with one subscription
//!    shared by all (homogeneous) it ends with counts within one of each
//!    other, as Kafka's uniform assignor does.
//!
//! Which of equally loaded members gives or takes a partition is free, as
//! in Kafka; pinlog picks the members due to heartbeat first
//! (`MemberSpec::session_deadline_ms`), whom a new target reaches first.

use std::collections::{BTreeMap, BTreeSet};

use crate::group::consumer::assignor::GroupSpec;
use crate::group::consumer::topics::{Assignment, TopicId};

pub fn assign(spec: &GroupSpec) -> BTreeMap<String, Assignment> {
    // Members due to heartbeat first come first (then by id): among
    // equally loaded members, partitions are placed on and moved from and
    // to the lowest index, so a new target reaches the members it changes
    // at their next heartbeats, the earliest in the group.
    let mut ids: Vec<&String> = spec.members.keys().collect();
    ids.sort_by_key(|id| {
        (
            spec.members[*id].session_deadline_ms.unwrap_or(i64::MAX),
            *id,
        )
    });
    let mut state = State {
        spec,
        ids: &ids,
        out: vec![Assignment::new(); ids.len()],
        load: BTreeSet::new(),
        rack_aware: spec.rack_aware(),
    };
    state.keep();
    state.place();
    state.balance();
    ids.iter()
        .zip(state.out)
        .map(|(id, a)| ((*id).clone(), a))
        .collect()
}

struct State<'a> {
    spec: &'a GroupSpec,
    ids: &'a [&'a String],
    out: Vec<Assignment>,
    /// (partition count, member index): the least loaded member first.
    load: BTreeSet<(usize, usize)>,
    rack_aware: bool,
}

impl State<'_> {
    fn member(&self, i: usize) -> &crate::group::consumer::assignor::MemberSpec {
        &self.spec.members[self.ids[i]]
    }

    fn eligible(&self, i: usize, t: &TopicId) -> bool {
        self.member(i).topics.contains(t)
    }

    /// Whether member `i` sits on a rack holding a replica of `(t, p)`.
    fn rack_match(&self, i: usize, t: &TopicId, p: i32) -> bool {
        let Some(rack) = &self.member(i).rack_id else {
            return false;
        };
        self.spec
            .topics
            .get(t)
            .and_then(|s| s.partition_racks.get(p as usize))
            .is_some_and(|racks| racks.contains(rack))
    }

    fn exists(&self, t: &TopicId, p: i32) -> bool {
        self.spec
            .topics
            .get(t)
            .is_some_and(|s| p >= 0 && p < s.num_partitions())
    }

    fn keep(&mut self) {
        let mut taken = BTreeSet::new();
        for i in 0..self.ids.len() {
            let current = self.member(i).current.clone();
            for (t, p) in current.iter() {
                // A partition two members claim (a stale input) stays with
                // the first, in member order.
                if self.eligible(i, &t) && self.exists(&t, p) && taken.insert((t, p)) {
                    self.out[i].insert(t, p);
                }
            }
        }
        for i in 0..self.ids.len() {
            self.load.insert((self.out[i].len(), i));
        }
    }

    fn place(&mut self) {
        let mut free: Vec<(usize, TopicId, i32)> = Vec::new();
        for (t, topic) in &self.spec.topics {
            let eligible = (0..self.ids.len()).filter(|i| self.eligible(*i, t)).count();
            if eligible == 0 {
                continue;
            }
            for p in 0..topic.num_partitions() {
                if !self.out.iter().any(|a| a.contains(t, p)) {
                    free.push((eligible, *t, p));
                }
            }
        }
        free.sort();
        for (_, t, p) in free {
            let Some(i) = self.least_loaded_for(&t, p, usize::MAX) else {
                continue;
            };
            self.give(i, t, p);
        }
    }

    /// The eligible member with the fewest partitions, below `below`; among
    /// equals, one on the partition's rack.
    fn least_loaded_for(&self, t: &TopicId, p: i32, below: usize) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for &(count, i) in &self.load {
            if count >= below {
                break;
            }
            if let Some((best_count, _)) = best {
                if count > best_count {
                    break;
                }
            }
            if !self.eligible(i, t) {
                continue;
            }
            match best {
                None => {
                    best = Some((count, i));
                    if !self.rack_aware {
                        break;
                    }
                }
                Some((_, b)) => {
                    if !self.rack_match(b, t, p) && self.rack_match(i, t, p) {
                        best = Some((count, i));
                    }
                }
            }
            if let Some((_, b)) = best {
                if self.rack_match(b, t, p) {
                    break;
                }
            }
        }
        best.map(|(_, i)| i)
    }

    fn give(&mut self, i: usize, t: TopicId, p: i32) {
        let n = self.out[i].len();
        self.load.remove(&(n, i));
        self.out[i].insert(t, p);
        self.load.insert((n + 1, i));
    }

    fn take(&mut self, i: usize, t: &TopicId, p: i32) {
        let n = self.out[i].len();
        self.load.remove(&(n, i));
        self.out[i].remove(t, p);
        self.load.insert((n - 1, i));
    }

    fn balance(&mut self) {
        // Every move lowers the sum of squared counts by at least two, so
        // the number of moves is bounded by that sum; the bound is a guard.
        let total: usize = self.out.iter().map(Assignment::len).sum();
        let mut moves_left = total.saturating_mul(total).saturating_add(1);
        loop {
            let mut moved = false;
            // The most loaded first; among equals, the one due first.
            let mut donors: Vec<(usize, usize)> = self.load.iter().copied().collect();
            donors.sort_by_key(|&(count, i)| (std::cmp::Reverse(count), i));
            for (count, from) in donors {
                if count < 2 {
                    break;
                }
                if self.move_one_from(from, count) {
                    moved = true;
                    moves_left -= 1;
                    break;
                }
            }
            assert!(
                moves_left > 0,
                "uniform assignor: balancing did not converge"
            );
            if !moved {
                return;
            }
        }
    }

    /// Moves one partition of `from` (holding `count`) to an eligible
    /// member holding at most `count - 2`; a partition off `from`'s rack
    /// and on the receiver's goes first.
    fn move_one_from(&mut self, from: usize, count: usize) -> bool {
        let mut best: Option<(u8, TopicId, i32, usize)> = None;
        let held: Vec<(TopicId, i32)> = self.out[from].iter().collect();
        for (t, p) in held.iter().rev() {
            let Some(to) = self.least_loaded_for(t, *p, count - 1) else {
                continue;
            };
            // Lower is better: 0 when the move improves rack locality.
            let score = match (self.rack_match(from, t, *p), self.rack_match(to, t, *p)) {
                (false, true) => 0,
                (a, b) if a == b => 1,
                _ => 2,
            };
            if best.is_none_or(|(s, ..)| score < s) {
                best = Some((score, *t, *p, to));
                if score == 0 || !self.rack_aware {
                    break;
                }
            }
        }
        let Some((_, t, p, to)) = best else {
            return false;
        };
        self.take(from, &t, p);
        self.give(to, t, p);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::consumer::assignor::check_assignment;
    use crate::group::consumer::assignor::test_support::*;

    #[test]
    fn homogeneous_groups_are_balanced_within_one() {
        let s = spec(
            &[
                ("a", &[1, 2], None),
                ("b", &[1, 2], None),
                ("c", &[1, 2], None),
            ],
            &[(1, 4, &[]), (2, 3, &[])],
        );
        let out = assign(&s);
        check_assignment(&s, &out).unwrap();
        let mut c = counts(&out);
        c.sort();
        assert_eq!(c, vec![2, 2, 3]);
    }

    #[test]
    fn a_new_member_takes_only_what_balance_needs() {
        let two = spec(&[("a", &[1], None), ("b", &[1], None)], &[(1, 6, &[])]);
        let before = assign(&two);
        let mut three = with_current(two.clone(), &before);
        three.members.insert("c".into(), new_member(&[1]));
        let after = assign(&three);
        check_assignment(&three, &after).unwrap();
        assert_eq!(counts(&after), vec![2, 2, 2]);
        // a and b each gave up exactly one partition and kept the rest.
        for id in ["a", "b"] {
            assert!(after[id].is_subset_of(&before[id]), "{id} was not sticky");
        }
    }

    fn with_deadlines(mut s: GroupSpec, deadlines: &[(&str, i64)]) -> GroupSpec {
        for (id, d) in deadlines {
            s.members.get_mut(*id).unwrap().session_deadline_ms = Some(*d);
        }
        s
    }

    #[test]
    fn partitions_move_from_the_members_due_to_heartbeat_first() {
        let four = spec(
            &[
                ("a", &[1], None),
                ("b", &[1], None),
                ("c", &[1], None),
                ("d", &[1], None),
            ],
            &[(1, 12, &[])],
        );
        let before = assign(&four);
        let mut five = with_current(four, &before);
        five.members.insert("e".into(), new_member(&[1]));
        // a and b heartbeated longest ago: they hear of the new target
        // first, so they are the ones to give a partition up.
        let five = with_deadlines(five, &[("a", 100), ("b", 200), ("c", 300), ("d", 400)]);
        let after = assign(&five);
        check_assignment(&five, &after).unwrap();
        let gave: Vec<&str> = ["a", "b", "c", "d"]
            .into_iter()
            .filter(|id| after[*id].len() < before[*id].len())
            .collect();
        assert_eq!(gave, vec!["a", "b"]);
        assert_eq!(after["e"].len(), 2);
    }

    #[test]
    fn a_departed_members_partitions_go_to_the_members_due_first() {
        let ids = ["a", "b", "c", "d", "e", "f"];
        let six = spec(&ids.map(|id| (id, &[1u8][..], None)), &[(1, 12, &[])]);
        let before = assign(&six);
        let mut five = with_current(six, &before);
        five.members.remove("f");
        let five = with_deadlines(five, &[("e", 1), ("d", 2)]);
        let after = assign(&five);
        check_assignment(&five, &after).unwrap();
        let took: Vec<&str> = ["a", "b", "c", "d", "e"]
            .into_iter()
            .filter(|id| after[*id].len() > before[*id].len())
            .collect();
        assert_eq!(took, vec!["d", "e"]);
    }

    #[test]
    fn an_unchanged_group_keeps_its_assignment() {
        let s = spec(
            &[("a", &[1, 2], None), ("b", &[1], None), ("c", &[2], None)],
            &[(1, 5, &[]), (2, 7, &[])],
        );
        let first = assign(&s);
        let again = assign(&with_current(s, &first));
        assert_eq!(first, again);
    }

    #[test]
    fn heterogeneous_subscriptions_only_get_their_topics_and_are_balanced() {
        let s = spec(
            &[("a", &[1], None), ("b", &[1, 2], None), ("c", &[2], None)],
            &[(1, 6, &[]), (2, 6, &[])],
        );
        let out = assign(&s);
        check_assignment(&s, &out).unwrap();
        assert_eq!(counts(&out), vec![4, 4, 4]);
    }

    #[test]
    fn racks_are_preferred_when_both_sides_have_them() {
        let s = spec(
            &[("a", &[1], Some("r1")), ("b", &[1], Some("r2"))],
            &[(1, 4, &["r1", "r2"])],
        );
        let out = assign(&s);
        check_assignment(&s, &out).unwrap();
        // Even partitions are on r1, odd ones on r2.
        let t = topic(1);
        assert_eq!(out["a"], Assignment::from_pairs([(t, 0), (t, 2)]));
        assert_eq!(out["b"], Assignment::from_pairs([(t, 1), (t, 3)]));
    }

    #[test]
    fn members_without_subscribed_topics_get_nothing() {
        let s = spec(&[("a", &[1], None), ("b", &[9], None)], &[(1, 3, &[])]);
        let out = assign(&s);
        check_assignment(&s, &out).unwrap();
        assert_eq!(out["a"].len(), 3);
        assert!(out["b"].is_empty());
    }
}
