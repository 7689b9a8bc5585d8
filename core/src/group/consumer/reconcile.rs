//! Reconciliation: moving one member from what it holds towards its target
//! assignment without ever letting two members own a partition at once
//! (Kafka's `CurrentAssignmentBuilder`).
//!
//! A member never receives a partition while another member still holds
//! it: partitions taken away are first put in the member's
//! `partitions_pending_revocation`, and the member stays at its epoch
//! (UNREVOKED_PARTITIONS) until a heartbeat shows it no longer owns them.
//! Only then does it move to the target epoch. A partition of its target
//! that another member still holds (assigned or pending revocation) is
//! held back (UNRELEASED_PARTITIONS) and given on a later heartbeat, once
//! its owner released it. The group's partition-epoch map says who holds
//! what; this module only reads it through `owner_epoch`.

use crate::group::consumer::member::{ConsumerGroupMember, MemberState};
use crate::group::consumer::topics::{Assignment, TopicId};

/// The member was in a state this coordinator does not know and still
/// reports partitions: it must drop them all and rejoin
/// (FENCED_MEMBER_EPOCH).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MustRejoin;

/// Computes the member's next state. `owner_epoch(topic, partition)` is the
/// epoch of whichever member holds the partition now, `None` when it is
/// free. `owned` is what the member reported in this heartbeat (`None`
/// when the heartbeat did not carry the field: nothing is known, so
/// nothing counts as revoked).
pub fn reconcile(
    member: &ConsumerGroupMember,
    target_epoch: i32,
    target: &Assignment,
    owner_epoch: &dyn Fn(&TopicId, i32) -> Option<i32>,
    owned: Option<&Assignment>,
) -> Result<ConsumerGroupMember, MustRejoin> {
    let step = Step {
        member,
        target_epoch,
        target,
        owner_epoch,
        owned,
    };
    Ok(match member.state {
        MemberState::Stable => {
            if member.member_epoch == target_epoch {
                member.clone()
            } else {
                step.next(member.member_epoch)
            }
        }
        MemberState::UnrevokedPartitions => {
            if step.owns_any(&member.partitions_pending_revocation) {
                // Still holding what it must give up: no progress.
                member.clone()
            } else {
                // Revoked: the member may leave its epoch behind.
                step.next(member.member_epoch + 1)
            }
        }
        MemberState::UnreleasedPartitions => step.next(member.member_epoch),
        MemberState::Unknown => {
            if owned.is_none_or(|o| !o.is_empty()) {
                return Err(MustRejoin);
            }
            step.next(target_epoch)
        }
    })
}

struct Step<'a> {
    member: &'a ConsumerGroupMember,
    target_epoch: i32,
    target: &'a Assignment,
    owner_epoch: &'a dyn Fn(&TopicId, i32) -> Option<i32>,
    owned: Option<&'a Assignment>,
}

impl Step<'_> {
    /// Whether the member (by its own report) still owns any of `set`. An
    /// absent report counts as owning: revocation must be acknowledged.
    fn owns_any(&self, set: &Assignment) -> bool {
        match self.owned {
            None => true,
            Some(owned) => owned.intersects(set),
        }
    }

    fn next(&self, member_epoch: i32) -> ConsumerGroupMember {
        let current = &self.member.assigned_partitions;
        let mut kept = Assignment::new();
        let mut revoke = Assignment::new();
        let mut give = Assignment::new();
        let mut unreleased = false;
        for (t, p) in current.iter() {
            if self.target.contains(&t, p) {
                kept.insert(t, p);
            } else {
                revoke.insert(t, p);
            }
        }
        for (t, p) in self.target.iter() {
            if kept.contains(&t, p) {
                continue;
            }
            if (self.owner_epoch)(&t, p).is_some() {
                unreleased = true;
            } else {
                give.insert(t, p);
            }
        }

        let mut next = self.member.clone();
        if !revoke.is_empty() && self.owns_any(&revoke) {
            // Revoke first and stay at the epoch: the partitions move on
            // only after the member acknowledged giving them up.
            next.state = MemberState::UnrevokedPartitions;
            next.update_member_epoch(member_epoch);
            next.assigned_partitions = kept;
            next.partitions_pending_revocation = revoke;
        } else {
            for (t, p) in give.iter() {
                kept.insert(t, p);
            }
            next.state = if unreleased {
                MemberState::UnreleasedPartitions
            } else {
                MemberState::Stable
            };
            next.update_member_epoch(self.target_epoch);
            next.assigned_partitions = kept;
            next.partitions_pending_revocation = Assignment::new();
        }
        // Kafka's assignment epochs: what the member held before (kept, or
        // now pending revocation) keeps the epoch it was given at; what it
        // is given now is given at the target epoch.
        let before = self.member;
        next.set_assignment_epochs(|t, p| {
            if before.assigned_partitions.contains(t, p) {
                before.assignment_epoch(t, p).unwrap_or(self.target_epoch)
            } else {
                self.target_epoch
            }
        });
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const T: TopicId = [7u8; 16];

    fn member(epoch: i32, assigned: &[i32]) -> ConsumerGroupMember {
        let mut m = ConsumerGroupMember::new("m");
        m.member_epoch = epoch;
        m.previous_member_epoch = epoch - 1;
        m.assigned_partitions = Assignment::from_pairs(assigned.iter().map(|p| (T, *p)));
        m
    }

    fn parts(ps: &[i32]) -> Assignment {
        Assignment::from_pairs(ps.iter().map(|p| (T, *p)))
    }

    fn owners(held: &[(i32, i32)]) -> impl Fn(&TopicId, i32) -> Option<i32> {
        let map: BTreeMap<i32, i32> = held.iter().copied().collect();
        move |_t, p| map.get(&p).copied()
    }

    fn epochs(m: &ConsumerGroupMember) -> Vec<(i32, i32)> {
        m.held_assignment_epochs()
            .into_iter()
            .map(|((_, p), e)| (p, e))
            .collect()
    }

    /// KIP-1251: a partition kept across epochs keeps the epoch it was
    /// given at; a partition given now is given at the target epoch; a
    /// revoked one keeps its epoch while it is pending revocation.
    #[test]
    fn assignment_epochs_follow_each_partition() {
        let mut m = member(3, &[0, 1]);
        m.set_assignment_epochs(|_, p| if p == 0 { 2 } else { 3 });
        // 2 is free and given at 5; 0 and 1 are kept with their epochs.
        let next = reconcile(
            &m,
            5,
            &parts(&[0, 1, 2]),
            &owners(&[(0, 3), (1, 3)]),
            Some(&parts(&[0, 1])),
        )
        .unwrap();
        assert_eq!(next.member_epoch, 5);
        assert_eq!(epochs(&next), vec![(0, 2), (1, 3), (2, 5)]);
        // 1 is taken away: pending revocation, still at epoch 3.
        let revoking = reconcile(
            &next,
            6,
            &parts(&[0, 2]),
            &owners(&[(0, 5), (1, 5), (2, 5)]),
            Some(&parts(&[0, 1, 2])),
        )
        .unwrap();
        assert_eq!(revoking.state, MemberState::UnrevokedPartitions);
        assert_eq!(epochs(&revoking), vec![(0, 2), (1, 3), (2, 5)]);
        // Revoked: 1 is gone, the rest keep their epochs at epoch 6.
        let done = reconcile(
            &revoking,
            6,
            &parts(&[0, 2]),
            &owners(&[(0, 5), (2, 5)]),
            Some(&parts(&[0, 2])),
        )
        .unwrap();
        assert_eq!(done.member_epoch, 6);
        assert_eq!(epochs(&done), vec![(0, 2), (2, 5)]);
        assert_eq!(done.assignment_epoch(&T, 1), None);
    }

    #[test]
    fn a_stable_member_at_the_target_epoch_stays() {
        let m = member(3, &[0, 1]);
        let next = reconcile(&m, 3, &parts(&[0, 1]), &owners(&[]), Some(&parts(&[0, 1]))).unwrap();
        assert_eq!(next, m);
    }

    #[test]
    fn new_free_partitions_are_given_at_the_target_epoch() {
        let m = member(3, &[0]);
        let next = reconcile(
            &m,
            5,
            &parts(&[0, 1]),
            &owners(&[(0, 3)]),
            Some(&parts(&[0])),
        )
        .unwrap();
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!((next.member_epoch, next.previous_member_epoch), (5, 3));
        assert_eq!(next.assigned_partitions, parts(&[0, 1]));
    }

    #[test]
    fn partitions_are_revoked_before_the_epoch_moves() {
        let m = member(3, &[0, 1]);
        let next = reconcile(
            &m,
            5,
            &parts(&[0, 2]),
            &owners(&[(0, 3), (1, 3)]),
            Some(&parts(&[0, 1])),
        )
        .unwrap();
        assert_eq!(next.state, MemberState::UnrevokedPartitions);
        assert_eq!(next.member_epoch, 3, "the epoch waits for the revocation");
        // As in Kafka, every step records the epoch it came from.
        assert_eq!(next.previous_member_epoch, 3);
        assert_eq!(next.assigned_partitions, parts(&[0]));
        assert_eq!(next.partitions_pending_revocation, parts(&[1]));

        // Still reporting partition 1: nothing moves.
        let same = reconcile(
            &next,
            5,
            &parts(&[0, 2]),
            &owners(&[(0, 3), (1, 3)]),
            Some(&parts(&[0, 1])),
        )
        .unwrap();
        assert_eq!(same, next);
        // No report at all: not acknowledged either.
        let same = reconcile(&next, 5, &parts(&[0, 2]), &owners(&[(0, 3), (1, 3)]), None).unwrap();
        assert_eq!(same, next);

        // Released: the member moves to the target epoch and gets 2.
        let done = reconcile(
            &next,
            5,
            &parts(&[0, 2]),
            &owners(&[(0, 3), (1, 3)]),
            Some(&parts(&[0])),
        )
        .unwrap();
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!((done.member_epoch, done.previous_member_epoch), (5, 3));
        assert_eq!(done.assigned_partitions, parts(&[0, 2]));
        assert!(done.partitions_pending_revocation.is_empty());
    }

    #[test]
    fn a_partition_still_held_elsewhere_is_not_given() {
        let m = member(3, &[0]);
        // Partition 1 is held by another member at epoch 3.
        let next = reconcile(
            &m,
            5,
            &parts(&[0, 1]),
            &owners(&[(0, 3), (1, 3)]),
            Some(&parts(&[0])),
        )
        .unwrap();
        assert_eq!(next.state, MemberState::UnreleasedPartitions);
        assert_eq!(next.member_epoch, 5);
        assert_eq!(next.assigned_partitions, parts(&[0]));
        // Once released, the next heartbeat gives it.
        let done = reconcile(
            &next,
            5,
            &parts(&[0, 1]),
            &owners(&[(0, 5)]),
            Some(&parts(&[0])),
        )
        .unwrap();
        assert_eq!(done.state, MemberState::Stable);
        assert_eq!(done.assigned_partitions, parts(&[0, 1]));
        assert_eq!(done.previous_member_epoch, 5);
    }

    #[test]
    fn a_member_that_already_dropped_revoked_partitions_skips_the_wait() {
        let m = member(3, &[0, 1]);
        let next = reconcile(
            &m,
            5,
            &parts(&[0]),
            &owners(&[(0, 3), (1, 3)]),
            Some(&parts(&[0])),
        )
        .unwrap();
        assert_eq!(next.state, MemberState::Stable);
        assert_eq!(next.member_epoch, 5);
        assert_eq!(next.assigned_partitions, parts(&[0]));
    }

    #[test]
    fn an_unknown_state_fences_a_member_that_still_owns_partitions() {
        let mut m = member(3, &[0]);
        m.state = MemberState::Unknown;
        assert_eq!(
            reconcile(&m, 5, &parts(&[0]), &owners(&[]), Some(&parts(&[0]))),
            Err(MustRejoin)
        );
        assert_eq!(
            reconcile(&m, 5, &parts(&[0]), &owners(&[]), None),
            Err(MustRejoin)
        );
        let next = reconcile(&m, 5, &parts(&[0]), &owners(&[(0, 3)]), Some(&parts(&[]))).unwrap();
        assert_eq!(next.member_epoch, 5);
    }
}
