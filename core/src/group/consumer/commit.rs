//! The member checks of an offset commit to a consumer group (Kafka's
//! `ConsumerGroup.validateOffsetCommit`), with Kafka 4.4's assignment
//! epochs (KIP-1251).
//!
//! A commit at the member's own epoch is the member's. A commit at an older
//! epoch used to be refused with STALE_MEMBER_EPOCH, even when it came from
//! the partitions' owner: a member whose epoch moved on (another member
//! joined, say) while its commit was in flight was fenced for nothing, and
//! its consumer retried or lost the commit. Now such a commit passes for
//! each partition the member still holds (assigned, or pending revocation)
//! and was given at or before the epoch it committed with. A partition
//! given after that epoch, or not held at all, refuses the whole request,
//! as Kafka's does.

use crate::group::consumer::group::ConsumerGroup;
use crate::group::consumer::topics::TopicId;
use crate::protocol::error_code;

/// The first OffsetCommit version a consumer-protocol member may use: the
/// first that carries its member epoch.
pub const OFFSET_COMMIT_CONSUMER_VERSION: i16 = 9;

/// Which request commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitRequest {
    /// OffsetCommit, at this version.
    Offsets { api_version: i16 },
    /// TxnOffsetCommit: any version (an older one carries no member, and is
    /// not checked by the caller).
    Transactional,
}

/// Checks a commit of `partitions` (by topic id; `None` for a topic this
/// broker does not know) by `member_id` at `member_epoch`. `Err` carries
/// the error code for the whole request.
pub fn validate_offset_commit(
    group: &ConsumerGroup,
    member_id: &str,
    member_epoch: i32,
    request: CommitRequest,
    partitions: &[(Option<TopicId>, i32)],
) -> Result<(), i16> {
    // An admin's or a standalone consumer's commit to an empty group.
    if member_epoch < 0 && group.is_empty() {
        return Ok(());
    }
    let Some(member) = group.member(member_id) else {
        return Err(error_code::UNKNOWN_MEMBER_ID);
    };
    let classic = member.uses_classic_protocol();
    if let CommitRequest::Offsets { api_version } = request {
        if !classic && api_version < OFFSET_COMMIT_CONSUMER_VERSION {
            return Err(error_code::UNSUPPORTED_VERSION);
        }
    }
    // A classic member commits with its generation, which is its member
    // epoch, and is told ILLEGAL_GENERATION as the classic protocol says.
    let stale = if classic {
        error_code::ILLEGAL_GENERATION
    } else {
        error_code::STALE_MEMBER_EPOCH
    };
    if member_epoch == member.member_epoch {
        return Ok(());
    }
    if member_epoch > member.member_epoch {
        return Err(stale);
    }
    for (topic, partition) in partitions {
        let given_at = topic.and_then(|t| member.assignment_epoch(&t, *partition));
        match given_at {
            Some(epoch) if epoch <= member_epoch => {}
            _ => return Err(stale),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::consumer::member::{ClassicMemberMetadata, ConsumerGroupMember};
    use crate::group::consumer::topics::Assignment;

    const T: TopicId = [7u8; 16];
    const OTHER: TopicId = [8u8; 16];
    const V9: CommitRequest = CommitRequest::Offsets { api_version: 9 };

    /// A group with member "m" at epoch 7, holding partition 0 (given at
    /// 3) and 1 (given at 7), and partition 2 pending revocation (given at
    /// 5).
    fn group(classic: bool) -> ConsumerGroup {
        let mut m = ConsumerGroupMember::new("m");
        m.member_epoch = 7;
        m.previous_member_epoch = 6;
        m.assigned_partitions = Assignment::from_pairs([(T, 0), (T, 1)]);
        m.partitions_pending_revocation = Assignment::from_pairs([(T, 2)]);
        m.set_assignment_epochs(|_, p| [3, 7, 5][p as usize]);
        if classic {
            m.classic = Some(ClassicMemberMetadata {
                session_timeout_ms: 10_000,
                supported_protocols: Vec::new(),
            });
        }
        let mut g = ConsumerGroup::new("g");
        g.members.insert(m.member_id.clone(), m);
        g
    }

    fn check(g: &ConsumerGroup, epoch: i32, ps: &[i32]) -> Result<(), i16> {
        let ps: Vec<_> = ps.iter().map(|p| (Some(T), *p)).collect();
        validate_offset_commit(g, "m", epoch, V9, &ps)
    }

    #[test]
    fn the_members_own_epoch_commits_anything() {
        let g = group(false);
        assert_eq!(check(&g, 7, &[0, 1, 2, 9]), Ok(()));
    }

    #[test]
    fn an_older_epoch_commits_what_was_given_at_or_before_it() {
        let g = group(false);
        assert_eq!(check(&g, 3, &[0]), Ok(()));
        assert_eq!(check(&g, 5, &[0, 2]), Ok(()));
        // 1 was given at 7, after epoch 5: the whole request is refused.
        assert_eq!(check(&g, 5, &[0, 1]), Err(error_code::STALE_MEMBER_EPOCH));
        // 2 is pending revocation but was given at 5.
        assert_eq!(check(&g, 4, &[2]), Err(error_code::STALE_MEMBER_EPOCH));
        // Not held at all, or a topic the broker does not know.
        assert_eq!(check(&g, 6, &[9]), Err(error_code::STALE_MEMBER_EPOCH));
        assert_eq!(
            validate_offset_commit(&g, "m", 6, V9, &[(Some(OTHER), 0)]),
            Err(error_code::STALE_MEMBER_EPOCH)
        );
        assert_eq!(
            validate_offset_commit(&g, "m", 6, V9, &[(None, 0)]),
            Err(error_code::STALE_MEMBER_EPOCH)
        );
    }

    #[test]
    fn a_newer_epoch_is_stale() {
        let g = group(false);
        assert_eq!(check(&g, 8, &[0]), Err(error_code::STALE_MEMBER_EPOCH));
    }

    #[test]
    fn classic_members_get_illegal_generation_and_the_same_relaxation() {
        let g = group(true);
        assert_eq!(check(&g, 8, &[0]), Err(error_code::ILLEGAL_GENERATION));
        assert_eq!(check(&g, 5, &[1]), Err(error_code::ILLEGAL_GENERATION));
        assert_eq!(check(&g, 5, &[0, 2]), Ok(()));
        // Any OffsetCommit version: the generation is in all of them.
        assert_eq!(
            validate_offset_commit(&g, "m", 7, CommitRequest::Offsets { api_version: 2 }, &[]),
            Ok(())
        );
    }

    #[test]
    fn unknown_members_old_versions_and_empty_groups() {
        let g = group(false);
        assert_eq!(
            validate_offset_commit(&g, "x", 7, V9, &[]),
            Err(error_code::UNKNOWN_MEMBER_ID)
        );
        assert_eq!(
            validate_offset_commit(&g, "m", 7, CommitRequest::Offsets { api_version: 8 }, &[]),
            Err(error_code::UNSUPPORTED_VERSION)
        );
        assert_eq!(
            validate_offset_commit(&g, "m", 3, CommitRequest::Transactional, &[(Some(T), 0)]),
            Ok(())
        );
        let empty = ConsumerGroup::new("e");
        assert_eq!(
            validate_offset_commit(&empty, "", -1, V9, &[(Some(T), 0)]),
            Ok(())
        );
    }

    /// A log written before Kafka 4.4 carries no assignment epochs: every
    /// held partition counts as given at the member's epoch, so only the
    /// member's own epoch commits, as before.
    #[test]
    fn without_recorded_epochs_the_check_is_strict() {
        let mut g = group(false);
        let mut m = g.member("m").unwrap().clone();
        m.assignment_epochs.clear();
        g.members.insert(m.member_id.clone(), m);
        assert_eq!(check(&g, 6, &[0]), Err(error_code::STALE_MEMBER_EPOCH));
        assert_eq!(check(&g, 7, &[0]), Ok(()));
    }
}
